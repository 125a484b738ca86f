//! A fleet on an engine already in the cluster: `fleet plan`'s manifests checked against
//! system-upgrade-controller's own CRD schema (v0.19.0) and parsed by kubectl, calicoctl-win
//! reading the cluster as a pod's service account, and a rollout over several simulated nodes
//! driven the way system-upgrade-controller drives one.

use crate::support::fake_api::FakeApi;
use crate::support::{cmd, json, on_node, tool};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

pub(crate) const CONFIG: &str = "templates/calico-windows.yaml";

/// `fleet plan ARGS -o json`: exit code, the JSON document, stderr.
pub(crate) fn fleet_plan(args: &[&str]) -> (i32, Value, String) {
    let out = cmd()
        .args(["-o", "json", "fleet", "plan"])
        .args(args)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code().expect("code"), json(&out.stdout), stderr)
}

pub(crate) fn manifest<'a>(doc: &'a Value, kind: &str) -> &'a Value {
    doc["manifests"]
        .as_array()
        .expect("manifests")
        .iter()
        .find(|m| m["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in {doc}"))
}

/// The Plan CRD's openAPIV3Schema, from system-upgrade-controller v0.19.0.
pub(crate) fn plan_schema() -> Value {
    let text = fs_err::read_to_string(
        crate::support::root().join("tests/fleet/suc-v0.19.0-plans-crd.yaml"),
    )
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

pub(crate) fn problems(schema: &Value, v: &Value) -> Vec<String> {
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
    let text = fs_err::read_to_string(crate::support::root().join(CONFIG)).expect("config");
    assert_eq!(secret["stringData"]["calico-windows.yaml"], text.as_str());
}

/// The DaemonSet: on Windows nodes, HostProcess as SYSTEM, the node draining itself, Ready
/// only while `status` finds the node healthy, `maxUnavailable` the concurrency, and the
/// config's sha256 on the pod template, so that a new config rolls it and the same one does
/// not.
#[test]
fn the_daemonset_rolls_on_a_new_config_and_is_ready_only_when_healthy() {
    let ds = |config: &str| {
        let (code, doc, err) = fleet_plan(&[
            "--config",
            config,
            "--image",
            "i",
            "--engine",
            "daemonset",
            "--concurrency",
            "3",
        ]);
        assert_eq!(code, 0, "{err}");
        manifest(&doc, "DaemonSet").clone()
    };
    let first = ds(CONFIG);
    let pod = &first["spec"]["template"]["spec"];
    assert_eq!(pod["nodeSelector"]["kubernetes.io/os"], "windows");
    assert_eq!(
        pod["securityContext"]["windowsOptions"]["runAsUserName"],
        "NT AUTHORITY\\SYSTEM"
    );
    let command = pod["containers"][0]["command"].to_string();
    assert!(command.contains("\"reconfigure\",\"--drain\""), "{command}");
    let probe = pod["containers"][0]["readinessProbe"]["exec"]["command"].to_string();
    assert!(probe.contains("\"status\""), "{probe}");
    assert_eq!(
        first["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"],
        3
    );
    let sha = |d: &Value| {
        d["spec"]["template"]["metadata"]["annotations"]["calicoctl-win/config-sha256"].clone()
    };
    assert_eq!(sha(&ds(CONFIG)), sha(&first));
    let dir = tempfile::tempdir().expect("tempdir");
    let other = dir.path().join("other.yaml");
    let text = fs_err::read_to_string(crate::support::root().join(CONFIG)).expect("config");
    fs_err::write(&other, text.replace("vni: 4096", "vni: 4097")).expect("write");
    assert_ne!(sha(&ds(other.to_str().expect("utf-8"))), sha(&first));
}

/// The paths of `original` that are not in `round_trip`: fields a typed decode dropped, as
/// unknown to the type.
pub(crate) fn dropped_fields(
    original: &Value,
    round_trip: &Value,
    at: &str,
    out: &mut Vec<String>,
) {
    match (original, round_trip) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                match b.get(k) {
                    Some(w) => dropped_fields(v, w, &format!("{at}.{k}"), out),
                    None if !v.is_null() => out.push(format!("{at}.{k}")),
                    None => {}
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for (i, (v, w)) in a.iter().zip(b).enumerate() {
                dropped_fields(v, w, &format!("{at}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// A DaemonSet manifest read into Kubernetes' types (k8s-openapi, generated from Kubernetes'
/// OpenAPI): a mistyped field fails the decode, an unknown one is dropped by it and named.
pub(crate) fn daemonset_problems(manifest: &Value) -> Vec<String> {
    use k8s_openapi::api::apps::v1::DaemonSet;
    let typed: DaemonSet = match serde_json::from_value(manifest.clone()) {
        Ok(t) => t,
        Err(e) => return vec![e.to_string()],
    };
    let back = serde_json::to_value(&typed).expect("json");
    let mut out = Vec::new();
    dropped_fields(manifest, &back, "", &mut out);
    let mut out: Vec<String> = out
        .into_iter()
        .map(|p| format!("unknown field {p}"))
        .collect();
    out.extend(pod_spec_problems(&manifest["spec"]["template"]["spec"]));
    out
}

/// What kube-apiserver's validation of a pod template refuses that the types let through
/// (kubernetes/kubernetes `pkg/apis/core/validation/validation.go` at 000f26050b9b):
/// `validateContainerCommon`, each container's name a DNS-1123 label; `validateContainers` and
/// `validateInitContainers`, names unique among the init and regular containers;
/// `validateWindowsHostProcessPod`, a container's `hostProcess` (its own, else the pod's) the
/// same as the pod's where both are set, all containers HostProcess when one is, and
/// `hostNetwork` true then.
fn pod_spec_problems(pod: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let none = Vec::new();
    let list = |key: &str| pod[key].as_array().unwrap_or(&none).clone();
    let all: Vec<Value> = [list("initContainers"), list("containers")].concat();
    let pod_hp = pod["securityContext"]["windowsOptions"]["hostProcess"].as_bool();
    let mut seen = std::collections::BTreeSet::new();
    let mut host_process = 0;
    for c in &all {
        let name = c["name"].as_str().unwrap_or_default();
        if !calicoctl_win::k8s_name::is_label(name) {
            out.push(format!("container name {name:?} is not a DNS-1123 label"));
        }
        if !seen.insert(name.to_owned()) {
            out.push(format!("container name {name:?} is used twice"));
        }
        let own = c["securityContext"]["windowsOptions"]["hostProcess"].as_bool();
        if let (Some(p), Some(o)) = (pod_hp, own)
            && p != o
        {
            out.push(format!(
                "container {name}: hostProcess {o} differs from the pod's {p}"
            ));
        }
        if own.or(pod_hp) == Some(true) {
            host_process += 1;
        }
    }
    if host_process > 0 && host_process != all.len() {
        out.push("some containers are HostProcess and some are not".into());
    }
    if host_process > 0 && pod["hostNetwork"] != true {
        out.push("hostNetwork must be true in a pod with HostProcess containers".into());
    }
    out
}

/// kubectl's decode into Kubernetes' Go types (`set env --local`, which reads the objects as
/// a client does with no server): `None` when it accepts the file, else its error.
fn kubectl_decode(kubectl: &Path, home: &Path, file: &Path) -> Option<String> {
    let out = std::process::Command::new(kubectl)
        .env_clear()
        .env("HOME", home)
        .args(["set", "env", "--local", "-o", "json", "CHECKED=yes", "-f"])
        .arg(file)
        .output()
        .expect("kubectl");
    (!out.status.success()).then(|| String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The DaemonSet passes both decodes; a manifest with a mistyped field fails kubectl's, one
/// with an unknown field fails ours (kubectl 1.32's `--local` decode drops unknown fields
/// silently, and `annotate --local` accepted both); one that decodes but that kube-apiserver's
/// validation refuses (a container name, a HostProcess pod off the host's network) fails ours.
#[test]
fn the_daemonset_decodes_into_kubernetes_types_and_a_broken_one_does_not() {
    let (code, doc, err) = fleet_plan(&[
        "--config",
        CONFIG,
        "--image",
        "registry.example.com/calicoctl-win:1.2.0",
        "--log-containers",
    ]);
    assert_eq!(code, 0, "{err}");
    let ds = manifest(&doc, "DaemonSet").clone();
    assert_eq!(daemonset_problems(&ds), Vec::<String>::new());
    let mut unknown = ds.clone();
    unknown["spec"]["template"]["spec"]["hostNetwrk"] = json!(true);
    assert_eq!(
        daemonset_problems(&unknown),
        vec!["unknown field .spec.template.spec.hostNetwrk".to_owned()]
    );
    let mut mistyped = ds.clone();
    mistyped["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["periodSeconds"] =
        json!("10");
    assert!(!daemonset_problems(&mistyped).is_empty());
    // What kube-apiserver's validation refuses, which decodes: each is named.
    let broken = |change: &dyn Fn(&mut Value)| {
        let mut m = ds.clone();
        change(&mut m["spec"]["template"]["spec"]);
        daemonset_problems(&m)
    };
    for (change, said) in [
        (
            &(|p: &mut Value| p["containers"][1]["name"] = json!("kube_proxy"))
                as &dyn Fn(&mut Value),
            "container name \"kube_proxy\" is not a DNS-1123 label",
        ),
        (
            &|p: &mut Value| p["containers"][1]["name"] = json!("Felix"),
            "container name \"Felix\" is not a DNS-1123 label",
        ),
        (
            &|p: &mut Value| p["containers"][1]["name"] = p["containers"][0]["name"].clone(),
            "container name \"calicoctl-win\" is used twice",
        ),
        (
            &|p: &mut Value| p["hostNetwork"] = json!(false),
            "hostNetwork must be true in a pod with HostProcess containers",
        ),
        (
            &|p: &mut Value| {
                p["containers"][1]["securityContext"] =
                    json!({"windowsOptions": {"hostProcess": false}});
            },
            "container node: hostProcess false differs from the pod's true",
        ),
    ] {
        let found = broken(change);
        assert!(found.iter().any(|f| f == said), "{said}: {found:?}");
    }
    let Some(kubectl) = tool("kubectl") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, m, fails) in [("ok", &ds, false), ("mistyped", &mistyped, true)] {
        let file = dir.path().join(format!("{name}.json"));
        fs_err::write(&file, m.to_string()).expect("write");
        let said = kubectl_decode(&kubectl, dir.path(), &file);
        assert_eq!(said.is_some(), fails, "{name}: {said:?}");
    }
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
    let parsed = assert_cmd::Command::new(&kubectl)
        .env_clear()
        .env("HOME", dir.path())
        .args(["annotate", "--local", "-o", "json", "checked=yes", "-f"])
        .arg(&out)
        .assert()
        .success();
    // One JSON document per manifest.
    let items: Vec<Value> = serde_json::Deserializer::from_slice(&parsed.get_output().stdout)
        .into_iter()
        .collect::<Result<_, _>>()
        .expect("json documents");
    let kinds: Vec<&str> = items.iter().filter_map(|i| i["kind"].as_str()).collect();
    assert_eq!(
        kinds,
        [
            &super::verify_rights::ACCOUNT_KINDS[..],
            &[
                "ValidatingAdmissionPolicy",
                "ValidatingAdmissionPolicyBinding",
                "Secret",
                "Plan",
                "DaemonSet"
            ]
        ]
        .concat()
    );
    for i in &items {
        assert_eq!(i["metadata"]["annotations"]["checked"], "yes", "{i}");
    }
    let ds = &items[13];
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
    fs_err::write(&bad, "vxlan:\n  vni: 12\n").expect("write");
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
pub(crate) struct Pod {
    sandbox: tempfile::TempDir,
    home: tempfile::TempDir,
    port: String,
}

impl Pod {
    pub(crate) fn new(api: &FakeApi, token: &str) -> Self {
        let sandbox = tempfile::tempdir().expect("tempdir");
        let sa = sandbox
            .path()
            .join("var/run/secrets/kubernetes.io/serviceaccount");
        fs_err::create_dir_all(&sa).expect("mkdir");
        fs_err::write(sa.join("token"), token).expect("token");
        fs_err::write(sa.join("ca.crt"), &api.ca_pem).expect("ca");
        fs_err::write(sa.join("namespace"), "system-upgrade").expect("namespace");
        let port = api.url.rsplit(':').next().expect("port").to_owned();
        Self {
            sandbox,
            home: tempfile::tempdir().expect("tempdir"),
            port,
        }
    }

    /// The environment Kubernetes gives a HostProcess container.
    pub(crate) fn env(&self) -> Vec<(&'static str, String)> {
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

    pub(crate) fn sandbox(&self) -> &Path {
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

/// A Windows machine of the fleet: a simulated host whose kubelet runs as node `name`.
pub(crate) struct Machine {
    pub(crate) name: String,
    pub(crate) node: crate::support::Node,
}

/// A container's command, which cmd.exe runs (`cmd.exe /c ...`).
pub(crate) fn cmd_exe_command(command: &Value) -> Vec<&str> {
    let command: Vec<&str> = command
        .as_array()
        .expect("command")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(command[..2], ["cmd.exe", "/c"], "{command:?}");
    command
}

/// The fleet's config moved to VNI 4097 (in a temp dir's `config.yaml`) and the document of
/// `fleet plan` of it with `more` arguments, which passed.
pub(crate) fn plan_to_vni_4097(more: &[&str]) -> (tempfile::TempDir, PathBuf, Value) {
    let template = fs_err::read_to_string(crate::support::root().join(CONFIG)).expect("config");
    let config = template.replace("vni: 4096", "vni: 4097");
    assert_ne!(config, template);
    let cfg_dir = tempfile::tempdir().expect("tempdir");
    let cfg = cfg_dir.path().join("config.yaml");
    fs_err::write(&cfg, &config).expect("write");
    let image = "registry.example.com/calicoctl-win:1.2.0";
    let args = ["--config", cfg.to_str().expect("utf-8"), "--image", image];
    let (code, doc, err) = fleet_plan(&[&args[..], more].concat());
    assert_eq!(code, 0, "{err}");
    (cfg_dir, cfg, doc)
}

/// A cluster with Calico, an admin kubeconfig (in the temp dir) and Windows machines of these
/// names, each installed by the admin.
pub(crate) fn installed_fleet(
    names: &[&str],
) -> (FakeApi, tempfile::TempDir, PathBuf, Vec<Machine>) {
    let api = FakeApi::start();
    api.healthy_calico();
    let admin_dir = tempfile::tempdir().expect("tempdir");
    let admin = api.kubeconfig(admin_dir.path(), None);
    let machines: Vec<Machine> = names.iter().map(|n| Machine::new(&api, n)).collect();
    for m in &machines {
        m.install(&admin, &[]);
    }
    (api, admin_dir, admin, machines)
}

impl Machine {
    pub(crate) fn new(api: &FakeApi, name: &str) -> Self {
        let m = Self {
            name: name.to_owned(),
            node: crate::support::Node::on(api).kubelet(name).build(),
        };
        // Its address as kubelet posts it: the simulated host's (10.0.0.5 on "Ethernet").
        let mut node = json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": format!("uid-{name}"),
                "labels": {"kubernetes.io/os": "windows"}}, "spec": {},
            "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.5"}]}});
        if let Some(existing) = api.get(&format!("/api/v1/nodes/{name}")) {
            node["metadata"]["uid"] = existing["metadata"]["uid"].clone();
        }
        api.put(&format!("/api/v1/nodes/{name}"), node);
        api.set_node_ready(name, "True", "kubelet is posting ready status");
        api.put_pod("default", &format!("web-{name}"), name, Some("ReplicaSet"));
        api.put_pod(
            "kube-system",
            &format!("calico-node-{name}"),
            name,
            Some("DaemonSet"),
        );
        m
    }

    pub(crate) fn sim(&self) -> PathBuf {
        self.node.sim()
    }

    /// `calicoctl-win ARGS -o json` on this machine with the admin kubeconfig.
    pub(crate) fn run(&self, admin: &Path, args: &[&str]) -> (i32, Value, String) {
        self.node.run_as(admin, args)
    }

    pub(crate) fn install(&self, admin: &Path, extra: &[&str]) {
        let zip =
            crate::support::release::release_zip(self.node.dir.path(), "3.30.2", "calico-node.exe");
        let zip = zip.display().to_string();
        let (code, _, err) = self.run(
            admin,
            &[&["install", "--release-zip", &zip][..], extra].concat(),
        );
        assert_eq!(code, 0, "install on {}: {err}", self.name);
    }

    /// The VSID of the Calico network on this machine.
    pub(crate) fn calico_vsid(&self) -> Option<u64> {
        self.node.calico_vsid()
    }
}

pub(crate) fn cordoned(api: &FakeApi, node: &str) -> bool {
    api.get(&format!("/api/v1/nodes/{node}")).expect("node")["spec"]["unschedulable"] == true
}

pub(crate) fn set_cordon(api: &FakeApi, node: &str, on: bool) {
    let path = format!("/api/v1/nodes/{node}");
    let mut n = api.get(&path).expect("node");
    n["spec"]["unschedulable"] = json!(on);
    api.put(&path, n);
}

/// Where system-upgrade-controller v0.19.0 mounts a Plan's secret in the job's container:
/// `pkg/upgrade/container/container.go`, `WithSecrets`, lines 19-24 (unchanged on its main
/// branch): no path is `/run/system-upgrade/secrets/<name>`; a path that does not start with
/// `/` is joined under `/run/system-upgrade/secrets` by Go's `filepath.Join` on the Linux
/// controller (which only splits on `/`).
fn suc_secret_mount_path(name: &str, path: &str) -> String {
    if path.is_empty() {
        format!("/run/system-upgrade/secrets/{name}")
    } else if !path.starts_with('/') {
        format!("/run/system-upgrade/secrets/{path}")
    } else {
        path.to_owned()
    }
}

/// The container path kubelet on Windows gives a mount path: Kubernetes v1.33
/// `pkg/volume/util/util.go`, `MakeAbsolutePath("windows", p)`: a path with a colon is kept,
/// one that starts with `/` or `\` gets `c:`, any other `c:\`.
fn kubelet_windows_path(p: &str) -> String {
    if p.contains(':') {
        p.to_owned()
    } else if p.starts_with(['/', '\\']) {
        format!("c:{p}")
    } else {
        format!("c:\\{p}")
    }
}

/// Where a HostProcess container sees a volume mounted at the Windows path `container_path`:
/// under `%CONTAINER_SANDBOX_MOUNT_POINT%` with the drive letter dropped, on containerd 1.6
/// (links) and 1.7 (bind mounts: microsoft/hcsshim#1443, "HostProcess containers: volume
/// mounts"). `None` for a path no container can mount (a colon past the drive: CreateContainer
/// fails, and so does the job).
fn host_process_view(sandbox: &Path, container_path: &str) -> Option<PathBuf> {
    let (drive, rest) = container_path.split_at(2.min(container_path.len()));
    if !drive.ends_with(':') || rest.contains(':') {
        return None;
    }
    Some(
        rest.split(['/', '\\'])
            .filter(|p| !p.is_empty())
            .fold(sandbox.to_owned(), |p, part| p.join(part)),
    )
}

/// Mounts the Plan's secrets (their `stringData`) into the pod's sandbox as the controller,
/// kubelet and containerd would; `false` when one cannot be mounted (the job then fails to
/// start).
pub(crate) fn mount_plan_secrets(plan: &Value, secrets: &[&Value], pod: &Pod) -> bool {
    for s in plan["spec"]["secrets"].as_array().expect("secrets") {
        let name = s["name"].as_str().expect("name");
        let path = s["path"].as_str().unwrap_or_default();
        let mount = kubelet_windows_path(&suc_secret_mount_path(name, path));
        let Some(dir) = host_process_view(pod.sandbox(), &mount) else {
            return false;
        };
        let secret = secrets
            .iter()
            .find(|x| x["metadata"]["name"] == name)
            .expect("the Plan's secret is among the manifests");
        fs_err::create_dir_all(&dir).expect("mkdir");
        for (key, value) in secret["stringData"].as_object().expect("stringData") {
            fs_err::write(dir.join(key), value.as_str().expect("text")).expect("mount");
        }
    }
    true
}

#[test]
fn the_mount_rules_follow_their_sources() {
    // system-upgrade-controller's join, kubelet's drive, containerd's sandbox view.
    assert_eq!(
        suc_secret_mount_path("cfg", r"C:\calicoctl-win"),
        r"/run/system-upgrade/secrets/C:\calicoctl-win"
    );
    assert_eq!(
        suc_secret_mount_path("cfg", ""),
        "/run/system-upgrade/secrets/cfg"
    );
    assert_eq!(
        suc_secret_mount_path("cfg", "/calicoctl-win"),
        "/calicoctl-win"
    );
    assert_eq!(kubelet_windows_path("/calicoctl-win"), "c:/calicoctl-win");
    assert_eq!(kubelet_windows_path(r"D:\x"), r"D:\x");
    let sandbox = Path::new("/sandbox");
    assert_eq!(
        host_process_view(sandbox, "c:/calicoctl-win"),
        Some(PathBuf::from("/sandbox/calicoctl-win"))
    );
    assert_eq!(
        host_process_view(sandbox, r"c:/run/system-upgrade/secrets/C:\calicoctl-win"),
        None
    );
}

/// What the driver saw.
#[derive(Default)]
pub(crate) struct Rollout {
    /// Nodes whose job exited 0, in order.
    pub(crate) done: Vec<String>,
    /// Nodes whose job failed, with the JSON it printed.
    pub(crate) failed: Vec<(String, Value)>,
    /// The most nodes cordoned at any time (sampled from the API server).
    pub(crate) most_out: usize,
    /// Nodes that stopped matching the Plan's selector while their job ran: the controller
    /// would have deleted that job as running out of turn and started the next node
    /// (`pkg/upgrade/handle_batch.go`, `pkg/upgrade/plan/plan.go` `SelectConcurrentNodes`).
    pub(crate) left_selector: Vec<String>,
}

/// A driver that behaves as system-upgrade-controller v0.19 does with the Plan
/// (`pkg/upgrade/handle_upgrade.go`, `pkg/upgrade/job/job.go`): it selects the nodes matching
/// `nodeSelector` that do not carry the plan's done label, runs at most `concurrency` jobs at
/// once, and for each cordons and drains the node (kubectl drain --ignore-daemonsets) when the
/// Plan has a `drain` (or `cordon`), runs the upgrade container, and on exit code 0 labels the
/// node done and uncordons it if the Plan cordoned or drained (`handle_batch.go`: `if
/// node.Spec.Unschedulable && (plan.Spec.Cordon || plan.Spec.Drain != nil)`). A failed job
/// leaves its node in `status.applying`, so it holds its slot: once every slot is held by a
/// failure, nothing more starts. While a job runs, its node is checked against the selector:
/// the controller keeps only matching nodes in `applying` and deletes the job of one that left
/// (recorded in `left_selector`).
///
/// The upgrade container runs on the node's simulated host as a HostProcess container would:
/// its `cmd.exe /c` command line with `%CONTAINER_SANDBOX_MOUNT_POINT%` expanded to the pod's
/// sandbox, which holds the Secret at the Plan's path and the service account the job reads the
/// cluster with.
pub(crate) fn drive(api: &FakeApi, plan: &Value, machines: &[Machine], pod: &Pod) -> Rollout {
    let spec = &plan["spec"];
    let concurrency =
        usize::try_from(spec["concurrency"].as_u64().expect("concurrency")).expect("usize");
    let done_label = format!(
        "plan.upgrade.cattle.io/{}",
        plan["metadata"]["name"].as_str().expect("name")
    );
    let selects = |m: &Machine| {
        let node = api.get(&format!("/api/v1/nodes/{}", m.name)).expect("node");
        let labels = &node["metadata"]["labels"];
        spec["nodeSelector"]["matchExpressions"]
            .as_array()
            .expect("expressions")
            .iter()
            .all(|e| {
                // Label selector requirements as k8s.io/apimachinery `labels.Requirement`
                // matches them.
                let have = &labels[e["key"].as_str().expect("key")];
                let listed = e["values"]
                    .as_array()
                    .is_some_and(|v| !have.is_null() && v.contains(have));
                match e["operator"].as_str() {
                    Some("In") => listed,
                    Some("NotIn") => !listed,
                    Some("Exists") => !have.is_null(),
                    Some("DoesNotExist") => have.is_null(),
                    other => panic!("operator {other:?}"),
                }
            })
            && labels[&done_label].is_null()
    };
    let mut queue: std::collections::VecDeque<&Machine> =
        machines.iter().filter(|m| selects(m)).collect();
    let command = cmd_exe_command(&spec["upgrade"]["command"]);
    assert!(command[2].ends_with("\\calicoctl-win.exe"), "{command:?}");
    let expand = |a: &str| {
        if a.contains("%CONTAINER_SANDBOX_MOUNT_POINT%") {
            a.replace(
                "%CONTAINER_SANDBOX_MOUNT_POINT%",
                &pod.sandbox().display().to_string(),
            )
            .replace('\\', "/")
        } else {
            a.to_owned()
        }
    };
    let args: Vec<String> = spec["upgrade"]["args"]
        .as_array()
        .expect("args")
        .iter()
        .filter_map(Value::as_str)
        .map(expand)
        .collect();

    let engine_cordons = !spec["drain"].is_null() || spec["cordon"] == true;
    let finished = std::sync::atomic::AtomicBool::new(false);
    let running_now = std::sync::Mutex::new(std::collections::BTreeSet::<String>::new());
    let mut ended_outside = std::collections::BTreeSet::new();
    let mut out = Rollout::default();
    std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let mut most = 0;
            let mut left = std::collections::BTreeSet::new();
            loop {
                // Read before the look: the last look comes after the drive ended and sees
                // what it left (failed nodes stay cordoned), however late this thread ran.
                let last = finished.load(std::sync::atomic::Ordering::SeqCst);
                // One look at all nodes under the server's one lock: read one by one, a node
                // uncordoned as its job ended and the next one cordoned as its job began
                // could both be counted (seen once in CI).
                let out_now = {
                    let state = api.lock();
                    let out = |m: &&Machine| {
                        state
                            .objects
                            .get(&format!("/api/v1/nodes/{}", m.name))
                            .is_some_and(|n| n["spec"]["unschedulable"] == true)
                    };
                    machines.iter().filter(out).count()
                };
                most = most.max(out_now);
                // The set stays locked while its nodes are looked at: the driver takes a
                // node out of it (under this lock) before it labels the node done, so a node
                // looked at here is still running, never one just marked done.
                let now = running_now.lock().expect("running");
                for m in machines.iter().filter(|m| now.contains(&m.name)) {
                    if !selects(m) {
                        left.insert(m.name.clone());
                    }
                }
                drop(now);
                if last {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            (most, left)
        });
        let (tx, rx) = std::sync::mpsc::channel();
        let (mut running, mut held) = (0, 0);
        loop {
            while running + held < concurrency
                && let Some(m) = queue.pop_front()
            {
                running += 1;
                running_now.lock().expect("running").insert(m.name.clone());
                let tx = tx.clone();
                let args = &args;
                s.spawn(move || {
                    // The controller's cordon and drain containers.
                    if engine_cordons {
                        set_cordon(api, &m.name, true);
                    }
                    let pods: Vec<String> = api
                        .lock()
                        .objects
                        .iter()
                        .filter(|(k, p)| {
                            !spec["drain"].is_null()
                                && k.contains("/pods/")
                                && p["spec"]["nodeName"] == m.name.as_str()
                                && p["metadata"]["ownerReferences"][0]["kind"] != "DaemonSet"
                        })
                        .map(|(k, _)| k.clone())
                        .collect();
                    for p in pods {
                        api.remove(&p);
                    }
                    // The upgrade container, with the environment the controller gives it
                    // (container.go v0.19.0: `New`, lines 100-118, `WithPlanEnvironment`,
                    // lines 64-77).
                    let plan_name = plan["metadata"]["name"].as_str().expect("name");
                    let suc_env = [
                        ("SYSTEM_UPGRADE_NODE_NAME", m.name.clone()),
                        (
                            "SYSTEM_UPGRADE_POD_NAME",
                            format!("apply-{plan_name}-on-{}", m.name),
                        ),
                        ("SYSTEM_UPGRADE_POD_UID", format!("uid-{}", m.name)),
                        ("SYSTEM_UPGRADE_PLAN_NAME", plan_name.to_owned()),
                        ("SYSTEM_UPGRADE_PLAN_LATEST_HASH", "hash".to_owned()),
                        (
                            "SYSTEM_UPGRADE_PLAN_LATEST_VERSION",
                            spec["version"].as_str().unwrap_or_default().to_owned(),
                        ),
                    ];
                    // cmd.exe's `&&`: the next command runs only when the one before
                    // exited 0, and the line's exit code is the last one run's (Microsoft's
                    // cmd docs, "command1 && command2"). After `&&` comes calicoctl-win.exe
                    // again.
                    let (mut code, mut doc) = (0, Value::Null);
                    for (i, part) in args.split(|a| a == "&&").enumerate() {
                        let part = if i == 0 { part } else { &part[1..] };
                        // cmd.exe expands `%NAME%` from the container's environment.
                        let part: Vec<String> = part
                            .iter()
                            .map(|a| {
                                suc_env
                                    .iter()
                                    .fold(a.clone(), |a, (k, v)| a.replace(&format!("%{k}%"), v))
                            })
                            .collect();
                        let out = cmd()
                            .envs(pod.env())
                            .envs(suc_env.clone())
                            .args(&part)
                            .arg("--sim-host")
                            .arg(m.sim())
                            // The job's verify at the scripted dataplane's pace.
                            .args(["--sim-pace", "10"])
                            .output()
                            .expect("job");
                        code = out.status.code().expect("code");
                        doc = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
                        if code != 0 {
                            break;
                        }
                    }
                    tx.send((m, code, doc)).expect("send");
                });
            }
            if running == 0 {
                break;
            }
            let (m, code, doc) = rx.recv().expect("a job ends");
            running -= 1;
            // Checked again as the job ends (before its node is marked done), so that a node
            // that left the selector late in its job is seen whatever the sampler's timing.
            if !selects(m) {
                ended_outside.insert(m.name.clone());
            }
            running_now.lock().expect("running").remove(&m.name);
            if code == 0 {
                if engine_cordons {
                    set_cordon(api, &m.name, false);
                }
                let path = format!("/api/v1/nodes/{}", m.name);
                let mut node = api.get(&path).expect("node");
                node["metadata"]["labels"][&done_label] = json!("hash");
                api.put(&path, node);
                out.done.push(m.name.clone());
            } else {
                held += 1;
                out.failed.push((m.name.clone(), doc));
            }
        }
        finished.store(true, std::sync::atomic::Ordering::SeqCst);
        let (most, mut left) = sampler.join().expect("sampler");
        left.extend(ended_outside);
        out.most_out = most;
        out.left_selector = left.into_iter().collect();
    });
    out
}

/// A VNI change rolled over five Windows nodes by the Plan `fleet plan` writes, two at a time.
/// Two nodes joined without Calico: each job there fails, leaves its node cordoned with the
/// error as JSON and holds its slot, so the rollout stops with two nodes not started. Once
/// those two have Calico and are uncordoned, the controller goes on and every node converges:
/// the new VSID, healthy, uncordoned, the same config hash. Never more than two nodes out.
#[test]
fn a_rollout_by_the_plan_changes_two_nodes_at_a_time_and_stops_at_failures() {
    let api = FakeApi::start();
    api.healthy_calico();
    let admin_dir = tempfile::tempdir().expect("tempdir");
    let admin = api.kubeconfig(admin_dir.path(), None);
    let names = ["win-1", "win-2", "win-3", "win-4", "win-5"];
    let machines: Vec<Machine> = names.iter().map(|n| Machine::new(&api, n)).collect();
    for m in machines
        .iter()
        .filter(|m| !["win-2", "win-3"].contains(&m.name.as_str()))
    {
        m.install(&admin, &[]);
        assert_eq!(m.calico_vsid(), Some(4096));
    }

    // The new config, in the Secret the Plan mounts; the cluster moves to VNI 4097 first.
    let (_cfg_dir, cfg, doc) = plan_to_vni_4097(&["--engine", "system-upgrade-controller"]);
    let plan = manifest(&doc, "Plan").clone();
    let secret = manifest(&doc, "Secret");
    // The jobs run as the fleet's service account, with only the roles the manifests give it
    // (the fake API server enforces them as kube-apiserver does).
    assert_eq!(plan["spec"]["serviceAccountName"], "calicoctl-win-fleet");
    for m in doc["manifests"].as_array().expect("manifests") {
        api.apply(m);
    }
    let (_sa_dir, fleet_kubeconfig) =
        crate::support::account(&api, "system-upgrade", "calicoctl-win-fleet");
    let pod = Pod::new(&api, &crate::support::token_in(&fleet_kubeconfig));
    // The Secret where the job's container sees it, by the controller's, kubelet's and
    // containerd's rules (a Plan whose path none of them resolves fails here).
    assert!(
        mount_plan_secrets(&plan, &[secret], &pod),
        "the Plan's secret cannot be mounted: {}",
        plan["spec"]["secrets"]
    );
    api.set_felix_vni(4097);

    let first = drive(&api, &plan, &machines, &pod);
    // Both failed nodes stay out, each holding a slot: two out, and no more.
    assert_eq!(first.most_out, 2);
    assert!(first.most_out <= 2, "{} nodes out at once", first.most_out);
    assert_eq!(first.done, ["win-1"]);
    let failed: Vec<&str> = first.failed.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(failed, ["win-2", "win-3"]);
    for (node, doc) in &first.failed {
        assert_eq!(doc["error"]["kind"], "not-installed", "{node}: {doc}");
        assert!(cordoned(&api, node), "{node} stays cordoned");
    }
    for m in &machines[3..] {
        assert!(!cordoned(&api, &m.name), "{} was never started", m.name);
        assert_eq!(m.calico_vsid(), Some(4096), "{} untouched", m.name);
    }
    assert_eq!(machines[0].calico_vsid(), Some(4097));

    // The operator installs Calico on the two and uncordons them; the controller goes on.
    for m in &machines[1..3] {
        m.install(&admin, &["--set", "vxlan.vni=4097"]);
        set_cordon(&api, &m.name, false);
    }
    let second = drive(&api, &plan, &machines, &pod);
    assert!(
        second.most_out <= 2,
        "{} nodes out at once",
        second.most_out
    );
    assert!(second.failed.is_empty(), "{:?}", second.failed);
    assert_eq!(second.done.len(), 4, "{:?}", second.done);
    let cfg = cfg.to_str().expect("utf-8");
    for m in &machines {
        assert_eq!(m.calico_vsid(), Some(4097), "{}", m.name);
        assert!(!cordoned(&api, &m.name), "{}", m.name);
        let (code, doc, err) = m.run(&admin, &["status"]);
        assert_eq!(code, 0, "{}: {err} {doc}", m.name);
        // Converged: the fleet's config has nothing left to change on the node.
        let (code, doc, err) = m.run(&admin, &["--config", cfg, "reconfigure", "--dry-run"]);
        assert_eq!(code, 0, "{}: {err}", m.name);
        assert_eq!(doc["change"], "none", "{}: {doc}", m.name);
        let node = api.get(&format!("/api/v1/nodes/{}", m.name)).expect("node");
        let annotations = &node["metadata"]["annotations"];
        assert_eq!(
            annotations["calicoctl-win/calico-version"], "3.30.2",
            "{}",
            m.name
        );
        assert!(
            annotations["calicoctl-win/config-hash"].is_string(),
            "{}",
            m.name
        );
    }
}

/// A config with one node's settings (what `config import-ps1` of a quickstart config.ps1
/// writes) is refused, naming them; `--image` without a tag runs the same tag in the Plan and
/// the DaemonSet; `--version` and `--node-selector` are checked as a tag and a label.
#[test]
fn fleet_plan_refuses_per_node_settings_and_runs_one_tag_everywhere() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("calico-windows.yaml");
    let config_arg = config.to_str().expect("utf-8").to_owned();
    for per_node in ["node:\n  name: win-7\n", "node:\n  ip: 10.0.0.7\n"] {
        fs_err::write(&config, per_node).expect("write");
        let (code, doc, err) = fleet_plan(&["--config", &config_arg, "--image", "r/x:1"]);
        assert_eq!(code, 2, "{per_node}: {err}");
        let key = if per_node.contains("name") {
            "node.name"
        } else {
            "node.ip"
        };
        assert!(doc["error"]["message"].to_string().contains(key), "{doc}");
    }
    fs_err::write(&config, "node:\n  ip: autodetect\n").expect("write");
    let (code, doc, err) = fleet_plan(&[
        "--config",
        &config_arg,
        "--image",
        "registry:5000/x",
        "--version",
        "1.4.0",
    ]);
    assert_eq!(code, 0, "{err}");
    let plan = manifest(&doc, "Plan")["spec"]["upgrade"]["image"].clone();
    let ds =
        manifest(&doc, "DaemonSet")["spec"]["template"]["spec"]["containers"][0]["image"].clone();
    assert_eq!(plan, "registry:5000/x:1.4.0");
    assert_eq!(ds, plan);
    let (_, doc, _) = fleet_plan(&["--config", &config_arg, "--image", "r/x@sha256:abc"]);
    assert_eq!(
        manifest(&doc, "Plan")["spec"]["upgrade"]["image"],
        "r/x@sha256:abc"
    );
    for bad in [
        &["--version", "1.0\n; rm -rf /"][..],
        &["--version", "-1"],
        &["--node-selector", "kubernetes.io/os=windows; rm -rf /"],
        &["--node-selector", "a b=c"],
        &["--image", "r/x:1\nkind: Pod"],
    ] {
        let mut args = vec!["--config", config_arg.as_str(), "--image", "r/x"];
        args.extend_from_slice(bad);
        let (code, _, err) = fleet_plan(&args);
        assert_eq!(code, 2, "{bad:?}: {err}");
    }
}

/// With Calico in kube-system (a manifest install; docs/commands/fleet.md's example), each
/// object is written once: `kubectl apply` would keep only the last of two of one name.
#[test]
fn fleet_rbac_for_calico_in_kube_system_writes_each_object_once() {
    for identity in ["installer", "fleet"] {
        let doc = crate::support::json_of(cmd().args([
            "-o",
            "json",
            "fleet",
            "rbac",
            "--calico-namespace",
            "kube-system",
            "--identity",
            identity,
        ]));
        let mut seen = std::collections::BTreeSet::new();
        for m in doc["manifests"].as_array().expect("manifests") {
            let key = format!(
                "{}/{}/{}",
                m["kind"], m["metadata"]["namespace"], m["metadata"]["name"]
            );
            assert!(seen.insert(key.clone()), "{identity}: {key} twice");
        }
    }
}

/// Now, as the API server writes a time.
fn now_text() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    jiff::Timestamp::from_second(secs as i64)
        .expect("time")
        .to_string()
}

/// A Windows node as install annotates it and CalicoNode sets its condition.
fn annotated(api: &FakeApi, name: &str, hash: &str, calico: Option<(&str, &str)>) {
    let mut node = json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "uid": format!("uid-{name}"),
            "labels": {"kubernetes.io/os": "windows"},
            "annotations": {"calicoctl-win/version": "0.1.0",
                "calicoctl-win/calico-version": "3.30.2", "calicoctl-win/config-hash": hash}},
        "spec": {}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}});
    if let Some((status, message)) = calico {
        let beat = now_text();
        node["status"]["conditions"]
            .as_array_mut()
            .expect("conditions")
            .push(
                json!({"type": "CalicoWindowsReady", "status": status, "message": message,
                "reason": if status == "True" { "CalicoHealthy" } else { "CalicoDegraded" },
                "lastHeartbeatTime": beat}),
            );
        // The codes as CalicoNode writes them beside the condition, with its heartbeat.
        let codes: Vec<&str> = if message.contains("is stuck") {
            vec!["endpoint-stuck"]
        } else {
            vec![]
        };
        node["metadata"]["annotations"]["calicoctl-win/finding-codes"] =
            json!(json!({"heartbeat": beat, "codes": codes}).to_string());
    }
    api.put(&format!("/api/v1/nodes/{name}"), node);
}

#[test]
fn fleet_status_lists_every_windows_node_and_names_those_that_differ() {
    let api = FakeApi::start();
    let dir = tempfile::tempdir().expect("tmp");
    let admin = api.kubeconfig(dir.path(), None);
    let same = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    annotated(&api, "win-1", same, Some(("True", "healthy")));
    annotated(
        &api,
        "win-2",
        same,
        Some((
            "False",
            "HNS endpoint x_Calico (10.244.1.7) is stuck [endpoint-stuck]",
        )),
    );
    annotated(
        &api,
        "win-3",
        "sha256:bbbbbbbbbbbbbbbb",
        Some(("True", "healthy")),
    );
    annotated(&api, "win-4", same, None);
    // A CalicoNode that predates codes as data: an older plain list, not written with the
    // condition's heartbeat.
    annotated(
        &api,
        "win-5",
        same,
        Some(("False", "CalicoFelix is Stopped [service-not-running]")),
    );
    let mut n = api.get("/api/v1/nodes/win-5").expect("win-5");
    n["metadata"]["annotations"]["calicoctl-win/finding-codes"] =
        json!(json!(["service-not-running"]).to_string());
    api.put("/api/v1/nodes/win-5", n);
    api.put(
        "/api/v1/nodes/linux-1",
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "linux-1",
            "labels": {"kubernetes.io/os": "linux"}}, "spec": {}}),
    );
    let run = || {
        let out = cmd()
            .args(["fleet", "status", "-o", "json", "--kubeconfig"])
            .arg(&admin)
            .output()
            .expect("runs");
        (out.status.code().expect("code"), json(&out.stdout))
    };
    let (code, doc) = run();
    assert_eq!(code, 1, "{doc}");
    let names: Vec<&str> = doc["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| n["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        names,
        ["win-1", "win-2", "win-3", "win-4", "win-5"],
        "{doc}"
    );
    // Its fix is the finding's remedy, beside its sentence, not folded into it.
    let unknown: Vec<&Value> = doc["nodes"][4]["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .filter(|f| f["code"] == "codes-unknown")
        .collect();
    assert_eq!(unknown.len(), 1, "{doc}");
    assert_eq!(
        unknown[0]["remedy"], "upgrade calicoctl-win on the node",
        "{doc}"
    );
    assert!(
        !unknown[0]["message"].to_string().contains("upgrade"),
        "{doc}"
    );
    assert_eq!(doc["config_hash"], same);
    assert_eq!(doc["nodes"][0]["calico"], "3.30.2");
    assert_eq!(doc["nodes"][1]["calico_ready"], "False");
    assert_eq!(doc["nodes"][1]["codes"], json!(["endpoint-stuck"]), "{doc}");
    assert_eq!(doc["findings"], json!({"endpoint-stuck": 1}), "{doc}");
    // The heartbeats were written a moment ago: their age (0 s, or 1 s across a second's
    // turn) is no part of the document's shape.
    let mut shape = doc.clone();
    for n in shape["nodes"].as_array_mut().into_iter().flatten() {
        if n["heartbeat_age_seconds"]
            .as_i64()
            .is_some_and(|a| (0..60).contains(&a))
        {
            n["heartbeat_age_seconds"] = json!("[AGE]");
        }
    }
    crate::support::documents::snapshot_in(dir.path(), "fleet-status", &shape);
    let problems = doc["problems"].to_string();
    for needle in [
        "Calico on node win-2 is degraded: HNS endpoint x_Calico (10.244.1.7) is stuck",
        "node win-3 has another (sha256:bbbbbbbb) config",
        "node win-4 has no CalicoWindowsReady condition",
    ] {
        assert!(problems.contains(needle), "{needle}: {problems}");
    }
    assert!(!problems.contains("win-1"), "{problems}");

    // A CalicoNode rolled back to one that predates codes as data leaves its old annotation,
    // not written with the condition's heartbeat now: the codes are unknown, not the old ones.
    let mut n = api.get("/api/v1/nodes/win-2").expect("win-2");
    n["metadata"]["annotations"]["calicoctl-win/finding-codes"] = json!(
        json!({"heartbeat": "2020-01-01T00:00:00Z", "codes": ["felix-unhealthy"]}).to_string()
    );
    api.put("/api/v1/nodes/win-2", n);
    let (code, doc) = run();
    assert_eq!(code, 1, "{doc}");
    assert_eq!(doc["nodes"][1]["codes"], json!([]), "{doc}");
    assert_eq!(doc["nodes"][1]["codes_unknown"], true, "{doc}");
    assert_eq!(doc["findings"], json!({}), "{doc}");
    assert!(
        doc["problems"]
            .to_string()
            .contains("node win-2: the finding codes of its CalicoNode are unknown"),
        "{doc}"
    );

    // All alike and healthy: exit 0.
    annotated(&api, "win-2", same, Some(("True", "healthy")));
    annotated(&api, "win-3", same, Some(("True", "healthy")));
    annotated(&api, "win-4", same, Some(("True", "healthy")));
    annotated(&api, "win-5", same, Some(("True", "healthy")));
    let (code, doc) = run();
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["healthy"], true);
}

/// The fleet DaemonSet's scheduled verify's verdict on a node, `age_s` old: its heartbeat.
fn traffic(api: &FakeApi, name: &str, status: &str, age_s: u64) -> String {
    let path = format!("/api/v1/nodes/{name}");
    let mut n = api.get(&path).expect("node");
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs()
        - age_s;
    let beat = jiff::Timestamp::from_second(secs as i64)
        .expect("time")
        .to_string();
    let reason = if status == "True" {
        "TrafficPasses"
    } else {
        "TrafficFails"
    };
    n["status"]["conditions"]
        .as_array_mut()
        .expect("conditions")
        .push(
            json!({"type": "CalicoWindowsTraffic", "status": status, "reason": reason,
            "message": format!("verdict of {name}"), "lastHeartbeatTime": beat}),
        );
    api.put(&path, n);
    beat
}

/// The verdict's codes as the DaemonSet's pod writes them beside it, with heartbeat `beat`.
fn traffic_codes(api: &FakeApi, name: &str, beat: &str, codes: &[&str]) {
    let path = format!("/api/v1/nodes/{name}");
    let mut n = api.get(&path).expect("node");
    n["metadata"]["annotations"]["calicoctl-win/traffic-codes"] =
        json!(json!({"heartbeat": beat, "codes": codes}).to_string());
    api.put(&path, n);
}

/// `fleet status` reads a False verdict's codes as data (the annotation written in its patch)
/// and shows each with its own fix beside the verdict's `traffic-fails`; codes an earlier run
/// wrote (their heartbeat older than the condition's) are not shown as this verdict's.
#[test]
fn fleet_status_shows_each_traffic_code_with_its_fix_and_no_earlier_runs() {
    let api = FakeApi::start();
    let same = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    for n in ["win-1", "win-2"] {
        annotated(&api, n, same, Some(("True", "healthy")));
    }
    let beat = traffic(&api, "win-1", "False", 60);
    traffic_codes(&api, "win-1", &beat, &["traffic-overlay", "traffic-dns"]);
    // win-2: the codes of a run an hour before the verdict it carries now.
    let earlier = traffic(&api, "win-2", "True", 3600);
    traffic_codes(&api, "win-2", &earlier, &["traffic-egress"]);
    let mut n = api.get("/api/v1/nodes/win-2").expect("node");
    n["status"]["conditions"]
        .as_array_mut()
        .expect("conditions")
        .retain(|c| c["type"] != "CalicoWindowsTraffic");
    api.put("/api/v1/nodes/win-2", n);
    traffic(&api, "win-2", "False", 60);
    let dir = tempfile::tempdir().expect("tmp");
    let admin = api.kubeconfig(dir.path(), None);
    let out = cmd()
        .args(["fleet", "status", "-o", "json", "--kubeconfig"])
        .arg(&admin)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let doc = json(&out.stdout);
    let row = |i: usize| doc["nodes"][i].clone();
    assert_eq!(
        row(0)["traffic"]["codes"],
        json!(["traffic-overlay", "traffic-dns"])
    );
    let found: Vec<Value> = row(0)["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .map(|p| p["code"].clone())
        .collect();
    assert_eq!(
        found,
        [
            json!("traffic-fails"),
            json!("traffic-overlay"),
            json!("traffic-dns")
        ],
        "{doc}"
    );
    let overlay = &row(0)["problems"][1];
    assert!(
        overlay["remedy"]
            .as_str()
            .expect("remedy")
            .contains("UDP 4789"),
        "{overlay}"
    );
    assert_eq!(doc["findings"]["traffic-overlay"], 1, "{doc}");
    // The earlier run's code is no code of this verdict: not shown, the codes unknown.
    assert_eq!(row(1)["traffic"]["codes"], json!([]), "{doc}");
    assert_eq!(row(1)["traffic"]["codes_unknown"], true, "{doc}");
    assert!(!doc.to_string().contains("traffic-egress"), "{doc}");
    assert!(
        row(1)["problems"].to_string().contains("\"traffic-fails\""),
        "{doc}"
    );
    // The text names each code with its fix, as status lists its findings.
    let (_, text) = fleet_status(&api, true);
    assert!(
        text.contains("its scheduled verify fails at overlay [traffic-overlay]")
            && text.contains("fix: allow UDP 4789"),
        "{text}"
    );
    assert!(text.contains("traffic-dns on 1 node(s)"), "{text}");
    assert!(!text.contains("traffic-egress"), "{text}");
}

/// `fleet status` reads each node's `CalicoWindowsTraffic` (the DaemonSet's scheduled
/// `verify`): a False is a problem, and a verdict older than two of the DaemonSet's
/// `--verify-every` intervals is stale (Unknown, `VerifyStale`) and a problem; the interval is
/// one read of the DaemonSet, whatever the number of nodes.
#[test]
fn fleet_status_reads_the_traffic_verdict_against_the_daemonsets_interval() {
    let api = FakeApi::start();
    let dir = tempfile::tempdir().expect("tmp");
    let admin = api.kubeconfig(dir.path(), None);
    let same = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    for n in ["win-1", "win-2", "win-3", "win-4"] {
        annotated(&api, n, same, Some(("True", "healthy")));
    }
    traffic(&api, "win-1", "True", 60);
    traffic(&api, "win-2", "False", 60);
    traffic(&api, "win-3", "True", 3 * 3600);
    let ds_path = "/apis/apps/v1/namespaces/system-upgrade/daemonsets/calicoctl-win";
    api.put(
        ds_path,
        json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "calicoctl-win", "namespace": "system-upgrade"},
            "spec": {"selector": {}, "template": {"spec": {"containers": [{"name": "calicoctl-win",
                "command": ["cmd.exe", "/c", "calicoctl-win.exe", "reconfigure",
                    "--turn=system-upgrade/calicoctl-win", "--turns=2", "&&", "calicoctl-win.exe",
                    "service", "keep-token", "--verify-every=1h"]}]}}}}),
    );
    let run = || {
        let before = api.requests().len();
        let out = cmd()
            .args(["fleet", "status", "-o", "json", "--kubeconfig"])
            .arg(&admin)
            .output()
            .expect("runs");
        let asked: Vec<(String, String)> = api.requests()[before..].to_vec();
        (out.status.code().expect("code"), json(&out.stdout), asked)
    };
    let (code, doc, asked) = run();
    assert_eq!(code, 1, "{doc}");
    assert_eq!(doc["verify_every"], "1h", "{doc}");
    let status = |i: usize| doc["nodes"][i]["traffic"]["status"].clone();
    assert_eq!(status(0), "True", "{doc}");
    assert_eq!(status(1), "False", "{doc}");
    assert_eq!(status(2), "Unknown", "{doc}");
    assert_eq!(doc["nodes"][2]["traffic"]["reason"], "VerifyStale", "{doc}");
    assert!(doc["nodes"][3].get("traffic").is_none(), "{doc}");
    let problems = doc["problems"].to_string();
    assert!(
        problems.contains(
            "node win-2 does not pass traffic (CalicoWindowsTraffic False): verdict of win-2"
        ),
        "{problems}"
    );
    assert!(
        problems.contains("node win-3: its CalicoWindowsTraffic verdict is stale"),
        "{problems}"
    );
    // Each as a finding of its row, with its code and fix.
    let codes = |i: usize| doc["nodes"][i]["problems"].to_string();
    assert!(codes(1).contains("\"traffic-fails\""), "{doc}");
    assert!(codes(2).contains("\"traffic-unjudged\""), "{doc}");
    assert!(!codes(0).contains("traffic-"), "{doc}");
    assert!(
        !problems.contains("win-1") && !problems.contains("win-4"),
        "{problems}"
    );
    // Flat in the number of nodes: one read of the DaemonSet and one list of its turns, the
    // nodes listed a page at a time.
    let ds_reads = asked
        .iter()
        .filter(|(_, p)| p.contains("daemonsets"))
        .count();
    assert_eq!(ds_reads, 1, "{asked:?}");
    let turn_reads = asked.iter().filter(|(_, p)| p.contains("leases")).count();
    assert_eq!(turn_reads, 1, "{asked:?}");
    assert!(
        asked.iter().all(|(_, p)| p.contains("daemonsets")
            || p.ends_with("/leases")
            || p == "/api/v1/nodes"),
        "{asked:?}"
    );
    // Beside a Plan (`--engine both`) the DaemonSet takes no turns: none are read.
    api.lock().objects.get_mut(ds_path).expect("ds")["spec"]["template"]["spec"]["containers"][0]
        ["command"] = json!([
        "cmd.exe",
        "/c",
        "calicoctl-win.exe",
        "service",
        "keep-token"
    ]);
    let (_, doc, asked) = run();
    assert!(
        !asked.iter().any(|(_, p)| p.contains("leases")),
        "{asked:?}"
    );
    assert_eq!(doc["turns"], json!([]), "{doc}");
    // No DaemonSet schedules verify: no verdict is judged stale, a False still a problem.
    api.lock().objects.remove(ds_path);
    let (code, doc, _) = run();
    assert_eq!(code, 1, "{doc}");
    assert_eq!(doc["verify_every"], serde_json::Value::Null, "{doc}");
    assert_eq!(doc["nodes"][2]["traffic"]["status"], "True", "{doc}");
    let problems = doc["problems"].to_string();
    assert!(
        problems.contains("node win-2 does not pass traffic"),
        "{problems}"
    );
    assert!(!problems.contains("win-3"), "{problems}");
}

fn fleet_status(api: &FakeApi, text: bool) -> (i32, String) {
    let dir = tempfile::tempdir().expect("tmp");
    let admin = api.kubeconfig(dir.path(), None);
    let out = cmd()
        .args([
            "fleet",
            "status",
            "-o",
            if text { "text" } else { "json" },
            "--kubeconfig",
        ])
        .arg(&admin)
        .output()
        .expect("runs");
    (
        out.status.code().expect("code"),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

/// No Windows node at all is no healthy fleet.
#[test]
fn no_windows_node_is_not_a_healthy_fleet() {
    let api = FakeApi::start();
    let (code, out) = fleet_status(&api, false);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("no Windows nodes"), "{out}");
}

/// Whoever may patch a node writes what fleet status prints: escape sequences and newlines are
/// written out in the table, a long message cut, a long cloud name fits its column.
#[test]
fn hostile_node_text_is_escaped_in_the_table() {
    let api = FakeApi::start();
    let same = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    annotated(
        &api,
        "ip-10-0-1-23.us-west-2.compute.internal",
        same,
        Some((
            "False",
            &format!(
                "\u{1b}[2Jgone\nwin-9 0.1.0 3.30.2 sha256:aaaaaaaa True True {}",
                "y".repeat(5000)
            ),
        )),
    );
    let (code, out) = fleet_status(&api, true);
    assert_eq!(code, 1, "{out}");
    assert!(!out.contains('\u{1b}'), "{out}");
    assert!(
        !out.lines().any(|l| l.starts_with("win-9")),
        "a forged table line: {out}"
    );
    let row = out
        .lines()
        .find(|l| l.starts_with("ip-10-0-1-23.us-west-2.compute.internal "))
        .expect("the node's row, its name whole");
    assert!(row.chars().count() < 400, "{row}");
    assert!(row.contains("\\u{1b}[2Jgone\\nwin-9"), "{row}");
}

/// Two nodes installed from one config share the fleet's hash, and a fleet of them is healthy;
/// once one is uninstalled it no longer reads healthy.
#[test]
fn two_nodes_from_one_config_share_a_hash_and_an_uninstalled_one_is_not_healthy() {
    let api = FakeApi::start();
    api.healthy_calico();
    api.remove("/api/v1/nodes/win-1");
    let nodes: Vec<crate::support::Node> = ["win-a", "win-b"]
        .into_iter()
        .map(|name| {
            api.put(
                &format!("/api/v1/nodes/{name}"),
                json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name,
                    "labels": {"kubernetes.io/os": "windows"}}, "spec": {}}),
            );
            api.set_node_ready(name, "True", "kubelet is posting ready status");
            crate::support::Node::on(&api)
                .kubelet(name)
                .installed()
                .build()
        })
        .collect();
    let hash = |name: &str| {
        api.get(&format!("/api/v1/nodes/{name}")).expect("node")["metadata"]["annotations"]
            ["calicoctl-win/config-hash"]
            .clone()
    };
    assert!(hash("win-a").is_string());
    assert_eq!(hash("win-a"), hash("win-b"), "one config, one hash");
    for name in ["win-a", "win-b"] {
        let mut n = api.get(&format!("/api/v1/nodes/{name}")).expect("node");
        n["status"]["conditions"]
            .as_array_mut()
            .expect("conditions")
            .push(json!({"type": "CalicoWindowsReady", "status": "True",
                "reason": "CalicoHealthy", "lastHeartbeatTime": now_text()}));
        api.put(&format!("/api/v1/nodes/{name}"), n);
    }
    let (code, out) = fleet_status(&api, false);
    assert_eq!(code, 0, "{out}");
    let (code, _, err) = nodes[1].run(&["uninstall", "--purge"]);
    assert_eq!(code, 0, "{err}");
    assert!(hash("win-b").is_null(), "the annotations are removed");
    let (code, out) = fleet_status(&api, false);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("Calico on node win-b is degraded: calicoctl-win uninstalled"),
        "{out}"
    );
}

/// The fleet DaemonSet's container as the node's renewer of last resort: calico-node's token
/// refused (its ServiceAccount made again), `service keep-token` in the pod, with the pod's own
/// projected token (which names its Node, as kubelet's does) and the fleet's roles and admission
/// policy as `fleet plan` writes them, writes a new token the server takes at its first look,
/// with no admin kubeconfig on the node; a pod of another node may not get this node's token.
#[test]
fn the_daemonset_pod_replaces_a_refused_token_for_its_own_node_only() {
    let api = FakeApi::start();
    api.healthy_calico();
    let plan = crate::support::json_of(cmd().args([
        "--config", CONFIG, "-o", "json", "fleet", "plan", "--image", "i",
    ]));
    let applied = plan["manifests"]
        .as_array()
        .expect("manifests")
        .iter()
        .filter(|m| api.apply(m))
        .count();
    assert_eq!(
        applied, 11,
        "roles, bindings, the account and the two admission policies (no turns beside the Plan)"
    );
    let node = crate::support::Node::new(&api);
    let zip = crate::support::release::release_zip(node.dir.path(), "3.30.2", "calico-node.exe");
    let (code, _, err) = node.run(&[
        "install",
        "--no-start",
        "--release-zip",
        zip.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 0, "{err}");
    let token_file = node.c_drive("calicowindows/calico-kube-config.token");
    api.recreate_service_account("calico-system", "calico-node");
    let refused = fs_err::read_to_string(&token_file).expect("token");
    assert!(!api.accepts(&refused));

    let keep = |pod: &Pod| keep_token(&node, pod);
    let own = Pod::new(
        &api,
        &api.pod_token("system-upgrade", "calicoctl-win-fleet", "win-1"),
    );
    let out = keep(&own);
    let doc = json(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{doc}");
    assert_eq!(doc["replaced"], true, "{doc}");
    let fresh = fs_err::read_to_string(&token_file).expect("token");
    assert!(api.accepts(&fresh), "the new token is taken");
    let (_, status, _) = node.run(&["status"]);
    assert_eq!(status["token"]["bound_to_node"], "win-1", "{status}");
    // Taken: nothing more to do.
    assert_eq!(json(&keep(&own).stdout)["replaced"], false);

    // The signing key rotated, then the issuer changed: every token is refused, the pod's
    // too until kubelet renews it (a new projected token here); the renewer replaces
    // calico-node's each time.
    let revocations: [(&str, &dyn Fn()); 2] = [
        ("signing key", &|| api.rotate_signing_key()),
        ("issuer", &|| api.set_issuer("https://issuer.example")),
    ];
    for (what, revoke) in revocations {
        revoke();
        let before = fs_err::read_to_string(&token_file).expect("token");
        assert!(!api.accepts(&before), "{what}");
        let renewed = Pod::new(
            &api,
            &api.pod_token("system-upgrade", "calicoctl-win-fleet", "win-1"),
        );
        let out = keep(&renewed);
        let doc = json(&out.stdout);
        assert_eq!(doc["replaced"], true, "{what}: {doc}");
        if what == "issuer" {
            assert!(
                doc["said"]
                    .as_str()
                    .is_some_and(|s| s.contains("cause issuer-changed")),
                "{doc}"
            );
        }
        let now = fs_err::read_to_string(&token_file).expect("token");
        assert!(api.accepts(&now), "{what}: the new token is taken");
    }

    // A pod of another node asks for win-1's calico-node token: the policy refuses it.
    let mut win2 = api.get("/api/v1/nodes/win-1").expect("node");
    win2["metadata"]["name"] = "win-2".into();
    win2["metadata"]["uid"] = "uid-win-2".into();
    api.put("/api/v1/nodes/win-2", win2);
    api.recreate_service_account("calico-system", "calico-node");
    let kept = fs_err::read_to_string(&token_file).expect("token");
    let other = Pod::new(
        &api,
        &api.pod_token("system-upgrade", "calicoctl-win-fleet", "win-2"),
    );
    let out = keep(&other);
    let doc = json(&out.stdout);
    assert_ne!(out.status.code(), Some(0), "{doc}");
    assert!(
        doc.to_string()
            .contains("may only request a token bound to its own Node"),
        "{doc}"
    );
    assert_eq!(
        fs_err::read_to_string(&token_file).expect("token"),
        kept,
        "nothing written"
    );

    // A node the Plan has not reached (`--engine both`), its kubeconfig Calico's own scripts'
    // with the refused token inline: nothing is written, as no token file would be read.
    let kubeconfig = node.c_drive("calicowindows/calico-kube-config");
    let text = fs_err::read_to_string(&kubeconfig).expect("kubeconfig");
    let mut inline: Value = serde_json::from_str(&text).expect("kubeconfig");
    inline["users"][0]["user"] = json!({ "token": kept });
    fs_err::write(&kubeconfig, inline.to_string()).expect("kubeconfig");
    fs_err::remove_file(&token_file).expect("token file");
    let out = keep(&own);
    let doc = json(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{doc}");
    assert_eq!(doc["replaced"], false, "{doc}");
    assert!(
        !token_file.exists(),
        "no token file written beside an inline token"
    );
}

/// calico-node's account holds each node's renewal grant, so every calico-node token in the
/// cluster (each Linux calico-node pod's projected token) could mint tokens for it: with the
/// admission policy `fleet rbac` writes for that account, a Linux node's calico-node pod gets
/// no token for a Windows node, and a calico-node token of a Windows node's own gets its own
/// Node's, at most a year long (install made a two-year one here; the renewer asks the cap).
#[test]
fn a_calico_node_token_gets_only_its_own_nodes_token_of_at_most_a_year() {
    calico_node_still_refreshes_the_cni_plugins_token_under_the_policies();
    let api = FakeApi::start();
    api.healthy_calico();
    let rbac =
        crate::support::json_of(cmd().args(["-o", "json", "fleet", "rbac", "--calico-api", "v1"]));
    let manifests = rbac["manifests"].as_array().expect("manifests");
    assert!(
        manifests.iter().any(
            |m| m["metadata"]["name"] == "calicoctl-win-token-calico-node"
                && m["kind"] == "ValidatingAdmissionPolicy"
        ),
        "{rbac}"
    );
    for m in manifests {
        api.apply(m);
    }
    let node = crate::support::Node::new(&api);
    let zip = crate::support::release::release_zip(node.dir.path(), "3.30.2", "calico-node.exe");
    let (code, _, err) = node.run(&[
        "install",
        "--no-start",
        "--token-lifetime",
        "2y",
        "--release-zip",
        zip.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 0, "{err}");
    let mut linux = api.get("/api/v1/nodes/win-1").expect("node");
    linux["metadata"]["name"] = "linux-1".into();
    linux["metadata"]["uid"] = "uid-linux-1".into();
    api.put("/api/v1/nodes/linux-1", linux);
    let token_file = node.c_drive("calicowindows/calico-kube-config.token");
    api.recreate_service_account("calico-system", "calico-node");
    let kept = fs_err::read_to_string(&token_file).expect("token");
    let keep = |pod: &Pod| keep_token(&node, pod);

    // A Linux node's calico-node pod asks for win-1's token: refused, nothing written.
    let linux_pod = Pod::new(
        &api,
        &api.pod_token("calico-system", "calico-node", "linux-1"),
    );
    let out = keep(&linux_pod);
    let doc = json(&out.stdout);
    assert_ne!(out.status.code(), Some(0), "{doc}");
    assert!(
        doc.to_string()
            .contains("calico-node may only request a token bound to its own Node"),
        "{doc}"
    );
    assert_eq!(fs_err::read_to_string(&token_file).expect("token"), kept);

    // A calico-node token naming win-1 gets win-1's, a year long (not the two install asked).
    let own = Pod::new(
        &api,
        &api.pod_token("calico-system", "calico-node", "win-1"),
    );
    let out = keep(&own);
    let doc = json(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{doc}");
    assert_eq!(doc["replaced"], true, "{doc}");
    let fresh = fs_err::read_to_string(&token_file).expect("token");
    assert!(api.accepts(&fresh));
    // Counted in the DaemonSet's metrics file (`calicoctl_win_token_renewals_total` adds it
    // to CalicoNode's): the refused attempt above counted nothing.
    let counts =
        fs_err::read_to_string(node.c_drive("calicowindows/calicoctl-win-metrics-verify.json"))
            .expect("the DaemonSet's metrics file");
    let counts: serde_json::Value = serde_json::from_str(&counts).expect("json");
    assert_eq!(counts["calicoctl_win_token_renewals_total"], 1, "{counts}");
    let c = crate::support::fake_api::claims(&fresh);
    let life = c["exp"].as_i64().unwrap_or_default() - c["iat"].as_i64().unwrap_or_default();
    assert_eq!(life, 365 * 86400, "{c}");
    assert_eq!(c["kubernetes.io"]["node"]["name"], "win-1", "{c}");
}

/// The policies judge only Node-bound requests for calico-node's own token: a Linux
/// calico-node pod still gets the CNI plugin's token it refreshes every day, unbound (calico
/// `node/pkg/cni/token_watch.go`, 24 h, no bound object: `calico-cni-plugin`'s at v3.32.1,
/// calico-node's own at v3.25.2), and the caller's own Node's only.
fn calico_node_still_refreshes_the_cni_plugins_token_under_the_policies() {
    let api = FakeApi::start();
    api.healthy_calico();
    let mut sa = api
        .get("/api/v1/namespaces/calico-system/serviceaccounts/calico-node")
        .expect("sa");
    sa["metadata"]["name"] = "calico-cni-plugin".into();
    api.put(
        "/api/v1/namespaces/calico-system/serviceaccounts/calico-cni-plugin",
        sa,
    );
    let out = cmd()
        .args(["-o", "json", "fleet", "rbac", "--calico-api", "v1"])
        .output()
        .expect("runs");
    for m in json(&out.stdout)["manifests"]
        .as_array()
        .expect("manifests")
    {
        api.apply(m);
    }
    // The right Calico v3.25's ClusterRole gives calico-node, as a node's renewal grant does.
    let grant = calicoctl_win::cluster::renewal::Grant::for_node(
        "calico-system",
        &crate::support::node_name("win-1"),
        "calico-node",
    );
    api.apply(&serde_json::to_value(grant.role(None)).expect("json"));
    api.apply(&serde_json::to_value(grant.binding(None)).expect("json"));
    let pod = api.pod_token("calico-system", "calico-node", "win-1");
    let unbound = serde_json::json!({"apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest", "spec": {"audiences": [], "expirationSeconds": 86400}});
    let (code, answer) = api.post_as(
        &pod,
        "/api/v1/namespaces/calico-system/serviceaccounts/calico-cni-plugin/token",
        &unbound,
    );
    assert_eq!(code, 201, "the CNI plugin's token: {answer}");
    let (code, answer) = api.post_as(
        &pod,
        "/api/v1/namespaces/calico-system/serviceaccounts/calico-node/token",
        &unbound,
    );
    assert_eq!(
        code, 201,
        "calico v3.25's unbound calico-node token: {answer}"
    );
    let bound = serde_json::json!({"apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest", "spec": {"expirationSeconds": 86400,
            "boundObjectRef": {"apiVersion": "v1", "kind": "Node", "name": "win-2"}}});
    let (code, answer) = api.post_as(
        &pod,
        "/api/v1/namespaces/calico-system/serviceaccounts/calico-node/token",
        &bound,
    );
    assert_eq!(code, 403, "another Node's calico-node token: {answer}");
}

/// `service keep-token --once` on `node` as the fleet DaemonSet's pod `pod` runs it.
fn keep_token(node: &crate::support::Node, pod: &Pod) -> std::process::Output {
    on_node()
        .envs(pod.env())
        .args(["-o", "json", "--sim-host"])
        .arg(node.sim())
        .args(["service", "keep-token", "--once"])
        .output()
        .expect("runs")
}

/// `--metrics-service`: a headless Service over the DaemonSet's pods with both metrics ports,
/// which Kubernetes' types read without an unknown field; refused when the config keeps
/// metrics off.
#[test]
fn the_metrics_service_selects_the_daemonsets_pods_with_both_ports() {
    let image = "registry.example.com/calicoctl-win:1.2.0";
    let (code, _, err) = fleet_plan(&["--config", CONFIG, "--image", image, "--metrics-service"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("does not turn metrics on"), "{err}");

    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("calico-windows.yaml");
    let text = fs_err::read_to_string(CONFIG).expect("config")
        + "\nmetrics:\n  enabled: true\n  port: 9200\n  source_ranges: [10.0.0.0/8]\n";
    fs_err::write(&config, text).expect("write");
    let config = config.to_str().expect("utf-8");
    let (code, doc, err) = fleet_plan(&["--config", config, "--image", image, "--metrics-service"]);
    assert_eq!(code, 0, "{err}");
    let svc = manifest(&doc, "Service");
    let ds = manifest(&doc, "DaemonSet");
    assert_eq!(svc["spec"]["clusterIP"], "None");
    // A degraded node's pod is not Ready (its probe is `status`): it stays scraped.
    assert_eq!(svc["spec"]["publishNotReadyAddresses"], true, "{svc}");
    assert_eq!(
        svc["spec"]["selector"],
        ds["spec"]["selector"]["matchLabels"]
    );
    assert_eq!(
        svc["spec"]["ports"],
        json!([
            {"name": "calicoctl-win", "port": 9200, "protocol": "TCP"},
            {"name": "felix", "port": 9091, "protocol": "TCP"}
        ])
    );
    let typed: k8s_openapi::api::core::v1::Service =
        serde_json::from_value(svc.clone()).expect("a Service");
    let mut dropped = Vec::new();
    dropped_fields(
        svc,
        &serde_json::to_value(&typed).expect("json"),
        "",
        &mut dropped,
    );
    assert_eq!(dropped, Vec::<String>::new());
}

/// By default the DaemonSet's pod has the rollout's container alone: no log container copies
/// a service's log into kubelet's container logs, and no positions' emptyDir.
#[test]
fn the_daemonset_has_no_log_containers_unless_asked() {
    let (code, doc, err) = fleet_plan(&[
        "--config",
        CONFIG,
        "--image",
        "i:1",
        "--engine",
        "daemonset",
    ]);
    assert_eq!(code, 0, "{err}");
    let ds = manifest(&doc, "DaemonSet").clone();
    assert_eq!(daemonset_problems(&ds), Vec::<String>::new());
    let template = &ds["spec"]["template"];
    let names: Vec<&str> = template["spec"]["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["calicoctl-win"]);
    let volumes = template["spec"]["volumes"].to_string();
    assert!(!volumes.contains("log-positions"), "{volumes}");
    // The default container is the one there is.
    assert_eq!(
        template["metadata"]["annotations"]["kubectl.kubernetes.io/default-container"],
        "calicoctl-win"
    );
}

/// With --log-containers the DaemonSet's pod has a container per service (`kubectl logs
/// ds/NAME -c felix`), each following its log with its position in the pod's emptyDir;
/// `kubectl logs` without `-c` still shows the rollout's; only that container has the
/// readiness by `status`; every container is HostProcess as SYSTEM by the pod's security
/// context alone (Kubernetes refuses a pod whose containers differ in it); and the whole
/// DaemonSet still decodes strictly into Kubernetes' types and kubectl's.
#[test]
fn the_daemonset_has_a_log_container_per_service() {
    let (code, doc, err) = fleet_plan(&[
        "--config",
        CONFIG,
        "--image",
        "i:1",
        "--engine",
        "daemonset",
        "--log-containers",
    ]);
    assert_eq!(code, 0, "{err}");
    let ds = manifest(&doc, "DaemonSet").clone();
    assert_eq!(daemonset_problems(&ds), Vec::<String>::new());
    let template = &ds["spec"]["template"];
    assert_eq!(
        template["metadata"]["annotations"]["kubectl.kubernetes.io/default-container"],
        "calicoctl-win"
    );
    let pod = &template["spec"];
    let containers = pod["containers"].as_array().expect("containers");
    let names: Vec<&str> = containers
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "calicoctl-win",
            "node",
            "felix",
            "confd",
            "kube-proxy",
            "install"
        ]
    );
    assert_eq!(
        pod["securityContext"]["windowsOptions"]["hostProcess"],
        true
    );
    assert_eq!(pod["hostNetwork"], true);
    let empty_dir = pod["volumes"]
        .as_array()
        .expect("volumes")
        .iter()
        .find(|v| v["name"] == "log-positions")
        .expect("the positions' volume");
    assert_eq!(empty_dir["emptyDir"], json!({}));
    for c in &containers[1..] {
        // calicoctl-win's own log is `install`'s: `calicoctl-win` is the rollout's container.
        let role = match c["name"].as_str().expect("name") {
            "install" => "calicoctl-win",
            name => name,
        };
        let command: Vec<&str> = c["command"]
            .as_array()
            .expect("command")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let at = command.iter().position(|a| *a == "logs").expect("logs");
        assert_eq!(
            command[at..],
            [
                "logs",
                role,
                "--follow",
                "--position",
                &format!("%CONTAINER_SANDBOX_MOUNT_POINT%\\log-positions\\{role}.json"),
            ],
            "{c}"
        );
        assert!(command.contains(&"--config"), "{c}");
        assert!(c["securityContext"].is_null(), "{c}");
        assert!(c["readinessProbe"].is_null(), "{c}");
        let mounts = c["volumeMounts"].to_string();
        assert!(
            mounts.contains("C:\\\\log-positions") && mounts.contains("config"),
            "{mounts}"
        );
    }
    assert!(containers[0]["readinessProbe"]["exec"].is_object());
    let Some(kubectl) = tool("kubectl") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("ds.json");
    fs_err::write(&file, ds.to_string()).expect("write");
    assert_eq!(kubectl_decode(&kubectl, dir.path(), &file), None);
}
