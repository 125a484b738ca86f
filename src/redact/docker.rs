//! A registry's credential in a Docker config (`~/.docker/config.json`, a
//! `kubernetes.io/dockerconfigjson` Secret's `.dockerconfigjson`): `{"auths": {"REG": {"auth":
//! "base64(user:password)"}}}` (docker/cli cli/config/types/authconfig.go, `AuthConfig`'s
//! `auth`). Only an `auth` inside `auths` names one; the word elsewhere names none.

use super::names::REDACTED;
use regex::bytes::Regex;

/// An `auths` key and its object's `{` (its quotes perhaps escaped: the config inside a JSON
/// string), and an `auth` key and its string value (group 1: up to the value's quote).
pub(super) fn auths() -> [String; 2] {
    [
        r#"(?i-u)\\?"auths\\?"\s*:\s*\{"#.into(),
        r#"(?i-u)(\\?"auth\\?"\s*:\s*\\?")[^"\\\r\n]+"#.into(),
    ]
}

/// `bytes` with every `auth` value inside each `auths` object replaced.
pub(super) fn redact_auths(re: &[Regex; 2], bytes: &[u8]) -> Vec<u8> {
    let [head, auth] = re;
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while let Some(m) = head.find_at(bytes, at) {
        let end = object_end(&bytes[m.end()..]).map_or(bytes.len(), |i| m.end() + i);
        out.extend_from_slice(&bytes[at..m.end()]);
        let with = [b"${1}", REDACTED.as_bytes()].concat();
        out.extend_from_slice(&auth.replace_all(&bytes[m.end()..end], &with[..]));
        at = end;
    }
    out.extend_from_slice(&bytes[at..]);
    out
}

/// Where the object whose `{` came just before `rest` closes (its braces counted, those in
/// strings too: a registry's name or a credential holds none).
pub(super) fn object_end(rest: &[u8]) -> Option<usize> {
    let mut depth = 1usize;
    for (i, b) in rest.iter().enumerate() {
        match b {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}
