//! A service install plans, registered with the real SCM (under Wine in CI). Install's own
//! services through the real SCM are tests/windows' `the_whole_lifecycle_under_wine_returns_the_prefix_to_its_initial_state`.

use crate::host::contract::on_windows::{SCM, remove_service_at_end, under_wine};
use crate::host::windows::WindowsHost;
use crate::host::{Registry, Services, StartType};

/// The opt-in kube-proxy service's registration, through the real SCM: calicoctl-win's
/// `service run kube-proxy`, automatic start, after CalicoNode, named and described as
/// Calico's install-kube-services.ps1 registered it.
#[test]
fn the_kube_proxy_service_registers_with_the_real_scm() {
    if !under_wine() {
        return;
    }
    let _turn = SCM.lock().unwrap_or_else(|p| p.into_inner());
    let h = WindowsHost::new();
    assert_eq!(h.service_query("kube-proxy").expect("query"), None);
    let c = crate::config::tests::from_sets(&[
        "node.name=wine",
        r"kube_proxy.path=C:\k\kube-proxy.exe",
    ]);
    let specs = crate::plan::install::services(&c, Some("3.31.0"));
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["CalicoNode", "CalicoFelix", "kube-proxy"]);
    let spec = &specs[2];
    h.service_create(spec).expect("create kube-proxy");
    // Deleted however the test ends, so that the prefix is as it was.
    let guard = remove_service_at_end(&h, "kube-proxy");
    let got = h
        .service_query("kube-proxy")
        .expect("query")
        .expect("kube-proxy");
    assert!(
        got.command_line
            .replace('"', "")
            .ends_with(r"calicoctl-win.exe service run kube-proxy --install-root C:\CalicoWindows --calico-version 3.31.0"),
        "{}",
        got.command_line
    );
    assert_eq!(got.start, StartType::Auto);
    assert_eq!(got.display_name, "kube-proxy service");
    // Wine's QueryServiceConfigW reports no dependencies; the SCM's own store has them.
    assert_eq!(
        h.reg_get(
            r"HKLM\System\CurrentControlSet\Services\kube-proxy",
            "DependOnService"
        )
        .expect("reg"),
        Some(crate::host::RegValue::MultiSz(vec!["CalicoNode".into()]))
    );
    drop(guard);
    assert_eq!(h.service_query("kube-proxy").expect("query"), None);
}
