//! The values of the secret files install wrote (`Redactor::new`'s), replaced wherever they
//! appear, whatever is around them.

use super::{Pending, Redactor, values_in};

fn redacted(r: &Redactor, s: &str) -> String {
    String::from_utf8(r.redact(s.as_bytes())).expect("utf8")
}

const KUBECONFIG: &str =
    "apiVersion: v1\nusers:\n- name: calico-node\n  user:\n    token: s3cr3t-opaque-value\n";

#[test]
fn known_values_go_wherever_they_appear() {
    let r = Redactor::new(&[KUBECONFIG.to_owned(), "token-file-word-1234\n".to_owned()]);
    for (text, want) in [
        (
            "2026 refreshed: wrote s3cr3t-opaque-value to the file\n",
            "2026 refreshed: wrote <redacted> to the file\n",
        ),
        ("glued:xs3cr3t-opaque-valuex", "glued:x<redacted>x"),
        (
            "{\"k\": \"token-file-word-1234\"}",
            "{\"k\":\"<redacted>\"}",
        ),
    ] {
        assert_eq!(redacted(&r, text), want);
        let line = text.trim_end().as_bytes();
        let (out, _) = r.redact_line(Pending::None, line);
        assert!(!String::from_utf8_lossy(&out).contains("s3cr3t"));
    }
}

/// What a secret file gives: a named value, each PEM body line, a file of one word; nothing
/// shorter than 8 characters (it would take ordinary words out).
#[test]
fn a_secret_files_values_are_its_named_values_key_lines_and_lone_word() {
    let pem = "client-key-data: abcdefgh12\npassword: short\n-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIkeyline1\n-----END EC PRIVATE KEY-----\n";
    let mut got = values_in(pem);
    got.sort();
    assert_eq!(got, ["MHcCAQEEIkeyline1", "abcdefgh12"]);
    assert_eq!(values_in("  onewordtoken99 \n"), ["onewordtoken99"]);
    assert!(values_in("name: calico-node\nserver: https://x").is_empty());
}
