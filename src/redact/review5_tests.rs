//! Inputs a fifth review ran: leaks of credential headers in shapes and cuts the rounds
//! before missed, and text after a secret hidden though it was none.

use super::Redactor;
use super::review_tests::same;
use super::review4_tests::{cut_at, cuts};

/// `text` redacted whole (`redact`), as one line (`redact_line`), and cut in two at every
/// place `logs` may cut it: `secret` never shows, and each of `kept` does (cut, when the cut
/// is at or after its start: a cut inside a header's value hides the rest of its line).
pub(super) fn never_leaks(text: &str, secret: &str, kept: &[&str]) {
    let r = Redactor::new(&[]);
    let whole = String::from_utf8_lossy(&r.redact(text.as_bytes())).into_owned();
    let (line, _) = r.redact_line(super::Pending::None, text.as_bytes());
    let line = String::from_utf8_lossy(&line).into_owned();
    for (how, out) in [("whole", whole), ("line", line)] {
        assert!(!out.contains(secret), "{how}: {out}");
        for k in kept {
            assert!(out.contains(k), "{how} lost {k}: {out}");
        }
    }
    for at in cuts(text) {
        let out = cut_at(text, at);
        assert!(!out.contains(secret), "cut at {at}: {out}");
        for k in kept
            .iter()
            .filter(|k| text.find(*k).is_some_and(|i| i <= at))
        {
            assert!(out.contains(k), "cut at {at} lost {k}: {out}");
        }
    }
}

/// Go's `%#v` of an http.Header (`http.Header{"Cookie":[]string{"a=b"}}`): a credential
/// header's items go, up to its list's `}`; the next key's items stay.
#[test]
fn a_go_syntax_http_header_loses_its_credentials_only() {
    let pad = "x".repeat(40);
    never_leaks(
        &format!(
            r#"{pad} req http.Header{{"Cookie":[]string{{"a=b; sid=S3CRET"}}, "Accept":[]string{{"*/*"}}}} done"#
        ),
        "S3CRET",
        &[r#""Accept":[]string{"*/*"}} done"#],
    );
    never_leaks(
        &format!(r#"{pad} req http.Header{{"Authorization":[]string{{"Bearer S3CRET"}}}} done"#),
        "S3CRET",
        &["} done"],
    );
}

/// A single-quoted value holding a doubled `''` (YAML 1.2 7.3.2, PowerShell's verbatim
/// string: an escaped quote; a backslash is plain there) goes whole, wherever it is cut.
#[test]
fn a_single_quoted_header_value_with_a_doubled_quote_goes_whole() {
    let pad = "x".repeat(40);
    for tail in [
        "{Cookie: 'a=b; it''s; sid=S3CRET'} done",
        "Cookie: 'a=b; it''s; sid=S3CRET'",
    ] {
        never_leaks(&format!("{pad} {tail}"), "S3CRET", &[]);
    }
    // A cut right after the closing `'` hides the `}`: that `'` might begin a `''`.
    never_leaks(
        &format!("{pad} {{Cookie: 'a=b; it''s; sid=S3CRET'}} done"),
        "S3CRET",
        &[" done"],
    );
}

/// PowerShell's backtick escapes a `"` inside a double-quoted string: the header's string
/// goes on past `` `" ``.
#[test]
fn a_powershell_backtick_quote_does_not_end_a_header_string() {
    let pad = "x".repeat(40);
    never_leaks(
        &format!(r#"{pad} "Cookie: a=b; `"x`"; sid=S3CRET" done"#),
        "S3CRET",
        &[],
    );
}

/// An unquoted Digest credential in a flow mapping: its parameters' commas are its own.
#[test]
fn an_unquoted_digest_in_a_flow_mapping_goes_whatever_the_cut() {
    let pad = "x".repeat(40);
    never_leaks(
        &format!(r#"{pad} {{Authorization: Digest username="u", response="S3CRET", nc=1}} done"#),
        "S3CRET",
        &[],
    );
}

/// A header in JSON escaped twice (a JSON string holding a JSON string holding the header).
#[test]
fn a_header_in_json_escaped_twice_goes() {
    let pad = "x".repeat(40);
    never_leaks(
        &format!(r#"{pad} {{"log":"{{\\\"Cookie\\\":\\\"sid=S3CRET\\\"}}"}} done"#),
        "S3CRET",
        &[],
    );
}

/// A piece that ends in a word only ending with a header's name (`"XsrfCookie"`), or in a
/// header's name that is a list's item (no `:` begins the next piece), leaves the next piece
/// as it is; a header's name whose `:` begins the next piece still hides it.
#[test]
fn a_headers_name_at_a_pieces_end_hides_the_next_only_before_its_colon() {
    for (first, rest) in [
        (r#"{"XsrfCookie""#, r#": "on", "n": 1} took 12ms"#),
        (
            r#"{"allowedHeaders":["Authorization""#,
            r#", "Accept"], "n": 1} took 12ms"#,
        ),
        ("headers Cookie ", "and Accept took 12ms"),
    ] {
        let out = cut_at(&format!("{first}{rest}"), first.len());
        assert!(out.ends_with(rest), "{out}");
    }
    for (first, rest) in [
        ("req Cookie", ": a=b; sid=S3CRET"),
        (r#"{"Cookie""#, r#":"a=b; sid=S3CRET"}"#),
        (r#"{\"Authorization\""#, r#": \"Basic S3CRET\"}"#),
    ] {
        let out = cut_at(&format!("{first}{rest}"), first.len());
        assert!(!out.contains("S3CRET"), "{out}");
    }
}

/// A credential header after a blank or `,` inside a flow mapping ends at its `,` or `}`
/// (YAML 1.2 7.4: a plain scalar in a flow holds no `,`): the pieces after it stay (the whole
/// line, read as HTTP's own `Cookie: a=b, c=d`, hides them). Inside a JSON string the string's
/// quote ends it, whatever commas it holds.
#[test]
fn a_header_inside_a_flow_mapping_ends_at_its_comma() {
    let pad = "x".repeat(40);
    for tail in [
        "{a: 1, Cookie: a=S3CRET, b: 2} took 12ms",
        "{a: 1,Cookie: a=S3CRET, b: 2} took 12ms",
        "{ Cookie: a=S3CRET, b: 2} took 12ms",
    ] {
        let text = format!("{pad} {tail}");
        never_leaks(&text, "S3CRET", &[]);
        let after = text.find("b: 2").unwrap_or(0);
        for at in cuts(&text).filter(|at| *at >= after) {
            let out = cut_at(&text, at);
            assert!(out.ends_with(" 12ms"), "cut at {at}: {out}");
        }
    }
    never_leaks(
        &format!(r#"{pad} {{"msg":"got Cookie: a=b, sid=S3CRET", "n": 1}} done"#),
        "S3CRET",
        &[r#""n": 1} done"#],
    );
}

/// A backslash is plain inside single quotes (YAML 1.2 7.3.2, PowerShell's verbatim string):
/// `'C:\dir\'` ends at its `'`, so the text after it stays, cut or not; a tail that starts
/// inside such a value ends it there.
#[test]
fn a_backslash_before_a_single_quote_escapes_nothing() {
    let pad = "x".repeat(40);
    never_leaks(
        &format!(r"{pad} {{'Cookie': 'C:\dir\', 'n': 2}} took 12ms"),
        "dir",
        &["'n': 2} took 12ms"],
    );
    let r = Redactor::new(&[]);
    let out = r.redact_tail(b"  C:\\dir\\', next: 1\nI1126 12:00:00.000000 1 main.go:1] go\n");
    let out = String::from_utf8_lossy(&out);
    assert!(out.starts_with("  <redacted>', next: 1\nI1126"), "{out}");
}

/// Of two `Wrapped` states of one place (a kept position's record, what the lines before it
/// leave), the stricter is the one whose key's column is lower, whichever comes first: it
/// hides every line the other hides as indented more than its key.
#[test]
fn the_stricter_of_two_wrapped_states_hides_more() {
    use super::Pending::Wrapped;
    assert_eq!(Wrapped(0, 6).stricter(Wrapped(4, 10)), Wrapped(0, 6));
    assert_eq!(Wrapped(4, 10).stricter(Wrapped(0, 6)), Wrapped(0, 6));
    assert_eq!(Wrapped(2, 9).stricter(Wrapped(2, 7)), Wrapped(2, 7));
}

/// `Format-List` wraps a long value onto lines at its value's column, and a blank line ends
/// its list: indented lines after the blank (an error's stack trace) are no part of the
/// secret's value. A YAML plain scalar's value goes on past a blank line (YAML 1.2 7.3.3).
#[test]
fn a_format_list_values_wrap_ends_at_a_blank_line() {
    same(
        "Password : abc\n           def\n\n    at Foo.Bar()\n    at Baz()\nName : x\n",
        "Password : <redacted>\n           <redacted>\n\n    at Foo.Bar()\n    at Baz()\nName : x\n",
    );
    same(
        "ClientSecret : abc\n\n   at Foo.Bar()\n",
        "ClientSecret : <redacted>\n\n   at Foo.Bar()\n",
    );
    same(
        "password: first\n\n    at second\nnext: 1\n",
        "password: <redacted>\n\n    <redacted>\nnext: 1\n",
    );
}

/// A quoted key that ends in a header's name (`"session_cookie"`) keeps its value hidden, as
/// a quoted key's value was before a boundary was asked of an unquoted name.
#[test]
fn a_quoted_key_ending_in_a_headers_name_keeps_its_value_hidden() {
    same(
        r#"{"session_cookie": "abc123", "n": 1}"#,
        r#"{"session_cookie": "<redacted>", "n": 1}"#,
    );
}

/// A secret's single-quoted value cut between the two quotes of a `''` (YAML 1.2 7.3.2: a
/// quote inside it) goes on in the next piece to its closing `'`.
#[test]
fn a_single_quoted_secret_cut_inside_a_doubled_quote_goes_on() {
    let pad = "x".repeat(40);
    for tail in [
        "password: 'a b it''s S3CRET' done",
        "{password: 'a b it''s S3CRET', n: 1} done",
        "--token 'a b it''s S3CRET' done",
    ] {
        never_leaks(&format!("{pad} {tail}"), "S3CRET", &[" done"]);
    }
}

/// A `Wrapped` state and a `Listed` one of one place: the stricter goes on past a blank line
/// (`Wrapped`) from the lower key's column, whichever comes first.
#[test]
fn the_stricter_of_a_wrapped_and_a_listed_state_goes_past_blank_lines() {
    use super::Pending::{Listed, Wrapped};
    assert_eq!(Listed(0, 11).stricter(Wrapped(2, 9)), Wrapped(0, 11));
    assert_eq!(Wrapped(2, 9).stricter(Listed(0, 11)), Wrapped(0, 11));
    assert_eq!(Listed(4, 11).stricter(Listed(0, 9)), Listed(0, 9));
}
