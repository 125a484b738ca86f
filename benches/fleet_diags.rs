//! `fleet diags` benchmark (not a test): 100 Windows nodes on the fake API server, RBAC
//! enforced, each node's pod answering `GET /diags` with a bundle after the time a node takes to
//! build one. That time is measured first: `diags --offline` run here on a simulated installed
//! node, the child CalicoNode runs for each request (`supervise::diags_server`), median of
//! three (`DELAY=SECONDS` gives another). Then `calicoctl-win fleet diags` as the identity
//! `fleet rbac --identity diags` makes, at its default `--concurrency` and `--node-timeout`
//! (`CONCURRENCY=N` for another), is timed, with its peak memory from outside with
//! `/usr/bin/time` when there is one. The last node by name (`win-099`), asked last, does not
//! answer (`SILENT=0` for none): it holds its slot for the whole `--node-timeout`. The target:
//! 100 nodes, one of them silent, in at most 2 minutes.
//!
//! Run with `cargo bench --bench fleet_diags` (NODES=N for another number of nodes).

#[path = "../tests/support/mod.rs"]
mod support;

use calicoctl_win::fleet::diags;
use serde_json::json;
use std::process::Command;
use std::time::{Duration, Instant};
use support::fake_api::FakeApi;
use support::fake_api::diags::{Answer, Endpoint};

const NS: &str = "system-upgrade";
const SA: &str = "calicoctl-win-diags";
const DS: &str = "calicoctl-win";
const PORT: u16 = 9095;

fn env_num<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// The median time of `diags --offline` on a simulated installed node, and its zip.
fn one_node_diags(exe: &str) -> (Duration, Vec<u8>) {
    let node = support::node::Node::healthy().installed().build();
    let mut took = Vec::new();
    let mut zip = Vec::new();
    for i in 0..3 {
        let file = node.dir.path().join(format!("diags-{i}.zip"));
        let started = Instant::now();
        let out = Command::new(exe)
            .env_clear()
            .current_dir(support::root())
            .args(["--set", "node.name=win-1", "--sim-host"])
            .arg(node.sim())
            .args(["diags", "--offline", "--out-file"])
            .arg(&file)
            .output()
            .expect("run diags");
        took.push(started.elapsed());
        assert!(
            out.status.success(),
            "diags --offline: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        zip = fs_err::read(&file).expect("zip");
    }
    took.sort();
    (took[1], zip)
}

/// Node `name` with the DaemonSet's pod on it, answering with `zip` after `delay` (or never,
/// when `silent`).
fn node(api: &FakeApi, i: usize, delay: Duration, zip: &[u8], silent: bool) {
    let name = format!("win-{i:03}");
    let mut n = support::fake_api::meta("v1", "Node", &name, None);
    n["metadata"]["labels"] = json!({"kubernetes.io/os": "windows"});
    api.put(&format!("/api/v1/nodes/{name}"), n);
    let pod = format!("{DS}-{name}");
    api.put_pod(NS, &pod, &name, Some("DaemonSet"));
    let path = format!("/api/v1/namespaces/{NS}/pods/{pod}");
    let mut p = api.get(&path).expect("pod");
    p["metadata"]["labels"] = json!({"app.kubernetes.io/name": DS});
    p["metadata"]["ownerReferences"][0]["name"] = json!(DS);
    p["metadata"]["ownerReferences"][0]["uid"] = json!(format!("uid-{DS}"));
    api.put(&path, p);
    api.set_host_network(NS, &pod);
    api.set_pod_ip(NS, &pod, &format!("10.0.{}.{}", i / 200, i % 200 + 10));
    api.lock().diags.insert(
        format!("{NS}/{pod}"),
        Endpoint {
            port: PORT.to_string(),
            answer: if silent {
                Answer::Silent
            } else {
                Answer::Built(delay, zip.to_vec().into())
            },
        },
    );
}

fn main() {
    let exe = env!("CARGO_BIN_EXE_calicoctl-win");
    let (measured, zip) = one_node_diags(exe);
    let delay = env_num::<f64>("DELAY").map_or(measured, Duration::from_secs_f64);
    let nodes = env_num::<usize>("NODES").unwrap_or(100);
    println!(
        "diags --offline on a simulated node: {:.3} s median, zip {} bytes; each node answers after {:.3} s",
        measured.as_secs_f64(),
        zip.len(),
        delay.as_secs_f64()
    );
    let api = FakeApi::start();
    api.put(
        &format!("/apis/apps/v1/namespaces/{NS}/daemonsets/{DS}"),
        support::fake_api::meta("apps/v1", "DaemonSet", DS, Some(NS)),
    );
    let silent = env_num::<u8>("SILENT") != Some(0);
    for i in 0..nodes {
        node(&api, i, delay, &zip, silent && i + 1 == nodes);
    }
    for m in calicoctl_win::fleet::diags::rights::manifests(SA, (NS, NS), "calico-system") {
        assert!(api.apply(&m), "{m}");
    }
    let dir = tempfile::tempdir().expect("tmp");
    let kubeconfig = support::service_account_kubeconfig(&api, dir.path(), NS, SA);
    let time = std::path::Path::new("/usr/bin/time");
    let mut c = if time.exists() {
        let mut c = Command::new(time);
        c.args(["-f", "peak-kib %M", "--"]).arg(exe);
        c
    } else {
        Command::new(exe)
    };
    c.env_clear()
        .args(["-o", "json", "--kubeconfig"])
        .arg(&kubeconfig)
        .args(["fleet", "diags", "--namespace", NS, "--out"])
        .arg(dir.path().join("out"));
    if let Some(n) = env_num::<u16>("CONCURRENCY") {
        c.args(["--concurrency", &n.to_string()]);
    }
    let started = Instant::now();
    let out = c.output().expect("run calicoctl-win");
    let took = started.elapsed();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let err = String::from_utf8_lossy(&out.stderr);
    let peak = err
        .lines()
        .find_map(|l| l.strip_prefix("peak-kib "))
        .map_or_else(|| "-".into(), |k| format!("{k} KiB"));
    let concurrency = env_num::<usize>("CONCURRENCY").unwrap_or(diags::CONCURRENCY);
    println!(
        "fleet diags, {nodes} nodes ({} silent), concurrency {concurrency}: {:.1} s (goal <= 120 s), gathered {}, failed {}, exit {:?}, peak RSS {peak}",
        u8::from(silent),
        took.as_secs_f64(),
        doc["gathered"],
        doc["failed"],
        out.status.code()
    );
    for line in doc["nodes"].as_array().into_iter().flatten() {
        if line["reason"].is_string() {
            println!("{}: {} {}", line["node"], line["reason"], line["message"]);
        }
    }
    // The silent node, asked last, is asked when the wave before its own ends, and holds its
    // slot for the node timeout.
    let waves = nodes.div_ceil(concurrency);
    let floor = if silent {
        (waves - 1) as f64 * delay.as_secs_f64() + diags::NODE_TIMEOUT.as_secs_f64()
    } else {
        waves as f64 * delay.as_secs_f64()
    };
    println!(
        "floor: {waves} waves of {:.3} s{} = {floor:.1} s",
        delay.as_secs_f64(),
        if silent {
            ", the last of them the silent node's node timeout"
        } else {
            ""
        }
    );
}
