//! Every admission policy the fleet writes (`fleet rbac` for each identity, `fleet plan` for
//! both engines, with `--verify` and `--migrate`), judged by a CEL engine as kube-apiserver
//! judges it (`support::admission`), against every TokenRequest a Calico, operator or
//! Kubernetes component makes at a release calicoctl-win supports, and against calicoctl-win's
//! own renewers' requests, built by its own code (`credentials::token_request_body`). Only the
//! last are ever judged: of those, the one for the caller's own Node and within the lifetime cap
//! is admitted, one for another Node or too long is denied. And the roles the fleet writes are
//! bound only to the accounts it writes, but the one noted.

use crate::support::admission::{Judged, judge};
use crate::support::{cmd, json};
use calicoctl_win::cluster::credentials::token_request_body;
use calicoctl_win::fleet::rights::TOKEN_LIFETIME_CAP;
use serde_json::{Value, json};
use std::time::Duration;

const CALICO_NAMESPACES: [&str; 2] = ["kube-system", "calico-system"];
const FLEET_USER: &str = "system:serviceaccount:system-upgrade:calicoctl-win-fleet";

/// The manifests of each way the fleet writes them, made once for both tests.
fn outputs() -> &'static [(String, Vec<Value>)] {
    static OUTPUTS: std::sync::OnceLock<Vec<(String, Vec<Value>)>> = std::sync::OnceLock::new();
    OUTPUTS.get_or_init(make_outputs)
}

fn make_outputs() -> Vec<(String, Vec<Value>)> {
    let plan = [
        "fleet",
        "plan",
        "--config",
        "templates/calico-windows.yaml",
        "--image",
        "registry.example.com/calicoctl-win:1",
    ];
    let mut runs: Vec<Vec<&str>> = Vec::new();
    for ns in CALICO_NAMESPACES {
        for identity in ["installer", "fleet", "verify", "diags"] {
            runs.push(vec![
                "fleet",
                "rbac",
                "--calico-namespace",
                ns,
                "--calico-api",
                "v1",
            ]);
            runs.last_mut()
                .expect("pushed")
                .extend(["--identity", identity]);
        }
        for extra in [&[][..], &["--verify"], &["--migrate", "to-operator"]] {
            let mut run = plan.to_vec();
            run.extend(["--calico-namespace", ns, "--calico-api", "v1"]);
            run.extend(extra);
            runs.push(run);
        }
    }
    runs.into_iter()
        .map(|args| {
            let out = cmd()
                .args(["-o", "json"])
                .args(&args)
                .output()
                .expect("runs");
            let what = args.join(" ");
            assert!(
                out.status.success(),
                "{what}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let docs = json(&out.stdout)["manifests"]
                .as_array()
                .expect("manifests")
                .clone();
            (what, docs)
        })
        .collect()
}

/// A TokenRequest's admission attributes: `user` (with `extra`) asks for `account`'s token in
/// `namespace`.
fn token_request(user: &str, extra: Value, (namespace, account): (&str, &str)) -> Value {
    json!({"operation": "CREATE", "name": account, "namespace": namespace,
        "resource": {"group": "", "version": "v1", "resource": "serviceaccounts"},
        "subResource": "token", "userInfo": {"username": user, "extra": extra}})
}

/// What kube-apiserver puts in `extra` for a pod's projected token (its pod and Node) or a
/// token bound to a Node (its Node): k8s.io/apiserver `pkg/authentication/serviceaccount`.
fn pod_extra(node: &str) -> Value {
    json!({"authentication.kubernetes.io/pod-name": ["calico-node-x2v4k"],
        "authentication.kubernetes.io/pod-uid": ["uid-pod"],
        "authentication.kubernetes.io/node-name": [node],
        "authentication.kubernetes.io/node-uid": ["uid-node"]})
}

fn node_extra(node: &str) -> Value {
    json!({"authentication.kubernetes.io/node-name": [node],
        "authentication.kubernetes.io/node-uid": ["uid-node"]})
}

/// Every TokenRequest of another program, in Calico's namespace `ns`, each named.
fn foreign_requests(ns: &str) -> Vec<(String, Value, Value)> {
    let calico_node = format!("system:serviceaccount:{ns}:calico-node");
    // calico node/pkg/cni/token_watch.go `UpdateToken`: no TokenRequest at v3.20.0 (nor
    // before v3.23.2); v3.25.2 as `calico-node` for `calico-node` (`defaultServiceAccountName`),
    // v3.26.0 and v3.32.1 for `calico-cni-plugin`; unbound, a day long.
    let cni = json!({"spec": {"audiences": [], "expirationSeconds": 86400}});
    // kubernetes pkg/volume/projected/projected.go: kubelet, as its Node, asks each pod's
    // projected token bound to the Pod (3607 s for the default token volume).
    let projected = |pod: &str| {
        json!({"spec": {"audiences": [], "expirationSeconds": 3607,
            "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": pod, "uid": "uid-pod"}}})
    };
    // tigera/operator v1.30.0, v1.43.0, release-v1.44: no TokenRequest of its own.
    vec![
        (
            "calico v3.25.2 token_watch.go".into(),
            token_request(&calico_node, pod_extra("linux-1"), (ns, "calico-node")),
            cni.clone(),
        ),
        (
            "calico v3.26.0 and v3.32.1 token_watch.go".into(),
            token_request(
                &calico_node,
                pod_extra("linux-1"),
                (ns, "calico-cni-plugin"),
            ),
            cni,
        ),
        (
            "kubelet, calico-node's pod".into(),
            token_request("system:node:linux-1", json!({}), (ns, "calico-node")),
            projected("calico-node-x2v4k"),
        ),
        (
            "kubelet, the fleet's pod".into(),
            token_request(
                "system:node:win-1",
                json!({}),
                ("system-upgrade", "calicoctl-win-fleet"),
            ),
            projected("calicoctl-win-fleet-5d8kq"),
        ),
    ]
}

/// calicoctl-win's renewers' request for calico-node's token in `ns`, built by its own code:
/// CalicoNode's (`supervise::renew`, with its Node-bound token) and the fleet pod's
/// (`commands::keep_token`, with its pod token), each asking `node`'s token `lifetime` long.
fn our_requests(ns: &str, node: Option<&str>, lifetime: Duration) -> [(Value, Value); 2] {
    let node = node.map(crate::support::node_name);
    let object = serde_json::to_value(token_request_body(lifetime, node.as_ref())).expect("json");
    let calico_node = format!("system:serviceaccount:{ns}:calico-node");
    [
        (
            token_request(&calico_node, node_extra("win-1"), (ns, "calico-node")),
            object.clone(),
        ),
        (
            token_request(FLEET_USER, pod_extra("win-1"), (ns, "calico-node")),
            object,
        ),
    ]
}

/// Each policy the fleet writes judges only calicoctl-win's requests; the renewers' own are
/// admitted, another Node's or a longer one denied.
#[test]
fn the_fleets_admission_policies_judge_only_calicoctl_wins_token_requests() {
    let mut seen = 0;
    for (what, docs) in outputs() {
        let ns = CALICO_NAMESPACES
            .into_iter()
            .find(|ns| what.contains(&format!("--calico-namespace {ns}")))
            .expect("namespace");
        for policy in docs
            .iter()
            .filter(|d| d["kind"] == "ValidatingAdmissionPolicy")
        {
            seen += 1;
            let name = &policy["metadata"]["name"];
            assert!(
                docs.iter()
                    .any(|d| d["kind"] == "ValidatingAdmissionPolicyBinding"
                        && d["spec"]["policyName"] == *name),
                "{what}: {name} has no binding"
            );
            for (who, request, object) in foreign_requests(ns) {
                let judged = judge(policy, &request, &object);
                assert_eq!(judged, Judged::NotMatched, "{what}: {name} judges {who}");
            }
            let token_policy = name
                .as_str()
                .is_some_and(|n| n.starts_with("calicoctl-win-token-"));
            let cap = TOKEN_LIFETIME_CAP;
            for (request, object) in our_requests(ns, Some("win-1"), cap) {
                let judged = judge(policy, &request, &object);
                let mine = token_policy
                    && request["userInfo"]["username"].as_str().is_some_and(|u| {
                        (u == FLEET_USER) == (name == "calicoctl-win-token-per-node")
                    });
                let want = if mine {
                    Judged::Admitted
                } else {
                    Judged::NotMatched
                };
                assert_eq!(judged, want, "{what}: {name} on {request}");
                if !mine {
                    continue;
                }
                let longer = cap + Duration::from_secs(1);
                for (node, lifetime) in [(Some("win-2"), cap), (Some("win-1"), longer)] {
                    let node = node.map(crate::support::node_name);
                    let object = serde_json::to_value(token_request_body(lifetime, node.as_ref()));
                    let judged = judge(policy, &request, &object.expect("json"));
                    assert!(
                        matches!(judged, Judged::Denied(_)),
                        "{what}: {name}: {judged:?}"
                    );
                }
            }
            // A renewer's unbound request (where the server refuses the binding:
            // `credentials::token_request`): the fleet's refused, calico-node's not judged,
            // as Calico's own are not (docs/security.md).
            for (request, object) in our_requests(ns, None, cap) {
                let fleets = request["userInfo"]["username"] == FLEET_USER
                    && name == "calicoctl-win-token-per-node";
                let judged = judge(policy, &request, &object);
                assert_eq!(
                    matches!(judged, Judged::Denied(_)),
                    fleets,
                    "{what}: {name}: {judged:?}"
                );
                assert_eq!(
                    judged == Judged::NotMatched,
                    !fleets,
                    "{what}: {name}: {judged:?}"
                );
            }
        }
    }
    // In each Calico namespace: the calico-node policy in `fleet rbac` (installer, fleet) and
    // the plans but --migrate's; the per-node one in fleet's and those plans; verify's in
    // `--identity verify` and the plan with --verify.
    assert_eq!(seen, 18, "policies judged");
}

/// The roles the fleet writes are bound only to the service accounts it writes, but one:
/// `fleet rbac --identity diags` grants calico-node's account `create tokenreviews`
/// (`rights::REVIEW`), every calico-node's in the cluster, Linux nodes' too.
#[test]
fn the_fleets_roles_are_bound_only_to_its_own_accounts() {
    for (what, docs) in outputs() {
        let ours: Vec<(&Value, &Value)> = docs
            .iter()
            .filter(|d| d["kind"] == "ServiceAccount")
            .map(|d| (&d["metadata"]["name"], &d["metadata"]["namespace"]))
            .collect();
        for b in docs.iter().filter(|d| {
            d["kind"]
                .as_str()
                .is_some_and(|k| k.ends_with("RoleBinding"))
        }) {
            for s in b["subjects"].as_array().expect("subjects") {
                let theirs =
                    s["kind"] != "ServiceAccount" || !ours.contains(&(&s["name"], &s["namespace"]));
                let review = b["metadata"]["name"] == "calicoctl-win-diags-review"
                    && s["name"] == "calico-node";
                assert!(
                    !theirs || review,
                    "{what}: {} binds {s}",
                    b["metadata"]["name"]
                );
            }
        }
    }
}
