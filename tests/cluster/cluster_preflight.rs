//! `preflight`'s cluster checks through the binary, against the fake API server.

use crate::support::fake_api::{FakeApi, calico};
use crate::support::{json as parse, on_node};
use serde_json::{Value, json};
use std::collections::BTreeMap;

struct Run {
    code: i32,
    verdicts: BTreeMap<String, String>,
    doc: Value,
}

impl Run {
    fn check(&self, id: &str) -> &Value {
        self.doc["checks"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["id"] == id))
            .unwrap_or_else(|| panic!("no check {id}: {}", self.doc))
    }

    fn text(&self, id: &str) -> String {
        let c = self.check(id);
        format!(
            "{} | {}",
            c["message"].as_str().unwrap_or_default(),
            c["remedy"].as_str().unwrap_or_default()
        )
    }
}

fn preflight(api: &FakeApi, token: Option<&str>, extra: &[&str]) -> Run {
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = api.kubeconfig(dir.path(), token);
    let out = on_node()
        .args(["preflight", "-o", "json", "--kubeconfig"])
        .arg(&kubeconfig)
        .args(extra)
        .output()
        .expect("run");
    let doc = parse(&out.stdout);
    let verdicts = crate::support::items(&doc, "checks")
        .map(|c| {
            (
                c["id"].as_str().unwrap_or_default().to_owned(),
                c["verdict"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    Run {
        code: out.status.code().expect("code"),
        verdicts,
        doc,
    }
}

const CRD: &str = "/apis/crd.projectcalico.org/v1";

#[test]
fn a_healthy_calico_cluster_passes_every_cluster_check() {
    let api = FakeApi::calico();
    let run = preflight(&api, None, &[]);
    assert_eq!(run.code, 0, "{}", run.doc);
    for id in calicoctl_win::checks::cluster::IDS {
        // No calico-node has run on the node yet: no BGP address to compare.
        let want = if *id == "node-address" {
            "skip"
        } else {
            "pass"
        };
        assert_eq!(run.verdicts[*id], want, "{id}: {}", run.text(id));
    }
    assert!(
        run.text("block-capacity").contains("holds 60 pods"),
        "{}",
        run.text("block-capacity")
    );
    let facts = &run.doc["cluster"];
    assert_eq!(facts["namespace"], "calico-system");
    assert_eq!(facts["backend"], "vxlan");
    assert_eq!(facts["dns_ip"], "10.96.0.10");
    assert_eq!(facts["service_cidrs"], json!(["10.96.0.0/12"]));
    assert_eq!(facts["node_exists"], true);
    assert_eq!(facts["node"], "win-1");
    // Every request carried the token and went to the API (no request was left unrecorded).
    assert!(
        api.requests().iter().any(|(m, p)| m == "GET"
            && p == "/apis/crd.projectcalico.org/v1/felixconfigurations/default")
    );
}

#[test]
fn ipip_and_strict_affinity_fail_with_the_documented_patches() {
    let api = FakeApi::calico();
    break_ipip_and_affinity(&api);
    let run = preflight(&api, None, &[]);
    assert_eq!(run.code, 3);
    assert_eq!(run.verdicts["ipip-disabled"], "fail");
    let t = run.text("ipip-disabled");
    assert!(
        t.contains(
            r#"calicoctl patch felixconfiguration default -p '{"spec":{"ipipEnabled":false}}'"#
        ),
        "{t}"
    );
    assert!(
        t.contains("calicoctl patch ippool default-ipv4-ippool"),
        "{t}"
    );
    let t = run.text("strict-affinity");
    assert!(t.contains(r#"kubectl patch ipamconfigurations default --type merge --patch='{"spec": {"strictAffinity": true}}'"#), "{t}");
    assert_eq!(run.verdicts["ip-pools"], "fail", "{}", run.text("ip-pools"));
    assert_eq!(run.doc["cluster"]["backend"], Value::Null);
}

/// A BGP address an earlier calico-node left on the Node (`projectcalico.org/IPv4Address`)
/// is compared with the Node's InternalIP: the same passes, another warns with both.
#[test]
fn the_bgp_address_left_on_the_node_must_be_its_internal_ip() {
    let api = FakeApi::calico();
    let path = "/api/v1/nodes/win-1";
    let mut node = api.get(path).expect("node");
    node["metadata"]["annotations"] = json!({"projectcalico.org/IPv4Address": "10.0.0.5/24"});
    api.put(path, node.clone());
    let run = preflight(&api, None, &[]);
    assert_eq!(
        run.verdicts["node-address"],
        "pass",
        "{}",
        run.text("node-address")
    );
    node["metadata"]["annotations"] = json!({"projectcalico.org/IPv4Address": "10.0.0.9/24"});
    api.put(path, node);
    let run = preflight(&api, None, &[]);
    assert_eq!(run.verdicts["node-address"], "warn");
    let said = run.text("node-address");
    assert!(
        said.contains("10.0.0.9") && said.contains("10.0.0.5"),
        "{said}"
    );
    assert_eq!(run.code, 0, "a warning does not block");
}

#[test]
fn an_explicit_vni_must_equal_felixs_and_the_port_must_be_4789() {
    let api = FakeApi::calico();
    let run = preflight(&api, None, &["--set", "vxlan.vni=4097"]);
    assert_eq!(run.verdicts["vxlan-vni"], "fail");
    assert!(
        run.text("vxlan-vni").contains("--set vxlan.vni=4096"),
        "{}",
        run.text("vxlan-vni")
    );
    api.put(&format!("{CRD}/felixconfigurations/default"), calico("FelixConfiguration", "default", json!({"vxlanEnabled": true, "vxlanVNI": 4097, "vxlanPort": 8472, "wireguardEnabled": true})));
    let run = preflight(&api, None, &["--set", "vxlan.vni=4097"]);
    assert_eq!(run.verdicts["vxlan-vni"], "pass");
    assert_eq!(run.verdicts["vxlan-port"], "fail");
    assert_eq!(run.verdicts["wireguard"], "fail");
}

#[test]
fn pools_must_be_ipv4_of_one_type_matching_the_backend() {
    let api = FakeApi::calico();
    let run = preflight(&api, None, &["--set", "backend=windows-bgp"]);
    assert_eq!(run.verdicts["ip-pools"], "fail", "{}", run.text("ip-pools"));
    api.put(
        &format!("{CRD}/ippools/v6"),
        calico(
            "IPPool",
            "v6",
            json!({"cidr": "fd00::/48", "vxlanMode": "Always"}),
        ),
    );
    let run = preflight(&api, None, &[]);
    assert!(
        run.text("ip-pools").contains("IPv6"),
        "{}",
        run.text("ip-pools")
    );
}

#[test]
fn the_datastore_must_match_and_calico_must_be_installed() {
    let api = FakeApi::calico();
    let run = preflight(
        &api,
        None,
        &[
            "--set",
            "datastore=etcdv3",
            "--set",
            "etcd.endpoints=https://127.0.0.1:2379",
        ],
    );
    assert_eq!(
        run.verdicts["datastore"],
        "fail",
        "{}",
        run.text("datastore")
    );
    // A version that is no release ("master", empty) is unknown, not "older than 3.12".
    for unreadable in ["master", ""] {
        let api = FakeApi::calico();
        let path = format!("{CRD}/clusterinformations/default");
        let mut info = api.get(&path).expect("info");
        info["spec"]["calicoVersion"] = serde_json::json!(unreadable);
        api.put(&path, info);
        let run = preflight(&api, None, &[]);
        assert_eq!(
            run.verdicts["calico-version"],
            "warn",
            "{unreadable:?}: {}",
            run.text("calico-version")
        );
        assert!(
            !run.text("calico-version").contains("older than"),
            "{}",
            run.text("calico-version")
        );
    }
    let bare = FakeApi::start();
    let run = preflight(&bare, None, &[]);
    assert_eq!(run.verdicts["calico-version"], "fail");
    assert!(
        run.text("calico-version").contains("not installed"),
        "{}",
        run.text("calico-version")
    );
}

#[test]
fn a_rejected_token_fails_the_cluster_checks_with_a_hint() {
    let api = FakeApi::calico();
    let run = preflight(&api, Some("wrong-token"), &[]);
    assert_eq!(run.code, 3);
    assert_eq!(run.verdicts["calico-version"], "fail");
    let t = run.text("calico-version");
    assert!(
        t.contains(&api.url) && t.contains("401") && t.contains("renew the token"),
        "{t}"
    );
    assert!(
        !run.doc.to_string().contains("wrong-token"),
        "the token leaked: {}",
        run.doc
    );
}

/// The rbac check asks the API server about every right install needs (one access review
/// per verb and named object) and names the missing ones with what grants them.
#[test]
fn a_missing_right_fails_rbac_naming_it_and_fleet_rbac() {
    let api = FakeApi::calico();
    api.forbid("create", "serviceaccounts/token");
    let run = preflight(&api, None, &[]);
    assert_eq!(run.verdicts["rbac"], "fail");
    let text = run.text("rbac");
    assert!(
        text.contains("create serviceaccounts/token calico-node in calico-system")
            && text.contains("calicoctl-win fleet rbac --calico-namespace calico-system"),
        "{text}"
    );
}

#[test]
fn a_forbidden_read_names_the_verb_and_resource() {
    let api = FakeApi::calico();
    api.forbid("list", "ippools");
    let run = preflight(&api, None, &[]);
    let t = run.text("calico-version");
    assert!(
        t.contains("403") && t.contains("kubectl auth can-i list ippools"),
        "{t}"
    );
}

#[test]
fn without_a_kubeconfig_or_with_offline_the_cluster_checks_are_skipped() {
    let out = on_node()
        .args(["preflight", "-o", "json"])
        .output()
        .expect("run");
    let doc = parse(&out.stdout);
    let c = doc["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["id"] == "strict-affinity"))
        .cloned()
        .expect("check");
    assert_eq!(c["verdict"], "skip");
    assert!(
        c["message"]
            .as_str()
            .is_some_and(|m| m.contains("no admin kubeconfig")),
        "{c}"
    );
    let api = FakeApi::start();
    let run = preflight(&api, None, &["--offline"]);
    assert_eq!(run.code, 0);
    assert_eq!(run.verdicts["strict-affinity"], "skip");
    assert!(
        api.requests().is_empty(),
        "--offline must not contact the cluster"
    );
}

#[test]
fn an_unreachable_server_fails_in_bounded_time() {
    let api = FakeApi::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = api.kubeconfig(dir.path(), None);
    // A loopback port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let text = fs_err::read_to_string(&kubeconfig)
        .expect("read")
        .replace(&api.url, &format!("https://127.0.0.1:{port}"));
    fs_err::write(&kubeconfig, text).expect("write");
    let started = std::time::Instant::now();
    let out = on_node()
        .args(["preflight", "-o", "json", "--kubeconfig"])
        .arg(&kubeconfig)
        .output()
        .expect("run");
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(3));
    let doc = parse(&out.stdout);
    let msg = doc["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["id"] == "calico-version"))
        .map(|c| c["message"].to_string())
        .unwrap_or_default();
    assert!(
        msg.contains("cannot reach") && msg.contains(&port.to_string()),
        "{msg}"
    );
    assert_eq!(
        doc["checks"].to_string().matches("cannot reach").count(),
        1,
        "{doc}"
    );
}

#[test]
fn a_server_certificate_from_another_ca_is_refused() {
    let api = FakeApi::calico();
    let other = FakeApi::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = api.kubeconfig(dir.path(), None);
    // The kubeconfig trusts another CA than the one that signed the server's certificate.
    fs_err::write(dir.path().join("fake-api-ca.pem"), &other.ca_pem).expect("write");
    let out = crate::support::exits(
        on_node()
            .args(["preflight", "-o", "json", "--kubeconfig"])
            .arg(&kubeconfig),
        3,
    );
    let doc = parse(&out.stdout);
    let c = doc["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["id"] == "calico-version"))
        .cloned()
        .expect("check");
    assert_eq!(c["verdict"], "fail");
    let text = c.to_string();
    assert!(
        text.contains("cannot reach") && text.contains("CA in the kubeconfig"),
        "{text}"
    );
    // Nothing reached the API: the TLS handshake failed first.
    assert!(api.requests().is_empty());
}

/// Sets IPIP on in Felix and the pool and strictAffinity off: the state `--fix` repairs.
fn break_ipip_and_affinity(api: &FakeApi) {
    api.put(
        &format!("{CRD}/felixconfigurations/default"),
        calico(
            "FelixConfiguration",
            "default",
            json!({"ipipEnabled": true, "vxlanVNI": 4096}),
        ),
    );
    api.put(
        &format!("{CRD}/ippools/default-ipv4-ippool"),
        calico(
            "IPPool",
            "default-ipv4-ippool",
            json!({"cidr": "10.244.0.0/16", "ipipMode": "Always", "vxlanMode": "Never"}),
        ),
    );
    api.put(
        &format!("{CRD}/ipamconfigs/default"),
        calico("IPAMConfig", "default", json!({"strictAffinity": false})),
    );
}

#[test]
fn fix_without_a_terminal_needs_yes_and_changes_nothing() {
    let api = FakeApi::calico();
    break_ipip_and_affinity(&api);
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = api.kubeconfig(dir.path(), None);
    let out = on_node()
        .args(["preflight", "--fix", "--kubeconfig"])
        .arg(&kubeconfig)
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--yes"), "{stderr}");
    // The patches were shown before the question.
    assert!(
        stdout.contains(r#"kubectl patch felixconfigurations.crd.projectcalico.org default --type merge -p '{"spec":{"ipipEnabled":false}}'"#),
        "{stdout}"
    );
    assert!(api.writes().is_empty(), "{:?}", api.writes());
}

#[test]
fn fix_with_dry_run_only_shows_the_patches() {
    let api = FakeApi::calico();
    break_ipip_and_affinity(&api);
    let run = preflight(&api, None, &["--fix", "--dry-run"]);
    assert_eq!(run.code, 3);
    let fixes = run.doc["fixes"].as_array().expect("fixes");
    assert_eq!(fixes.len(), 3, "{}", run.doc["fixes"]);
    assert_eq!(run.verdicts["strict-affinity"], "fail");
    assert!(api.writes().is_empty(), "{:?}", api.writes());
}

#[test]
fn fix_with_yes_applies_the_patches_and_checks_again() {
    let api = FakeApi::calico();
    break_ipip_and_affinity(&api);
    let run = preflight(&api, None, &["--fix", "--yes"]);
    assert_eq!(run.code, 0, "{}", run.doc);
    for id in ["ipip-disabled", "strict-affinity", "ip-pools"] {
        assert_eq!(run.verdicts[id], "pass", "{id}: {}", run.text(id));
    }
    let felix = api
        .get(&format!("{CRD}/felixconfigurations/default"))
        .expect("felix");
    assert_eq!(felix["spec"]["ipipEnabled"], false);
    assert_eq!(
        felix["spec"]["vxlanVNI"], 4096,
        "a merge patch keeps other fields"
    );
    let pool = api
        .get(&format!("{CRD}/ippools/default-ipv4-ippool"))
        .expect("pool");
    assert_eq!(pool["spec"]["ipipMode"], "Never");
    assert_eq!(pool["spec"]["vxlanMode"], "Always");
    let ipam = api
        .get(&format!("{CRD}/ipamconfigs/default"))
        .expect("ipam");
    assert_eq!(ipam["spec"]["strictAffinity"], true);
    assert_eq!(api.writes().len(), 3, "{:?}", api.writes());
}

#[test]
fn fix_creates_a_missing_ipamconfig_and_reports_a_refused_patch() {
    let api = FakeApi::calico();
    api.remove(&format!("{CRD}/ipamconfigs/default"));
    let run = preflight(&api, None, &["--fix", "--yes"]);
    assert_eq!(run.code, 0, "{}", run.doc);
    let ipam = api
        .get(&format!("{CRD}/ipamconfigs/default"))
        .expect("created");
    assert_eq!(ipam["spec"]["strictAffinity"], true);
    assert_eq!(ipam["spec"]["autoAllocateBlocks"], true);

    let api = FakeApi::calico();
    break_ipip_and_affinity(&api);
    api.forbid("patch", "felixconfigurations");
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = api.kubeconfig(dir.path(), None);
    let out = on_node()
        .args(["preflight", "--fix", "--yes", "--kubeconfig"])
        .arg(&kubeconfig)
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("refused to patch felixconfigurations/default: 403")
            && stderr.contains("kubectl auth can-i patch felixconfigurations"),
        "{stderr}"
    );
}

fn config_show(api: &FakeApi, extra: &[&str]) -> Value {
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = api.kubeconfig(dir.path(), None);
    let out = on_node()
        .args(["config", "show", "-o", "json", "--kubeconfig"])
        .arg(&kubeconfig)
        .args(extra)
        .assert()
        .success()
        .get_output()
        .clone();
    parse(&out.stdout)["settings"].clone()
}

#[test]
fn config_show_fills_unset_settings_from_the_cluster() {
    let api = FakeApi::calico();
    api.put(
        &format!("{CRD}/felixconfigurations/default"),
        calico(
            "FelixConfiguration",
            "default",
            json!({"vxlanEnabled": false, "vxlanVNI": 4097}),
        ),
    );
    let mut dns = crate::support::fake_api::meta("v1", "Service", "kube-dns", Some("kube-system"));
    dns["spec"] = json!({"clusterIP": "10.100.0.10"});
    api.put("/api/v1/namespaces/kube-system/services/kube-dns", dns);
    let s = config_show(&api, &["--set", "service_cidrs=10.0.0.0/16"]);
    let at = |k: &str| (s[k]["value"].clone(), s[k]["source"].clone());
    assert_eq!(at("backend"), (json!("windows-bgp"), json!("cluster")));
    assert_eq!(at("datastore"), (json!("kubernetes"), json!("cluster")));
    assert_eq!(at("vxlan.vni"), (json!(4097), json!("cluster")));
    assert_eq!(
        at("dns.servers"),
        (json!(["10.100.0.10"]), json!("cluster"))
    );
    assert_eq!(at("service_cidrs"), (json!(["10.0.0.0/16"]), json!("flag")));

    // --offline reads nothing and shows the defaults.
    let api = FakeApi::calico();
    let s = config_show(&api, &["--offline"]);
    assert_eq!(s["dns.servers"]["source"], "default");
    assert!(api.requests().is_empty());
}

#[test]
fn config_show_warns_when_the_cluster_cannot_be_read() {
    let api = FakeApi::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = api.kubeconfig(dir.path(), Some("expired-token"));
    let out = crate::support::exits(
        on_node()
            .args(["config", "show", "--kubeconfig"])
            .arg(&kubeconfig),
        0,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the cluster was not read") && stderr.contains("401"),
        "{stderr}"
    );
    assert!(!stderr.contains("expired-token"), "{stderr}");
}

#[test]
fn https_proxy_is_used_unless_no_proxy_names_the_server() {
    let api = FakeApi::calico();
    let proxy = crate::support::proxy::Proxy::start();
    let dir = tempfile::tempdir().expect("tempdir");
    // The server by name, the proxy by IP: NO_PROXY must be matched against the server.
    let kubeconfig = api.kubeconfig(dir.path(), None);
    let port = api.url.rsplit(':').next().expect("port").to_owned();
    let text = fs_err::read_to_string(&kubeconfig)
        .expect("read")
        .replace(&api.url, &format!("https://localhost:{port}"));
    fs_err::write(&kubeconfig, text).expect("write");
    let run = |env: &[(&str, &str)]| {
        let mut cmd = on_node();
        cmd.args(["preflight", "-o", "json", "--kubeconfig"])
            .arg(&kubeconfig);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("run");
        let doc = parse(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{doc}");
    };
    run(&[("HTTPS_PROXY", &proxy.url), ("NO_PROXY", "10.0.0.0/8,,")]);
    let through = proxy.targets();
    assert!(
        !through.is_empty() && through.iter().all(|t| *t == format!("localhost:{port}")),
        "{through:?}"
    );
    run(&[
        ("HTTPS_PROXY", &proxy.url),
        ("NO_PROXY", "example.com,localhost"),
    ]);
    assert_eq!(
        proxy.targets().len(),
        through.len(),
        "NO_PROXY must bypass the proxy"
    );
}

#[test]
fn fix_asks_on_a_terminal_and_no_applies_nothing() {
    // `script` (util-linux) gives the command a terminal; the answer is typed into it.
    let Some(script) = crate::support::tool("script") else {
        return;
    };
    let api = FakeApi::calico();
    break_ipip_and_affinity(&api);
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = api.kubeconfig(dir.path(), None);
    let bin = assert_cmd::cargo::cargo_bin("calicoctl-win");
    let line = format!(
        "{} --set node.name=win-1 preflight --fix --kubeconfig {}",
        bin.display(),
        kubeconfig.display()
    );
    let answer = |line: &str, typed: &str| {
        let mut child = std::process::Command::new(&script)
            .env_clear()
            .env("SHELL", "/bin/sh")
            .env("NO_COLOR", "1")
            .args(["-qec", line, "/dev/null"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("script");
        use std::io::Write;
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(typed.as_bytes())
            .expect("type");
        let out = child.wait_with_output().expect("wait");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    // With `-o json` and stdout sent elsewhere, the patches show on the terminal that asks.
    let json = dir.path().join("preflight.json");
    let (code, screen) = answer(&format!("{line} -o json > {}", json.display()), "n\n");
    assert_eq!(code, Some(3), "{screen}");
    assert!(
        screen.contains("Cluster patches for") && screen.contains("[ipip-disabled]"),
        "the terminal shows what it asks about: {screen}"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&fs_err::read_to_string(&json).expect("json")).expect("one document");
    assert_eq!(doc["fixes"].as_array().map(Vec::len), Some(3), "{doc}");
    assert!(api.writes().is_empty(), "{:?}", api.writes());
    let (code, screen) = answer(&line, "n\n");
    assert!(
        screen.contains("Apply 3 patch(es) to the cluster at"),
        "{screen}"
    );
    assert!(
        screen.contains("[y/N]") && screen.contains("not applied"),
        "{screen}"
    );
    assert_eq!(code, Some(3), "{screen}");
    assert!(api.writes().is_empty(), "{:?}", api.writes());
    let (code, screen) = answer(&line, "y\n");
    assert_eq!(code, Some(0), "{screen}");
    assert_eq!(api.writes().len(), 3, "{:?}", api.writes());
}

/// A kubeconfig whose user runs a credential plugin: calicoctl-win runs elevated, so the
/// plugin would run as an administrator; it runs only with --allow-exec-plugin, and the
/// refusal says so. The plugin here is a script that leaves a mark and answers with the
/// fake API server's token, as client-go's exec protocol asks.
#[test]
fn a_credential_plugin_runs_only_when_allowed() {
    let (api, dir, admin) = FakeApi::calico_admin();
    let token = api.token.clone();
    let mark = dir.path().join("plugin-ran");
    let plugin = dir.path().join("plugin.sh");
    fs_err::write(
        &plugin,
        format!(
            "#!/bin/sh\ntouch '{}'\necho '{{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{{\"token\":\"{token}\"}}}}'\n",
            mark.display()
        ),
    )
    .expect("plugin");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs_err::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).expect("mode");
    }
    let text = fs_err::read_to_string(&admin).expect("kubeconfig").replace(
        &format!("    token: {token}\n"),
        &format!(
            "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: {}\n      interactiveMode: Never\n",
            plugin.display()
        ),
    );
    let kubeconfig = dir.path().join("exec.kubeconfig");
    fs_err::write(&kubeconfig, text).expect("write");
    let run = |extra: &[&str]| {
        let out = on_node()
            .args(["preflight", "-o", "json", "--kubeconfig"])
            .arg(&kubeconfig)
            .args(extra)
            .output()
            .expect("run");
        parse(&out.stdout)
    };
    let check = |doc: &Value| -> Value {
        doc["checks"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["id"] == "calico-version").cloned())
            .unwrap_or_else(|| panic!("no calico-version check: {doc}"))
    };
    let refused = check(&run(&[]));
    assert_eq!(refused["verdict"], "fail", "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .is_some_and(|m| m.contains("runs a credential plugin")),
        "{refused}"
    );
    assert!(
        refused["remedy"]
            .as_str()
            .is_some_and(|m| m.contains("--allow-exec-plugin")),
        "{refused}"
    );
    assert!(!mark.exists(), "the plugin ran without --allow-exec-plugin");
    let allowed = check(&run(&["--allow-exec-plugin"]));
    assert_eq!(allowed["verdict"], "pass", "{allowed}");
    assert!(
        mark.exists(),
        "the plugin did not run with --allow-exec-plugin"
    );
}

/// An expired server certificate is said with its date, not rustls's Unix seconds.
#[test]
fn an_expired_server_certificate_is_said_with_dates() {
    let api = FakeApi::start_with_an_expired_certificate();
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = api.kubeconfig(dir.path(), None);
    let out = on_node()
        .args(["preflight", "-o", "json", "--kubeconfig"])
        .arg(&kubeconfig)
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("the server's certificate expired at 2021-01-01T00:00:00Z"),
        "{text}"
    );
    assert!(!text.contains("(UNIX)"), "{text}");
}

fn with_max_pods(api: &FakeApi, pods: &str, block_size: u64) {
    let mut node = api.get("/api/v1/nodes/win-1").expect("node");
    node["status"]["capacity"]["pods"] = json!(pods);
    api.put("/api/v1/nodes/win-1", node);
    let path = format!("{CRD}/ippools/default-ipv4-ippool");
    let mut pool = api.get(&path).expect("pool");
    pool["spec"]["blockSize"] = json!(block_size);
    api.put(&path, pool);
}

/// Asserts a block-capacity verdict and that its text names `names`.
fn assert_capacity(run: &Run, verdict: &str, names: &str) {
    let text = run.text("block-capacity");
    assert_eq!(run.verdicts["block-capacity"], verdict, "{text}");
    assert!(text.contains(names), "{text} does not name {names}");
}

#[test]
fn a_26_block_fails_kubelets_default_110_pods_and_a_24_block_holds_them() {
    let api = FakeApi::calico();
    with_max_pods(&api, "110", 26);
    let run = preflight(&api, None, &[]);
    assert_eq!(run.code, 3, "{}", run.doc);
    assert_capacity(&run, "fail", "holds 60 pods");
    let check = run.check("block-capacity");
    let message = check["message"].as_str().unwrap();
    assert!(message.contains("up to 110"), "{message}");
    let remedy = check["remedy"].as_str().unwrap();
    assert!(
        remedy.contains("blockSize: 25") && remedy.contains("--max-pods to 60"),
        "{remedy}"
    );

    with_max_pods(&api, "110", 24);
    assert_capacity(&preflight(&api, None, &[]), "pass", "holds 252 pods");

    // Without the single network the node may claim more blocks.
    with_max_pods(&api, "110", 26);
    let off = ["--set", "windows_use_single_network=false"];
    assert_capacity(
        &preflight(&api, None, &off),
        "pass",
        "may claim more blocks",
    );

    // A pool whose nodeSelector leaves the node out is not the node's.
    let path = format!("{CRD}/ippools/default-ipv4-ippool");
    let mut pool = api.get(&path).unwrap();
    pool["spec"]["nodeSelector"] = json!("kubernetes.io/os == 'linux'");
    api.put(&path, pool);
    let mut windows = api.get(&path).unwrap();
    windows["metadata"]["name"] = json!("windows-pool");
    windows["spec"]["nodeSelector"] = json!("kubernetes.io/os == 'windows'");
    windows["spec"]["blockSize"] = json!(25);
    api.put(&format!("{CRD}/ippools/windows-pool"), windows);
    assert_capacity(&preflight(&api, None, &[]), "pass", "windows-pool");

    // Before kubelet registers the Node, its maxPods is unknown: a warning.
    api.remove("/api/v1/nodes/win-1");
    assert_capacity(&preflight(&api, None, &[]), "warn", "not registered yet");
}

/// A refused token is said once, by the first cluster check; the others point to it.
#[test]
fn a_rejected_token_is_said_once_not_by_every_cluster_check() {
    let api = FakeApi::calico();
    let run = preflight(&api, Some("wrong-token"), &[]);
    assert_eq!(run.code, 3);
    // "401 " and not "401": the server's port may hold those digits.
    let said = run.doc["checks"].to_string().matches("401 ").count();
    assert_eq!(said, 1, "{}", run.doc["checks"]);
    assert_eq!(run.verdicts["block-capacity"], "fail");
    assert!(run.text("block-capacity").contains("see calico-version"));
}

/// A kubeconfig of a cluster that has no Node of this name (the wrong cluster, or a node not
/// joined yet) is said by calico-version, naming the server.
#[test]
fn a_cluster_without_this_node_is_said_with_its_server() {
    let api = FakeApi::calico();
    api.remove("/api/v1/nodes/win-1");
    let run = preflight(&api, None, &[]);
    assert_eq!(run.verdicts["calico-version"], "warn");
    let t = run.text("calico-version");
    assert!(t.contains(&api.url) && t.contains("no Node win-1"), "{t}");
}

/// An expired token in the kubeconfig is said as expired, with when and what makes a new
/// installer kubeconfig, before any call gets a bare 401.
#[test]
fn an_expired_kubeconfig_token_is_said_as_expired_with_the_fix() {
    use base64::Engine;
    let api = FakeApi::calico();
    let enc = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
    let expired = format!(
        "{}.{}.sig",
        enc(r#"{"alg":"RS256"}"#),
        enc(
            r#"{"exp":1700000000,"sub":"system:serviceaccount:kube-system:calicoctl-win-installer"}"#
        )
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = api.kubeconfig(dir.path(), Some(&expired));
    let out = on_node()
        .args(["preflight", "--kubeconfig"])
        .arg(&kubeconfig)
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("expired at 2023-11-14T22:13:20Z"),
        "{stderr}"
    );
    assert!(stderr.contains("fetch installer-kubeconfig"), "{stderr}");
    assert!(!stderr.contains(&expired), "the token leaked: {stderr}");
}

/// A pool with `vxlanMode: CrossSubnet` (the operator's default) fails ip-pools: Calico's
/// Windows limitations list cross-subnet as not supported (tigera/docs#1547).
#[test]
fn a_cross_subnet_vxlan_pool_fails_ip_pools_with_the_patch() {
    let api = FakeApi::calico();
    api.put(
        &format!("{CRD}/ippools/default-ipv4-ippool"),
        calico(
            "IPPool",
            "default-ipv4-ippool",
            json!({"cidr": "10.244.0.0/16", "vxlanMode": "CrossSubnet", "ipipMode": "Never", "blockSize": 26}),
        ),
    );
    let run = preflight(&api, None, &[]);
    assert_eq!(run.verdicts["ip-pools"], "fail", "{}", run.text("ip-pools"));
    let t = run.text("ip-pools");
    assert!(
        t.contains("CrossSubnet") && t.contains("kubectl patch ippool default-ipv4-ippool"),
        "{t}"
    );
}
