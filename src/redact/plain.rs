//! A value named as a secret, unquoted, that may hold blanks: where it ends depends on the
//! shape around it, so it is found by its name and measured here.

use super::names::{NAMES, REDACTED};
use regex::bytes::Regex;

/// An unquoted name naming a secret and its `:` (group 1: the name and `:`, 2: the blanks
/// after it). A quoted name (JSON's) is the quoted shapes'.
pub(super) fn plain_key() -> String {
    format!(r"(?i-u)(?:^|[^A-Za-z0-9_.-])([A-Za-z0-9_.-]*{NAMES}[ \t]*:)([ \t]*)")
}

/// `bytes` with each multi-word value after a name `key` finds replaced, up to where its shape
/// ends it: in `{` not closed before the name on its line, Go's `%+v` of a struct
/// (`{Password:two words Other:x}`) to the next ` Field:` or the `}`, a YAML flow mapping
/// (`{password: two words, x: 1}`, YAML 1.2 7.4) to its `,` or `}`; elsewhere after a blank
/// (YAML's and a log's `password: correct horse battery`, PowerShell's `Format-List`
/// `Password : two words`) to the line's end. A JSON string's `"` or a line break escaped in
/// it (`\n`) ends any, so a record stays JSON. A value without a blank after its `:` outside
/// `{` (`password:x`), or that starts with a quote or a bracket, is the shapes' in `shapes`.
pub(super) fn redact_plain_values(key: &Regex, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    let mut from = 0;
    while let Some(c) = key.captures_at(bytes, from) {
        let (Some(name), Some(blank)) = (c.get(1), c.get(2)) else {
            break;
        };
        from = blank.end().max(from + 1);
        let line_start = bytes[..name.start()]
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |i| i + 1);
        let in_braces = depth(&bytes[line_start..name.start()]) > 0;
        // A value of many words follows a name wherever it stands on its line (after a log
        // record's prefix, in a JSON string, in prose): a message after a secret's name in
        // prose (client-go's `Unable to rotate token: failed to read ...`) goes with it, and so
        // do the fields after an empty one (`{Password: Other:x}`), as no rule tells them from
        // a secret of many words (`password: correct:horse battery`), which must not leave.
        if blank.is_empty() && !in_braces {
            continue;
        }
        let start = blank.end();
        let len = value_len(&bytes[start..], in_braces, blank.is_empty());
        if len == 0 {
            continue;
        }
        out.extend_from_slice(&bytes[at..start]);
        out.extend_from_slice(REDACTED.as_bytes());
        at = start + len;
        from = at;
    }
    out.extend_from_slice(&bytes[at..]);
    out
}

/// How many `{` before a name on its line are not closed.
fn depth(before: &[u8]) -> i64 {
    before.iter().fold(0, |d, b| match b {
        b'{' => d + 1,
        b'}' => d - 1,
        _ => d,
    })
}

/// The length of the value at the start of `rest` (`value_end`'s rules), its trailing blanks
/// left out; 0 when it starts with a quote, a bracket or `<` (a `<redacted>` already).
fn value_len(rest: &[u8], in_braces: bool, go_struct: bool) -> usize {
    if rest
        .first()
        .is_none_or(|b| b.is_ascii_whitespace() || b"\"'`\\[{<|>&*!".contains(b))
    {
        return 0;
    }
    let mut i = 0;
    while i < rest.len() {
        match rest[i] {
            b'\r' | b'\n' | b'"' => break,
            b'\\' if matches!(rest.get(i + 1), Some(b'n' | b'r' | b't' | b'"') | None) => break,
            b'\\' => i += 1,
            b'}' if in_braces => break,
            b',' if in_braces && !go_struct => break,
            b' ' if go_struct && next_field(&rest[i + 1..]) => break,
            _ => {}
        }
        i += 1;
    }
    let i = i.min(rest.len());
    rest[..i].trim_ascii_end().len()
}

/// Whether `rest` starts with a Go struct field's name and its `:` (`%+v`'s ` Field:`).
fn next_field(rest: &[u8]) -> bool {
    let name = rest
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
        .count();
    name > 0 && !rest[0].is_ascii_digit() && rest.get(name) == Some(&b':')
}
