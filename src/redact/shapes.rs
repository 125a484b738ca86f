//! The table of secrets recognised by their shape, applied in its order.

use super::headers::{
    assigned_doubled, bearer, digest, doubled_authorization, doubled_header, escaped_digest,
    header_values, quoted_authorization, quoted_credential,
};
use super::keys::base64_key;
use super::names::{ESCAPED, NAMES, REDACTED, TWICE_ESCAPED};
use super::yaml::{yaml_flow_item, yaml_flow_quoted_item, yaml_list_item};

/// Every shape, in the order they apply: a credential header's value (PowerShell's `""`
/// inside its quotes first), a Digest credential in
/// escaped JSON, then `shapes`.
pub(super) fn all() -> Vec<(String, &'static str)> {
    [doubled_header()]
        .into_iter()
        .chain(header_values())
        .chain([escaped_digest()])
        .chain(shapes())
        .collect()
}

/// Secrets recognised by their shape. ASCII only (`-u`): the input may be any bytes. Each
/// pattern is linear in its input (the regex crate has no backtracking) and the logs hand it
/// one line (at most a chunk) at a time, so memory stays bounded.
fn shapes() -> [(String, &'static str); 26] {
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
        doubled_authorization(),
        quoted_authorization(sep),
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
        twice_escaped(),
        escaped(&flag),
        quoted_after_blank(&flag, '"'),
        quoted_after_blank(&flag, '\''),
        assigned_doubled(&format!("[A-Za-z0-9_.-]*{NAMES}"), ""),
        // A value named as a secret in double or single quotes, whole (it may hold blanks):
        // `"password": "two words"`, `AWS_SECRET_ACCESS_KEY='x'`, a pointer's (`Password:*"x"`),
        // PowerShell's `` `" `` inside double quotes (about_Special_Characters).
        (
            format!(r#"(?i-u)([A-Za-z0-9_.-]*{NAMES}{sep}\*?")(?:`"|[^"\\\r\n]|\\.)+"#),
            "${1}<redacted>",
        ),
        (
            format!(r#"(?i-u)([A-Za-z0-9_.-]*{NAMES}{sep}\*?')(?:[^'\r\n]|'')+"#),
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

/// A value that is no string (a number, `true`, `null`) under a JSON key naming a secret,
/// the key's quotes perhaps escaped (`{"token":12345}`, `{\"password\":true}`): replaced by a
/// string in the key's quote, so JSON stays JSON. Before the unquoted shape.
fn json_non_string() -> (String, &'static str) {
    (
        format!(r#"(?i-u)((\\?")[A-Za-z0-9_.-]*{NAMES}\\?"\s*:\s*)[^\s"'\\,{{}}\[\]<>]+"#),
        "${1}${2}<redacted>${2}",
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

/// A value named as a secret in quotes escaped twice (JSON in a JSON string in a JSON
/// string: `{\\\"password\\\":\\\"X\\\"}`), whole up to its closing `\\\"`.
fn twice_escaped() -> (String, &'static str) {
    (
        format!(r#"(?i-u)([A-Za-z0-9_.-]*{NAMES}\\\\\\["']\s*:\s*\\\\\\["']){TWICE_ESCAPED}"#),
        "${1}<redacted>",
    )
}

/// A value named as a secret in quotes escaped inside a JSON string (a service's
/// command line, an event's text, a log line quoting JSON): `{\"token\":\"X\"}`,
/// `PASSWORD=\"X\"`, `--etcd-password \"X\"`, `-token \"X\"`, whole up to its closing `\"`.
fn escaped(flag: &str) -> (String, &'static str) {
    (
        format!(
            r#"(?im-u)((?:[A-Za-z0-9_.-]*{NAMES}(?:\\["'])?\s*[:=]\s*|{flag}\s+)\\["']){ESCAPED}"#
        ),
        "${1}<redacted>",
    )
}
