//! Go's `%q` read back: kube-apiserver names the refused user with `%q`
//! (kubernetes, staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go,
//! `forbiddenMessage`: `User %q cannot %s resource %q in API group %q ...`), which is
//! `strconv.Quote`: `\"`, `\\`, `\a \b \f \n \r \t \v`, `\xXX` for a byte that is not UTF-8,
//! `\uXXXX` and `\UXXXXXXXX` for a character that is not printable; `strconv.Unquote` also
//! takes octal `\NNN`. `Forbidden` then passes the message through its `sanitizer`
//! (`strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")`), undone here first.

/// The Go string quoted at the start of `s` (after its opening `"`), and what follows its
/// closing `"`; `None` when it does not close, or an escape is not one of Go's. Bytes not
/// UTF-8 (`\xXX`) are read as U+FFFD.
pub fn unquote_prefix(s: &str) -> Option<(String, &str)> {
    let mut bytes = Vec::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => {
                let user = unsanitize(&String::from_utf8_lossy(&bytes));
                return Some((user, &s[i + 1..]));
            }
            '\\' => escape(&mut chars, &mut bytes)?,
            c => bytes.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
    None
}

/// The sanitizer's entities back as the characters they stand for (`&amp;` last).
fn unsanitize(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// One escape after its `\`, its bytes appended to `out`.
fn escape(chars: &mut std::str::CharIndices<'_>, out: &mut Vec<u8>) -> Option<()> {
    let (_, c) = chars.next()?;
    let mut digits = |n: usize, radix: u32| -> Option<u32> {
        (0..n).try_fold(0u32, |v, _| {
            Some(v * radix + chars.next()?.1.to_digit(radix)?)
        })
    };
    let simple = match c {
        'a' => Some(0x07),
        'b' => Some(0x08),
        'f' => Some(0x0c),
        'n' => Some(b'\n'),
        'r' => Some(b'\r'),
        't' => Some(b'\t'),
        'v' => Some(0x0b),
        '\\' => Some(b'\\'),
        '"' => Some(b'"'),
        _ => None,
    };
    if let Some(b) = simple {
        out.push(b);
        return Some(());
    }
    let char_of =
        |v: u32| char::from_u32(v).map(|c| c.encode_utf8(&mut [0; 4]).as_bytes().to_vec());
    match c {
        'x' => out.push(u8::try_from(digits(2, 16)?).ok()?),
        'u' => out.extend(char_of(digits(4, 16)?)?),
        'U' => out.extend(char_of(digits(8, 16)?)?),
        '0'..='7' => {
            let rest = digits(2, 8)?;
            out.push(u8::try_from(c.to_digit(8)? * 64 + rest).ok()?);
        }
        _ => return None,
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::unquote_prefix;

    /// Each of Go's escapes is read as what it stands for, and the sanitizer's entities too.
    #[test]
    fn gos_escapes_and_the_sanitizers_entities_are_read_back() {
        let read = |s: &str| unquote_prefix(s).map(|(u, rest)| (u, rest.to_owned()));
        assert_eq!(
            read(r#"jane \"j\" doe\\x" cannot"#),
            Some((r#"jane "j" doe\x"#.to_owned(), " cannot".to_owned()))
        );
        assert_eq!(read(r#"a\tb\nc""#).map(|r| r.0).as_deref(), Some("a\tb\nc"));
        assert_eq!(
            read(r#"a\u202eb""#).map(|r| r.0).as_deref(),
            Some("a\u{202e}b")
        );
        assert_eq!(
            read(r#"\U000e0001""#).map(|r| r.0).as_deref(),
            Some("\u{e0001}")
        );
        assert_eq!(
            read(r#"\x41\101\a""#).map(|r| r.0).as_deref(),
            Some("AA\u{7}")
        );
        assert_eq!(read(r#"\xff""#).map(|r| r.0).as_deref(), Some("\u{fffd}"));
        assert_eq!(read(r#"Dürer""#).map(|r| r.0).as_deref(), Some("Dürer"));
        assert_eq!(
            read(r#"a &amp;&lt;&gt; b &amp;lt;""#)
                .map(|r| r.0)
                .as_deref(),
            Some("a &<> b &lt;")
        );
        for bad in [r#"open"#, r#"\q""#, r#"\x4""#, r#"\ud800""#, r#"\400""#] {
            assert_eq!(read(bad), None, "{bad}");
        }
    }
}
