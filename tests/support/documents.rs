//! Whole JSON documents against reviewed snapshots (insta, with its redaction filters, as uv's
//! `uv_snapshot!` and rustup's snapbox do): what differs from run to run is filtered out, so a
//! reviewer sees every output change in one diff. `cargo insta review` (or
//! `INSTA_UPDATE=always cargo test`) takes an intended change.

use super::Node;
use serde_json::Value;
use std::path::Path;

/// What differs from run to run, as the document is written: each replaced by its name.
fn filters(dir: &Path) -> Vec<(String, &'static str)> {
    let dir = dir.to_string_lossy().into_owned();
    vec![
        (regex_escape(&dir), "[TMP]"),
        (r"127\.0\.0\.1:\d+".into(), "127.0.0.1:[PORT]"),
        (r"localhost:\d+".into(), "localhost:[PORT]"),
        (
            r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)".into(),
            "[TIME]",
        ),
        (r"\b1[6-9]\d{8}\b".into(), "[UNIX]"),
        (r"sha256:[0-9a-f]{64}".into(), "sha256:[HASH]"),
        (r"\b[0-9a-f]{64}\b".into(), "[SHA256]"),
        // The short hash an action names: credentials and the record differ at every run.
        (r"sha256 [0-9a-f]{12}\b".into(), "sha256 [SHORT]"),
        (r"\bpid \d+\b|\bprocess \d+\b".into(), "[PID]"),
        (r"staging-\d+-\d+".into(), "staging-[RUN]"),
        (r"\bfp:[0-9a-f]+\b".into(), "fp:[FP]"),
    ]
}

fn regex_escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Compares `doc` whole with its snapshot `name` (`tests/snapshots/<name>.snap`), with what differs from run to run filtered out; `dir` is the test's
/// temporary directory.
pub fn snapshot_in(dir: &Path, name: &str, doc: &Value) {
    let filters = filters(dir);
    let filters: Vec<(&str, &str)> = filters.iter().map(|(a, b)| (a.as_str(), *b)).collect();
    let at = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots");
    insta::with_settings!({filters => filters, snapshot_path => at, prepend_module_to_snapshot => false, omit_expression => true}, {
        insta::assert_json_snapshot!(name, doc);
    });
}

/// `snapshot_in` the node's temporary directory.
pub fn snapshot(node: &Node, name: &str, doc: &Value) {
    snapshot_in(node.dir.path(), name, doc);
}

/// Compares the text `text` a command printed for people with its snapshot `name`, with what
/// differs from run to run filtered out as in `snapshot`.
pub fn text_snapshot(node: &Node, name: &str, text: &str) {
    let filters = filters(node.dir.path());
    let filters: Vec<(&str, &str)> = filters.iter().map(|(a, b)| (a.as_str(), *b)).collect();
    let at = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots");
    insta::with_settings!({filters => filters, snapshot_path => at, prepend_module_to_snapshot => false, omit_expression => true}, {
        insta::assert_snapshot!(name, text);
    });
}
