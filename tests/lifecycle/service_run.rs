//! `service run ROLE` through the binary on a simulated host, and the simulated SCM running a
//! role's start-up phase when one of calicoctl-win's services starts.

use crate::support::cmd;
use calicoctl_win::config::{Inputs, load};
use calicoctl_win::host::sim::SimHost;
use calicoctl_win::host::{Access, Files, Hns, Registry, ServiceState, Services, SystemInfo};
use calicoctl_win::layout::Role;
use calicoctl_win::supervise;
use std::path::Path;
use std::time::Duration;

const ROOT: &str = r"C:\CalicoWindows";

/// A simulated host in `dir` with what install leaves for the services.
pub(crate) fn installed_host(dir: &Path) -> SimHost {
    let host = SimHost::open_or_create(dir, Some("ws2022")).expect("host");
    let inputs = Inputs {
        file: None,
        env: Default::default(),
        sets: vec![],
        host: [(
            "node.name",
            calicoctl_win::config::Raw::Scalar("win-1".into()),
        )]
        .into(),
        cluster: Default::default(),
    };
    let c = load(&inputs).expect("config").config;
    let put = |name: &str, text: &[u8]| {
        host.write_file(&format!("{ROOT}\\{name}"), text, Access::Normal)
            .expect("write");
    };
    put("calico-node.exe", b"simulated program\n");
    put("calicoctl-win.exe", b"simulated program\n");
    for role in calicoctl_win::render::env::roles_for(&c) {
        put(
            role.env_file(),
            calicoctl_win::render::env::render(&c, role, None).as_bytes(),
        );
    }
    let external =
        calicoctl_win::render::hns::external_network(&c, Some("Ethernet")).expect("vxlan");
    put("external-network.json", external.to_string().as_bytes());
    host
}

fn network_names(host: &SimHost) -> Vec<String> {
    host.hns_networks()
        .expect("networks")
        .into_iter()
        .map(|n| n.name)
        .collect()
}

fn init_done(host: &SimHost) -> bool {
    let boot = host.system_facts().expect("facts").boot_id.expect("boot");
    host.reg_get(
        calicoctl_win::layout::CALICO_KEY,
        calicoctl_win::layout::BOOT_ID_VALUE,
    )
    .expect("read")
        == Some(calicoctl_win::host::RegValue::Sz(boot))
}

/// A loopback URL where nothing listens: the platform probes find bare metal at once.
#[cfg(unix)]
fn closed_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    format!("http://{}", l.local_addr().expect("addr"))
}

/// `service run node --console ARGS` on the simulated host in `dir`, as a child to watch.
#[cfg(unix)]
pub(crate) fn console_node(dir: &Path, args: &[&std::ffi::OsStr]) -> std::process::Child {
    use std::process::{Command, Stdio};
    let closed = closed_url();
    Command::new(assert_cmd::cargo::cargo_bin("calicoctl-win"))
        .env_clear()
        .args(["service", "run", "node", "--console", "--sim-host"])
        .arg(dir)
        .args(["--ec2-metadata-url", &closed, "--gce-metadata-url", &closed])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn")
}

/// Waits (bounded) until `done`, failing if the child exits first; then stops it as the SCM
/// would (SIGTERM here) and returns its output.
#[cfg(unix)]
pub(crate) fn run_until(
    mut child: std::process::Child,
    what: &str,
    done: impl Fn() -> bool,
) -> std::process::Output {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        assert!(
            child.try_wait().expect("poll").is_none(),
            "exited early, before {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("signal");
    child.wait_with_output().expect("wait")
}

/// CalicoNode in the console, stopped once its log says startup finished: it exits 0. Its
/// stderr.
#[cfg(unix)]
fn stopped_after_startup(child: std::process::Child, root: &Path) -> String {
    let log = root.join("fs/c/calicowindows/logs/calico-node.log");
    let out = run_until(child, "calico-node startup", || {
        fs_err::read_to_string(&log)
            .unwrap_or_default()
            .contains("calico-node startup finished")
    });
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    stderr
}

#[cfg(unix)]
#[test]
fn node_in_the_console_initialises_runs_startup_and_stops_cleanly_on_sigterm() {
    let dir = tempfile::tempdir().expect("tempdir");
    drop(installed_host(dir.path()));
    let child = console_node(dir.path(), &[]);
    let stderr = stopped_after_startup(child, dir.path());
    // The console shows what the log holds.
    assert!(
        stderr.contains("runs CalicoNode in the console"),
        "{stderr}"
    );
    assert!(stderr.contains("created HNS network External"), "{stderr}");
    assert!(stderr.contains("platform: bare-metal"), "{stderr}");
    assert!(stderr.contains("[calicoctl-win] info: stopped"), "{stderr}");
    let host = SimHost::open_or_create(dir.path(), None).expect("reopen");
    assert!(init_done(&host));
    assert_eq!(network_names(&host), ["External", "Calico"]);
    // The start and the stop in the Application event log, under calicoctl-win's source.
    let events = events(dir.path());
    assert_eq!(
        events
            .iter()
            .map(|e| (e["source"].as_str(), e["level"].as_str(), e["id"].as_u64()))
            .collect::<Vec<_>>(),
        [
            (Some("calicoctl-win"), Some("information"), Some(1)),
            (Some("calicoctl-win"), Some("information"), Some(2)),
        ],
        "{events:?}"
    );
    assert!(
        events[0]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("CalicoNode started")),
        "{events:?}"
    );
    assert_eq!(events[1]["message"], "CalicoNode stopped");
}

/// The simulated host's Application event log.
fn events(dir: &Path) -> Vec<serde_json::Value> {
    let state: serde_json::Value =
        serde_json::from_str(&fs_err::read_to_string(dir.join("state.json")).expect("state"))
            .expect("json");
    state["events"].as_array().cloned().unwrap_or_default()
}

/// `calicoctl-win service run ARGS --sim-host <new host>`: exit code and stderr.
fn service_run(args: &[&str]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = cmd()
        .args(["service", "run"])
        .args(args)
        .arg("--sim-host")
        .arg(dir.path())
        .output()
        .expect("run");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn without_console_it_must_be_started_by_the_scm() {
    let (code, stderr) = service_run(&["felix"]);
    assert_eq!(code, Some(2), "{stderr}");
    let scm = "must be started by the Windows service control manager";
    assert!(
        stderr.contains(scm) && stderr.contains("--console"),
        "{stderr}"
    );
}

#[test]
fn a_missing_environment_is_a_clear_failure_and_an_error_event() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = cmd()
        .args(["service", "run", "felix", "--console", "--sim-host"])
        .arg(dir.path())
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let missing = r"the service environment C:\CalicoWindows\calico-felix.env is missing";
    assert!(stderr.contains(missing), "{stderr}");
    assert!(stderr.contains("calicoctl-win install"), "{stderr}");
    let events = events(dir.path());
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[1]["level"], "error", "{events:?}");
    assert_eq!(events[1]["id"], 3, "{events:?}");
    assert!(
        events[1]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("CalicoFelix failed: ") && m.contains(missing)),
        "{events:?}"
    );
}

#[test]
fn bad_service_options_are_usage_errors() {
    cmd()
        .args([
            "service",
            "run",
            "node",
            "--console",
            "--log-max-size",
            "ten",
        ])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("is not a size"));
}

#[test]
fn starting_the_registered_services_on_simhost_runs_their_start_up_for_real() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut host = installed_host(dir.path());
    host.set_start_hook(calicoctl_win::commands::service::sim_start_hook());
    let exe = format!(r"{ROOT}\calicoctl-win.exe");
    for role in [Role::Node, Role::Felix] {
        let name = supervise::role_name(role);
        let spec = supervise::service_spec(
            role,
            &exe,
            ["service", "run", name, "--install-root", ROOT]
                .map(String::from)
                .to_vec(),
        );
        host.service_create(&spec).expect("register");
    }
    // Felix depends on CalicoNode: the SCM starts CalicoNode first.
    host.service_start("CalicoFelix", Duration::from_secs(30))
        .expect("start");
    assert!(init_done(&host), "CalicoNode wrote the init-done marker");
    assert_eq!(network_names(&host), ["External", "Calico"]);
    for name in ["CalicoNode", "CalicoFelix"] {
        let q = host
            .service_query(name)
            .expect("query")
            .expect("registered");
        assert_eq!(q.state, ServiceState::Running, "{name}");
    }
    let log = dir.path().join("fs/c/calicowindows/logs/calico-felix.log");
    let text = fs_err::read_to_string(log).expect("felix log");
    assert!(text.contains("CalicoNode has initialised"), "{text}");

    // Without its environment CalicoNode's start fails, and says why.
    host.service_stop("CalicoFelix", Duration::from_secs(5))
        .expect("stop");
    host.service_stop("CalicoNode", Duration::from_secs(5))
        .expect("stop");
    host.remove_file(&format!(r"{ROOT}\calico-node.env"))
        .expect("remove");
    let err = host
        .service_start("CalicoNode", Duration::from_secs(5))
        .unwrap_err();
    assert!(
        err.to_string().contains("calico-node.env is missing"),
        "{err}"
    );
    let q = host
        .service_query("CalicoNode")
        .expect("query")
        .expect("registered");
    assert_eq!(q.state, ServiceState::Stopped);
}

/// No release's node-service.ps1 starts Calico's token refresher (`-monitor-token`) outside a
/// HostProcess container from v3.27.5, v3.28.1 and v3.29.0 on (commit 4821bf2338), and the
/// releases before that started one that exits at once there: CalicoNode, never in a container,
/// starts none, and its CNI plugin uses calico-node's kubeconfig, which CalicoNode renews.
#[cfg(unix)]
#[test]
fn node_starts_no_token_refresher_on_any_release() {
    use std::os::unix::fs::PermissionsExt;
    for version in ["3.28.0", "3.31.0"] {
        let dir = tempfile::tempdir().expect("tempdir");
        drop(installed_host(dir.path()));
        // The fake Calico binary records every command line it is started with.
        let marks = dir.path().join("started");
        let fake = dir.path().join("calico-node");
        fs_err::write(
            &fake,
            format!("#!/bin/sh\necho \"$*\" >> {}\nexit 0\n", marks.display()),
        )
        .expect("fake");
        fs_err::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let child = console_node(
            dir.path(),
            &[
                "--calico-version".as_ref(),
                version.as_ref(),
                "--program".as_ref(),
                fake.as_os_str(),
            ],
        );
        stopped_after_startup(child, dir.path());
        let started = fs_err::read_to_string(&marks).expect("started");
        assert!(started.contains("-startup"), "{version}: {started}");
        assert!(!started.contains("monitor-token"), "{version}: {started}");
        assert!(
            !dir.path()
                .join("fs/c/calicowindows/token-refresher")
                .exists(),
            "{version}"
        );
    }
}
