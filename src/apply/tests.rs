use crate::layout::is_service_log;

#[test]
fn only_the_services_logs_count_as_logs() {
    for yes in [
        "calico-node.log",
        "calico-felix-20261121T101500Z.log",
        "CALICO-CONFD.LOG",
        // The opt-in kube-proxy service's log, left by uninstall --remove-logs before.
        "calico-kube-proxy.log",
        "calico-kube-proxy-20261121T101500Z.log",
    ] {
        assert!(is_service_log(yes), "{yes}");
    }
    for no in [
        "calico-node.log.bak",
        "kubelet.log",
        "calico-felix-.log",
        "calico-node-../x.log",
        "notes.txt",
    ] {
        assert!(!is_service_log(no), "{no}");
    }
}

#[test]
fn debug_output_of_a_planned_file_never_holds_its_contents() {
    let action = super::Action::WriteFile {
        path: r"C:\CalicoWindows\calico-kube-config".into(),
        from: "credentials".into(),
        sha256: None,
        secret: true,
        replaces: false,
        foreign: Vec::new(),
        content: super::Content::Bytes(b"token: eyJhbGciOi.secret".to_vec()),
    };
    let shown = format!("{action:?}");
    assert!(!shown.contains("eyJhbGciOi"), "{shown}");
    assert!(shown.contains("Bytes(24 bytes)"), "{shown}");
    let json = serde_json::to_string(&super::to_json(&[action]).expect("json")).expect("text");
    assert!(!json.contains("eyJhbGciOi"), "{json}");
}
