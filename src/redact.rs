//! Taking secrets out of text that leaves the node (`diags`): the values of the secret files
//! install wrote, wherever they appear and whatever their shape, and anything shaped like a
//! secret (a service-account JWT, a PEM private key, a bearer token, a `token:` or
//! `password=` value) even when no file holds it.

use regex::bytes::Regex;

/// What replaces a secret.
pub const REDACTED: &str = "<redacted>";

/// Secrets recognised by their shape. ASCII only (`-u`): the input may be any bytes.
const SHAPES: &[(&str, &str)] = &[
    // A PEM private key block, whole.
    (
        r"(?s-u)-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----",
        REDACTED,
    ),
    // A JWT (service-account tokens, TokenRequest answers).
    (
        r"(?-u)eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*",
        REDACTED,
    ),
    // An HTTP bearer credential.
    (r"(?i-u)(bearer\s+)[A-Za-z0-9._~+/=-]{4,}", "${1}<redacted>"),
    // A value named as a secret: `token: X`, `"password": "X"`, `client-key-data: X`.
    (
        r#"(?i-u)((?:token|password|passwd|secret|client-key-data|key-data|etcd_key)["']?\s*[:=]\s*["']?)[^\s"',{}\[\]]+"#,
        "${1}<redacted>",
    ),
];

/// Replaces secrets in bytes.
pub struct Redactor {
    /// The values of known secrets, longest first (so a value inside a longer one goes with
    /// the longer).
    known: Vec<String>,
    shapes: Vec<(Regex, &'static str)>,
}

impl Redactor {
    /// A redactor that takes out, besides every secret shape, the secret values found in
    /// `secret_files` (the texts of files only SYSTEM and Administrators may read).
    pub fn new(secret_files: &[String]) -> Self {
        let mut values: Vec<String> = secret_files.iter().flat_map(|t| values_in(t)).collect();
        values.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        values.dedup();
        let shapes = SHAPES
            .iter()
            .map(|(re, with)| {
                // Cannot fail: the patterns are the literals above, and every unit test below
                // builds them.
                let re = Regex::new(re)
                    .unwrap_or_else(|e| panic!("the built-in pattern {re} is valid: {e}"));
                (re, *with)
            })
            .collect();
        Self {
            known: values,
            shapes,
        }
    }

    pub fn redact(&self, bytes: &[u8]) -> Vec<u8> {
        let mut out = bytes.to_vec();
        for value in &self.known {
            out = replace_literal(&out, value.as_bytes(), REDACTED.as_bytes());
        }
        for (re, with) in &self.shapes {
            out = re.replace_all(&out, with.as_bytes()).into_owned();
        }
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
        if ["token", "password", "secret", "key-data"]
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
mod tests {
    use super::*;

    fn redacted(r: &Redactor, s: &str) -> String {
        String::from_utf8(r.redact(s.as_bytes())).expect("utf8")
    }

    #[test]
    fn known_values_go_wherever_they_appear() {
        let kubeconfig = "users:\n- name: calico-node\n  user:\n    token: s3cr3t-opaque-value\n";
        let r = Redactor::new(&[kubeconfig.to_owned()]);
        let log = "2026 refreshed: wrote s3cr3t-opaque-value to the file\n";
        let out = redacted(&r, log);
        assert!(!out.contains("s3cr3t"), "{out}");
        assert!(out.contains("wrote <redacted> to the file"), "{out}");
    }

    #[test]
    fn shapes_go_without_a_file_that_holds_them() {
        let r = Redactor::new(&[]);
        let key = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIabc\n-----END EC PRIVATE KEY-----";
        let text = format!(
            "a {key} b\nAuthorization: Bearer abc.def-123\n{{\"token\": \"opaque1234\", \"token_expires\": \"2026\"}}\njwt eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl end\nclient-key-data: LS0tLS1CRUdJTg=="
        );
        let out = redacted(&r, &text);
        for gone in [
            "MHcCAQ",
            "abc.def-123",
            "opaque1234",
            "eyJhbGciOi",
            "LS0tLS1CRUdJTg",
        ] {
            assert!(!out.contains(gone), "{gone} survived: {out}");
        }
        assert!(out.contains("\"token_expires\": \"2026\""), "{out}");
        assert!(out.contains("a <redacted> b"), "{out}");
    }

    #[test]
    fn ordinary_words_and_the_ca_certificate_stay() {
        let r = Redactor::new(&["token: short\n".to_owned()]);
        let out = redacted(&r, "short words and \"token\": {\"expires\": 1}");
        assert_eq!(out, "short words and \"token\": {\"expires\": 1}");
    }
}
