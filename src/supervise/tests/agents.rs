//! The agents (Felix, confd): their restarts, environments, binaries and registration.

use super::*;
use crate::host::Processes as _;

#[test]
fn felix_restarts_at_once_after_129_and_with_growing_delays_after_a_crash() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fake = counting(dir.path(), "felix", "[ $n -le 2 ] && exit 129\nexit 3");
    let (host, mut s) = initialised(Role::Felix, &[], fake);
    // The delay resets after a run longer than the longest delay (a minute here).
    s.timing.backoff_max = Duration::from_secs(60);
    let text = run_until(&host, &s, "felix run 6");
    let reload = "exited with 129 to reload its configuration; restarting now";
    assert_eq!(text.matches(reload).count(), 2, "{text}");
    for d in ["10ms", "20ms", "40ms"] {
        says(&text, &format!("exited with code 3; restarting in {d}"));
    }
    says(&text, "-felix");
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

/// Felix waits for CalicoNode, warns after the timeout, ends the wait at a stop, and runs once
/// CalicoNode has initialised.
#[test]
fn felix_waits_for_calico_node_warns_after_the_timeout_and_then_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fake = script(dir.path(), "felix", &format!("echo felix up\n{FOREVER}"));
    let host = installed("ws2022", &[]);
    let mut s = settings(Role::Felix);
    s.program = Some(fake);
    // A stop while Felix waits for CalicoNode ends the wait, saying what it waited for.
    let text = run_until(&host, &s, "waiting for CalicoNode to finish initialising");
    says(
        &text,
        "stopped waiting for CalicoNode to finish initialising after ",
    );
    let text = while_running(&host, &s, |path| {
        let text = wait_for_log(path, "has not finished initialising after", 1);
        says(&text, "waiting for CalicoNode to finish initialising");
        assert!(
            !text.contains("felix up"),
            "felix must not run before init: {text}"
        );
        mark_init_done(&host);
        wait_for_log(path, "felix up", 1);
    });
    says(&text, "CalicoNode finished initialising");
    says(&text, "felix up");
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
        says(&text, &format!("ended with exit code {code}"));
    }
}

/// A child gets the rendered environment and the allow-listed service environment (PATH,
/// TEMP, Windows' directories, the proxy) under the env file's values, and nothing else.
#[test]
fn a_child_gets_exactly_the_rendered_and_allow_listed_environment() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fake = script(dir.path(), "felix", "/usr/bin/env\nexit 0");
    let (host, mut s) = initialised(Role::Felix, &["vxlan.vni=4097"], fake);
    let process_env: std::collections::BTreeMap<String, String> = [
        ("PATH", r"C:\Windows\system32;C:\Windows"),
        ("TEMP", r"C:\Windows\TEMP"),
        ("HTTPS_PROXY", "http://proxy.corp:3128"),
        ("KUBECONFIG", r"C:\k\admin.conf"),
        ("SECRET_TOKEN", "do-not-pass"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    s.inherited = inherited(&process_env);
    let text = run_until(&host, &s, "FELIX_VXLANVNI=4097");
    says(&text, "FELIX_FELIXHOSTNAME=win-1");
    for name in ["PATH", "TEMP", "HTTPS_PROXY"] {
        let line = format!("\n{name}={}\n", process_env[name]);
        assert_eq!(text.matches(&format!("\n{name}=")).count(), 1, "{text}");
        says(&text, &line);
    }
    // The env file's KUBECONFIG (calico-node's), never the admin's of the service's env.
    for leaked in [
        "\nHOME=",
        "\nUSER=",
        "SECRET_TOKEN",
        r"KUBECONFIG=C:\k\admin.conf",
    ] {
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
    says(&text, "removed the stale");
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
    use Component::{Confd, Felix, Startup};
    let s = Settings::new(Role::Node, ROOT);
    // No release runs `-monitor-token` outside a HostProcess container (see release::version).
    let cases = [
        // v3.27.0: `.\calico-node.exe -startup`.
        ("3.27.0", Startup, r"calico-node.exe -startup"),
        ("3.27.0", Felix, r"calico-node.exe -felix"),
        (
            "3.27.0",
            Confd,
            r"calico-node.exe -confd -confd-confdir=C:\CalicoWindows\confd",
        ),
        // v3.28.0 to v3.30: plain startup.
        ("3.28.0", Startup, r"calico-node.exe -startup"),
        ("3.30.4", Startup, r"calico-node.exe -startup"),
        // v3.31.0 and v3.32: `-startup -complete-startup`.
        (
            "3.31.0",
            Startup,
            r"calico-node.exe -startup -complete-startup",
        ),
        (
            "3.32.1",
            Startup,
            r"calico-node.exe -startup -complete-startup",
        ),
        // release-v3.33: calico.exe with subcommands.
        (
            "3.33.0",
            Startup,
            r"calico.exe component node startup --complete-startup",
        ),
        ("3.33.0", Felix, r"calico.exe component felix"),
        (
            "3.33.0",
            Confd,
            r"calico.exe component confd --confdir=C:\CalicoWindows\confd",
        ),
    ];
    for (version, c, want) in cases {
        let v = CalicoVersion::parse(version).expect("version");
        let (exe, args) = Layout::of(v.features().binary, Some(&v)).command(&s, c);
        let line = format!("{exe} {}", args.join(" "));
        assert_eq!(line, format!(r"{ROOT}\{want}"), "{version} {c:?}");
    }
}

#[test]
fn environment_files_parse_like_the_renderer_writes_them() {
    let env = parse_env("# header\r\nA=1\r\n\nB=x=y\n  # indented comment\nbad line\n");
    assert_eq!(env.get("A").map(String::as_str), Some("1"));
    assert_eq!(env.get("B").map(String::as_str), Some("x=y"));
    assert_eq!(env.len(), 2);
}

/// A Felix that can be neither looked at nor stopped is not started again beside itself: the
/// service ends with `NotStopped`. Killed but still there (TerminateProcess waits for pending
/// I/O), it is waited for by the service's next start, never started beside.
#[test]
fn an_agent_that_cannot_be_stopped_is_never_started_twice() {
    let host = installed("ws2022", &[]);
    mark_init_done(&host);
    host.set_children_unstoppable(true).expect("fault");
    host.set_children_linger(Some(Duration::from_secs(2)))
        .expect("fault");
    let s = settings(Role::Felix);
    let (log, path) = log_for(&host, &s);
    let felixes = || {
        host.started()
            .iter()
            .filter(|c| c.contains("-felix"))
            .count()
    };
    let stop = Stop::new();
    let out = std::thread::scope(|scope| {
        let body = scope.spawn(|| run(&host, &s, &stop, &log));
        // Bounded: a body that restarts instead would run until this stop.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !body.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        stop.request();
        body.join().expect("join")
    });
    assert!(
        matches!(out, Err(SuperviseError::NotStopped { .. })),
        "{out:?}\n{}",
        read(&path)
    );
    assert_eq!(felixes(), 1, "felix started once: {:?}", host.started());
    let first = kept_child(&host, Role::Felix);
    assert!(host.process_running(first).is_some(), "still there");
    host.set_children_unstoppable(false).expect("fault off");
    host.set_children_linger(None).expect("fault off");

    let stop = Stop::new();
    let (second_at, first_then) = std::thread::scope(|scope| {
        let body = scope.spawn(|| run(&host, &s, &stop, &log));
        // Bounded: the first Felix ends 2 s after its start.
        let deadline = Instant::now() + Duration::from_secs(20);
        while felixes() < 2 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        // Looked at as soon as the second Felix is seen: the first had ended before it.
        let first_then = host.process_running(first);
        let second_at = felixes();
        stop.request();
        let _ = body.join().expect("join");
        (second_at, first_then)
    });
    let text = read(&path);
    assert_eq!(second_at, 2, "{text}");
    assert_eq!(
        first_then, None,
        "the second Felix started beside the first: {text}"
    );
    says(&text, "still runs: waiting for it to end");
    assert_ne!(
        kept_child(&host, Role::Felix),
        first,
        "the second is recorded"
    );
}
