//! The head of a file's tail (`diags` takes a log's last bytes, cut at a line's start) that
//! may be the end of a value whose beginning, and so whose name, was cut off: which of it can
//! be known to be such an end is hidden, as the name may have been a secret's.

use super::record::starts_a_record;

/// The most lines at a tail's head looked through for the end of a value begun before it.
const MAX_LINES: usize = 64;

/// How much of `tail`'s head to hide: the lines before the line that ends a value begun before
/// the cut, and that line's part before its end (a lone `"`, or klog's ` >`). A value's lines
/// after its first are no record of their own (`starts_a_record`), so the search stops at one.
/// - A quoted value's end: the first line with an odd count of `"` (or `'`: YAML 1.2 7.3.2)
///   not escaped, the first followed by what follows a value (`closing_quote`), closes a
///   quote whose opening the cut took (YAML 1.2 7.3.1, a logger's `%q`-less quoting); up to
///   that quote.
/// - klog's multi-line value (`key=<`, then each line after a tab, then ` >`: k8s.io/klog/v2
///   internal/serialize keyvalues.go, `writeStringValue`): tab-led lines at the head up to a
///   line that is ` >`; those lines whole.
pub(super) fn cut_value(tail: &[u8]) -> usize {
    let mut len = 0;
    let mut klog = true;
    for line in tail.split_inclusive(|b| *b == b'\n').take(MAX_LINES) {
        let text = line.trim_ascii_end();
        if !line.starts_with(b" ") && !line.starts_with(b"\t") && starts_a_record(text) {
            return 0;
        }
        if klog && text == b" >" && len > 0 {
            return len;
        }
        klog &= line.starts_with(b"\t");
        if let Some(at) = closing_quote(text) {
            return len + at;
        }
        len += line.len();
    }
    0
}

/// The first quote not escaped on a line that holds an odd count of that quote (`"`, or `'`
/// of a YAML single-quoted scalar, its `''` a quote inside), when what follows it ends a
/// value: a line with a stray quote in prose (`Error: bad "thing`, `don't`) ends none.
fn closing_quote(line: &[u8]) -> Option<usize> {
    [b'"', b'\'']
        .into_iter()
        .filter_map(|q| closing(line, q))
        // Both: the later one (`abc' def"` is a `"` value holding a `'`), which hides more.
        .max()
}

fn closing(line: &[u8], q: u8) -> Option<usize> {
    let mut quotes = line
        .iter()
        .enumerate()
        // A backslash escapes a `"` only: in `'` it is plain (YAML 1.2 7.3.2).
        .filter(|(i, b)| **b == q && (q == b'\'' || *i == 0 || line[i - 1] != b'\\'))
        .map(|(i, _)| i);
    let first = quotes.next()?;
    (quotes.count() % 2 == 0 && ends_value(&line[first + 1..])).then_some(first)
}

/// Whether `after` (a line after a quote) is what follows a value's end: nothing, a blank, or
/// `,`, `}`, `]`, `)`, `.`, `;` (a quoted value's end may be followed by any text after a
/// blank, `secret" then more`, or end a call or a sentence, `secret").`); a quote before a
/// letter, a digit or another sign (`"thing`, `'(w0rd`) opens a word and ends no value.
fn ends_value(after: &[u8]) -> bool {
    matches!(
        after.first(),
        None | Some(b',' | b'}' | b']' | b')' | b'.' | b';' | b'\r' | b' ' | b'\t')
    )
}
