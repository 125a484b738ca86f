//! Taking secrets out of text that leaves the node (`diags`): the values of the secret files
//! install wrote, wherever they appear and whatever their shape, and anything shaped like a
//! secret (a service-account JWT, a PEM private key, a bearer token, a `token:` or
//! `password=` value, an environment variable's value when its name names a secret) even
//! when no file holds it.

mod docker;
mod env;
mod headers;
mod keys;
#[cfg(test)]
mod leak_tests;
mod lines;
mod names;
mod plain;
mod quotes;
mod record;
#[cfg(test)]
mod review3_tests;
#[cfg(test)]
mod review4_tests;
#[cfg(test)]
mod review5_tests;
#[cfg(test)]
mod review6_tests;
#[cfg(test)]
mod review7_tests;
#[cfg(test)]
mod review_tests;
mod shapes;
mod table;
mod tail;
#[cfg(test)]
mod upstream_tests;
mod yaml;

pub use keys::pem_body_line;
pub use lines::{Pending, QUOTE_LINES};
pub use names::REDACTED;
pub use plain::Around;

use headers::{header_list, redact_header_lists};
use keys::{PEM_END, PEM_KEY, by_line, cut_head, redact_keys};
use yaml::{block_scalar_head, redact_block_scalars};

use regex::bytes::Regex;

/// Whether a word (lower case) leads into a secret's value: a name `shapes` knows, an HTTP
/// credential's scheme, or a `name` or `value` key (an `env:` item's). The logs cut a long line before such a word, never after it.
pub fn leads_into_value(word: &[u8]) -> bool {
    const ENDS: [&[u8]; 24] = [
        b"token",
        b"password",
        b"passwd",
        b"passphrase",
        b"private_key",
        b"private-key",
        b"privatekey",
        b"apikey",
        b"api_key",
        b"api-key",
        b"accesskey",
        b"access_key",
        b"access-key",
        b"key-data",
        b"etcd_key",
        b"credential",
        b"credentials",
        b"authorization",
        b"bearer",
        b"basic",
        // A Docker config's `"auth":"` (`docker::auths`).
        b"auth",
        // An `env:` item's `"name":"X_TOKEN"` and `"value":"X"`, cut from their keys; a
        // protobuf map entry's `key:"etcdpassword"` before its `value:` (`env::pairs`).
        b"name",
        b"key",
        b"value",
    ];
    ENDS.iter().any(|e| word.ends_with(e)) || memchr::memmem::find(word, b"secret").is_some()
}

/// Replaces secrets in bytes.
pub struct Redactor {
    /// The values of known secrets, longest first (so a value inside a longer one goes with
    /// the longer).
    known: Vec<String>,
    shapes: Vec<(Regex, &'static str)>,
    /// `block_scalar_head`'s.
    block: Regex,
    /// `env::pairs`'.
    pairs: Vec<Regex>,
    /// `plain::plain_key`'s.
    plain: Regex,
    /// `header_list`'s: a list, an `Authorization` item, any other item.
    headers: [Regex; 3],
    /// `docker::auths`'.
    auths: [Regex; 2],
    /// `PEM_KEY`, `PEM_END`.
    pem: [Regex; 2],
    /// What a line leaves pending (`redact_line`).
    lines: lines::Leads,
    /// Whether lines were hidden whole since it was last asked (`hid_lines`).
    hid: std::cell::Cell<bool>,
}

impl Redactor {
    /// A redactor that takes out, besides every secret shape, the secret values found in
    /// `secret_files` (the texts of files only SYSTEM and Administrators may read).
    pub fn new(secret_files: &[String]) -> Self {
        let mut values: Vec<String> = secret_files.iter().flat_map(|t| values_in(t)).collect();
        values.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        values.dedup();
        // Cannot fail: the patterns are the literals above, and every unit test below builds
        // them.
        let build = |re: &str| {
            Regex::new(re).unwrap_or_else(|e| panic!("the built-in pattern {re} is valid: {e}"))
        };
        let shapes = shapes::all()
            .into_iter()
            .map(|(re, with)| (build(&re), with))
            .collect();
        Self {
            known: values,
            shapes,
            block: build(&block_scalar_head()),
            pairs: env::pairs().iter().map(|re| build(re)).collect(),
            plain: build(&plain::plain_key()),
            headers: header_list().map(|re| build(&re)),
            auths: docker::auths().map(|re| build(&re)),
            pem: [build(PEM_KEY), build(PEM_END)],
            lines: lines::Leads::new(build),
            hid: std::cell::Cell::new(false),
        }
    }

    pub fn redact(&self, bytes: &[u8]) -> Vec<u8> {
        let mut out = bytes.to_vec();
        for value in &self.known {
            out = replace_literal(&out, value.as_bytes(), REDACTED.as_bytes());
        }
        let [pem, end] = &self.pem;
        out = redact_keys(pem, end, &out);
        out = self.redact_carried(&out);
        out = redact_block_scalars(&self.block, &out);
        out = env::redact_block_items(&out, REDACTED.as_bytes());
        for re in &self.pairs {
            out = env::redact_pairs(re, &out, REDACTED.as_bytes());
        }
        out = redact_header_lists(&self.headers, &out);
        out = docker::redact_auths(&self.auths, &out);
        out = plain::redact_plain_values(&self.plain, &out);
        for (re, with) in &self.shapes {
            out = re.replace_all(&out, with.as_bytes()).into_owned();
        }
        out
    }
}

impl Redactor {
    /// `tail`, a file's last part cut at a line's start (`diags`' log tails), redacted: its
    /// head's lines that a private key's body can hold are hidden (`cut_head`), as a tail cut
    /// inside a key's block with neither its BEGIN nor its END in it starts with them; so is
    /// the end of a quoted or klog multi-line value begun before the cut (`tail::cut_value`),
    /// as its name, cut off, may have been a secret's.
    pub fn redact_tail(&self, tail: &[u8]) -> Vec<u8> {
        let head = cut_head(tail);
        let mut out = by_line(&tail[..head]);
        let rest = &tail[head..];
        let value = tail::cut_value(rest);
        let whole = rest[..value]
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |i| i + 1);
        out.extend_from_slice(&by_line(&rest[..whole]));
        if value > whole {
            // Its line's indentation stays, as `by_line` keeps it.
            let line = &rest[whole..value];
            let indent = line.iter().take_while(|b| matches!(b, b' ' | b'\t'));
            out.extend_from_slice(&line[..indent.count()]);
            out.extend_from_slice(REDACTED.as_bytes());
        }
        out.extend_from_slice(&self.redact(&rest[value..]));
        out
    }
}

/// `haystack` with every occurrence of `needle` (not empty) replaced by `with`.
fn replace_literal(haystack: &[u8], needle: &[u8], with: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(haystack.len());
    let mut rest = haystack;
    while let Some(at) = rest.windows(needle.len()).position(|w| w == needle) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(with);
        rest = &rest[at + needle.len()..];
    }
    out.extend_from_slice(rest);
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
        if line.starts_with("-----BEGIN ") {
            in_pem = true;
            continue;
        }
        if line.starts_with("-----END ") {
            in_pem = false;
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

#[cfg(test)]
pub(crate) mod tests;
