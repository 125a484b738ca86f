//! Redaction a line at a time (`logs`, and a line longer than a chunk a piece at a time): what
//! a line leaves pending for the lines after it (a flag whose value is the next item, a block
//! scalar, a quoted value not closed, an `env:` item whose `name:` named a secret) is kept as
//! a small state, so that the next lines' part of the secret goes as it goes from a whole file.

use super::Redactor;
use super::env::{closing, json_quote, names_a_secret};
use super::headers::{list_items, unquoted_credentials};
use super::names::{NAMES, REDACTED};
use super::plain::{Around, continued, open_around, open_at_end};
use super::quotes::{FlowScan, Place, digest_open, double_end, single_end, twice_escaped_end};
use super::record::starts_a_record;
use super::table;
use regex::bytes::Regex;
use serde::{Deserialize, Serialize};

/// The most lines a quoted value or an object left open is followed over.
const MAX_LINES: u16 = 64;

/// The most lines after its own a quoted value not closed is followed over a line at a time
/// (`logs`, each shown as `<redacted>`) whatever they hold; after those, only up to the end of
/// its record (an unindented line, or one that starts a record: `starts_a_record`) or its
/// closing quote, whichever comes first. A whole file (`diags`) follows it to its closing quote.
pub const QUOTE_LINES: u16 = 4;

/// What a line left for the lines after it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Pending {
    #[default]
    None,
    /// A flag or a name naming a secret ended its line (`- --token`, `[--token,`, `token:`,
    /// a comment after it): the next item, after blank and comment lines, is its value.
    Flag,
    /// The lines indented more than this are a secret's (a block scalar's, YAML 1.2 8.1, or
    /// the lines under a secret's name with no value on its line), blank lines among them.
    Under(usize),
    /// Inside a secret in this quote (`"` or `'`) not closed on its line, for so many lines
    /// (YAML 1.2 7.3.1, 7.3.2: a quoted scalar may span lines).
    Quote(u8, u16),
    /// Inside a secret in this quote escaped (`\"`: JSON inside a JSON string, Go's `%q`) not
    /// closed on its line. Such a string holds no line break, so only the rest of a long line
    /// cut at a blank (its next piece) goes on with it: up to its `\"`, and a line that does
    /// not close it so is another record.
    Escaped(u8),
    /// Inside klog's multi-line value of a key naming a secret (`token=<`): its lines, each
    /// after a tab, up to the ` >` that ends it (k8s.io/klog/v2 internal/serialize
    /// keyvalues.go, `writeStringValue`).
    Klog,
    /// A block list item (`- name: X_TOKEN`) whose name named a secret: its `-`'s column and
    /// its keys'; its `value:` is a secret.
    Item(usize, usize),
    /// A JSON or flow object whose `name` named a secret, its `value` not yet seen, for so
    /// many lines (`kubectl get -o json`'s `{"name": "X_TOKEN",\n "value": "X"}`).
    Object(u16),
    /// A secret's value of many words ran to the end of a piece of a line cut before its end
    /// (`redact_piece`): the next piece goes on with it, up to what ends such a value.
    Rest(Around),
    /// A piece of a line cut before its end left a `{` or Go's `map[` open (`Flow`, `Map`):
    /// the next piece's values end as they would inside it.
    Within(Around),
    /// A line that may be a `Format-Table` header with columns named as secrets between these
    /// columns (`table::header`): a row of dashes next makes it one.
    Header(u16, u16),
    /// The rows of a `Format-Table` whose columns between these (`u16::MAX`: to the row's
    /// end) are secrets', up to a blank line.
    Table(u16, u16),
    /// What a `logs` position saved by an earlier version holds for `Wrapped` (this version
    /// makes `Wrapped` only; the state is kept so that such a record still loads): the lines
    /// indented more than this (the column of the key whose plain value began on the line
    /// before) go on its value (YAML 1.2 7.3.3), blank lines among them, up to a
    /// line that is an entry of its own (`key: value`, `- key: value`): a plain scalar holds
    /// no `: `.
    Continued(usize),
    /// `Continued`'s lines after a secret's plain value that began its line (`password: x`,
    /// `Format-List`'s `Password : x`), the second the value's column: a line indented just
    /// there goes on the value whatever it holds (`Format-List` wraps a long value to its
    /// column; in YAML such a line after a plain scalar can be no entry of its own).
    Wrapped(usize, usize),
    /// `Wrapped` after a `Format-List` name (`Password : x`, blanks before its `:`): its
    /// wrapped lines go on the value up to a blank line, which ends the list's object
    /// (Format-List writes a blank line between objects and after the last); an indented line
    /// after the blank (an error's stack trace) is no part of it. YAML's plain scalar goes on
    /// past a blank line (`Wrapped`).
    Listed(usize, usize),
    /// A piece of a line cut before its end inside a value that runs to its line's end (an
    /// HTTP credential header's, RFC 9110 5.5: `Cookie:`, `Authorization: Digest ...`, or a
    /// Docker config's `auths` object not closed): the line's next pieces go whole.
    Line,
    /// A piece of a line cut before its end ended in a credential header's name or a key
    /// naming a secret (its quotes and blanks after it): the next piece goes whole (`Line`)
    /// when the name's `:` begins it; else the name was none of a header's or a key's (a
    /// list's item, `["Authorization", "Accept"]`).
    Named,
    /// A piece of a line cut before its end ended at the `'` that closes a secret's
    /// single-quoted value: it may be the first of a `''` (a quote inside, YAML 1.2 7.3.2)
    /// whose second begins the next piece, and then the value goes on in it to its `'`.
    Doubled,
    /// The items of a credential header's or a secret's JSON list whose `[` ended its line
    /// (Go's `json.MarshalIndent` of an http.Header: `"Cookie": [`), for so many lines: each
    /// line goes up to the `]` that closes the list.
    /// The second: an `Authorization` header's (a scheme's name stays).
    Items(u16, bool),
    /// The items of a credential header's YAML block list whose name ended its line
    /// (`Cookie:`, then `- a` lines), the name's column: the lines indented more, and the
    /// `- ` items at its column (YAML 1.2 8.2.1: a mapping's block sequence may stand at its
    /// key's column), go, blank lines among them; the second as `Items`'.
    Dashes(usize, bool),
    /// PowerShell's `Format-List` of a dictionary's entry (`$h.GetEnumerator() |
    /// Format-List`) whose `Name :` or `Key :` named a credential's header or a secret: its
    /// `Value :` goes, and the lines it wraps onto (`Listed`).
    ListEntry,
    /// PowerShell's `Format-Table` of a dictionary's entries (a hashtable at the prompt: a
    /// `Name` and a `Value` column), the `Value` column's start: a row whose name is a
    /// credential's header or a secret's loses its value, up to a blank line.
    TableEntries(u16),
}

impl Pending {
    /// The stricter of two states of the same place (a position's record, what the lines
    /// before it leave): the one that hides, the longer-lasting or wider of the same kind,
    /// else `found`.
    pub fn stricter(self, found: Pending) -> Pending {
        match (self, found) {
            (Pending::None, f) => f,
            (r, Pending::None) => r,
            (Pending::Quote(q, a), Pending::Quote(p, b)) if q == p => Pending::Quote(q, a.min(b)),
            (Pending::Under(a), Pending::Under(b)) => Pending::Under(a.min(b)),
            (Pending::Continued(a), Pending::Continued(b)) => Pending::Continued(a.min(b)),
            // The lower key's column hides every line indented more than it that is no entry
            // of its own; on a tie, the lower value column.
            (Pending::Listed(a, v), Pending::Listed(b, w)) => {
                let (k, c) = (a, v).min((b, w));
                Pending::Listed(k, c)
            }
            // `Wrapped` goes on past a blank line, which ends `Listed`: with either, `Wrapped`.
            (Pending::Wrapped(a, v) | Pending::Listed(a, v), Pending::Wrapped(b, w))
            | (Pending::Wrapped(a, v), Pending::Listed(b, w)) => {
                let (k, c) = (a, v).min((b, w));
                Pending::Wrapped(k, c)
            }
            (Pending::Object(a), Pending::Object(b)) => Pending::Object(a.min(b)),
            (_, f) => f,
        }
    }
}

/// The shapes that leave something pending.
pub(super) struct Leads {
    /// A name or flag naming a secret and its value's opening quote (group 1).
    quote: Regex,
    /// A line ending in a flag naming a secret (a `,` after it) or a secret's name and `:`/`=`.
    flag: Regex,
    /// `token: |`: a block scalar as a named secret's value (group 1: the indentation).
    block: Regex,
    /// `password: two`, a plain scalar as a named secret's value, starting its line (group 1:
    /// the indentation and a `- `, the key's column; group 2 ends at the value's column): the
    /// lines after it indented more are its own (YAML 1.2 7.3.3).
    continues: Regex,
    /// `- name: X` or `name: X` alone on its line (1: indentation, 2: `- `, 3: the name).
    item: Regex,
    /// A `name` key of a flow mapping or JSON object and its name (group 1).
    object: Regex,
    /// A `value` key.
    value: Regex,
    /// klog's `key=<` ending a line, the key naming a secret.
    klog: Regex,
    /// `table::column_name`.
    column: Regex,
    /// An HTTP credential header's name and `:` (group 1: a `"` before it, a JSON key's).
    header: Regex,
    /// Go's `%v` or `%#v` of a `[]string` under a key naming a secret (`map[password:[a`,
    /// `"password":[]string{"a`, or cut inside its `[]string{`), not closed at the text's end
    /// (group 1: up to its opening).
    list: Regex,
    /// A key naming a secret at the text's end, its quotes (escaped or not) and blanks after
    /// it (`"password"`, `\"token\"`): its `:` and value may begin the next piece.
    key_end: Regex,
    /// `docker::auths`' `auths` key and its `{`.
    auths: Regex,
    /// `Format-List`'s `Name :` or `Key :` of a dictionary's entry (group 1: the name).
    entry_key: Regex,
    /// `Format-List`'s `Value :` of a dictionary's entry.
    entry_value: Regex,
    /// `Format-Table`'s header of a dictionary's entries (group 1: up to the `Value` column).
    entry_table: Regex,
    /// A key ending its line (group 2: the key, a credential header's name or naming a secret),
    /// perhaps after its object's or list's opening (Python's `pprint`: `{'Cookie': ['a',`),
    /// after it a `[` and the first items, the list not closed on the line (group 3), or nothing
    /// but a YAML comment (group 1: the indentation and a `- `, the key's column).
    list_head: Regex,
    /// Go's `%+v` of an `EnvVar`, or its generated `String()` (`EnvVar{Name:X,Value:Y,`,
    /// `env::pairs`), whose value runs to the text's end (group 1: the name, 2: the value).
    go_env: Regex,
}

impl Leads {
    pub(super) fn new(build: impl Fn(&str) -> Regex) -> Self {
        let flag = format!(r#"(?:^|[\s"'\[,(=])-{{1,2}}[a-z0-9-]*{NAMES}\\?["']?"#);
        // A key's quotes escaped once or twice (`\"password\":`, `\\\"password\\\":`).
        let name = format!(r#"[A-Za-z0-9_.-]*{NAMES}(?:\\{{1,3}})?["']?\s*[:=]"#);
        Self {
            quote: build(&format!(
                r#"(?i-u)(?:{name}\s*|{flag}(?:[ \t]+|\s*,\s*))(\\\\\\["']|\\?["'])"#
            )),
            flag: build(&format!(
                r#"(?i-u)(?:{flag}\s*,?|{name})[ \t]*(?:#[^\r\n]*)?\s*$"#
            )),
            block: build(&format!(
                r#"(?i-u)^([ \t]*)(?:-[ \t]+)?{name}[ \t]*[|>][0-9+-]{{0,2}}[ \t]*(?:#[^\r\n]*)?\s*$"#
            )),
            continues: build(&format!(
                r#"(?i-u)^(([ \t]*(?:-[ \t]+)?)["']?[A-Za-z0-9_.-]*{NAMES}["']?[ \t]*:[ \t]+)[^\s"'|>#&*!{{\[][^\r\n]*\r?$"#
            )),
            item: build(
                r#"(?i-u)^([ \t]*)(-[ \t]+)?["']?name["']?[ \t]*:[ \t]*["']?([A-Za-z0-9_.-]+)["']?[ \t]*(?:#[^\r\n]*)?\s*$"#,
            ),
            object: build(
                r#"(?i-u)(?:^|[\s{,])\\?["']?name\\?["']?\s*:\s*\\?["']?([A-Za-z0-9_.-]+)"#,
            ),
            value: build(r#"(?i-u)(?:^|[\s{,])\\?["']?value\\?["']?\s*:[ \t]*"#),
            klog: build(&format!(r#"(?i-u)(?:^|\s)[A-Za-z0-9_.-]*{NAMES}=<\s*$"#)),
            column: build(&table::column_name()),
            header: build(
                r#"(?i-u)(?:^|[\s'{,\[]|(\\*"))(?:(?:set-)?cookie|(?:proxy-)?authorization|x-api-key|x-auth-token)(?:\\*["'])?\s*[:=]\s*"#,
            ),
            list: build(&format!(
                r#"(?i-u)([A-Za-z0-9_.-]*{NAMES}\\?["']?\s*:\s*(?:\[\](?:string\{{?)?|\[))[^\]}}\r\n]*$"#
            )),
            key_end: build(&format!(
                r#"(?i-u)(?:^|[^A-Za-z0-9_.-])[A-Za-z0-9_.-]*{NAMES}(?:\\*["'])?\s*$"#
            )),
            auths: build(&super::docker::auths()[0]),
            entry_key: build(r"(?i-u)^(?:name|key)[ \t]*:[ \t]*([A-Za-z0-9_.-]+)[ \t]*\r?$"),
            entry_value: build(r"(?i-u)^value[ \t]*:[ \t]*"),
            entry_table: build(r"(?-u)^(Name[ \t]+)Value[ \t]*\r?$"),
            list_head: build(&format!(
                r#"(?i-u)^([ \t]*(?:-[ \t]+)?)(?:[{{\[][ \t]*)?(?:\\?["'])?([A-Za-z0-9_.-]*{NAMES}|[A-Za-z-]+)(?:\\?["'])?[ \t]*:[ \t]*(\[[^\]\r\n]*)?(?:[ \t]#[^\r\n]*)?[ \t]*\r?$"#
            )),
            go_env: build(r"(?-u)\{Name:([A-Za-z0-9_.-]+)[ ,]Value:([^}\r\n]*)$"),
        }
    }

    /// Whether a piece of a line cut before its end is inside a value that runs to the line's
    /// end (`Pending::Line`): after a credential header's name, its value not ended before
    /// the piece's end (`header_value_open`); in an `auths` object not closed.
    fn open_line(&self, piece: &[u8]) -> bool {
        let auths = self.auths.find_iter(piece).last();
        if auths.is_some_and(|m| super::docker::object_end(&piece[m.end()..]).is_none()) {
            return true;
        }
        // In order, each read only up to its value's end: a line of many names costs a pass.
        let mut flow = FlowScan::default();
        self.header.captures_iter(piece).any(|c| {
            let Some(m) = c.get(0) else {
                return false;
            };
            let key_quoted = m
                .as_bytes()
                .trim_ascii_end()
                .strip_suffix(b":")
                .is_some_and(|k| {
                    k.trim_ascii_end().ends_with(b"\"") || k.trim_ascii_end().ends_with(b"'")
                });
            let (first, after) = (piece[m.start()], &piece[m.end()..]);
            // After `=` only a quoted value is a header's (`Cookie="a=b"`), to its own quote
            // (`quotes`' rules: `\"` and PowerShell's `` `" `` inside it, `''` in `'`).
            if m.as_bytes().trim_ascii_end().ends_with(b"=") {
                return match after.first() {
                    Some(b'"') => double_end(&after[1..]).is_none(),
                    Some(b'\'') => single_end(&after[1..]).is_none(),
                    // Its quote may begin the next piece: that piece goes whole.
                    None => true,
                    Some(_) => false,
                };
            }
            // After a blank or `,`: in a flow mapping (`{a: 1, Cookie: x, b: 2}`) its `,` or
            // `}` ends the value, as after its `{`; in a string, the string's quote.
            match (first, flow.at(piece, m.start())) {
                (b' ' | b'\t' | b',', Place::Flow) => own_value_open(after),
                (b' ' | b'\t' | b',', Place::String) => double_end(after).is_none(),
                _ => header_value_open(first, c.get(1), key_quoted, after),
            }
        })
    }

    /// Where the items of a secret's list not closed at the end of `piece` (redacted) begin
    /// (`list`): the rest of its line is the list's (`Pending::Line`).
    fn open_list(&self, piece: &[u8]) -> Option<usize> {
        self.list.captures(piece)?.get(1).map(|m| m.end())
    }

    /// The entries of a dictionary PowerShell prints that a line begins (`ListEntry`,
    /// `TableEntries`).
    fn entries(&self, line: &[u8]) -> Option<Pending> {
        if let Some(c) = self.entry_table.captures(line) {
            let at = c.get(1).map_or(0, |m| m.len());
            return u16::try_from(at).ok().map(Pending::TableEntries);
        }
        let name = self.entry_key.captures(line)?.get(1)?;
        self.credential_name(name.as_bytes())
            .then_some(Pending::ListEntry)
    }

    /// Whether a dictionary's key names a credential's header or a secret.
    fn credential_name(&self, name: &[u8]) -> bool {
        HEADER_NAMES
            .iter()
            .any(|n| name.eq_ignore_ascii_case(n.as_bytes()))
            || self.key_end.is_match(name)
    }

    /// The list a line ending in a credential header's name (`Cookie:`, YAML's block list
    /// next) or in its or a secret's key and a `[` (`"Cookie": [`, JSON's items next) opens.
    fn list_head(&self, line: &[u8]) -> Option<Pending> {
        let c = self.list_head.captures(line)?;
        let name = c.get(2)?.as_bytes();
        let header = HEADER_NAMES
            .iter()
            .any(|n| name.eq_ignore_ascii_case(n.as_bytes()));
        let auth = name.to_ascii_lowercase().ends_with(b"authorization");
        match c.get(3) {
            Some(_) if header || self.key_end.is_match(name) => Some(Pending::Items(0, auth)),
            None if header => Some(Pending::Dashes(c.get(1).map_or(0, |m| m.len()), auth)),
            _ => None,
        }
    }

    /// Whether `piece` ends at the `'` that closes a secret's single-quoted value
    /// (`Pending::Doubled`).
    fn single_closed_at_end(&self, piece: &[u8]) -> bool {
        let mut at = 0;
        while let Some(c) = self.quote.captures_at(piece, at) {
            let (Some(whole), Some(q)) = (c.get(0), c.get(1)) else {
                return false;
            };
            let rest = &piece[whole.end()..];
            let close = match q.as_bytes() {
                [b'\\', q] => escaped_end(*q, rest).map(|(i, _)| i + 1),
                [q] => closing(*q, rest),
                _ => None,
            };
            let Some(i) = close else {
                return false;
            };
            if q.as_bytes() == b"'" && whole.end() + i + 1 == piece.len() {
                return true;
            }
            at = whole.end() + i + 1;
        }
        false
    }

    /// Where the value of Go's `%+v` of an `EnvVar` named as a secret begins in a piece of a
    /// line cut before the value's end (` ValueFrom:` or `}`, `env::pairs`).
    fn open_go_env(&self, piece: &[u8]) -> Option<usize> {
        let c = self.go_env.captures(piece)?;
        let (name, value) = (c.get(1)?, c.get(2)?);
        names_a_secret(name.as_bytes()).then_some(value.start())
    }

    /// What `line` leaves pending, and where on it a secret's value begins that it does not
    /// end (a quote not closed).
    fn after(&self, line: &[u8]) -> (Pending, Option<usize>) {
        match self.carried(line) {
            (Pending::None, _) => (self.after_line(line), None),
            // A table's header only when the line leaves nothing else.
            (Pending::Header(..), _) if self.after_line(line) != Pending::None => {
                (self.after_line(line), None)
            }
            carried => carried,
        }
    }

    /// What `line` carries over lines in any text, not only a log's: a secret's quote not
    /// closed on it (and where the secret begins), klog's `key=<`, a secret's block scalar or
    /// plain scalar whose lines go on indented more.
    fn carried(&self, line: &[u8]) -> (Pending, Option<usize>) {
        if let Some((p, at)) = self.open_quote(line) {
            return (p, Some(at));
        }
        if self.klog.is_match(line) {
            return (Pending::Klog, None);
        }
        if let Some(list) = self.list_head(line).or_else(|| self.entries(line)) {
            return (list, None);
        }
        let column = |c: &regex::bytes::Captures, i| c.get(i).map_or(0, |m| m.len());
        let wrapped = |c: regex::bytes::Captures| {
            let (key, value) = (column(&c, 2), column(&c, 1));
            let name = c.get(1).map_or(&b""[..], |m| m.as_bytes().trim_ascii_end());
            let listed = name.strip_suffix(b":").is_some_and(|n| n.ends_with(b" "));
            if listed {
                Pending::Listed(key, value)
            } else {
                Pending::Wrapped(key, value)
            }
        };
        let under = (self
            .block
            .captures(line)
            .map(|c| Pending::Under(column(&c, 1))))
        .or_else(|| (self.continues.captures(line)).map(wrapped));
        let header = || table::header(&self.column, line).map(|(s, e)| Pending::Header(s, e));
        (under.or_else(header).unwrap_or_default(), None)
    }

    fn after_line(&self, line: &[u8]) -> Pending {
        if self.flag.is_match(line) {
            return Pending::Flag;
        }
        if let Some(c) = self.item.captures(line) {
            let (indent, dash) = (c.get(1).map_or(0, |m| m.len()), c.get(2));
            if c.get(3).is_some_and(|n| names_a_secret(n.as_bytes())) {
                match dash {
                    Some(d) => return Pending::Item(indent, indent + d.len()),
                    None if indent > 0 => return Pending::Item(indent - 1, indent),
                    None => {}
                }
            }
        }
        self.object(line)
    }

    /// The state the first secret on `line` whose quote is not closed on it leaves, and
    /// where the secret begins.
    fn open_quote(&self, line: &[u8]) -> Option<(Pending, usize)> {
        let mut at = 0;
        while let Some(c) = self.quote.captures_at(line, at) {
            let (whole, q) = (c.get(0)?, c.get(1)?.as_bytes());
            let rest = &line[whole.end()..];
            let (close, open) = match q {
                // Escaped twice: the next piece's `\"` closes it as a once-escaped one's.
                [b'\\', b'\\', b'\\', q] => {
                    (twice_escaped_end(rest).map(|i| i + 1), Pending::Escaped(*q))
                }
                [b'\\', q] => (
                    escaped_end(*q, rest).map(|(i, _)| i + 1),
                    Pending::Escaped(*q),
                ),
                [q] => (closing(*q, rest), Pending::Quote(*q, 0)),
                _ => return None,
            };
            match close {
                Some(i) => at = whole.end() + i + 1,
                None => return Some((open, whole.end())),
            }
        }
        None
    }

    /// After a `name` naming a secret, its object not closed on the line: its value still
    /// to come (`Object`), or begun and not ended here.
    fn object(&self, line: &[u8]) -> Pending {
        let Some(end) = self
            .object
            .captures_iter(line)
            .filter_map(|c| c.get(1))
            .filter(|n| names_a_secret(n.as_bytes()))
            .last()
            .map(|n| n.end())
        else {
            return Pending::None;
        };
        let tail = &line[end..];
        if memchr::memchr(b'}', tail).is_some() {
            return Pending::None;
        }
        match self.value.find(tail) {
            Some(v) => value_at(tail, v.end(), None).2.unwrap_or_default(),
            None => Pending::Object(0),
        }
    }
}

/// The value of a secret from `at` in `line`: what it becomes, up to where (the rest of the
/// line is redacted as any line), and what it leaves pending (`under`: the column beyond which
/// its plain scalar's continuation lines are).
fn value_at(line: &[u8], at: usize, under: Option<usize>) -> (Vec<u8>, usize, Option<Pending>) {
    let lead = line[at..]
        .iter()
        .take_while(|b| matches!(b, b' ' | b'\t'))
        .count();
    let start = at + lead;
    let v = &line[start..];
    let text = v.trim_ascii_end();
    let mut out = line[at..start].to_vec();
    let quoted = |open: &[u8], close: Option<usize>, p: Pending| {
        let mut out = line[at..start].to_vec();
        out.extend_from_slice(open);
        out.extend_from_slice(REDACTED.as_bytes());
        match close {
            Some(i) => (out, start + open.len() + i, None),
            None => (out, start + text.len(), Some(p)),
        }
    };
    match text {
        [] => {
            out.extend_from_slice(v);
            (
                out,
                line.len(),
                Some(under.map_or(Pending::Flag, Pending::Under)),
            )
        }
        [b'\\', q @ (b'"' | b'\''), rest @ ..] => {
            let close = escaped_end(*q, rest).map(|(i, _)| i);
            quoted(&text[..2], close, Pending::Escaped(*q))
        }
        [q @ (b'"' | b'\''), rest @ ..] => {
            quoted(&text[..1], closing(*q, rest), Pending::Quote(*q, 0))
        }
        [b'|' | b'>', ..] if under.is_some() => {
            out.extend_from_slice(v);
            (out, line.len(), under.map(Pending::Under))
        }
        _ => {
            // After a JSON key a plain value (`2048`, `true`) ends at its item's end.
            let q = json_quote(&line[..start]);
            let end = text.iter().position(|b| matches!(b, b',' | b'}' | b']'));
            let len = end.filter(|_| !q.is_empty()).unwrap_or(text.len());
            out.extend_from_slice(&[q, REDACTED.as_bytes(), q].concat());
            (out, start + len, under.map(Pending::Continued))
        }
    }
}

impl Redactor {
    /// `line` (without its line break) redacted, what an earlier line left pending applied
    /// first, and what it leaves pending for the next.
    pub fn redact_line(&self, pending: Pending, line: &[u8]) -> (Vec<u8>, Pending) {
        match self.redact_within(pending, line) {
            (
                out,
                Pending::Rest(_)
                | Pending::Within(_)
                | Pending::Line
                | Pending::Named
                | Pending::Doubled,
            ) => (out, Pending::None),
            done => done,
        }
    }

    /// `piece`, a line's part that ends before its line break (a line longer than a chunk is
    /// cut), redacted as `redact_line` redacts a line; a secret's value of many words that
    /// runs to its end goes on into the next piece (`Pending::Rest`).
    pub fn redact_piece(&self, pending: Pending, piece: &[u8]) -> (Vec<u8>, Pending) {
        let seen = match pending {
            Pending::Within(around) => [opener(around), piece].concat(),
            _ => piece.to_vec(),
        };
        match self.redact_within(pending, piece) {
            (out, Pending::None) if self.lines.open_line(&seen) => (out, Pending::Line),
            // A header's name at the piece's very end, its `:` perhaps in the next piece.
            // So a secret's key (`"password"`, `\"token\"`).
            (out, Pending::None)
                if header_name_at_end(&seen) || self.lines.key_end.is_match(&seen) =>
            {
                (out, Pending::Named)
            }
            (out, Pending::None) if self.lines.single_closed_at_end(&seen) => {
                (out, Pending::Doubled)
            }
            // Go's `map[password:[a b` cut inside the list: its items go, in this piece and
            // the rest of the line.
            (mut out, Pending::None) if self.lines.open_list(&out).is_some() => {
                let at = self.lines.open_list(&out).unwrap_or(out.len());
                if !out[at..].trim_ascii().is_empty() {
                    out.truncate(at);
                    out.extend_from_slice(REDACTED.as_bytes());
                }
                (out, Pending::Line)
            }
            (out, Pending::None) => self.piece_end(out, &seen),
            // A plain value beginning its line (`password: x`) runs to the line's end, past
            // the piece's: the line's next pieces go whole. (The lines after the long line
            // are no longer read as its continuation.)
            (out, Pending::Continued(_) | Pending::Wrapped(..) | Pending::Listed(..)) => {
                (out, Pending::Line)
            }
            done => done,
        }
    }

    /// What a piece (`seen`, redacted as `out`) that left nothing else leaves for the next:
    /// the rest of a Go `EnvVar`'s value, of a value of many words, or the `{` it left open.
    fn piece_end(&self, mut out: Vec<u8>, seen: &[u8]) -> (Vec<u8>, Pending) {
        // Go's `{Name:X_PASSWORD Value:two words ValueFrom:nil}` cut inside its value: the
        // value goes, and the next piece's part of it, up to ` ValueFrom:` or `}`.
        if let Some(at) = self.lines.open_go_env(&out) {
            if !out[at..].trim_ascii().is_empty() {
                out.truncate(at);
                out.extend_from_slice(REDACTED.as_bytes());
                out.push(b' ');
            }
            return (out, Pending::Rest(Around::Struct));
        }
        let rest = open_at_end(&self.plain, seen).map(Pending::Rest);
        let within = || Some(open_around(seen)).filter(|a| *a != Around::Line);
        let next = rest.or_else(|| within().map(Pending::Within));
        (out, next.unwrap_or_default())
    }

    /// `redact_part`, a piece inside a `{` or `map[` the piece before opened (`Within`) read
    /// as if that opening began it.
    fn redact_within(&self, pending: Pending, piece: &[u8]) -> (Vec<u8>, Pending) {
        let Pending::Within(around) = pending else {
            return self.redact_part(pending, piece);
        };
        let open = opener(around);
        let (out, next) = self.redact_part(Pending::None, &[open, piece].concat());
        match out.strip_prefix(open) {
            Some(out) => (out.to_vec(), next),
            None => self.redact_part(Pending::None, piece),
        }
    }

    fn redact_part(&self, pending: Pending, line: &[u8]) -> (Vec<u8>, Pending) {
        let (mut out, used, kept) = self.take(pending, line, false);
        let rest = &line[used..];
        let (next, open) = kept.map_or_else(|| self.lines.after(rest), |p| (p, None));
        match open {
            // Nothing after the quote yet: the value is on the lines after.
            Some(at) if rest[at..].trim_ascii().is_empty() => {
                out.extend_from_slice(&self.redact(rest));
            }
            Some(at) => {
                out.extend_from_slice(&self.redact(&rest[..at]));
                out.extend_from_slice(REDACTED.as_bytes());
                out.extend_from_slice(&rest[rest.trim_ascii_end().len()..]);
            }
            None => out.extend_from_slice(&self.redact(rest)),
        }
        (out, next)
    }

    /// What `pending` makes of the start of `line`: that part's text, its length, and the
    /// state after it when the part decides it. `whole`: `line` is one of a whole file's.
    fn take(
        &self,
        pending: Pending,
        line: &[u8],
        whole: bool,
    ) -> (Vec<u8>, usize, Option<Pending>) {
        let indent = line
            .iter()
            .take_while(|b| matches!(b, b' ' | b'\t'))
            .count();
        let text = line[indent..].trim_ascii_end();
        let skip = text.is_empty() || text.starts_with(b"#");
        let keep = |p| (line.to_vec(), line.len(), Some(p));
        match pending {
            Pending::None => (Vec::new(), 0, None),
            Pending::Flag if skip => keep(pending),
            // A log record of its own (pflag's `unknown flag: --token` ended the line before).
            Pending::Flag if indent == 0 && starts_a_record(text) => (Vec::new(), 0, None),
            Pending::Flag => {
                let Some(r) = text.strip_prefix(b"-").filter(|r| r.first() == Some(&b' ')) else {
                    return value_at(line, indent, None);
                };
                let at = indent + 1 + r.iter().take_while(|b| **b == b' ').count();
                if matches!(line.get(at), Some(b'|' | b'>')) {
                    return keep(Pending::Under(indent));
                }
                let (v, used, p) = value_at(line, at, Some(indent));
                ([&line[..at], &v[..]].concat(), used, p)
            }
            Pending::Under(_) if text.is_empty() => keep(pending),
            Pending::Under(d) if indent > d => self.hide(line, indent, text.len(), pending),
            Pending::Continued(_) | Pending::Wrapped(..) | Pending::Listed(..) => {
                self.plain_line(line, indent, pending)
            }
            // A log record of its own ends a quote a stray `"` seemed to open.
            Pending::Quote(..) | Pending::Escaped(_) if indent == 0 && starts_a_record(text) => {
                (Vec::new(), 0, None)
            }
            Pending::Quote(..) if text.is_empty() => keep(pending),
            // Past the bound a log's record has ended at an unindented line: a logger starts
            // each record at column 0, and a value's lines go on indented (YAML 1.2 7.3.1:
            // a quoted scalar's lines after its first are indented; klog's, after a tab).
            Pending::Quote(_, n) if !whole && n > QUOTE_LINES && indent == 0 => {
                (Vec::new(), 0, None)
            }
            Pending::Quote(q, n) => {
                // The count only says whether the bound is passed: the state stays one small
                // value however long the quote runs. A whole file (`diags`) has no bound.
                let more = Pending::Quote(q, if whole { n } else { n.saturating_add(1) });
                match closing(q, line) {
                    Some(i) => self.hide(line, indent, i - indent, Pending::None),
                    None => self.hide(line, indent, text.len(), more),
                }
            }
            Pending::Escaped(q) => match escaped_end(q, line) {
                Some((i, true)) if i >= indent => {
                    self.hide(line, indent, i - indent, Pending::None)
                }
                _ => (Vec::new(), 0, None),
            },
            Pending::Klog if line.first() == Some(&b'\t') => {
                self.hide(line, 1, line[1..].trim_ascii_end().len(), pending)
            }
            Pending::Item(..) if skip => keep(pending),
            Pending::Item(dash, col) if indent > dash => item_line(line, dash, col, indent),
            Pending::Object(n) => self.object_line(line, n),
            Pending::Header(s, e) => match table::columns(line, s, e) {
                Some((a, b)) => keep(Pending::Table(a, b)),
                None => (Vec::new(), 0, None),
            },
            Pending::Table(..) if text.is_empty() || indent == 0 && starts_a_record(text) => {
                (Vec::new(), 0, None)
            }
            Pending::Table(a, b) => self.table_row(line, a, b),
            // A line's next piece (`Rest`, `Line`, `Named`, `Doubled`); the items of a
            // credential's list and a dictionary's entries PowerShell prints (`list_line`);
            // `Under`, `Item`, `Klog` at a line not theirs, and `Within`, nothing.
            _ => self.next_piece(line, pending),
        }
    }

    /// A line after a secret's plain value (`Continued`, `Wrapped`, `Listed`): a blank one (a
    /// multi-line plain scalar may hold empty lines, YAML 1.2 7.3.3; a blank ends `Listed`),
    /// one indented more than its key and no entry of its own, and one indented to the value's
    /// column go on the value.
    fn plain_line(
        &self,
        line: &[u8],
        indent: usize,
        pending: Pending,
    ) -> (Vec<u8>, usize, Option<Pending>) {
        let text = line[indent..].trim_ascii_end();
        let (key, at) = match pending {
            Pending::Continued(d) => (d, None),
            Pending::Wrapped(d, v) | Pending::Listed(d, v) => (d, Some(v)),
            _ => return (Vec::new(), 0, None),
        };
        if text.is_empty() && matches!(pending, Pending::Listed(..)) {
            return (Vec::new(), 0, None);
        }
        if text.is_empty() {
            return (line.to_vec(), line.len(), Some(pending));
        }
        if at == Some(indent) || indent > key && !entry(text) {
            return self.hide(line, indent, text.len(), pending);
        }
        (Vec::new(), 0, None)
    }

    /// A line of a credential's list (`Items`, `Dashes`): its items go, up to the list's end;
    /// or of a dictionary's entries PowerShell prints (`entry_line`).
    fn list_line(
        &self,
        line: &[u8],
        indent: usize,
        p: Pending,
    ) -> (Vec<u8>, usize, Option<Pending>) {
        let text = line[indent..].trim_ascii_end();
        match p {
            Pending::Items(..) if indent == 0 && starts_a_record(text) => (Vec::new(), 0, None),
            Pending::Items(n, auth) => self.list_item_line(line, indent, n, auth),
            Pending::Dashes(..) if text.is_empty() => (line.to_vec(), line.len(), Some(p)),
            Pending::Dashes(d, auth) if indent > d || indent == d && text.starts_with(b"- ") => {
                let at = if text.starts_with(b"- ") {
                    indent + 2
                } else {
                    indent
                };
                self.hid.set(true);
                let items = unquoted_credentials(&line[at..indent + text.len()], auth);
                let out = [&line[..at], &items[..]].concat();
                (out, indent + text.len(), Some(p))
            }
            Pending::ListEntry | Pending::TableEntries(_) => self.entry_line(line, p),
            _ => (Vec::new(), 0, None),
        }
    }

    /// A line of a dictionary's entries PowerShell prints (`ListEntry`, `TableEntries`).
    fn entry_line(&self, line: &[u8], p: Pending) -> (Vec<u8>, usize, Option<Pending>) {
        let text = line.trim_ascii_end();
        let keep = |p| (line.to_vec(), line.len(), Some(p));
        match p {
            Pending::ListEntry => match self.lines.entry_value.find(line) {
                Some(m) => self.hide(
                    line,
                    m.end(),
                    // `entry_value` takes up blanks `text` trimmed (`Value : ` with none after).
                    text.len().saturating_sub(m.end()),
                    Pending::Listed(0, m.end()),
                ),
                None if self.lines.entry_key.is_match(line) => keep(p),
                None => (Vec::new(), 0, None),
            },
            Pending::TableEntries(_) if text.is_empty() => (Vec::new(), 0, None),
            Pending::TableEntries(_) if text.iter().all(|b| matches!(b, b'-' | b' ' | b'\t')) => {
                keep(p)
            }
            Pending::TableEntries(col) => {
                let col = usize::from(col);
                let name = text
                    .split(|b| b.is_ascii_whitespace())
                    .next()
                    .unwrap_or_default();
                // A row: its name at the line's start, blanks from it to the `Value` column
                // (or nothing after it). Anything else (a log's next line) ends the table, and
                // is read as any line is.
                let gap = text
                    .get(name.len()..col.min(text.len()))
                    .unwrap_or_default();
                let row = !name.is_empty()
                    && name.len() < col
                    && gap.iter().all(|b| matches!(b, b' ' | b'\t'));
                match row {
                    false => (Vec::new(), 0, None),
                    true if col < text.len() && self.lines.credential_name(name) => {
                        self.hide(line, col, text.len() - col, p)
                    }
                    true => keep(p),
                }
            }
            _ => (Vec::new(), 0, None),
        }
    }

    /// A line of a JSON list's items (`Items`): up to its `]` (the list's end) they go.
    fn list_item_line(
        &self,
        line: &[u8],
        indent: usize,
        n: u16,
        auth: bool,
    ) -> (Vec<u8>, usize, Option<Pending>) {
        let end = list_end(line, b']');
        let to = end
            .unwrap_or_else(|| line.trim_ascii_end().len())
            .max(indent);
        if end.is_none() && n >= MAX_LINES {
            return (Vec::new(), 0, None);
        }
        self.hid.set(true);
        let out = [&line[..indent], &list_items(&line[indent..to], auth)[..]].concat();
        (
            out,
            to,
            end.is_none().then_some(Pending::Items(n + 1, auth)),
        )
    }

    /// `line` with the `len` bytes from `indent` hidden as `REDACTED` (the rest after them
    /// redacted as any line's), `next` after it; said once (`hid_lines`).
    fn hide(
        &self,
        line: &[u8],
        indent: usize,
        len: usize,
        next: Pending,
    ) -> (Vec<u8>, usize, Option<Pending>) {
        self.hid.set(true);
        let out = [&line[..indent], REDACTED.as_bytes()].concat();
        let next = (next != Pending::None).then_some(next);
        (out, indent + len, next)
    }

    /// Whether lines were hidden whole as a secret's value carried from a line before, since
    /// the last call.
    pub fn hid_lines(&self) -> bool {
        self.hid.replace(false)
    }

    /// The whole `text`'s values that go on over lines, each line of them hidden as
    /// `redact_line` hides it: a secret's quote not closed on its line up to its closing
    /// quote (`Quote`, `Escaped`), klog's `key=<` block (`Klog`).
    pub(super) fn redact_carried(&self, text: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(text.len());
        let mut pending = Pending::None;
        for line in text.split_inclusive(|b| *b == b'\n') {
            let body = line.strip_suffix(b"\n").unwrap_or(line);
            let (head, used, kept) = match pending {
                Pending::None => (Vec::new(), 0, None),
                p => self.take(p, body, true),
            };
            out.extend_from_slice(&head);
            let rest = &body[used..];
            let (next, open) = kept.map_or_else(|| self.lines.carried(rest), |p| (p, None));
            pending = next;
            match open {
                // Nothing after the quote yet: the value is on the lines after.
                Some(at) if rest[at..].trim_ascii().is_empty() => out.extend_from_slice(rest),
                Some(at) => {
                    let end = rest.trim_ascii_end().len();
                    out.extend_from_slice(&rest[..at]);
                    out.extend_from_slice(REDACTED.as_bytes());
                    out.extend_from_slice(&rest[end..]);
                }
                None => out.extend_from_slice(rest),
            }
            out.extend_from_slice(&line[body.len()..]);
        }
        out
    }

    /// What a line's piece after one that left `pending` (`Rest`, `Line`, `Named`, `Doubled`)
    /// hides.
    fn next_piece(&self, line: &[u8], pending: Pending) -> (Vec<u8>, usize, Option<Pending>) {
        let all = line.trim_ascii_end().len();
        match pending {
            Pending::Rest(around) => self.rest_of_value(line, around),
            Pending::Line => self.hide(line, 0, all, pending),
            // After a header's name, only when its `:` begins the piece.
            Pending::Named if starts_with_colon(line) => self.hide(line, 0, all, Pending::Line),
            // The second `'` of a `''`: the value goes on to its closing `'`.
            Pending::Doubled if line.first() == Some(&b'\'') => match closing(b'\'', &line[1..]) {
                Some(i) => self.hide(line, 0, i + 1, Pending::None),
                None => self.hide(line, 0, all, Pending::Line),
            },
            _ => {
                let indent = line
                    .iter()
                    .take_while(|b| matches!(b, b' ' | b'\t'))
                    .count();
                self.list_line(line, indent, pending)
            }
        }
    }

    /// The part of a piece that goes on a value of many words the piece before cut (`Rest`).
    fn rest_of_value(&self, line: &[u8], around: Around) -> (Vec<u8>, usize, Option<Pending>) {
        match continued(line, around) {
            (len, true) => self.hide(line, 0, len, Pending::Rest(around)),
            (0, false) => (Vec::new(), 0, None),
            (len, false) => self.hide(line, 0, len, Pending::None),
        }
    }

    /// A row of a `Format-Table` whose columns from `a` to `b` are secrets': those go, the
    /// columns before them redacted as any text.
    fn table_row(&self, line: &[u8], a: u16, b: u16) -> (Vec<u8>, usize, Option<Pending>) {
        let from = usize::from(a).min(line.len());
        let to = usize::from(b).min(line.trim_ascii_end().len()).max(from);
        let mut out = self.redact(&line[..from]);
        let cell = &line[from..to];
        if cell.trim_ascii().is_empty() {
            out.extend_from_slice(cell);
        } else {
            out.extend_from_slice(REDACTED.as_bytes());
            // The next column stays in its place, or at least apart.
            let pad = cell.len().saturating_sub(REDACTED.len());
            let apart = usize::from(b != u16::MAX);
            out.extend(std::iter::repeat_n(b' ', pad.max(apart)));
        }
        (out, to, Some(Pending::Table(a, b)))
    }

    /// A line of an object whose name named a secret: its `value`'s, or the object's end.
    fn object_line(&self, line: &[u8], n: u16) -> (Vec<u8>, usize, Option<Pending>) {
        let Some(m) = self.lines.value.find(line) else {
            let open = memchr::memchr(b'}', line).is_none() && n < MAX_LINES;
            return (Vec::new(), 0, open.then_some(Pending::Object(n + 1)));
        };
        let mut out = self.redact(&line[..m.start()]);
        out.extend_from_slice(&line[m.start()..m.end()]);
        // Go's `%+v` of an `EnvVar` cut before its `Value:` (`{Name:X_PASSWORD ` ended the
        // piece before): the value up to ` ValueFrom:` or `}`, as `env::pairs` ends it.
        let go = line[m.start()..m.end()].trim_ascii_start() == b"Value:";
        if go && line.get(m.end()).is_some_and(|b| !b.is_ascii_whitespace()) {
            let (len, _) = continued(&line[m.end()..], Around::Struct);
            let (v, used, p) = self.hide(line, m.end(), len, Pending::None);
            out.extend_from_slice(&v[m.end()..]);
            return (out, used, p);
        }
        let (v, used, p) = value_at(line, m.end(), None);
        out.extend_from_slice(&v[..]);
        (out, used, p)
    }
}

/// A line of a block list item whose name named a secret (`dash`, `col`: its columns): its
/// `value:` key's value goes, and the lines under the key (a block scalar's, a continuation's).
fn item_line(
    line: &[u8],
    dash: usize,
    col: usize,
    indent: usize,
) -> (Vec<u8>, usize, Option<Pending>) {
    let state = Some(Pending::Item(dash, col));
    let key = &line[indent..];
    let key = key.strip_prefix(b"\"").or(key.strip_prefix(b"'"));
    let key = key.unwrap_or(&line[indent..]);
    let is_value = indent == col
        && key.len() >= 5
        && key[..5].eq_ignore_ascii_case(b"value")
        && matches!(
            key[5..].iter().find(|b| !matches!(b, b'"' | b'\'')),
            Some(b':')
        );
    if !is_value {
        return (Vec::new(), 0, state);
    }
    let colon = indent + memchr::memchr(b':', &line[indent..]).unwrap_or(0) + 1;
    if !matches!(line.get(colon), None | Some(b' ' | b'\t' | b'\r')) {
        return (Vec::new(), 0, state);
    }
    let (v, used, p) = value_at(line, colon, Some(col));
    ([&line[..colon], &v[..]].concat(), used, p)
}

/// Where a value opened by an escaped quote `\q` ends in `text`: at its closing `\q` (its
/// backslash's index, `true`), or at a bare `"` first (the JSON string holding it ends there,
/// `false`). A quote after three backslashes is one inside the value (`\\\"`), after two
/// the string's own.
fn escaped_end(q: u8, text: &[u8]) -> Option<(usize, bool)> {
    let mut run = 0;
    for (i, b) in text.iter().enumerate() {
        match *b {
            b'\\' => {
                run += 1;
                continue;
            }
            b'"' if run % 2 == 0 => return Some((i, false)),
            b if b == q && run % 4 == 1 => return Some((i - 1, true)),
            _ => {}
        }
        run = 0;
    }
    None
}

/// Whether a credential header's value (`after` its name and `:`, the name's match starting
/// with `first`, its key in quotes or not) runs to the end of `after`. A header inside a
/// string (`"Cookie: a=b"`, `\"Cookie: a=b\"`, `'Cookie: a=b'`) runs to that string's closing
/// quote, whatever commas it holds; a quoted key's value (`"Cookie": "a=b"`,
/// `'Cookie': 'a=b'`) and a flow mapping's (`{Cookie: a=b, x: y}`) to its own closing quote
/// when quoted, else to a `,` or `}`; a JSON list's items up to the `]`; Go's `%v` of an
/// http.Header (`Cookie:[a=b]`) up to its `]`; else (HTTP's own form) to the line's end. A
/// value not begun within `after` is open.
fn header_value_open(
    first: u8,
    quote: Option<regex::bytes::Match>,
    key_quoted: bool,
    after: &[u8],
) -> bool {
    // Go's `%#v` of an http.Header: its `[]string{` list's `}` ends it (a piece may end
    // inside the `[]string{`).
    if !after.is_empty() && b"[]string{".starts_with(after) {
        return true;
    }
    if let Some(items) = after.strip_prefix(b"[]string{") {
        return list_open(items, b'}');
    }
    if after.first() == Some(&b'[') {
        return list_open(after, b']');
    }
    match (quote, first, key_quoted) {
        // The header inside a string: the string's own closing quote ends it.
        (Some(q), _, false) if q.as_bytes().starts_with(b"\\") => {
            escaped_end(b'"', after).is_none()
        }
        (Some(_), _, false) => double_end(after).is_none(),
        (None, b'\'', false) => single_end(after).is_none(),
        // A quoted key's or a flow mapping's value: its own quotes, or a `,` or `}`.
        (Some(_), _, true) | (None, b'\'' | b'{', _) => own_value_open(after),
        _ => true,
    }
}

/// Whether a value after a key (`after` its `:`) runs to the end of `after`: in quotes, up to
/// the closing one (backslash runs counted); else up to a `,` or `}`.
fn own_value_open(after: &[u8]) -> bool {
    let t = after.trim_ascii_start();
    if let Some(rest) = t.strip_prefix(br#"\\\""#) {
        return twice_escaped_end(rest).is_none();
    }
    if let Some(rest) = t.strip_prefix(b"\\\"") {
        return escaped_end(b'"', rest).is_none();
    }
    if t.len() > 7 && t[..7].eq_ignore_ascii_case(b"digest ") {
        return digest_open(&t[7..]);
    }
    match t.first() {
        None => true,
        Some(b'"') => double_end(&t[1..]).is_none(),
        Some(b'\'') => single_end(&t[1..]).is_none(),
        Some(_) => !t.iter().any(|b| matches!(b, b',' | b'}')),
    }
}

/// The names of the headers whose values are credentials (`headers::VALUE_HEADERS` and
/// `Authorization`'s).
const HEADER_NAMES: [&str; 6] = [
    "set-cookie",
    "cookie",
    "proxy-authorization",
    "authorization",
    "x-api-key",
    "x-auth-token",
];

/// Whether `piece` ends with a credential header's name (its quotes, backslashes and blanks
/// after it), so that its `:` and value are in the next piece.
fn header_name_at_end(piece: &[u8]) -> bool {
    let end = piece
        .iter()
        .rposition(|b| !(b.is_ascii_whitespace() || b"\\\"'".contains(b)))
        .map_or(0, |i| i + 1);
    let word = &piece[..end];
    HEADER_NAMES.iter().any(|n| {
        let Some(at) = word.len().checked_sub(n.len()) else {
            return false;
        };
        // A word that only ends with a name (`XsrfCookie`) is another's.
        let bound =
            at == 0 || !(word[at - 1].is_ascii_alphanumeric() || b"_-".contains(&word[at - 1]));
        bound && word[at..].eq_ignore_ascii_case(n.as_bytes())
    })
}

/// Whether `piece` begins with a `:` (after blanks and a name's closing quote, escaped or
/// not): a header's name that ended the piece before is one (`Pending::Named`).
fn starts_with_colon(piece: &[u8]) -> bool {
    let skip = |b: &u8| b.is_ascii_whitespace() || b"\\\"'".contains(b);
    let at = piece.iter().position(|b| !skip(b));
    match at.map(|i| (piece[i], &piece[i + 1..])) {
        Some((b':', _)) => true,
        // After `=` only a quoted value is a header's (`Cookie = "a=b"`).
        Some((b'=', rest)) => matches!(rest.trim_ascii_start().first(), Some(b'"' | b'\'')),
        _ => false,
    }
}

/// Whether a list (`after` from its opening) runs to the end of `after`: its `close` outside
/// quotes ends it.
fn list_open(after: &[u8], close: u8) -> bool {
    list_end(after, close).is_none()
}

/// Where a list's `close` outside quotes is in `text` (from inside the list).
fn list_end(text: &[u8], close: u8) -> Option<usize> {
    let (mut inside, mut run) = (false, 0usize);
    for (i, b) in text.iter().enumerate() {
        match b {
            b'\\' => {
                run += 1;
                continue;
            }
            b'"' if run % 2 == 0 => inside = !inside,
            b if *b == close && !inside => return Some(i),
            _ => {}
        }
        run = 0;
    }
    None
}

/// Whether `text` (a line from its first non-blank) is a mapping entry of its own: a key and
/// its `:` then a blank or the end, after a sequence's `- ` or not (YAML 1.2 7.3.3: a plain
/// scalar's line holds no `: `, so no such line goes on one).
fn entry(text: &[u8]) -> bool {
    let text = text
        .strip_prefix(b"- ")
        .map_or(text, |t| t.trim_ascii_start());
    let key = text
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || b"_.-\"'".contains(b))
        .count();
    let rest = text[key..].trim_ascii_start();
    key > 0 && rest.first() == Some(&b':') && rest.get(1).is_none_or(|b| matches!(b, b' ' | b'\t'))
}

/// What opens the text of a value's `Around` (`Pending::Within`).
fn opener(around: Around) -> &'static [u8] {
    match around {
        Around::Map => b"map[",
        _ => b"{",
    }
}
