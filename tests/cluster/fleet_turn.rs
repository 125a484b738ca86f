//! The fleet DaemonSet's turns: simulated Windows nodes run the DaemonSet container's own
//! command line (its first command, `reconfigure`, as `fleet plan` writes it) at once, as the
//! DaemonSet controller starts their pods on its creation, against the fake API server
//! enforcing the fleet account's roles. A VNI change needs each node drained: with
//! `--concurrency 1` never more than one node is cordoned; a pod killed while holding its
//! turn frees it once the lease ran out; a failed node keeps it (until its own next pod
//! succeeds, or its Node is gone); a pod with nothing to change takes none.

use super::fleet::{
    Machine, Pod, cordoned, installed_fleet, manifest, plan_to_vni_4097, set_cordon,
};
use crate::support::fake_api::FakeApi;
use serde_json::{Value, json};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const NS: &str = "system-upgrade";
const SLOT: &str =
    "/apis/coordination.k8s.io/v1/namespaces/system-upgrade/leases/calicoctl-win-turn-0";

/// Simulated nodes with Calico installed at VNI 4096, the fleet's manifests applied for VNI
/// 4097, and the DaemonSet container's `reconfigure` command line.
struct Fleet {
    api: FakeApi,
    machines: Vec<Machine>,
    pod: Pod,
    command: Vec<String>,
    admin: std::path::PathBuf,
    _dirs: Vec<tempfile::TempDir>,
}

impl Fleet {
    fn new(names: &[&str], concurrency: &str) -> Self {
        let (api, admin_dir, admin, machines) = installed_fleet(names);
        let (cfg_dir, _, doc) =
            plan_to_vni_4097(&["--engine", "daemonset", "--concurrency", concurrency]);
        for m in doc["manifests"].as_array().expect("manifests") {
            api.apply(m);
        }
        let (sa_dir, account) = crate::support::account(&api, NS, "calicoctl-win-fleet");
        let pod = Pod::new(&api, &crate::support::token_in(&account));
        // The Secret where the container sees it (`C:\calicoctl-win`, under its sandbox).
        let secret = manifest(&doc, "Secret");
        let mount = pod.sandbox().join("calicoctl-win");
        fs_err::create_dir_all(&mount).expect("mkdir");
        for (k, v) in secret["stringData"].as_object().expect("stringData") {
            fs_err::write(mount.join(k), v.as_str().expect("text")).expect("mount");
        }
        api.set_felix_vni(4097);
        let command = reconfigure_command(manifest(&doc, "DaemonSet"), &pod);
        Self {
            api,
            machines,
            pod,
            command,
            admin,
            _dirs: vec![admin_dir, cfg_dir, sa_dir],
        }
    }

    fn machine(&self, name: &str) -> &Machine {
        self.machines
            .iter()
            .find(|m| m.name == name)
            .expect("machine")
    }

    /// The container's `reconfigure` on node `name`, with `extra` flags after it.
    fn start(&self, name: &str, extra: &[&str]) -> Child {
        Command::new(assert_cmd::cargo::cargo_bin("calicoctl-win"))
            .env_clear()
            .current_dir(crate::support::root())
            .envs(self.pod.env())
            .args(&self.command)
            .args(extra)
            .arg("--sim-host")
            .arg(self.machine(name).sim())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start")
    }

    fn run(&self, name: &str, extra: &[&str]) -> (i32, Value, String) {
        let out = self.start(name, extra).wait_with_output().expect("wait");
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        let doc = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        (out.status.code().unwrap_or(-1), doc, err)
    }

    /// `fleet status` with the admin kubeconfig: its text and its JSON document.
    fn status(&self) -> (String, Value) {
        let run = |format: &str| {
            crate::support::cmd()
                .args(["-o", format, "fleet", "status", "--kubeconfig"])
                .arg(&self.admin)
                .output()
                .expect("runs")
                .stdout
        };
        let text = String::from_utf8_lossy(&run("text")).into_owned();
        (text, crate::support::json(&run("json")))
    }

    fn slot(&self) -> Value {
        self.api.get(SLOT).expect("the turn's Lease")
    }

    /// The slot held by `holder`, marked failed when `failed`, renewed never again.
    fn put_slot(&self, holder: &str, secs: i64, failed: bool) {
        let mut l = self.slot();
        l["spec"]["holderIdentity"] = json!(holder);
        l["spec"]["leaseDurationSeconds"] = json!(secs);
        if failed {
            l["metadata"]["annotations"]["calicoctl-win/turn-failed"] =
                json!(r#"{"code":"drain-timeout","at":"2026-01-01T00:00:00Z"}"#);
        }
        let rv: u64 = l["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1);
        l["metadata"]["resourceVersion"] = json!((rv + 1).to_string());
        self.api.put(SLOT, l);
    }
}

/// `name`'s pod started with `lease`, paused holding its turn before its first change, and
/// killed there (SIGKILL).
fn kill_holding(f: &Fleet, name: &str, lease: &str) {
    let marker = format!("{}.paused", f.machine(name).sim().display());
    let mut a = f.start(name, &[lease, "--sim-fault", "pause:1"]);
    let deadline = Instant::now() + Duration::from_secs(60);
    while fs_err::read_to_string(&marker).map_or(true, |m| m.is_empty()) {
        assert!(
            a.try_wait().expect("wait").is_none(),
            "{name} ended before its change"
        );
        assert!(Instant::now() < deadline, "{name} never paused");
        std::thread::sleep(Duration::from_millis(5));
    }
    a.kill().expect("SIGKILL");
    a.wait().expect("reap");
}

/// The DaemonSet container's first command (before cmd.exe's `&&`), as a HostProcess
/// container runs it: `%CONTAINER_SANDBOX_MOUNT_POINT%` is the pod's sandbox.
fn reconfigure_command(ds: &Value, pod: &Pod) -> Vec<String> {
    let command =
        super::fleet::cmd_exe_command(&ds["spec"]["template"]["spec"]["containers"][0]["command"]);
    let sandbox = pod.sandbox().display().to_string();
    command[3..]
        .iter()
        .take_while(|a| **a != "&&")
        .map(|a| {
            if a.contains("%CONTAINER_SANDBOX_MOUNT_POINT%") {
                a.replace("%CONTAINER_SANDBOX_MOUNT_POINT%", &sandbox)
                    .replace('\\', "/")
            } else {
                (*a).to_owned()
            }
        })
        .collect()
}

/// Three nodes whose change needs a drain start together with `--concurrency 1`: each
/// changes in its turn, never two cordoned at once, and the turn is free at the end.
#[test]
fn three_nodes_started_at_once_drain_one_at_a_time() {
    let f = Fleet::new(&["win-1", "win-2", "win-3"], "1");
    let done = std::sync::atomic::AtomicBool::new(false);
    let (most, outs) = std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let mut most = 0;
            loop {
                let last = done.load(std::sync::atomic::Ordering::SeqCst);
                let out = f
                    .machines
                    .iter()
                    .filter(|m| cordoned(&f.api, &m.name))
                    .count();
                most = most.max(out);
                if last {
                    return most;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        let children: Vec<(String, Child)> = f
            .machines
            .iter()
            .map(|m| (m.name.clone(), f.start(&m.name, &["--turn-lease=4s"])))
            .collect();
        let outs: Vec<(String, std::process::Output)> = children
            .into_iter()
            .map(|(n, c)| (n, c.wait_with_output().expect("wait")))
            .collect();
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        (sampler.join().expect("sampler"), outs)
    });
    for (n, o) in &outs {
        assert_eq!(
            o.status.code(),
            Some(0),
            "{n}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    assert_eq!(most, 1, "nodes cordoned at once");
    for m in &f.machines {
        assert_eq!(m.calico_vsid(), Some(4097), "{}", m.name);
        assert!(!cordoned(&f.api, &m.name), "{}", m.name);
    }
    let slot = f.slot();
    assert!(slot["spec"]["holderIdentity"].is_null(), "{slot}");
    assert_eq!(slot["spec"]["leaseTransitions"], 3, "{slot}");
}

/// A pod killed while it holds the turn (in the middle of its change) renews it no more: the
/// next node takes it over once its lease ran out unrenewed, by that node's own clock.
#[test]
fn a_pod_killed_holding_its_turn_frees_it_once_its_lease_ran_out() {
    let f = Fleet::new(&["win-a", "win-b"], "1");
    kill_holding(&f, "win-a", "--turn-lease=2s");
    assert_eq!(f.slot()["spec"]["holderIdentity"], "win-a");
    let started = Instant::now();
    let (code, doc, err) = f.run("win-b", &["--turn-lease=2s", "--turn-timeout=60s"]);
    assert_eq!(code, 0, "{err} {doc}");
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "win-b took win-a's turn before it ran out"
    );
    assert_eq!(f.machine("win-b").calico_vsid(), Some(4097));
    let slot = f.slot();
    assert!(slot["spec"]["holderIdentity"].is_null(), "{slot}");
    assert_eq!(
        slot["spec"]["leaseTransitions"], 2,
        "taken over once: {slot}"
    );
}

/// A node whose change fails keeps its turn, marked failed: another node waits it out
/// (exit 4 at its --turn-timeout) however long ago it ran out; the failed node's next pod
/// takes it back and succeeds. A failed turn whose holder's Node is gone is taken over.
/// A pod killed after its node's cordon (a reboot, a crash loop whose back-off outlasts the
/// lease) leaves the node out and its change half done: its turn stays its own however long
/// it runs unrenewed, so no second node drains meanwhile; once the node is uncordoned, it is
/// free again.
#[test]
fn a_holder_killed_with_its_node_cordoned_keeps_its_turn() {
    let f = Fleet::new(&["win-a", "win-b"], "1");
    kill_holding(&f, "win-a", "--turn-lease=1s");
    // As if killed after its cordon.
    set_cordon(&f.api, "win-a", true);
    let (code, doc, err) = f.run("win-b", &["--turn-lease=1s", "--turn-timeout=4s"]);
    assert_eq!(code, 4, "{err} {doc}");
    assert!(!cordoned(&f.api, "win-b"));
    assert_eq!(f.machine("win-b").calico_vsid(), Some(4096));
    assert_eq!(f.slot()["spec"]["holderIdentity"], "win-a");
    set_cordon(&f.api, "win-a", false);
    let (code, doc, err) = f.run("win-b", &["--turn-lease=1s", "--turn-timeout=30s"]);
    assert_eq!(code, 0, "{err} {doc}");
    assert_eq!(f.machine("win-b").calico_vsid(), Some(4097));
}

#[test]
fn a_failed_node_keeps_its_turn_until_it_succeeds_or_its_node_is_gone() {
    let f = Fleet::new(&["win-f", "win-g"], "1");
    let (code, _, err) = f.run("win-f", &["--turn-lease=1s", "--sim-fault", "fail:1"]);
    assert_ne!(code, 0, "{err}");
    let slot = f.slot();
    assert_eq!(slot["spec"]["holderIdentity"], "win-f", "{slot}");
    assert!(
        slot["metadata"]["annotations"]["calicoctl-win/turn-failed"].is_string(),
        "{slot}"
    );
    let (code, doc, err) = f.run("win-g", &["--turn-lease=1s", "--turn-timeout=4s"]);
    assert_eq!(code, 4, "{err}");
    assert_eq!(doc["error"]["kind"], "turn-timeout", "{doc}");
    assert!(!cordoned(&f.api, "win-g"));
    assert_eq!(f.machine("win-g").calico_vsid(), Some(4096));
    // fleet status says who holds it, since when, and that it failed.
    let (text, doc) = f.status();
    let turn = &doc["turns"][0];
    assert_eq!(turn["slot"], "calicoctl-win-turn-0", "{doc}");
    assert_eq!(turn["node"], "win-f", "{doc}");
    assert!(
        turn["since"].is_string() && turn["failed"]["code"].is_string(),
        "{doc}"
    );
    assert!(
        text.contains("Turns: calicoctl-win-turn-0 (win-f since ") && text.contains("failed: "),
        "{text}"
    );

    // The failed node's next pod (the container restarted) takes its own turn back.
    let (code, doc, err) = f.run("win-f", &["--turn-lease=1s", "--turn-timeout=4s"]);
    assert_eq!(code, 0, "{err} {doc}");
    assert_eq!(f.machine("win-f").calico_vsid(), Some(4097));
    assert!(f.slot()["spec"]["holderIdentity"].is_null());

    // A node removed from the cluster holding a failed turn: taken over.
    f.put_slot("win-gone", 1, true);
    let (code, doc, err) = f.run("win-g", &["--turn-lease=1s", "--turn-timeout=30s"]);
    assert_eq!(code, 0, "{err} {doc}");
    assert_eq!(f.machine("win-g").calico_vsid(), Some(4097));
    let slot = f.slot();
    assert!(slot["spec"]["holderIdentity"].is_null(), "{slot}");
    assert!(slot["metadata"]["annotations"]["calicoctl-win/turn-failed"].is_null());
}

/// While another node holds the only turn, a node with nothing to change ends at once and
/// takes none, and a node with a change waits (exit 4 at its --turn-timeout), uncordoned.
#[test]
fn a_pod_with_nothing_to_change_takes_no_turn() {
    let f = Fleet::new(&["win-c", "win-n"], "1");
    let (code, _, err) = f.run("win-c", &["--turn-lease=1s"]);
    assert_eq!(code, 0, "{err}");
    f.put_slot("win-x", 3600, false);
    let before = f.slot();
    let (code, doc, err) = f.run("win-c", &["--turn-lease=1s", "--turn-timeout=3s"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(doc["change"], "none", "{doc}");
    assert_eq!(f.slot(), before, "the turn was touched");
    let (code, doc, err) = f.run("win-n", &["--turn-lease=1s", "--turn-timeout=3s"]);
    assert_eq!(code, 4, "{err} {doc}");
    assert!(!cordoned(&f.api, "win-n"));
    assert_eq!(f.machine("win-n").calico_vsid(), Some(4096));
}

/// `fleet plan`'s default `--engine both` writes a system-upgrade-controller Plan taking
/// `--concurrency` nodes at a time and a DaemonSet whose pods change nothing (no `reconfigure`,
/// no turns), with every option that adds to the DaemonSet: at most `--concurrency` nodes
/// change at once where both run.
#[test]
fn the_default_output_changes_at_most_concurrency_nodes_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let metrics_on = dir.path().join("calico-windows.yaml");
    let text = fs_err::read_to_string("templates/calico-windows.yaml").expect("config")
        + "\nmetrics:\n  enabled: true\n  source_ranges: [10.0.0.0/8]\n";
    fs_err::write(&metrics_on, text).expect("write");
    let metrics_on = metrics_on.to_str().expect("utf-8");
    let options: [&[&str]; 5] = [
        &[],
        &["--verify"],
        &["--verify-every", "1h"],
        &["--log-containers"],
        &["--metrics-service"],
    ];
    for extra in options {
        let config = if extra == ["--metrics-service"] {
            metrics_on
        } else {
            "templates/calico-windows.yaml"
        };
        let base = ["--config", config, "--image", "i:1", "--concurrency", "2"];
        let (code, doc, err) = super::fleet::fleet_plan(&[&base[..], extra].concat());
        assert_eq!(code, 0, "{extra:?}: {err}");
        let docs = doc["manifests"].as_array().expect("manifests");
        let plan = docs.iter().find(|d| d["kind"] == "Plan").expect("a Plan");
        let paced = plan["spec"]["concurrency"].as_u64().expect("concurrency");
        assert!(paced <= 2, "{extra:?}: the Plan takes {paced}");
        let ds = docs
            .iter()
            .find(|d| d["kind"] == "DaemonSet")
            .expect("a DaemonSet");
        for c in ds["spec"]["template"]["spec"]["containers"]
            .as_array()
            .expect("containers")
        {
            let command = super::fleet::cmd_exe_command(&c["command"]);
            assert!(
                !command
                    .iter()
                    .any(|a| *a == "reconfigure" || a.starts_with("--turn")),
                "{extra:?}: the DaemonSet beside the Plan changes its node: {command:?}"
            );
        }
        assert!(
            !docs.iter().any(|d| d["kind"] == "Role"
                && d["metadata"]["name"]
                    .as_str()
                    .is_some_and(|n| n.ends_with("-turn"))),
            "{extra:?}: no turns' Role"
        );
    }
}
