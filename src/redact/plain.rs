//! A value named as a secret, unquoted, that may hold blanks: where it ends depends on the
//! shape around it, so it is found by its name and measured here.

use super::names::{NAMES, REDACTED};
use regex::bytes::Regex;
use serde::{Deserialize, Serialize};

/// An unquoted name naming a secret and its `:` (group 1: the name and `:`, 2: the blanks
/// after it). A quoted name (JSON's) is the quoted shapes'.
pub(super) fn plain_key() -> String {
    format!(r"(?i-u)(?:^|[^A-Za-z0-9_.-])([A-Za-z0-9_.-]*{NAMES}[ \t]*:)([ \t]*)")
}

/// `bytes` with each multi-word value after a name `key` finds replaced, up to where its shape
/// ends it: in `{` not closed before the name on its line, Go's `%+v` of a struct
/// (`{Password:two words Other:x}`) to the next ` Field:` or the `}`, a YAML flow mapping
/// (`{password: two words, x: 1}`, YAML 1.2 7.4) to its `,` or `}`; in Go's `%v` of a map
/// (`map[password:two words other:x]`) to the next ` key:` or the `]`; elsewhere after a blank
/// (YAML's and a log's `password: correct horse battery`, PowerShell's `Format-List`
/// `Password : two words`) to the line's end. A JSON string's `"` or a line break escaped in
/// it (`\n`) ends any, so a record stays JSON. A value without a blank after its `:` outside
/// `{` (`password:x`), or that starts with a quote or a bracket, is the shapes' in `shapes`.
pub(super) fn redact_plain_values(key: &Regex, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    for v in values(key, bytes) {
        out.extend_from_slice(&bytes[at..v.start]);
        out.extend_from_slice(REDACTED.as_bytes());
        at = v.start + v.len;
    }
    out.extend_from_slice(&bytes[at..]);
    out
}

/// How the last value in `piece` (a piece of a line cut before its end) goes on into the next
/// piece, if it runs to this one's end (`Pending::Rest`).
pub(super) fn open_at_end(key: &Regex, piece: &[u8]) -> Option<Around> {
    values(key, piece)
        .last()
        .filter(|v| v.to_end)
        .map(|v| v.around)
}

/// The length of a value's part at the start of `piece` (its line's piece after the one it
/// began in), and whether it runs on past this piece's end.
pub(super) fn continued(piece: &[u8], around: Around) -> (usize, bool) {
    let field = matches!(around, Around::Struct | Around::Map);
    if field && next_field(piece, around == Around::Map) {
        return (0, false);
    }
    scan(piece, around)
}

/// A multi-word value after a secret's name: where it starts, its length, what ends it, and
/// whether it runs to the text's end.
struct Value {
    start: usize,
    len: usize,
    around: Around,
    to_end: bool,
}

/// The values in `bytes` `redact_plain_values` replaces.
fn values(key: &Regex, bytes: &[u8]) -> Vec<Value> {
    let mut found = Vec::new();
    let mut from = 0;
    // Names come in order: what encloses each is read on from the one before's place.
    let mut enclosures = Enclosures::default();
    while let Some(c) = key.captures_at(bytes, from) {
        let (Some(name), Some(blank)) = (c.get(1), c.get(2)) else {
            break;
        };
        from = blank.end().max(from + 1);
        // A value of many words follows a name wherever it stands on its line (after a log
        // record's prefix, in a JSON string, in prose): a message after a secret's name in
        // prose (client-go's `Unable to rotate token: failed to read ...`) goes with it, and so
        // do the fields after an empty one (`{Password: Other:x}`), as no rule tells them from
        // a secret of many words (`password: correct:horse battery`), which must not leave.
        let around = match (enclosures.at(bytes, name.start()), blank.is_empty()) {
            (Around::Line, true) => continue,
            (Around::Flow, true) => Around::Struct,
            (a, _) => a,
        };
        let start = blank.end();
        let (len, to_end) = value_len(&bytes[start..], around);
        if len == 0 {
            continue;
        }
        found.push(Value {
            start,
            len,
            around,
            to_end,
        });
        from = start + len;
    }
    found
}

/// What holds a name on its line, and so where its value ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Around {
    /// Nothing: to the line's end.
    Line,
    /// Go's `%+v` of a struct, a `{` not closed before it and no blank after its `:`: to the
    /// next ` Field:` or `}`.
    Struct,
    /// A YAML flow mapping, a `{` not closed before it: to its `,` or `}`.
    Flow,
    /// Go's `%v` of a map (`map[password:two words other:x]`, fmt's print.go `printValue`: its
    /// pairs as `key:value` joined by blanks): to the next ` key:` or the `]`.
    Map,
}

/// What holds the end of `text`'s last line: a `{` or `map[` not closed on it (`Flow`, `Map`),
/// or nothing (`Line`).
pub(super) fn open_around(text: &[u8]) -> Around {
    let line = text.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    match enclosure(&text[line..]) {
        Around::Struct => Around::Flow,
        around => around,
    }
}

/// The innermost `{` or `map[` before a name on its line that is not closed (a `[` of
/// another kind aside).
fn enclosure(before: &[u8]) -> Around {
    Enclosures::default().at(before, before.len())
}

/// The brackets open at a place of a text, read on as the place moves forward, so that a
/// line's names cost one pass over it.
#[derive(Default)]
struct Enclosures {
    /// For each bracket open, the innermost `{` or `map[` at its depth (`None`: none).
    open: Vec<Option<Around>>,
    /// Where the reading is, and where its line starts.
    at: usize,
    line: usize,
}

impl Enclosures {
    /// What encloses `to` in `text` (at or after the last place asked).
    fn at(&mut self, text: &[u8], to: usize) -> Around {
        #[cfg(test)]
        SCANNED.with(|c| c.set(c.get() + to.saturating_sub(self.at)));
        for i in self.at..to {
            let inner = self.open.last().copied().flatten();
            match text[i] {
                b'\n' => {
                    self.open.clear();
                    self.line = i + 1;
                }
                b'{' => self.open.push(Some(Around::Flow)),
                b'[' if text[self.line..i].ends_with(b"map") => self.open.push(Some(Around::Map)),
                b'[' => self.open.push(inner),
                b'}' | b']' => {
                    self.open.pop();
                }
                _ => {}
            }
        }
        self.at = self.at.max(to);
        self.open.last().copied().flatten().unwrap_or(Around::Line)
    }
}

/// The length of the value at the start of `rest` (`scan`'s), 0 when it starts with a quote,
/// a bracket or `<` (a `<redacted>` already).
fn value_len(rest: &[u8], around: Around) -> (usize, bool) {
    if rest
        .first()
        .is_none_or(|b| b.is_ascii_whitespace() || b"\"'`\\[{<|>&*!".contains(b))
    {
        return (0, false);
    }
    scan(rest, around)
}

/// The length of a value from `rest`'s start to what ends it (`redact_plain_values`' rules),
/// its trailing blanks left out, and whether nothing ended it before `rest`'s end.
fn scan(rest: &[u8], around: Around) -> (usize, bool) {
    let braces = matches!(around, Around::Struct | Around::Flow);
    let field = matches!(around, Around::Struct | Around::Map);
    let mut i = 0;
    while i < rest.len() {
        match rest[i] {
            b'\r' | b'\n' | b'"' => break,
            b'\\' if matches!(rest.get(i + 1), Some(b'n' | b'r' | b't' | b'"') | None) => break,
            b'\\' => i += 1,
            b'}' if braces => break,
            b']' if around == Around::Map => break,
            b',' if around == Around::Flow => break,
            b' ' if field && next_field(&rest[i + 1..], around == Around::Map) => break,
            _ => {}
        }
        i += 1;
    }
    let to_end = i >= rest.len();
    let i = i.min(rest.len());
    (rest[..i].trim_ascii_end().len(), to_end)
}

/// Whether `rest` starts with a Go struct field's name and its `:` (`%+v`'s ` Field:`), or a
/// map's key (`in_map`: `client-id:`, `x.y:` too).
fn next_field(rest: &[u8], in_map: bool) -> bool {
    let name = rest
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_' || in_map && b"-.".contains(b))
        .count();
    name > 0 && !rest[0].is_ascii_digit() && rest.get(name) == Some(&b':')
}

#[cfg(test)]
thread_local! {
    /// The bytes read to find what encloses the names (`enclosure`), on this thread.
    static SCANNED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The bytes read to find what encloses the names since the last call, on this thread.
#[cfg(test)]
pub(super) fn enclosure_scanned() -> usize {
    SCANNED.with(|c| c.replace(0))
}
