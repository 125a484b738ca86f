//! The service bodies on SimHost, with fake children (shell scripts) where exit codes matter.

use super::*;
use crate::config::{Inputs, load};
use crate::host::sim::{At, Fault, FaultKind, SimHost};
use crate::host::{
    Files, Hns, InterfaceAddress, Network, RegValue, Registry, Services, SystemInfo,
};
use crate::installed::addressing::tests::adapter_named;
use crate::installed::platform::tests::{closed, http, serve};
use crate::installed::{failure, platform};
use crate::layout::{BOOT_ID_VALUE, CALICO_KEY, LEGACY_BOOT_VALUE};
use crate::release::{Binary, CalicoVersion};
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::Instant;

mod agents;
mod hns;
mod kube_proxy;
mod startup;
mod vswitch;
mod waits;
mod watch;

const ROOT: &str = r"C:\CalicoWindows";
const RUNNING: crate::host::ServiceState = crate::host::ServiceState::Running;

/// A `profile` host with what install leaves for the services, from the config with `sets`.
fn installed(profile: &str, sets: &[&str]) -> SimHost {
    let host = SimHost::in_memory(profile).expect("host");
    let inputs = Inputs {
        file: None,
        env: Default::default(),
        sets: sets.iter().map(|s| (*s).to_owned()).collect(),
        host: [("node.name", crate::config::Raw::Scalar("win-1".into()))].into(),
        cluster: Default::default(),
    };
    let c = load(&inputs).expect("config").config;
    let put = |name: &str, text: &[u8]| {
        host.write_file(
            &format!("{ROOT}\\{name}"),
            text,
            crate::host::Access::Normal,
        )
        .expect("write");
    };
    put("calico-node.exe", b"simulated program\n");
    for role in crate::render::env::roles_for(&c) {
        put(
            role.env_file(),
            crate::render::env::render(&c, role, None).as_bytes(),
        );
    }
    let uplink = c.vxlan.adapter.as_ref().map(|a| a.to_string());
    if let Some(doc) = crate::render::hns::external_network(&c, uplink.as_deref()) {
        put("external-network.json", doc.to_string().as_bytes());
    }
    host
}

fn settings(role: Role) -> Settings {
    let mut s = Settings::new(role, ROOT);
    s.timing = Timing {
        poll: Duration::from_millis(10),
        kubelet_poll: Duration::from_millis(20),
        ip_poll: Duration::from_millis(20),
        backoff_min: Duration::from_millis(10),
        backoff_max: Duration::from_millis(40),
        settle: Duration::ZERO,
        earlier_wait: Duration::from_millis(200),
        look: crate::supervise::condition::EVERY,
    };
    s.network_timeout = Duration::from_millis(500);
    s.init_timeout = Duration::from_millis(100);
    s.stop_timeout = Duration::from_secs(2);
    s.probes = platform::Probes {
        ec2: closed(),
        gce: closed(),
        timeout: Duration::from_millis(200),
    };
    s
}

/// The role's log, and where it is on this machine.
fn log_for(host: &SimHost, s: &Settings) -> (Log, PathBuf) {
    let log = open_log(host, s, None, false).expect("log");
    let path = host
        .local_path(&format!(r"{ROOT}\logs\calico-{}.log", role_name(s.role)))
        .expect("path");
    (log, path)
}

/// `host` with a fault of `kind` at the operation `op`.
fn faulted(host: SimHost, kind: FaultKind, op: &str) -> SimHost {
    host.with_fault(Some(Fault {
        kind,
        at: At::Op(op.into()),
    }))
}

/// An installed `profile` host (with `sets`), CalicoNode's settings and its log.
fn node_host(profile: &str, sets: &[&str]) -> (SimHost, Settings, Log, PathBuf) {
    let host = installed(profile, sets);
    let s = settings(Role::Node);
    let (log, path) = log_for(&host, &s);
    (host, s, log, path)
}

/// Asserts that the log says `needle`.
#[track_caller]
fn says(text: &str, needle: &str) {
    assert!(text.contains(needle), "{needle:?} not in {text}");
}

fn read(path: &PathBuf) -> String {
    fs_err::read_to_string(path).unwrap_or_default()
}

fn network_ids(host: &SimHost) -> Vec<(String, String)> {
    host.hns_networks()
        .expect("networks")
        .into_iter()
        .map(|n| (n.name, n.id))
        .collect()
}

fn external(host: &SimHost) -> crate::host::HnsNetwork {
    let networks = host.hns_networks().expect("networks");
    networks
        .into_iter()
        .find(|n| n.name == "External")
        .expect("External")
}

fn marker(host: &SimHost) -> Option<RegValue> {
    host.reg_get(CALICO_KEY, BOOT_ID_VALUE).expect("read")
}

/// A fake Calico component: a shell script on this machine.
pub(super) fn script(dir: &std::path::Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    fs_err::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write");
    fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path.display().to_string()
}

/// A fake component that counts its runs, says `NAME run $n`, then runs `then` (builtins only).
fn counting(dir: &std::path::Path, name: &str, then: &str) -> String {
    let count = dir.join(format!("{name}.count"));
    script(
        dir,
        name,
        &format!(
            "echo run >> {c}\nn=0\nwhile read l; do n=$((n+1)); done < {c}\necho \"{name} run $n\"\n{then}",
            c = count.display()
        ),
    )
}

/// Loops forever with builtins only.
const FOREVER: &str = "while :; do read x < /dev/null; done";

fn boot_id(host: &SimHost) -> String {
    host.system_facts().expect("facts").boot_id.expect("boot")
}

fn mark_init_done(host: &SimHost) {
    let boot = RegValue::Sz(boot_id(host));
    host.reg_set(CALICO_KEY, BOOT_ID_VALUE, &boot)
        .expect("marker");
}

/// The index of the vSwitch's host adapter, `vEthernet (Ethernet)`.
fn vswitch_index(host: &SimHost) -> u32 {
    let addresses = host.ipv4_addresses().expect("addresses");
    let vnic = addresses
        .into_iter()
        .find(|a| a.interface == "vEthernet (Ethernet)");
    vnic.expect("vEthernet").index
}

/// An installed host CalicoNode has initialised, and `role`'s settings running `program`.
fn initialised(role: Role, sets: &[&str], program: String) -> (SimHost, Settings) {
    let host = installed("ws2022", sets);
    mark_init_done(&host);
    let mut s = settings(role);
    s.program = Some(program);
    (host, s)
}

/// Waits (bounded: 60 s, then the test fails) until the log holds `needle` at least `times` times.
fn wait_for_log(path: &PathBuf, needle: &str, times: usize) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = read(path);
        if text.matches(needle).count() >= times {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "{needle:?} not {times}x in 60s:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs the role's body, calls `during` with its log, then stops it cleanly; returns the log.
fn while_running(host: &SimHost, s: &Settings, during: impl FnOnce(&PathBuf)) -> String {
    let (log, path) = log_for(host, s);
    let stop = Stop::new();
    std::thread::scope(|scope| {
        let body = scope.spawn(|| run(host, s, &stop, &log));
        during(&path);
        stop.request();
        body.join().expect("join").expect("stops cleanly");
    });
    read(&path)
}

/// Runs the role's body until its log holds `needle`, then stops it; returns the log.
fn run_until(host: &SimHost, s: &Settings, needle: &str) -> String {
    while_running(host, s, |path| {
        wait_for_log(path, needle, 1);
    })
}

/// A host with CalicoNode and CalicoFelix registered and running, and HNS startable.
fn felix_host() -> SimHost {
    let host = SimHost::in_memory("ws2022").expect("host");
    calico_services_running(&host);
    host
}

fn felix_pid(host: &SimHost) -> Option<u32> {
    host.service_query("CalicoFelix")
        .expect("query")
        .expect("registered")
        .pid
}

/// Restarts HNS on the simulated host (a new process id).
fn restart_hns(host: &SimHost) {
    host.service_stop("hns", Duration::from_secs(1))
        .expect("stop");
    host.service_start("hns", Duration::from_secs(1))
        .expect("start");
}

/// The adapter's addresses marked Preferred or not (tentative).
fn mark_preferred(host: &SimHost, name: &str, preferred: bool) {
    let mut adapters = host.adapters().expect("adapters");
    for a in adapters.iter_mut().filter(|a| a.name == name) {
        for x in &mut a.addresses {
            x.preferred = preferred;
        }
    }
    host.set_adapters(adapters).expect("set");
}

/// Registers and starts CalicoNode and CalicoFelix as install registers them (`service_spec`).
fn calico_services_running(host: &SimHost) {
    let exe = format!(r"{ROOT}\calicoctl-win.exe");
    host.write_file(&exe, b"simulated program\n", crate::host::Access::Normal)
        .expect("exe");
    hns_startable(host);
    for role in [Role::Node, Role::Felix] {
        host.service_create(&service_spec(role, &exe, vec![]))
            .expect("create");
        host.service_start(role.service_name(), Duration::from_secs(1))
            .expect("start");
    }
}

/// HNS's program, which the profile registers it with, so that it can be started again.
fn hns_startable(host: &SimHost) {
    host.write_file(
        r"C:\Windows\system32\svchost.exe",
        b"simulated program\n",
        crate::host::Access::Normal,
    )
    .expect("svchost");
}

fn state_of(host: &SimHost, name: &str) -> Option<crate::host::ServiceState> {
    host.service_query(name).expect("query").map(|q| q.state)
}

/// The process id of the child `role`'s service ran last, as the service recorded it.
fn kept_child(host: &SimHost, role: Role) -> u32 {
    let kept = host.reg_get(CALICO_KEY, role.child_value()).expect("read");
    let Some(RegValue::Sz(kept)) = kept else {
        panic!("no record of the child: {kept:?}");
    };
    let pid = kept.split_whitespace().next().and_then(|p| p.parse().ok());
    pid.expect("pid")
}
