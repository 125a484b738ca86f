//! State-machine tests of the service bodies on SimHost, with real fake children (shell
//! scripts) where a component's exit codes matter.

use super::*;
use crate::config::{Inputs, load};
use crate::host::sim::{At, Fault, FaultKind, SimHost};
use crate::host::{
    Files, Hns, InterfaceAddress, Network, RegValue, Registry, Services, SystemInfo,
};
use crate::installed::platform::tests::{closed, http, serve};
use crate::installed::{failure, platform};
use crate::layout::BOOT_ID_VALUE;
use crate::layout::CALICO_KEY;
use crate::layout::LEGACY_BOOT_VALUE;
use crate::release::{Binary, CalicoVersion};
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::Instant;

const ROOT: &str = r"C:\CalicoWindows";

/// Writes what install leaves for the services: the Calico binary, the rendered environments
/// and the External network document, from the config with these `--set`s.
fn install(host: &SimHost, sets: &[&str]) {
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

fn marker(host: &SimHost) -> Option<RegValue> {
    host.reg_get(CALICO_KEY, BOOT_ID_VALUE).expect("read")
}

#[test]
fn the_first_start_creates_the_networks_restores_the_metadata_route_and_marks_init_done() {
    let host = SimHost::in_memory("ws2022").expect("host");
    install(&host, &[]);
    let s = settings(Role::Node);
    let (log, path) = log_for(&host, &s);
    assert!(!init_done(&host).expect("read"));

    let phase = node::start_phase(&host, &s, &log).expect("start phase");
    assert!(phase.first_run_since_boot);
    assert!(phase.created_external);
    assert_eq!(phase.platform, Some(platform::Platform::BareMetal));
    assert_eq!(phase.restored_routes, ["169.254.169.254/32 via 10.0.0.1"]);

    let names: Vec<String> = network_ids(&host).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["External", "Calico"]);
    // The vSwitch moved the address to a new interface; the route follows it there.
    let vswitch = host
        .ipv4_addresses()
        .expect("addresses")
        .into_iter()
        .find(|a| a.interface == "vEthernet (Ethernet)")
        .expect("vEthernet");
    let metadata = host
        .routes()
        .expect("routes")
        .into_iter()
        .find(|r| r.destination == Ipv4Addr::new(169, 254, 169, 254))
        .expect("metadata route restored");
    assert_eq!(metadata.interface_index, vswitch.index);

    let boot = host.system_facts().expect("facts").boot_id.expect("boot");
    assert_eq!(marker(&host), Some(RegValue::Sz(boot)));
    assert_eq!(
        host.reg_get(CALICO_KEY, LEGACY_BOOT_VALUE).expect("read"),
        Some(RegValue::Sz("11/21/2025 9:00:00 AM".into()))
    );
    assert!(init_done(&host).expect("read"));
    let text = read(&path);
    assert!(text.contains("first run since boot"), "{text}");
    assert!(
        text.contains("created HNS network Calico"),
        "the child's output: {text}"
    );
    assert!(text.contains("calico-node startup finished"), "{text}");
}

/// A boot whose time the kernel did not give is neither a reboot (which would delete every
/// pod's network) nor the boot CalicoNode last initialised in: init stops with "unknown boot",
/// touches no network and writes no marker; an empty marker an older version wrote is no boot.
#[test]
fn an_unknown_boot_stops_init_and_deletes_no_network() {
    let host = SimHost::in_memory("ws2022").expect("host");
    install(&host, &[]);
    let s = settings(Role::Node);
    let (log, _) = log_for(&host, &s);
    node::start_phase(&host, &s, &log).expect("first start");
    let before = network_ids(&host);
    let boot = host.system_facts().expect("facts").boot_id.expect("boot");

    host.set_boot_known(false, &boot)
        .expect("lose the boot time");
    assert!(!init_done(&host).expect("read"), "no boot is done in none");
    let err = node::start_phase(&host, &s, &log).expect_err("an unknown boot");
    assert!(matches!(err, SuperviseError::UnknownBoot), "{err}");
    assert_eq!(network_ids(&host), before, "no network was touched");
    assert_eq!(marker(&host), Some(RegValue::Sz(boot.clone())));

    // An empty marker is not this boot either, and matches no unknown boot.
    host.reg_set(CALICO_KEY, BOOT_ID_VALUE, &RegValue::Sz(String::new()))
        .expect("empty marker");
    assert!(matches!(
        node::start_phase(&host, &s, &log),
        Err(SuperviseError::UnknownBoot)
    ));
    assert_eq!(network_ids(&host), before);
    host.set_boot_known(true, &boot)
        .expect("the boot time back");
    assert!(
        !init_done(&host).expect("read"),
        "an empty marker is no boot"
    );
}

#[test]
fn a_service_restart_keeps_the_networks_and_a_reboot_recreates_only_calicos() {
    let host = SimHost::in_memory("ws2022-flannel").expect("host");
    install(&host, &[]);
    let s = settings(Role::Node);
    let (log, _) = log_for(&host, &s);
    node::start_phase(&host, &s, &log).expect("first start");
    let before = network_ids(&host);

    let again = node::start_phase(&host, &s, &log).expect("restart");
    assert!(!again.first_run_since_boot);
    assert!(again.deleted_networks.is_empty() && !again.created_external);
    assert_eq!(
        network_ids(&host),
        before,
        "a plain restart changes nothing"
    );

    host.reboot().expect("reboot");
    assert!(
        !init_done(&host).expect("read"),
        "the marker is for the old boot"
    );
    let after = node::start_phase(&host, &s, &log).expect("after reboot");
    assert!(after.first_run_since_boot);
    assert_eq!(after.deleted_networks, ["External", "Calico"]);
    let now = network_ids(&host);
    let flannel = |ids: &[(String, String)]| ids.iter().find(|(n, _)| n == "flannel.4096").cloned();
    assert_eq!(
        flannel(&now),
        flannel(&before),
        "another CNI's network is left alone"
    );
    let id = |ids: &[(String, String)], name: &str| {
        ids.iter().find(|(n, _)| n == name).map(|(_, i)| i.clone())
    };
    assert_ne!(id(&now, "External"), id(&before, "External"));
    assert_ne!(id(&now, "Calico"), id(&before, "Calico"));
    assert!(init_done(&host).expect("read"));

    // The upstream behaviour, opted into, deletes every non-NAT network.
    host.reboot().expect("reboot");
    let mut all = settings(Role::Node);
    all.delete_all_non_nat_networks = true;
    let phase = node::start_phase(&host, &all, &log).expect("after reboot");
    assert!(phase.deleted_networks.contains(&"flannel.4096".to_owned()));
}

#[test]
fn no_usable_address_is_a_bounded_wait_then_a_clear_error() {
    let host = SimHost::in_memory("ws2022").expect("host");
    install(&host, &["node.startup_valid_ip_timeout=1s"]);
    host.set_ipv4_addresses(vec![
        InterfaceAddress {
            interface: "Ethernet".into(),
            index: 4,
            ip: Ipv4Addr::new(169, 254, 10, 20),
            prefix_len: 16,
        },
        InterfaceAddress {
            interface: "Loopback Pseudo-Interface 1".into(),
            index: 1,
            ip: Ipv4Addr::LOCALHOST,
            prefix_len: 8,
        },
    ])
    .expect("addresses");
    let s = settings(Role::Node);
    let (log, path) = log_for(&host, &s);
    let err = node::start_phase(&host, &s, &log).unwrap_err();
    assert!(matches!(err, SuperviseError::NoUsableIp { .. }), "{err}");
    assert!(err.is_timeout());
    let msg = err.to_string();
    assert!(
        msg.contains("after 1s") && msg.contains("169.254.10.20 on Ethernet"),
        "{msg}"
    );
    assert!(
        err.hint()
            .is_some_and(|h| h.contains("startup_valid_ip_timeout"))
    );
    assert!(
        !init_done(&host).expect("read"),
        "no marker after a failed start-up"
    );
    assert!(read(&path).contains("waiting up to 1s for a usable IPv4 address"));
}

#[test]
fn creating_external_is_retried_until_it_succeeds() {
    let dir = tempfile::tempdir().expect("tempdir");
    install(
        &SimHost::open_or_create(dir.path(), None).expect("host"),
        &[],
    );
    // Creating External fails once.
    let host = SimHost::open_or_create(dir.path(), None)
        .expect("host")
        .with_fault(Some(Fault {
            kind: FaultKind::Fail,
            at: At::Op("create HNS network External".into()),
        }));
    let s = settings(Role::Node);
    let (log, path) = log_for(&host, &s);
    let phase = node::start_phase(&host, &s, &log).expect("start phase");
    assert!(phase.created_external);
    let text = read(&path);
    assert!(
        text.contains("could not create the External network: simulated failure injected"),
        "{text}"
    );
    assert!(text.contains("retrying in 10ms"), "{text}");
}

/// A route the OS refuses to add (ERROR_ACCESS_DENIED, as a locked-down node's policy
/// answers): the service runs on, and its log, the event log and the record install's wait
/// reads all carry the operation, the route and the OS's code.
#[test]
fn a_refused_route_keeps_the_os_error_in_the_log_the_event_log_and_the_record() {
    let host = SimHost::in_memory("ws2022")
        .expect("host")
        .with_fault(Some(Fault {
            kind: FaultKind::Deny,
            at: At::Op("add route 169.254.169.254".into()),
        }));
    install(&host, &[]);
    let s = settings(Role::Node);
    let (log, path) = log_for(&host, &s);
    let phase = node::start_phase(&host, &s, &log).expect("the service runs on");
    assert!(phase.restored_routes.is_empty(), "{phase:?}");
    let vswitch = host
        .ipv4_addresses()
        .expect("addresses")
        .into_iter()
        .find(|a| a.interface == "vEthernet (Ethernet)")
        .expect("vEthernet")
        .index;
    let said = format!(
        "could not restore the route 169.254.169.254/32 via 10.0.0.1 that the vSwitch dropped: add route 169.254.169.254/32 via 10.0.0.1 on interface {vswitch}: Access is denied. (os error 5)"
    );
    let text = read(&path);
    assert!(text.contains(&said), "{text}");
    let events = host.events();
    assert!(
        events
            .iter()
            .any(|e| e.level == crate::host::EventLevel::Warning
                && e.id == super::EVENT_FAILURE
                && e.message == format!("CalicoNode {said}")),
        "{events:?}"
    );
    let recorded = failure::recorded(&host).expect("read");
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert_eq!(
        recorded[0].blocks,
        failure::Blocks::Route("169.254.169.254/32".into())
    );
    assert!(
        recorded[0]
            .error
            .ends_with("Access is denied. (os error 5)")
    );
    // The next start begins with none.
    let host = SimHost::open_or_create(host.state_dir(), None).expect("reopen");
    node::start_phase(&host, &s, &log).expect("restart");
    assert_eq!(failure::recorded(&host).expect("read"), vec![]);
}

/// An initialisation that gives up is recorded too, so that install's wait ends with it.
#[test]
fn an_initialisation_that_gives_up_is_recorded_with_its_cause() {
    let host = SimHost::in_memory("ws2022")
        .expect("host")
        .with_fault(Some(Fault {
            kind: FaultKind::Deny,
            at: At::Op("set registry value HKLM\\Software\\Tigera\\Calico\\BootId".into()),
        }));
    install(&host, &[]);
    let s = settings(Role::Node);
    let (log, _) = log_for(&host, &s);
    let err = node::start_phase(&host, &s, &log).unwrap_err();
    assert!(err.to_string().contains("(os error 5)"), "{err}");
    let recorded = failure::recorded(&host).expect("read");
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert_eq!(recorded[0].blocks, failure::Blocks::Init);
    assert_eq!(recorded[0].error, crate::error::chain(&err));
}

#[test]
fn creating_external_gives_up_after_the_network_timeout() {
    let host = SimHost::in_memory("ws2022").expect("host");
    install(&host, &[]);
    // A document HNS refuses every time: a subnet without a default route.
    host.write_file(
        &format!(r"{ROOT}\external-network.json"),
        br#"{"Name":"External","Type":"Overlay","Ipams":[{"Subnets":[{"IpAddressPrefix":"192.168.255.0/30","Routes":[]}]}]}"#,
        crate::host::Access::Normal,
    )
    .expect("write");
    let s = settings(Role::Node);
    let (log, _) = log_for(&host, &s);
    let err = node::start_phase(&host, &s, &log).unwrap_err();
    assert!(
        matches!(err, SuperviseError::ExternalNetwork { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("needs a 0.0.0.0/0 route"), "{err}");
    assert!(err.is_timeout());
    assert!(!init_done(&host).expect("read"));
}

#[test]
fn a_management_ip_that_never_appears_is_bounded_and_one_that_comes_late_is_waited_for() {
    let host = SimHost::in_memory("ws2022").expect("host");
    install(&host, &[]);
    host.set_management_ip_pending(true).expect("pending");
    let s = settings(Role::Node);
    let (log, path) = log_for(&host, &s);
    let err = node::start_phase(&host, &s, &log).unwrap_err();
    assert!(matches!(err, SuperviseError::ManagementIp { .. }), "{err}");
    assert!(read(&path).contains("waiting up to 500ms for the vSwitch's management IP"));
    assert!(!init_done(&host).expect("read"));

    // The service restarts (SCM recovery); this time the address comes after a while.
    let mut patient = settings(Role::Node);
    patient.network_timeout = Duration::from_secs(30);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            std::thread::sleep(Duration::from_millis(200));
            host.set_management_ip_pending(false).expect("ready");
        });
        let phase = node::start_phase(&host, &patient, &log).expect("start phase");
        // The first attempt never finished, so this is still the first run since boot: its
        // half-made External network is deleted and made again.
        assert!(phase.first_run_since_boot);
        assert_eq!(phase.deleted_networks, ["External"]);
    });
    assert!(init_done(&host).expect("read"));
}

#[test]
fn on_ec2_the_metadata_route_is_ensured_on_every_start() {
    let host = SimHost::in_memory("ws2022").expect("host");
    install(&host, &[]);
    let mut s = settings(Role::Node);
    s.probes.ec2 = serve(|req| {
        Some(if req.starts_with("GET /latest/meta-data/local-hostname") {
            http("200 OK", "", "ip-10-0-0-5")
        } else {
            http("404 Not Found", "", "")
        })
    });
    let (log, path) = log_for(&host, &s);
    node::start_phase(&host, &s, &log).expect("first start");
    // Something removes the route later (another vSwitch change); a restart puts it back even
    // though External already exists.
    let dir = host.state_dir().to_owned();
    let state = dir.join("state.json");
    let mut doc: serde_json::Value =
        serde_json::from_str(&fs_err::read_to_string(&state).expect("read")).expect("json");
    doc["routes"]
        .as_array_mut()
        .expect("routes")
        .retain(|r| r["destination"] != "169.254.169.254");
    fs_err::write(&state, doc.to_string()).expect("write");
    let host = SimHost::open_or_create(&dir, None).expect("reopen");
    let phase = node::start_phase(&host, &s, &log).expect("restart");
    assert_eq!(phase.platform, Some(platform::Platform::Ec2));
    assert!(!phase.created_external);
    assert!(
        host.routes()
            .expect("routes")
            .iter()
            .any(|r| r.destination == Ipv4Addr::new(169, 254, 169, 254)
                && r.next_hop.is_unspecified())
    );
    assert!(read(&path).contains("added the metadata route 169.254.169.254/32"));
}

#[test]
fn windows_bgp_restarts_remote_access_and_fails_clearly_without_it() {
    let host = SimHost::in_memory("ws2022").expect("host");
    install(&host, &["backend=windows-bgp", "cni.ipam_type=host-local"]);
    let s = settings(Role::Node);
    let (log, _) = log_for(&host, &s);
    let err = node::start_phase(&host, &s, &log).unwrap_err();
    assert!(matches!(err, SuperviseError::RemoteAccess(_)), "{err}");
    assert!(err.hint().is_some_and(|h| h.contains("RemoteAccess")));

    let svchost = r"C:\Windows\system32\svchost.exe";
    host.write_file(svchost, b"simulated program\n", crate::host::Access::Normal)
        .expect("write");
    host.service_create(&crate::host::ServiceSpec {
        name: "RemoteAccess".into(),
        display_name: "Routing and Remote Access".into(),
        description: String::new(),
        program: svchost.into(),
        args: vec!["-k".into(), "netsvcs".into()],
        dependencies: vec![],
        start: StartType::Auto,
        recovery: None,
    })
    .expect("create");
    let (log, path) = log_for(&host, &s);
    node::start_phase(&host, &s, &log).expect("start phase");
    assert!(read(&path).contains("restarting RemoteAccess"));
    let ra = host
        .service_query("RemoteAccess")
        .expect("query")
        .expect("there");
    assert_eq!(ra.state, crate::host::ServiceState::Running);
    let external = host
        .hns_networks()
        .expect("networks")
        .into_iter()
        .find(|n| n.name == "External")
        .expect("External");
    assert_eq!(external.network_type, "L2Bridge");
}

/// A fake Calico component: a shell script on this machine.
fn script(dir: &std::path::Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    fs_err::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write");
    fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path.display().to_string()
}

/// A fake component that counts its runs in `$n` (1, 2, ...), says `NAME run $n`, then runs
/// `then` (shell, with builtins only: the child has no PATH).
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

fn mark_init_done(host: &SimHost) {
    let boot = host.system_facts().expect("facts").boot_id.expect("boot");
    host.reg_set(CALICO_KEY, BOOT_ID_VALUE, &RegValue::Sz(boot))
        .expect("marker");
}

/// A host where install ran (with `sets`) and CalicoNode has initialised, and the settings of
/// `role` with `program` as the Calico binary.
fn initialised(role: Role, sets: &[&str], program: String) -> (SimHost, Settings) {
    let host = SimHost::in_memory("ws2022").expect("host");
    install(&host, sets);
    mark_init_done(&host);
    let mut s = settings(role);
    s.program = Some(program);
    (host, s)
}

/// Waits (bounded) until the log holds `needle` at least `times` times.
fn wait_for_log(path: &PathBuf, needle: &str, times: usize) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = read(path);
        if text.matches(needle).count() >= times || Instant::now() > deadline {
            return text;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs the role's body on a thread, calls `during` with its log, then requests the stop and
/// checks that the body ends cleanly; returns the whole log.
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

#[test]
fn kubelet_starting_and_restarting_runs_calico_node_startup_again() {
    let host = SimHost::in_memory("ws2022").expect("host");
    install(&host, &[]);
    host.set_process("kubelet.exe", None).expect("no kubelet");
    let text = while_running(&host, &settings(Role::Node), |path| {
        let text = wait_for_log(path, "kubelet is not running; waiting for it", 1);
        assert!(!text.contains("calico-node startup finished"), "{text}");
        host.set_process("kubelet.exe", Some(7001))
            .expect("kubelet");
        let text = wait_for_log(path, "calico-node startup finished", 1);
        assert!(text.contains("kubelet is running (pid 7001)"), "{text}");
        host.set_process("kubelet.exe", Some(7002))
            .expect("kubelet restarted");
        wait_for_log(path, "calico-node startup finished", 2);
    });
    assert!(
        text.contains("kubelet is running again (pid 7002)"),
        "{text}"
    );
    assert!(text.contains("[calicoctl-win] info: stopped"), "{text}");
}

#[test]
fn a_failing_startup_is_retried_with_backoff_until_it_succeeds() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Fails twice, then succeeds.
    let fake = counting(dir.path(), "calico-node", "[ $n -ge 3 ]");
    let host = SimHost::in_memory("ws2022").expect("host");
    install(&host, &[]);
    let mut s = settings(Role::Node);
    s.program = Some(fake);
    let (log, path) = log_for(&host, &s);
    node::start_phase(&host, &s, &log).expect("third attempt succeeds");
    let text = read(&path);
    for d in ["10ms", "20ms"] {
        let failed = format!("calico-node startup failed (exit code 1); retrying in {d}");
        assert!(text.contains(&failed), "{d}: {text}");
    }
    assert!(text.contains("calico-node run 3"), "{text}");
}

#[test]
fn felix_restarts_at_once_after_129_and_with_growing_delays_after_a_crash() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fake = counting(dir.path(), "felix", "[ $n -le 2 ] && exit 129\nexit 3");
    let (host, s) = initialised(Role::Felix, &[], fake);
    let text = run_until(&host, &s, "felix run 6");
    let reload = "exited with 129 to reload its configuration; restarting now";
    assert_eq!(text.matches(reload).count(), 2, "{text}");
    for d in ["10ms", "20ms", "40ms"] {
        let crash = format!("exited with code 3; restarting in {d}");
        assert!(text.contains(&crash), "{d}: {text}");
    }
    assert!(
        text.contains("-felix"),
        "felix is started with -felix: {text}"
    );
    // Each start is recorded where status ages Felix by it.
    let started = host
        .reg_get(CALICO_KEY, crate::layout::FELIX_STARTED_VALUE)
        .expect("read");
    let Some(RegValue::Sz(at)) = started else {
        panic!("no FelixStarted: {started:?}");
    };
    let at: i64 = at.parse().expect("seconds");
    assert!((crate::duration::now() - at).abs() < 60, "{at}");
}

#[test]
fn felix_waits_for_calico_node_warns_after_the_timeout_and_then_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fake = script(dir.path(), "felix", &format!("echo felix up\n{FOREVER}"));
    let host = SimHost::in_memory("ws2022").expect("host");
    install(&host, &[]);
    let mut s = settings(Role::Felix);
    s.program = Some(fake);
    let text = while_running(&host, &s, |path| {
        let text = wait_for_log(path, "has not finished initialising after", 1);
        assert!(
            text.contains("waiting for CalicoNode to finish initialising"),
            "{text}"
        );
        assert!(
            !text.contains("felix up"),
            "felix must not run before init: {text}"
        );
        mark_init_done(&host);
        wait_for_log(path, "felix up", 1);
    });
    assert!(text.contains("CalicoNode finished initialising"), "{text}");
    assert!(text.contains("felix up"), "{text}");
}

#[test]
fn stop_is_graceful_first_and_kills_a_child_that_hangs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let polite = script(
        dir.path(),
        "polite",
        &format!("trap 'exit 0' TERM\necho ready\n{FOREVER}"),
    );
    let stubborn = script(
        dir.path(),
        "stubborn",
        &format!("trap '' TERM\necho ready\n{FOREVER}"),
    );
    for (fake, code) in [(polite, 0), (stubborn, -1)] {
        let (host, mut s) = initialised(Role::Felix, &[], fake);
        s.stop_timeout = Duration::from_millis(300);
        let text = run_until(&host, &s, "ready");
        assert!(
            text.contains(&format!("ended with exit code {code}")),
            "{text}"
        );
    }
}

#[test]
fn a_child_gets_exactly_the_rendered_environment() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fake = script(dir.path(), "felix", "/usr/bin/env\nexit 0");
    let (host, s) = initialised(Role::Felix, &["vxlan.vni=4097"], fake);
    let text = run_until(&host, &s, "FELIX_VXLANVNI=4097");
    assert!(text.contains("FELIX_FELIXHOSTNAME=win-1"), "{text}");
    for leaked in ["\nHOME=", "\nPATH=", "\nUSER="] {
        assert!(
            !text.contains(leaked),
            "{leaked} leaked into the child: {text}"
        );
    }
}

#[test]
fn confd_idles_without_bgp_and_clears_stale_files_with_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fake = script(
        dir.path(),
        "confd",
        &format!("echo \"confd $*\"\n{FOREVER}"),
    );
    let (host, s) = initialised(Role::Confd, &[], fake.clone());
    host.write_file(
        &format!(r"{ROOT}\calico-confd.env"),
        b"CALICO_NETWORKING_BACKEND=vxlan\n",
        crate::host::Access::Normal,
    )
    .expect("write");
    let text = run_until(&host, &s, "idle until stopped");
    assert!(!text.contains("confd -confd"), "{text}");

    let (host, s) = initialised(
        Role::Confd,
        &["backend=windows-bgp", "cni.ipam_type=host-local"],
        fake,
    );
    let stale = format!(r"{ROOT}\confd\peerings.ps1");
    host.write_file(&stale, b"# old peers\n", crate::host::Access::Normal)
        .expect("write");
    let text = run_until(
        &host,
        &s,
        r"confd -confd -confd-confdir=C:\CalicoWindows\confd",
    );
    assert!(text.contains("removed the stale"), "{text}");
    assert_eq!(host.read_file(&stale).expect("read"), None);
}

#[test]
fn the_binary_is_found_without_reading_it_and_a_missing_one_is_named() {
    let host = SimHost::in_memory("ws2022").expect("host");
    let mut s = Settings::new(Role::Felix, ROOT);
    let err = Layout::detect(&host, &s).unwrap_err();
    assert!(
        err.to_string()
            .contains(r"neither calico.exe nor calico-node.exe is in C:\CalicoWindows")
    );
    let put = |name: &str| {
        host.write_file(
            &format!(r"{ROOT}\{name}"),
            b"x",
            crate::host::Access::Normal,
        )
        .expect("write");
    };
    put("calico-node.exe");
    // Unknown version: only what every calico-node.exe knows.
    assert_eq!(
        Layout::detect(&host, &s).expect("layout"),
        Layout::of(Binary::CalicoNode, None)
    );
    s.calico_version = Some(CalicoVersion::new(3, 31, 0));
    assert!(
        Layout::detect(&host, &s)
            .expect("layout")
            .0
            .complete_startup
    );
    // A version of the other binary is not this release's: the name decides.
    s.calico_version = Some(CalicoVersion::new(3, 33, 0));
    assert_eq!(
        Layout::detect(&host, &s).expect("layout"),
        Layout::of(Binary::CalicoNode, None)
    );
    put("calico.exe");
    assert_eq!(
        Layout::detect(&host, &s).expect("layout").0.binary,
        Binary::Calico
    );
}

/// The command lines of node-service.ps1, felix-service.ps1 and confd-service.ps1 at each
/// release tag (projectcalico/calico, node/windows-packaging/CalicoWindows).
#[test]
fn each_release_starts_its_components_as_its_own_service_scripts_do() {
    let s = Settings::new(Role::Node, ROOT);
    let line = |version: &str, c: Component| {
        let v = CalicoVersion::parse(version).expect("version");
        let layout = Layout::of(v.features().binary, Some(&v));
        let (exe, args) = layout.command(&s, c);
        Some(format!("{exe} {}", args.join(" ")))
    };
    // No release runs `-monitor-token` outside a HostProcess container (see release::version).
    let cases: &[(&str, Component, Option<&str>)] = &[
        // v3.27.0: `.\calico-node.exe -startup`.
        (
            "3.27.0",
            Component::Startup,
            Some(r"C:\CalicoWindows\calico-node.exe -startup"),
        ),
        (
            "3.27.0",
            Component::Felix,
            Some(r"C:\CalicoWindows\calico-node.exe -felix"),
        ),
        (
            "3.27.0",
            Component::Confd,
            Some(r"C:\CalicoWindows\calico-node.exe -confd -confd-confdir=C:\CalicoWindows\confd"),
        ),
        // v3.28.0 to v3.30: plain startup.
        (
            "3.28.0",
            Component::Startup,
            Some(r"C:\CalicoWindows\calico-node.exe -startup"),
        ),
        (
            "3.30.4",
            Component::Startup,
            Some(r"C:\CalicoWindows\calico-node.exe -startup"),
        ),
        // v3.31.0 and v3.32: `-startup -complete-startup`.
        (
            "3.31.0",
            Component::Startup,
            Some(r"C:\CalicoWindows\calico-node.exe -startup -complete-startup"),
        ),
        (
            "3.32.1",
            Component::Startup,
            Some(r"C:\CalicoWindows\calico-node.exe -startup -complete-startup"),
        ),
        // release-v3.33: calico.exe with subcommands.
        (
            "3.33.0",
            Component::Startup,
            Some(r"C:\CalicoWindows\calico.exe component node startup --complete-startup"),
        ),
        (
            "3.33.0",
            Component::Felix,
            Some(r"C:\CalicoWindows\calico.exe component felix"),
        ),
        (
            "3.33.0",
            Component::Confd,
            Some(r"C:\CalicoWindows\calico.exe component confd --confdir=C:\CalicoWindows\confd"),
        ),
    ];
    for (version, c, want) in cases {
        assert_eq!(line(version, *c).as_deref(), *want, "{version} {c:?}");
    }
}

#[test]
fn a_missing_environment_file_is_named_with_a_hint() {
    let host = SimHost::in_memory("ws2022").expect("host");
    let s = settings(Role::Felix);
    let (log, _) = log_for(&host, &s);
    let err = run(&host, &s, &Stop::new(), &log).unwrap_err();
    assert_eq!(
        err.to_string(),
        r"the service environment C:\CalicoWindows\calico-felix.env is missing"
    );
    assert!(
        err.hint()
            .is_some_and(|h| h.contains("calicoctl-win install"))
    );
}

#[test]
fn the_service_registration_runs_calicoctl_win_with_recovery() {
    let spec = service_spec(
        Role::Felix,
        r"C:\CalicoWindows\calicoctl-win.exe",
        vec![
            "service".into(),
            "run".into(),
            "felix".into(),
            "--install-root".into(),
            ROOT.into(),
        ],
    );
    assert_eq!(spec.name, "CalicoFelix");
    assert_eq!(spec.dependencies, ["CalicoNode"]);
    assert_eq!(spec.start, StartType::Auto);
    assert!(
        spec.recovery
            .as_ref()
            .is_some_and(|r| r.on_non_crash_failures)
    );
    assert_eq!(
        spec.command_line(),
        r"C:\CalicoWindows\calicoctl-win.exe service run felix --install-root C:\CalicoWindows"
    );
    // No SCM dependency on HNS (Calico's Install-NodeService registers none): CalicoNode
    // starts it itself.
    assert!(
        service_spec(Role::Node, "x", vec![])
            .dependencies
            .is_empty()
    );
}

#[test]
fn environment_files_parse_like_the_renderer_writes_them() {
    let env = parse_env("# header\r\nA=1\r\n\nB=x=y\n  # indented comment\nbad line\n");
    assert_eq!(env.get("A").map(String::as_str), Some("1"));
    assert_eq!(env.get("B").map(String::as_str), Some("x=y"));
    assert_eq!(env.len(), 2);
}

/// After a boot no pod sandbox can get a network before Calico's is made again
/// (projectcalico/calico#5828): kubelet's runtime sets a sandbox up only from the CNI config,
/// which is withheld from the machine's shutdown until calico-node startup has finished in the
/// new boot; after a power loss, from CalicoNode's first start.
#[test]
fn the_cni_config_is_withheld_from_shutdown_until_startup_has_finished_after_the_boot() {
    let host = SimHost::in_memory("ws2022").expect("host");
    install(&host, &[]);
    let conf = r"C:\Program Files\containerd\cni\conf\10-calico.conf";
    let withheld = format!("{conf}{}", crate::layout::WITHHELD_SUFFIX);
    let cni = br#"{"cniVersion": "0.3.1", "name": "Calico", "type": "calico"}"#;
    host.write_file(conf, cni, crate::host::Access::Normal)
        .expect("cni config");
    let there = |path: &str| host.read_file(path).expect("read").is_some();
    let s = settings(Role::Node);
    let (log, path) = log_for(&host, &s);
    let finished = "calico-node startup finished";

    // Running, then the machine shuts down.
    let stop = Stop::new();
    std::thread::scope(|scope| {
        let body = scope.spawn(|| run(&host, &s, &stop, &log));
        wait_for_log(&path, finished, 1);
        stop.request_shutdown();
        body.join().expect("join").expect("stops cleanly");
    });
    assert!(!there(conf) && there(&withheld), "withheld at shutdown");

    // The next boot: from CalicoNode's start until its startup has finished on the new
    // network, the runtime finds no CNI config. The file is looked at before the log, and the
    // log says "finished" before the config comes back, so a sample cannot mislead.
    host.reboot().expect("reboot");
    let stop = Stop::new();
    let samples = std::thread::scope(|scope| {
        let body = scope.spawn(|| run(&host, &s, &stop, &log));
        let mut samples = 0;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let conf_there = there(conf);
            let text = read(&path);
            let done = text.matches(finished).count() >= 2;
            assert!(
                !conf_there || done,
                "the CNI config was back before calico-node startup finished:\n{text}"
            );
            samples += 1;
            if conf_there || Instant::now() > deadline {
                break;
            }
        }
        stop.request();
        body.join().expect("join").expect("stops cleanly");
        samples
    });
    assert!(samples > 1, "sampled while CalicoNode started");
    assert!(there(conf) && !there(&withheld), "put back after startup");
    let text = read(&path);
    assert!(
        text.contains("calico-node startup has finished: the CNI config"),
        "{text}"
    );
    assert!(network_ids(&host).iter().any(|(n, _)| n == "Calico"));
    // A plain stop (a restart, an upgrade) leaves it in place.
    assert!(there(conf));

    // A power loss: nothing withheld it, so CalicoNode's first start in the boot does.
    host.reboot().expect("reboot");
    node::start_phase(&host, &s, &log).expect("start after a power loss");
    let text = read(&path);
    let withheld_at = text.rfind("first start in this boot: withheld the CNI config");
    let finished_at = text.rfind(finished);
    assert!(withheld_at.is_some() && withheld_at < finished_at, "{text}");
    assert!(there(conf) && !there(&withheld));
}

/// The kube-proxy service waits for Calico's network and `Calico_ep`, then runs kube-proxy as
/// Calico's kube-proxy-service.ps1 did: its version read first, `--source-vip` from
/// `Calico_ep`, DSR where the build has it (Server 2022 does), `KUBE_NETWORK=Calico`.
#[test]
fn kube_proxy_waits_for_calico_then_runs_with_the_scripts_arguments() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fake = script(
        dir.path(),
        "kube-proxy",
        &format!(
            "if [ \"$1\" = --version ]; then echo 'Kubernetes v1.33.2'; exit 0; fi\nprintf '%s\\n' \"kube-proxy $* network=$KUBE_NETWORK\"\n{FOREVER}"
        ),
    );
    let host = SimHost::in_memory("ws2022").expect("host");
    install(&host, &[r"kube_proxy.path=C:\k\kube-proxy.exe"]);
    let mut s = settings(Role::KubeProxy);
    s.program = Some(fake);
    s.network_timeout = Duration::from_secs(20);
    let text = while_running(&host, &s, |path| {
        let text = wait_for_log(path, "waiting up to", 1);
        assert!(!text.contains("kube-proxy --hostname"), "{text}");
        // CalicoNode makes the networks and calico-node the host endpoint.
        let (log, _) = log_for(&host, &settings(Role::Node));
        node::start_phase(&host, &settings(Role::Node), &log).expect("calico-node");
        wait_for_log(path, "network=Calico", 1);
    });
    for want in [
        "kube-proxy v1.33 on network Calico",
        // 1.33: WinDSR is on by default, so no gate is passed.
        "--hostname-override=win-1 --v=4 --proxy-mode=kernelspace --kubeconfig=C:\\k\\config --enable-dsr=true --source-vip=10.244.1.2 network=Calico",
    ] {
        assert!(text.contains(want), "{want} not in {text}");
    }
}

/// Without Calico's network, the kube-proxy service gives up after its bound (and the service
/// manager starts it again); a kube-proxy.exe that is not there is named.
#[test]
fn kube_proxy_gives_up_after_its_bound_and_names_a_missing_binary() {
    let host = SimHost::in_memory("ws2022").expect("host");
    install(&host, &[r"kube_proxy.path=C:\k\kube-proxy.exe"]);
    let s = settings(Role::KubeProxy);
    let (log, _) = log_for(&host, &s);
    let err = run(&host, &s, &Stop::new(), &log).unwrap_err();
    assert!(err.to_string().contains(r"kube-proxy is not at"), "{err}");
    host.write_file(
        r"C:\k\kube-proxy.exe",
        b"kube-proxy v1.33.2 (simulated)\n",
        crate::host::Access::Normal,
    )
    .expect("write");
    let started = Instant::now();
    let err = run(&host, &s, &Stop::new(), &log).unwrap_err();
    assert!(matches!(err, SuperviseError::KubeProxyWait { .. }), "{err}");
    assert!(err.to_string().contains("the HNS network Calico"), "{err}");
    assert!(err.is_timeout());
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// Children get the service's PATH, TEMP, Windows' directories and a machine-wide proxy (as
/// NSSM and Calico's scripts passed their whole environment), under the env file's values,
/// and nothing outside the allow-list.
#[test]
fn children_take_the_allow_listed_service_environment_under_the_env_file() {
    let host = SimHost::in_memory("ws2022").expect("host");
    install(&host, &[]);
    let process_env: std::collections::BTreeMap<String, String> = [
        ("PATH", r"C:\Windows\system32;C:\Windows"),
        ("TEMP", r"C:\Windows\TEMP"),
        ("HTTPS_PROXY", "http://proxy.corp:3128"),
        ("NO_PROXY", "10.0.0.0/8"),
        ("KUBECONFIG", r"C:\k\admin.conf"),
        ("SECRET_TOKEN", "do-not-pass"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let mut s = settings(Role::Felix);
    s.inherited = super::inherited(&process_env);
    let env = super::environment(&host, &s).expect("environment");
    assert_eq!(
        env.get("PATH").map(String::as_str),
        Some(r"C:\Windows\system32;C:\Windows")
    );
    assert_eq!(
        env.get("TEMP").map(String::as_str),
        Some(r"C:\Windows\TEMP")
    );
    assert_eq!(
        env.get("HTTPS_PROXY").map(String::as_str),
        Some("http://proxy.corp:3128")
    );
    assert!(!env.contains_key("SECRET_TOKEN"), "{env:?}");
    // The env file's KUBECONFIG (calico-node's), never the admin's of the service's env.
    assert_ne!(
        env.get("KUBECONFIG").map(String::as_str),
        Some(r"C:\k\admin.conf")
    );
    assert!(env.contains_key("FELIX_FELIXHOSTNAME"), "{env:?}");
}

/// CalicoFelix registered and running, and the `hns` service's program in place.
fn felix_running(host: &SimHost) {
    let svchost = r"C:\Windows\system32\svchost.exe";
    let exe = format!(r"{ROOT}\calicoctl-win.exe");
    for program in [svchost, exe.as_str()] {
        host.write_file(program, b"simulated program\n", crate::host::Access::Normal)
            .expect("write");
    }
    host.service_create(&crate::host::ServiceSpec {
        name: "CalicoFelix".into(),
        display_name: "Calico Felix".into(),
        description: String::new(),
        program: exe.clone(),
        args: vec!["service".into(), "run".into(), "felix".into()],
        dependencies: vec![],
        start: StartType::Auto,
        recovery: None,
    })
    .expect("create");
    host.service_start("CalicoFelix", Duration::from_secs(1))
        .expect("start");
}

/// CalicoFelix's process id.
fn felix_pid(host: &SimHost) -> Option<u32> {
    host.service_query("CalicoFelix")
        .expect("query")
        .expect("registered")
        .pid
}

/// CalicoNode's loop answers an HNS restart while it runs (the watchdog's call in
/// `watch_kubelet`, not only `HnsWatch::check` alone).
#[test]
fn calico_node_answers_an_hns_restart_while_it_runs() {
    let host = SimHost::in_memory("ws2022").expect("host");
    install(&host, &[]);
    felix_running(&host);
    let before = felix_pid(&host);
    let text = while_running(&host, &settings(Role::Node), |path| {
        wait_for_log(path, "calico-node startup finished", 1);
        host.service_stop("hns", Duration::from_secs(1))
            .expect("stop");
        host.service_start("hns", Duration::from_secs(1))
            .expect("start");
        wait_for_log(path, "the HNS service restarted", 1);
    });
    assert_ne!(felix_pid(&host), before, "Felix was not restarted: {text}");
    assert!(
        crate::installed::hns_restart::last(&host).is_some_and(|r| r.restarted == ["CalicoFelix"])
    );
}

/// The HNS restart watchdog (Azure/AgentBaker hnsremediator.ps1's rule: a changed process id of
/// the `hns` service is a restart): Felix restarted once per restart, the restart recorded in
/// the registry and the Application event log; a stopped HNS is no restart yet.
#[test]
fn an_hns_restart_restarts_felix_once_and_is_recorded() {
    let host = SimHost::in_memory("ws2022").expect("host");
    felix_running(&host);
    let s = settings(Role::Node);
    let (log, path) = log_for(&host, &s);
    let mut watch = hns_watch::HnsWatch::default();
    assert_eq!(
        watch.check(&host, &s, &log),
        None,
        "the first look only notes HNS"
    );
    assert_eq!(
        watch.check(&host, &s, &log),
        None,
        "the same process: no restart"
    );
    let before = felix_pid(&host);

    host.service_stop("hns", Duration::from_secs(1))
        .expect("stop");
    assert_eq!(
        watch.check(&host, &s, &log),
        None,
        "HNS stopped: not answered yet"
    );
    host.service_start("hns", Duration::from_secs(1))
        .expect("start");
    let r = watch.check(&host, &s, &log).expect("a restart");
    assert_eq!(r.restarted, ["CalicoFelix"]);
    assert!(r.failed.is_empty(), "{r:?}");
    assert_ne!(felix_pid(&host), before, "Felix was not restarted");
    assert_eq!(crate::installed::hns_restart::last(&host), Some(r.clone()));
    assert!(read(&path).contains("the HNS service restarted"));
    assert!(
        host.events()
            .iter()
            .any(|e| e.id == hns_watch::EVENT_HNS_RESTARTED && e.message.contains("CalicoFelix")),
        "{:?}",
        host.events()
    );
    let after = felix_pid(&host);
    assert_eq!(watch.check(&host, &s, &log), None, "once per restart");
    assert_eq!(felix_pid(&host), after);
}

/// Restarts HNS on the simulated host (a new process id).
fn restart_hns(host: &SimHost) {
    host.service_stop("hns", Duration::from_secs(1))
        .expect("stop");
    host.service_start("hns", Duration::from_secs(1))
        .expect("start");
}

/// A Felix that does not exit on its first stop signal: CalicoFelix kills it after its own
/// stop timeout, so its service takes longer than that to stop. The watchdog waits as long as
/// the service may take (its stop timeout and its SCM wait hint), then starts it. It once
/// waited only CalicoNode's own stop timeout, recorded `"restarted":[]` with a timeout in
/// `failed`, and left CalicoFelix stopped (seen under Wine).
#[test]
fn the_hns_watchdog_waits_for_a_felix_slow_to_stop_and_starts_it_again() {
    let host = SimHost::in_memory("ws2022").expect("host");
    felix_running(&host);
    let mut s = settings(Role::Node);
    s.stop_timeout = Duration::from_millis(200);
    // Longer than the stop timeout, within the stop timeout and the wait hint.
    host.set_stop_takes("CalicoFelix", s.stop_timeout + Duration::from_secs(2))
        .expect("slow stop");
    let (log, _) = log_for(&host, &s);
    let mut watch = hns_watch::HnsWatch::default();
    assert_eq!(watch.check(&host, &s, &log), None);
    let before = felix_pid(&host);
    restart_hns(&host);
    let r = watch.check(&host, &s, &log).expect("a restart");
    assert_eq!(r.restarted, ["CalicoFelix"], "{r:?}");
    assert!(r.failed.is_empty(), "{r:?}");
    assert_ne!(felix_pid(&host), before);
    let felix = host
        .service_query("CalicoFelix")
        .expect("query")
        .expect("there");
    assert_eq!(felix.state, crate::host::ServiceState::Running);

    // Slower than even that wait: still StopPending when it ends, so it is waited for once
    // more and started once it is Stopped.
    let wait = s.service_stop_wait();
    host.set_stop_takes("CalicoFelix", wait + Duration::from_millis(300))
        .expect("slower");
    restart_hns(&host);
    let r = watch.check(&host, &s, &log).expect("a restart");
    assert_eq!(r.restarted, ["CalicoFelix"], "{r:?}");
    let felix = host
        .service_query("CalicoFelix")
        .expect("query")
        .expect("there");
    assert_eq!(felix.state, crate::host::ServiceState::Running);
}

/// A failure recorded once is a fault only while the service still does not run: one the SCM
/// or an admin started since is none (a failure once kept CalicoWindowsReady False forever).
#[test]
fn a_failed_restart_counts_only_while_the_service_is_still_down() {
    let host = SimHost::in_memory("ws2022").expect("host");
    felix_running(&host);
    let r = hns_watch::HnsRestart {
        at: 1,
        from_pid: 1,
        to_pid: 2,
        restarted: vec![],
        failed: vec!["CalicoFelix: timed out after 9s waiting for service CalicoFelix".into()],
    };
    assert!(r.still_failing(&host).is_empty(), "Felix runs again");
    host.service_stop("CalicoFelix", Duration::from_secs(1))
        .expect("stop");
    assert_eq!(r.still_failing(&host), [r.failed[0].as_str()]);
}

/// HNS's process id is kept across a restart of CalicoNode (a new watch): an HNS restart
/// in between is answered; after a reboot the kept id is another boot's and nothing is.
#[test]
fn the_hns_process_id_outlives_calico_node_but_not_the_boot() {
    let host = SimHost::in_memory("ws2022").expect("host");
    felix_running(&host);
    let s = settings(Role::Node);
    let (log, _) = log_for(&host, &s);
    assert_eq!(hns_watch::HnsWatch::default().check(&host, &s, &log), None);
    // CalicoNode restarts while HNS does.
    restart_hns(&host);
    let r = hns_watch::HnsWatch::default().check(&host, &s, &log);
    assert!(r.is_some_and(|r| r.restarted == ["CalicoFelix"]));
    assert_eq!(hns_watch::HnsWatch::default().check(&host, &s, &log), None);
    host.reboot().expect("reboot");
    felix_running_again(&host);
    assert_eq!(
        hns_watch::HnsWatch::default().check(&host, &s, &log),
        None,
        "a reboot gives HNS a new process: no HNS restart to answer"
    );
}

fn felix_running_again(host: &SimHost) {
    host.service_start("CalicoFelix", Duration::from_secs(1))
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

#[test]
fn the_vswitch_waits_for_a_stable_address_and_its_absence_is_its_own_error() {
    let host = SimHost::in_memory("ws2022").expect("host");
    install(&host, &["vxlan.adapter=Ethernet"]);
    mark_preferred(&host, "Ethernet", false);
    let mut s = settings(Role::Node);
    s.adapter_address_timeout = Duration::from_millis(100);
    let (log, path) = log_for(&host, &s);
    let err = node::start_phase(&host, &s, &log).unwrap_err();
    assert!(
        matches!(err, SuperviseError::AdapterAddress { .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("it holds: 10.0.0.5 (tentative)"),
        "{err}"
    );
    let d = crate::error::Diagnose::diagnose(&err).expect("diagnosis");
    assert_eq!(
        (d.exit, d.kind),
        (
            crate::error::Exit::Timeout,
            crate::error::Kind::AdapterAddress
        )
    );
    assert!(
        network_ids(&host).is_empty(),
        "no vSwitch on a tentative address"
    );
    assert!(read(&path).contains("waiting up to 100ms for Ethernet to hold a stable IPv4 address"));

    // An adapter with only an APIPA address (the other NIC's address lets the boot's
    // usable-address wait pass): the same.
    let host = SimHost::in_memory("ws2022-two-nics").expect("host");
    install(&host, &["vxlan.adapter=Ethernet 2"]);
    let mut adapters = host.adapters().expect("adapters");
    for a in adapters.iter_mut().filter(|a| a.name == "Ethernet 2") {
        a.addresses[0].ip = Ipv4Addr::new(169, 254, 3, 4);
    }
    host.set_adapters(adapters).expect("set");
    let err = node::start_phase(&host, &s, &log).unwrap_err();
    assert!(err.to_string().contains("it holds: 169.254.3.4)"), "{err}");
    assert!(network_ids(&host).is_empty());
}

#[test]
fn an_address_that_turns_preferred_while_waited_for_gets_the_vswitch() {
    let host = SimHost::in_memory("ws2022").expect("host");
    install(&host, &["vxlan.adapter=Ethernet"]);
    mark_preferred(&host, "Ethernet", false);
    let mut s = settings(Role::Node);
    s.adapter_address_timeout = Duration::from_secs(10);
    let (log, path) = log_for(&host, &s);
    let phase = std::thread::scope(|scope| {
        scope.spawn(|| {
            // Duplicate address detection finishes while CalicoNode waits.
            std::thread::sleep(Duration::from_millis(150));
            mark_preferred(&host, "Ethernet", true);
        });
        node::start_phase(&host, &s, &log).expect("start phase")
    });
    assert!(phase.created_external);
    let text = read(&path);
    assert!(
        text.contains("Ethernet holds 10.0.0.5 (Preferred): making the vSwitch on it"),
        "{text}"
    );
    assert!(
        text.contains("the vSwitch's host adapter is vEthernet (Ethernet) (index 5, MAC 00-15-5D-00-00-05, 10.0.0.5)"),
        "{text}"
    );
}

#[test]
fn the_vswitch_adapter_is_known_by_address_mac_and_name_together() {
    let uplink = node::Uplink {
        name: "Ethernet".into(),
        mac: "00-15-5D-00-00-05".into(),
        ip: Ipv4Addr::new(10, 0, 0, 5),
        dhcp: true,
    };
    let vnic = crate::host::Adapter {
        name: "vEthernet (Ethernet)".into(),
        index: 9,
        description: crate::host::VSWITCH_ADAPTER_DESCRIPTION.into(),
        mac: "00-15-5d-00-00-05".into(),
        addresses: vec![crate::host::AdapterAddress {
            ip: Ipv4Addr::new(10, 0, 0, 5),
            prefix_len: 24,
            preferred: true,
        }],
        dhcp: true,
        gateways: Vec::new(),
        dns_servers: Vec::new(),
        dns_suffix: String::new(),
        metric: 15,
        guid: String::new(),
    };
    assert!(uplink.is_its_vswitch_adapter(&vnic));
    let other_mac = crate::host::Adapter {
        mac: "00-15-5D-00-00-99".into(),
        ..vnic.clone()
    };
    let other_name = crate::host::Adapter {
        name: "Ethernet 3".into(),
        ..vnic.clone()
    };
    let not_a_port = crate::host::Adapter {
        description: "Microsoft Hyper-V Network Adapter".into(),
        ..vnic.clone()
    };
    let no_address = crate::host::Adapter {
        addresses: Vec::new(),
        ..vnic.clone()
    };
    for wrong in [other_mac, other_name, not_a_port, no_address] {
        assert!(!uplink.is_its_vswitch_adapter(&wrong), "{wrong:?}");
    }
}

/// projectcalico/calico#8700: after the node's IP changed, pods stayed unreachable until
/// calico-node was restarted by hand. CalicoNode follows the change without kubelet
/// restarting: calico-node's startup runs again (so the Calico Node's BGP address follows) and
/// the Application event log says why.
#[test]
fn calico_node_follows_a_change_of_the_nodes_address_without_kubelet_restarting() {
    let host = SimHost::in_memory("ws2022").expect("host");
    install(&host, &[]);
    let text = while_running(&host, &settings(Role::Node), |path| {
        wait_for_log(path, "calico-node startup finished", 1);
        host.readdress(Ipv4Addr::new(10, 0, 0, 5), Ipv4Addr::new(10, 0, 0, 7))
            .expect("readdress");
        wait_for_log(path, "calico-node startup finished", 2);
    });
    assert!(
        text.contains("the node's addresses changed from 10.0.0.5 to 10.0.0.7: running calico-node startup again"),
        "{text}"
    );
    assert_eq!(
        text.matches("kubelet is running").count(),
        1,
        "kubelet did not restart: {text}"
    );
    assert!(
        host.events()
            .iter()
            .any(|e| e.id == crate::layout::EVENT_ADDRESS_CHANGED && e.message.contains("10.0.0.7")),
        "{:?}",
        host.events()
    );
}

#[test]
fn only_a_real_change_of_address_is_followed() {
    let host = SimHost::in_memory("ws2022").expect("host");
    install(&host, &[]);
    let s = settings(Role::Node);
    let (log, _) = log_for(&host, &s);
    node::start_phase(&host, &s, &log).expect("start phase");
    let ip = |d| Some(Ipv4Addr::new(10, 0, 0, d));
    let mut w = node::AddressWatch::default();
    w.ran(&host, None);
    assert_eq!(w.changed(&host, None), None, "nothing changed");
    assert_eq!(
        w.changed(&host, ip(5)),
        None,
        "an InternalIP first read is taken"
    );
    assert_eq!(w.changed(&host, ip(5)), None);
    assert_eq!(
        w.changed(&host, ip(9)).as_deref(),
        Some("the Node's InternalIP changed from 10.0.0.5 to 10.0.0.9")
    );
    w.ran(&host, ip(9));
    // An address being renewed (only a tentative one for a moment) is not a change.
    mark_preferred(&host, "vEthernet (Ethernet)", false);
    assert_eq!(w.changed(&host, ip(9)), None);
    mark_preferred(&host, "vEthernet (Ethernet)", true);
    host.readdress(Ipv4Addr::new(10, 0, 0, 5), Ipv4Addr::new(10, 0, 0, 9))
        .expect("readdress");
    assert!(
        w.changed(&host, ip(9))
            .is_some_and(|w| w.contains("from 10.0.0.5 to 10.0.0.9"))
    );
    w.ran(&host, ip(9));
    // Calico_ep's adapter appearing (calico-node made the pod network) is no node address.
    let mut adapters = host.adapters().expect("adapters");
    adapters.push(crate::host::Adapter {
        description: crate::host::VSWITCH_ADAPTER_DESCRIPTION.into(),
        ..crate::host::Adapter::for_test(
            "vEthernet (Calico_ep)",
            20,
            "00-15-5D-AA-00-02",
            &["10.244.1.2"],
        )
    });
    host.set_adapters(adapters).expect("set");
    assert_eq!(w.changed(&host, ip(9)), None);
}

/// A static adapter's DNS servers do not come over to the vSwitch's host adapter
/// (microsoft/SDN#498, as the simulated host models it): CalicoNode puts them back, where
/// Windows reads them, and `Calico_ep` is kept above the LAN's metric
/// (projectcalico/calico#4664).
#[test]
fn what_the_vswitch_loses_of_a_static_adapter_is_put_back() {
    let host = SimHost::in_memory("ws2022-two-nics").expect("host");
    install(&host, &["vxlan.adapter=Ethernet 2"]);
    // calico-node's host endpoint adapter, made with the LAN's metric.
    let mut adapters = host.adapters().expect("adapters");
    adapters.push(crate::host::Adapter {
        name: "vEthernet (Calico_ep)".into(),
        index: 20,
        description: crate::host::VSWITCH_ADAPTER_DESCRIPTION.into(),
        mac: "00-15-5D-AA-00-02".into(),
        addresses: vec![crate::host::AdapterAddress {
            ip: Ipv4Addr::new(10, 244, 1, 2),
            prefix_len: 26,
            preferred: true,
        }],
        dhcp: false,
        gateways: Vec::new(),
        dns_servers: Vec::new(),
        dns_suffix: String::new(),
        metric: 15,
        guid: String::new(),
    });
    host.set_adapters(adapters).expect("set");
    let text = while_running(&host, &settings(Role::Node), |path| {
        wait_for_log(path, "calico-node startup finished", 1);
        wait_for_log(path, "Calico_ep) had the interface metric 15", 1);
    });
    assert!(
        text.contains("vEthernet (Ethernet 2): put back: Ethernet 2 had the DNS servers 10.0.0.2; vEthernet (Ethernet 2) has none"),
        "{text}"
    );
    let now = host.adapters().expect("adapters");
    let vnic = now
        .iter()
        .find(|a| a.name == "vEthernet (Ethernet 2)")
        .expect("vnic");
    assert_eq!(vnic.dns_servers, [Ipv4Addr::new(10, 0, 0, 2)], "{vnic:?}");
    let ep = now
        .iter()
        .find(|a| a.name == "vEthernet (Calico_ep)")
        .expect("ep");
    assert_eq!(ep.metric, 115, "{text}");
}

/// projectcalico/calico#4631: the vSwitch left a static adapter's host adapter on DHCP with
/// an APIPA address. CalicoNode finds it by MAC and name and puts the static address back
/// (DHCP off, the address added), before the routes go on it.
#[test]
fn a_static_address_that_did_not_come_over_is_put_back() {
    let host = SimHost::in_memory("ws2022-two-nics").expect("host");
    install(&host, &["vxlan.adapter=Ethernet 2"]);
    host.set_vswitch_takes_dhcp(true).expect("set");
    let s = settings(Role::Node);
    let (log, path) = log_for(&host, &s);
    node::start_phase(&host, &s, &log).expect("start phase");
    let text = read(&path);
    assert!(
        text.contains(
            "vEthernet (Ethernet 2) (index 7, MAC 00-15-5D-00-00-06) does not hold 10.0.0.6"
        ),
        "{text}"
    );
    let now = host.adapters().expect("adapters");
    let vnic = now
        .iter()
        .find(|a| a.name == "vEthernet (Ethernet 2)")
        .expect("vnic");
    assert!(
        vnic.holds(Ipv4Addr::new(10, 0, 0, 6)) && !vnic.dhcp,
        "{vnic:?}"
    );
    let before = crate::installed::addressing::recorded(&host).expect("kept");
    assert_eq!(crate::installed::addressing::drift(&before, vnic), []);
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

/// `Restart-Service hns` stops HNS and starts it again; PowerShell refuses the stop without
/// -Force while a service that depends on HNS runs (PowerShell `Service.cs`, `DoStopService`:
/// "ServiceHasDependentServices"), as the SCM does (`ERROR_DEPENDENT_SERVICES_RUNNING`). With
/// no SCM dependency on HNS, the restart goes through and Calico's services keep running.
#[test]
fn restart_service_hns_goes_through_and_calico_keeps_running() {
    let host = SimHost::in_memory("ws2022").expect("host");
    calico_services_running(&host);
    host.service_stop("hns", Duration::from_secs(1))
        .expect("HNS stops while CalicoNode runs");
    host.service_start("hns", Duration::from_secs(1))
        .expect("start");
    for name in ["hns", "CalicoNode", "CalicoFelix"] {
        assert_eq!(
            state_of(&host, name),
            Some(crate::host::ServiceState::Running),
            "{name}"
        );
    }
}

/// The simulated SCM's dependency rules, as Microsoft documents them: a service with a running
/// dependent is not stopped; starting a service starts its dependencies first; starting a
/// service starts none of its dependents. So with CalicoNode depending on HNS, a forced stop
/// of HNS (its dependents first, as `Stop-Service -Force` does) and a start of HNS left Calico
/// stopped: what dropping the dependency avoids.
#[test]
fn the_simulated_scm_keeps_dependency_rules() {
    let host = SimHost::in_memory("ws2022").expect("host");
    calico_services_running(&host);
    let mut node = service_spec(Role::Node, r"C:\CalicoWindows\calicoctl-win.exe", vec![]);
    node.dependencies = vec![hns_watch::HNS_SERVICE.into()];
    host.service_update(&node).expect("update");
    let refused = host.service_stop("hns", Duration::from_secs(1));
    assert!(
        matches!(refused, Err(crate::host::HostError::Refused { .. })),
        "{refused:?}"
    );
    for name in ["CalicoFelix", "CalicoNode", "hns"] {
        host.service_stop(name, Duration::from_secs(1))
            .expect("stop");
    }
    host.service_start("hns", Duration::from_secs(1))
        .expect("start");
    assert_eq!(
        state_of(&host, "CalicoNode"),
        Some(crate::host::ServiceState::Stopped)
    );
    host.service_stop("hns", Duration::from_secs(1))
        .expect("stop");
    host.service_start("CalicoFelix", Duration::from_secs(1))
        .expect("start");
    for name in ["hns", "CalicoNode", "CalicoFelix"] {
        assert_eq!(
            state_of(&host, name),
            Some(crate::host::ServiceState::Running),
            "{name}"
        );
    }
}

/// With no SCM dependency to start it, CalicoNode's start-up starts a stopped HNS before it
/// makes the networks.
#[test]
fn calico_node_starts_a_stopped_hns_before_making_the_networks() {
    let host = SimHost::in_memory("ws2022").expect("host");
    install(&host, &[]);
    hns_startable(&host);
    host.service_stop("hns", Duration::from_secs(1))
        .expect("stop");
    let s = settings(Role::Node);
    let (log, path) = log_for(&host, &s);
    node::start_phase(&host, &s, &log).expect("start phase");
    assert_eq!(
        state_of(&host, "hns"),
        Some(crate::host::ServiceState::Running),
        "{}",
        read(&path)
    );
    assert!(read(&path).contains("the Host Network Service is stopped: starting it"));
}

/// The vSwitch's host adapter on the simulated host, by name.
fn adapter_named(host: &SimHost, name: &str) -> crate::host::Adapter {
    host.adapters()
        .expect("adapters")
        .into_iter()
        .find(|a| a.name == name)
        .expect("adapter")
}

/// What the vSwitch dropped is put back once, right after it was made: DNS servers an
/// administrator set later (`Set-DnsClientServerAddress`) stay at the next CalicoNode start.
#[test]
fn an_administrators_later_dns_servers_are_not_put_back() {
    let host = SimHost::in_memory("ws2022-two-nics").expect("host");
    install(&host, &["vxlan.adapter=Ethernet 2"]);
    let s = settings(Role::Node);
    let (log, path) = log_for(&host, &s);
    node::start_phase(&host, &s, &log).expect("start phase");
    let vnic = "vEthernet (Ethernet 2)";
    assert_eq!(
        adapter_named(&host, vnic).dns_servers,
        [Ipv4Addr::new(10, 0, 0, 2)],
        "{}",
        read(&path)
    );
    // Keyed to the External network it was made with.
    let external = host
        .hns_networks()
        .expect("networks")
        .into_iter()
        .find(|n| n.name == "External")
        .expect("External");
    let kept = crate::installed::addressing::recorded(&host).expect("kept");
    assert_eq!(kept.network.as_deref(), Some(external.id.as_str()));
    // The administrator's Set-DnsClientServerAddress: the DNS client's setter, as WMI's
    // SetDNSServerSearchOrder is.
    let admins = vec![Ipv4Addr::new(10, 0, 0, 3)];
    let index = adapter_named(&host, vnic).index;
    host.configure_adapter(
        index,
        &crate::host::ip_config::AdapterSetting::DnsServers(admins.clone()),
    )
    .expect("set");
    node::start_phase(&host, &s, &log).expect("start phase again");
    assert_eq!(
        adapter_named(&host, vnic).dns_servers,
        admins,
        "{}",
        read(&path)
    );
}

/// projectcalico/calico#4631's node put back once; renumbered since by its administrator, its
/// old address is not added beside the new one at the next start (an address conflict once
/// that address is another host's).
#[test]
fn a_renumbered_static_node_does_not_get_its_old_address_back() {
    let host = SimHost::in_memory("ws2022-two-nics").expect("host");
    install(&host, &["vxlan.adapter=Ethernet 2"]);
    host.set_vswitch_takes_dhcp(true).expect("set");
    let s = settings(Role::Node);
    let (log, path) = log_for(&host, &s);
    node::start_phase(&host, &s, &log).expect("start phase");
    let vnic = "vEthernet (Ethernet 2)";
    assert!(adapter_named(&host, vnic).holds(Ipv4Addr::new(10, 0, 0, 6)));
    host.readdress(Ipv4Addr::new(10, 0, 0, 6), Ipv4Addr::new(10, 0, 0, 7))
        .expect("renumber");
    node::start_phase(&host, &s, &log).expect("start phase again");
    let now = adapter_named(&host, vnic);
    assert!(
        now.holds(Ipv4Addr::new(10, 0, 0, 7)) && !now.holds(Ipv4Addr::new(10, 0, 0, 6)),
        "{now:?} {}",
        read(&path)
    );
}

/// A record of an External network that is gone is dropped, not put back on whatever adapter
/// the next vSwitch has.
#[test]
fn addressing_kept_for_a_network_that_is_gone_is_dropped() {
    let host = SimHost::in_memory("ws2022-two-nics").expect("host");
    install(&host, &[]);
    let nic = adapter_named(&host, "Ethernet");
    let mut stale = crate::installed::addressing::Addressing::of(&nic);
    stale.network = Some("{00000000-0000-0000-0000-00000000dead}".into());
    stale.dns_servers = vec![Ipv4Addr::new(10, 9, 9, 9)];
    crate::installed::addressing::record(&host, &stale).expect("record");
    let s = settings(Role::Node);
    let (log, path) = log_for(&host, &s);
    node::start_phase(&host, &s, &log).expect("start phase");
    assert_eq!(
        crate::installed::addressing::recorded(&host),
        None,
        "{}",
        read(&path)
    );
    assert!(
        !adapter_named(&host, "vEthernet (Ethernet)")
            .dns_servers
            .contains(&Ipv4Addr::new(10, 9, 9, 9))
    );
}

/// projectcalico/calico#4631 where HNS gives the vSwitch no management IP while its host
/// adapter holds only an APIPA address: the static address is put back before the wait for
/// the management IP, which then comes (calico v3.32.1 `Wait-ForManagementIP` would wait for
/// ever).
#[test]
fn the_lost_static_address_is_put_back_before_the_wait_for_the_management_ip() {
    let host = SimHost::in_memory("ws2022-two-nics").expect("host");
    install(&host, &["vxlan.adapter=Ethernet 2"]);
    host.set_vswitch_takes_dhcp(true).expect("set");
    host.set_management_ip_needs_stable_address(true)
        .expect("set");
    let s = settings(Role::Node);
    let (log, path) = log_for(&host, &s);
    let phase = node::start_phase(&host, &s, &log);
    assert!(phase.is_ok(), "{phase:?} {}", read(&path));
    let external = host
        .hns_networks()
        .expect("networks")
        .into_iter()
        .find(|n| n.name == "External")
        .expect("External");
    assert_eq!(external.management_ip.as_deref(), Some("10.0.0.6"));
    assert!(read(&path).contains("management IP on the vSwitch: 10.0.0.6"));
}

/// Without an addressing record (no adapter named: HNS picks), a second NIC renewing its
/// DHCP lease is not the node's address changing: only the External vSwitch's host adapter is
/// followed.
#[test]
fn only_the_external_networks_adapter_is_followed() {
    let host = SimHost::in_memory("ws2022-two-nics").expect("host");
    install(&host, &[]);
    let s = settings(Role::Node);
    let (log, _) = log_for(&host, &s);
    node::start_phase(&host, &s, &log).expect("start phase");
    assert_eq!(crate::installed::addressing::recorded(&host), None);
    let mut w = node::AddressWatch::default();
    w.ran(&host, None);
    // Ethernet 2, the second NIC, gets another lease.
    host.readdress(Ipv4Addr::new(10, 0, 0, 6), Ipv4Addr::new(10, 0, 0, 9))
        .expect("readdress");
    assert_eq!(w.changed(&host, None), None);
    // The vSwitch's host adapter's address is the node's.
    host.readdress(Ipv4Addr::new(10, 0, 0, 5), Ipv4Addr::new(10, 0, 0, 7))
        .expect("readdress");
    assert!(
        w.changed(&host, None)
            .is_some_and(|c| c.contains("from 10.0.0.5 to 10.0.0.7"))
    );
}

/// Runs the role's body until its log says it waits for `what`, then requests the stop: the
/// body ends with the stop, cleanly, not with the wait's timeout (a minute away); returns the
/// log.
fn stops_while_waiting(host: &SimHost, s: &Settings, what: &str) -> String {
    let (log, path) = log_for(host, s);
    let stop = Stop::new();
    std::thread::scope(|scope| {
        let body = scope.spawn(|| run(host, s, &stop, &log));
        let waiting = format!("waiting up to 60s for {what}");
        let text = wait_for_log(&path, &waiting, 1);
        assert!(text.contains(&waiting), "{text}");
        stop.request();
        let out = body.join().expect("join");
        assert!(
            out.is_ok(),
            "the stop, not a timeout, ends the wait: {out:?}"
        );
    });
    let text = read(&path);
    assert!(
        text.contains(&format!("stopped waiting for {what} after ")),
        "{text}"
    );
    text
}

/// Settings whose waits last a minute.
fn patient(role: Role) -> Settings {
    let mut s = settings(role);
    s.network_timeout = Duration::from_secs(60);
    s.adapter_address_timeout = Duration::from_secs(60);
    s
}

#[test]
fn a_stop_ends_the_wait_for_a_usable_address() {
    let host = SimHost::in_memory("ws2022").expect("host");
    install(&host, &["node.startup_valid_ip_timeout=60s"]);
    host.set_ipv4_addresses(vec![InterfaceAddress {
        interface: "Ethernet".into(),
        index: 4,
        ip: Ipv4Addr::new(169, 254, 10, 20),
        prefix_len: 16,
    }])
    .expect("addresses");
    stops_while_waiting(
        &host,
        &patient(Role::Node),
        "a usable IPv4 address (not 127/8 or 169.254/16)",
    );
    assert!(!init_done(&host).expect("read"));
}

#[test]
fn a_stop_ends_the_wait_for_a_stable_adapter_address() {
    let host = SimHost::in_memory("ws2022").expect("host");
    install(&host, &["vxlan.adapter=Ethernet"]);
    mark_preferred(&host, "Ethernet", false);
    stops_while_waiting(
        &host,
        &patient(Role::Node),
        "Ethernet to hold a stable IPv4 address (Preferred, not 169.254/16) before making the vSwitch on it",
    );
    assert!(network_ids(&host).is_empty(), "no vSwitch was made");
}

#[test]
fn a_stop_ends_the_wait_for_the_management_ip() {
    let host = SimHost::in_memory("ws2022").expect("host");
    install(&host, &[]);
    host.set_management_ip_pending(true).expect("pending");
    stops_while_waiting(&host, &patient(Role::Node), "the vSwitch's management IP");
    assert!(!init_done(&host).expect("read"));
}

/// After a boot, stale networks HNS refuses to delete (a denial is every time): the wait for
/// them to go ends with the stop.
#[test]
fn a_stop_ends_the_wait_for_stale_networks_to_go() {
    let dir = tempfile::tempdir().expect("tempdir");
    let host = SimHost::open_or_create(dir.path(), None).expect("host");
    install(&host, &[]);
    let (log, _) = log_for(&host, &settings(Role::Node));
    node::start_phase(&host, &settings(Role::Node), &log).expect("start phase");
    host.reboot().expect("reboot");
    let denied = SimHost::open_or_create(dir.path(), None)
        .expect("host")
        .with_fault(Some(Fault {
            kind: FaultKind::Deny,
            at: At::Op("delete HNS network".into()),
        }));
    stops_while_waiting(
        &denied,
        &patient(Role::Node),
        "the stale HNS networks to be deleted",
    );
    assert!(!network_ids(&denied).is_empty());
}

#[test]
fn a_stop_ends_kube_proxys_wait_for_calicos_network() {
    let host = SimHost::in_memory("ws2022").expect("host");
    install(&host, &[r"kube_proxy.path=C:\k\kube-proxy.exe"]);
    host.write_file(
        r"C:\k\kube-proxy.exe",
        b"kube-proxy v1.33.2 (simulated)\n",
        crate::host::Access::Normal,
    )
    .expect("write");
    stops_while_waiting(&host, &patient(Role::KubeProxy), "the HNS network Calico");
}
