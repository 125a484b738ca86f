//! Inputs a fourth review ran: values that left through shapes and cuts the rounds before
//! missed.

use super::review_tests::same;
use super::{Pending, Redactor};

/// Kubernetes' generated `String()` of a core/v1 `EnvVar` (gogo protobuf's, in
/// staging/src/k8s.io/api/core/v1/generated.pb.go: `&EnvVar{`, then `Name:`, `Value:` and
/// `ValueFrom:` each with its `,`, then `}`; a `Container`'s `Env:[]EnvVar{` joins its items'
/// with the `&` dropped, each with its `,`), alone and in a list: a secret's `Value` goes,
/// another's stays (the flow mapping's `name`/`value` pair, `env::pairs`).
#[test]
fn a_generated_env_var_strings_value_named_as_a_secret_goes() {
    same(
        "&EnvVar{Name:CALICO_DATASTORE_PASSWORD,Value:s3cret words,ValueFrom:nil,}",
        "&EnvVar{Name:CALICO_DATASTORE_PASSWORD,Value:<redacted>,ValueFrom:nil,}",
    );
    same(
        "Env:[]EnvVar{EnvVar{Name:ETCD_KEY,Value:abc,ValueFrom:nil,},EnvVar{Name:HOME,Value:/root,ValueFrom:nil,},}",
        "Env:[]EnvVar{EnvVar{Name:ETCD_KEY,Value:<redacted>,ValueFrom:nil,},EnvVar{Name:HOME,Value:/root,ValueFrom:nil,},}",
    );
}

/// `text` cut in two at `at` as `logs` cuts a line longer than a chunk (the first piece
/// redacted alone, `redact_piece`, the second after it with what it left), joined.
pub(super) fn cut_at(text: &str, at: usize) -> String {
    let r = Redactor::new(&[]);
    let (first, p) = r.redact_piece(Pending::None, &text.as_bytes()[..at]);
    let (second, _) = r.redact_line(p, &text.as_bytes()[at..]);
    String::from_utf8_lossy(&[first, second].concat()).into_owned()
}

/// The places `logs`' `cut` may end a piece of `text`: after a blank, a quote or `,{}[]`,
/// or before a `{` or `[` (installed::logs `cut`).
pub(super) fn cuts(text: &str) -> impl Iterator<Item = usize> + '_ {
    let b = text.as_bytes();
    let free = |c: u8| c.is_ascii_whitespace() || b"\"',{}[]".contains(&c);
    (1..b.len()).filter(move |&i| free(b[i - 1]) || matches!(b[i], b'{' | b'['))
}

/// Go's `%+v` of an `EnvVar` cut by a 64 KiB piece's end inside ` ValueFrom:` or right
/// after its value: no part of the value leaves, wherever the cut.
#[test]
fn a_go_env_vars_value_cut_by_a_piece_leaves_nothing() {
    let text = format!(
        "{}Env:[{{Name:ETCD_PASSWORD Value:two words ValueFrom:nil}} {{Name:NODENAME Value:n1 ValueFrom:nil}}]",
        "x".repeat(100)
    );
    for at in cuts(&text) {
        let out = cut_at(&text, at);
        assert!(
            !out.contains("two") && !out.contains("words"),
            "cut at {at}: {out}"
        );
        assert!(out.contains("n1 ValueFrom:nil}]"), "cut at {at}: {out}");
    }
}

/// A `Format-Table` header cut by its column's width before the secret's word shows
/// (`ServicePrinc…`, `ClientSe...`) names a secret's column when what shows begins a secret's
/// name; `Name…` and `Status…` stay a column of their own.
#[test]
fn a_format_table_header_cut_before_its_secrets_word_still_names_a_secret() {
    for header in [
        "ServicePrinc…",
        "ClientSe…",
        "ClientSe...",
        "Passw…",
        "Pass...",
    ] {
        let dashes = "-".repeat(header.chars().count());
        let text = format!("Name  {header}\n----  {dashes}\nfoo   abcdefghij\n");
        let want = format!("Name  {header}\n----  {dashes}\nfoo   <redacted>\n");
        same(&text, &want);
    }
    for header in [
        "Name…",
        "Status…",
        "Status...",
        "Pr…",
        "Ac…",
        "S…",
        "Pa…",
        "Profil…",
    ] {
        let dashes = "-".repeat(header.chars().count());
        let text = format!("{header}  Other\n{dashes}  -----\nRunning  abcdefghij\n");
        same(&text, &text);
    }
}

/// A plain secret's value goes on past blank lines (YAML 1.2 7.3.3: a multi-line plain scalar
/// may hold empty lines) while the next line is indented more than its key and no entry of
/// its own.
#[test]
fn a_plain_secrets_value_goes_on_past_blank_lines() {
    same(
        "password: first\n\n  second\nnext: 1\n",
        "password: <redacted>\n\n  <redacted>\nnext: 1\n",
    );
    same(
        "- password: first\n\n\n    second\n  user: admin\n",
        "- password: <redacted>\n\n\n    <redacted>\n  user: admin\n",
    );
    same(
        "password: first\n\n  note: x\n\n  kept\n",
        "password: <redacted>\n\n  note: x\n\n  kept\n",
    );
    same(
        "token: abc\n  note: something\n\n  after blank\n",
        "token: <redacted>\n  note: something\n\n  after blank\n",
    );
}

/// `Format-List` wraps a secret's long value onto lines indented to its value's column (the
/// column after `: `): such a line goes on the value even when it reads as `key: value`.
#[test]
fn a_format_list_values_wrapped_line_goes_with_it_whatever_it_holds() {
    same(
        "Password : abc def\n           ghi: jkl\nName     : foo\n",
        "Password : <redacted>\n           <redacted>\nName     : foo\n",
    );
    same(
        "ClientSecret : abc\n               x: y\n               z\nStatus       : Running\n",
        "ClientSecret : <redacted>\n               <redacted>\n               <redacted>\nStatus       : Running\n",
    );
}

/// A credential header's value in a JSON string ending in an escaped backslash (`\\"`) is
/// closed by that quote: the rest of the line, cut into the next piece, stays.
#[test]
fn a_header_value_ending_in_an_escaped_backslash_is_closed() {
    let first = r#"{"Cookie":"C:\\dir\\", "n":2} took "#;
    let out = cut_at(&format!("{first}12ms to answer"), first.len());
    assert!(
        !out.contains("dir") && out.ends_with("took 12ms to answer"),
        "{out}"
    );
    let first = r#"{"log":"{\"Cookie\":\"a\\\\\", \"msg\":\"hello "#;
    let out = cut_at(&format!("{first}world\\\"}}\"}}"), first.len());
    assert!(out.contains("hello world"), "{out}");
}

/// A credential header whose value ended before a piece's end (Go's `%v` of an http.Header,
/// a header in quotes) leaves the rest of its line, in the next piece, as it is.
#[test]
fn a_header_value_ended_before_a_pieces_end_leaves_the_next_piece() {
    for first in [
        "req map[Authorization:[Bearer abc123] Accept:[*/*]] took ",
        "sent 'Cookie: id=abc123' then ",
    ] {
        let out = cut_at(&format!("{first}12ms to answer"), first.len());
        assert!(
            !out.contains("abc123") && out.ends_with("12ms to answer"),
            "{out}"
        );
    }
    // A header whose value runs to the piece's end still hides the next piece.
    let first = "Cookie: id=abc; other=";
    let out = cut_at(&format!("{first}def ghi"), first.len());
    assert!(!out.contains("def") && !out.contains("ghi"), "{out}");
}

/// A credential header's value cut by a piece's end leaves nothing, wherever the cut: a quoted
/// key's quoted value (`'Cookie': 'a=b; …'`), a flow mapping's quoted value holding commas, a
/// header inside a string (`"Cookie: a=b; …"`, its commas the string's own), in a JSON string
/// too (a fifth review's inputs: each cut after `a=b; ` or inside the Digest's parameters
/// left the rest).
#[test]
fn a_header_values_rest_in_the_next_piece_goes_whatever_its_quotes() {
    let pad = "x".repeat(100);
    for tail in [
        "{'User-Agent': 'x', 'Cookie': 'a=b; sid=SECRET'} done",
        r#"{Authorization: "Digest username=\"u\", response=\"SECRET\""} done"#,
        r#"["-H", "Cookie: a=b; sid=SECRET"] done"#,
        r#"{"args":"Authorization: Digest username=\"u\", response=\"SECRET\"", "n":1} done"#,
        r#"{"log":"{\"Cookie\": \"a=b, c=d; sid=SECRET\"}"} done"#,
    ] {
        let text = format!("{pad} {tail}");
        for at in cuts(&text) {
            let out = cut_at(&text, at);
            assert!(!out.contains("SECRET"), "cut at {at}: {out}");
        }
    }
}
