//! The opt-in kube-proxy service: its waits, arguments and bounds.

use super::*;

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
