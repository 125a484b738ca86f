//! The admin kubeconfig as kubectl reads it: a `tokenFile` trimmed, a `$KUBECONFIG` list
//! merged with the first file winning.

use crate::support::fake_api::FakeApi;
use crate::support::{json, on_node};
use serde_json::Value;
use std::path::Path;

/// preflight's document, run with `kubeconfig` as the flag or, when `env` is given, as
/// `$KUBECONFIG`.
fn preflight(kubeconfig: Option<&Path>, env: Option<&str>) -> Value {
    let mut c = on_node();
    c.args(["preflight", "-o", "json"]);
    if let Some(k) = kubeconfig {
        c.arg("--kubeconfig").arg(k);
    }
    if let Some(e) = env {
        c.env("KUBECONFIG", e);
    }
    json(&c.output().expect("runs").stdout)
}

fn read_the_cluster(doc: &Value) -> bool {
    doc["cluster"]["calico_api"] == "crd.projectcalico.org/v1"
}

/// A `tokenFile` written by a Windows editor ends in CR/LF: its token is the line, as
/// client-go's `fileTokenSource` trims it, not an unreachable server.
#[test]
fn a_token_file_ending_in_a_line_break_is_its_token() {
    let (_api, dir, inline) = FakeApi::calico_admin();
    let text = fs_err::read_to_string(&inline).expect("kubeconfig");
    let token = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("token: "))
        .expect("token")
        .to_owned();
    let token_file = dir.path().join("admin.token");
    fs_err::write(&token_file, format!("{token}\r\n")).expect("token file");
    let with_file = dir.path().join("file.kubeconfig");
    fs_err::write(
        &with_file,
        text.replace(
            &format!("token: {token}"),
            &format!("tokenFile: {}", token_file.display()),
        ),
    )
    .expect("kubeconfig");
    let doc = preflight(Some(&with_file), None);
    assert!(read_the_cluster(&doc), "{doc}");
}

/// `$KUBECONFIG` is a list: a missing file in it is skipped, and where two files name the
/// same cluster, user and context, the first one's are used (`current-context` too).
#[test]
fn a_kubeconfig_list_is_merged_with_the_first_file_winning() {
    let (_api, dir, good) = FakeApi::calico_admin();
    let text = fs_err::read_to_string(&good).expect("kubeconfig");
    let dead = dir.path().join("dead.kubeconfig");
    let server = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("server: "))
        .expect("server")
        .to_owned();
    fs_err::write(&dead, text.replace(&server, "https://127.0.0.1:9")).expect("write");
    let sep = if cfg!(windows) { ";" } else { ":" };
    let list = |files: &[&Path]| {
        files
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(sep)
    };
    let missing = dir.path().join("missing.kubeconfig");
    let doc = preflight(None, Some(&list(&[&missing, &good])));
    assert!(read_the_cluster(&doc), "{doc}");
    let doc = preflight(None, Some(&list(&[&good, &dead])));
    assert!(read_the_cluster(&doc), "{doc}");
    let doc = preflight(None, Some(&list(&[&dead, &good])));
    assert!(!read_the_cluster(&doc), "the first file's server: {doc}");
}
