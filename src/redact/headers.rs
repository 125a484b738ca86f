//! HTTP credentials: an `Authorization` header's value, a cookie, an API key header's, in
//! every shape a program prints them.

use super::names::{ESCAPED, NAMES, REDACTED, TWICE_ESCAPED};
use regex::bytes::Regex;

/// The headers whose whole value is a credential besides `Authorization`: a session's cookies
/// (RFC 6265 4.1, 5.4: `Set-Cookie`, `Cookie`) and the API keys and tokens services take in a
/// header of their own.
const VALUE_HEADERS: &str = r"(?:set-)?cookie|x-api-key|x-auth-token";

/// A credential header's list as Go's encoding/json writes an http.Header
/// (`map[string][]string`: `{"Authorization":["Bearer a","Basic b"]}`, `{"Cookie":["a=b"]}`),
/// perhaps escaped in a JSON string, and as Go's `%#v` writes it
/// (`http.Header{"Cookie":[]string{"a=b"}}`), and a `map[string][]string` (a `url.Values`)
/// under a key naming a secret (`map[password:[a]]`, `url.Values{"password":[]string{"a"}}`) (group 1: up to the `:` and blanks, 2: the name,
/// 3 or 5: the list's opening, 4 or 6: its items); a credential in an `Authorization` item after its scheme, if any (group 1: the
/// item's quote and scheme); and any other header's item whole in its quotes, `\"` escaped
/// once or twice (`\\\"`) too (groups 1 to 8: the quotes). Every item's goes; `shapes`' takes the first only.
pub(super) fn header_list() -> [String; 3] {
    [
        // Go's `%#v` (`"Cookie":[]string{"a=b"}`): quoted items up to the list's `}` (groups 3,
        // 4); its `%v` and JSON (`Cookie:[a=b]`): up to the `]` (groups 5, 6).
        format!(
            r#"(?i-u)(((?:proxy-)?authorization|{VALUE_HEADERS}|[A-Za-z0-9_.-]*{NAMES})(?:\\{{1,3}})?["']?\s*:\s*)(?:(\[\]string\{{)((?:"(?:[^"\\\r\n]|\\.)*"|[^"}}\r\n])*)|(\[)([^\]\r\n]*))"#
        ),
        r#"(?i-u)(\\?["'](?:[a-z]+\s+)?)[^\s"'\\,\[\]]+"#.into(),
        format!(
            r#"(?-u)(\\\\\\")(?:{TWICE_ESCAPED})?(\\\\\\")|(\\")(?:{ESCAPED})?(\\")|(")(?:[^"\\\r\n]|\\.)*(")|(')[^'\r\n]*(')"#
        ),
    ]
}

/// A credential header's value outside a list: as HTTP sends it (`Cookie: a=b; c=d`, to the
/// line's end or the JSON string's `"` that holds it, PowerShell's `` `" `` inside it, a
/// cookie's value in quotes after its `=` inside it: RFC 6265 4.1.1, `id="a"`), and in quotes
/// after its name, quoted or not: `"Set-Cookie": "id=a; Path=/"`, `{Cookie: 'a=b'}` (a
/// single-quoted one to its `'`, `''` a quote inside it: YAML 1.2 7.3.2, PowerShell's
/// verbatim string), `\"` escaped, and escaped twice (`\\\"Cookie\\\":\\\"a=b\\\"`: JSON in a
/// JSON string in a JSON string, its closing quote after three backslashes). After `=` only
/// a quoted value (logrus' and klog's `Cookie="a=b"`, PowerShell's `@{ Cookie = 'a=b' }`):
/// an unquoted `cookie=` is prose.
pub(super) fn header_values() -> [(String, &'static str); 5] {
    let name = format!(r#"(?:^|[^A-Za-z0-9_-])(?:{VALUE_HEADERS})"#);
    // A key in quotes ending in a header's name (`"session_cookie"`) is taken as one.
    let key = format!(r#"(?:{name}|(?:{VALUE_HEADERS})["'])"#);
    [
        (
            format!(
                r#"(?i-u)({name}[ \t]*:[ \t]*)[^\s"'\[\\](?:=\\?"[^"\r\n]*?\\?"|\\[^tnr\s"]|[ \t]*(?:`"|[^\s"\\]))*"#
            ),
            "${1}<redacted>",
        ),
        (
            format!(r#"(?i-u)({key}\s*[:=]\s*")(?:`"|[^"\\\r\n]|\\.)+"#),
            "${1}<redacted>",
        ),
        (
            format!(r#"(?i-u)({key}\s*[:=]\s*')(?:[^'\r\n]|'')+"#),
            "${1}<redacted>",
        ),
        (
            format!(r#"(?i-u)((?:{VALUE_HEADERS})\\["']\s*:\s*\\["']){ESCAPED}"#),
            "${1}<redacted>",
        ),
        (
            format!(r#"(?i-u)((?:{VALUE_HEADERS})\\\\\\["']\s*:\s*\\\\\\["']){TWICE_ESCAPED}"#),
            "${1}<redacted>",
        ),
    ]
}

/// `bytes` with every credential of each header list `list` finds replaced (`header_list`).
/// A list without quotes is Go's `%v` of the header's `[]string`, its items joined by blanks
/// (`Authorization:[Basic a Basic b]`, `Cookie:[a=b; c=d]`): every word but an
/// `Authorization` scheme's name goes.
pub(super) fn redact_header_lists(re: &[Regex; 3], bytes: &[u8]) -> Vec<u8> {
    let [list, item, whole] = re;
    list.replace_all(bytes, |c: &regex::bytes::Captures| {
        let part = |i: usize| c.get(i).or(c.get(i + 2)).map_or(&b""[..], |m| m.as_bytes());
        let (open, items) = (part(3), part(4));
        let auth = c[2].to_ascii_lowercase().ends_with(b"authorization");
        // Go's `%v` prints items raw (a quote or backslash in one is the secret's own): a list
        // is quoted only when its first item opens with a quote.
        let quoted = items
            .trim_ascii_start()
            .first()
            .is_some_and(|b| b"\"'\\".contains(b));
        let items = match (quoted, auth) {
            (true, true) => item.replace_all(items, &b"${1}<redacted>"[..]).into_owned(),
            (true, false) => whole
                .replace_all(items, &b"${1}${3}${5}${7}<redacted>${2}${4}${6}${8}"[..])
                .into_owned(),
            (false, _) => unquoted_credentials(items, auth),
        };
        [&c[1], open, &items[..]].concat()
    })
    .into_owned()
}

/// The words of Go's `%v` of a credential header's values, each replaced: of an
/// `Authorization` header (`schemes`), a word that names a scheme (IANA's HTTP Authentication
/// Scheme Registry: `Basic`, `Bearer`, `Digest`, `Negotiate`, `NTLM`, `DPoP`) stays.
pub(super) fn unquoted_credentials(items: &[u8], schemes: bool) -> Vec<u8> {
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
        let scheme = schemes && SCHEMES.iter().any(|s| word.eq_ignore_ascii_case(s));
        if word.is_empty() || scheme {
            out.extend_from_slice(word);
        } else {
            out.extend_from_slice(REDACTED.as_bytes());
        }
        out.extend_from_slice(&piece[word.len()..]);
    }
    out
}

/// An `Authorization` value in double quotes after its name (`Authorization = "Bearer X"`,
/// `"Authorization": "Basic X"`): after its scheme, whole to its closing quote, a `\"` or
/// PowerShell's `` `" `` (about_Special_Characters) inside it (`quotes::double_end`'s rules).
pub(super) fn quoted_authorization(sep: &str) -> (String, &'static str) {
    (
        format!(r#"(?i-u)(authorization{sep}"(?:[a-z]+\s+)?)(?:`"|[^"\\\r\n]|\\.)+"#),
        "${1}<redacted>",
    )
}

/// A value in double quotes after `=` holding a `""` (PowerShell's assignment:
/// `@{ Cookie = "a""b" }`, `$env:TOKEN = "a""b"`), whole: in PowerShell a `""` inside a
/// double-quoted string is a quote (about_Quoting_Rules), as `` `" `` is. Only after `=`: JSON
/// and YAML after a `:` never double a quote (`"a":"" , "b":"c"` is an empty string, then
/// another key). `name`: the regex of the name before the `=`; `scheme`: of what stays after
/// the opening quote.
pub(super) fn assigned_doubled(name: &str, scheme: &str) -> (String, &'static str) {
    let char = r#"(?:`"|[^"\\\r\n]|\\.)"#;
    (
        format!(r#"(?i-u)({name}["']?[ \t]*=[ \t]*\*?"{scheme}){char}*""(?:""|{char})*"#),
        "${1}<redacted>",
    )
}

/// `assigned_doubled` of a credential header's value.
pub(super) fn doubled_header() -> (String, &'static str) {
    assigned_doubled(&format!(r"(?:^|[^A-Za-z0-9_-])(?:{VALUE_HEADERS})"), "")
}

/// `assigned_doubled` of an `Authorization` header's value: its scheme's name stays (after
/// `digest`, which takes a Digest's parameters).
pub(super) fn doubled_authorization() -> (String, &'static str) {
    assigned_doubled("(?:proxy-)?authorization", r"(?:[a-z]+[ \t]+)?")
}

/// A bearer token after its scheme's name (RFC 6750 2.1: `Bearer` then b64token).
pub(super) fn bearer() -> (String, &'static str) {
    (
        r"(?i-u)(bearer\s+)[A-Za-z0-9._~+/=-]{4,}".into(),
        "${1}<redacted>",
    )
}

/// A Digest credential after an `Authorization` name (RFC 7616 3.4: its parameters hold
/// quoted strings, so it goes whole): in a JSON string (`"Digest username=\"a\", ..."`) to
/// the string's closing quote when a JSON `,`, `}` or `]` follows it, so JSON stays JSON;
/// elsewhere (`Authorization="Digest username="a", response="X" text`) to the end of its
/// parameters (RFC 7616 3.4, RFC 9110 11.4: `name=token` or `name="quoted string"`, a `,`
/// or blanks between), the text after them staying.
pub(super) fn digest(sep: &str) -> (String, &'static str) {
    // A quoted value, in quotes escaped too (`\"a\"`: in a JSON string), or a token.
    let value = r#"(?:"(?:[^"\\\r\n]|\\.)*"|\\"(?:[^"\\\r\n]|\\[^"\r\n])*\\"|[^\s",\\]+)"#;
    let param = format!(r#"[A-Za-z0-9!#$%&*+.^_|~-]+[ \t]*=[ \t]*{value}"#);
    (
        format!(
            r#"(?i-u)(?:(authorization{sep}(?:\[\s*)?"digest\s+)(?:[^"\\\r\n]|\\.)*("\s*[,}}\]])|(authorization{sep}(?:\[\s*)?(?:\\?["'])?digest\s+){param}(?:(?:[ \t]*,[ \t]*|[ \t]+){param})*,?)"#
        ),
        "${1}${3}<redacted>${2}",
    )
}

/// A credential in quotes after its scheme, wherever it stands (an `Authorization` list's
/// item on a line of its own, as pretty JSON prints an http.Header): `"Basic X"`, `'NTLM X'`.
pub(super) fn quoted_credential() -> (String, &'static str) {
    (
        r#"(?i-u)(\\?["'](?:basic|negotiate|ntlm)\s+)[A-Za-z0-9+/=]+"#.into(),
        "${1}<redacted>",
    )
}

/// A Digest credential in JSON inside a JSON string (`{\"Authorization\":\"Digest
/// username=\\\"a\\\", response=\\\"X\\\"\"}`), whole up to its closing `\"`: its quotes
/// escaped twice are inside it (`ESCAPED`).
pub(super) fn escaped_digest() -> (String, &'static str) {
    (
        format!(r#"(?i-u)(authorization\\"\s*:\s*(?:\[\s*)?\\"digest\s+){ESCAPED}"#),
        "${1}<redacted>",
    )
}

/// A line of a credential's list items (`text`, from its first item, up to the list's end if
/// any): each quoted item's words, or an unquoted item, replaced as `unquoted_credentials`
/// replaces them (`schemes`: an `Authorization` header's), quotes and `,` kept. An item whose
/// quote is not closed goes to the end.
pub(super) fn list_items(text: &[u8], schemes: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let b = text[i];
        if b.is_ascii_whitespace() || b == b',' {
            out.push(b);
            i += 1;
            continue;
        }
        if b == b'"' {
            let Some(j) = super::env::closing(b'"', &text[i + 1..]) else {
                out.push(b'"');
                out.extend_from_slice(REDACTED.as_bytes());
                return out;
            };
            out.push(b'"');
            out.extend_from_slice(&unquoted_credentials(&text[i + 1..i + 1 + j], schemes));
            out.push(b'"');
            i += j + 2;
            continue;
        }
        let len = text[i..]
            .iter()
            .take_while(|b| !(b.is_ascii_whitespace() || **b == b','))
            .count();
        out.extend_from_slice(REDACTED.as_bytes());
        i += len;
    }
    out
}
