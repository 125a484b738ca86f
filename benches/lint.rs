//! `lint policies` benchmark (not a test), in two parts:
//!
//! - the command as a policy repository's CI runs it: 10,000 policies against 20,000 Windows
//!   endpoints (and 10,000 Linux ones), read from files (the cluster as one `kubectl get -o json`
//!   List, the policies as 100 YAML files of 100 documents); the release binary runs `RUNS`
//!   times (default 3): the median wall time and the largest peak RSS (the child's `ru_maxrss`).
//!   Goal: at most 0.5 s and 200 MB on the development machine.
//! - the reading alone (`policy::input::read_files`, in this process, on the same files, last).
//! - the rendering itself (`policy::lint`, in this process, on objects added one by one): the
//!   same 10,000 × 20,000, and 50,000 policies × 100,000 Windows endpoints (the same shape five
//!   times over). Goals: 0.5 s and 200 MB; 3 s and 1 GB (the peak RSS of this process, which
//!   holds the objects read too).
//!
//! The shape: 500 namespaces; 3,000 apps of 10 replicas (2,000 on the 100 Windows nodes), each
//! with one of four tiers; 7,000 Calico NetworkPolicies per app (ingress from a tier, egress to
//! two), 2,000 Kubernetes NetworkPolicies (a pod selector and a namespace selector), 1,000
//! GlobalNetworkPolicies (a namespace selector on the rule; one in ten selects all() with a
//! source and a destination selector, which is a finding).
//!
//! Run with `cargo bench --bench lint` (POLICIES=N for another count of policies, at scale 1).

use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const TIERS: [&str; 4] = ["web", "api", "db", "cache"];

fn meta(kind: &str, name: &str, ns: Option<&str>, labels: Value) -> Value {
    let mut m = json!({"name": name, "labels": labels});
    if let Some(ns) = ns {
        m["namespace"] = json!(ns);
    }
    json!({"apiVersion": "v1", "kind": kind, "metadata": m})
}

fn cluster() -> Value {
    let mut items = Vec::new();
    cluster_items(1, &mut |o| items.push(o));
    json!({"apiVersion": "v1", "kind": "List", "items": items})
}

/// The nodes, namespaces and pods at scale `k` (1: 150 nodes, 500 namespaces, 30,000 pods).
fn cluster_items(k: usize, out: &mut dyn FnMut(Value)) {
    let apps = 3000 * k;
    let windows_apps = 2000 * k;
    let namespaces = 500 * k;
    for n in 0..150 * k {
        let os = if n < 100 * k { "windows" } else { "linux" };
        out(meta(
            "Node",
            &format!("node-{n}"),
            None,
            json!({"kubernetes.io/os": os}),
        ));
    }
    for ns in 0..namespaces {
        let env = if ns.is_multiple_of(2) { "prod" } else { "dev" };
        out(meta(
            "Namespace",
            &format!("ns-{ns}"),
            None,
            json!({"team": format!("t{}", ns % 20), "env": env}),
        ));
    }
    for app in 0..apps {
        let ns = format!("ns-{}", app % namespaces);
        let windows = app < windows_apps;
        let node_base = if windows { 0 } else { 100 * k };
        for r in 0..10 {
            let labels = json!({"app": format!("app-{app}"), "tier": TIERS[app % 4], "pod-template-hash": format!("h{app}")});
            let mut p = meta("Pod", &format!("app-{app}-{r}"), Some(&ns), labels);
            let node = node_base + (app * 10 + r) % if windows { 100 * k } else { 50 * k };
            p["spec"] =
                json!({"nodeName": format!("node-{node}"), "serviceAccountName": "default"});
            p["status"] = json!({"phase": "Running", "podIP": format!("10.{}.{}.{}", app / 250, app % 250, r)});
            out(p);
        }
    }
}

fn policy(i: usize) -> Value {
    scaled_policy(i, 1)
}

/// Policy `i` of `10,000 k`, in the shape's proportions (70 % Calico NetworkPolicies, 20 %
/// Kubernetes ones, 10 % GlobalNetworkPolicies).
fn scaled_policy(i: usize, k: usize) -> Value {
    let apps = 3000 * k;
    let app = i % apps;
    let ns = format!("ns-{}", app % (500 * k));
    match i / k {
        0..7000 => json!({
            "apiVersion": "projectcalico.org/v3", "kind": "NetworkPolicy",
            "metadata": {"name": format!("np-{i}"), "namespace": ns},
            "spec": {"selector": format!("app == 'app-{app}'"), "types": ["Ingress", "Egress"],
                "ingress": [{"action": "Allow", "protocol": "TCP", "source": {"selector": format!("tier == '{}'", TIERS[(i + 1) % 4])}, "destination": {"ports": [8080]}}],
                "egress": [{"action": "Allow", "destination": {"selector": "tier in {'db', 'cache'}"}}]},
        }),
        7000..9000 => json!({
            "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": format!("knp-{i}"), "namespace": ns},
            "spec": {"podSelector": {"matchLabels": {"app": format!("app-{app}")}},
                "ingress": [{"from": [{"podSelector": {"matchLabels": {"tier": "api"}}, "namespaceSelector": {"matchLabels": {"team": format!("t{}", i % 20)}}}],
                    "ports": [{"port": 443}]}]},
        }),
        _ if (i / k).is_multiple_of(10) => json!({
            "apiVersion": "projectcalico.org/v3", "kind": "GlobalNetworkPolicy",
            "metadata": {"name": format!("gnp-{i}")},
            "spec": {"selector": "all()", "ingress": [{"action": "Allow",
                "source": {"selector": format!("app == 'app-{}'", (i * 7) % apps)},
                "destination": {"selector": format!("app == 'app-{app}'")}}]},
        }),
        _ => json!({
            "apiVersion": "projectcalico.org/v3", "kind": "GlobalNetworkPolicy",
            "metadata": {"name": format!("gnp-{i}")},
            "spec": {"selector": format!("tier == '{}' && app != 'app-{app}'", TIERS[i % 4]),
                "ingress": [{"action": "Allow", "source": {"namespaceSelector": format!("env == 'prod' && team == 't{}'", i % 20), "selector": "tier == 'api'"}}]},
        }),
    }
}

/// The policies at scale 1: `POLICIES`, 10,000 unless set.
fn count() -> usize {
    std::env::var("POLICIES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000)
}

fn write_inputs(dir: &Path) {
    fs_err::write(dir.join("cluster.json"), cluster().to_string()).expect("cluster");
    let policies = dir.join("policies");
    fs_err::create_dir_all(&policies).expect("dir");
    for f in 0..count().div_ceil(100) {
        let docs: Vec<String> = (f * 100..(f * 100 + 100).min(count()))
            .map(|i| serde_saphyr::to_string(&policy(i)).expect("yaml"))
            .collect();
        fs_err::write(policies.join(format!("p{f:03}.yaml")), docs.join("---\n")).expect("write");
    }
}

/// One run: its wall time and the child's peak RSS in KiB.
fn run(dir: &Path) -> (Duration, Option<i64>) {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_calicoctl-win"))
        .env_clear()
        .args(["lint", "policies", "-o", "json", "--from-file"])
        .arg(dir.join("cluster.json"))
        .arg("--from-file")
        .arg(dir.join("policies"))
        .output()
        .expect("run calicoctl-win");
    let took = started.elapsed();
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(doc["windows_endpoints"], 20_000);
    assert_eq!(doc["policies"].as_array().map(Vec::len), Some(count()));
    (took, peak_rss_kib())
}

/// The largest peak RSS of the children waited for so far, in KiB (getrusage(2) with
/// RUSAGE_CHILDREN, as GNU time reads it through wait4); `None` off Unix.
#[cfg(unix)]
fn peak_rss_kib() -> Option<i64> {
    use nix::sys::resource::{UsageWho, getrusage};
    getrusage(UsageWho::RUSAGE_CHILDREN)
        .ok()
        .map(|u| u.max_rss())
}

#[cfg(not(unix))]
fn peak_rss_kib() -> Option<i64> {
    None
}

/// `policy::lint` alone at scale `k`: its wall time, the Windows endpoints and policies, and
/// this process's peak RSS in KiB so far.
fn model(k: usize) -> (Duration, u64, usize, Option<i64>) {
    use calicoctl_win::policy::{Collected, felix::DEFAULT_RELEASE, lint};
    let mut c = Collected::default();
    cluster_items(k, &mut |o| c.add(o, "bench").expect("object"));
    for i in 0..if k == 1 { count() } else { 10_000 * k } {
        c.add(scaled_policy(i, k), "bench").expect("policy");
    }
    let started = Instant::now();
    let report = lint(&c, DEFAULT_RELEASE).expect("lint");
    let took = started.elapsed();
    (
        took,
        report.windows_endpoints,
        report.policies.len(),
        self_peak_rss_kib(),
    )
}

/// The command's reading phase alone (`policy::input::read_files`, in this process, on the
/// files `run` passes): its wall time and the objects read.
fn read_alone(dir: &Path) -> (Duration, usize) {
    use calicoctl_win::policy::input;
    let paths = [dir.join("cluster.json"), dir.join("policies")];
    let started = Instant::now();
    let c = input::read_files(&input::files(&paths).expect("files")).expect("read");
    (started.elapsed(), c.objects)
}

#[cfg(unix)]
fn self_peak_rss_kib() -> Option<i64> {
    use nix::sys::resource::{UsageWho, getrusage};
    getrusage(UsageWho::RUSAGE_SELF).ok().map(|u| u.max_rss())
}

#[cfg(not(unix))]
fn self_peak_rss_kib() -> Option<i64> {
    None
}

fn main() {
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let dir = tempfile::tempdir().expect("tempdir");
    write_inputs(dir.path());
    if let Some(keep) = std::env::var_os("KEEP_INPUTS") {
        // For profiling: the inputs stay in KEEP_INPUTS (a directory to create).
        write_inputs(Path::new(&keep));
    }
    let size: u64 = ["cluster.json"]
        .iter()
        .map(|f| fs_err::metadata(dir.path().join(f)).map_or(0, |m| m.len()))
        .sum();
    let mut times: Vec<Duration> = (0..runs).map(|_| run(dir.path()).0).collect();
    times.sort();
    let peak = peak_rss_kib();
    let load = fs_err::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "lint policies: {} policies, 20,000 Windows + 10,000 Linux endpoints (cluster.json {:.1} MB, {} policy files)",
        count(),
        size as f64 / 1e6,
        count().div_ceil(100)
    );
    println!(
        "  median of {runs} runs: {:.3} s (goal <= 0.5 s)",
        times[runs / 2].as_secs_f64()
    );
    match peak {
        Some(kib) => println!(
            "  peak RSS: {:.1} MiB (goal <= 200 MB)",
            kib as f64 / 1024.0
        ),
        None => println!("  peak RSS: not measured on this OS"),
    }
    for (k, time_goal, rss_goal) in [(1, "0.5 s", "200 MB"), (5, "3 s", "1 GB")] {
        let (took, windows, policies, rss) = model(k);
        println!(
            "rendering alone (policy::lint): {policies} policies x {windows} Windows endpoints: {:.3} s (goal <= {time_goal}); peak RSS of the process so far: {} (goal <= {rss_goal})",
            took.as_secs_f64(),
            rss.map_or("not measured".into(), |kib| format!(
                "{:.1} MiB",
                kib as f64 / 1024.0
            ))
        );
    }
    // After the rendering, so that its peak RSS is the rendering's own.
    let (read, objects) = read_alone(dir.path());
    println!(
        "reading alone (policy::input::read_files): {objects} objects: {:.3} s",
        read.as_secs_f64()
    );
    println!(
        "  load average: {}",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
}
