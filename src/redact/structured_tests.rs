//! A JSON document (a `diags` member, a line that is one) redacted by its keys; the values of
//! the secret files install wrote (`Redactor::new`'s), replaced wherever they appear, whatever
//! is around them.

use super::{Pending, Redactor, values_in};

fn redacted(s: &str) -> String {
    redacted_by(&Redactor::new(&[]), s)
}

fn redacted_by(r: &Redactor, s: &str) -> String {
    String::from_utf8(r.redact(s.as_bytes())).expect("utf8")
}

/// The values under a key naming a secret go, whatever they are (a string, a number, a
/// list, an object); an `env` item's `value` when its `name` names one (Calico's rule); a
/// name that only begins with a secret's word stays; the document stays JSON, indented as it
/// was.
#[test]
fn a_json_document_goes_by_its_keys() {
    let doc = serde_json::json!({
        "token": "opaque1234",
        "token_expires": "2026",
        "etcdPassword": 12345,
        "credentials": {"user": "u1", "pass": ["a1b2c3"]},
        "env": [
            {"name": "DB_PASSWORD", "value": "envsecret1"},
            {"name": "NODENAME", "value": "node1"},
            {"name": "ETCD_KEY_FILE", "value": "c:\\etcd.key"}
        ],
        "ca": ""
    });
    let text = serde_json::to_string_pretty(&doc).expect("json");
    let out = redacted(&text);
    let v: serde_json::Value = serde_json::from_str(&out).expect("still JSON");
    assert_eq!(v["token"], "<redacted>");
    assert_eq!(v["token_expires"], "2026");
    assert_eq!(v["etcdPassword"], "<redacted>");
    assert_eq!(
        v["credentials"],
        serde_json::json!({"user": "<redacted>", "pass": ["<redacted>"]})
    );
    assert_eq!(v["env"][0]["value"], "<redacted>");
    assert_eq!(v["env"][1]["value"], "node1");
    assert_eq!(v["env"][2]["value"], "c:\\etcd.key");
    assert_eq!(v["ca"], "");
    assert!(out.contains("\n  \"token\": \"<redacted>\""), "{out}");
}

/// A string in a document is a text: a log line, a command line, JSON again (a service's
/// configuration in an event, escaped once or twice) are redacted as such.
#[test]
fn the_strings_of_a_document_are_redacted_as_text() {
    let inner = serde_json::json!({"password": "nested1"}).to_string();
    let twice = serde_json::json!({ "config": inner }).to_string();
    let doc = serde_json::json!({
        "services": [{"command_line": "calico-node.exe --token cmdsecret1 -v 2"}],
        "events": [{"message": "Authorization: Bearer eventsecret1"}, {"message": twice}],
    });
    let out = redacted(&doc.to_string());
    for gone in ["cmdsecret1", "eventsecret1", "nested1"] {
        assert!(!out.contains(gone), "{gone}: {out}");
    }
    assert!(
        out.contains("-v 2") && out.contains("Bearer <redacted>"),
        "{out}"
    );
}

/// A log line that is a JSON object (a program logging JSON) goes by its keys in `logs` too;
/// a line that is no JSON (a piece of one) by its shapes.
#[test]
fn a_json_line_goes_by_its_keys_in_logs() {
    let r = Redactor::new(&[]);
    let line = br#"{"level":"info","msg":"config","secret":{"a":"jsonline1"},"n":"x"}"#;
    let (out, _) = r.redact_line(Pending::None, line);
    assert_eq!(
        String::from_utf8_lossy(&out),
        r#"{"level":"info","msg":"config","secret":{"a":"<redacted>"},"n":"x"}"#
    );
    let (out, _) = r.redact_piece(Pending::None, br#"{"level":"info","token":"piece1", "#);
    assert!(!String::from_utf8_lossy(&out).contains("piece1"));
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
        assert_eq!(redacted_by(&r, text), want);
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
