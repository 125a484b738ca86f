//! `fleet status` benchmark (not a test): 1,000 and 5,000 healthy Windows nodes on the fake API
//! server, each about 12 KB as a real Windows Node is (kubelet lists the node's container
//! images in `status.images`), all installed from one config. Prints, for each fleet size, the
//! time `calicoctl-win fleet status -o json` takes, its peak memory measured from outside with
//! `/usr/bin/time` (Debian's `time`; left out without it), the list requests it made and
//! whether it read the fleet healthy. The target: a thousand-node fleet read healthy in one
//! command, with memory bounded by the rows kept, not the objects read (the nodes are read a
//! page of 100 at a time; one unpaged list of 1,000 would be about 12 MB).
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

fn main() {
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
        let before = api.requests().len();
        let started = Instant::now();
        let out = c.output().expect("run calicoctl-win");
        let took = started.elapsed();
        let lists = api.requests()[before..]
            .iter()
            .filter(|(m, p)| m == "GET" && p == "/api/v1/nodes")
            .count();
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        let peak = String::from_utf8_lossy(&out.stderr)
            .lines()
            .find_map(|l| l.strip_prefix("peak-kib ").map(str::to_owned))
            .map_or("unmeasured (no /usr/bin/time)".to_owned(), |k| {
                format!("{:.1} MiB", k.trim().parse::<f64>().unwrap_or(0.0) / 1024.0)
            });
        println!(
            "fleet status, {n} Windows nodes ({:.1} MB of Node objects): {:.2} s, peak memory {peak}, {lists} list requests, healthy: {}, exit {:?}",
            bytes as f64 / 1e6,
            took.as_secs_f64(),
            doc["healthy"],
            out.status.code()
        );
    }
}
