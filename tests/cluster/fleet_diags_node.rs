//! `fleet diags` against what answers on the nodes: only the DaemonSet's own pods are asked;
//! a token without audiences is no node's; and the whole way, end to end, from the gatherer
//! through the fake API server's pod proxy to CalicoNode's own `/diags` endpoint
//! (`supervise::metrics_server` on loopback, one per simulated node) and back through the fake's
//! TokenReview, with RBAC enforced.

use super::fleet_diags::{
    CALICO_NS, NS, SA, bundle, gatherer, identity, line, node_with_pod, options, serve,
};
use crate::support::fake_api::FakeApi;
use crate::support::fake_api::diags::Answer;
use calicoctl_win::fleet::diags::auth;
use calicoctl_win::fleet::diags::rights;
use calicoctl_win::fleet::diags::{self, Reason};
use serde_json::json;

/// A pod with the DaemonSet's labels on `node` that is not its own in the way `how` says, and
/// would answer with a bundle if asked.
fn impostor(api: &FakeApi, node: &str, how: &str) -> String {
    let pod = format!("impostor-{node}");
    let path = format!("/api/v1/namespaces/{NS}/pods/{pod}");
    let own = api
        .get(&format!(
            "/api/v1/namespaces/{NS}/pods/calicoctl-win-{node}"
        ))
        .expect("own pod");
    let mut p = own.clone();
    p["metadata"]["name"] = json!(pod);
    p["metadata"]["uid"] = json!(format!("uid-{pod}"));
    p["metadata"]["creationTimestamp"] = json!("2026-06-01T00:00:00Z");
    match how {
        "other-controller" => {
            p["metadata"]["ownerReferences"][0]["kind"] = json!("ReplicaSet");
            p["metadata"]["ownerReferences"][0]["uid"] = json!("uid-other");
        }
        "no-controller" => p["metadata"]["ownerReferences"][0]["controller"] = json!(false),
        "forged-uid" => p["metadata"]["ownerReferences"][0]["uid"] = json!("uid-stale"),
        "pod-network" => {
            p["spec"]["hostNetwork"] = json!(false);
            p["status"]["podIP"] = json!("192.168.9.9");
        }
        _ => panic!("{how}"),
    }
    api.put(&path, p);
    api.lock().diags.insert(
        format!("{NS}/{pod}"),
        crate::support::fake_api::diags::Endpoint {
            port: super::fleet_diags::PORT.to_string(),
            answer: Answer::Bundle(bundle(99, 100).into()),
        },
    );
    pod
}

/// A pod is asked (and given a token) only when the DaemonSet, read by its uid, is its
/// controller and it is on its node's network with its node's address: a newer pod with the
/// same labels that is not (another controller, none, a stale uid, the pod network) is named as
/// skipped and never asked; a node with only such a pod, or with its own pod at an address the
/// node no longer has, is `not-our-pod`; without `get daemonsets` nothing is asked at all.
#[test]
fn only_the_daemon_sets_own_pods_on_the_nodes_network_are_asked() {
    let api = FakeApi::start();
    for (i, node) in ["a", "b", "c", "d", "e"].iter().enumerate() {
        node_with_pod(&api, node, &format!("10.0.0.{}", i + 10));
        serve(&api, node, Answer::Bundle(bundle(i as u32, 100).into()));
    }
    let impostors = [
        impostor(&api, "a", "other-controller"),
        impostor(&api, "b", "no-controller"),
        impostor(&api, "c", "forged-uid"),
        impostor(&api, "d", "pod-network"),
    ];
    // On e, the only pod with the labels is not the DaemonSet's.
    let e = impostor(&api, "e", "other-controller");
    api.remove(&format!("/api/v1/namespaces/{NS}/pods/calicoctl-win-e"));
    // On f, the DaemonSet's pod keeps the address the node had (the kubelet does not change a
    // host-network pod's): the proxy would dial the old one.
    node_with_pod(&api, "f", "10.0.0.20");
    serve(&api, "f", Answer::Bundle(bundle(6, 100).into()));
    let path = format!("/api/v1/namespaces/{NS}/pods/calicoctl-win-f");
    let mut p = api.get(&path).expect("pod");
    p["status"]["hostIP"] = json!("10.0.0.21");
    p["status"]["hostIPs"] = json!([{"ip": "10.0.0.21"}]);
    api.put(&path, p);
    // On g, the pod's address is still one of the node's (`hostIPs`, one per family, set again
    // at each status sync), though no longer its first: it is asked.
    node_with_pod(&api, "g", "10.0.0.22");
    serve(&api, "g", Answer::Bundle(bundle(7, 100).into()));
    let path = format!("/api/v1/namespaces/{NS}/pods/calicoctl-win-g");
    let mut p = api.get(&path).expect("pod");
    p["status"]["hostIP"] = json!("fd00::22");
    p["status"]["hostIPs"] = json!([{"ip": "fd00::22"}, {"ip": "10.0.0.22"}]);
    api.put(&path, p);
    // On h, the node's first address, so its pod's, is IPv6 (a kubelet that puts IPv6
    // first): the proxy would dial it, and CalicoNode listens on IPv4 only. Named, not asked.
    node_with_pod(&api, "h", "fd00::23");
    serve(&api, "h", Answer::Bundle(bundle(8, 100).into()));
    let path = format!("/api/v1/namespaces/{NS}/pods/calicoctl-win-h");
    let mut p = api.get(&path).expect("pod");
    p["status"]["hostIPs"] = json!([{"ip": "fd00::23"}, {"ip": "10.0.0.23"}]);
    api.put(&path, p);
    let (dir, c, out) = gatherer(&api, &rights::manifests(SA, (NS, NS), CALICO_NS));
    let index = diags::gather(&c, &options(&out)).expect("gathers");
    assert_eq!((index.gathered, index.failed), (5, 3), "{index:#?}");
    let l = line(&index, "h");
    assert_eq!(l.reason, Some(Reason::Unreachable), "{l:?}");
    assert!(
        l.message
            .as_deref()
            .is_some_and(|e| e.contains("fd00::23, an IPv6 one")),
        "{l:?}"
    );
    assert_eq!(line(&index, "g").result, "ok");
    for (node, pod) in ["a", "b", "c", "d"].iter().zip(&impostors) {
        let l = line(&index, node);
        assert_eq!(l.result, "ok", "{l:?}");
        assert_eq!(l.skipped.len(), 1, "{l:?}");
        assert!(l.skipped[0].starts_with(&format!("pod {pod}: ")), "{l:?}");
    }
    assert!(line(&index, "d").skipped[0].contains("hostNetwork"));
    let l = line(&index, "e");
    assert_eq!(l.reason, Some(Reason::NotOurPod), "{l:?}");
    assert!(l.skipped[0].contains(&e), "{l:?}");
    let l = line(&index, "f");
    assert_eq!(l.reason, Some(Reason::NotOurPod), "{l:?}");
    assert!(
        l.skipped[0].contains("10.0.0.20 is not its node's (10.0.0.21)"),
        "{l:?}"
    );
    let asked: Vec<String> = api
        .lock()
        .diags_tokens
        .iter()
        .map(|(p, _)| p.clone())
        .collect();
    assert!(
        !asked.contains(&format!("{NS}/calicoctl-win-h")),
        "h was asked"
    );
    for pod in impostors.iter().chain([&e]) {
        assert!(!asked.contains(&format!("{NS}/{pod}")), "{pod} was asked");
    }
    let text = diags::summary(&index);
    assert!(
        text.contains(&format!("a  skipped pod {}", impostors[0])),
        "{text}"
    );

    // The DaemonSet is read before anything else: without it, nothing is asked.
    api.remove(&format!(
        "/apis/apps/v1/namespaces/{NS}/daemonsets/calicoctl-win"
    ));
    let out = dir.path().join("again");
    diags::prepare_out(&out).expect("out");
    let before = api.lock().diags_tokens.len();
    let e = diags::gather(&c, &options(&out)).expect_err("no DaemonSet");
    assert!(format!("{e:#}").contains("daemonsets"), "{e:#}");
    assert_eq!(api.lock().diags_tokens.len(), before);
}

/// kube-apiserver takes a token without audiences (a legacy secret's, or one of an
/// audience-agnostic authenticator such as the admin's here) for its own audiences alone: a
/// TokenReview for a node's audience does not authenticate it, one for the API server's does.
#[test]
fn a_token_without_audiences_is_no_nodes() {
    let api = FakeApi::start();
    let review = |audiences: serde_json::Value| {
        let (code, answer) = api.post_as(
            &api.token,
            "/apis/authentication.k8s.io/v1/tokenreviews",
            &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                "spec": {"token": api.token, "audiences": audiences}}),
        );
        assert_eq!(code, 201, "{answer}");
        answer["status"].clone()
    };
    let node = review(json!([auth::audience(&crate::support::node_name("win-1"))]));
    assert_eq!(node["authenticated"], json!(false), "{node}");
    let own = review(json!(["https://kubernetes.default.svc"]));
    assert_eq!(own["authenticated"], json!(true), "{own}");
    assert_eq!(own["audiences"], json!(["https://kubernetes.default.svc"]));
}

/// A node whose metrics endpoint already holds `PER_SOURCE` connections from the address the
/// pod proxy comes from (callers behind one address share its cap) answers the proxy's request
/// `503` busy, marked as its diags server's busy answer is, and the gatherer names it
/// `node-busy`, not unreachable (it closed such a connection unanswered: the proxy's `503
/// error trying to reach service: EOF`).
#[test]
fn a_node_past_its_connection_cap_is_named_busy() {
    use calicoctl_win::duration::Stop;
    use calicoctl_win::supervise::metrics_server::{PER_SOURCE, accept};
    use calicoctl_win::supervise::{Log, LogSettings};
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};
    use std::sync::{Mutex, mpsc};
    let api = FakeApi::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    node_with_pod(&api, "win-1", "10.0.0.10");
    serve(&api, "win-1", Answer::Forward(addr));
    let c = identity(
        &api,
        dir.path(),
        &rights::manifests(SA, (NS, NS), CALICO_NS),
    );
    // Each held connection's scrape is held until the test lets them go.
    let (entered, held) = mpsc::channel();
    let (release, released) = mpsc::channel::<()>();
    let (entered, released) = (Mutex::new(entered), Mutex::new(released));
    let metrics = || {
        let _ = entered.lock().expect("lock").send(());
        let _ = released.lock().expect("lock").recv();
        "m 1\n".to_owned()
    };
    let log = Log::open(dir.path().join("node.log"), LogSettings::default(), false);
    let stop = Stop::new();
    let count = |_: &str, _: u64| {};
    struct StopOnDrop<'a>(&'a Stop);
    impl Drop for StopOnDrop<'_> {
        fn drop(&mut self) {
            self.0.request();
        }
    }
    let index = std::thread::scope(|s| {
        s.spawn(|| accept(&metrics, None, &listener, &stop, (&log, &count, &|_| {})));
        // A failure below stops the endpoint too, so that the test fails rather than waits.
        let _stop = StopOnDrop(&stop);
        let held: Vec<TcpStream> = (0..PER_SOURCE)
            .map(|_| {
                let mut c = TcpStream::connect(addr).expect("connect");
                c.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
                    .expect("send");
                held.recv().expect("the scrape is held");
                c
            })
            .collect();
        let out = dir.path().join("bundles");
        diags::prepare_out(&out).expect("out");
        let index = diags::gather(&c, &options(&out));
        drop(release);
        drop(held);
        index
    });
    let index = index.expect("gathers");
    let l = line(&index, "win-1");
    assert_eq!(l.reason, Some(Reason::NodeBusy), "{l:?}");
}

/// The end-to-end run: its builder is a shell script, so it runs where the node's own tests do.
#[cfg(unix)]
mod end_to_end {
    use super::super::fleet_diags::calico_node;
    use super::*;
    use calicoctl_win::cluster::Cluster;
    use calicoctl_win::duration::Stop;
    use calicoctl_win::fleet::diags::auth::Verdict;
    use calicoctl_win::host::Files;
    use calicoctl_win::host::sim::SimHost;
    use calicoctl_win::layout::InstallRoot;
    use calicoctl_win::supervise::diags_review::Review;
    use calicoctl_win::supervise::diags_server::Diags;
    use calicoctl_win::supervise::{Log, LogSettings};
    use std::net::TcpListener;
    use std::path::Path;
    use std::time::Duration;

    const ROOT: &str = r"C:\CalicoWindows";

    /// CalicoNode's review as it makes it (`auth::review` as calico-node, for its own node
    /// and `metrics.diags_namespace`), with calico-node's client given rather than read from the
    /// node's kubeconfig.
    struct AsCalicoNode<'a> {
        cluster: &'a Cluster,
        node: calicoctl_win::k8s_name::NodeName,
    }

    impl Review for AsCalicoNode<'_> {
        fn review(&self, token: &str, stop: &Stop) -> Verdict {
            auth::review_until(self.cluster, token, &self.node, NS, stop)
        }
    }

    /// A simulated node's install root and a builder standing in for `calicoctl-win diags
    /// --offline` (it copies `zip` to where the endpoint takes the bundle from).
    struct Node {
        host: SimHost,
        root: InstallRoot,
        builder: String,
    }

    impl Node {
        fn new(dir: &Path, name: &str, zip: &[u8]) -> Self {
            let host = SimHost::in_memory("ws2022").expect("host");
            host.create_dir(ROOT).expect("root");
            let out = host
                .state_dir()
                .join("fs/c/calicowindows")
                .join(calicoctl_win::layout::DIAGS_SERVE_DIR)
                .join("bundle.zip");
            let src = dir.join(format!("{name}.zip"));
            fs_err::write(&src, zip).expect("zip");
            let builder = dir.join(format!("{name}-diags.sh"));
            fs_err::write(
                &builder,
                format!(
                    "#!/bin/sh\n/bin/cp '{}' '{}'\n",
                    src.display(),
                    out.display()
                ),
            )
            .expect("script");
            let mut p = fs_err::metadata(&builder).expect("meta").permissions();
            std::os::unix::fs::PermissionsExt::set_mode(&mut p, 0o755);
            fs_err::set_permissions(&builder, p).expect("chmod");
            Self {
                host,
                root: InstallRoot::new(ROOT),
                builder: builder.display().to_string(),
            }
        }
    }

    struct StopOnDrop<'a>(&'a [Stop]);

    impl Drop for StopOnDrop<'_> {
        fn drop(&mut self) {
            self.0.iter().for_each(Stop::request);
        }
    }

    /// Three simulated nodes serve `/diags` with CalicoNode's own endpoint on loopback, reviewing
    /// each request's token with the fake API server as calico-node; a fourth accepts and never
    /// answers. With the rights `fleet rbac --identity diags` writes, the gatherer gets each
    /// answering node's bundle whole through the pod proxy, and names the silent one timed out after
    /// its timeout; without calico-node's review right, each node refuses (`node-refused`).
    #[test]
    fn the_gatherer_reaches_each_nodes_own_endpoint_through_the_pod_proxy() {
        let api = FakeApi::start();
        let dir = tempfile::tempdir().expect("tempdir");
        let names = ["win-1", "win-2", "win-3"];
        let zips: Vec<Vec<u8>> = (0..3).map(|i| bundle(i, 30_000 + i as usize)).collect();
        let nodes: Vec<Node> = names
            .iter()
            .zip(&zips)
            .map(|(n, z)| Node::new(dir.path(), n, z))
            .collect();
        let listeners: Vec<TcpListener> = names
            .iter()
            .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind"))
            .collect();
        // The silent node: its port accepts (the kernel's backlog) and nothing answers.
        let silent = TcpListener::bind("127.0.0.1:0").expect("bind");
        for (i, name) in names.iter().chain(["win-4"].iter()).enumerate() {
            node_with_pod(&api, name, &format!("10.0.0.{}", i + 10));
            let to = listeners
                .get(i)
                .unwrap_or(&silent)
                .local_addr()
                .expect("addr");
            serve(&api, name, Answer::Forward(to));
        }
        let c = identity(
            &api,
            dir.path(),
            &rights::manifests(SA, (NS, NS), CALICO_NS),
        );
        let node_c = calico_node(&api, dir.path());
        let reviews: Vec<AsCalicoNode> = names
            .iter()
            .map(|n| AsCalicoNode {
                cluster: &node_c,
                node: crate::support::node_name(n),
            })
            .collect();
        let stops: Vec<Stop> = names.iter().map(|_| Stop::new()).collect();
        let logs: Vec<Log> = names
            .iter()
            .map(|n| {
                let path = dir.path().join(format!("{n}.log"));
                Log::open(path, LogSettings::default(), false)
            })
            .collect();
        let diags: Vec<Diags> = (0..names.len())
            .map(|i| {
                let n = &nodes[i];
                let mut d = Diags::new(&n.host, &n.root, (&stops[i], &logs[i]), &reviews[i]);
                d.program = n.builder.clone();
                d
            })
            .collect();
        std::thread::scope(|s| {
            for i in 0..names.len() {
                let (n, d, l) = (&nodes[i], &diags[i], &listeners[i]);
                let (stop, log) = (&stops[i], &logs[i]);
                s.spawn(move || {
                    calicoctl_win::supervise::metrics_server::serve_with(
                        &n.host,
                        &n.root,
                        Some(d),
                        l,
                        stop,
                        log,
                    )
                });
            }
            let _stop = StopOnDrop(&stops);
            let out = dir.path().join("bundles");
            diags::prepare_out(&out).expect("out");
            let mut g = options(&out);
            // The quiet node is waited out; the others' bundles must land within it on a
            // loaded machine too.
            g.node_timeout = Duration::from_secs(20);
            let index = diags::gather(&c, &g).expect("gathers");
            assert_eq!((index.gathered, index.failed), (3, 1), "{index:#?}");
            for (name, zip) in names.iter().zip(&zips) {
                let l = line(&index, name);
                let sha = calicoctl_win::files::sha256_hex(zip);
                assert_eq!(l.sha256.as_ref(), Some(&sha), "{l:?}");
                let file = out.join(format!("{name}.zip"));
                assert_eq!(fs_err::read(&file).expect("zip"), *zip);
            }
            let quiet = line(&index, "win-4");
            assert_eq!(quiet.reason, Some(Reason::TimedOut), "{quiet:?}");
            assert!(
                quiet.message.as_deref().unwrap_or_default().contains("20s"),
                "{quiet:?}"
            );

            // Without calico-node's review right, every node refuses: the review is the node's.
            api.remove(&format!(
                "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{}",
                rights::REVIEW
            ));
            let out = dir.path().join("refused");
            diags::prepare_out(&out).expect("out");
            api.remove("/api/v1/nodes/win-4");
            let mut g = options(&out);
            g.node_timeout = Duration::from_secs(30);
            let index = diags::gather(&c, &g).expect("gathers");
            let reasons: Vec<_> = index.nodes.iter().map(|l| l.reason).collect();
            assert_eq!(reasons, [Some(Reason::NodeRefused); 3], "{index:#?}");
        });
    }
}
