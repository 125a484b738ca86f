//! Drain benchmark (not a test): 110 pods on node win-1 of the fake API server, drained by
//! `calicoctl-win reconfigure --drain` (a VNI change on an installed simulated node: cordon,
//! evict, wait, stop, new network, start, wait Ready, uncordon) against `kubectl drain` +
//! `kubectl uncordon` on the same server. Several runs of each; prints both medians and their
//! ratio (target <= 1.0). calicoctl-win does strictly more work than kubectl here.
//!
//! Run with `cargo bench --bench drain` (RUNS=N to change the number of runs).

#[path = "../tests/support/mod.rs"]
mod support;

use serde_json::json;
use std::process::Command;
use std::time::{Duration, Instant};
use support::fake_api::{FakeApi, meta};
use support::release::release_zip;
use support::{SimNode, tool};

const PODS: usize = 110;

fn put_pods(api: &FakeApi) {
    for i in 0..PODS {
        let name = format!("web-{i}");
        let mut p = meta("v1", "Pod", &name, Some("default"));
        p["spec"] = json!({"nodeName": "win-1", "containers": [{"name": "c", "image": "i"}]});
        p["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "name": "web", "uid": "rs-uid", "controller": true}]);
        api.put(&format!("/api/v1/namespaces/default/pods/{name}"), p);
    }
}

fn pods_left(api: &FakeApi) -> usize {
    api.lock()
        .objects
        .keys()
        .filter(|k| k.contains("/pods/"))
        .count()
}

fn cluster() -> FakeApi {
    let api = FakeApi::start();
    api.healthy_calico();
    let mut n = api.get("/api/v1/nodes/win-1").expect("node");
    n["status"] = json!({"conditions": [{"type": "Ready", "status": "True"}]});
    api.put("/api/v1/nodes/win-1", n);
    api
}

/// The cluster moves to VNI 4097 (after the node was installed with 4096).
fn new_vni(api: &FakeApi) {
    let path = "/apis/crd.projectcalico.org/v1/felixconfigurations/default";
    let mut f = api.get(path).expect("felix");
    f["spec"]["vxlanVNI"] = json!(4097);
    api.put(path, f);
}

fn ours() -> Duration {
    let api = cluster();
    let node = SimNode::new(&api);
    let zip = release_zip(node.dir.path(), "3.30.2", "calico-node.exe");
    let (code, _, err) = node.run(&["install", "--release-zip", &zip.display().to_string()]);
    assert_eq!(code, 0, "install: {err}");
    new_vni(&api);
    put_pods(&api);
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_calicoctl-win"))
        .env_clear()
        .args(["--set", "node.name=win-1", "--set", "vxlan.vni=4097"])
        .args(["reconfigure", "--drain", "-o", "json", "--sim-host"])
        .arg(node.sim())
        .arg("--kubeconfig")
        .arg(&node.admin)
        .output()
        .expect("run calicoctl-win");
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(pods_left(&api), 0);
    took
}

fn kubectl(bin: &std::path::Path) -> Duration {
    let api = cluster();
    let dir = tempfile::tempdir().expect("tempdir");
    let admin = api.kubeconfig(dir.path(), None);
    put_pods(&api);
    let run = |args: &[&str]| {
        let out = Command::new(bin)
            .env("HOME", dir.path())
            .env("KUBECONFIG", &admin)
            .args(args)
            .output()
            .expect("run kubectl");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let started = Instant::now();
    run(&["drain", "win-1", "--ignore-daemonsets", "--timeout", "5m"]);
    run(&["uncordon", "win-1"]);
    let took = started.elapsed();
    assert_eq!(pods_left(&api), 0);
    took
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    // `cargo test --benches` runs this with --bench absent; only a real bench run measures.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let Some(bin) = tool("kubectl") else {
        eprintln!("kubectl is needed for the comparison (apt-get install -y kubectl)");
        std::process::exit(1);
    };
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let mut a = Vec::new();
    let mut b = Vec::new();
    for i in 0..runs {
        a.push(ours());
        b.push(kubectl(&bin));
        eprintln!(
            "run {}: calicoctl-win {:?}, kubectl {:?}",
            i + 1,
            a[i],
            b[i]
        );
    }
    let (ma, mb) = (median(a), median(b));
    println!("drain of {PODS} pods on the fake API server, {runs} runs");
    println!(
        "calicoctl-win reconfigure --drain (whole run): median {:.3} s",
        ma.as_secs_f64()
    );
    println!(
        "kubectl drain + uncordon:                      median {:.3} s",
        mb.as_secs_f64()
    );
    println!(
        "ratio (target <= 1.0): {:.3}",
        ma.as_secs_f64() / mb.as_secs_f64()
    );
}
