//! The leaks a review found after the rules were tuned, each through both paths (`whole`, the
//! diags path; `by_line`, the logs path) where both can see it.

use super::review_tests::{by_line, check, same, whole};
use super::{Pending, Redactor};

/// `pieces`, the parts of one line cut before its end (as `logs` cuts a line longer than a
/// chunk; the last ends the line), redacted piece by piece, then `next`, the line after it.
fn by_piece(pieces: &[&str], next: &str) -> Vec<String> {
    let r = Redactor::new(&[]);
    let mut pending = Pending::None;
    let mut out = Vec::new();
    for (i, piece) in pieces.iter().chain([&next]).enumerate() {
        let (o, p) = if i + 2 < pieces.len() + 1 {
            r.redact_piece(pending, piece.as_bytes())
        } else {
            r.redact_line(pending, piece.as_bytes())
        };
        out.push(String::from_utf8(o).expect("utf8"));
        pending = p;
    }
    out
}

/// A value of many words cut between two pieces of its line goes from the next piece too, up
/// to what ends it there; the line after it is no part of it.
#[test]
fn a_value_of_many_words_cut_between_pieces_goes_on_into_the_next() {
    let out = by_piece(
        &["I1126 rotate password: correct ", "horse battery staple"],
        "next record",
    );
    assert_eq!(
        out,
        [
            "I1126 rotate password: <redacted> ",
            "<redacted>",
            "next record"
        ]
    );
    let out = by_piece(&["{Password:two ", "words more ", "Other:x}"], "next");
    assert_eq!(
        out,
        ["{Password:<redacted> ", "<redacted> ", "Other:x}", "next"]
    );
    let out = by_piece(&["{password: two ", "words, other: x}"], "next");
    assert_eq!(
        out,
        ["{password: <redacted> ", "<redacted>, other: x}", "next"]
    );
    // The `{` or `map[` a piece before left open still ends the values of the next.
    let out = by_piece(
        &["{User:admin ", "Password:two words Other:x} more"],
        "next",
    );
    assert_eq!(
        out,
        ["{User:admin ", "Password:<redacted> Other:x} more", "next"]
    );
    let out = by_piece(&["map[a:b ", "c:d ", "password:two words e:f]"], "next");
    assert_eq!(
        out,
        ["map[a:b ", "c:d ", "password:<redacted> e:f]", "next"]
    );
    // A whole line's value ends with its line.
    assert_eq!(
        by_line("password: two words\nnext"),
        "password: <redacted>\nnext"
    );
}

/// A secret's block scalar (YAML 1.2 8.1: `|`, `>-`, an indentation indicator, `+`) and a
/// plain scalar continued on lines indented more (7.3.3) go whole; the next key stays.
#[test]
fn a_block_scalar_or_a_continued_plain_value_of_a_secret_goes_whole() {
    for text in [
        "token: |\n  secret1\n  secret2\nnext: ok\n",
        "password: >-\n  secret1\n\n  secret2\nnext: ok\n",
        "a:\n  token: |2\n     secret1\n  next: ok\n",
        "token: |+\n  secret1\n\nnext: ok\n",
        "password: two\n  secret1 words\nnext: ok\n",
        "- password: two\n    secret1\n- next: ok\n",
    ] {
        check(text, "secret1", "next: ok");
        check(text, "secret2", "next: ok");
    }
    // A key beside it at the same indentation is no part of it.
    same(
        "a:\n  password: two words\n  user: me\n",
        "a:\n  password: <redacted>\n  user: me\n",
    );
}

/// Go's `%v` of a map: a value of many words goes to the next ` key:` or the `]`.
#[test]
fn a_go_map_value_of_many_words_goes_to_its_pair_end() {
    check(
        "map[password:two words other:x]",
        "words",
        "map[password:<redacted> other:x]",
    );
    check(
        "map[other:x client-secret:two words]",
        "words",
        "map[other:x client-secret:<redacted>]",
    );
    check(
        "m=map[password:two words my-key.x:y] end",
        "words",
        "my-key.x:y] end",
    );
}

/// A pointer to a string as a dumper prints it (`*"x"`) goes in its quotes.
#[test]
fn a_pointer_field_s_quoted_value_goes() {
    check(
        r#"v={Password:*"secret word" Other:x}"#,
        "secret",
        "Other:x}",
    );
    check(r#"Password: *'secret word' end"#, "secret", "Password: ");
}

/// A Digest credential ends at the end of its parameters, the text after it staying.
#[test]
fn a_digest_credential_ends_with_its_parameters() {
    same(
        r#"Authorization: Digest username="a", realm="r b", response="6629fae4" then more text"#,
        r#"Authorization: Digest <redacted> then more text"#,
    );
    same(
        r#"Authorization: Digest username="a",nc=00000001 response="6629 fae4", failed"#,
        r#"Authorization: Digest <redacted> failed"#,
    );
}

/// A `passphrase`, and a registry's `auth` in a Docker config's `auths` (over lines too), go;
/// an `auth` elsewhere stays.
#[test]
fn a_passphrase_and_a_docker_registry_auth_go() {
    check("passphrase: hunter2x", "hunter2x", "passphrase: ");
    check(r#"{"passphrase":"hunter2x","n":1}"#, "hunter2x", r#""n":1"#);
    let config = "{\n  \"auths\": {\n    \"reg.io\": {\n      \"auth\": \"dXNlcjpwYXNz\"\n    },\n    \"b.io\": {\"auth\":\"Yjpj\"}\n  },\n  \"auth\": \"keep\"\n}\n";
    let out = whole(config);
    assert!(
        !out.contains("dXNlcjpwYXNz") && !out.contains("Yjpj"),
        "{out}"
    );
    assert!(out.contains(r#""auth": "keep""#), "{out}");
    check(
        r#"{"auths":{"reg.io":{"auth":"dXNlcjpwYXNz"}},"n":1}"#,
        "dXNlcjpw",
        r#""n":1"#,
    );
    check(
        r#"{"auth":"basic","n":1}"#,
        "<redacted>",
        r#""auth":"basic""#,
    );
}

/// A cookie's value in quotes (RFC 6265 4.1.1: `cookie-value` may be in `DQUOTE`s), the
/// values holding `=`, and `Set-Cookie`'s attributes: the whole header value goes, and a JSON
/// string holding it stays one.
#[test]
fn a_cookie_with_a_quoted_value_goes_whole() {
    same("Cookie: a=\"b=c\"; d=e", "Cookie: <redacted>");
    same(
        "Set-Cookie: id=\"a=b c\"; Path=/; HttpOnly\nnext",
        "Set-Cookie: <redacted>\nnext",
    );
    check(
        r#"{"msg":"Cookie: a=\"b=c\"; d=e=f","n":1}"#,
        "b=c",
        r#"{"msg":"Cookie: <redacted>","n":1}"#,
    );
}

/// PowerShell's `Format-List` wraps a long value onto lines indented under its column: they go
/// with it, the next property stays.
#[test]
fn a_format_list_value_wrapped_over_lines_goes_whole() {
    same(
        "Name     : calico\r\nPassword : correct horse battery staple and a long tail that\r\n           wraps2 under it\r\nPort     : 5473\r\n",
        "Name     : calico\r\nPassword : <redacted>\r\n           <redacted>\r\nPort     : 5473\r\n",
    );
}

/// A tail whose head ends a value begun before the cut (its name, cut off, may have been a
/// secret's) hides that end: up to the `"` that closes a quote, or klog's lines up to its
/// ` >`; the text after it stays. A tail that starts with a record hides nothing.
#[test]
fn a_tail_that_starts_inside_a_cut_value_hides_its_end() {
    let tail =
        |t: &str| String::from_utf8(Redactor::new(&[]).redact_tail(t.as_bytes())).expect("utf8");
    assert_eq!(
        tail("abc secret1\" then the text\nnext line\n"),
        "<redacted>\" then the text\nnext line\n"
    );
    assert_eq!(
        tail("  two secret1\n  words secret2\" rest\nnext\n"),
        "  <redacted>\n  <redacted>\" rest\nnext\n"
    );
    assert_eq!(
        tail("\tsecret1 words\n\tmore secret2 words\n >\nI1126 10:00:00 next\n"),
        "\t<redacted>\n\t<redacted>\n >\nI1126 10:00:00 next\n"
    );
    for kept in [
        "I1126 10:00:00 a \"quoted\" word\nnext\n",
        "2026-11-26 x said \"hi\nnext\n",
        "plain line\n\tstack frame\nnext\n",
    ] {
        assert_eq!(tail(kept), kept);
    }
}

/// A `Format-Table` whose header names a secret's column: that column's values go, each row's
/// other columns and the rows after the table's blank line stay.
#[test]
fn a_format_table_column_named_as_a_secret_loses_its_values() {
    same(
        "\r\nName  Password\r\n----  --------\r\nx     hunter2\r\ny     two words\r\n\r\nName  hunter3\r\n",
        "\r\nName  Password\r\n----  --------\r\nx     <redacted>\r\ny     <redacted>\r\n\r\nName  hunter3\r\n",
    );
    same(
        "User  ApiToken        Port\n----  --------        ----\nme    abcdefgh12345   5473\n",
        "User  ApiToken        Port\n----  --------        ----\nme    <redacted>      5473\n",
    );
    // A line naming a secret with no dashes under it is no header.
    same(
        "Name  Password\nx     hunter2\n",
        "Name  Password\nx     hunter2\n",
    );
}
