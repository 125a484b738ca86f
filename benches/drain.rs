//! Drain benchmark (not a test): 500 pods on node win-1 of the fake API server, drained by
//! `calicoctl-win reconfigure --drain` (a VNI change on an installed simulated node: cordon,
//! evict, wait, stop, new network, start, wait Ready, uncordon), and on the same server by:
//! - the floor, `scripts/drain-floor.py`: a minimal client issuing only the drain's requests
//!   (cordon, list, the evictions with the same concurrency, the waits, uncordon), timed from
//!   its first request to its last;
//! - `kubectl drain` + `kubectl uncordon`, whose time is its client-side rate limit: client-go's
//!   defaults (`staging/src/k8s.io/client-go/rest/config.go`: DefaultQPS 5, DefaultBurst 10,
//!   read at kubernetes v1.20.2 in Debian's source package; kubectl 1.32's measured 98.8 s for
//!   500 evictions is the same 5 requests/s), which kubectl has no flag to lift (`kubectl
//!   options` lists no QPS or burst flag), so 500 evictions take about 100 s whatever the server
//!   does. It is shown for scale, not as the comparison.
//!
//! Several runs of each, interleaved; prints the medians, calicoctl-win's time as a ratio to
//! the floor, and the TCP connections each opened to the API server (target for calicoctl-win
//! <= 32). calicoctl-win's run does more than the floor: its process start, the config, the
//! simulated node's services and network, and the wait for the node to be Ready.
//!
//! Run with `cargo bench --bench drain` (RUNS=N to change the number of runs, PODS=N the pods,
//! KUBECTL=0 to leave kubectl out).

#[path = "../tests/support/mod.rs"]
mod support;

use std::process::Command;
use std::time::{Duration, Instant};
use support::fake_api::FakeApi;
use support::release::release_zip;
use support::{Node, tool};

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

/// Evictions in flight, for calicoctl-win (`--drain-concurrency`) and the floor alike.
const CONCURRENCY: &str = "16";

fn cluster() -> FakeApi {
    let api = FakeApi::start();
    api.healthy_calico();
    api.set_node_ready("win-1", "True", "kubelet is posting ready status");
    api
}

/// One drain: how long it took and the connections it opened.
fn ours() -> (Duration, usize) {
    let api = cluster();
    let node = Node::new(&api);
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
        .args(["reconfigure", "--drain", "--drain-concurrency", CONCURRENCY])
        .args(["-o", "json", "--sim-host"])
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

/// The floor: the drain's requests alone, from a minimal client (its own timing).
fn floor() -> (Duration, usize) {
    let api = cluster();
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = dir.path().join("ca.pem");
    fs_err::write(&ca, &api.ca_pem).expect("ca");
    put_pods(&api);
    api.lock().connections = 0;
    let out = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scripts/drain-floor.py"
        ))
        .args([
            &api.url,
            &ca.display().to_string(),
            &api.token,
            "win-1",
            CONCURRENCY,
        ])
        .output()
        .expect("run python3 scripts/drain-floor.py");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(api.pod_count(), 0);
    let secs: f64 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("the floor prints its seconds");
    let connections = api.lock().connections;
    (Duration::from_secs_f64(secs), connections)
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
    let kubectl_bin = if std::env::var("KUBECTL").as_deref() == Ok("0") {
        None
    } else if let Some(bin) = tool("kubectl") {
        Some(bin)
    } else {
        eprintln!(
            "kubectl is needed for the comparison (apt-get install -y kubectl), or KUBECTL=0"
        );
        std::process::exit(1);
    };
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let load = fs_err::read_to_string("/proc/loadavg").unwrap_or_default();
    let (mut a, mut f, mut k) = (Vec::new(), Vec::new(), Vec::new());
    let (mut ca, mut cf, mut ck) = (0, 0, 0);
    for i in 0..runs {
        let (t, c) = ours();
        a.push(t);
        ca = ca.max(c);
        let (t, c) = floor();
        f.push(t);
        cf = cf.max(c);
        eprintln!("run {}: calicoctl-win {:?}, floor {:?}", i + 1, a[i], f[i]);
        if let Some(bin) = &kubectl_bin {
            let (t, c) = kubectl(bin);
            k.push(t);
            ck = ck.max(c);
            eprintln!("run {}: kubectl {:?}", i + 1, k[i]);
        }
    }
    let (ma, mf) = (median(a), median(f));
    println!(
        "drain of {} pods on the fake API server, {runs} runs, {CONCURRENCY} evictions in flight; load average before: {}",
        pods(),
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!(
        "calicoctl-win reconfigure --drain (whole run):  median {:.3} s, connections at most {ca} (target <= 32)",
        ma.as_secs_f64()
    );
    println!(
        "floor: the drain's requests alone (script):     median {:.3} s, connections at most {cf}",
        mf.as_secs_f64()
    );
    println!(
        "ratio calicoctl-win / floor: {:.2}",
        ma.as_secs_f64() / mf.as_secs_f64()
    );
    if !k.is_empty() {
        println!(
            "kubectl drain + uncordon:                       median {:.3} s, connections at most {ck} (its client-side limit: 5 requests/s after a burst of 10, no flag lifts it)",
            median(k).as_secs_f64()
        );
    }
}
