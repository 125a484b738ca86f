//! What the programs whose output `diags` and `logs` read write of a secret, each shape with
//! the source that writes it (the lines themselves, as each writes them, are in
//! `upstream_tests.rs`): a name naming a secret and its value, the few phrases that name one
//! in words, and the secrets that carry their own shape (a JWT, a URL's password, a bearer
//! token, an Azure SAS signature).

use regex::bytes::Regex;
use serde::{Deserialize, Serialize};
use std::ops::Range;
use std::sync::LazyLock;

/// What replaces a secret.
pub const REDACTED: &str = "<redacted>";

/// The names whose value is a secret, as a regex alternation: a name ending in one of these
/// (`token`, `etcdpassword`, `client-key-data`); one that merely begins with one
/// (`token_expires`, `BearerTokenFile`) is no secret's. Beyond Calico's own: Azure Storage's
/// `AccountKey`, API Management's `Ocp-Apim-Subscription-Key`, kubeadm's `--certificate-key`,
/// AWS SigV4's `Signature=`, HTTP `Authorization` (RFC 9110 11.6.2).
const NAMES: &str = r"(?:token|password|passwd|passphrase|secret|api[_-]?key|access[_-]?key|private[_-]?key|etcd[_-]?key|certificate[_-]?key|subscription[_-]?key|accountkey|key-data|credentials?|signature|authorization)";

/// How a secret's value ends, by how it is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Kind {
    /// Not begun yet (its name ended a piece): its first byte tells its kind.
    Open,
    /// A word: up to a blank, a quote, `\`, `,;&<>{}[]` (logrus' `key=value`, a URL's query,
    /// a connection string's `;`, a flag's value).
    Word,
    /// In this quote (`"`, `\"` escaped, `'` with `''` inside: PowerShell's verbatim
    /// string), up to the closing one.
    Quote(u8),
    /// In `\"` (a quoted string inside a quoted string), up to the closing `\"`.
    Escaped,
    /// Go's `%v` and `%+v` of a map or struct (`map[a:x b:y]`, `{A:x B:y}`), which quote
    /// nothing: up to the next ` name:` or `, name:`, or the `]` or `}` that closes it.
    Fields,
    /// `Fields` whose piece ended at a blank: a `name:` beginning the next piece is the next
    /// field's (the blank was ` name:`'s).
    FieldsAfterBlank,
    /// gogo protobuf's `String()` of a core/v1 `EnvVar` (`&EnvVar{Name:X,Value:Y,ValueFrom:nil,}`,
    /// k8s.io/api core/v1 generated.pb.go), which writes the value as it is, commas and all:
    /// up to `,ValueFrom:`.
    Env,
    /// To the line's end.
    Line,
}

impl Kind {
    /// The value of this kind that begins at `at` in `text` (inside its quotes), and the kind
    /// the next piece goes on with when it runs to the end of `text`.
    pub(super) fn value(self, text: &[u8], at: usize) -> (Range<usize>, Option<Kind>) {
        let rest = &text[at..];
        let end = match self {
            Kind::Open => return open(text, at, Kind::Word),
            Kind::Word => rest
                .iter()
                .position(|b| b.is_ascii_whitespace() || b"\"'\\,;&<>{}[]".contains(b)),
            Kind::Quote(q) => quote_end(q, rest),
            Kind::Escaped => memchr::memmem::find(rest, b"\\\""),
            Kind::Fields => fields_end(rest),
            Kind::FieldsAfterBlank => {
                fields_end(&[b" ", rest].concat()).map(|e| e.saturating_sub(1))
            }
            Kind::Env => memchr::memmem::find(rest, b",ValueFrom:"),
            Kind::Line => None,
        };
        match end {
            Some(e) => (at..at + e, None),
            None if matches!(self, Kind::Fields | Kind::FieldsAfterBlank)
                && text.ends_with(b" ") =>
            {
                (at..text.len(), Some(Kind::FieldsAfterBlank))
            }
            None => (at..text.len(), Some(self.continued())),
        }
    }

    /// The kind a value's next piece goes on with.
    fn continued(self) -> Kind {
        match self {
            Kind::FieldsAfterBlank => Kind::Fields,
            k => k,
        }
    }

    /// The rest of a value a piece before began: from the start of `text`.
    pub(super) fn end(self, text: &[u8], at: usize) -> Option<Range<usize>> {
        match self.value(text, at) {
            (r, None) => Some(r),
            (_, Some(_)) => None,
        }
    }
}

/// A value that begins at `at`: its opening quote, if any, gives its kind (`unquoted` else);
/// one that begins with `<` is upstream's own mask (`<redacted>`, client-go's `<masked>`) or
/// Go's `<nil>`, no value.
fn open(text: &[u8], at: usize, unquoted: Kind) -> (Range<usize>, Option<Kind>) {
    match &text[at..] {
        [] => (at..at, Some(Kind::Open)),
        [b'\\', b'"', ..] => Kind::Escaped.value(text, at + 2),
        [q @ (b'"' | b'\''), ..] => Kind::Quote(*q).value(text, at + 1),
        [b'<', ..] => (at..at, None),
        _ => unquoted.value(text, at),
    }
}

/// Where a value in the quote `q` ends: `"` after `\` escapes, `''` is a quote inside `'`.
fn quote_end(q: u8, rest: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i < rest.len() {
        match rest[i] {
            b'\\' if q == b'"' => i += 1,
            b'\'' if q == b'\'' && rest.get(i + 1) == Some(&b'\'') => i += 1,
            b if b == q => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

/// Where a value of Go's `%v`/`%+v`/`%#v` fields ends (`Kind::Fields`).
fn fields_end(rest: &[u8]) -> Option<usize> {
    let name = |t: &[u8]| {
        let n = t
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || b"_.-".contains(b))
            .count();
        n > 0 && t.get(n) == Some(&b':')
    };
    (0..rest.len()).find(|&i| match rest[i] {
        b']' | b'}' => true,
        b' ' => name(&rest[i + 1..]),
        b',' => rest.get(i + 1) == Some(&b' ') && name(&rest[i + 2..]),
        _ => false,
    })
}

/// Whether a variable's name says its value is a secret: Calico's own rule, which Felix and
/// Typha follow to hide `FELIX_`/`TYPHA_` variables' values in their logs
/// (projectcalico/calico v3.32.1 libcalico-go/lib/logutils/sensitive.go, `IsSensitiveParam`):
/// a name ending in `file` or `path` names a path; otherwise one holding passw, passphrase,
/// token, bearer, secret, credential, auth, cookie, private, key, cert or kubeconfig.
pub fn names_a_secret(name: &[u8]) -> bool {
    let name = name.to_ascii_lowercase();
    if name.ends_with(b"file") || name.ends_with(b"path") {
        return false;
    }
    const WORDS: [&[u8]; 12] = [
        b"passw",
        b"passphrase",
        b"token",
        b"bearer",
        b"secret",
        b"credential",
        b"auth",
        b"cookie",
        b"private",
        b"key",
        b"cert",
        b"kubeconfig",
    ];
    WORDS
        .iter()
        .any(|w| memchr::memmem::find(&name, w).is_some())
}

/// A name ending in a secret's (`NAMES`).
static NAME_END: LazyLock<Regex> = LazyLock::new(|| build(&format!(r"(?i-u){NAMES}$")));

/// Whether a JSON key names a secret (`NAMES`).
pub fn secret_key(key: &[u8]) -> bool {
    NAME_END.is_match(key)
}

/// Whether a word (lower case, its quotes and `:`/`=` aside) leads into a secret's value: a
/// name `NAMES` ends, the scheme of an `Authorization` value, a key of the pairs in
/// `Shapes::named_by`, the words of the phrases that name a secret before its value
/// (Calico's `Environment variable X is already set: V`, `ConvertTo-SecureString -String V`).
/// `logs` cuts a long line before such words, never after them (`installed::logs::cut`).
pub fn leads_into_value(word: &[u8]) -> bool {
    const WORDS: [&[u8]; 23] = [
        b"bearer",
        b"basic",
        b"aws4-hmac-sha256",
        b"name",
        b"value",
        b"key",
        b"sig",
        b"environment",
        b"variable",
        b"is",
        b"not",
        b"set",
        b"set.",
        b"already",
        b"setting",
        b"it",
        b"to",
        b"the",
        b"default",
        b"convertto-securestring",
        b"-string",
        b"-asplaintext",
        b"-force",
    ];
    WORDS.contains(&word) || NAME_END.is_match(word)
}

fn build(re: &str) -> Regex {
    // Cannot fail: the patterns are the literals here, each built by every test.
    Regex::new(re).unwrap_or_else(|e| panic!("the built-in pattern {re} is valid: {e}"))
}

/// The shapes, built once.
pub(super) static SHAPES: LazyLock<Shapes> = LazyLock::new(Shapes::new);

pub(super) struct Shapes {
    /// A name naming a secret, then `:` or `=` (group 1: the name, 2: the separator).
    named: Regex,
    /// A flag naming a secret, then its value after blanks (`--certificate-key HEX`,
    /// `--token X`: kubeadm's, kubelet's and any Go program's flags, spf13/pflag).
    flag: Regex,
    /// PowerShell's `ConvertTo-SecureString` of a plain text (learn.microsoft.com,
    /// ConvertTo-SecureString: `[-String] <String> -AsPlainText [-Force]`): the text.
    secure_string: Regex,
    /// Pairs whose name (group `n`) is written apart from its value, Calico's rule deciding
    /// (`names_a_secret`), and how the value ends.
    named_by: Vec<(Regex, Kind)>,
    /// Secrets of their own shape: the group hidden.
    spans: Vec<(Regex, usize)>,
    /// The scheme of an `Authorization` value, which stays.
    scheme: Regex,
}

impl Shapes {
    fn new() -> Self {
        let pairs: [(&str, Kind); 6] = [
            // confd before v3.31.6 and v3.32.0 (confd/pkg/backends/calico/client.go,
            // `ParseFailed`: "Unable to parse datastore entry Key=%s; Value=%s"): the name is
            // the key's last segment (`/calico/bgp/v1/global/node_mesh_password`).
            (
                r"(?-u)\bKey=(?:[^;\s]*/)?(?P<n>[A-Za-z0-9_.-]+); Value=",
                Kind::Line,
            ),
            // Calico for Windows' Set-EnvVarIfNotSet (v3.32.1 node/windows-packaging/
            // CalicoWindows/libs/calico/calico.psm1), into calico-node's log: "Environment
            // variable N is already set: V", "... is not set. Setting it to the default value: V".
            (
                r"(?i-u)(?P<n>[A-Za-z0-9_.-]+) is (?:not set\. Setting it to the default value|already set): ",
                Kind::Line,
            ),
            // Felix v3.32.1's `ConfigUpdate` logged whole (felix/daemon/daemon.go 1517), a
            // protobuf map entry in text form: `config:{key:"etcdpassword" value:"X"}`.
            (
                r#"(?i-u)\bkey:\s*"(?P<n>[A-Za-z0-9_.-]+)"\s*value:\s*"#,
                Kind::Word,
            ),
            // Go's `%+v` of a core/v1 `EnvVar` (`{Name:X Value:two words ValueFrom:nil}`), and
            // gogo's `String()` of one (the CNI plugin's pod dump before v3.31.6,
            // cni-plugin/pkg/k8s/k8s.go 968); a piece may begin at `Name:` (`cut` ends the one
            // before after the `{`).
            (
                r"(?-u)(?:^|\{)Name:(?P<n>[A-Za-z0-9_.-]+) Value:",
                Kind::Fields,
            ),
            (
                r"(?-u)(?:^|\{)Name:(?P<n>[A-Za-z0-9_.-]+),Value:",
                Kind::Env,
            ),
            // An `env` item in JSON (kubectl's last-applied-configuration annotation in that
            // pod dump: `{"name":"DB_PASSWORD","value":"X"}`), in a string too (`\"`); a piece
            // may begin after its `"` (`cut` ends the one before after the `{"`).
            (
                r#"(?i-u)(?:^|\\?")name\\?"\s*:\s*\\?"(?P<n>[A-Za-z0-9_.-]+)\\?"\s*,\s*\\?"value\\?"\s*:\s*"#,
                Kind::Word,
            ),
        ];
        Self {
            named: build(&format!(
                r#"(?i-u)(?:^|[^A-Za-z0-9_.-])(-{{0,2}}[A-Za-z0-9_.-]*{NAMES})(?:\\?["'])?[ \t]*([:=])[ \t]*"#
            )),
            flag: build(&format!(
                r#"(?i-u)(?:^|[\s"'\[,(])-{{1,2}}[a-z0-9-]*{NAMES}(?:\\?["'])?[ \t]+"#
            )),
            secure_string: build(
                r"(?i-u)\bConvertTo-SecureString(?:[ \t]+-(?:AsPlainText|Force)\b)*[ \t]+(?:-String[ \t]+)?",
            ),
            named_by: pairs.into_iter().map(|(re, k)| (build(re), k)).collect(),
            spans: vec![
                // A JWT (RFC 7519: base64url header, payload, signature): a service account's
                // token, calico-node's among them (TokenRequest answers).
                (
                    build(r"(?-u)eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*"),
                    0,
                ),
                // The password in a URL's userinfo (RFC 3986 3.2.1), as Felix logs its etcd
                // endpoints (felix/config/env_var_loader.go 45, config_params.go 660-825).
                (
                    build(r#"(?i-u)\b[a-z][a-z0-9+.-]*://[^\s/?#@:"'<>]*:([^\s/?#"'<>]+)@"#),
                    1,
                ),
                // An Azure SAS token's signature (learn.microsoft.com, "Create a service SAS":
                // `sig=`), in a URL's query or a connection string's SharedAccessSignature.
                (build(r#"(?i-u)[?&;]sig=([^&\s"'#<;]+)"#), 1),
                // A bearer token after its scheme (RFC 6750 2.1), wherever it stands: client-go's
                // round_trippers.go before its masking (CVE-2019-11250) logs `-H "Authorization:
                // Bearer X"` in its curl line.
                (build(r"(?i-u)\bbearer\s+([A-Za-z0-9._~+/=-]{4,})"), 1),
            ],
            scheme: build(r"(?i-u)^(?:bearer|basic|negotiate|ntlm|aws4-hmac-sha256)[ \t]+"),
        }
    }

    /// Adds the ranges of `text`'s secrets to `hidden`; the kind of a value that runs to the
    /// end of `text`, if any.
    pub(super) fn find(&self, text: &[u8], hidden: &mut Vec<Range<usize>>) -> Option<Kind> {
        let mut open_at_end = None;
        // How far each search's values reach: a name found inside a value already hidden is
        // passed by, so that a line of many values never closed (`password:"` over and over)
        // costs one pass, not one per name.
        let mut reach = [0usize; 9];
        let mut add =
            |search: usize, start: usize, value: &dyn Fn() -> (Range<usize>, Option<Kind>)| {
                if start >= reach[search] {
                    let (r, open) = value();
                    reach[search] = r.end;
                    hidden.push(r);
                    open_at_end = open_at_end.or(open);
                }
            };
        for c in self.named.captures_iter(text) {
            let (Some(m), Some(name), Some(sep)) = (c.get(0), c.get(1), c.get(2)) else {
                continue;
            };
            let at = m.end();
            if name
                .as_bytes()
                .to_ascii_lowercase()
                .ends_with(b"authorization")
            {
                add(0, m.start(), &|| self.authorization(text, at));
                continue;
            }
            // Go's `%v` writes `name:value`, no blank between, quoting nothing.
            let go = sep.as_bytes() == b":" && at == sep.end();
            let unquoted = if go { Kind::Fields } else { Kind::Word };
            add(0, m.start(), &|| open(text, at, unquoted));
        }
        for (search, re) in [(1, &self.flag), (2, &self.secure_string)] {
            for m in re.find_iter(text) {
                add(search, m.start(), &|| open(text, m.end(), Kind::Word));
            }
        }
        for (i, (re, kind)) in self.named_by.iter().enumerate() {
            for c in re.captures_iter(text) {
                let (Some(m), Some(n)) = (c.get(0), c.name("n")) else {
                    continue;
                };
                if names_a_secret(n.as_bytes()) {
                    add(3 + i, m.start(), &|| open(text, m.end(), *kind));
                }
            }
        }
        for (re, group) in &self.spans {
            for c in re.captures_iter(text) {
                if let Some(g) = c.get(*group) {
                    hidden.push(g.range());
                }
            }
        }
        open_at_end
    }

    /// An `Authorization` header's value from `at`, its scheme's name kept (`Bearer`,
    /// `Basic`, AWS's `AWS4-HMAC-SHA256`), in Go's `%v` of an http.Header's list too
    /// (`Authorization:[Bearer X]`).
    fn authorization(&self, text: &[u8], at: usize) -> (Range<usize>, Option<Kind>) {
        let at = at + usize::from(text.get(at) == Some(&b'['));
        let (kind, from) = match &text[at..] {
            [b'\\', b'"', ..] => (Kind::Escaped, at + 2),
            [q @ (b'"' | b'\''), ..] => (Kind::Quote(*q), at + 1),
            _ => (Kind::Word, at),
        };
        let skip = self.scheme.find(&text[from..]).map_or(0, |m| m.end());
        match text.get(from + skip) {
            Some(b'<') => (from..from, None),
            _ => kind.value(text, from + skip),
        }
    }
}
