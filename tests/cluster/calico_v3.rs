//! A cluster that serves Calico's resources as `projectcalico.org/v3` CRDs with no
//! `crd.projectcalico.org` (the fake API server's `serve_calico_v3`, as Calico's
//! `api/config/crd/projectcalico.org_*.yaml` define them): read through that group, patched
//! there, named there in the roles, and refused to releases before v3.32.0.

use crate::support::fake_api::FakeApi;
use crate::support::{json as parse, on_node};
use serde_json::{Value, json};

const CLUSTER_INFO: &str = "/apis/crd.projectcalico.org/v1/clusterinformations/default";

fn run(api: &FakeApi, args: &[&str]) -> (i32, Value, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = api.kubeconfig(dir.path(), None);
    let out = on_node()
        .args(args)
        .args(["-o", "json", "--kubeconfig"])
        .arg(&kubeconfig)
        .output()
        .expect("run");
    (
        out.status.code().expect("code"),
        parse(&out.stdout),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn verdict(doc: &Value, id: &str) -> Value {
    crate::support::items(doc, "checks")
        .find(|c| c["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("no check {id}: {doc}"))
}

/// v3.32.1 on the cluster, strict affinity off: preflight reads every Calico resource through
/// projectcalico.org/v3 and `--fix` patches IPAMConfiguration there.
#[test]
fn a_v3_only_cluster_is_read_and_fixed_through_projectcalico_org_v3() {
    let api = FakeApi::calico();
    let mut info = api.get(CLUSTER_INFO).expect("info");
    info["spec"]["calicoVersion"] = json!("v3.32.1");
    api.put(CLUSTER_INFO, info);
    let ipam = "/apis/crd.projectcalico.org/v1/ipamconfigs/default";
    let mut i = api.get(ipam).expect("ipam");
    i["spec"]["strictAffinity"] = json!(false);
    api.put(ipam, i);
    api.serve_calico_v3();

    let (code, doc, err) = run(&api, &["preflight", "--fix", "--yes"]);
    assert_eq!(code, 0, "{err} {doc}");
    assert_eq!(
        doc["cluster"]["calico_api"], "projectcalico.org/v3",
        "{doc}"
    );
    assert_eq!(verdict(&doc, "calico-api")["verdict"], "pass");
    assert_eq!(verdict(&doc, "strict-affinity")["verdict"], "pass");
    assert_eq!(verdict(&doc, "vxlan-vni")["verdict"], "pass", "{doc}");
    let fixed = api
        .get("/apis/projectcalico.org/v3/ipamconfigurations/default")
        .expect("ipam");
    assert_eq!(fixed["spec"]["strictAffinity"], true);
    let calico: Vec<String> = api
        .requests()
        .into_iter()
        .map(|(_, p)| p)
        .filter(|p| p.contains("projectcalico.org") && !p.contains("/migration.projectcalico.org/"))
        .collect();
    assert!(!calico.is_empty());
    assert!(
        calico
            .iter()
            .all(|p| p.starts_with("/apis/projectcalico.org/v3/")),
        "{calico:?}"
    );

    // A missing IPAMConfiguration is created in v3 too (its CRD defaults autoAllocateBlocks).
    api.remove("/apis/projectcalico.org/v3/ipamconfigurations/default");
    let (code, doc, err) = run(&api, &["preflight", "--fix", "--yes"]);
    assert_eq!(code, 0, "{err} {doc}");
    let created = api
        .get("/apis/projectcalico.org/v3/ipamconfigurations/default")
        .expect("created");
    assert_eq!(created["spec"]["strictAffinity"], true, "{created}");
}

/// A release whose libcalico-go cannot discover the group is refused, with the fix; the same
/// release on a v1 cluster passes.
#[test]
fn a_release_before_3_32_is_refused_on_a_v3_only_cluster() {
    let api = FakeApi::calico();
    let (code, doc, err) = run(&api, &["preflight"]);
    assert_eq!(code, 0, "{err} {doc}");
    assert_eq!(verdict(&doc, "calico-api")["verdict"], "pass");
    api.serve_calico_v3();
    let (code, doc, _) = run(&api, &["preflight"]);
    assert_eq!(code, 3, "{doc}");
    let c = verdict(&doc, "calico-api");
    assert_eq!(c["verdict"], "fail", "{c}");
    assert!(
        c["message"]
            .as_str()
            .is_some_and(|m| m.contains("v3.30.2") && m.contains("v3.32.0")),
        "{c}"
    );
}

/// The roles name the group the cluster serves: asked, discovered, or v1 without a cluster.
#[test]
fn fleet_rbac_names_the_group_the_cluster_serves() {
    let groups = |doc: &Value| -> Vec<String> {
        let mut g: Vec<String> = crate::support::items(doc, "manifests")
            .flat_map(|m| m["rules"].as_array().cloned().unwrap_or_default())
            .flat_map(|r| r["apiGroups"].as_array().cloned().unwrap_or_default())
            .filter_map(|g| g.as_str().map(str::to_owned))
            .filter(|g| g.contains("projectcalico") && !g.starts_with("migration."))
            .collect();
        g.sort();
        g.dedup();
        g
    };
    let api = FakeApi::calico();
    let (code, doc, err) = run(&api, &["fleet", "rbac"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(groups(&doc), ["crd.projectcalico.org"]);
    api.serve_calico_v3();
    let (code, doc, err) = run(&api, &["fleet", "rbac"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(groups(&doc), ["projectcalico.org"]);
    assert!(doc.to_string().contains("ipamconfigurations"), "{doc}");
    assert!(!doc.to_string().contains("\"ipamconfigs\""), "{doc}");
    let (code, doc, _) = run(&api, &["fleet", "rbac", "--calico-api", "v1"]);
    assert_eq!(code, 0);
    assert_eq!(groups(&doc), ["crd.projectcalico.org"]);
}

/// A v3.32.1 cluster that can migrate its datastore.
fn migrating_cluster() -> FakeApi {
    let api = FakeApi::calico();
    let mut info = api.get(CLUSTER_INFO).expect("info");
    info["spec"]["calicoVersion"] = json!("v3.32.1");
    api.put(CLUSTER_INFO, info);
    api
}

/// A migration under way is said, not failed: preflight passes with a warning, its sentence
/// names the phase; once converged, the v3 group is read although both are served; once the
/// v1 CRDs are gone, discovery alone gives v3.
#[test]
fn a_datastore_migration_is_under_way_not_a_failure() {
    let api = migrating_cluster();
    api.datastore_migration("Migrating");
    let (code, doc, err) = run(&api, &["preflight"]);
    assert_eq!(code, 0, "{err} {doc}");
    let c = verdict(&doc, "datastore-migration");
    assert_eq!(c["verdict"], "warn", "{c}");
    assert!(
        c["message"]
            .as_str()
            .is_some_and(|m| m.contains("v1-to-v3 is Migrating")),
        "{c}"
    );
    // Both groups served, not converged: libcalico-go's rule reads v1.
    assert_eq!(
        doc["cluster"]["calico_api"], "crd.projectcalico.org/v1",
        "{doc}"
    );

    let api = migrating_cluster();
    api.datastore_migration("Converged");
    let (code, doc, err) = run(&api, &["preflight"]);
    assert_eq!(code, 0, "{err} {doc}");
    assert_eq!(
        doc["cluster"]["calico_api"], "projectcalico.org/v3",
        "{doc}"
    );
    assert_eq!(verdict(&doc, "datastore-migration")["verdict"], "warn");
    api.finish_datastore_migration();
    let (code, doc, err) = run(&api, &["preflight"]);
    assert_eq!(code, 0, "{err} {doc}");
    assert_eq!(
        doc["cluster"]["calico_api"], "projectcalico.org/v3",
        "{doc}"
    );
    assert_eq!(verdict(&doc, "datastore-migration")["verdict"], "pass");
    // The datastore locked again with the migration finished (an upgrade's lock): said as the
    // lock, under way, by the same judge status reads.
    let v3_info = "/apis/projectcalico.org/v3/clusterinformations/default";
    let mut info = api.get(v3_info).expect("info");
    info["spec"]["datastoreReady"] = json!(false);
    api.put(v3_info, info);
    let (code, doc, err) = run(&api, &["preflight"]);
    assert_eq!(code, 0, "{err} {doc}");
    let c = verdict(&doc, "datastore-migration");
    assert_eq!(c["verdict"], "warn", "{c}");
    assert!(
        c["message"]
            .as_str()
            .is_some_and(|m| m.contains("datastoreReady: false")),
        "{c}"
    );
}
