//! Drain benchmark (not a test): 500 pods on node win-1 of the fake API server, drained by
//! `calicoctl-win reconfigure --drain` (a VNI change on an installed simulated node: cordon,
//! evict, wait, stop, new network, start, wait Ready, uncordon) against `kubectl drain` +
//! `kubectl uncordon` on the same server. Several runs of each; prints both medians, their
//! ratio (target <= 1.0) and the TCP connections each opened to the API server (target for
//! calicoctl-win <= 32). calicoctl-win does strictly more work than kubectl here.
//!
//! Run with `cargo bench --bench drain` (RUNS=N to change the number of runs, PODS=N the pods).

#[path = "../tests/support/mod.rs"]
mod support;

use std::process::Command;
use std::time::{Duration, Instant};
use support::fake_api::FakeApi;
use support::release::release_zip;
use support::{SimNode, tool};

fn pods() -> usize {
    std::env::var("PODS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(500)
}

fn put_pods(api: &FakeApi) {
    for i in 0..pods() {
        api.put_pod("default", &format!("web-{i}"), "win-1", Some("ReplicaSet"));
    }
}

fn cluster() -> FakeApi {
    let api = FakeApi::start();
    api.healthy_calico();
    api.set_node_ready("win-1", "True", "kubelet is posting ready status");
    api
}

/// One drain: how long it took and the connections it opened.
fn ours() -> (Duration, usize) {
    let api = cluster();
    let node = SimNode::new(&api);
    let zip = release_zip(node.dir.path(), "3.30.2", "calico-node.exe");
    let (code, _, err) = node.run(&["install", "--release-zip", &zip.display().to_string()]);
    assert_eq!(code, 0, "install: {err}");
    // The cluster moves to VNI 4097 after the node was installed with 4096.
    api.set_felix_vni(4097);
    put_pods(&api);
    api.lock().connections = 0;
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
    assert_eq!(api.pod_count(), 0);
    let connections = api.lock().connections;
    (took, connections)
}

fn kubectl(bin: &std::path::Path) -> (Duration, usize) {
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
    assert_eq!(api.pod_count(), 0);
    let connections = api.lock().connections;
    (took, connections)
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
    let (mut ca, mut cb) = (0, 0);
    for i in 0..runs {
        let (t, c) = ours();
        a.push(t);
        ca = ca.max(c);
        let (t, c) = kubectl(&bin);
        b.push(t);
        cb = cb.max(c);
        eprintln!(
            "run {}: calicoctl-win {:?}, kubectl {:?}",
            i + 1,
            a[i],
            b[i]
        );
    }
    let (ma, mb) = (median(a), median(b));
    println!(
        "drain of {} pods on the fake API server, {runs} runs",
        pods()
    );
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
    println!(
        "connections to the API server: calicoctl-win at most {ca} (target <= 32), kubectl at most {cb}"
    );
}
