//! `fleet status` benchmark (not a test): 1,000 and 5,000 healthy Windows nodes on the fake API
//! server, each about 12 KB as a real Windows Node is (kubelet lists the node's container
//! images in `status.images`), all installed from one config. Prints, for each fleet size, the
//! time `calicoctl-win fleet status -o json` takes, its peak memory measured from outside with
//! `/usr/bin/time` (Debian's `time`; left out without it), the list requests it made and
//! whether it read the fleet healthy. The target: a thousand-node fleet read healthy in one
//! command, with memory bounded by the rows kept, not the objects read (the nodes are read a
//! page of 100 at a time; one unpaged list of 1,000 would be about 12 MB). Beside it, the
//! floor: a plain chunked read of the same nodes (the same client and pages, each Node
//! dropped), in this process. Each time is the median of `RUNS` (default 3).
//!
//! Run with `cargo bench --bench fleet_status` (NODES=N,M for other sizes).

#[path = "../tests/support/mod.rs"]
mod support;

use serde_json::json;
use std::process::Command;
use std::time::Instant;
use support::fake_api::FakeApi;

const HASH: &str = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

/// A Windows node of about 12 KB: its images, as kubelet reports them.
fn node(name: &str, now: &str) -> serde_json::Value {
    let images: Vec<serde_json::Value> = (0..40)
        .map(|i| {
            json!({"names": [
                format!("mcr.microsoft.com/windows/servercore@sha256:{i:064x}"),
                format!("registry.example.com/team/service-{i}:v1.2.3-windowsservercore-ltsc2022-build-{i:08}"),
            ], "sizeBytes": 5_000_000_000_u64 + i})
        })
        .collect();
    json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "uid": format!("uid-{name}"),
            "labels": {"kubernetes.io/os": "windows"},
            "annotations": {"calicoctl-win/version": "0.1.0",
                "calicoctl-win/calico-version": "3.30.2", "calicoctl-win/config-hash": HASH}},
        "spec": {},
        "status": {"images": images, "conditions": [
            {"type": "Ready", "status": "True"},
            {"type": "CalicoWindowsReady", "status": "True", "reason": "CalicoHealthy",
             "lastHeartbeatTime": now}]}})
}

fn sizes() -> Vec<usize> {
    std::env::var("NODES")
        .ok()
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1000, 5000])
}

/// The median of `runs` calls of `f`, in seconds.
fn median(runs: usize, mut f: impl FnMut()) -> f64 {
    let mut t: Vec<f64> = (0..runs)
        .map(|_| {
            let started = Instant::now();
            f();
            started.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[runs / 2]
}

/// A plain chunked read of the Windows nodes: connect, then every page, each Node dropped.
fn plain_read(admin: &std::path::Path) -> usize {
    let c =
        calicoctl_win::cluster::Cluster::connect(&[admin.to_owned()], &Default::default(), false)
            .expect("connect");
    let mut n = 0;
    calicoctl_win::cluster::node::for_each_windows_node(&c, |_| n += 1).expect("read");
    n
}

fn load() -> String {
    let l = fs_err::read_to_string("/proc/loadavg").unwrap_or_default();
    l.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

fn main() {
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let now = jiff::Timestamp::now().to_string();
    let time = std::path::Path::new("/usr/bin/time");
    for n in sizes() {
        let api = FakeApi::start();
        let mut bytes = 0;
        for i in 0..n {
            let name = format!("win-{i:05}");
            let doc = node(&name, &now);
            bytes += doc.to_string().len();
            api.put(&format!("/api/v1/nodes/{name}"), doc);
        }
        let dir = tempfile::tempdir().expect("tmp");
        let admin = api.kubeconfig(dir.path(), None);
        let exe = env!("CARGO_BIN_EXE_calicoctl-win");
        let mut c = if time.exists() {
            let mut c = Command::new(time);
            c.args(["-f", "peak-kib %M", "--"]).arg(exe);
            c
        } else {
            Command::new(exe)
        };
        c.args(["fleet", "status", "-o", "json", "--kubeconfig"])
            .arg(&admin);
        // The first run is read for its requests and verdict; the peak is the largest of all.
        let before = api.requests().len();
        let mut outs = Vec::new();
        let took = median(runs, || outs.push(c.output().expect("run calicoctl-win")));
        let lists = api.requests()[before..]
            .iter()
            .filter(|(m, p)| m == "GET" && p == "/api/v1/nodes")
            .count()
            / runs;
        let mut read = 0;
        let plain = median(runs, || read = plain_read(&admin));
        let out = &outs[0];
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        let peak = outs
            .iter()
            .filter_map(|o| {
                String::from_utf8_lossy(&o.stderr)
                    .lines()
                    .find_map(|l| l.strip_prefix("peak-kib ")?.trim().parse::<f64>().ok())
            })
            .reduce(f64::max)
            .map_or("unmeasured (no /usr/bin/time)".to_owned(), |k| {
                format!("{:.1} MiB", k / 1024.0)
            });
        println!(
            "fleet status, {n} Windows nodes ({:.1} MB of Node objects): {took:.3} s median of {runs}, peak memory {peak}, {lists} list requests, healthy: {}, exit {:?}",
            bytes as f64 / 1e6,
            doc["healthy"],
            out.status.code()
        );
        println!(
            "  plain chunked read of the same {read} nodes (same client, pages of 100, in process): {plain:.3} s median; ratio {:.2}",
            took / plain
        );
        println!("  load average: {}", load());
    }
}
