//! Taking secrets out of text that leaves the node (`diags`): the values of the secret files
//! install wrote, wherever they appear and whatever their shape, and anything shaped like a
//! secret (a service-account JWT, a PEM private key, a bearer token, a `token:` or
//! `password=` value, an environment variable's value when its name names a secret) even
//! when no file holds it.

mod env;
mod lines;
#[cfg(test)]
mod review_tests;

pub use lines::{Pending, QUOTE_LINES};

use regex::bytes::Regex;

/// What replaces a secret.
pub const REDACTED: &str = "<redacted>";

/// The names of a value that is a secret, as a regex alternation: a name ending in one of
/// these (`token`, `FOO_TOKEN`, `DB_PASSWORD`, `FOO_API_KEY`, `client-key-data`) or holding
/// `secret` as a word (`AWS_SECRET_ACCESS_KEY`, `client_secret`, `--secret-file`). A name that
/// merely begins with one (`token_expires`, `secretName`, `passwordless`) is no secret's.
const NAMES: &str = r"(?:token|password|passwd|api[_-]?key|access[_-]?key|private[_-]?key|key-data|etcd_key|credentials?|secret(?:[_-][A-Za-z0-9_-]*)?)";

/// A value in `\"` (JSON inside a JSON string) after its opening `\"`, to its closing one: the
/// outer string's escapes (`\n`, `\\`), and the inner one's escapes escaped again (`\\\"`, a
/// quote in the value; `\\\\`, a backslash), a `'` among them.
const ESCAPED: &str = r#"(?:[^"\\\r\n]|\\[^"\\\r\n]|\\\\(?:\\.|[^"\\\r\n]))+"#;

/// Comment lines after a flow list's `,` (YAML 1.2 6.6: a comment runs to its line's end).
const FLOW_COMMENTS: &str = r"(?:#[^\r\n]*\r?\n\s*)*";

/// Secrets recognised by their shape. ASCII only (`-u`): the input may be any bytes. Each
/// pattern is linear in its input (the regex crate has no backtracking) and the logs hand it
/// one line (at most a chunk) at a time, so memory stays bounded.
fn shapes() -> [(String, &'static str); 22] {
    // The separator between a name and its value: `NAME=`, `NAME: `, `"NAME": `, `'NAME' = `.
    let sep = r#"["']?\s*[:=]\s*"#;
    // A flag naming a secret (`--token`, `-password`) at a word's start: `re-token` is none.
    let flag = format!(r#"(?:^|[\s"'\[,(=])-{{1,2}}[a-z0-9-]*{NAMES}"#);
    [
        // A JWT (service-account tokens, TokenRequest answers).
        (
            r"(?-u)eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*".into(),
            REDACTED,
        ),
        // The password in a URL's userinfo, any scheme (RFC 3986 3.2.1:
        // `scheme://user:password@host`): the user stays, the password goes, up to the
        // authority's last `@` (a password with an `@` left unescaped goes whole).
        (
            r#"(?i-u)(\b[a-z][a-z0-9+.-]*://[^\s/?#@:"'<>]*:)[^\s/?#"'<>]+@"#.into(),
            "${1}<redacted>@",
        ),
        digest(sep),
        // An HTTP credential: `Authorization: Basic X`, `Proxy-Authorization: X`, `Bearer X`,
        // Go's `%v` of an http.Header (`Authorization:[Bearer X]`) and its encoding/json
        // (`{"Authorization":["Basic X"]}`: a list of quoted strings).
        (
            format!(r#"(?i-u)(authorization{sep}(?:\[\s*)?["']?(?:[a-z]+\s+)?)[^\s"',\[\]]+"#),
            "${1}<redacted>",
        ),
        bearer(),
        quoted_credential(),
        base64_key(),
        // A flag naming a secret and its value as the next item of a list, in JSON or as a
        // JSON string holds it, or in single quotes (a command line kept as its arguments:
        // `["--token","X"]`, `"args": ["-password", "X"]`, `[\"--token\",\"X\"]`,
        // `@('-token', 'X')`). A list's item that is no flag (`["token","expires"]`) stays.
        (
            format!(r#"(?i-u)("-{{1,2}}[a-z0-9-]*{NAMES}"\s*,\s*")(?:[^"\\\n]|\\.)+"#),
            "${1}<redacted>",
        ),
        (
            format!(r#"(?i-u)(\\"-{{1,2}}[a-z0-9-]*{NAMES}\\"\s*,\s*\\"){ESCAPED}"#),
            "${1}<redacted>",
        ),
        single_quoted_list_item(),
        yaml_list_item(),
        yaml_flow_item(true),
        yaml_flow_item(false),
        yaml_flow_quoted_item('"'),
        yaml_flow_quoted_item('\''),
        // A value named as a secret in quotes escaped inside a JSON string (a service's
        // command line, an event's text, a log line quoting JSON): `{\"token\":\"X\"}`,
        // `PASSWORD=\"X\"`, `--etcd-password \"X\"`, `-token \"X\"`, whole up to its closing `\"`.
        (
            format!(
                r#"(?im-u)((?:[A-Za-z0-9_.-]*{NAMES}(?:\\["'])?\s*[:=]\s*|{flag}\s+)\\["']){ESCAPED}"#
            ),
            "${1}<redacted>",
        ),
        quoted_after_blank(&flag, '"'),
        quoted_after_blank(&flag, '\''),
        // A value named as a secret in double or single quotes, whole (it may hold blanks):
        // `"password": "two words"`, `AWS_SECRET_ACCESS_KEY='x'`.
        (
            format!(r#"(?i-u)([A-Za-z0-9_.-]*{NAMES}{sep}")(?:[^"\\\r\n]|\\.)+"#),
            "${1}<redacted>",
        ),
        (
            format!(r#"(?i-u)([A-Za-z0-9_.-]*{NAMES}{sep}')(?:[^'\r\n]|'')+"#),
            "${1}<redacted>",
        ),
        json_non_string(),
        // A value named as a secret, unquoted: `token: X`, `FOO_API_KEY=X`, `--token=X`,
        // `-password=X`, `--password X`, `-token X` (a flag, its value after a blank, which a
        // comment's `#` after a blank is not: YAML 1.2 6.6, a shell's comment).
        (
            format!(
                r#"(?im-u)(?:([A-Za-z0-9_.-]*{NAMES}{sep})[^\s"'\\,{{}}\[\]<>]|({flag}[ \t]+)[^\s"'\\,{{}}\[\]<>#])(?:[^\s"'\\,{{}}\[\]<>]|\\[^tnr\s])*"#
            ),
            "${1}${2}<redacted>",
        ),
    ]
}

/// A PEM private key block, whole (`redact_keys`).
const PEM_KEY: &str =
    r"(?s-u)-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----";

/// A PEM private key's END line (`redact_keys`).
const PEM_END: &str = r"(?-u)-----END [A-Z ]*PRIVATE KEY-----";

/// `bytes` with each private key block `pem` finds replaced by `REDACTED`, one per line of
/// it, its indentation and line breaks kept: a file's lines stay where they were. A text whose first key END
/// line (`end`) has no BEGIN before it starts inside a key (a tail cut in its block, as
/// `diags` takes the last bytes of a log) when all before that END is a key's body
/// (`cut_key`): from its start to that END goes the same way.
fn redact_keys(pem: &Regex, end: &Regex, bytes: &[u8]) -> Vec<u8> {
    let by_line = |key: &[u8]| {
        let mut out = Vec::new();
        for line in key.split_inclusive(|b| *b == b'\n') {
            let indent = line.iter().take_while(|b| matches!(b, b' ' | b'\t'));
            out.extend_from_slice(&line[..indent.count()]);
            out.extend_from_slice(REDACTED.as_bytes());
            let eol = line.iter().rev().take_while(|b| matches!(b, b'\r' | b'\n'));
            out.extend_from_slice(&line[line.len() - eol.count()..]);
        }
        out
    };
    // A BEGIN before the first END makes a block `pem` finds starting before that END.
    let orphan = end
        .find(bytes)
        .filter(|e| pem.find(bytes).is_none_or(|k| k.start() > e.start()))
        .filter(|e| cut_key(&bytes[..e.start()]))
        .map_or(0, |e| e.end());
    let mut out = by_line(&bytes[..orphan]);
    out.extend_from_slice(
        &pem.replace_all(&bytes[orphan..], |c: &regex::bytes::Captures| {
            by_line(&c[0])
        }),
    );
    out
}

/// Whether `before`, a text up to a key's END marker, is the body of a key cut at its start:
/// each of its lines one a key's body can hold (`pem_body_line`), and only indentation
/// before the marker on its line (a message quoting the marker is no key's).
fn cut_key(before: &[u8]) -> bool {
    let at = before
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1);
    let (body, head) = before.split_at(at);
    head.iter().all(|b| matches!(b, b' ' | b'\t'))
        && body.split_inclusive(|b| *b == b'\n').all(pem_body_line)
}

/// Whether a line, its indentation and line break aside, is one a PEM private key's body can
/// hold: base64 of at most 80 characters, the `Proc-Type:` and `DEK-Info:` headers (RFC 1421
/// 4.6.1.1, 4.6.1.3), a blank line.
pub fn pem_body_line(line: &[u8]) -> bool {
    let text = line.trim_ascii();
    text.len() <= 80
        && text
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(b))
        || text.starts_with(b"Proc-Type:")
        || text.starts_with(b"DEK-Info:")
}

/// A PEM block in base64 (a Secret's `data`, client-go's `-v=9` body), under any name,
/// whole: its run starts with the base64 of `-----BEGIN `, then of its label's first letter,
/// any but `C` (a `CERTIFICATE`, which stays: the 16th character `D` is that `C`'s).
fn base64_key() -> (String, &'static str) {
    (
        r"(?-u)LS0tLS1CRUdJTiB[A-CE-Za-z0-9+/][A-Za-z0-9+/]*=*".into(),
        REDACTED,
    )
}

/// A value that is no string (a number, `true`, `null`) under a JSON key naming a secret,
/// the key's quotes perhaps escaped (`{"token":12345}`, `{\"password\":true}`): replaced by a
/// string in the key's quote, so JSON stays JSON. Before the unquoted shape.
fn json_non_string() -> (String, &'static str) {
    (
        format!(r#"(?i-u)((\\?")[A-Za-z0-9_.-]*{NAMES}\\?"\s*:\s*)[^\s"'\\,{{}}\[\]<>]+"#),
        "${1}${2}<redacted>${2}",
    )
}

/// An `Authorization` header's list as Go's encoding/json writes an http.Header
/// (`map[string][]string`: `{"Authorization":["Bearer a","Basic b"]}`), perhaps escaped in a
/// JSON string (group 2: the list's items), and a credential in it after its scheme, if any
/// (group 1: the item's quote and scheme). Every item's goes; `shapes`' takes the first only.
fn header_list() -> [String; 2] {
    [
        r#"(?i-u)(authorization\\?["']?\s*:\s*\[)([^\]\r\n]*)"#.into(),
        r#"(?i-u)(\\?["'](?:[a-z]+\s+)?)[^\s"'\\,\[\]]+"#.into(),
    ]
}

/// `bytes` with every credential of each header list `list` finds replaced (`header_list`).
/// A list without quotes is Go's `%v` of the header's `[]string`, its items joined by blanks
/// (`Authorization:[Basic a Basic b]`): every word but a scheme's name goes.
fn redact_header_lists(list: &Regex, item: &Regex, bytes: &[u8]) -> Vec<u8> {
    list.replace_all(bytes, |c: &regex::bytes::Captures| {
        let items = c.get(2).map_or(&b""[..], |m| m.as_bytes());
        let items = if items.iter().any(|b| b"\"'\\".contains(b)) {
            item.replace_all(items, &b"${1}<redacted>"[..]).into_owned()
        } else {
            unquoted_credentials(items)
        };
        [&c[1], &items[..]].concat()
    })
    .into_owned()
}

/// The words of Go's `%v` of an `Authorization` header's values, each credential replaced:
/// a word that names a scheme (IANA's HTTP Authentication Scheme Registry: `Basic`, `Bearer`,
/// `Digest`, `Negotiate`, `NTLM`, `DPoP`) stays.
fn unquoted_credentials(items: &[u8]) -> Vec<u8> {
    const SCHEMES: [&[u8]; 6] = [
        b"basic",
        b"bearer",
        b"digest",
        b"negotiate",
        b"ntlm",
        b"dpop",
    ];
    let mut out = Vec::with_capacity(items.len());
    for piece in items.split_inclusive(|b| b.is_ascii_whitespace()) {
        let word = piece.trim_ascii_end();
        if word.is_empty() || SCHEMES.iter().any(|s| word.eq_ignore_ascii_case(s)) {
            out.extend_from_slice(word);
        } else {
            out.extend_from_slice(REDACTED.as_bytes());
        }
        out.extend_from_slice(&piece[word.len()..]);
    }
    out
}

/// A bearer token after its scheme's name (RFC 6750 2.1: `Bearer` then b64token).
fn bearer() -> (String, &'static str) {
    (
        r"(?i-u)(bearer\s+)[A-Za-z0-9._~+/=-]{4,}".into(),
        "${1}<redacted>",
    )
}

/// A Digest credential after an `Authorization` name (RFC 7616 3.4: its parameters hold
/// quoted strings, so it goes whole): in a JSON string (`"Digest username=\"a\", ..."`) to
/// the string's closing quote when a JSON `,`, `}` or `]` follows it, so JSON stays JSON;
/// elsewhere (`Authorization="Digest username="a", response="X"`) to the line's end.
fn digest(sep: &str) -> (String, &'static str) {
    (
        format!(
            r#"(?i-u)(?:(authorization{sep}(?:\[\s*)?"digest\s+)(?:[^"\\\r\n]|\\.)*("\s*[,}}\]])|(authorization{sep}(?:\[\s*)?(?:\\?["'])?digest\s+)[^\r\n]+)"#
        ),
        "${1}${3}<redacted>${2}",
    )
}

/// A credential in quotes after its scheme, wherever it stands (an `Authorization` list's
/// item on a line of its own, as pretty JSON prints an http.Header): `"Basic X"`, `'NTLM X'`.
fn quoted_credential() -> (String, &'static str) {
    (
        r#"(?i-u)(\\?["'](?:basic|negotiate|ntlm)\s+)[A-Za-z0-9+/=]+"#.into(),
        "${1}<redacted>",
    )
}

/// A flag's value in quotes after a blank, as a Windows command line or Go's `%q` of a
/// `[]string` writes it: `--token "two words"`, `-password 'X'`, `["--token" "X"]`.
fn quoted_after_blank(flag: &str, quote: char) -> (String, &'static str) {
    let body = if quote == '"' {
        r#"(?:[^"\\\r\n]|\\.)+"#
    } else {
        r"(?:[^'\r\n]|'')+"
    };
    (
        format!(r#"(?im-u)({flag}["']?[ \t]+{quote}){body}"#),
        "${1}<redacted>",
    )
}

/// A flag naming a secret and its value as the next item of a list in single quotes
/// (`@('-token', 'X')`, `['--token', 'X']`), `''` a quote inside one (YAML 1.2 7.3.2).
fn single_quoted_list_item() -> (String, &'static str) {
    (
        format!(r#"(?i-u)('-{{1,2}}[a-z0-9-]*{NAMES}'\s*,\s*')(?:[^'\n]|'')+"#),
        "${1}<redacted>",
    )
}

/// A flag naming a secret as an item of a YAML block list and its value as the next item (a
/// manifest's or a kubeconfig exec's `args:`): `- --token` or `- "--token"`, then `- X`,
/// `- "X"` or `- 'X'` (YAML 1.2 7.3, 7.3.3: a plain scalar runs to the end of its line; 7.3.2:
/// `''` is a quote inside single quotes). A comment may follow the flag, and blank or comment
/// lines may come between. The quotes stay, so the document stays YAML. A block scalar as the
/// value (`- |`, `- >-`) is `block_scalar_head`'s. A shape of `shapes`, before the unquoted ones.
fn yaml_list_item() -> (String, &'static str) {
    let flag = yaml_flag();
    (
        format!(
            r#"(?im-u)({flag}[ \t]*-[ \t]+)(?:(")(?:[^"\\\n]|\\.)+(")|(')(?:[^'\n]|'')+(')|[^\s"'#|>][^\r\n]*)"#
        ),
        "${1}${2}${4}<redacted>${3}${5}",
    )
}

/// A YAML block list's item that is a flag naming a secret, its comment, its line's end and
/// the blank or comment lines after it.
fn yaml_flag() -> String {
    format!(
        r#"^[ \t]*-[ \t]+["']?-{{1,2}}[a-z0-9-]*{NAMES}["']?[ \t]*(?:#[^\r\n]*)?\r?\n(?:[ \t]*(?:#[^\r\n]*)?\r?\n)*"#
    )
}

/// A flag naming a secret and its value as the next item of a comma-separated list, unquoted.
/// In a YAML flow list (`in_list`: the flag after the list's `[` or an item's `,`) the value
/// ends where its item does: `[--token, X]`, `[--client-secret, X, --x]`, `[--v, 2,\n  --token,
/// two words]` (YAML 1.2 7.4: a plain flow item runs to its `,` or `]`). In free text (the
/// flag at the text's start or after a blank, `(` or `=`) it ends at a blank, the rest of the
/// text staying: `-password, X see --help`. The list's shape goes first. (The value of a YAML
/// block list's item is `yaml_list_item`'s.)
fn yaml_flow_item(in_list: bool) -> (String, &'static str) {
    let flag = format!(r#"["']?-{{1,2}}[a-z0-9-]*{NAMES}["']?\s*,\s*"#);
    let re = if in_list {
        let flag = format!("{flag}{FLOW_COMMENTS}");
        format!(r#"(?i-u)([\[,]\s*{flag})[^\s,\[\]{{}}"'#][^,\[\]{{}}\r\n]*"#)
    } else {
        // A flag after a blank may be in a list too, which `in_list` has redacted already
        // (`[ --token, <redacted>]`): that value is left as it is.
        // Inside a JSON string (`{"msg":"unknown flag -password, X","level":..}`) the value
        // ends at the string's `"`, an escape (`\"`, `\\`) taken as part of it but a blank's
        // (`\t`, `\n`, `\r`) ending it, so the record stays JSON and no tail after an escape is
        // left.
        format!(
            r#"(?i-u)((?:^|[\s(=]){flag})(?:<redacted>(\S*)|[^\s,\[\]{{}}"'#\\](?:[^\s"\\]|\\[^tnr\s])*)"#
        )
    };
    (re, "${1}<redacted>${2}")
}

/// The same flow list with the flag quoted or not and its value quoted, the list perhaps
/// broken across lines: `[--token, "X"]`, `["--token", 'X']`, `[--token,\n  "X"]`. The
/// quotes stay, so JSON stays JSON.
fn yaml_flow_quoted_item(quote: char) -> (String, &'static str) {
    let flag =
        format!(r#"((?:^|[\s\[,])["']?-{{1,2}}[a-z0-9-]*{NAMES}["']?\s*,\s*{FLOW_COMMENTS}"#);
    if quote == '"' {
        (
            format!(r#"(?is-u){flag}")(?:[^"\\]|\\.)*""#),
            "${1}<redacted>\"",
        )
    } else {
        (format!(r#"(?i-u){flag}')(?:[^']|'')*'"#), "${1}<redacted>'")
    }
}

/// A flag naming a secret as an item of a YAML block list and a block scalar as the next item
/// (`- |`, `- >-`, YAML 1.2 8.1): its content is the lines after it indented more than its
/// `-` (group 1), and blank lines among them.
fn block_scalar_head() -> String {
    let flag = yaml_flag();
    format!(r#"(?im-u){flag}([ \t]*)-[ \t]+[|>][0-9+-]{{0,2}}[ \t]*(?:#[^\r\n]*)?(?:\r?\n|$)"#)
}

/// `bytes` with the content of each block scalar `head` finds replaced, line by line, by
/// `REDACTED` at the line's own indentation.
fn redact_block_scalars(head: &Regex, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while let Some(caps) = head.captures_at(bytes, at) {
        let (whole, dash) = (caps.get(0), caps.get(1));
        let (Some(whole), Some(dash)) = (whole, dash) else {
            break;
        };
        out.extend_from_slice(&bytes[at..whole.end()]);
        at = whole.end();
        while at < bytes.len() {
            let end = memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |n| at + n + 1);
            let line = &bytes[at..end];
            let indent = line
                .iter()
                .take_while(|b| matches!(b, b' ' | b'\t'))
                .count();
            let rest = &line[indent..];
            let blank = rest.iter().all(|b| matches!(b, b'\r' | b'\n'));
            if !blank && indent <= dash.len() {
                break;
            }
            out.extend_from_slice(&line[..indent]);
            if !blank {
                out.extend_from_slice(REDACTED.as_bytes());
                let eol = rest.iter().position(|b| matches!(b, b'\r' | b'\n'));
                out.extend_from_slice(&rest[eol.unwrap_or(rest.len())..]);
            } else {
                out.extend_from_slice(rest);
            }
            at = end;
        }
    }
    out.extend_from_slice(&bytes[at..]);
    out
}

/// Whether a word (lower case) leads into a secret's value: a name `shapes` knows, an HTTP
/// credential's scheme, or a `name` or `value` key (an `env:` item's). The logs cut a long line before such a word, never after it.
pub fn leads_into_value(word: &[u8]) -> bool {
    const ENDS: [&[u8]; 17] = [
        b"token",
        b"password",
        b"passwd",
        b"apikey",
        b"api_key",
        b"api-key",
        b"access_key",
        b"access-key",
        b"key-data",
        b"etcd_key",
        b"credential",
        b"credentials",
        b"authorization",
        b"bearer",
        b"basic",
        // An `env:` item's `"name":"X_TOKEN"` and `"value":"X"`, cut from their keys.
        b"name",
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
    /// `header_list`'s: a list and its items.
    headers: [Regex; 2],
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
        let shapes = shapes()
            .into_iter()
            .map(|(re, with)| (build(&re), with))
            .collect();
        Self {
            known: values,
            shapes,
            block: build(&block_scalar_head()),
            pairs: env::pairs().iter().map(|re| build(re)).collect(),
            headers: header_list().map(|re| build(&re)),
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
        let [list, item] = &self.headers;
        out = redact_header_lists(list, item, &out);
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
pub(crate) mod tests {
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
        // The key's lines stay lines (`redact_keys`).
        assert!(
            out.contains("a <redacted>\n<redacted>\n<redacted> b"),
            "{out}"
        );
    }

    #[test]
    fn ordinary_words_and_the_ca_certificate_stay() {
        let r = Redactor::new(&["token: short\n".to_owned()]);
        let out = redacted(&r, "short words and \"token\": {\"expires\": 1}");
        assert_eq!(out, "short words and \"token\": {\"expires\": 1}");
    }

    /// Each shape of a credential the brief names, as a log line, in a config-show.json
    /// document and in an environment block: the secret goes, what names it stays.
    pub(crate) const SHAPED: [(&str, &str, &str); 17] = [
        (
            "proxy http://calico:hunter2pass@proxy.corp:3128 set",
            "hunter2pass",
            "http://calico:<redacted>@proxy.corp:3128",
        ),
        (
            "etcd at https://root:p@ss@etcd:2379/v3",
            "ss@etcd",
            "https://root:<redacted>@etcd:2379/v3",
        ),
        (
            "socks5h://u:sockspass99@10.0.0.1:1080",
            "sockspass99",
            "socks5h://u:<redacted>@",
        ),
        (
            "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENG",
            "wJalrXUtnFEMI",
            "AWS_SECRET_ACCESS_KEY=<redacted>",
        ),
        (
            "FOO_API_KEY: apikeyvalue1",
            "apikeyvalue1",
            "FOO_API_KEY: <redacted>",
        ),
        (
            "DB_PASSWORD='two words'",
            "two words",
            "DB_PASSWORD='<redacted>'",
        ),
        (
            "GITHUB_TOKEN=ghp_abcdef123456",
            "ghp_abcdef",
            "GITHUB_TOKEN=<redacted>",
        ),
        (
            "client_secret = clientsecretvalue",
            "clientsecretvalue",
            "client_secret = <redacted>",
        ),
        (
            "Authorization: Basic dXNlcjpwYXNz",
            "dXNlcjpwYXNz",
            "Authorization: Basic <redacted>",
        ),
        (
            "Proxy-Authorization: Bearer opaquebearer1",
            "opaquebearer1",
            "Proxy-Authorization: Bearer <redacted>",
        ),
        (
            "run kubectl --token=flagtoken1 get",
            "flagtoken1",
            "--token=<redacted> get",
        ),
        (
            "run kubectl --password flagpass22 get",
            "flagpass22",
            "--password <redacted> get",
        ),
        // A Windows command line's quoted value after a blank, Go's `%q` of a `[]string`.
        (
            r#"felix.exe --token "S51 two" -v"#,
            "S51",
            r#"--token "<redacted>" -v"#,
        ),
        (
            "felix.exe --password 'S52pw' -v",
            "S52pw",
            "--password '<redacted>' -v",
        ),
        (
            r#"args=["--token" "S50tok"]"#,
            "S50tok",
            r#"["--token" "<redacted>"]"#,
        ),
        // `\"` values holding an escaped quote or a `'` (JSON in a JSON string).
        (
            r#"{"cmd": "x.exe --etcd-password \"a\\\"b S53 c'd\""}"#,
            "S53",
            r#"--etcd-password \"<redacted>\""#,
        ),
        (
            r#"{"cmd": "[\"--token\",\"a\\\"b' S54\"]"}"#,
            "S54",
            r#"[\"--token\",\"<redacted>\"]"#,
        ),
    ];

    #[test]
    fn credentials_in_urls_names_headers_and_flags_go() {
        let r = Redactor::new(&[]);
        for (line, gone, kept) in SHAPED {
            let out = redacted(&r, line);
            assert!(!out.contains(gone), "{gone} survived: {out}");
            assert!(out.contains(kept), "{kept} not in {out}");
        }
        // In a JSON document (config-show.json's extra_env), still JSON after it.
        let doc = serde_json::json!({"extra_env": {"node": {
            "HTTPS_PROXY": "http://calico:hunter2pass@proxy.corp:3128",
            "AWS_SECRET_ACCESS_KEY": "wJalrXUt nFEMIK7MDENG",
            "FOO_API_KEY": "apikeyvalue1",
            "MY_PASSWORD": "with \"quote\" inside",
        }}});
        let text = serde_json::to_string_pretty(&doc).expect("json");
        let out = redacted(&r, &text);
        for gone in [
            "hunter2pass",
            "wJalrXUt",
            "nFEMIK7",
            "apikeyvalue1",
            "quote",
        ] {
            assert!(!out.contains(gone), "{gone} survived: {out}");
        }
        let back: serde_json::Value = serde_json::from_str(&out).expect("still JSON");
        // Quoted inside a JSON string (the quotes escaped), as a service's command line or an
        // event's text carries them.
        for (line, gone) in [
            (
                r#"{"msg": "sending {\"token\":\"abcdefgh1234\"}"}"#,
                "abcdefgh1234",
            ),
            (
                r#"{"cmd": "x.exe ETCD_PASSWORD=\"s3cr3tpass\" -v"}"#,
                "s3cr3tpass",
            ),
            (
                r#"{"cmd": "x.exe --etcd-password \"two words\""}"#,
                "two words",
            ),
            (r#"{"data": "\"password\": \"hunter2 pw\""}"#, "hunter2 pw"),
        ] {
            let out = redacted(&r, line);
            assert!(!out.contains(gone), "{gone} survived: {out}");
            serde_json::from_str::<serde_json::Value>(&out)
                .unwrap_or_else(|e| panic!("not JSON any more ({e}): {out}"));
        }
        assert_eq!(
            back["extra_env"]["node"]["HTTPS_PROXY"],
            "http://calico:<redacted>@proxy.corp:3128"
        );
        assert_eq!(back["extra_env"]["node"]["FOO_API_KEY"], REDACTED);
    }

    /// A flag's value as the next item of a list (JSON, JSON inside a JSON string, single
    /// quotes), and a single-dash flag's (`-token X`, `-password=X`), go; the text stays JSON.
    #[test]
    fn secrets_after_flags_in_lists_and_after_single_dash_flags_go() {
        let r = Redactor::new(&[]);
        for (line, gone, kept) in [
            (
                r#"["--token","abcdef123"]"#,
                "abcdef123",
                r#"["--token","<redacted>"]"#,
            ),
            (
                r#"{"args":["-password", "two words"], "v": 1}"#,
                "two words",
                r#"["-password", "<redacted>"]"#,
            ),
            (
                r#"{"cmd": "[\"--etcd-key-data\",\"LS0tabc\"]"}"#,
                "LS0tabc",
                r#"[\"--etcd-key-data\",\"<redacted>\"]"#,
            ),
            (
                "@('-token', 'pstoken99')",
                "pstoken99",
                "@('-token', '<redacted>')",
            ),
            (
                "felix.exe -token abc123 -v",
                "abc123",
                "-token <redacted> -v",
            ),
            ("-password=x9", "x9", "-password=<redacted>"),
            ("run -Password hunter22", "hunter22", "-Password <redacted>"),
            (
                r#"{"cmd": "x.exe -token \"two words\""}"#,
                "two words",
                r#"-token \"<redacted>\""#,
            ),
        ] {
            let out = redacted(&r, line);
            assert!(!out.contains(gone), "{gone} survived: {out}");
            assert!(out.contains(kept), "{kept} not in {out}");
            if line.starts_with('{') || line.starts_with('[') {
                serde_json::from_str::<serde_json::Value>(&out)
                    .unwrap_or_else(|e| panic!("not JSON any more ({e}): {out}"));
            }
        }
    }

    /// A flag naming a secret as an item of a YAML block list, its value the next item, as a
    /// manifest's container `args:` and a kubeconfig's exec `args:` hold them: the value goes
    /// (plain, double or single quoted, CRLF or LF), the flag and the quotes stay, and the
    /// items that follow the value and the flags that name no secret stay.
    #[test]
    fn secrets_after_flags_in_yaml_lists_go() {
        let r = Redactor::new(&[]);
        let manifest = "spec:\n  containers:\n  - name: felix\n    args:\n    - --token\n    - yamltoken123\n    - \"--password\"\n    - \"two words\"\n    - '-etcd-key-data'\n    - 'LS0tkeydata'\n    - --password=inline9\n    - --token-ttl\n    - 1h\n    - --v\n    - \"2\"\n";
        let want = "spec:\n  containers:\n  - name: felix\n    args:\n    - --token\n    - <redacted>\n    - \"--password\"\n    - \"<redacted>\"\n    - '-etcd-key-data'\n    - '<redacted>'\n    - --password=<redacted>\n    - --token-ttl\n    - 1h\n    - --v\n    - \"2\"\n";
        assert_eq!(redacted(&r, manifest), want);
        let kubeconfig = "users:\r\n- name: calico-node\r\n  user:\r\n    exec:\r\n      apiVersion: client.authentication.k8s.io/v1\r\n      command: get-token.exe\r\n      args:\r\n      - --client-secret\r\n      - execsecret77\r\n      - --cluster\r\n      - prod\r\n";
        let out = redacted(&r, kubeconfig);
        assert!(!out.contains("execsecret77"), "{out}");
        assert!(
            out.contains(
                "- --client-secret\r\n      - <redacted>\r\n      - --cluster\r\n      - prod\r\n"
            ),
            "{out}"
        );
        // A flow list unquoted, a block scalar, `''` in single quotes, a comment after the
        // flag, blank and comment lines between: the value goes, what follows it stays.
        for (text, gone, want) in [
            (
                "args: [--token, flowsecret1]\n",
                "flowsecret1",
                "args: [--token, <redacted>]\n",
            ),
            (
                "args: [--client-secret, s3cr3t, --x]",
                "s3cr3t",
                "args: [--client-secret, <redacted>, --x]",
            ),
            (
                "args: [--token, \"dqsecret1\", --v]",
                "dqsecret1",
                "args: [--token, \"<redacted>\", --v]",
            ),
            (
                "args: [--token, 'sqsec''ret1']",
                "ret1",
                "args: [--token, '<redacted>']",
            ),
            (
                "args: [\"--token\", plainsecret1]",
                "plainsecret1",
                "args: [\"--token\", <redacted>]",
            ),
            (
                "args: [--token,\n    splitsecret1]",
                "splitsecret1",
                "args: [--token,\n    <redacted>]",
            ),
            (
                "args:\n- --token\n- >-\n  foldedsecret1\n  foldedsecret2\n- --v\n",
                "foldedsecret",
                "args:\n- --token\n- >-\n  <redacted>\n  <redacted>\n- --v\n",
            ),
            (
                "  args:\n  - --password\n  - |\n    literal1\n\n    literal2\r\n  - --v\n",
                "literal",
                "  args:\n  - --password\n  - |\n    <redacted>\n\n    <redacted>\r\n  - --v\n",
            ),
            (
                "args: [--token, \"ml one\n  ml two\"]",
                "ml ",
                "args: [--token, \"<redacted>\"]",
            ),
            (
                "args: [--token, \"esc one\\\n  esc two\", --v]",
                "esc ",
                "args: [--token, \"<redacted>\", --v]",
            ),
            (
                "args: ['--token', 'sq one\n  sq two']",
                "sq ",
                "args: ['--token', '<redacted>']",
            ),
            (
                "args: [--token, # the token\n  commented1]",
                "commented1",
                "args: [--token, # the token\n  <redacted>]",
            ),
            (
                "args: [--token, # c\n  \"commented2\"]",
                "commented2",
                "args: [--token, # c\n  \"<redacted>\"]",
            ),
            (
                "- --token\n- 'it''s19'\n",
                "s19",
                "- --token\n- '<redacted>'\n",
            ),
            ("token: 'it''s19'\n", "s19", "token: '<redacted>'\n"),
            (
                "- --token   # the token\n- commentedsecret\n- --v\n",
                "commentedsecret",
                "- --token   # the token\n- <redacted>\n- --v\n",
            ),
            (
                "- --token\n\n  # next\n- spacedsecret\n",
                "spacedsecret",
                "- --token\n\n  # next\n- <redacted>\n",
            ),
        ] {
            let out = redacted(&r, text);
            assert!(!out.contains(gone), "{gone} survived: {out}");
            assert_eq!(out, want);
        }
        // Flags that name no secret, and a block scalar after one, stay.
        for kept in [
            "args: [--token-ttl, 1h, --v, \"2\"]",
            "- --token-ttl\n- |\n  1h\n- --v\n- \"2\"\n",
        ] {
            assert_eq!(redacted(&r, kept), kept);
        }
    }

    /// A flag's value after a comma: inside a flow list it ends where its item does (`,` or
    /// `]`, blanks inside it); in free text at a blank, the rest of the text staying, and no
    /// part of the value (a `,` or `]` in it) left.
    #[test]
    fn a_comma_separated_value_ends_at_its_item_in_a_list_and_at_a_blank_in_free_text() {
        let r = Redactor::new(&[]);
        for (text, want) in [
            ("-password, see --help", "-password, <redacted> --help"),
            (
                "felix: bad flag --token, s3cr,et]x then more",
                "felix: bad flag --token, <redacted> then more",
            ),
            (
                "args: [--v, 2,\n  --token, two words]",
                "args: [--v, 2,\n  --token, <redacted>]",
            ),
            (
                "args: [ --password, pw one, --v]",
                "args: [ --password, <redacted>, --v]",
            ),
            ("a,\n  -token, to the end\n", "a,\n  -token, <redacted>\n"),
            (
                "x: --token, t1 (--password, p2) --secret, s3",
                "x: --token, <redacted> (--password, <redacted> --secret, <redacted>",
            ),
        ] {
            assert_eq!(redacted(&r, text), want);
        }
    }

    /// What Calico's components print with a secret in it, as they print it: confd's cache
    /// line for a BGP peer (projectcalico/calico v3.32.1 confd/pkg/backends/calico/client.go:
    /// `updateCache` logs `key=value` at debug, redacting only node_mesh_password; a peer's
    /// value is its `bgpPeer` JSON with `password`), in Calico's log format and as a JSON
    /// string; and a Go program's `%v` of an `http.Header` (`map[string][]string`, which fmt
    /// prints `map[K:[V ...]]`), whose credential is inside the brackets.
    #[test]
    fn calico_component_log_lines_and_go_headers_keep_no_secret() {
        let r = Redactor::new(&[]);
        for (line, gone, kept) in [
            (
                r#"2026-11-26 18:00:00.000 [DEBUG][1234] client.go 1810: Cache entry updated from event type 1: /calico/bgp/v1/host/win1/peer_v4/10.0.0.5={"ip":"10.0.0.5","as_num":"64512","password":"bgp secret","source_addr":""}"#,
                "bgp secret",
                r#""password":"<redacted>","source_addr":"""#,
            ),
            (
                r#"{"msg": "Cache entry updated: /calico/bgp/v1/host/win1/peer_v4/10.0.0.5={\"ip\":\"10.0.0.5\",\"password\":\"bgp secret\"}"}"#,
                "bgp secret",
                r#"\"password\":\"<redacted>\""#,
            ),
            (
                "headers: map[Accept:[*/*] Authorization:[Bearer opaque123]]",
                "opaque123",
                "Accept:[*/*] Authorization:[Bearer <redacted>]]",
            ),
            (
                "map[Proxy-Authorization:[Basic dXNlcjpwYXNz]]",
                "dXNlcjpw",
                "Proxy-Authorization:[Basic <redacted>]]",
            ),
        ] {
            let out = redacted(&r, line);
            assert!(!out.contains(gone), "{gone} survived: {out}");
            assert!(out.contains(kept), "{kept} not in {out}");
        }
    }

    /// The false positives kept out: a name that begins with a secret's word, a URL without
    /// a password, a port after a host, the working directory.
    #[test]
    fn names_that_only_begin_like_a_secret_and_plain_urls_stay() {
        let r = Redactor::new(&[]);
        for kept in [
            "token_expires: 2026-11-26",
            "secretName: calico-node-token",
            "passwordless: true",
            "PWD=C:\\CalicoWindows",
            "https://proxy.corp:3128/path?a=b@c",
            "git+ssh://git@github.com/x",
            "AWS_ACCESS_KEY_ID=AKIAEXAMPLE",
            "--token-ttl 1h",
            r#"["token","expires"]"#,
            r#"["--tokens-file","a.txt"]"#,
            "the re-token step ran",
            "a - token was renewed",
            "-tokenize input",
            "x-password-reset done",
        ] {
            assert_eq!(redacted(&r, kept), kept);
        }
    }
}
