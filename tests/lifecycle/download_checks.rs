//! A download's checks that need no change come before the first one: plain HTTP without
//! `--allow-http`, and a URL without a checksum (none given, none in a SHA256SUMS beside it),
//! refuse the run before its journal or its staging directory are made. A crash injected at
//! the first change (`crash:1`) shows it: the refusal comes first, or the run is killed.

#![cfg(unix)]

use crate::support::Node;
use crate::support::release::sha256;
use crate::support::snapshot::assert_same;

fn setup() -> Node {
    Node::healthy()
        .created()
        .serving("3.30.2", "calico-node.exe")
        .build()
}

/// Plain HTTP: refused before any change, and the dry run refuses alike (same error, same
/// exit), where it only warned.
#[test]
fn plain_http_is_refused_before_any_change_and_by_the_dry_run_alike() {
    let s = setup();
    let initial = s.snapshot();
    let http = s.served().url.replace("https://", "http://");
    let sha = sha256(s.zip());
    let install = ["install", "--release-zip", &http, "--sha256", &sha];
    for how in [["--sim-fault", "crash:1"], ["--dry-run", "--no-start"]] {
        let (code, doc, stderr) = s.run(&[&install[..], &how[..]].concat());
        assert_eq!(code, 2, "{how:?}: {stderr}");
        assert_eq!(doc["error"]["kind"], "plain-http", "{how:?}: {doc}");
        assert!(stderr.contains("--allow-http"), "{how:?}: {stderr}");
        assert_same(&s.snapshot(), &initial, &format!("{how:?}"));
    }
}

/// No checksum given and none published beside the zip: the real run refuses before any
/// change (the SHA256SUMS looked up first); the dry run, which makes no connection, says the
/// run would stop there unless one is published, and shows its plan.
#[test]
fn a_download_without_a_checksum_is_refused_before_any_change() {
    let s = setup();
    let initial = s.snapshot();
    let ca = s.served().ca.display().to_string();
    let url = &s.served().url;
    let install = ["install", "--release-zip", url, "--release-ca-cert", &ca];
    let (code, doc, stderr) = s.run(&[&install[..], &["--sim-fault", "crash:1"]].concat());
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(doc["error"]["kind"], "checksum-needed", "{doc}");
    assert!(stderr.contains("--sha256"), "{stderr}");
    assert_same(&s.snapshot(), &initial, "no checksum");
    let (code, _, stderr) = s.run(&[&install[..], &["--dry-run"]].concat());
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("looks for a SHA256SUMS beside the zip"),
        "{stderr}"
    );
}

/// Without an admin kubeconfig and without a checksum, the real run refuses as the dry run
/// ends (the README's main job): no-admin-kubeconfig first, exit 2, before any change.
#[test]
fn without_the_cluster_its_refusal_comes_before_the_checksum_as_in_the_dry_run() {
    let s = setup();
    let ca = s.served().ca.display().to_string();
    let url = &s.served().url;
    let install = ["install", "--release-zip", url, "--release-ca-cert", &ca];
    let initial = s.snapshot();
    for how in ["--dry-run", "crash:1"] {
        let extra: &[&str] = if how == "--dry-run" {
            &[how]
        } else {
            &["--sim-fault", how]
        };
        let (code, doc, stderr) = s.run_without_kubeconfig(&[&install[..], extra].concat());
        assert_eq!(code, 2, "{how}: {stderr}");
        let refusal = "error: install needs the cluster to get calico-node's kubeconfig";
        assert!(stderr.contains(refusal), "{how}: {stderr}");
        assert!(!stderr.contains("error: downloading"), "{how}: {stderr}");
        if how != "--dry-run" {
            assert_eq!(doc["error"]["kind"], "no-admin-kubeconfig", "{how}: {doc}");
        }
        assert_same(&s.snapshot(), &initial, how);
    }
}

/// `--release-zip` as an Azure SAS URL (learn.microsoft.com/rest/api/storageservices/
/// create-service-sas: `sig=` signs it, a credential to the storage account): the dry run's
/// plan and warning and the real run's refusal name the URL with its signature hidden.
#[test]
fn a_sas_urls_signature_is_in_no_output() {
    let s = setup();
    let ca = s.served().ca.display().to_string();
    let sas = format!(
        "{}?sv=2022-11-02&sp=r&sig=SasSig0123%2Bsecret%3D",
        s.served().url
    );
    let install = ["install", "--release-zip", &sas, "--release-ca-cert", &ca];
    for how in [&["--sim-fault", "crash:1"][..], &["--dry-run"][..]] {
        let (_, doc, stderr) = s.run(&[&install[..], how].concat());
        let all = format!("{doc}{stderr}");
        assert!(!all.contains("SasSig0123"), "{how:?}: {all}");
        assert!(all.contains("&sp=r&sig=<redacted>"), "{how:?}: {all}");
    }
}
