use super::*;
use crate::cluster::facts::Felix;

/// docs/findings.md lists every code once, as docs/errors.md lists every error kind, with the
/// sentence of what is wrong and the code's remedy as the catalogue gives it; no row names a
/// code the catalogue does not have.
#[test]
fn docs_findings_lists_every_code_with_its_remedy() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/findings.md");
    let doc = fs_err::read_to_string(&path).expect("docs/findings.md");
    let rows: Vec<Vec<&str>> = doc
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| l.trim_matches('|').split(" | ").map(str::trim).collect())
        .collect();
    for c in Code::ALL {
        let word = c.word();
        assert!(!word.is_empty(), "{c:?}");
        assert!(!c.remedy().is_empty(), "{c:?} has a remedy");
        let named = format!("`{word}`");
        let of: Vec<&Vec<&str>> = rows.iter().filter(|r| r[0] == named).collect();
        assert_eq!(
            of.len(),
            1,
            "docs/findings.md has {} rows for {word}",
            of.len()
        );
        let row = of[0];
        assert_eq!(
            row.len(),
            3,
            "the row of {word}: code, what is wrong, remedy"
        );
        assert!(!row[1].is_empty(), "the row of {word} says what is wrong");
        assert_eq!(
            row[2],
            c.remedy(),
            "the remedy of {word} in docs/findings.md"
        );
    }
    let words: Vec<String> = Code::ALL
        .iter()
        .map(|c| format!("`{}`", c.word()))
        .collect();
    for r in &rows {
        assert!(words.iter().any(|w| w == r[0]), "{} is no code", r[0]);
    }
}

/// A judge whose fix is the same for every finding of its code gives the code's remedy, the
/// one docs/findings.md shows.
#[test]
fn a_fixed_remedy_is_the_codes() {
    let found = [
        service_drift("CalicoNode", &["its binary".into()]),
        network_missing("Calico"),
        host_unreadable("CalicoFelix", "x".into()),
        dir_access(r"C:\CalicoWindows", &["Users".into()]),
        cluster_unreadable("cluster", "x".into()),
        endpoints_unjudged("x".into()),
        admin_kubeconfig(r"C:\k\config"),
        not_installed(r"C:\CalicoWindows"),
    ];
    for f in &found {
        assert_eq!(f.remedy.as_deref(), Some(f.code.remedy()), "{f}");
    }
    let fix_of = |f: Option<Finding>| f.expect("a finding").said.remedy.unwrap_or_default();
    assert_eq!(
        fix_of(ipam_capacity(&"win-1".into(), Some(250), 62, 0)),
        Code::IpamCapacity.remedy()
    );
    assert_eq!(
        vni(4096, Some(4097), None)[0].remedy.as_deref(),
        Some(Code::VniHns.remedy())
    );
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
    found.extend(node_state(
        &"win-1".into(),
        &Err("kubelet stopped".into()),
        true,
    ));
    found.extend(ipam_capacity(&"win-1".into(), Some(110), 64, 3));
    for f in &found {
        let remedy = f.remedy.as_deref().expect("every finding has a remedy");
        assert!(!remedy.is_empty(), "{f:?}");
        assert!(
            !f.message.contains(remedy) && !f.message.contains("fix"),
            "a remedy in the sentence: {f:?}"
        );
        assert!(!f.message.contains(NEW_TOKEN), "{f:?}");
    }
    // Where the refusal's cause was not told, what tells it is part of the fix.
    let refused = token_refused_now("k", None);
    assert!(
        !refused.message.contains("calicoctl-win status"),
        "{refused:?}"
    );
    assert!(
        refused
            .remedy
            .as_deref()
            .is_some_and(|r| r.contains("'calicoctl-win status' with an admin kubeconfig")),
        "{refused:?}"
    );
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

/// Without an InternalIP the BGP address is the one the others must have; a layer that has no
/// address yet (a network not made, no annotation) is no mismatch. (Each layer that differs
/// from the InternalIP, named with both: tests/lifecycle
/// `status_names_each_layer_whose_address_differs_from_the_nodes`.)
#[test]
fn each_layer_whose_address_differs_is_named_with_both() {
    let ip = |s: &str| Some(s.parse::<std::net::Ipv4Addr>().expect("ip"));
    let judged = |layers, nets: &[_]| node_address(&"win-1".into(), layers, nets, None);
    let nets = [("External", ip("10.0.0.5")), ("Calico", ip("10.0.0.5"))];
    assert!(judged((ip("10.0.0.5"), None), &[("Calico", None)]).is_empty());
    assert!(judged((None, None), &nets).is_empty());
    let by_bgp = judged((None, ip("10.0.1.9")), &nets);
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
        node_address(&"win-1".into(), (ip(internal), None), &nets, Some(&host))[0]
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

/// CalicoFelix, CalicoConfd and kube-proxy depend on CalicoNode (`supervise::service_spec`):
/// PowerShell's `Restart-Service` refuses a service with dependents without `-Force`
/// ("ServiceHasDependentServices", PowerShell's Service.cs `DoStopService`), and with it stops
/// the running dependents and starts each again (`RestartServiceCommand`). Every remedy and
/// doc that says to restart CalicoNode says it with `-Force`.
#[test]
fn every_restart_of_calico_node_a_user_is_told_carries_force() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut missing = Vec::new();
    let mut seen = 0;
    let mut dirs = vec![root.join("src"), root.join("docs")];
    let mut files = vec![root.join("README.md")];
    while let Some(d) = dirs.pop() {
        for e in fs_err::read_dir(&d).expect("dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs" || x == "md") {
                files.push(p);
            }
        }
    }
    let needle = ["Restart-Service", " CalicoNode"].concat();
    for p in files {
        let text = fs_err::read_to_string(&p).expect("read");
        for (at, _) in text.match_indices(&needle) {
            seen += 1;
            if !text[at + needle.len()..].starts_with(" -Force") {
                missing.push(
                    format!("{}: {}", p.display(), &text[at..])
                        .lines()
                        .next()
                        .map(str::to_owned)
                        .unwrap_or_default(),
                );
            }
        }
    }
    assert!(
        seen > 5,
        "the remedies that restart CalicoNode were not found"
    );
    assert!(missing.is_empty(), "{missing:#?}");
}
