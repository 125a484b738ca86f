//! `verify` on every Windows build agnhost is published for: a cluster of Windows Server 2019
//! (17763), 2022 (20348) and 2025 (26100) nodes verifies each node with the variant of the
//! probe image its build runs (agnhost's `BASEIMAGE`: `1809`, `ltsc2022`, `ltsc2025`), and on a
//! 2025 node whose HNS applies no ACL (before the April 2026 update) the policy layer is what
//! fails.

use crate::support::fake_api::{FakeApi, meta};
use crate::verify::{failed, node, options, verify};
use calicoctl_win::health::judge::Code;
use calicoctl_win::verify::image::VARIANT_ANNOTATION;
use calicoctl_win::verify::matrix::CheckId;
use serde_json::json;

const NODES: &[(&str, &str, &str)] = &[
    ("win-2019", "10.0.17763", "windows/amd64/1809"),
    ("win-2022", "10.0.20348", "windows/amd64/ltsc2022"),
    ("win-2025", "10.0.26100", "windows/amd64/ltsc2025"),
];

fn cluster() -> (FakeApi, tempfile::TempDir) {
    let api = FakeApi::start();
    node(&api, "linux-1", "linux", None);
    for (name, build, _) in NODES {
        node(&api, name, "windows", Some(build));
    }
    let mut k = meta("v1", "Service", "kubernetes", Some("default"));
    k["spec"] = json!({"clusterIP": "10.96.0.1", "ports": [{"port": 443}]});
    api.put("/api/v1/namespaces/default/services/kubernetes", k);
    (api, tempfile::tempdir().expect("tempdir"))
}

#[test]
fn each_windows_build_is_verified_with_its_own_image_variant() {
    let (api, dir) = cluster();
    for (name, _, _) in NODES {
        let mut o = options(120);
        o.node = crate::support::node_name(name);
        o.suffix = format!("b{}", &name[4..]);
        let r = verify(&api, &dir, &o);
        assert!(r.passed, "{name}: {:#?}", r.checks);
        assert!(
            r.peers.iter().any(|p| p.node.as_str().starts_with("win-")),
            "{name}: a Windows peer of another build: {:?}",
            r.peers
        );
    }
    let pods = api.lock().dataplane.pods_run.clone();
    let mut seen = std::collections::BTreeSet::new();
    for p in &pods {
        let on = p["spec"]["nodeName"].as_str().expect("node");
        let annotation = &p["metadata"]["annotations"][VARIANT_ANNOTATION];
        match NODES.iter().find(|(n, _, _)| *n == on) {
            Some((_, _, variant)) => {
                assert_eq!(annotation, variant, "{on}: {p}");
                seen.insert(on);
            }
            None => assert!(annotation.is_null(), "a Linux pod names no variant: {p}"),
        }
    }
    assert_eq!(seen.len(), NODES.len(), "a probe pod on every Windows node");
}

/// Windows Server 2025 before the April 2026 update: HNS applies no endpoint ACL, so the
/// NetworkPolicy verify makes drops nothing there, and verify says so as a policy failure.
#[test]
fn a_2025_node_whose_hns_applies_no_acl_fails_the_policy_layer_only() {
    let (api, dir) = cluster();
    api.lock()
        .dataplane
        .acls_ignored_on
        .insert("win-2025".into());
    let mut o = options(120);
    o.node = crate::support::node_name("win-2025");
    let r = verify(&api, &dir, &o);
    assert!(!r.passed);
    let (codes, ids) = failed(&r);
    assert_eq!(codes, [Code::TrafficPolicy].into(), "{:#?}", r.checks);
    assert!(ids.contains(&CheckId::PolicyApplied), "{ids:?}");
}
