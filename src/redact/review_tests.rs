//! Inputs a reviewer ran through both paths: the whole file (`redact`, the diags path) and a
//! line at a time (`redact_line`, the logs path).

use super::{Pending, Redactor};

/// `text` redacted whole.
pub(super) fn whole(text: &str) -> String {
    String::from_utf8(Redactor::new(&[]).redact(text.as_bytes())).expect("utf8")
}

/// `text` redacted a line at a time, the state carried from line to line.
pub(super) fn by_line(text: &str) -> String {
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
pub(super) fn check(text: &str, gone: &str, kept: &str) {
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

/// Both paths of `text` give `want`, exactly (the redacted text keeps the input's shape).
pub(super) fn same(text: &str, want: &str) {
    assert_eq!(whole(text), want, "whole");
    assert_eq!(by_line(text), want, "by line");
}

/// A block `env:` item's quoted value over lines (YAML 1.2 7.3.1, 7.3.2) keeps its closing
/// quote and each line its indentation: the redacted item is still the same YAML.
#[test]
fn a_quoted_env_value_over_lines_keeps_its_closing_quote_and_indentation() {
    for q in ['"', '\''] {
        let text = format!(
            "- name: X_TOKEN\n  value: {q}abc\n    def{q}\n- name: NODENAME\n  value: n1\n"
        );
        let want = format!(
            "- name: X_TOKEN\n  value: {q}<redacted>\n    <redacted>{q}\n- name: NODENAME\n  value: n1\n"
        );
        same(&text, &want);
    }
}

/// Keys in single quotes, as a Python dict or a PowerShell hashtable prints them: an `env:`
/// item's `'name'` and `'value'` in a block list, and named values in a flow.
#[test]
fn single_quoted_keys_name_their_secrets() {
    same(
        "- 'name': 'X_TOKEN'\n  'value': s3cret5\n- 'name': NODENAME\n  'value': n1\n",
        "- 'name': 'X_TOKEN'\n  'value': <redacted>\n- 'name': NODENAME\n  'value': n1\n",
    );
    check(
        "env {'name': 'X_TOKEN', 'value': 'pysecret1', 'x': 1}",
        "pysecret1",
        "'value': '<redacted>', 'x': 1}",
    );
    check(
        "@{ 'token' = 'pssecret1'; 'password' = \"pssecret2\" }",
        "pssecret",
        "@{ 'token' = '<redacted>'; 'password' = \"<redacted>\" }",
    );
}

/// An escaped quote (`\"`, inside a JSON string) not closed on its line: such a string holds
/// no line break, so the next line is another record, shown as it is and redacted as one; the
/// rest of a long line cut at a blank (its next piece) still closes it at its `\"`.
#[test]
fn an_unclosed_escaped_quote_does_not_reach_into_the_next_record() {
    let text = "{\"msg\":\"cmd --token \\\"abc\nplain next line\ntoken: \"s3cret7\"";
    let out = by_line(text);
    assert_eq!(
        out,
        "{\"msg\":\"cmd --token \\\"<redacted>\nplain next line\ntoken: \"<redacted>\""
    );
    let pieces = "{\"msg\":\"cmd --token \\\"two \nwords\\\" rest\",\"x\":1}";
    assert_eq!(
        by_line(pieces),
        "{\"msg\":\"cmd --token \\\"<redacted> \n<redacted>\\\" rest\",\"x\":1}"
    );
}

/// klog's multi-line value (k8s.io/klog/v2 internal/serialize/keyvalues.go,
/// `writeStringValue`: `key=<`, each line after a tab, then ` >`): a secret key's lines go,
/// another key's stay.
#[test]
fn a_klog_multi_line_value_of_a_secret_key_goes_whole() {
    let text = "I1126 18:00:00.000000    1 main.go:1] \"Loaded\" token=<\n\tfirst s3cret line\n\tsecond\n >\nI1126 18:00:01.000000    1 main.go:2] \"next\" config=<\n\tplain\n >\n";
    let want = "I1126 18:00:00.000000    1 main.go:1] \"Loaded\" token=<\n\t<redacted>\n\t<redacted>\n >\nI1126 18:00:01.000000    1 main.go:2] \"next\" config=<\n\tplain\n >\n";
    same(text, want);
}

/// Lines hidden whole as a value carried over lines are said (`hid_lines`), once per ask;
/// a text with none hidden says nothing.
#[test]
fn hidden_lines_are_said_once() {
    let r = Redactor::new(&[]);
    let (_, p) = r.redact_line(Pending::None, b"token: 'abc");
    assert!(!r.hid_lines(), "nothing hidden yet");
    let (out, _) = r.redact_line(p, b"  def'");
    assert_eq!(out, b"  <redacted>'");
    assert!(r.hid_lines());
    assert!(!r.hid_lines(), "said once");
    r.redact_line(Pending::None, b"token: abc");
    assert!(!r.hid_lines(), "a value on its own line hides no line");
}

/// A value that is no string under a JSON key naming a secret becomes a JSON string.
#[test]
fn a_secret_json_value_that_is_no_string_stays_json() {
    check(r#"{"token":12345}"#, "12345", r#"{"token":"<redacted>"}"#);
    check(
        r#"{"password": true, "x": 1}"#,
        "true",
        r#"{"password": "<redacted>", "x": 1}"#,
    );
    check(
        r#"{"msg":"{\"token\":67890}"}"#,
        "67890",
        r#"{"msg":"{\"token\":\"<redacted>\"}"}"#,
    );
}

/// Every credential of a JSON `Authorization` list goes, with a scheme or without.
#[test]
fn every_credential_in_an_authorization_list_goes() {
    check(
        r#"{"Authorization":["Basic aaaa1", "Basic bbbb2"]}"#,
        "bbbb2",
        r#"{"Authorization":["Basic <redacted>", "Basic <redacted>"]}"#,
    );
    check(
        r#"{"Authorization":["Bearer cccc3","opaque4x"],"Accept":["*/*"]}"#,
        "opaque4x",
        r#"{"Authorization":["Bearer <redacted>","<redacted>"],"Accept":["*/*"]}"#,
    );
    check(
        r#"{"msg":"{\"Authorization\":[\"Basic dddd5\",\"Basic eeee6\"]}"}"#,
        "eeee6",
        r#"[\"Basic <redacted>\",\"Basic <redacted>\"]"#,
    );
}

/// logrus' text format (`time="..." level=... msg=...`) starts a record: a quote or a flag
/// left open on the line before does not take it.
#[test]
fn a_logrus_record_is_no_value_of_the_line_before() {
    let next = "time=\"2026-11-26T18:00:01Z\" level=info msg=\"next\"";
    for first in [
        "time=\"2026-11-26T18:00:00Z\" level=info msg=\"x\" token=\"abc",
        "time=\"2026-11-26T18:00:00Z\" level=error msg=\"unknown flag: --token\"",
    ] {
        let out = by_line(&format!("{first}\n{next}"));
        assert!(out.ends_with(&format!("\n{next}")), "{out}");
    }
}

/// A quoted secret over lines (YAML 1.2 7.3.1) goes to its closing quote in a whole file as
/// it does a line at a time, and stops where that stops (4 lines after its own, a record).
#[test]
fn a_quoted_secret_over_lines_goes_to_its_end_in_a_whole_file() {
    same(
        "password: \"line1\n  line2\n  line3\"\nnext: x\n",
        "password: \"<redacted>\n  <redacted>\n  <redacted>\"\nnext: x\n",
    );
    same(
        "{\"token\": \"ab\r\n  cd\"}\r\n",
        "{\"token\": \"<redacted>\r\n  <redacted>\"}\r\n",
    );
    let long = "token: 'a\n  b\n  c\n  d\n  e\n  f\n  g'\nafter: 1\n";
    assert_eq!(whole(long), by_line(long));
    let record = "token: \"abc\n2026-11-26 18:00:00.000 [INFO][1] x.go 1: next \"q\"\n";
    assert_eq!(whole(record), by_line(record));
    assert!(whole(record).contains("next \"q\""), "{}", whole(record));
}

/// A private key's block in a whole file becomes one `<redacted>` per line, its line breaks
/// kept (CRLF too): the lines after it stay where they were; on one line (a JSON string's
/// `\n`), one `<redacted>`.
#[test]
fn a_private_key_keeps_its_lines() {
    let key = "-----BEGIN EC PRIVATE KEY-----\r\nMHcCAQEEIabc\r\n-----END EC PRIVATE KEY-----";
    assert_eq!(
        whole(&format!("a {key} b\r\nnext\r\n")),
        "a <redacted>\r\n<redacted>\r\n<redacted> b\r\nnext\r\n"
    );
    let escaped = r#"{"key":"-----BEGIN PRIVATE KEY-----\nMHcC\n-----END PRIVATE KEY-----\n"}"#;
    assert_eq!(whole(escaped), r#"{"key":"<redacted>\n"}"#);
}

/// A text that starts inside a private key's block (a tail cut in it, as `diags` takes a
/// log's last bytes) has its END with no BEGIN before it: from its start to that END goes,
/// one `<redacted>` per line; a key whole after it goes as any does, and a text with its
/// BEGIN first is no such text.
#[test]
fn a_tail_cut_inside_a_private_key_hides_it_to_its_end() {
    let tail = "AwEHoUQDQgAEabc\r\nMHcCAQEEIdef\r\n-----END EC PRIVATE KEY----- after\r\nnext\r\n";
    assert_eq!(
        whole(tail),
        "<redacted>\r\n<redacted>\r\n<redacted> after\r\nnext\r\n"
    );
    let both = "QEEIdef\n-----END RSA PRIVATE KEY-----\nx\n-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n";
    assert_eq!(
        whole(both),
        "<redacted>\n<redacted>\nx\n<redacted>\n<redacted>\n<redacted>\n"
    );
    let first = "a\n-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\nb\n";
    assert_eq!(whole(first), "a\n<redacted>\n<redacted>\n<redacted>\nb\n");
}

/// Go's `%v` of an http.Header (`map[Authorization:[Basic a Basic b]]`: a `[]string` printed
/// with blanks between its items) holds every credential of the header: each goes, the
/// schemes and the other headers stay; a line at a time too.
#[test]
fn every_credential_of_a_go_printed_header_goes() {
    for (text, kept) in [
        (
            "req map[Authorization:[Basic aaaa1 Basic bbbb2] Accept:[*/*]] sent",
            "req map[Authorization:[Basic <redacted> Basic <redacted>] Accept:[*/*]] sent",
        ),
        (
            "Authorization:[Bearer cccc3 Basic dddd4]",
            "Authorization:[Bearer <redacted> Basic <redacted>]",
        ),
        (
            "Proxy-Authorization:[opaque5x]",
            "Proxy-Authorization:[<redacted>]",
        ),
    ] {
        for out in [whole(text), by_line(text)] {
            assert_eq!(out, kept);
        }
    }
}

/// An indented private key's lines (klog's tab, a YAML block's blanks) each keep their
/// indentation in a whole file.
#[test]
fn an_indented_private_key_keeps_its_indentation() {
    let text = "data=<\n\t-----BEGIN RSA PRIVATE KEY-----\n\tMIIEow\n\t-----END RSA PRIVATE KEY-----\n >\n  key: |\n    -----BEGIN PRIVATE KEY-----\n    MIIEow\n    -----END PRIVATE KEY-----\nnext\n";
    assert_eq!(
        whole(text),
        "data=<\n\t<redacted>\n\t<redacted>\n\t<redacted>\n >\n  key: |\n    <redacted>\n    <redacted>\n    <redacted>\nnext\n"
    );
}

/// An END marker inside a line of text (a message quoting it) is no cut key's end: the lines
/// before it, which no key's body holds, stay; so does a key's END after lines of text.
#[test]
fn a_false_end_hides_nothing_before_it() {
    for text in [
        "line one\nline two\nerror: expected -----END RSA PRIVATE KEY----- marker\nline four\n",
        "line one\nline two\n-----END RSA PRIVATE KEY-----\nline four\n",
    ] {
        assert_eq!(whole(text), text);
    }
}

/// A Secret's data holds a PEM private key in base64 under any name (`tls.key`, as
/// client-go's `-v=9` prints a response body): it goes whole; a base64 certificate
/// (`certificate-authority-data`) stays.
#[test]
fn a_base64_private_key_under_any_name_goes() {
    let key = "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCk1JSUV2UUlCQURBTkJna3Foa2lHOXcwQkFRRUZBQVND";
    let text = format!(
        r#"{{"data":{{"tls.key":"{key}","ca.crt":"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM="}}}}"#
    );
    let want = r#"{"data":{"tls.key":"<redacted>","ca.crt":"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM="}}"#;
    same(&text, want);
    same(
        "tls.key: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQo=",
        "tls.key: <redacted>",
    );
}

/// An `Authorization` list printed over lines (pretty JSON of an http.Header) loses each
/// quoted credential on its own line; a Digest credential goes whole to its parameters' end.
#[test]
fn a_credential_on_its_own_line_and_a_digest_credential_go() {
    let text = "{\n  \"Authorization\": [\n    \"Basic dXNlcjpwYXNzd29yZA==\",\n    \"Bearer abcd.efgh-ijkl\"\n  ]\n}\n";
    same(
        text,
        "{\n  \"Authorization\": [\n    \"Basic <redacted>\",\n    \"Bearer <redacted>\"\n  ]\n}\n",
    );
    same(
        "Authorization: Digest username=\"admin\", response=\"6629fae49393a05397450978507c4ef1\"\nnext",
        "Authorization: Digest <redacted>\nnext",
    );
    // A quote before Digest that opens no JSON string: to its parameters' end (here the
    // line's: the quote is never closed).
    same(
        r#"Authorization="Digest username="a", response="6629fae4""#,
        "Authorization=\"Digest <redacted>",
    );
    // In a JSON string it goes to the string's end: JSON stays JSON.
    same(
        r#"{"Authorization":["Digest username=\"admin\", response=\"6629fae4\""],"next":1}"#,
        r#"{"Authorization":["Digest <redacted>"],"next":1}"#,
    );
    check(
        r#"{"Authorization": "Digest username=\"admin\", response=\"6629fae4\"", "n": 1}"#,
        "6629fae4",
        r#""n": 1"#,
    );
}

/// A secret's value on the line after its name that starts like a log record (a date) is no
/// record when indented: it goes; an unindented record after the name stays.
#[test]
fn an_indented_value_that_starts_like_a_record_goes() {
    check("password:\n  2024-11-abcd\nnext", "2024-11-abcd", "next");
    let record = "password:\n2024-11-26 12:00:00.000 [INFO] felix up";
    assert_eq!(by_line(record), record);
}

/// A cookie and an API key or token header (`Cookie`, `Set-Cookie`, `X-Api-Key`,
/// `X-Auth-Token`) lose their whole value as HTTP sends them, as Go's `%v` of an http.Header
/// prints them and as its encoding/json writes them (escaped in a JSON string too); the
/// headers after them stay.
#[test]
fn cookie_and_api_key_headers_lose_their_values() {
    for (text, want) in [
        (
            "Cookie: sid=ck1; theme=ck2\nnext",
            "Cookie: <redacted>\nnext",
        ),
        (
            "Set-Cookie: id=ck3; Path=/; HttpOnly\r\nAccept: */*",
            "Set-Cookie: <redacted>\r\nAccept: */*",
        ),
        ("X-Api-Key: ak4", "X-Api-Key: <redacted>"),
        (
            "map[Cookie:[sid=ck5; theme=ck6] X-Auth-Token:[tk7] Accept:[*/*]]",
            "map[Cookie:[<redacted> <redacted>] X-Auth-Token:[<redacted>] Accept:[*/*]]",
        ),
        (
            r#"{"Cookie":["sid=ck8; theme=ck9"],"X-Api-Key":["ak10"],"Accept":["*/*"]}"#,
            r#"{"Cookie":["<redacted>"],"X-Api-Key":["<redacted>"],"Accept":["*/*"]}"#,
        ),
        (
            r#"{"Set-Cookie": "id=ck11; Path=/", "n": 1}"#,
            r#"{"Set-Cookie": "<redacted>", "n": 1}"#,
        ),
        (
            r#"{"msg":"{\"Cookie\":[\"sid=ck12; t=ck13\"],\"n\":1}"}"#,
            r#"{"msg":"{\"Cookie\":[\"<redacted>\"],\"n\":1}"}"#,
        ),
        (
            r#"{"msg":"sent Cookie: sid=ck14 x","level":"info"}"#,
            r#"{"msg":"sent Cookie: <redacted>","level":"info"}"#,
        ),
    ] {
        same(text, want);
        if text.starts_with('{') {
            assert_json_lines(&whole(text));
        }
    }
}

/// A plain value of many words goes whole, to where its shape ends it: a YAML or log
/// `key: value` to its line's end, Go's `%+v` of a struct to the next ` Field:` or its `}`,
/// PowerShell's `Format-List` to its line's end, a YAML flow mapping's to its `,`; the field
/// or line after it stays.
#[test]
fn a_plain_value_of_many_words_goes_whole_and_the_next_field_stays() {
    for (text, want) in [
        (
            "password: correct horse battery\nuser: admin\n",
            "password: <redacted>\nuser: admin\n",
        ),
        (
            "2026-11-26 18:00:00.000 [INFO][1] x.go 1: login with password: correct horse battery",
            "2026-11-26 18:00:00.000 [INFO][1] x.go 1: login with password: <redacted>",
        ),
        (
            "cfg &{User:admin Password:two words Other:x}",
            "cfg &{User:admin Password:<redacted> Other:x}",
        ),
        (
            "cfg {Password:two words} next",
            "cfg {Password:<redacted>} next",
        ),
        (
            "Name     : calico\r\nPassword : two words\r\nPort     : 5473\r\n",
            "Name     : calico\r\nPassword : <redacted>\r\nPort     : 5473\r\n",
        ),
        (
            "{user: a, password: two words, port: 1}",
            "{user: a, password: <redacted>, port: 1}",
        ),
        (
            r#"{"msg":"retry with token: two words","level":"info"}"#,
            r#"{"msg":"retry with token: <redacted>","level":"info"}"#,
        ),
        // The line indented more goes on the value (YAML 1.2 7.3.3: a plain scalar's
        // continuation), unless it is an entry of its own (a plain scalar holds no `: `):
        // a sequence's entry is redacted as any line.
        (
            "token: two words
  more words
  - token: three more words
",
            "token: <redacted>
  <redacted>
  - token: <redacted>
",
        ),
    ] {
        same(text, want);
    }
}

/// A value of many words after a secret's name goes wherever the name stands: after a log
/// record's prefix, in a JSON string, after a value whose first word holds a `:`, in braces
/// too; the message after a name in prose goes with it (no rule tells it from a secret).
#[test]
fn a_value_of_many_words_goes_wherever_its_name_stands() {
    for (text, gone) in [
        (
            "I1127 01:02:03.456789 1234 config.go:12] client_secret: correct horse battery",
            "horse battery",
        ),
        (
            "2026-11-27T00:00:00Z INFO secret: correct horse battery staple",
            "battery staple",
        ),
        (r#"{"msg":"retry with token: two words"}"#, "words"),
        ("password: correct:horse battery staple", "battery staple"),
        ("{User:admin Token: two words Other:x}", "words"),
        (
            "E1126 18:00:00.000000 1234 token_source.go:113] Unable to rotate token: failed to read token file",
            "read token file",
        ),
        (
            r#"{"level":"info","msg":"login password: user:pw extra words"}"#,
            "extra words",
        ),
        ("{password: correct:horse battery staple}", "battery staple"),
        ("level=info cfg={ secret: a1:b2 c3 d4 }", "c3 d4"),
        ("{client_secret: https://x y z}", "y z"),
        ("cfg &{Password: hunter2:x two words Other:x}", "two words"),
    ] {
        for (path, out) in [("whole", whole(text)), ("by line", by_line(text))] {
            assert!(
                !out.contains(gone),
                "{path}: {gone} survived: {text}\n-> {out}"
            );
        }
    }
}

/// JSON inside a JSON string: a Digest credential in an escaped `Authorization` and a
/// multi-word `password` in escaped quotes go; the record stays JSON.
#[test]
fn escaped_json_in_a_json_string_keeps_no_secret() {
    check(
        r#"{"msg":"{\"Authorization\":\"Digest username=\\\"a\\\", response=\\\"dg7resp\\\"\"}"}"#,
        "dg7resp",
        r#"{"msg":"{\"Authorization\":\"Digest <redacted>"#,
    );
    check(
        r#"{"msg":"{\"password\":\"two words\"}","n":1}"#,
        "two words",
        r#"{\"password\":\"<redacted>\"}","n":1}"#,
    );
}

/// A quoted secret longer than `QUOTE_LINES` lines after its own: a whole file hides it to its
/// closing quote whatever its lines hold; a line at a time hides it to its closing quote while
/// its record goes on (its lines indented), and shows the unindented line after it.
#[test]
fn a_quoted_secret_past_the_bound_goes_to_its_closing_quote() {
    let n = usize::from(super::QUOTE_LINES) + 4;
    let body: Vec<String> = (0..n).map(|i| format!("  qline{i}")).collect();
    let text = format!("token: \"first\n{}\"\nafter: 1\n", body.join("\n"));
    let hidden: Vec<&str> = (0..n).map(|_| "  <redacted>").collect();
    let want = format!("token: \"<redacted>\n{}\"\nafter: 1\n", hidden.join("\n"));
    same(&text, &want);
    // Its lines unindented: a whole file still hides them to the closing quote.
    let flat: Vec<String> = (0..n).map(|i| format!("qline{i}")).collect();
    let out = whole(&format!(
        "token: \"first\n{}\"\nafter: 1\n",
        flat.join("\n")
    ));
    assert!(!out.contains("qline"), "{out}");
    assert!(out.ends_with("\"\nafter: 1\n"), "{out}");
}

/// A tail cut inside a private key's block with neither its BEGIN nor its END in it: the key's
/// lines at its head go (`redact_tail`), the records after them stay; a tail whose head is
/// a record keeps it.
#[test]
fn a_tail_that_starts_inside_a_key_without_its_markers_hides_its_head() {
    let r = Redactor::new(&[]);
    let tail = "MIIEowIBAAKCAQEAcutbody1\r\n  c2VjcmV0a2V5Ym9keQ==\r\n2026-11-26 18:00:00.000 [INFO][1] next\r\n";
    let out = String::from_utf8(r.redact_tail(tail.as_bytes())).expect("utf8");
    assert_eq!(
        out,
        "<redacted>\r\n  <redacted>\r\n2026-11-26 18:00:00.000 [INFO][1] next\r\n"
    );
    let record = "2026-11-26 18:00:00.000 [INFO][1] first\nMIIEow\n";
    assert_eq!(r.redact_tail(record.as_bytes()), record.as_bytes());
}
