//! A line longer than `logs`' chunk is cut in pieces, each redacted alone
//! (`installed::logs::cut`, `Redactor::redact_piece`): no secret leaves by the cut.

use super::{Kind, Pending, Redactor};
use crate::installed::logs::{CHUNK, cut};

/// `text` cut at `at`, its first piece redacted as a piece and the rest as a line.
pub(super) fn cut_at(text: &str, at: usize) -> String {
    let r = Redactor::new(&[]);
    let (first, p) = r.redact_piece(Pending::None, &text.as_bytes()[..at]);
    let (second, _) = r.redact_line(p, &text.as_bytes()[at..]);
    String::from_utf8_lossy(&[first, second].concat()).into_owned()
}

/// Where `logs` may end a first piece of `text` (its chunk ending at any byte): where `cut`
/// found a place before the chunk's end (one without a blank, a quote or a bracket, cut at its
/// end, is a 64 KiB word: no line here holds one; `a_known_secret_is_never_cut_in_two`).
pub(super) fn ends(text: &str, r: &Redactor) -> std::collections::BTreeSet<usize> {
    let b = text.as_bytes();
    (1..b.len())
        .map(|n| (n, cut(&b[..n], r)))
        .filter(|(n, end)| end < n)
        .map(|(_, end)| end)
        .collect()
}

/// A line cut into pieces as `logs` cuts it (`Reader::emit`: a chunk, ended where `cut`
/// says), each redacted alone by `r`.
fn by_pieces(r: &Redactor, text: &[u8]) -> String {
    let (mut p, mut out, mut rest) = (Pending::None, Vec::new(), text);
    while !rest.is_empty() {
        let buf = &rest[..rest.len().min(CHUNK)];
        let (t, q) = if buf.len() == CHUNK {
            let end = cut(buf, r);
            rest = &rest[end..];
            r.redact_piece(p, &buf[..end])
        } else {
            rest = &[];
            r.redact_line(p, buf)
        };
        out.extend_from_slice(&t);
        out.push(b'\n');
        p = q;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// calico-node's token (a known value: the token file install wrote) where a line longer than
/// a chunk is cut, no blank or quote near: before, `cut` ended the piece inside it and
/// neither half was hidden. Now no piece ends inside it, wherever it stands.
#[test]
fn a_known_secret_is_never_cut_in_two() {
    let token = "k8s-opaque-TOKEN-0123456789abcdefghijklmnopqrstuvwxyz";
    let r = Redactor::new(&[format!("{token}\n")]);
    for shift in 0..token.len() + 2 {
        let line = format!(
            "{}{token}-after",
            "x".repeat(CHUNK - token.len() + shift - 1)
        );
        let out = by_pieces(&r, line.as_bytes());
        for half in [&token[..12], &token[token.len() - 12..]] {
            assert!(!out.contains(half), "shift {shift}: {half} left");
        }
        assert!(
            out.replace('\n', "").contains("<redacted>-after"),
            "shift {shift}"
        );
        assert!(
            out.lines().all(|l| l.len() <= CHUNK),
            "a piece past the chunk"
        );
    }
    // A piece that starts with the value ends after it.
    let piece = format!("{token}{}", "y".repeat(40));
    assert_eq!(r.clear_of_known(piece.as_bytes(), 20), token.len());
}

/// A value that holds a blank or a comma (a free byte, where `cut` may end a piece) goes on
/// into the next piece, up to what ends a value of its kind; what follows it stays.
#[test]
fn a_value_cut_at_a_blank_goes_on_into_the_next_piece() {
    for (text, kept) in [
        (
            r#"x "etcdpassword":"two QQSECRET words", "felixhostname":"n1""#,
            r#""felixhostname":"n1""#,
        ),
        (
            "x map[etcdpassword:two QQSECRET felixhostname:n1]",
            " felixhostname:n1]",
        ),
        (
            "{Name:DB_PASSWORD Value:two QQSECRET ValueFrom:nil}",
            " ValueFrom:nil}",
        ),
        (
            "&EnvVar{Name:DB_PASSWORD,Value:p@ss, QQSECRET,ValueFrom:nil,}",
            ",ValueFrom:nil,}",
        ),
        (
            "Key=/calico/bgp/v1/global/node_mesh_password; Value=two QQSECRET",
            "",
        ),
        (
            "ConvertTo-SecureString 'two QQSECRET' -AsPlainText",
            "' -AsPlainText",
        ),
        ("--token 'two, QQSECRET' --v=2", "' --v=2"),
    ] {
        for at in ends(text, &Redactor::new(&[])) {
            let out = cut_at(text, at);
            assert!(!out.contains("QQSECRET"), "cut at {at}: {out}");
            assert!(out.ends_with(kept), "cut at {at}: {out}");
        }
    }
}

/// What a piece leaves pending is small enough for a `logs` position's record, and a line
/// after it starts with nothing pending.
#[test]
fn a_piece_leaves_only_the_kind_of_its_open_value() {
    let r = Redactor::new(&[]);
    let (_, p) = r.redact_piece(Pending::None, br#"x "password":"two "#);
    assert_eq!(p, Pending::Rest(Kind::Quote(b'"')));
    let json = serde_json::to_string(&p).expect("json");
    assert!(json.len() <= 56 && !json.contains([' ', '_']), "{json}");
    let (out, p) = r.redact_line(p, b"words\" then");
    assert_eq!((&out[..], p), (&b"<redacted>\" then"[..], Pending::None));
    let (_, p) = r.redact_line(Pending::None, br#"x "password":"two "#);
    assert_eq!(p, Pending::None);
}

/// Redaction is one pass over its input, whatever it holds: `diags` redacts whole files and
/// `logs` 64 KiB pieces, and a line made of names whose values never close must not cost a
/// pass per name.
#[test]
fn a_line_of_many_open_values_is_redacted_in_one_pass() {
    let r = Redactor::new(&[]);
    for unit in [
        "password:\"",
        "--token '",
        "{Name:X_TOKEN,Value:",
        "\"name\":\"X_TOKEN\",\"value\":\"",
        "ConvertTo-SecureString \"",
        "Authorization: Bearer \"",
    ] {
        let text = unit.repeat(500_000 / unit.len()) + " token=lastsecret";
        let started = std::time::Instant::now();
        let out = r.redact(text.as_bytes());
        r.redact_piece(Pending::None, &text.as_bytes()[..64 * 1024]);
        // Seconds for one pass of 500 KB; a pass per name would take hours.
        assert!(started.elapsed().as_secs() < 20, "{unit}");
        assert!(
            !String::from_utf8_lossy(&out).contains("lastsecret"),
            "{unit}"
        );
    }
}
