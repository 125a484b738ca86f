//! Every command's JSON document compared whole against a reviewed snapshot
//! (`tests/lifecycle/snapshots/`, insta's format), with what differs from run to run filtered
//! out: temporary paths, loopback ports, times, the release zip's hash, fingerprints. A change
//! to any field of any document shows in one diff for a reviewer; `cargo insta review` (or
//! `INSTA_UPDATE=always cargo test`) takes an intended one.

use crate::support::Node;
use crate::support::documents::snapshot;

/// preflight, install's plan and its result, status on the installed node, install again,
/// reconfigure's plan and uninstall's plan: each document whole.
#[test]
fn the_install_lifecycles_documents() {
    let node = Node::healthy()
        .created()
        .serving("3.30.2", "calico-node.exe")
        .build();
    let (code, checks, err) = node.run(&["preflight"]);
    assert_eq!(code, 0, "{err}");
    snapshot(&node, "preflight", &checks);
    let (code, plan, err) = node.install(&["--dry-run"]);
    assert_eq!(code, 0, "{err}");
    snapshot(&node, "install-dry-run", &plan);
    let (code, done, err) = node.install(&[]);
    assert_eq!(code, 0, "{err}");
    snapshot(&node, "install", &done);
    node.api()
        .set_node_ready("win-1", "True", "kubelet is posting ready status");
    let (code, status, err) = node.run(&["status"]);
    assert_eq!(code, 0, "{err}");
    snapshot(&node, "status", &status);
    let (code, again, err) = node.install(&[]);
    assert_eq!(code, 0, "{err}");
    snapshot(&node, "install-again", &again);
    let (code, plan, err) = node.run(&[
        "reconfigure",
        "--dry-run",
        "--set",
        "logs.felix_file_severity=debug",
    ]);
    assert_eq!(code, 0, "{err}");
    snapshot(&node, "reconfigure-dry-run", &plan);
    let (code, plan, err) = node.uninstall(&["--purge", "--dry-run"]);
    assert_eq!(code, 0, "{err}");
    snapshot(&node, "uninstall-purge-dry-run", &plan);
}
