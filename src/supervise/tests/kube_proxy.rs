//! The opt-in kube-proxy service: its waits, arguments and bounds.

use super::*;
use crate::host::Processes;

/// kube-proxy waits for Calico's network and `Calico_ep`, then runs as kube-proxy-service.ps1
/// ran it: version first, `--source-vip`, DSR where the build has it, `KUBE_NETWORK=Calico`.
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
    let host = installed("ws2022", &[r"kube_proxy.path=C:\k\kube-proxy.exe"]);
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
        says(&text, want);
    }
}

/// Without Calico's network kube-proxy gives up after its bound; a missing binary is named.
#[test]
fn kube_proxy_gives_up_after_its_bound_and_names_a_missing_binary() {
    let host = installed("ws2022", &[r"kube_proxy.path=C:\k\kube-proxy.exe"]);
    let s = settings(Role::KubeProxy);
    let (log, _) = log_for(&host, &s);
    let err = run(&host, &s, &Stop::new(), &log).unwrap_err();
    assert!(err.to_string().contains(r"kube-proxy is not at"), "{err}");
    put_kube_proxy(&host);
    let started = Instant::now();
    let err = run(&host, &s, &Stop::new(), &log).unwrap_err();
    assert!(matches!(err, SuperviseError::KubeProxyWait { .. }), "{err}");
    assert!(err.to_string().contains("the HNS network Calico"), "{err}");
    assert!(err.is_timeout());
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// A simulated kube-proxy.exe where the config says it is.
pub(super) fn put_kube_proxy(host: &SimHost) {
    let exe = b"kube-proxy v1.33.2 (simulated)\n";
    host.write_file(r"C:\k\kube-proxy.exe", exe, crate::host::Access::Normal)
        .expect("write");
}

/// An earlier kube-proxy outlasting the wait is never run beside: said, looked at again later.
#[test]
fn no_kube_proxy_is_started_beside_an_earlier_one_that_outlasts_the_wait() {
    // CalicoNode's networks and `Calico_ep`, a simulated kube-proxy.exe.
    let host = installed("ws2022", &[r"kube_proxy.path=C:\k\kube-proxy.exe"]);
    put_kube_proxy(&host);
    let (log, _) = log_for(&host, &settings(Role::Node));
    node::start_phase(&host, &settings(Role::Node), &log).expect("calico-node");
    let s = settings(Role::KubeProxy);
    host.set_children_linger(Some(Duration::from_secs(60)))
        .expect("fault");
    let started = r"kube-proxy.exe --hostname-override";
    run_until(&host, &s, &format!(r"started C:\k\{started}"));
    let first = kept_child(&host, Role::KubeProxy);
    host.set_children_linger(None).expect("fault off");
    // Said at each of two looks.
    let text = while_running(&host, &s, |path| {
        wait_for_log(path, "that an earlier run of this service started still", 2);
    });
    says(&text, "retrying in");
    // The kube-proxy processes started (not `--version`).
    let kube_proxies = host
        .started()
        .iter()
        .filter(|c| c.contains(started))
        .count();
    assert_eq!(kube_proxies, 1, "{text}");
    assert!(host.process_running(first).is_some());
}
