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

/// A repair looks at each endpoint again just before it deletes it (`Options::recheck`): one
/// a pod has claimed since the plan was made is kept, with why; one still at fault goes.
#[test]
fn an_endpoint_a_new_look_finds_healthy_is_kept() {
    use crate::host::Hns;
    let host = crate::host::sim::SimHost::in_memory("ws2022").expect("host");
    let spec = serde_json::json!({"Name": "Calico", "Type": "NAT",
        "SchemaVersion": {"Major": 2, "Minor": 0}});
    let net = host.hns_create_network(&spec.to_string()).expect("network");
    host.add_endpoint(&net.id, "claimed_Calico", "10.244.1.7")
        .expect("endpoint");
    host.add_endpoint(&net.id, "gone_Calico", "10.244.1.8")
        .expect("endpoint");
    let eps = host.hns_endpoints(&net.id).expect("endpoints");
    let actions: Vec<super::Action> = eps
        .iter()
        .map(|e| super::Action::DeleteEndpoint {
            id: e.id.clone(),
            name: e.name.clone(),
            ip: e.ip.clone(),
            why: "stale".into(),
        })
        .collect();
    let claimed = eps[0].id.clone();
    let recheck = |id: &str| -> anyhow::Result<Option<String>> {
        Ok((id == claimed).then(|| "a new look finds it ok".to_owned()))
    };
    let mut opts = super::Options::for_change(
        "repair",
        r"C:\CalicoWindows\calicoctl-win.journal.json".into(),
        false,
        std::time::Duration::from_secs(1),
        None,
        None,
    );
    opts.recheck = Some(&recheck);
    let warnings = super::execute(&host, &actions, opts, &mut |_, _, _| {}).expect("runs");
    let left: Vec<String> = host
        .hns_endpoints(&net.id)
        .expect("endpoints")
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(left, ["claimed_Calico"]);
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("kept HNS endpoint claimed_Calico")),
        "{warnings:?}"
    );
}
