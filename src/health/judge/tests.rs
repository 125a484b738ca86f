use super::*;
use crate::cluster::facts::Felix;

/// docs/findings.md lists every code once (code, what is wrong, remedy: the remedy `remedy`
/// reads), as docs/errors.md lists every error kind; no row names a code there is not.
#[test]
fn docs_findings_lists_every_code_with_its_remedy() {
    let rows: Vec<Vec<&str>> = super::remedy::rows().collect();
    for c in Code::ALL {
        let named = format!("`{}`", c.word());
        let of: Vec<&Vec<&str>> = rows.iter().filter(|r| r[0] == named).collect();
        assert_eq!(of.len(), 1, "docs/findings.md's rows for {named}");
        let cells = (of[0].len(), of[0][1].is_empty(), c.remedy().is_empty());
        assert_eq!(cells, (3, false, false), "the row of {named}");
    }
    let words: Vec<String> = Code::ALL
        .iter()
        .map(|c| format!("`{}`", c.word()))
        .collect();
    for r in &rows {
        assert!(words.contains(&r[0].to_owned()), "{} is no code", r[0]);
    }
}

/// Each judge's sentence says what is so and its remedy what to do, never the one in the
/// other; a judge whose fix is the same for every finding of its code gives the code's remedy,
/// the one docs/findings.md shows; a finding shows as a check does: the sentence (with its
/// code), then `fix:` on a line of its own, indented as asked.
#[test]
fn a_remedy_is_never_folded_into_the_sentence() {
    let refused = crate::installed::token_records::Refused {
        at: 1,
        expires: None,
        error: "401 Unauthorized".into(),
        unauthorized: true,
        token: None,
    };
    let mut fixed = vec![
        service_drift("CalicoNode", &["binary".into()]),
        network_missing("Calico"),
        host_unreadable("Felix", "refused".into()),
        dir_access(r"C:\k", &["BUILTIN\\Users".into()]),
        cluster_unreadable("cluster", "refused".into()),
        endpoints_unjudged("refused".into()),
        admin_kubeconfig(r"C:\k\config"),
        not_installed("C:\\CalicoWindows"),
    ];
    fixed.extend(ipam_capacity(&"win-1".into(), Some(110), 64, 3));
    fixed.extend(vni(4096, Some(4097), None));
    for f in &fixed {
        assert_eq!(f.remedy.as_deref(), Some(f.code.remedy()), "{f}");
    }
    let mut found = vec![
        token_unusable("k", "not a JWT"),
        token_expiry("k", Some(1), 10, 100).expect("expired"),
        token_expiry("k", Some(105), 10, 100).expect("overdue"),
        token_refused_now("k", None),
        token_refused(&refused, None, 100, None),
        token_missing("k", None),
        cut_off("install", 3, " (at: x)", "then"),
        changing_now("install"),
        file_drift("cni.conf", "cni.conf differs".into(), true),
        kube_proxy(Said {
            message: "on the wrong network".into(),
            remedy: Some("set it".into()),
        }),
    ];
    found.extend(node_state(
        &"win-1".into(),
        &Err("kubelet stopped".into()),
        true,
    ));
    for f in found.iter().chain(&fixed) {
        let remedy = f.remedy.as_deref().expect("every finding has a remedy");
        assert!(!remedy.is_empty(), "{f:?}");
        assert!(
            !f.message.contains(remedy) && !f.message.contains("fix"),
            "a remedy in the sentence: {f:?}"
        );
        assert!(!f.message.contains(NEW_TOKEN), "{f:?}");
    }
    // Where the refusal's cause was not told, what tells it is part of the fix.
    let Said { message, remedy } = token_refused_now("k", None).said;
    let tells =
        remedy.is_some_and(|r| r.contains("'calicoctl-win status' with an admin kubeconfig"));
    assert!(
        tells && !message.contains("calicoctl-win status"),
        "{message}"
    );
    assert_eq!(
        format!("{:4}", changing_now("install")),
        "install is changing this node now [under-way]\n    fix: run calicoctl-win status again when it has finished"
    );
}

/// A FelixConfiguration with no `vxlanVNI` means Felix's default, 4096 (Felix v3.31.7
/// `config_params.go`: `VXLANVNI int;4096`): a config that says 4096 matches it, and with
/// nothing to compare nothing is said. (4097 against the VSID and Felix's: tests/lifecycle
/// reconfigure.rs `status_is_healthy_after_install_and_names_each_problem_when_degraded`;
/// against Felix's default and a set vxlanVNI, each named:
/// `a_vni_is_compared_with_felixs_default_when_the_cluster_sets_none`,
/// `a_vni_mismatch_and_a_missing_drain_are_refused_together`.)
#[test]
fn the_vni_is_judged_against_hns_and_the_cluster() {
    assert!(vni(4096, Some(4096), Some(&Felix::default())).is_empty());
    assert!(vni(4097, None, None).is_empty(), "nothing to compare");
}

/// Without an InternalIP the BGP address is the one the others must have; a layer that has no
/// address yet (a network not made, no annotation) is no mismatch; the fix names the adapter
/// that holds the address, or says none does, never sending the user to pick one. (Each layer
/// that differs from the InternalIP, named with both: tests/lifecycle
/// `status_names_each_layer_whose_address_differs_from_the_nodes`.)
#[test]
fn each_layer_whose_address_differs_is_named_with_the_adapter_that_holds_it() {
    let ip = |s: &str| Some(s.parse::<std::net::Ipv4Addr>().expect("ip"));
    let host = [
        crate::host::Adapter::for_test("Ethernet", 4, "00-15-5D-00-00-04", &["10.0.0.5"]),
        crate::host::Adapter::for_test("Ethernet 2", 6, "00-15-5D-00-00-06", &["10.0.1.9"]),
    ];
    let judged = |layers, nets: &[_]| node_address(&"win-1".into(), layers, nets, Some(&host));
    let nets = [("External", ip("10.0.0.5")), ("Calico", ip("10.0.0.5"))];
    assert!(judged((ip("10.0.0.5"), None), &[("Calico", None)]).is_empty());
    assert!(judged((None, None), &nets).is_empty());
    let by_bgp = judged((None, ip("10.0.1.9")), &nets);
    assert_eq!(by_bgp.len(), 2, "the networks against BGP's: {by_bgp:?}");
    let remedy = |internal| {
        let found = judged((ip(internal), None), &nets[..1]);
        found[0].said.remedy.clone().unwrap_or_default()
    };
    let named = remedy("10.0.1.9");
    let holds = "set vxlan.adapter to Ethernet 2 (it holds 10.0.1.9)";
    assert!(named.starts_with(holds), "{named}");
    let none = remedy("203.0.113.7");
    let said = none.starts_with("no adapter of this host holds 203.0.113.7");
    assert!(said && !none.contains("set vxlan.adapter to"), "{none}");
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
                let line = text[at..].lines().next().unwrap_or_default();
                missing.push(format!("{}: {line}", p.display()));
            }
        }
    }
    assert!(seen > 5, "the CalicoNode restarts were not found");
    assert!(missing.is_empty(), "{missing:#?}");
}
