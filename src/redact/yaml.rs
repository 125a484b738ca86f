//! A flag naming a secret and its value as the next item of a YAML list (block or flow), and
//! a block scalar as that value.

use super::names::{FLOW_COMMENTS, NAMES, REDACTED};
use regex::bytes::Regex;

/// A flag naming a secret as an item of a YAML block list and its value as the next item (a
/// manifest's or a kubeconfig exec's `args:`): `- --token` or `- "--token"`, then `- X`,
/// `- "X"` or `- 'X'` (YAML 1.2 7.3, 7.3.3: a plain scalar runs to the end of its line; 7.3.2:
/// `''` is a quote inside single quotes). A comment may follow the flag, and blank or comment
/// lines may come between. The quotes stay, so the document stays YAML. A block scalar as the
/// value (`- |`, `- >-`) is `block_scalar_head`'s. A shape of `shapes`, before the unquoted ones.
pub(super) fn yaml_list_item() -> (String, &'static str) {
    let flag = yaml_flag();
    (
        format!(
            r#"(?im-u)({flag}[ \t]*-[ \t]+)(?:(")(?:[^"\\\n]|\\.)+(")|(')(?:[^'\n]|'')+(')|[^\s"'#|>][^\r\n]*)"#
        ),
        "${1}${2}${4}<redacted>${3}${5}",
    )
}

/// A YAML block list's item that is a flag naming a secret, its comment, its line's end and
/// the blank or comment lines after it.
fn yaml_flag() -> String {
    format!(
        r#"^[ \t]*-[ \t]+["']?-{{1,2}}[a-z0-9-]*{NAMES}["']?[ \t]*(?:#[^\r\n]*)?\r?\n(?:[ \t]*(?:#[^\r\n]*)?\r?\n)*"#
    )
}

/// A flag naming a secret and its value as the next item of a comma-separated list, unquoted.
/// In a YAML flow list (`in_list`: the flag after the list's `[` or an item's `,`) the value
/// ends where its item does: `[--token, X]`, `[--client-secret, X, --x]`, `[--v, 2,\n  --token,
/// two words]` (YAML 1.2 7.4: a plain flow item runs to its `,` or `]`). In free text (the
/// flag at the text's start or after a blank, `(` or `=`) it ends at a blank, the rest of the
/// text staying: `-password, X see --help`. The list's shape goes first. (The value of a YAML
/// block list's item is `yaml_list_item`'s.)
pub(super) fn yaml_flow_item(in_list: bool) -> (String, &'static str) {
    let flag = format!(r#"["']?-{{1,2}}[a-z0-9-]*{NAMES}["']?\s*,\s*"#);
    let re = if in_list {
        let flag = format!("{flag}{FLOW_COMMENTS}");
        format!(r#"(?i-u)([\[,]\s*{flag})[^\s,\[\]{{}}"'#][^,\[\]{{}}\r\n]*"#)
    } else {
        // A flag after a blank may be in a list too, which `in_list` has redacted already
        // (`[ --token, <redacted>]`): that value is left as it is.
        // Inside a JSON string (`{"msg":"unknown flag -password, X","level":..}`) the value
        // ends at the string's `"`, an escape (`\"`, `\\`) taken as part of it but a blank's
        // (`\t`, `\n`, `\r`) ending it, so the record stays JSON and no tail after an escape is
        // left.
        format!(
            r#"(?i-u)((?:^|[\s(=]){flag})(?:<redacted>(\S*)|[^\s,\[\]{{}}"'#\\](?:[^\s"\\]|\\[^tnr\s])*)"#
        )
    };
    (re, "${1}<redacted>${2}")
}

/// The same flow list with the flag quoted or not and its value quoted, the list perhaps
/// broken across lines: `[--token, "X"]`, `["--token", 'X']`, `[--token,\n  "X"]`. The
/// quotes stay, so JSON stays JSON.
pub(super) fn yaml_flow_quoted_item(quote: char) -> (String, &'static str) {
    let flag =
        format!(r#"((?:^|[\s\[,])["']?-{{1,2}}[a-z0-9-]*{NAMES}["']?\s*,\s*{FLOW_COMMENTS}"#);
    if quote == '"' {
        (
            format!(r#"(?is-u){flag}")(?:[^"\\]|\\.)*""#),
            "${1}<redacted>\"",
        )
    } else {
        (format!(r#"(?i-u){flag}')(?:[^']|'')*'"#), "${1}<redacted>'")
    }
}

/// A flag naming a secret as an item of a YAML block list and a block scalar as the next item
/// (`- |`, `- >-`, YAML 1.2 8.1): its content is the lines after it indented more than its
/// `-` (group 1), and blank lines among them.
pub(super) fn block_scalar_head() -> String {
    let flag = yaml_flag();
    format!(r#"(?im-u){flag}([ \t]*)-[ \t]+[|>][0-9+-]{{0,2}}[ \t]*(?:#[^\r\n]*)?(?:\r?\n|$)"#)
}

/// `bytes` with the content of each block scalar `head` finds replaced, line by line, by
/// `REDACTED` at the line's own indentation.
pub(super) fn redact_block_scalars(head: &Regex, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while let Some(caps) = head.captures_at(bytes, at) {
        let (whole, dash) = (caps.get(0), caps.get(1));
        let (Some(whole), Some(dash)) = (whole, dash) else {
            break;
        };
        out.extend_from_slice(&bytes[at..whole.end()]);
        at = whole.end();
        while at < bytes.len() {
            let end = memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |n| at + n + 1);
            let line = &bytes[at..end];
            let indent = line
                .iter()
                .take_while(|b| matches!(b, b' ' | b'\t'))
                .count();
            let rest = &line[indent..];
            let blank = rest.iter().all(|b| matches!(b, b'\r' | b'\n'));
            if !blank && indent <= dash.len() {
                break;
            }
            out.extend_from_slice(&line[..indent]);
            if !blank {
                out.extend_from_slice(REDACTED.as_bytes());
                let eol = rest.iter().position(|b| matches!(b, b'\r' | b'\n'));
                out.extend_from_slice(&rest[eol.unwrap_or(rest.len())..]);
            } else {
                out.extend_from_slice(rest);
            }
            at = end;
        }
    }
    out.extend_from_slice(&bytes[at..]);
    out
}
