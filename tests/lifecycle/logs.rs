//! `logs` through the binary on an installed simulated node: a service's log redacted as
//! `diags` redacts it, and clear refusals of a bad role, duration or flag.

use crate::support::cmd;
use crate::support::node::Node;

/// `calicoctl-win ARGS` on the node, text output: exit code, stdout, stderr.
fn logs(node: &Node, args: &[&str]) -> (i32, String, String) {
    let out = cmd()
        .args(["--set", "node.name=win-1", "--sim-host"])
        .arg(node.sim())
        .arg("--kubeconfig")
        .arg(&node.admin)
        .args(args)
        .output()
        .expect("run");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().expect("code"), text(&out.stdout), text(&out.stderr))
}

/// The node's log with calico-node's token, a bearer credential and a private key written
/// into it: `logs node` shows its lines with each of them taken out.
#[test]
fn logs_show_a_services_log_with_its_secrets_redacted() {
    let node = Node::healthy().installed().build();
    let token = fs_err::read_to_string(node.c_drive("calicowindows/calico-kube-config.token"))
        .expect("calico-node's token");
    let log = node.c_drive("calicowindows/logs/calico-node.log");
    fs_err::create_dir_all(log.parent().expect("dir")).expect("dir");
    let mut text = fs_err::read_to_string(&log).unwrap_or_default();
    text.push_str(&format!(
        "using token {}\nAuthorization: Bearer abcdefgh12345\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAsecretkeymaterial\n-----END RSA PRIVATE KEY-----\nthe last line\n",
        token.trim()
    ));
    fs_err::write(&log, text).expect("log");
    let (code, out, err) = logs(&node, &["logs", "node", "--tail", "6"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "using token <redacted>\nAuthorization: Bearer <redacted>\n-----BEGIN RSA PRIVATE KEY-----\n<redacted>\n<redacted>\nthe last line\n"
    );
    // Every log there is, each line with its role.
    let (code, out, err) = logs(&node, &["logs", "--tail", "1"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("[node] the last line\n"), "{out}");
}

/// A role, a duration or a flag that is wrong is refused with what is accepted (exit 2).
#[test]
fn logs_refuse_a_bad_role_duration_or_flag() {
    let node = Node::healthy().installed().build();
    for (args, said) in [
        (&["logs", "calico"][..], "possible values: node, felix, confd, kube-proxy, calicoctl-win"),
        (&["logs", "felix", "--since", "5x"], "is not a duration"),
        (&["logs", "felix", "--since", "1h", "--tail", "3"], "cannot be used with"),
        (&["logs", "felix", "--position", "p.json"], "--follow"),
        (&["logs", "felix", "node", "--follow", "--position", "p.json"], "one role"),
        (&["-o", "json", "logs", "felix"], "leave out -o json"),
    ] {
        let (code, _, err) = logs(&node, args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(said), "{args:?}: {err}");
    }
}
