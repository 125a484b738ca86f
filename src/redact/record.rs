//! Where a log's record starts: a line that is no part of a value carried from the lines
//! before it.

/// Whether a line's text starts like a log record, not like a value carried from the line
/// before (asked of an unindented line only: a logger writes its record at column 0, and an
/// indented value may begin with a date): a JSON object (`{`), a date (`2026-11-26`, Calico's text format: projectcalico/calico v3.32.1
/// libcalico-go/lib/logutils/logutils.go, `Formatter.Format`), logrus' own text format, which
/// a logrus program writes before it sets Calico's (`time="..." level=info msg=...`:
/// sirupsen/logrus text_formatter.go, its `time` key first), or klog's header (`I1126 `,
/// `E1126 `: k8s.io/klog/v2 formats a header as severity letter, month, day).
pub(super) fn starts_a_record(text: &[u8]) -> bool {
    let digits = |b: &[u8]| b.iter().all(u8::is_ascii_digit);
    match text {
        [b'{', ..] | [b't', b'i', b'm', b'e', b'=', ..] => true,
        [a, b, c, d, b'-', ..] => digits(&[*a, *b, *c, *d]),
        [b'I' | b'W' | b'E' | b'F', m @ ..] if m.len() >= 5 => digits(&m[..4]) && m[4] == b' ',
        _ => false,
    }
}
