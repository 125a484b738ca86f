//! The calls made only on a refusal or a fallback, as the identities that really make them,
//! with the roles calicoctl-win writes, on the fake API server (RBAC enforced as
//! kube-apiserver does, `crate::support::fake_api::rbac`): the drain's read of a refused pod
//! (a list by `metadata.name`, as the roles grant `list pods` and not `get`) under the
//! installer's roles (`fleet rbac`) and the fleet's (`fleet rbac --identity fleet`), and
//! migrate's search for the operator (a list of Deployments by name when none has the label;
//! its ConfigMap in the namespace it runs in) under the migrate account's (`fleet plan
//! --migrate`).

use super::fleet::fleet_plan;
use crate::support::fake_api::FakeApi;
use crate::support::operator::FakeOperator;
use crate::support::snapshot::{assert_same, snapshot};
use crate::support::{Node, on_node};
use serde_json::{Value, json};

/// The ServiceAccounts, Roles and bindings among `fleet rbac ARGS`'s manifests.
fn rbac(args: &[&str]) -> Vec<Value> {
    let out = on_node()
        .args(["fleet", "rbac", "-o", "json"])
        .args(args)
        .assert()
        .success()
        .get_output()
        .clone();
    accounts_and_roles(&crate::support::json(&out.stdout))
}

fn accounts_and_roles(doc: &Value) -> Vec<Value> {
    crate::support::items(doc, "manifests")
        .filter(|m| {
            m["kind"]
                .as_str()
                .is_some_and(|k| k.contains("Role") || k == "ServiceAccount")
        })
        .cloned()
        .collect()
}

/// A cluster with Calico and win-1 Ready, the `roles` applied, and win-1 installed by an admin.
fn installed_with(roles: &[Value]) -> (FakeApi, Node) {
    let api = FakeApi::calico();
    api.set_node_ready("win-1", "True", "kubelet is posting ready status");
    for m in roles {
        assert!(api.apply(m), "{m}");
    }
    let node = Node::new(&api);
    let zip = crate::support::release::release_zip(node.dir.path(), "3.30.2", "calico-node.exe");
    let (code, _, err) = node.run(&["install", "--release-zip", zip.to_str().expect("utf-8")]);
    assert_eq!(code, 0, "{err}");
    (api, node)
}

/// A pod in `doomed`, a namespace being deleted, whose eviction is refused (403
/// `NamespaceTerminating`) and which the namespace controller marks deleted right after; and a
/// pod in `default` whose evictions a PodDisruptionBudget refuses (429, asked again after its
/// Retry-After) until the budget allows it.
fn refusals(api: &FakeApi) {
    api.put_pod("default", "web-1", "win-1", Some("ReplicaSet"));
    api.put_pod("doomed", "late", "win-1", Some("ReplicaSet"));
    api.put(
        "/api/v1/namespaces/doomed",
        json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "doomed", "uid": "ns-doomed",
                "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Terminating"}}),
    );
    let mut st = api.lock();
    st.marks_after_refusal = true;
    st.eviction_blocked.insert("default/web-1".into());
    st.pdb_retry_after = 1;
}

/// `reconfigure --drain` with a VNI change as `kubeconfig`'s identity, while, when the drain
/// asks again to evict web-1 (after the budget's Retry-After), the namespace controller has
/// finished `doomed` and the budget allows it: its exit code and stderr. A scripted event of
/// the fake API server's, at the drain's own request.
fn drain_as(api: &FakeApi, node: &Node, kubeconfig: &std::path::Path) -> (i32, String) {
    api.set_felix_vni(4097);
    api.when_nth(
        ("POST", "/api/v1/namespaces/default/pods/web-1/eviction", 2),
        |st| {
            st.objects.retain(|p, _| !p.contains("/namespaces/doomed"));
            st.eviction_blocked.clear();
        },
    );
    let args = ["reconfigure", "--set", "vxlan.vni=4097", "--drain"];
    let (code, _, err) = node.run_as(
        kubeconfig,
        &[&args[..], &["--drain-timeout", "30s"]].concat(),
    );
    (code, err)
}

/// The drain's refusals (a 429, a 403 `NamespaceTerminating`) and its read of the refused pod
/// by name, as the installer (`fleet rbac`) and as the fleet's jobs (`fleet rbac --identity
/// fleet`): each with exactly its roles, the drain finishes and the pod marked since its
/// refusal is waited for, not asked again.
#[test]
fn the_drains_read_of_a_refused_pod_is_allowed_by_the_installers_and_the_fleets_roles() {
    for (args, namespace, name) in [
        (&[][..], "kube-system", "calicoctl-win-installer"),
        (
            &["--identity", "fleet"][..],
            "system-upgrade",
            "calicoctl-win-fleet",
        ),
    ] {
        let (api, node) = installed_with(&rbac(args));
        refusals(&api);
        let dir = tempfile::tempdir().expect("tempdir");
        let account = crate::support::service_account_kubeconfig(&api, dir.path(), namespace, name);
        let (code, err) = drain_as(&api, &node, &account);
        assert_eq!(code, 0, "{name}: {err}");
        let requests = api.requests();
        let evictions = requests
            .iter()
            .filter(|(m, p)| m == "POST" && p == "/api/v1/namespaces/doomed/pods/late/eviction")
            .count();
        assert_eq!(
            evictions, 1,
            "{name}: marked since its refusal, not asked again"
        );
        assert!(
            requests
                .iter()
                .any(|(m, p)| m == "GET" && p == "/api/v1/namespaces/doomed/pods"),
            "{name}: the refused pod was not read again: {requests:?}"
        );
        assert_eq!(node.calico_vsid(), Some(4097), "{name}");
    }
}

const DEPLOYMENT: &str = "/apis/apps/v1/namespaces/tigera-operator/deployments/tigera-operator";
const ENDPOINT: &str = "/api/v1/namespaces/tigera-operator/configmaps/kubernetes-services-endpoint";

/// The migrate account's roles, as `fleet plan --migrate to-operator EXTRA` writes them.
fn migrate_roles(extra: &[&str]) -> Vec<Value> {
    let config = crate::support::root().join("templates/calico-windows.yaml");
    let config = config.display().to_string();
    let args = [
        &["--config", config.as_str(), "--image", "r/x:1"][..],
        &["--migrate", "to-operator"],
        extra,
    ]
    .concat();
    let (code, doc, err) = fleet_plan(&args);
    assert_eq!(code, 0, "{err}");
    accounts_and_roles(&doc)
}

fn migrate_account(api: &FakeApi, dir: &std::path::Path) -> std::path::PathBuf {
    crate::support::service_account_kubeconfig(api, dir, "system-upgrade", "calicoctl-win-migrate")
}

/// `migrate to-operator` as the migrate account, with the operator answering: it succeeds.
fn hand_over_as_the_migrate_account(api: &FakeApi, node: &Node) {
    let _operator = FakeOperator::start(api.state.clone(), "win-1", node.sim());
    let dir = tempfile::tempdir().expect("tempdir");
    let account = migrate_account(api, dir.path());
    let args = ["migrate", "to-operator", "--pod-timeout", "10s"];
    let (code, doc, err) = node.run_as(&account, &args);
    assert_eq!(code, 0, "{err} {doc}");
}

/// The operator's Deployment without its label, where Calico's manifest puts it: migrate
/// finds it by its name (a list of the one name) as the migrate account, and hands the node
/// over.
#[test]
fn migrate_finds_an_unlabelled_operator_by_name_with_the_migrate_roles() {
    let (api, node) = installed_with(&migrate_roles(&[]));
    let mut d = api.get(DEPLOYMENT).expect("deployment");
    d["metadata"]["labels"] = json!({});
    api.put(DEPLOYMENT, d);
    hand_over_as_the_migrate_account(&api, &node);
    let requests = api.requests();
    assert!(
        requests
            .iter()
            .any(|(m, p)| m == "GET" && p == "/apis/apps/v1/namespaces/tigera-operator/deployments"),
        "the operator was not looked for by name: {requests:?}"
    );
}

/// The operator as a Helm release in `calico-operator`, `OPERATOR_NAMESPACE` from its pod's
/// `metadata.namespace`, its ConfigMap there: moved to `ns`.
fn operator_in(api: &FakeApi, ns: &str) {
    for (from, group, kind) in [
        (DEPLOYMENT, "/apis/apps/v1", "deployments"),
        (ENDPOINT, "/api/v1", "configmaps"),
    ] {
        let mut o = api.get(from).expect("object");
        o["metadata"]["namespace"] = ns.into();
        if kind == "deployments" {
            o["spec"]["template"]["spec"]["containers"][0]["env"] = json!([{
                "name": "OPERATOR_NAMESPACE",
                "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}
            }]);
        }
        let name = o["metadata"]["name"].as_str().expect("name").to_owned();
        api.remove(from);
        api.put(&format!("{group}/namespaces/{ns}/{kind}/{name}"), o);
    }
}

/// The operator in another namespace than `tigera-operator` (OPERATOR_NAMESPACE from its
/// pod's namespace): with the roles `fleet plan --migrate` writes for that namespace
/// (`--operator-namespace`), the migrate account hands the node over.
#[test]
fn migrate_reads_the_operators_settings_where_it_runs_with_roles_for_that_namespace() {
    let (api, node) = installed_with(&migrate_roles(&["--operator-namespace", "calico-operator"]));
    operator_in(&api, "calico-operator");
    hand_over_as_the_migrate_account(&api, &node);
}

/// The same operator with the roles for `tigera-operator` (the default): migrate refuses
/// before any change, naming the right it lacks and the roles that grant it.
#[test]
fn migrate_without_the_right_in_the_operators_namespace_is_refused_naming_it() {
    let (api, node) = installed_with(&migrate_roles(&[]));
    operator_in(&api, "calico-operator");
    let _operator = FakeOperator::start(api.state.clone(), "win-1", node.sim());
    let dir = tempfile::tempdir().expect("tempdir");
    let account = migrate_account(&api, dir.path());
    let host = snapshot(&node.sim());
    let writes = api.writes().len();
    for dry in [true, false] {
        let mut args = vec!["migrate", "to-operator", "--pod-timeout", "5s"];
        if dry {
            args.push("--dry-run");
        }
        let (code, doc, err) = node.run_as(&account, &args);
        assert_eq!(code, 3, "dry run {dry}: {err} {doc}");
        assert_eq!(doc["error"]["kind"], "migration-refused", "{doc}");
        assert!(
            err.contains(
                "may not get configmaps kubernetes-services-endpoint in namespace calico-operator"
            ),
            "{err}"
        );
        assert!(
            err.contains("--operator-namespace calico-operator"),
            "{err}"
        );
        assert_same(&host, &snapshot(&node.sim()), "refused");
        assert_eq!(
            api.writes()[writes..],
            [],
            "the cluster was written to: {err}"
        );
    }
}

/// The fake API server reads a list's fieldSelector as kube-apiserver does: a list of one name
/// is judged by RBAC as a request for that name (a Role's `resourceNames` allow it, and only
/// it), and a field the kind does not select on is a 400 (`support::fake_api::fields`).
#[test]
fn a_list_by_name_is_judged_by_its_name_and_unknown_fields_are_refused() {
    let api = FakeApi::calico();
    let (ns, sa) = ("tigera-operator", "reader");
    let rbac = "rbac.authorization.k8s.io";
    for o in [
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": sa, "namespace": ns}}),
        json!({"apiVersion": format!("{rbac}/v1"), "kind": "Role",
            "metadata": {"name": sa, "namespace": ns},
            "rules": [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["list"],
                "resourceNames": ["tigera-operator"]}]}),
        json!({"apiVersion": format!("{rbac}/v1"), "kind": "RoleBinding",
            "metadata": {"name": sa, "namespace": ns},
            "roleRef": {"apiGroup": rbac, "kind": "Role", "name": sa},
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}]}),
    ] {
        assert!(api.apply(&o), "{o}");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let reader = crate::support::service_account_kubeconfig(&api, dir.path(), ns, sa);
    let token = crate::support::token_in(&reader);
    let at = "/apis/apps/v1/namespaces/tigera-operator/deployments";
    let (code, doc) = api.get_as(
        &token,
        &format!("{at}?fieldSelector=metadata.name%3Dtigera-operator"),
    );
    assert_eq!(code, 200, "{doc}");
    assert_eq!(doc["items"].as_array().map(Vec::len), Some(1), "{doc}");
    for refused in [
        at.to_owned(),
        format!("{at}?fieldSelector=metadata.name%3Dother"),
        format!("{at}?fieldSelector=metadata.name%21%3Dother"),
    ] {
        let (code, doc) = api.get_as(&token, &refused);
        assert_eq!(code, 403, "{refused}: {doc}");
    }
    let admin = api.token.clone();
    for (path, message) in [
        (
            "/apis/apps/v1/deployments?fieldSelector=spec.replicas%3D1",
            "\"spec.replicas\" is not a known field selector",
        ),
        (
            "/api/v1/pods?fieldSelector=status.hostIP%3D10.0.0.1",
            "field label not supported: status.hostIP",
        ),
        (
            "/api/v1/nodes?fieldSelector=metadata.namespace%3Dx",
            "field label not supported: metadata.namespace",
        ),
    ] {
        let (code, doc) = api.get_as(&admin, path);
        assert_eq!(code, 400, "{path}: {doc}");
        assert!(
            doc["message"].as_str().is_some_and(|m| m.contains(message)),
            "{doc}"
        );
    }
    // Supported fields, `!=` and `,` (and) as kube-apiserver reads them.
    let (code, doc) = api.get_as(
        &admin,
        "/apis/apps/v1/deployments?fieldSelector=metadata.namespace%3Dtigera-operator%2Cmetadata.name%21%3Dother",
    );
    assert_eq!(code, 200, "{doc}");
    assert_eq!(doc["items"].as_array().map(Vec::len), Some(1), "{doc}");
}

/// `--operator-namespace` is a namespace's name (an RFC 1123 label), or no manifests at all.
#[test]
fn a_migration_plan_refuses_an_operator_namespace_that_is_no_kubernetes_name() {
    let config = crate::support::root().join("templates/calico-windows.yaml");
    let config = config.display().to_string();
    for bad in ["Calico_Operator", "x-", ""] {
        let (code, doc, err) = fleet_plan(&[
            "--config",
            &config,
            "--image",
            "r/x:1",
            "--migrate",
            "to-operator",
            "--operator-namespace",
            bad,
        ]);
        assert_eq!(code, 2, "{bad:?}: {err}");
        assert!(err.contains("--operator-namespace"), "{err}");
        assert!(doc["manifests"].is_null(), "{doc}");
    }
    // Without --migrate nothing reads it: refused as bad usage, not silently ignored.
    let (code, doc, err) = fleet_plan(&[
        "--config",
        &config,
        "--image",
        "r/x:1",
        "--operator-namespace",
        "calico-operator",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--migrate"), "{err}");
    assert!(doc["manifests"].is_null(), "{doc}");
    let roles = migrate_roles(&["--operator-namespace", "calico-operator"]);
    let in_operator: Vec<&Value> = roles
        .iter()
        .filter(|m| {
            m["kind"] == "Role"
                && m["rules"]
                    .to_string()
                    .contains("kubernetes-services-endpoint")
        })
        .collect();
    assert_eq!(in_operator.len(), 1, "{roles:?}");
    assert_eq!(in_operator[0]["metadata"]["namespace"], "calico-operator");
}
