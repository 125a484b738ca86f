//! PEM private keys: a block whole, a tail cut inside one, a key in base64.

use super::shapes::REDACTED;
use regex::bytes::Regex;
use std::sync::LazyLock;

/// A PEM private key block, whole (RFC 7468), and a key's END line (`redact_keys`).
static PEM: LazyLock<[Regex; 2]> = LazyLock::new(|| {
    [
        r"(?s-u)-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----",
        r"(?-u)-----END [A-Z ]*PRIVATE KEY-----",
    ]
    .map(|re| Regex::new(re).unwrap_or_else(|e| panic!("the built-in pattern {re} is valid: {e}")))
});

/// `bytes` with each private key block `pem` finds replaced by `REDACTED`, one per line of
/// it, its indentation and line breaks kept: a file's lines stay where they were. A text whose first key END
/// line (`end`) has no BEGIN before it starts inside a key (a tail cut in its block, as
/// `diags` takes the last bytes of a log) when all before that END is a key's body
/// (`cut_key`): from its start to that END goes the same way.
pub(super) fn redact_keys(bytes: &[u8]) -> Vec<u8> {
    let [pem, end] = &*PEM;
    // A BEGIN before the first END makes a block `pem` finds starting before that END.
    let orphan = end
        .find(bytes)
        .filter(|e| pem.find(bytes).is_none_or(|k| k.start() > e.start()))
        .filter(|e| cut_key(&bytes[..e.start()]))
        .map_or(0, |e| e.end());
    let mut out = by_line(&bytes[..orphan]);
    out.extend_from_slice(
        &pem.replace_all(&bytes[orphan..], |c: &regex::bytes::Captures| {
            by_line(&c[0])
        }),
    );
    out
}

/// `key`'s lines each replaced by `REDACTED`, its indentation and line break kept.
pub(super) fn by_line(key: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in key.split_inclusive(|b| *b == b'\n') {
        let indent = line.iter().take_while(|b| matches!(b, b' ' | b'\t'));
        out.extend_from_slice(&line[..indent.count()]);
        out.extend_from_slice(REDACTED.as_bytes());
        let eol = line.iter().rev().take_while(|b| matches!(b, b'\r' | b'\n'));
        out.extend_from_slice(&line[line.len() - eol.count()..]);
    }
    out
}

/// The length of the lines at the head of a file's tail cut at a line's start that a private
/// key's body can hold (`pem_body_line`): a tail cut inside a key's block, its BEGIN before
/// the cut and its END not in the tail, starts with them. A blank line ends them but after
/// `DEK-Info:` (RFC 1421 4.4: a blank line ends a PEM block's headers).
pub(super) fn cut_head(tail: &[u8]) -> usize {
    let mut len = 0;
    let mut after_header = false;
    for line in tail.split_inclusive(|b| *b == b'\n') {
        let text = line.trim_ascii();
        if !pem_body_line(line) || (text.is_empty() && !after_header) {
            break;
        }
        after_header = text.starts_with(b"DEK-Info:");
        len += line.len();
    }
    len
}

/// Whether `before`, a text up to a key's END marker, is the body of a key cut at its start:
/// each of its lines one a key's body can hold (`pem_body_line`), and only indentation
/// before the marker on its line (a message quoting the marker is no key's).
fn cut_key(before: &[u8]) -> bool {
    let at = before
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1);
    let (body, head) = before.split_at(at);
    head.iter().all(|b| matches!(b, b' ' | b'\t'))
        && body.split_inclusive(|b| *b == b'\n').all(pem_body_line)
}

/// Whether a line, its indentation and line break aside, is one a PEM private key's body can
/// hold: base64 of at most 80 characters, the `Proc-Type:` and `DEK-Info:` headers (RFC 1421
/// 4.6.1.1, 4.6.1.3), a blank line.
pub fn pem_body_line(line: &[u8]) -> bool {
    let text = line.trim_ascii();
    text.len() <= 80
        && text
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(b))
        || text.starts_with(b"Proc-Type:")
        || text.starts_with(b"DEK-Info:")
}
