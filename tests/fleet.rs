//! A fleet on an engine already in the cluster: `fleet plan`'s manifests checked against
//! system-upgrade-controller's own CRD schema (v0.19.0) and parsed by kubectl, calicoctl-win
//! reading the cluster as a pod's service account, and a rollout over several simulated nodes
//! driven the way system-upgrade-controller drives one.

mod support;

use serde_json::{Value, json};
use std::path::Path;
use support::fake_api::FakeApi;
use support::{cmd, json, on_node, tool};

const CONFIG: &str = "templates/calico-windows.yaml";

/// `fleet plan ARGS -o json`: exit code, the JSON document, stderr.
fn fleet_plan(args: &[&str]) -> (i32, Value, String) {
    let out = cmd()
        .args(["-o", "json", "fleet", "plan"])
        .args(args)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code().expect("code"), json(&out.stdout), stderr)
}

fn manifest<'a>(doc: &'a Value, kind: &str) -> &'a Value {
    doc["manifests"]
        .as_array()
        .expect("manifests")
        .iter()
        .find(|m| m["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in {doc}"))
}

/// The Plan CRD's openAPIV3Schema, from system-upgrade-controller v0.19.0.
fn plan_schema() -> Value {
    let text =
        std::fs::read_to_string(support::root().join("tests/fleet/suc-v0.19.0-plans-crd.yaml"))
            .expect("crd");
    let crd: Value = serde_saphyr::from_str(&text).expect("crd yaml");
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone()
}

/// Checks `v` against a structural OpenAPI v3 schema as the API server does for a custom
/// resource: every field known (or under x-kubernetes-preserve-unknown-fields), of its type,
/// required ones present, enums kept.
fn check(schema: &Value, v: &Value, at: &str, problems: &mut Vec<String>) {
    if schema["x-kubernetes-preserve-unknown-fields"] == true {
        return;
    }
    if schema["x-kubernetes-int-or-string"] == true {
        if !(v.is_i64() || v.is_string()) {
            problems.push(format!("{at}: not an int or a string: {v}"));
        }
        return;
    }
    if let Some(allowed) = schema["enum"].as_array()
        && !allowed.contains(v)
    {
        problems.push(format!("{at}: {v} is not one of {allowed:?}"));
    }
    let ok = match schema["type"].as_str() {
        Some("object") => {
            let Some(fields) = v.as_object() else {
                problems.push(format!("{at}: not an object"));
                return;
            };
            for r in schema["required"].as_array().into_iter().flatten() {
                if let Some(r) = r.as_str()
                    && !fields.contains_key(r)
                {
                    problems.push(format!("{at}: required field {r} is missing"));
                }
            }
            for (k, field) in fields {
                let sub = &schema["properties"][k];
                if !sub.is_null() {
                    check(sub, field, &format!("{at}.{k}"), problems);
                } else if schema["additionalProperties"].is_object() {
                    check(
                        &schema["additionalProperties"],
                        field,
                        &format!("{at}.{k}"),
                        problems,
                    );
                } else if schema["properties"].is_object() {
                    problems.push(format!("{at}: unknown field {k}"));
                }
            }
            true
        }
        Some("array") => {
            for (i, item) in v.as_array().into_iter().flatten().enumerate() {
                check(&schema["items"], item, &format!("{at}[{i}]"), problems);
            }
            v.is_array()
        }
        Some("string") => v.is_string(),
        Some("integer") => v.is_i64() || v.is_u64(),
        Some("boolean") => v.is_boolean(),
        Some("number") => v.is_number(),
        _ => true,
    };
    if !ok {
        problems.push(format!("{at}: {v} is not of type {}", schema["type"]));
    }
}

fn problems(schema: &Value, v: &Value) -> Vec<String> {
    let mut out = Vec::new();
    check(schema, v, "", &mut out);
    out
}

/// The Plan is what system-upgrade-controller v0.19 accepts: its CRD's schema finds nothing
/// unknown or mistyped, and the fields that decide the rollout are there (Windows nodes,
/// concurrency, the drain, the command with the config from the Secret).
#[test]
fn the_plan_matches_system_upgrade_controllers_own_schema() {
    let (code, doc, err) = fleet_plan(&[
        "--config",
        CONFIG,
        "--image",
        "registry.example.com/calicoctl-win:1.2.0",
        "--concurrency",
        "3",
        "--node-selector",
        "pool=win",
        "--drain-timeout",
        "15m",
    ]);
    assert_eq!(code, 0, "{err}");
    let plan = manifest(&doc, "Plan");
    let schema = plan_schema();
    assert_eq!(problems(&schema, plan), Vec::<String>::new(), "{plan}");

    // The checker finds what the API server would refuse.
    let mut bad = plan.clone();
    bad["spec"]["concurency"] = json!(3);
    bad["spec"]["drain"]["timeout"] = json!(true);
    bad["spec"]["upgrade"]
        .as_object_mut()
        .expect("upgrade")
        .remove("image");
    let found = problems(&schema, &bad);
    for p in [
        ".spec: unknown field concurency",
        ".spec.drain.timeout",
        "required field image",
    ] {
        assert!(found.iter().any(|f| f.contains(p)), "{p} not in {found:?}");
    }

    let spec = &plan["spec"];
    assert_eq!(spec["concurrency"], 3);
    let selector = spec["nodeSelector"]["matchExpressions"].to_string();
    assert!(
        selector.contains("kubernetes.io/os") && selector.contains("windows"),
        "{selector}"
    );
    assert!(selector.contains("pool"), "{selector}");
    assert_eq!(spec["drain"]["timeout"], "15m");
    assert_eq!(spec["drain"]["ignoreDaemonSets"], true);
    assert_eq!(spec["secrets"][0]["name"], "calicoctl-win-config");
    let args: Vec<&str> = spec["upgrade"]["args"]
        .as_array()
        .expect("args")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(args.contains(&"--drain=external"), "{args:?}");
    assert!(args.contains(&"reconfigure"), "{args:?}");

    // The Secret holds the config file as it is.
    let secret = manifest(&doc, "Secret");
    let text = std::fs::read_to_string(support::root().join(CONFIG)).expect("config");
    assert_eq!(secret["stringData"]["calico-windows.yaml"], text.as_str());
}

/// kubectl reads every manifest (the DaemonSet into Kubernetes' own Go types, which refuse a
/// mistyped field) without a cluster.
#[test]
fn kubectl_parses_the_manifests() {
    let Some(kubectl) = tool("kubectl") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("fleet.yaml");
    let (code, _, err) = fleet_plan(&[
        "--config",
        CONFIG,
        "--image",
        "registry.example.com/calicoctl-win:1.2.0",
        "--out-file",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 0, "{err}");
    let parsed = std::process::Command::new(&kubectl)
        .env_clear()
        .env("HOME", dir.path())
        .args(["annotate", "--local", "-o", "json", "checked=yes", "-f"])
        .arg(&out)
        .output()
        .expect("kubectl");
    assert!(
        parsed.status.success(),
        "{}",
        String::from_utf8_lossy(&parsed.stderr)
    );
    // One JSON document per manifest.
    let items: Vec<Value> = serde_json::Deserializer::from_slice(&parsed.stdout)
        .into_iter()
        .collect::<Result<_, _>>()
        .expect("json documents");
    let kinds: Vec<&str> = items.iter().filter_map(|i| i["kind"].as_str()).collect();
    assert_eq!(kinds, ["Secret", "Plan", "DaemonSet"]);
    for i in &items {
        assert_eq!(i["metadata"]["annotations"]["checked"], "yes", "{i}");
    }
    let ds = &items[2];
    assert_eq!(
        ds["spec"]["template"]["spec"]["securityContext"]["windowsOptions"]["hostProcess"],
        true
    );
    assert_eq!(
        ds["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"],
        2
    );
    assert_eq!(ds["spec"]["template"]["spec"]["hostNetwork"], true);
}

/// fleet plan needs a config file that loads, and names it and its problems otherwise.
#[test]
fn fleet_plan_needs_a_config_that_loads_and_valid_names() {
    let (code, doc, err) = fleet_plan(&["--image", "i"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--config"), "{err}");
    assert_eq!(doc["error"]["kind"], "usage");

    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "vxlan:\n  vni: 12\n").expect("write");
    let (code, doc, err) = fleet_plan(&["--config", bad.to_str().expect("utf-8"), "--image", "i"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        doc["error"]["problems"].to_string().contains("vxlan.vni"),
        "{doc}"
    );

    for args in [
        &["--namespace", "System"][..],
        &["--node-selector", "no-equals"],
        &["--image", "has space"],
    ] {
        let (code, _, err) =
            fleet_plan(&[&["--config", CONFIG, "--image", "i"][..], args].concat());
        assert_eq!(code, 2, "{args:?}: {err}");
    }
    let out = cmd()
        .args([
            "--set",
            "vxlan.vni=4097",
            "--config",
            CONFIG,
            "fleet",
            "plan",
            "--image",
            "i",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
}

/// A pod's service account mounted where a HostProcess container has it.
struct Pod {
    sandbox: tempfile::TempDir,
    home: tempfile::TempDir,
    port: String,
}

impl Pod {
    fn new(api: &FakeApi, token: &str) -> Self {
        let sandbox = tempfile::tempdir().expect("tempdir");
        let sa = sandbox
            .path()
            .join("var/run/secrets/kubernetes.io/serviceaccount");
        std::fs::create_dir_all(&sa).expect("mkdir");
        std::fs::write(sa.join("token"), token).expect("token");
        std::fs::write(sa.join("ca.crt"), &api.ca_pem).expect("ca");
        std::fs::write(sa.join("namespace"), "system-upgrade").expect("namespace");
        let port = api.url.rsplit(':').next().expect("port").to_owned();
        Self {
            sandbox,
            home: tempfile::tempdir().expect("tempdir"),
            port,
        }
    }

    /// The environment Kubernetes gives a HostProcess container.
    fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("HOME", self.home.path().display().to_string()),
            ("KUBERNETES_SERVICE_HOST", "127.0.0.1".into()),
            ("KUBERNETES_SERVICE_PORT", self.port.clone()),
            (
                "CONTAINER_SANDBOX_MOUNT_POINT",
                self.sandbox.path().display().to_string(),
            ),
        ]
    }

    fn sandbox(&self) -> &Path {
        self.sandbox.path()
    }
}

/// In a pod, with no kubeconfig, calicoctl-win reads the cluster as the pod's service account
/// (the token file under the HostProcess sandbox, the API server from the pod's environment);
/// a token the server refuses is reported, not taken for "no cluster".
#[test]
fn in_a_pod_the_service_account_reads_the_cluster() {
    let api = FakeApi::start();
    api.healthy_calico();
    let pod = Pod::new(&api, &api.token);
    let out = on_node()
        .envs(pod.env())
        .args(["-o", "json", "config", "show"])
        .output()
        .expect("runs");
    let doc = json(&out.stdout);
    assert_eq!(
        doc["cluster_kubeconfig"]["source"], "in-cluster service account",
        "{doc}"
    );
    assert_eq!(doc["cluster"]["read"], true, "{doc}");
    assert_eq!(doc["settings"]["vxlan.vni"]["source"], "cluster", "{doc}");

    let refused = Pod::new(&api, "not-a-token-the-server-knows");
    let out = on_node()
        .envs(refused.env())
        .args(["-o", "json", "config", "show"])
        .output()
        .expect("runs");
    let doc = json(&out.stdout);
    assert_eq!(doc["cluster"]["read"], false, "{doc}");
    assert!(
        doc["cluster"]["reason"].to_string().contains("401"),
        "{doc}"
    );

    // An explicit kubeconfig still wins.
    let admin = api.kubeconfig(pod.home.path(), None);
    let out = on_node()
        .envs(refused.env())
        .arg("--kubeconfig")
        .arg(&admin)
        .args(["-o", "json", "config", "show"])
        .output()
        .expect("runs");
    assert_eq!(json(&out.stdout)["cluster"]["read"], true);
}
