//! HTTP credentials: an `Authorization` header's value in every shape a program prints it.

use super::names::REDACTED;
use regex::bytes::Regex;

/// An `Authorization` header's list as Go's encoding/json writes an http.Header
/// (`map[string][]string`: `{"Authorization":["Bearer a","Basic b"]}`), perhaps escaped in a
/// JSON string (group 2: the list's items), and a credential in it after its scheme, if any
/// (group 1: the item's quote and scheme). Every item's goes; `shapes`' takes the first only.
pub(super) fn header_list() -> [String; 2] {
    [
        r#"(?i-u)(authorization\\?["']?\s*:\s*\[)([^\]\r\n]*)"#.into(),
        r#"(?i-u)(\\?["'](?:[a-z]+\s+)?)[^\s"'\\,\[\]]+"#.into(),
    ]
}

/// `bytes` with every credential of each header list `list` finds replaced (`header_list`).
/// A list without quotes is Go's `%v` of the header's `[]string`, its items joined by blanks
/// (`Authorization:[Basic a Basic b]`): every word but a scheme's name goes.
pub(super) fn redact_header_lists(list: &Regex, item: &Regex, bytes: &[u8]) -> Vec<u8> {
    list.replace_all(bytes, |c: &regex::bytes::Captures| {
        let items = c.get(2).map_or(&b""[..], |m| m.as_bytes());
        let items = if items.iter().any(|b| b"\"'\\".contains(b)) {
            item.replace_all(items, &b"${1}<redacted>"[..]).into_owned()
        } else {
            unquoted_credentials(items)
        };
        [&c[1], &items[..]].concat()
    })
    .into_owned()
}

/// The words of Go's `%v` of an `Authorization` header's values, each credential replaced:
/// a word that names a scheme (IANA's HTTP Authentication Scheme Registry: `Basic`, `Bearer`,
/// `Digest`, `Negotiate`, `NTLM`, `DPoP`) stays.
fn unquoted_credentials(items: &[u8]) -> Vec<u8> {
    const SCHEMES: [&[u8]; 6] = [
        b"basic",
        b"bearer",
        b"digest",
        b"negotiate",
        b"ntlm",
        b"dpop",
    ];
    let mut out = Vec::with_capacity(items.len());
    for piece in items.split_inclusive(|b| b.is_ascii_whitespace()) {
        let word = piece.trim_ascii_end();
        if word.is_empty() || SCHEMES.iter().any(|s| word.eq_ignore_ascii_case(s)) {
            out.extend_from_slice(word);
        } else {
            out.extend_from_slice(REDACTED.as_bytes());
        }
        out.extend_from_slice(&piece[word.len()..]);
    }
    out
}

/// A bearer token after its scheme's name (RFC 6750 2.1: `Bearer` then b64token).
pub(super) fn bearer() -> (String, &'static str) {
    (
        r"(?i-u)(bearer\s+)[A-Za-z0-9._~+/=-]{4,}".into(),
        "${1}<redacted>",
    )
}

/// A Digest credential after an `Authorization` name (RFC 7616 3.4: its parameters hold
/// quoted strings, so it goes whole): in a JSON string (`"Digest username=\"a\", ..."`) to
/// the string's closing quote when a JSON `,`, `}` or `]` follows it, so JSON stays JSON;
/// elsewhere (`Authorization="Digest username="a", response="X"`) to the line's end.
pub(super) fn digest(sep: &str) -> (String, &'static str) {
    (
        format!(
            r#"(?i-u)(?:(authorization{sep}(?:\[\s*)?"digest\s+)(?:[^"\\\r\n]|\\.)*("\s*[,}}\]])|(authorization{sep}(?:\[\s*)?(?:\\?["'])?digest\s+)[^\r\n]+)"#
        ),
        "${1}${3}<redacted>${2}",
    )
}

/// A credential in quotes after its scheme, wherever it stands (an `Authorization` list's
/// item on a line of its own, as pretty JSON prints an http.Header): `"Basic X"`, `'NTLM X'`.
pub(super) fn quoted_credential() -> (String, &'static str) {
    (
        r#"(?i-u)(\\?["'](?:basic|negotiate|ntlm)\s+)[A-Za-z0-9+/=]+"#.into(),
        "${1}<redacted>",
    )
}
