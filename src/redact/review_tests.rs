//! Inputs a reviewer ran through both paths: the whole file (`redact`, the diags path) and a
//! line at a time (`redact_line`, the logs path).

use super::{Pending, Redactor};

/// `text` redacted whole.
fn whole(text: &str) -> String {
    String::from_utf8(Redactor::new(&[]).redact(text.as_bytes())).expect("utf8")
}

/// `text` redacted a line at a time, the state carried from line to line.
fn by_line(text: &str) -> String {
    let r = Redactor::new(&[]);
    let mut pending = Pending::None;
    let mut out = Vec::new();
    for line in text.split('\n') {
        let (o, p) = r.redact_line(pending, line.as_bytes());
        out.push(String::from_utf8(o).expect("utf8"));
        pending = p;
    }
    out.join("\n")
}

/// Every line of `out` (JSON lines) still parses as JSON.
fn assert_json_lines(out: &str) {
    for line in out.lines().filter(|l| !l.trim().is_empty()) {
        serde_json::from_str::<serde_json::Value>(line)
            .unwrap_or_else(|e| panic!("not JSON any more ({e}): {line}\nin {out}"));
    }
}

/// Both paths of `text`: neither holds `gone`, both hold `kept`, and JSON lines stay JSON.
fn check(text: &str, gone: &str, kept: &str) {
    for (path, out) in [("whole", whole(text)), ("by line", by_line(text))] {
        assert!(!out.contains(gone), "{path}: {gone} survived: {out}");
        assert!(out.contains(kept), "{path}: {kept} not in {out}");
        if text.starts_with('{') {
            assert_json_lines(&out);
        }
    }
}

/// Go's encoding/json of an http.Header (`map[string][]string`): the credential is inside the
/// list's quoted string, after its scheme.
#[test]
fn a_json_http_header_keeps_its_scheme_and_loses_its_credential() {
    check(
        r#"{"Authorization":["Basic dXNlcjpwYXNz"]}"#,
        "dXNlcjpw",
        r#"{"Authorization":["Basic <redacted>"]}"#,
    );
    check(
        r#"{"Proxy-Authorization":["Bearer opaque123"],"Accept":["*/*"]}"#,
        "opaque123",
        r#"{"Proxy-Authorization":["Bearer <redacted>"],"Accept":["*/*"]}"#,
    );
    check(
        r#"{"Authorization": [ "Bearer abc.def-1" ]}"#,
        "abc.def",
        r#"{"Authorization": [ "Bearer <redacted>" ]}"#,
    );
}

/// A flag's value after a `,` in a JSON string's free text ends at the string's `"` (or an
/// escape's `\`): the record stays JSON.
#[test]
fn a_flag_value_in_a_json_message_ends_with_its_string() {
    check(
        r#"{"msg":"unknown flag -password, abc","level":"info"}"#,
        "abc",
        r#"{"msg":"unknown flag -password, <redacted>","level":"info"}"#,
    );
    check(
        r#"{"msg":"bad flag -token, abc\tgiven","v":1}"#,
        "abc",
        r#"-token, <redacted>\tgiven","v":1}"#,
    );
}

/// An `env:` item's value that is no JSON string (a number, a boolean) is replaced by a JSON
/// string, in the quote its key had.
#[test]
fn a_secret_env_value_that_is_no_string_becomes_a_json_string() {
    check(
        r#"{"name":"FELIX_TOKEN","value":2048}"#,
        "2048",
        r#"{"name":"FELIX_TOKEN","value":"<redacted>"}"#,
    );
    check(
        r#"{"name":"X_PASSWORD","value":true,"x":1}"#,
        "true",
        r#""value":"<redacted>","x":1}"#,
    );
    // An object across lines (`kubectl get -o json`), read a line at a time.
    let text = "{\"name\": \"FELIX_TOKEN\",\n \"value\": 2048, \"x\": 1}";
    let out = by_line(text);
    assert!(!out.contains("2048"), "{out}");
    let joined: serde_json::Value = serde_json::from_str(&out).expect("still JSON");
    assert_eq!(joined["value"], "<redacted>");
}

/// A line ending in a secret flag (pflag's `unknown flag: --token`) does not take the next
/// log record as its value.
#[test]
fn a_record_after_a_line_ending_in_a_flag_is_no_value() {
    for next in [
        r#"{"level":"info","msg":"next"}"#,
        "2026-11-26 18:00:00.000 [INFO][1] next",
        "I1126 18:00:00.000000    1 main.go:1] next",
    ] {
        for first in [
            "Error: unknown flag: --token",
            "flag needs an argument: --token",
        ] {
            let out = by_line(&format!("{first}\n{next}"));
            assert_eq!(out, format!("{first}\n{next}"));
        }
    }
    // A value on the next line is still one.
    assert_eq!(by_line("- --token\n- abc"), "- --token\n- <redacted>");
}

/// A stray quote hides a few lines at most, and no log record after it.
#[test]
fn a_stray_quote_hides_a_few_lines_and_no_record() {
    let lines: Vec<String> = (0..10).map(|i| format!("plain line {i}")).collect();
    let out = by_line(&format!("token: \"abc\n{}", lines.join("\n")));
    assert!(out.contains("plain line 5"), "{out}");
    let out = by_line("token: \"abc\n2026-11-26 18:00:00.000 [INFO][1] next");
    assert!(
        out.ends_with("\n2026-11-26 18:00:00.000 [INFO][1] next"),
        "{out}"
    );
}

/// A flag's value in a JSON string holding an escaped quote or backslash is redacted whole: its
/// tail after the escape once stayed readable.
#[test]
fn a_flag_value_with_an_escape_in_a_json_string_is_redacted_whole() {
    for (text, gone) in [
        (r#"{"msg":"args [--password pa\"ss9word x]"}"#, "ss9word"),
        (r#"{"msg":"args --password ab\\cd9word x"}"#, "cd9word"),
        (r#"{"msg":"args --token=abc\\def9x y"}"#, "def9x"),
        (
            r#"{"msg":"unknown flag -password, ab\"cd9word","level":"info"}"#,
            "cd9word",
        ),
    ] {
        check(text, gone, "<redacted>");
    }
}
