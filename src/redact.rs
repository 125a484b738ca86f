//! Taking secrets out of text that leaves the node (`diags`' zip, `logs`' lines): the values
//! of the secret files install wrote, wherever they appear (`known`); a JSON document or line
//! by its keys (`structured`); and what the programs whose output `diags` and `logs` read
//! write of a secret, each shape tied to the source line that writes it (`shapes`).

mod keys;
mod shapes;

#[cfg(test)]
mod cut_tests;
#[cfg(test)]
mod structured_tests;
#[cfg(test)]
mod upstream_tests;

pub use keys::pem_body_line;
pub use shapes::{Kind, REDACTED, leads_into_value};

use serde::{Deserialize, Serialize};
use std::ops::Range;

/// What a piece of a line longer than a chunk (`logs` cuts such a line: `installed::logs::cut`)
/// leaves for the next piece: a secret's value that ran to the piece's end goes on in the next
/// one, up to what ends a value of its kind. A whole line leaves nothing: no shape kept here
/// carries a secret over a line break (a private key's block is `installed::logs::key_line`'s).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Pending {
    #[default]
    None,
    Rest(Kind),
}

/// `text` (a URL a user gave, a message naming one) with what the shapes find hidden, for
/// output: a SAS URL's `sig=`, and a URL's whole userinfo: reqwest sends its user and password
/// as basic auth (`async_impl/request.rs`, `extract_authority`, 0.13.5), and a token is given
/// as either (`https://TOKEN@host/`, `https://TOKEN:@host/`, GitHub's
/// `https://TOKEN:x-oauth-basic@github.com/`).
pub fn shown(text: &str) -> String {
    static USERINFO: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        let re = r#"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/?#"'<>]+@"#;
        // Cannot fail: a literal pattern, built by the tests of `shown`.
        regex::Regex::new(re).unwrap_or_else(|e| panic!("the built-in pattern {re} is valid: {e}"))
    });
    let text = USERINFO.replace_all(text, format!("${{1}}{REDACTED}@"));
    String::from_utf8_lossy(&Redactor::new(&[]).redact(text.as_bytes())).into_owned()
}

/// Replaces secrets in bytes.
pub struct Redactor {
    /// The values of known secrets, longest first (a value inside a longer one goes with it).
    known: Vec<Vec<u8>>,
}

impl Redactor {
    /// A redactor that takes out, besides every shape, the secret values found in
    /// `secret_files` (the texts of files only SYSTEM and Administrators may read).
    pub fn new(secret_files: &[String]) -> Self {
        let mut known: Vec<Vec<u8>> = secret_files
            .iter()
            .flat_map(|t| values_in(t))
            .map(String::into_bytes)
            .collect();
        known.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        known.dedup();
        Self { known }
    }

    /// A whole text (a `diags` member): a JSON document by its keys, else its private keys'
    /// blocks (one `<redacted>` a line) and then each line.
    pub fn redact(&self, text: &[u8]) -> Vec<u8> {
        if let Some(out) = self.structured(text) {
            return out;
        }
        let text = keys::redact_keys(text);
        let mut out = Vec::with_capacity(text.len());
        for line in text.split_inclusive(|b| *b == b'\n') {
            let body = line.strip_suffix(b"\n").unwrap_or(line);
            out.extend_from_slice(&self.redact_line(Pending::None, body).0);
            out.extend_from_slice(&line[body.len()..]);
        }
        out
    }

    /// `tail`, a file's last part cut at a line's start (`diags`' log tails): a tail cut inside
    /// a private key's block, its BEGIN before the cut, starts with lines a key's body can
    /// hold (`keys::cut_head`): those are hidden too.
    pub fn redact_tail(&self, tail: &[u8]) -> Vec<u8> {
        let head = keys::cut_head(tail);
        let mut out = keys::by_line(&tail[..head]);
        out.extend_from_slice(&self.redact(&tail[head..]));
        out
    }

    /// One line (without its line break), after what the piece before it left.
    pub fn redact_line(&self, pending: Pending, line: &[u8]) -> (Vec<u8>, Pending) {
        (self.text(pending, line, false).0, Pending::None)
    }

    /// A piece of a line cut before its end (`logs`' `cut`): a value running to its end goes
    /// on in the next piece (`Pending::Rest`).
    pub fn redact_piece(&self, pending: Pending, piece: &[u8]) -> (Vec<u8>, Pending) {
        self.text(pending, piece, true)
    }

    /// Where a piece of a long line may end, given where `cut` would end it: never inside a
    /// known secret's value, so that neither piece holds a part of it that the other's
    /// replacement would miss: before such a value (or after it, when it starts the piece).
    pub fn clear_of_known(&self, piece: &[u8], mut end: usize) -> usize {
        for _ in 0..self.known.len() + 1 {
            let Some(start) = self.known_across(piece, end) else {
                return end;
            };
            end = match start {
                0 => self
                    .known
                    .iter()
                    .filter(|v| piece.starts_with(v))
                    .map(Vec::len)
                    .max()
                    .unwrap_or(piece.len()),
                s => s,
            };
        }
        end
    }

    /// The earliest start of a known value, or of a part of one that runs to the piece's end,
    /// that `end` falls inside.
    fn known_across(&self, piece: &[u8], end: usize) -> Option<usize> {
        let mut first = None;
        for v in &self.known {
            for start in end.saturating_sub(v.len() - 1)..end {
                let seen = &piece[start..piece.len().min(start + v.len())];
                if start + v.len() > end && v.starts_with(seen) {
                    first = Some(first.map_or(start, |f: usize| f.min(start)));
                    break;
                }
            }
        }
        first
    }

    /// `text` (a line, a piece of one, or a JSON document's string) redacted: what the piece
    /// before left goes first, then known values and every shape; a whole line that is a
    /// JSON document goes by its keys. Also what the next piece goes on with.
    fn text(&self, pending: Pending, text: &[u8], piece: bool) -> (Vec<u8>, Pending) {
        let mut hidden = Vec::new();
        if let Pending::Rest(kind) = pending {
            match kind.end(text, 0) {
                Some(r) => hidden.push(r),
                None => {
                    let next = if piece { pending } else { Pending::None };
                    return (REDACTED.as_bytes().to_vec(), next);
                }
            }
        } else if !piece && let Some(out) = self.structured(text) {
            return (out, Pending::None);
        }
        for v in &self.known {
            for at in memchr::memmem::find_iter(text, v) {
                hidden.push(at..at + v.len());
            }
        }
        let open = shapes::SHAPES.find(text, &mut hidden);
        let next = match open {
            Some(kind) if piece => Pending::Rest(kind),
            _ => Pending::None,
        };
        (replace(text, hidden), next)
    }

    /// A JSON document (a `diags` member, a line that is one) redacted by its keys, `None`
    /// when `text` is none: the values under a key naming a secret (`shapes::secret_key`), an
    /// `env` item's `value` whose `name` names one (`shapes::names_a_secret`), every other
    /// string as a text (it may hold a log line, a command line, JSON again). Written back
    /// indented as it was or on one line; as it was when nothing in it is a secret.
    fn structured(&self, text: &[u8]) -> Option<Vec<u8>> {
        let t = text.trim_ascii();
        if !matches!(t.first(), Some(b'{' | b'[')) {
            return None;
        }
        let mut v: serde_json::Value = serde_json::from_slice(t).ok()?;
        let before = v.clone();
        self.walk(&mut v, false);
        if v == before {
            return Some(text.to_vec());
        }
        let body = if t.contains(&b'\n') {
            serde_json::to_vec_pretty(&v)
        } else {
            serde_json::to_vec(&v)
        };
        let lead = text.len() - text.trim_ascii_start().len();
        let trail = text.trim_ascii_end().len();
        Some([&text[..lead], &body.ok()?, &text[trail..]].concat())
    }

    fn walk(&self, v: &mut serde_json::Value, secret: bool) {
        use serde_json::Value;
        match v {
            Value::String(s) if secret && !s.is_empty() => *s = REDACTED.into(),
            Value::String(s) => {
                let out = self.redact(s.as_bytes());
                *s = String::from_utf8_lossy(&out).into_owned();
            }
            Value::Number(_) | Value::Bool(_) if secret => *v = REDACTED.into(),
            Value::Array(items) => items.iter_mut().for_each(|x| self.walk(x, secret)),
            Value::Object(m) => {
                let env = m
                    .get("name")
                    .and_then(Value::as_str)
                    .is_some_and(|n| shapes::names_a_secret(n.as_bytes()));
                for (k, x) in m.iter_mut() {
                    let named = shapes::secret_key(k.as_bytes()) || (env && k == "value");
                    self.walk(x, secret || named);
                }
            }
            _ => {}
        }
    }
}

/// `text` with each range in `hidden` (they may overlap) replaced by one `REDACTED`.
fn replace(text: &[u8], mut hidden: Vec<Range<usize>>) -> Vec<u8> {
    hidden.retain(|r| r.start < r.end);
    hidden.sort_by_key(|r| r.start);
    let mut out = Vec::with_capacity(text.len());
    let mut done = 0;
    for r in hidden {
        if r.end <= done {
            continue;
        }
        if r.start >= done {
            out.extend_from_slice(&text[done..r.start]);
            out.extend_from_slice(REDACTED.as_bytes());
        }
        done = r.end;
    }
    out.extend_from_slice(&text[done.min(text.len())..]);
    out
}

/// The secret values in a secret file: a value named as a secret (`token:`,
/// `client-key-data:`, `password:`), each line of a PEM body, or the whole file when it is
/// one word (a token file). Values shorter than 8 characters are not taken: they would take
/// ordinary words out of everything else.
fn values_in(text: &str) -> Vec<String> {
    const MIN: usize = 8;
    let mut out = Vec::new();
    let trimmed = text.trim();
    if !trimmed.is_empty() && !trimmed.contains(char::is_whitespace) {
        out.push(trimmed.to_owned());
    }
    let mut in_pem = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("-----BEGIN ") || line.starts_with("-----END ") {
            in_pem = line.starts_with("-----BEGIN ");
            continue;
        }
        if in_pem {
            out.push(line.to_owned());
            continue;
        }
        let Some((key, value)) = line.split_once([':', '=']) else {
            continue;
        };
        let key = key
            .trim()
            .trim_matches(['"', '\'', '-', ' '])
            .to_ascii_lowercase();
        if ["token", "password", "passphrase", "secret", "key-data"]
            .iter()
            .any(|k| key.contains(k))
        {
            out.push(value.trim().trim_matches(['"', '\'', ',']).to_owned());
        }
    }
    out.retain(|v| v.len() >= MIN);
    out
}
