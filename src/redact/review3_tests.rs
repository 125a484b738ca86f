//! Inputs a third review ran: text an operator needs that was hidden, and values that left.

use super::review_tests::same;

/// A line of prose ending in a secret's name above a row of dashes is no table's header: the
/// lines after the dashes (a stack trace) stay. A table's secret column loses only its own span.
#[test]
fn prose_above_a_row_of_dashes_is_no_table() {
    let text = "Refreshing the service account token\n------------------------------------\ngoroutine 1 [running]:\nmain.main()\n\t/go/src/main.go:10\nimportant line\n";
    same(text, text);
    same(
        "Name  Token  Port\n----  -----  ----\nfoo   abcde  5473\n",
        "Name  Token  Port\n----  -----  ----\nfoo   <redacted> 5473\n",
    );
}

/// A table of one column named as a secret (`[pscustomobject]@{Token=$t}`, `Select-Object
/// Password`) loses its values: its name starts where its dashes do.
#[test]
fn a_table_of_one_secret_column_loses_its_values() {
    same("Token\n-----\nabc123\n", "Token\n-----\n<redacted>\n");
    same(
        "Password\n--------\nhunter2 x\n\nafter\n",
        "Password\n--------\n<redacted>\n\nafter\n",
    );
}

/// A plain value's continuation (YAML 1.2 7.3.3) is the lines indented more than its key,
/// up to an entry of their own: a list item's sibling keys and the lines after such an entry
/// (a blank line between) stay.
#[test]
fn a_plain_values_continuation_ends_at_its_keys_siblings_and_an_entry() {
    same(
        "- password: x\n  user: admin\n  host: db.example\n",
        "- password: <redacted>\n  user: admin\n  host: db.example\n",
    );
    same(
        "token: abc\n  note: something\n\n  after blank\n",
        "token: <redacted>\n  note: something\n\n  after blank\n",
    );
    same(
        "- password: two words\n    more words\n  user: admin\n",
        "- password: <redacted>\n    <redacted>\n  user: admin\n",
    );
}

/// A line of many names in a `{` costs a pass over it, not one per name: the bytes read to
/// find what encloses each name grow as the line does (a hostile line of 200 KB took a
/// minute when each name read its line from its start).
#[test]
fn what_encloses_the_names_of_a_line_is_read_once() {
    let r = super::Redactor::new(&[]);
    for n in [100usize, 1000] {
        let line = format!("{{{}", "password:a b ".repeat(n));
        super::plain::enclosure_scanned();
        let _ = r.redact_piece(super::Pending::None, line.as_bytes());
        let _ = r.redact(line.as_bytes());
        let scanned = super::plain::enclosure_scanned();
        assert!(
            scanned <= 8 * line.len(),
            "{scanned} bytes read for {}",
            line.len()
        );
    }
}

/// Go's `%+v` of a list of `EnvVar`s: a secret's `Value` goes up to `ValueFrom` or `}`, of
/// one word or many.
#[test]
fn a_go_env_vars_value_named_as_a_secret_goes() {
    same(
        "Env:[{Name:ETCD_PASSWORD Value:s3cret ValueFrom:nil} {Name:NODENAME Value:n1 ValueFrom:nil}]",
        "Env:[{Name:ETCD_PASSWORD Value:<redacted> ValueFrom:nil} {Name:NODENAME Value:n1 ValueFrom:nil}]",
    );
    same(
        "Env:[{Name:ETCD_PASSWORD Value:correct horse battery}]",
        "Env:[{Name:ETCD_PASSWORD Value:<redacted>}]",
    );
}

/// A `Format-Table` header cut by its column's width (`ClientSec...`, `Passw…`) or naming a
/// `SecretText` still names its column a secret's.
#[test]
fn a_format_table_header_cut_short_still_names_a_secret() {
    for header in ["ClientSec...", "Passw…", "SecretText"] {
        let dashes = "-".repeat(header.chars().count());
        let text = format!("Name  {header}\n----  {dashes}\nfoo   abcdefghij\n");
        let want = format!("Name  {header}\n----  {dashes}\nfoo   <redacted>\n");
        same(&text, &want);
    }
}

/// `text` as `diags` redacts a file's tail.
fn tail(text: &str) -> String {
    String::from_utf8_lossy(&super::Redactor::new(&[]).redact_tail(text.as_bytes())).into_owned()
}

/// A tail starting inside a single-quoted value hides its end; a stack trace then a line
/// with one stray `"` in prose is no value's end and stays.
#[test]
fn a_tails_head_is_hidden_only_up_to_what_ends_a_value() {
    let out = tail("  def'\nnext: 1\n");
    assert!(!out.contains("def") && out.contains("next: 1"), "{out}");
    let kept = "\tgoroutine trace\nmain.main()\n\t/go/x.go:1\nError: bad \"thing\nmore\n";
    assert_eq!(tail(kept), kept);
    // A value's end followed by a sign, and a `"` value holding a `'`.
    let out = tail("    s3cret\").\nnext: 1\n");
    assert!(!out.contains("s3cret") && out.contains("next: 1"), "{out}");
    let out = tail("  abc' def\" then\nnext: 1\n");
    assert!(!out.contains("def") && out.contains("then"), "{out}");
    // A quote of the other kind inside the value, before a sign, ends nothing.
    let out = tail("  p4ss'(w0rd\n  rest\"\nnext: 1\n");
    assert!(
        !out.contains("w0rd") && !out.contains("rest") && out.contains("next: 1"),
        "{out}"
    );
}
