//! Gathering every Windows node's `diags` bundle through kube-apiserver's pod proxy
//! (`fleet::diags`), on the fake API server with RBAC enforced: the identity holds
//! only `fleet::diags::rights`, each rule of which is needed; a node that does not answer is
//! named and skipped after its timeout; each bundle lands whole, streamed, with its sha256.

use crate::support::fake_api::FakeApi;
use crate::support::fake_api::diags::{Answer, Endpoint};
use crate::support::node_name;
use calicoctl_win::cluster::Cluster;
use calicoctl_win::fleet::diags::auth::{self, Verdict};
use calicoctl_win::fleet::diags::rights;
use calicoctl_win::fleet::diags::{self, Gather, Index, Reason};
use serde_json::json;
use std::path::Path;
use std::time::Duration;

pub(crate) const NS: &str = "system-upgrade";
pub(crate) const SA: &str = "calicoctl-win-diags";
pub(crate) const PORT: u16 = 9095;
pub(crate) const CALICO_NS: &str = "calico-system";

/// A zip of one stored member of `len` bytes that differ from node to node (a bundle, as far as
/// the gatherer can tell: it checks the zip's signature, the size and the sha256).
pub(crate) fn bundle(seed: u32, len: usize) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    zip.start_file("status.json", stored).expect("member");
    let mut x = seed.wrapping_mul(2_654_435_761).max(1);
    let body: Vec<u8> = (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect();
    std::io::Write::write_all(&mut zip, &body).expect("write");
    zip.finish().expect("zip").into_inner()
}

/// The fleet DaemonSet's name, and its uid (as `meta` makes it), which its pods name.
pub(crate) const DS: &str = "calicoctl-win";
pub(crate) const DS_UID: &str = "uid-calicoctl-win";

/// A Windows node `name` with the DaemonSet's pod on it, running, on the node's network (and
/// the DaemonSet, once).
pub(crate) fn node_with_pod(api: &FakeApi, name: &str, ip: &str) {
    let ds = format!("/apis/apps/v1/namespaces/{NS}/daemonsets/{DS}");
    if api.get(&ds).is_none() {
        api.put(
            &ds,
            crate::support::fake_api::meta("apps/v1", "DaemonSet", DS, Some(NS)),
        );
    }
    let mut node = crate::support::fake_api::meta("v1", "Node", name, None);
    node["metadata"]["labels"] = json!({"kubernetes.io/os": "windows", "pool": "a"});
    api.put(&format!("/api/v1/nodes/{name}"), node);
    let pod = format!("calicoctl-win-{name}");
    api.put_pod(NS, &pod, name, Some("DaemonSet"));
    let path = format!("/api/v1/namespaces/{NS}/pods/{pod}");
    let mut p = api.get(&path).expect("pod");
    p["metadata"]["labels"] = json!({"app.kubernetes.io/name": "calicoctl-win"});
    p["metadata"]["ownerReferences"][0]["name"] = json!(DS);
    p["metadata"]["ownerReferences"][0]["uid"] = json!(DS_UID);
    api.put(&path, p);
    api.set_host_network(NS, &pod);
    api.set_pod_ip(NS, &pod, ip);
}

pub(crate) fn serve(api: &FakeApi, node: &str, answer: Answer) {
    api.lock().diags.insert(
        format!("{NS}/calicoctl-win-{node}"),
        Endpoint {
            port: PORT.to_string(),
            answer,
        },
    );
}

/// The diags identity's roles applied (`rules`), and its kubeconfig.
pub(crate) fn identity(api: &FakeApi, dir: &Path, rules: &[serde_json::Value]) -> Cluster {
    for m in rules {
        assert!(api.apply(m), "{m}");
    }
    let kubeconfig = crate::support::service_account_kubeconfig(api, dir, NS, SA);
    Cluster::connect(&[kubeconfig], &Default::default(), false).expect("connects")
}

/// `identity` with `rules` (its kubeconfig in the temp dir) and an empty `bundles` folder there.
pub(crate) fn gatherer(
    api: &FakeApi,
    rules: &[serde_json::Value],
) -> (tempfile::TempDir, Cluster, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = identity(api, dir.path(), rules);
    let out = dir.path().join("bundles");
    diags::prepare_out(&out).expect("out");
    (dir, c, out)
}

pub(crate) fn options(out: &Path) -> Gather {
    Gather {
        namespace: NS.into(),
        daemon_set: DS.into(),
        pod_selector: "app.kubernetes.io/name=calicoctl-win".into(),
        port: PORT,
        node_selector: None,
        out: out.to_owned(),
        concurrency: diags::CONCURRENCY,
        // Generous: no test here waits it out (those that do set their own), and a node's
        // bundle must land whole within it on a loaded machine too (2 s was missed in CI).
        node_timeout: Duration::from_secs(30),
        total_timeout: Duration::from_secs(120),
        cap: diags::BUNDLE_CAP,
    }
}

pub(crate) fn line<'a>(index: &'a Index, node: &str) -> &'a diags::NodeBundle {
    index.nodes.iter().find(|l| l.node == node).expect(node)
}

/// 100 nodes, one of which accepts and never answers: 99 bundles land whole (one of 3 MiB,
/// far more than a frame of the stream, whose sha256 matches), the silent node is named
/// timed out after its own timeout and the run goes on past it; no partial file is left.
#[test]
fn a_hundred_nodes_are_gathered_past_one_that_does_not_answer() {
    let api = FakeApi::start();
    let mut want = std::collections::BTreeMap::new();
    for i in 0..100u32 {
        let node = format!("win-{i:03}");
        node_with_pod(&api, &node, &format!("10.0.{}.{}", i / 200, i % 200 + 10));
        if i == 42 {
            serve(&api, &node, Answer::Silent);
            continue;
        }
        let b = bundle(i, if i == 7 { 3 << 20 } else { 20_000 });
        want.insert(node.clone(), calicoctl_win::files::sha256_hex(&b));
        serve(&api, &node, Answer::Bundle(b.into()));
    }
    // A Linux node is not asked.
    let mut linux = crate::support::fake_api::meta("v1", "Node", "linux-1", None);
    linux["metadata"]["labels"] = json!({"kubernetes.io/os": "linux"});
    api.put("/api/v1/nodes/linux-1", linux);
    let (_dir, c, out) = gatherer(&api, &rights::manifests(SA, (NS, NS), CALICO_NS));
    let started = std::time::Instant::now();
    // Each node's bound is generous here: the 3 MiB bundle must land whole on a loaded machine
    // too (it missed a 2 s bound once in CI); the 100 nodes' time is printed, not asserted.
    let mut g = options(&out);
    g.node_timeout = Duration::from_secs(20);
    // The run's own bound only keeps the test from hanging: far past what the run takes, so
    // that a slow machine is no failure (the 2-minute target is `benches/fleet_diags.rs`').
    g.total_timeout = Duration::from_secs(900);
    let index = diags::gather(&c, &g).expect("gathers");
    println!("gathered 100 nodes in {:?}", started.elapsed());
    assert_eq!((index.gathered, index.failed), (99, 1), "{index:#?}");
    assert!(!index.run_timed_out);
    let silent = line(&index, "win-042");
    assert_eq!(silent.reason, Some(Reason::TimedOut), "{silent:?}");
    assert!(
        silent
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("20s"),
        "{silent:?}"
    );
    for (node, sha) in &want {
        let l = line(&index, node);
        assert_eq!(l.sha256.as_ref(), Some(sha), "{l:?}");
        let file = out.join(format!("{node}.zip"));
        assert_eq!(&calicoctl_win::files::sha256_file(&file).expect("zip"), sha);
    }
    assert_eq!(
        line(&index, "win-007").size,
        Some(bundle(7, 3 << 20).len() as u64)
    );
    diags::write_index(&out, &index).expect("index");
    let left: Vec<_> = fs_err::read_dir(&out)
        .expect("out")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".part"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert!(!out.join("win-042.zip").exists());
    let doc: serde_json::Value =
        serde_json::from_slice(&fs_err::read(out.join("index.json")).expect("json")).expect("json");
    assert_eq!(doc["nodes"].as_array().map(Vec::len), Some(100));
    let text = fs_err::read_to_string(out.join("index.txt")).expect("text");
    assert!(text.contains("win-042  failed"), "{text}");
    assert!(
        text.contains("100 node(s): 99 gathered, 1 failed"),
        "{text}"
    );
}

/// Each way a node fails is named with its reason: no pod, a pod that does not run, nothing
/// listening, the endpoint's refusal, a bundle over the cap, an answer that is no zip; the
/// node selector narrows the nodes; the run's timeout names the nodes not gathered by then.
#[test]
fn each_node_that_fails_is_named_with_why() {
    let api = FakeApi::start();
    for (i, node) in ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"]
        .iter()
        .enumerate()
    {
        node_with_pod(&api, node, &format!("10.0.0.{}", i + 10));
        serve(&api, node, Answer::Bundle(bundle(i as u32, 100).into()));
    }
    api.remove(&format!("/api/v1/namespaces/{NS}/pods/calicoctl-win-a"));
    let path = format!("/api/v1/namespaces/{NS}/pods/calicoctl-win-b");
    let mut p = api.get(&path).expect("pod");
    p["status"] = json!({"phase": "Pending"});
    api.put(&path, p);
    api.lock().diags.remove(&format!("{NS}/calicoctl-win-c"));
    serve(&api, "d", Answer::Status(404, "404 page not found"));
    serve(&api, "h", Answer::Node(503, "busy"));
    serve(&api, "i", Answer::Node(504, "build-timed-out"));
    serve(&api, "j", Answer::Node(401, "unauthenticated"));
    serve(&api, "k", Answer::Node(413, "too-big"));
    serve(&api, "e", Answer::Bundle(bundle(9, 5000).into()));
    serve(
        &api,
        "f",
        Answer::Bundle(b"<html>login</html>".to_vec().into()),
    );
    let (dir, c, out) = gatherer(&api, &rights::manifests(SA, (NS, NS), CALICO_NS));
    let mut g = options(&out);
    g.cap = 1000;
    let index = diags::gather(&c, &g).expect("gathers");
    let reasons: Vec<_> = index
        .nodes
        .iter()
        .map(|l| (l.node.as_str(), l.reason))
        .collect();
    assert_eq!(
        reasons,
        [
            ("a", Some(Reason::NoPod)),
            ("b", Some(Reason::PodNotRunning)),
            ("c", Some(Reason::Unreachable)),
            ("d", Some(Reason::NotCalicoNode)),
            ("e", Some(Reason::TooBig)),
            ("f", Some(Reason::NotAZip)),
            ("g", None),
            ("h", Some(Reason::NodeBusy)),
            ("i", Some(Reason::NodeTimedOut)),
            ("j", Some(Reason::NodeRefused)),
            ("k", Some(Reason::TooBig)),
        ]
    );
    // The API server's own 503 (its Status) and the node's (marked) are told apart.
    let said = |n: &str| line(&index, n).message.clone().unwrap_or_default();
    assert!(
        said("c").contains("the API server did not reach its pod (503)"),
        "{}",
        said("c")
    );
    for n in ["h", "i", "j", "k"] {
        assert!(!said(n).contains("API server"), "{n}: {}", said(n));
    }
    assert!(
        said("h").contains("building another bundle"),
        "{}",
        said("h")
    );
    assert!(said("i").contains("its own limit (45s)"), "{}", said("i"));
    assert!(!out.join("e.zip").exists() && !out.join(".e.zip.part").exists());
    // A directory a run wrote is refused: each run writes a new one.
    assert!(diags::prepare_out(&out).is_err());

    let out = dir.path().join("selected");
    diags::prepare_out(&out).expect("out");
    let mut g = options(&out);
    g.node_selector = Some("kubernetes.io/hostname=none".into());
    assert!(diags::gather(&c, &g).expect("gathers").nodes.is_empty());

    let out = dir.path().join("run-timeout");
    diags::prepare_out(&out).expect("out");
    serve(&api, "g", Answer::Silent);
    let mut g = options(&out);
    g.node_timeout = Duration::from_secs(3600);
    g.total_timeout = Duration::from_secs(1);
    let index = diags::gather(&c, &g).expect("gathers");
    assert!(index.run_timed_out);
    assert_eq!(line(&index, "g").reason, Some(Reason::RunTimedOut));
}

/// The diags identity's rules, as `fleet rbac --identity diags` writes them, are enough, and
/// each is needed: without any one, the gathering fails naming the resource it lacked, or (the
/// review right of calico-node) the node's review of the request's token is refused.
#[test]
fn every_diags_rule_is_needed_and_enough() {
    let doc = crate::support::json_of(
        crate::support::cmd()
            .args([
                "fleet",
                "rbac",
                "--identity",
                "diags",
                "--name",
                SA,
                "--namespace",
                NS,
            ])
            .args(["-o", "json"]),
    );
    assert_eq!(
        doc["manifests"],
        json!(rights::manifests(SA, (NS, NS), CALICO_NS))
    );
    crate::rights::every_rule_is_needed(&doc, "fleet diags", |objects| {
        let api = FakeApi::start();
        node_with_pod(&api, "win-1", "10.0.0.5");
        serve(&api, "win-1", Answer::Bundle(bundle(1, 100).into()));
        let (dir, c, out) = gatherer(&api, objects);
        match diags::gather(&c, &options(&out)) {
            Err(e) => Some(format!("{e:#}")),
            Ok(index) if index.failed > 0 => Some(format!("{index:?}")),
            // The node lets the request in only when calico-node may review its token.
            Ok(_) => {
                let node_c = calico_node(&api, dir.path());
                tokens(&api).into_iter().find_map(|(node, t)| {
                    match auth::review(
                        &node_c,
                        t.as_deref().unwrap_or_default(),
                        &node_name(&node),
                        NS,
                    ) {
                        Verdict::Allowed => None,
                        v => Some(format!("{v:?}")),
                    }
                })
            }
        }
    });
}

/// calico-node's own cluster client (its account in Calico's namespace, with Calico's roles and
/// whatever the applied manifests give it): what CalicoNode reviews tokens as.
pub(crate) fn calico_node(api: &FakeApi, dir: &Path) -> Cluster {
    api.calico_node_rbac();
    let path = format!("/api/v1/namespaces/{CALICO_NS}/serviceaccounts/calico-node");
    if api.get(&path).is_none() {
        api.put(
            &path,
            crate::support::fake_api::meta("v1", "ServiceAccount", "calico-node", Some(CALICO_NS)),
        );
    }
    let kubeconfig = crate::support::service_account_kubeconfig(api, dir, CALICO_NS, "calico-node");
    Cluster::connect(&[kubeconfig], &Default::default(), false).expect("connects")
}

/// The token each `GET /diags` carried, by node.
fn tokens(api: &FakeApi) -> Vec<(String, Option<String>)> {
    let prefix = format!("{NS}/calicoctl-win-");
    api.lock()
        .diags_tokens
        .iter()
        .map(|(pod, t)| {
            (
                pod.strip_prefix(&prefix).unwrap_or(pod).to_owned(),
                t.clone(),
            )
        })
        .collect()
}

/// Each node's `GET /diags` carries a token of calicoctl-win-diags made for that node alone:
/// the review CalicoNode makes (as calico-node, with the right `fleet rbac --identity diags`
/// gives it) lets it in on its own node only, and only as that account in that namespace; the
/// token is no credential for the API server itself; without the review right the review is
/// refused (403), which the node reports rather than serving.
#[test]
fn each_request_carries_a_token_for_its_node_alone_that_calico_node_reviews() {
    let api = FakeApi::start();
    for (i, node) in ["win-1", "win-2"].iter().enumerate() {
        node_with_pod(&api, node, &format!("10.0.0.{}", i + 10));
        serve(&api, node, Answer::Bundle(bundle(i as u32, 100).into()));
    }
    let (dir, c, out) = gatherer(&api, &rights::manifests(SA, (NS, NS), CALICO_NS));
    let index = diags::gather(&c, &options(&out)).expect("gathers");
    assert_eq!(index.gathered, 2, "{index:#?}");
    let node_c = calico_node(&api, dir.path());
    let carried = tokens(&api);
    assert_eq!(carried.len(), 2, "{carried:?}");
    for (node, token) in carried {
        let token = token.expect("the request carried a token");
        let other = if node == "win-1" { "win-2" } else { "win-1" };
        assert_eq!(
            auth::review(&node_c, &token, &node_name(&node), NS),
            Verdict::Allowed
        );
        for (n, ns) in [(other, NS), (node.as_str(), "elsewhere")] {
            // Another node's audience is refused with the authenticator's error (jwt.go:
            // "token audiences ... is invalid"), another namespace's account plainly.
            let v = auth::review(&node_c, &token, &node_name(n), ns);
            assert!(
                matches!(v, Verdict::Denied(_) | Verdict::Unsettled(_)),
                "{n} {ns}: {v:?}"
            );
        }
        assert!(
            !api.accepts(&token),
            "the node's token is taken by the API server"
        );
    }
    // Another account's token, even for this node's audience, is not let in.
    let (code, answer) = api.post_as(
        &api.token,
        &format!("/api/v1/namespaces/{CALICO_NS}/serviceaccounts/calico-node/token"),
        &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"audiences": [auth::audience(&node_name("win-1"))], "expirationSeconds": 600}}),
    );
    assert_eq!(code, 201, "{answer}");
    let theirs = answer["status"]["token"].as_str().expect("token");
    let v = auth::review(&node_c, theirs, &node_name("win-1"), NS);
    assert!(
        matches!(v, Verdict::Denied(ref why) if why.contains("calico-node")),
        "{v:?}"
    );
    // Without the review right, the review itself is refused.
    api.remove(&format!(
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{}",
        rights::REVIEW
    ));
    let (_, token) = &tokens(&api)[0];
    let v = auth::review(
        &node_c,
        token.as_deref().expect("token"),
        &node_name("win-1"),
        NS,
    );
    assert!(
        matches!(v, Verdict::Failed { forbidden: true, ref why } if why.contains("tokenreviews")),
        "{v:?}"
    );
}

/// A node whose bundle takes longer to build than the API client's 15 s read bound (a node
/// may take 45 s) is gathered: only its node timeout bounds it, not named unreachable at 15 s.
#[test]
fn a_node_that_builds_for_longer_than_the_clients_read_bound_is_gathered() {
    let api = FakeApi::start();
    node_with_pod(&api, "win-slow", "10.0.0.10");
    let b = bundle(1, 20_000);
    serve(
        &api,
        "win-slow",
        Answer::Built(Duration::from_secs(17), b.clone().into()),
    );
    let (_dir, c, out) = gatherer(&api, &rights::manifests(SA, (NS, NS), CALICO_NS));
    let mut g = options(&out);
    g.node_timeout = diags::NODE_TIMEOUT;
    let index = diags::gather(&c, &g).expect("gathers");
    let want = calicoctl_win::files::sha256_hex(&b);
    assert_eq!(
        line(&index, "win-slow").sha256.as_deref(),
        Some(want.as_str()),
        "{index:#?}"
    );
}
