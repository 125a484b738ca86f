use super::*;

fn install(spec: Value) -> Installation {
    Installation::of(
        &json!({"apiVersion": "operator.tigera.io/v1", "kind": "Installation",
        "metadata": {"name": "default"}, "spec": spec}),
    )
}

fn terms(a: &Value) -> Vec<Value> {
    a["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Without a provider the operator renders no affinity: ours is the only term.
#[test]
fn the_exclusion_alone_where_the_operator_renders_no_affinity() {
    let i = install(json!({"calicoNetwork": {"windowsDataplane": "HNS"}}));
    assert!(i.windows_enabled());
    let a = i.excluding_affinity().expect("needed");
    assert_eq!(
        terms(&a),
        vec![json!({"matchExpressions": [
            {"key": LABEL, "operator": "NotIn", "values": ["true"]}]})]
    );
    assert!(excludes(&a));
    // Once written, nothing more is needed.
    let written = install(
        json!({"calicoNodeWindowsDaemonSet": {"spec": {"template": {"spec": {"affinity": a}}}}}),
    );
    assert_eq!(written.excluding_affinity(), None);
}

/// The override replaces the operator's affinity whole (components.go), so AKS's and EKS's
/// own requirements are carried into it (windows.go), in the same term as ours.
#[test]
fn the_providers_requirements_are_kept() {
    for (provider, key, value) in [
        ("AKS", "type", "virtual-kubelet"),
        ("EKS", "eks.amazonaws.com/compute-type", "fargate"),
    ] {
        let i = install(json!({"kubernetesProvider": provider}));
        let a = i.excluding_affinity().expect("needed");
        let t = terms(&a);
        assert_eq!(t.len(), 1, "{provider}");
        let e = t[0]["matchExpressions"].as_array().expect("expressions");
        assert!(
            e.contains(&json!({"key": key, "operator": "NotIn", "values": [value]})),
            "{provider}: {a}"
        );
        assert!(e.contains(&exclusion()), "{provider}: {a}");
    }
    // Another provider renders none.
    assert_eq!(provider_affinity(Some("GKE")), None);
}

/// A user's own override with two terms (ORed): each gets the requirement, or a node could
/// match the other term and take the operator's pod. Preferred terms stay as they were.
#[test]
fn every_term_of_an_override_gets_the_requirement() {
    let own = json!({"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a"]}]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["win-9"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {}}]}});
    let i = install(
        json!({"calicoNodeWindowsDaemonSet": {"spec": {"template": {"spec": {"affinity": own}}}}}),
    );
    let half = {
        let mut a = own.clone();
        a["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
            ["matchExpressions"]
            .as_array_mut()
            .expect("e")
            .push(exclusion());
        a
    };
    // One term excluded is not enough: a check that passed it would let win-9 through.
    assert!(!excludes(&half));
    let a = i.excluding_affinity().expect("needed");
    assert!(excludes(&a));
    let t = terms(&a);
    assert_eq!(t.len(), 2);
    assert_eq!(t[1]["matchExpressions"], json!([exclusion()]));
    assert_eq!(
        t[1]["matchFields"],
        own["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
            [1]["matchFields"]
    );
    assert_eq!(
        a["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"],
        own["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    );
}

/// api/v1/installation_types.go `ResolvedSpecVersion`: Auto and unset are 1.0.0.
#[test]
fn cni_version_follows_the_spec_version() {
    for (spec, want) in [
        (json!({}), "1.0.0"),
        (json!({"cni": {"specVersion": "Auto"}}), "1.0.0"),
        (json!({"cni": {"specVersion": "0.3.1"}}), "0.3.1"),
    ] {
        assert_eq!(install(spec.clone()).cni_version(), want, "{spec}");
    }
}

/// The overlay's fields take default's place one by one (merge.go's rule), and say which
/// Installation a patch of the affinity or windowsDataplane must change.
#[test]
fn the_overlay_overrides_default_field_by_field() {
    let default = json!({"spec": {"kubernetesProvider": "AKS",
        "calicoNetwork": {"windowsDataplane": "HNS"},
        "windowsNodes": {"cniBinDir": "/k/azurecni/bin", "cniConfigDir": "/k/azurecni/netconf"}}});
    let overlay = json!({"spec": {"calicoNetwork": {"windowsDataplane": "Disabled"},
        "windowsNodes": {"cniConfigDir": "C:/etc/cni/net.d"}}});
    let i = Installation::merged(&default, Some(&overlay));
    assert_eq!(i.provider.as_deref(), Some("AKS"));
    assert!(!i.windows_enabled());
    assert_eq!((i.dataplane_in, i.affinity_in), (OVERLAY, DEFAULT));
    assert_eq!(
        i.windows_cni_dirs(),
        CniDirs {
            bin: r"C:\k\azurecni\bin".into(),
            conf: r"C:\etc\cni\net.d".into(),
        }
    );
    let alone = Installation::merged(&default, None);
    assert!(alone.windows_enabled());
    assert_eq!(alone.dataplane_in, DEFAULT);
    assert_eq!(
        Installation::of(&json!({"spec": {}})).windows_cni_dirs(),
        CniDirs {
            bin: r"C:\opt\cni\bin".into(),
            conf: r"C:\etc\cni\net.d".into(),
        }
    );
    assert_eq!(
        Installation::of(&json!({"spec": {"kubernetesProvider": "EKS"}}))
            .windows_cni_dirs()
            .conf,
        r"C:\Program Files\Amazon\EKS\cni\config"
    );
}

/// A restore is written only while every field our patch set holds what it set: a value changed
/// or removed since, or a field we removed that is back, is named.
#[test]
fn differs_names_the_first_field_changed_since_our_patch() {
    let ours = json!({"spec": {"calicoNetwork": {"windowsDataplane": "HNS"},
        "windowsNodes": {"cniBinDir": "c:/k/cni"}, "gone": null}});
    let same = json!({"spec": {"calicoNetwork": {"windowsDataplane": "HNS", "x": 1},
        "windowsNodes": {"cniBinDir": "c:/k/cni", "cniLogDir": "c:/var/log"}}});
    assert_eq!(differs(&ours, &same, ""), None);
    let mut changed = same.clone();
    changed["spec"]["windowsNodes"]["cniBinDir"] = json!("c:/admin");
    assert_eq!(
        differs(&ours, &changed, "").as_deref(),
        Some("spec.windowsNodes.cniBinDir")
    );
    let mut back = same.clone();
    back["spec"]["gone"] = json!("set again");
    assert_eq!(differs(&ours, &back, "").as_deref(), Some("spec.gone"));
    let mut removed = same;
    removed["spec"]["calicoNetwork"] = json!(null);
    assert_eq!(
        differs(&ours, &removed, "").as_deref(),
        Some("spec.calicoNetwork.windowsDataplane")
    );
}
