//! The simulated host's whole state as one value, for tests that compare hosts.

use super::release::sha256;
use serde_json::{Value, json};
use std::path::Path;

/// The simulated host's state as a value to compare: `state.json` without counters, pids and
/// generated ids, and every file with its checksum (a kubeconfig's token, the logs' lines and
/// the record's checksum of the kubeconfig and install id, the installed files' modification
/// times vary from run to run, so only their presence counts).
pub fn snapshot(sim: &Path) -> Value {
    let text = fs_err::read_to_string(sim.join("state.json")).expect("state.json");
    let mut state: Value = serde_json::from_str(&text).expect("state");
    state["settings"]["next_pid"] = json!(0);
    state["settings"]["next_id"] = json!(0);
    // What ran is history, not state.
    state["started"] = json!(null);
    state["events"] = json!(null);
    if let Some(procs) = state["processes"].as_object_mut() {
        for v in procs.values_mut() {
            *v = json!("pid");
        }
    }
    if let Some(svcs) = state["services"].as_object_mut() {
        for s in svcs.values_mut() {
            if !s["pid"].is_null() {
                s["pid"] = json!("pid");
            }
            if !s["since"].is_null() {
                s["since"] = json!("since");
            }
        }
    }
    if let Some(nets) = state["networks"].as_array_mut() {
        for n in nets {
            n["ID"] = json!("id");
        }
    }
    // The addressing CalicoNode kept is keyed to the External network's generated id.
    let kept = state
        .get_mut("registry")
        .and_then(|r| r.get_mut(r"hklm\software\tigera\calico"))
        .and_then(|k| k.get_mut("addressingbeforevswitch"))
        .and_then(|v| v.get_mut("data"));
    if let Some(data) = kept
        && let Some(mut record) = data
            .as_str()
            .and_then(|t| serde_json::from_str::<Value>(t).ok())
    {
        if !record["network"].is_null() {
            record["network"] = json!("id");
        }
        *data = json!(record.to_string());
    }
    // The services keep their last child's pid and start time (`layout::CHILD_VALUES`).
    if let Some(key) = state
        .get_mut("registry")
        .and_then(|r| r.get_mut(r"hklm\software\tigera\calico"))
    {
        for name in ["nodechild", "felixchild", "confdchild", "kubeproxychild"] {
            if let Some(data) = key.get_mut(name).and_then(|v| v.get_mut("data")) {
                *data = json!("pid start");
            }
        }
    }
    // Endpoints (calico-node's Calico_ep) carry generated ids too, and their network's.
    if let Some(eps) = state["endpoints"].as_array_mut() {
        for e in eps {
            e["id"] = json!("id");
            e["network_id"] = json!("id");
        }
    }
    let mut files = serde_json::Map::new();
    walk(&sim.join("fs"), &sim.join("fs"), &mut files);
    json!({"state": state, "files": files})
}

fn walk(base: &Path, dir: &Path, out: &mut serde_json::Map<String, Value>) {
    let Ok(entries) = fs_err::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let rel = p
            .strip_prefix(base)
            .expect("under base")
            .display()
            .to_string();
        // The services' logs a rollback moved out of the logs directory it removed, named in
        // its message: kept on purpose (tests that look for them read them directly).
        if rel.starts_with("c/programdata/calicoctl-win") {
            continue;
        }
        if rel == "c/programdata" {
            walk(base, &p, out);
            continue;
        }
        if p.is_dir() {
            out.insert(rel.clone(), json!("dir"));
            walk(base, &p, out);
        } else if rel.ends_with("calico-kube-config")
            || rel.ends_with("calico-kube-config.token")
            || rel.ends_with("calico-kubeconfig")
            || rel.contains("/logs/")
            // The installed files' modification times, which differ from run to run.
            || rel.ends_with("calicoctl-win-file-stat.json")
        {
            out.insert(rel, json!("present"));
        } else if rel.ends_with("calicoctl-win-install.json") {
            let mut rec: Value =
                serde_json::from_slice(&fs_err::read(&p).expect("read")).expect("record");
            for f in rec["files"].as_array_mut().into_iter().flatten() {
                if f["path"].as_str().is_some_and(|p| {
                    p.ends_with("calico-kube-config") || p.ends_with("calico-kube-config.token")
                }) {
                    f["sha256"] = json!("token");
                }
            }
            // The install's id, random at each first install (`record::install_id`).
            if rec["install_id"].is_string() {
                rec["install_id"] = json!("id");
            }
            out.insert(rel, rec);
        } else {
            out.insert(rel, json!(sha256(&p)));
        }
    }
}

pub fn assert_same(a: &Value, b: &Value, what: &str) {
    if a != b {
        if let (Some(fa), Some(fb)) = (a["files"].as_object(), b["files"].as_object()) {
            let only: Vec<&String> = fa
                .keys()
                .filter(|k| !fb.contains_key(*k))
                .chain(fb.keys().filter(|k| !fa.contains_key(*k)))
                .collect();
            let changed: Vec<&String> = fa
                .keys()
                .filter(|k| fb.get(*k).is_some_and(|v| v != &fa[*k]))
                .collect();
            assert!(
                only.is_empty() && changed.is_empty(),
                "{what}: files differ: in one only {only:?}, changed {changed:?}"
            );
        }
        let (sa, sb) = (
            serde_json::to_string_pretty(a).expect("json"),
            serde_json::to_string_pretty(b).expect("json"),
        );
        let diff: Vec<String> = sa
            .lines()
            .zip(sb.lines())
            .filter(|(x, y)| x != y)
            .take(12)
            .map(|(x, y)| format!("- {x}\n+ {y}"))
            .collect();
        panic!("{what}: states differ\n{}", diff.join("\n"));
    }
}
