//! Where a quoted value ends in a piece of a line, by its quote's own rules, and whether a
//! value runs on past a piece's end.

/// Where a single-quoted value's closing `'` is in `text` (after its opening one): `''` is a
/// quote inside it and a backslash is plain (YAML 1.2 7.3.2; PowerShell's verbatim string,
/// about_Quoting_Rules). A `'` that ends `text` may be the first of a `''` whose second is
/// past it (a piece of a line cut between them), so it closes nothing yet.
pub(super) fn single_end(text: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i < text.len() {
        if text[i] == b'\'' {
            match text.get(i + 1) {
                Some(b'\'') => i += 1,
                Some(_) => return Some(i),
                None => return None,
            }
        }
        i += 1;
    }
    None
}

/// Where a double-quoted value's closing `"` is in `text` (after its opening one): a `"`
/// after an odd run of backslashes (JSON, Go, YAML 1.2 7.3.1) or after PowerShell's escape, a
/// backtick (about_Special_Characters: `` `" ``), is inside it.
pub(super) fn double_end(text: &[u8]) -> Option<usize> {
    let (mut i, mut run) = (0, 0usize);
    while i < text.len() {
        match text[i] {
            b'\\' => {
                run += 1;
                i += 1;
                continue;
            }
            // PowerShell's `` `" `` only: a backtick before a `\` is itself (`` `\" `` in JSON
            // is a backtick, then an escaped quote).
            b'`' if run % 2 == 0 && text.get(i + 1) == Some(&b'"') => i += 1,
            b'"' if run % 2 == 0 => return Some(i),
            _ => {}
        }
        run = 0;
        i += 1;
    }
    None
}

/// Where a value in quotes escaped twice (`\\\"a\\\"`: JSON in a JSON string in a JSON
/// string) ends in `text` (after its opening `\\\"`): at its closing `\\\"` (the index of its
/// first backslash), or at a `"` after an even run (a string holding it ends there). A quote
/// in the value is `\\\\\\\"` (seven: a run of 3 modulo 8 closes).
pub(super) fn twice_escaped_end(text: &[u8]) -> Option<usize> {
    let mut run = 0;
    for (i, b) in text.iter().enumerate() {
        match *b {
            b'\\' => {
                run += 1;
                continue;
            }
            b'"' if run % 2 == 0 || run % 8 == 3 => return Some(i - run.min(3)),
            _ => {}
        }
        run = 0;
    }
    None
}

/// Whether a Digest credential's parameters (`text` after `Digest `: RFC 7616 3.4, RFC 9110
/// 11.4: `name=token` or `name="quoted string"`, a `,` or blanks between) run to the end of
/// `text`: what follows the last parameter (a flow mapping's `}`) ends them.
pub(super) fn digest_open(text: &[u8]) -> bool {
    let tchar = |b: &u8| b.is_ascii_alphanumeric() || b"!#$%&*+.^_|~-".contains(b);
    let blanks = |i: usize| {
        i + text[i..]
            .iter()
            .take_while(|b| matches!(b, b' ' | b'\t'))
            .count()
    };
    let mut i = blanks(0);
    loop {
        i = blanks(i + text[i..].iter().take_while(|b| tchar(b)).count());
        match text.get(i) {
            None => return true,
            Some(b'=') => {}
            Some(_) => return false,
        }
        i = blanks(i + 1);
        match text.get(i) {
            None => return true,
            Some(b'"') => match double_end(&text[i + 1..]) {
                Some(e) => i += e + 2,
                None => return true,
            },
            Some(_) => {
                let token = |b: &&u8| !b" \t,}]\"\r".contains(b);
                i += text[i..].iter().take_while(token).count();
            }
        }
        i = blanks(i);
        match text.get(i) {
            None => return true,
            Some(b',') => i = blanks(i + 1),
            Some(b) if tchar(b) => {}
            Some(_) => return false,
        }
        if i == text.len() {
            return true;
        }
    }
}

/// Where a place of a piece of a line stands (`FlowScan::at`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Place {
    /// Directly in a `{` not closed before it, no quote or backslash between them (YAML 1.2
    /// 7.4: a flow mapping's plain scalar holds no `,`).
    Flow,
    /// In a `"` string opened on the piece (an odd count of `"` not escaped before it): the
    /// string's closing quote ends what is in it.
    String,
    /// Anywhere else.
    Other,
}

/// The brackets and strings open at a place of a piece, read on as the place moves forward
/// (a line's header names cost one pass over it).
#[derive(Default)]
pub(super) struct FlowScan {
    /// Where the reading is.
    at: usize,
    /// Each bracket open outside a string (`{` or `[`), and whether no quote or backslash
    /// came after it: text in a string may hold a `, ` that is no mapping's.
    open: Vec<(u8, bool)>,
    /// Inside a `"` string; the run of backslashes just read.
    string: bool,
    run: usize,
}

impl FlowScan {
    /// Where `to` in `text` (at or after the last place asked) stands.
    pub(super) fn at(&mut self, text: &[u8], to: usize) -> Place {
        for &b in &text[self.at.min(to)..to] {
            let escaped = self.run % 2 == 1;
            self.run = if b == b'\\' { self.run + 1 } else { 0 };
            match b {
                b'"' if !escaped => self.string = !self.string,
                b'{' | b'[' if !self.string => self.open.push((b, true)),
                b'}' | b']' if !self.string => {
                    let clean = self.open.pop().is_none_or(|(_, c)| c);
                    if let Some(top) = self.open.last_mut() {
                        top.1 &= clean;
                    }
                }
                _ => {}
            }
            if let Some(top) = self.open.last_mut().filter(|_| b"\"'\\".contains(&b)) {
                top.1 = false;
            }
        }
        self.at = self.at.max(to);
        match (self.string, self.open.last()) {
            (true, _) => Place::String,
            (false, Some((b'{', true))) => Place::Flow,
            _ => Place::Other,
        }
    }
}
