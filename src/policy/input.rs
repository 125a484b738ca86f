//! The objects `lint policies` reads: YAML or JSON files and directories of them (each file
//! capped while it is read, multi-document, `kind: List` as `kubectl get -o yaml` prints it),
//! or the cluster, listed a page at a time.

use std::path::{Path, PathBuf};

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use serde_json::Value;

use super::{Collected, PolicyError};
use crate::cluster::Cluster;

/// The most bytes of one file.
pub const FILE_CAP: u64 = 256 << 20;
/// The most files read from the directories given.
pub const FILES_CAP: usize = 100_000;
/// How deep directories are walked.
const DEPTH_CAP: usize = 16;

fn unreadable(path: &Path, cause: impl std::fmt::Display) -> PolicyError {
    PolicyError::Unreadable(format!("cannot read {}: {cause}", path.display()))
}

/// The files under `paths`: each file given, and the `*.yaml`, `*.yml` and `*.json` files of
/// each directory given, recursively, in name order.
pub fn files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, PolicyError> {
    let mut out = Vec::new();
    for p in paths {
        if p.as_os_str() == "-" {
            return Err(PolicyError::Unreadable(
                "--from-file - : lint does not read standard input (a stream has no end it can cap in time); save the objects to a file, like 'kubectl get pods,networkpolicies -A -o yaml > snapshot.yaml', and pass that".into(),
            ));
        }
        let meta = fs_err::metadata(p).map_err(|e| unreadable(p, e))?;
        if meta.is_dir() {
            walk(p, 0, &mut out)?;
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// Walks `dir` (a link loop ends at the depth cap).
fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) -> Result<(), PolicyError> {
    if depth > DEPTH_CAP {
        return Err(unreadable(
            dir,
            format!("directories nested deeper than {DEPTH_CAP}, lint's cap"),
        ));
    }
    let mut entries: Vec<PathBuf> = fs_err::read_dir(dir)
        .map_err(|e| unreadable(dir, e))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(|e| unreadable(dir, e))?;
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, depth + 1, out)?;
        } else if p
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
        {
            out.push(p);
            if out.len() > FILES_CAP {
                return Err(unreadable(dir, format!("more than {FILES_CAP} files")));
            }
        }
    }
    Ok(())
}

/// Reads the files into one collection, in their order: parsed on as many threads as the
/// machine has (a file each at a time), merged in order, the first error in file order
/// reported.
pub fn read_files(files: &[PathBuf]) -> Result<Collected, PolicyError> {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let workers = std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .min(files.len())
        .max(1);
    // The largest files first, so that a big cluster snapshot does not start last.
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(fs_err::metadata(&files[i]).map_or(0, |m| m.len())));
    let next = AtomicUsize::new(0);
    let results: Vec<Mutex<Option<Result<Collected, PolicyError>>>> =
        files.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let path = &files[i];
                    let mut c = Collected::default();
                    let r = read_file(path, &mut c).map(|()| c);
                    if let Ok(mut slot) = results[i].lock() {
                        *slot = Some(r);
                    }
                }
            });
        }
    });
    let mut all = Collected::default();
    for (path, r) in files.iter().zip(results) {
        let part = r
            .into_inner()
            .ok()
            .flatten()
            .unwrap_or_else(|| Err(unreadable(path, "its reader stopped")))?;
        all.merge(part, &path.display().to_string())?;
    }
    Ok(all)
}

/// Reads one file's objects into `into`.
pub fn read_file(path: &Path, into: &mut Collected) -> Result<(), PolicyError> {
    // A regular file only (a pipe would never end), capped while it is read; the error
    // names the path.
    let text = crate::files::read_text_capped(path, FILE_CAP)
        .map_err(|e| PolicyError::Unreadable(e.to_string()))?;
    let origin = path.display().to_string();
    let invalid = |e: &dyn std::fmt::Display| PolicyError::Invalid {
        object: origin.clone(),
        problem: format!("not YAML or JSON: {e}"),
    };
    if text.trim_start().starts_with('{') {
        return read_json(&text, &origin, into);
    }
    let docs: Vec<Value> =
        serde_saphyr::from_multiple_with_options(&text, yaml_options(text.len()))
            .map_err(|e| invalid(&yaml_error(&e)))?;
    for doc in docs.into_iter().filter(|d| !d.is_null()) {
        if !doc.is_object() {
            return Err(invalid(&"a document is not an object"));
        }
        into.add(doc, &origin)?;
    }
    Ok(())
}

/// The YAML parser's limits: lint's documented caps (`FILE_CAP` a file, `OBJECTS_CAP`
/// objects), not the parser's defaults, which are made for configuration files (250,000 nodes
/// and 1,024 documents: a `kubectl get pods -o yaml` of 10,000 pods, or a file of 1,100
/// manifests, is over them). What counts nodes, events and scalar bytes grows with the text,
/// so it is bounded by the file cap; the protections against alias expansion, depth and
/// merge-key storms keep the parser's values.
fn yaml_options(text_len: usize) -> serde_saphyr::Options {
    let file_cap = usize::try_from(FILE_CAP).unwrap_or(usize::MAX);
    let mut budget = serde_saphyr::Budget::default();
    budget.max_reader_input_bytes = Some(file_cap);
    budget.max_documents = super::OBJECTS_CAP;
    // Each node and each event takes at least one byte of the text.
    budget.max_nodes = budget.max_nodes.max(text_len);
    budget.max_events = budget.max_events.max(text_len.saturating_mul(2));
    budget.max_total_scalar_bytes = file_cap;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options
}

/// The parser's error in lint's words: a limit is a cap, a repeated key is said as such.
fn yaml_error(e: &serde_saphyr::Error) -> String {
    if let serde_saphyr::Error::Budget { breach, .. } = e {
        return format!(
            "over a cap of the YAML reader ({breach:?}): lint reads at most {} MiB a file and {} objects; split the file",
            FILE_CAP >> 20,
            super::OBJECTS_CAP
        );
    }
    e.to_string()
        .replace(
            ", set DuplicateKeyPolicy in Options if acceptable",
            " (a key appears twice in one mapping)",
        )
        .replace("budget breached", "over a cap")
}

/// A JSON document: a list's items one at a time from their text (a cluster snapshot is
/// never one whole JSON tree in memory), anything else as it is.
fn read_json(text: &str, origin: &str, into: &mut Collected) -> Result<(), PolicyError> {
    #[derive(serde::Deserialize)]
    struct Top<'a> {
        #[serde(rename = "apiVersion", default)]
        api_version: String,
        #[serde(default)]
        kind: String,
        #[serde(borrow)]
        items: Option<Vec<&'a serde_json::value::RawValue>>,
    }
    let invalid = |e: serde_json::Error| PolicyError::Invalid {
        object: origin.to_owned(),
        problem: format!("not JSON: {e}"),
    };
    let top: Top = serde_json::from_str(text).map_err(invalid)?;
    match (top.kind.strip_suffix("List"), top.items) {
        (Some(item_kind), Some(items)) => {
            for item in items {
                into.add_json(item.get(), (&top.api_version, item_kind), origin)?;
            }
            Ok(())
        }
        _ => into.add(serde_json::from_str(text).map_err(invalid)?, origin),
    }
}

/// What the lint lists from a cluster (group, kind; version v1): the core objects, Kubernetes
/// policies and Calico's, staged ones and tiers (through its CRDs; a cluster without them has
/// none, and a Calico too old for staged policies or tiers has none of those). kube's
/// `ApiResource::from_gvk` names each one's plural, as the API serves it.
const RESOURCES: &[(&str, &str)] = &[
    ("", "Namespace"),
    ("", "Node"),
    ("", "ServiceAccount"),
    ("", "Pod"),
    ("networking.k8s.io", "NetworkPolicy"),
    ("crd.projectcalico.org", "NetworkPolicy"),
    ("crd.projectcalico.org", "GlobalNetworkPolicy"),
    ("crd.projectcalico.org", "Tier"),
    ("crd.projectcalico.org", "StagedNetworkPolicy"),
    ("crd.projectcalico.org", "StagedGlobalNetworkPolicy"),
    ("crd.projectcalico.org", "StagedKubernetesNetworkPolicy"),
];

/// Lists every object the lint uses from the cluster into `into`.
pub fn read_cluster(c: &Cluster, into: &mut Collected) -> Result<(), anyhow::Error> {
    for (group, kind) in RESOURCES {
        let ar = ApiResource::from_gvk(&GroupVersionKind::gvk(group, "v1", kind));
        let api: Api<DynamicObject> = Api::all_with(c.client.clone(), &ar);
        let what = if group.is_empty() {
            ar.plural.clone()
        } else {
            format!("{}.{group}", ar.plural)
        };
        let origin = format!("the cluster's {what}");
        let found = c.for_each_page(&api, &what, |items| {
            for o in items {
                let mut v = serde_json::to_value(&o)?;
                v["apiVersion"] = Value::String(ar.api_version.clone());
                v["kind"] = Value::String(ar.kind.clone());
                into.add(v, &origin)?;
            }
            Ok::<(), anyhow::Error>(())
        })?;
        // Without Calico's CRDs there are no Calico policies; the core resources always exist.
        if !found && !group.starts_with("crd.") {
            return Err(crate::cluster::ClusterError::Api {
                server: c.server.clone(),
                verb: "list".into(),
                resource: what,
                code: 404,
                message: "not found".into(),
            }
            .into());
        }
    }
    Ok(())
}
