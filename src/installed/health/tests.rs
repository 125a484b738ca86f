use super::*;
use crate::cluster::facts::Felix;

/// docs/findings.md lists every code, as docs/errors.md lists every error kind.
#[test]
fn docs_findings_lists_every_code() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/findings.md");
    let doc = fs_err::read_to_string(&path).expect("docs/findings.md");
    for c in Code::ALL {
        let word = c.word();
        assert!(!word.is_empty(), "{c:?}");
        assert!(
            doc.lines().any(|l| l.starts_with(&format!("| `{word}` |"))),
            "docs/findings.md has no row for {word}"
        );
    }
}

/// Each judge's sentence says what is so and its remedy what to do, never the one in the
/// other; a finding shows as a check does: the sentence (with its code), then `fix:` on a
/// line of its own, indented as asked.
#[test]
fn a_remedy_is_never_folded_into_the_sentence() {
    let refused = crate::installed::token_records::Refused {
        at: 1,
        expires: None,
        error: "401 Unauthorized".into(),
        unauthorized: true,
        token: None,
    };
    let mut found = vec![
        token_unusable("k", "not a JWT"),
        token_expiry("k", Some(1), 10, 100).expect("expired"),
        token_expiry("k", Some(105), 10, 100).expect("overdue"),
        token_refused_now("k", None),
        token_refused(&refused, None, 100, None),
        token_missing("k", None),
        dir_access(r"C:\k", &["BUILTIN\\Users".into()]),
        cut_off("install", 3, " (at: x)", "then"),
        changing_now("install"),
        admin_kubeconfig(r"C:\k\config"),
        service_drift("CalicoNode", &["binary".into()]),
        file_drift("cni.conf", "cni.conf differs".into(), true),
        kube_proxy(Said {
            message: "on the wrong network".into(),
            remedy: Some("set it".into()),
        }),
        not_installed("C:\\CalicoWindows"),
        cluster_unreadable("cluster", "refused".into()),
        endpoints_unjudged("refused".into()),
        host_unreadable("Felix", "refused".into()),
    ];
    found.extend(node_state("win-1", &Err("kubelet stopped".into()), true));
    found.extend(ipam_capacity("win-1", Some(110), 64, 3));
    for f in &found {
        let remedy = f.remedy.as_deref().expect("every finding has a remedy");
        assert!(!remedy.is_empty(), "{f:?}");
        assert!(
            !f.message.contains(remedy) && !f.message.contains("fix"),
            "a remedy in the sentence: {f:?}"
        );
        assert!(!f.message.contains(NEW_TOKEN), "{f:?}");
    }
    assert_eq!(
        format!("{:4}", changing_now("install")),
        "install is changing this node now [under-way]\n    fix: run calicoctl-win status again when it has finished"
    );
}

/// A FelixConfiguration with no `vxlanVNI` means Felix's default, 4096 (Felix v3.31.7
/// `config_params.go`: `VXLANVNI int;4096`): a config that says 4097 is judged against it,
/// and one that says 4096 matches it.
#[test]
fn the_vni_is_judged_against_hns_and_the_cluster() {
    let unset = Felix::default();
    let set = |v| Felix {
        vxlan_vni: Some(v),
        ..Felix::default()
    };
    assert!(vni(4096, Some(4096), Some(&unset)).is_empty());
    let f = vni(4097, Some(4096), Some(&unset));
    assert_eq!(
        f.iter().map(|f| f.code).collect::<Vec<_>>(),
        [Code::VniHns, Code::VniCluster]
    );
    assert!(
        f[1].message.contains("uses is 4096 (Felix's default"),
        "{}",
        f[1].message
    );
    assert!(vni_cluster(5000, &set(5000)).is_none());
    let named = vni_cluster(4096, &set(5000)).expect("differs");
    assert!(
        named.message.contains("(FelixConfiguration vxlanVNI)"),
        "{}",
        named.message
    );
    assert!(vni(4097, None, None).is_empty(), "nothing to compare");
}

/// The InternalIP is the address the others must have; without one, the BGP address is.
/// A layer that has no address yet (a network not made, no annotation) is no mismatch.
#[test]
fn each_layer_whose_address_differs_is_named_with_both() {
    let ip = |s: &str| Some(s.parse::<std::net::Ipv4Addr>().expect("ip"));
    let nets = [("External", ip("10.0.0.5")), ("Calico", ip("10.0.0.5"))];
    assert!(node_address("win-1", (ip("10.0.0.5"), ip("10.0.0.5")), &nets, None).is_empty());
    assert!(node_address("win-1", (ip("10.0.0.5"), None), &[("Calico", None)], None).is_empty());
    assert!(node_address("win-1", (None, None), &nets, None).is_empty());
    let f = node_address("win-1", (ip("10.0.1.9"), ip("10.0.0.5")), &nets, None);
    assert_eq!(f.len(), 3, "{f:?}");
    assert!(f.iter().all(|f| f.code == Code::AddressMismatch));
    assert!(f[0].message.contains("10.0.0.5") && f[0].message.contains("10.0.1.9"));
    assert_eq!(f[2].subject, "Calico");
    let by_bgp = node_address("win-1", (None, ip("10.0.1.9")), &nets, None);
    assert_eq!(
        by_bgp.len(),
        2,
        "the networks against the BGP address: {by_bgp:?}"
    );
}

/// The fix names the adapter that holds the address, and never sends the user to pick an
/// adapter that holds an address no adapter of the host holds.
#[test]
fn the_fix_names_the_adapter_that_holds_the_address_or_says_none_does() {
    let ip = |s: &str| Some(s.parse::<std::net::Ipv4Addr>().expect("ip"));
    let nets = [("External", ip("10.0.0.5"))];
    let host = [
        crate::host::Adapter::for_test("Ethernet", 4, "00-15-5D-00-00-04", &["10.0.0.5"]),
        crate::host::Adapter::for_test("Ethernet 2", 6, "00-15-5D-00-00-06", &["10.0.1.9"]),
    ];
    let remedy = |internal: &str| {
        node_address("win-1", (ip(internal), None), &nets, Some(&host))[0]
            .remedy
            .clone()
            .unwrap_or_default()
    };
    let named = remedy("10.0.1.9");
    assert!(
        named.starts_with("set vxlan.adapter to Ethernet 2 (it holds 10.0.1.9)"),
        "{named}"
    );
    let none = remedy("203.0.113.7");
    assert!(
        none.starts_with("no adapter of this host holds 203.0.113.7")
            && !none.contains("set vxlan.adapter to the adapter"),
        "{none}"
    );
}
