//! The values of environment variables named as secrets, in the shapes that set them: a
//! Kubernetes `env:` list's `{name, value}` items (a pod's containers, a kubeconfig's exec
//! `env:`) as block YAML, flow YAML, JSON or JSON inside a JSON string, and the lines of
//! Calico for Windows' PowerShell that set and print them. The name decides; the value goes,
//! its quotes stay. A `valueFrom` holds no secret (a reference) and stays.

use regex::bytes::{Captures, Regex};

/// Whether a variable's name says its value is a secret: Calico's own rule, which Felix and
/// Typha follow to hide `FELIX_`/`TYPHA_` variables' values in their logs
/// (projectcalico/calico v3.32.1 libcalico-go/lib/logutils/sensitive.go, `IsSensitiveParam`):
/// a name ending in `file` or `path` names a path (`ETCD_KEY_FILE`, `FELIX_TYPHAKEYFILE`);
/// otherwise one holding password, passwd, passphrase, token, bearer, secret, credential,
/// authorization, cookie or private, or ending in key, cert or kubeconfig, a secret. Wider
/// here: `key` anywhere (`ETCD_KEY_DATA`, `AWS_KEY_ID`), `auth` anywhere (`BASIC_AUTH`).
pub(super) fn names_a_secret(name: &[u8]) -> bool {
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

/// A value in a flow mapping or JSON: in `\"` (JSON in a JSON string: its own escapes `\\\\`
/// and `\\\"` escaped again), `"` or `'` (multi-line allowed, `''` a quote in single quotes:
/// YAML 1.2 7.3), or plain (to its item's `,` `}` `]` or its line's end: YAML 1.2 7.3.3).
const FLOW_VALUE: &str = r#"\\"(?:[^"\\\r\n]|\\[^"\\\r\n]|\\\\(?:\\\\|\\"|\\?[^"\\\r\n]))*\\"|"(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s,{}\[\]"'\\][^,{}\[\]\r\n]*"#;

/// A quote never closed, to its line's end (only where nothing follows the value).
const UNCLOSED: &str = r#"\\?["'][^\r\n]*"#;

/// A value in PowerShell: in `"` (a backtick escapes), in `'` (`''` a quote), or a word.
const PS_VALUE: &str = r#""(?:[^"`\r\n]|`.)*"?|'(?:[^'\r\n]|'')*'?|[^\s;,)]+"#;

/// The shapes of a name and its value: group `n` the name, `v` the value.
pub(super) fn pairs() -> [String; 9] {
    // A key of a flow mapping or JSON object, quoted or not, its quotes perhaps escaped (at
    // the text's start: a piece of a long line cut after its `{"`).
    let key = |k: &str| format!(r#"(?:^|[{{,])\s*(?:\\?["'])?{k}(?:\\?["'])?\s*:[ \t]*"#);
    let name = format!(r#"{}(?:\\?["'])?(?P<n>[A-Za-z0-9_.-]+)"#, key("name"));
    let value = key("value");
    [
        // `{"name": "ETCD_KEY", "value": "X"}`, `{name: X_TOKEN, value: X}`, either order,
        // other keys between, the object perhaps across lines (`kubectl get -o json`).
        format!(r#"(?i-u){name}[^{{}}]*?{value}(?P<v>{FLOW_VALUE}|{UNCLOSED})"#),
        format!(r#"(?i-u){value}(?P<v>{FLOW_VALUE})[^{{}}]*?{name}"#),
        // Calico for Windows' config.ps1 (v3.32.1 node/windows-packaging/CalicoWindows):
        // `Set-EnvVarIfNotSet -var "ETCD_KEY_FILE" -defaultValue "X"`, and what its
        // Set-EnvVarIfNotSet (libs/calico/calico.psm1) writes to the service's log:
        // `Environment variable N is not set. Setting it to the default value: X`,
        // `Environment variable N is already set: X` (the value to its line's end).
        format!(
            r#"(?i-u)-var\s+["']?(?P<n>[A-Za-z0-9_.-]+)["']?\s+-defaultValue\s+(?P<v>{PS_VALUE})"#
        ),
        r"(?i-u)Environment variable (?P<n>[A-Za-z0-9_.-]+) is (?:not set\. Setting it to the default value|already set): (?P<v>[^\r\n]+)".into(),
        // `$env:N = X` and `[Environment]::SetEnvironmentVariable("N", X, ...)`.
        format!(
            r#"(?i-u)(?:\$env:(?P<n>[A-Za-z0-9_.-]+)\s*=|SetEnvironmentVariable\(\s*["'](?P<m>[A-Za-z0-9_.-]+)["']\s*,)[ \t]*(?P<v>{PS_VALUE})"#
        ),
        // Go's `%+v` of a k8s.io/api core/v1 `EnvVar` (fields `Name`, `Value`, `ValueFrom`,
        // fmt's `{Name:X Value:two words ValueFrom:nil}`): the value up to `ValueFrom` or `}`.
        r"(?-u)\{Name:(?P<n>[A-Za-z0-9_.-]+) Value:(?P<v>[^}\s][^}\r\n]*?)(?: ValueFrom:|\})".into(),
        // The generated `String()` of a core/v1 `EnvVar` (gogo protobuf's `generated.pb.go`:
        // `&EnvVar{Name:X,Value:Y,ValueFrom:nil,}`, the value written as it is, commas and
        // all; the Calico CNI plugin's pod dump before v3.31.6; `EnvVar` may have ended the piece
        // before): the value to `,ValueFrom:`.
        r"(?-u)\{Name:(?P<n>[A-Za-z0-9_.-]+),Value:(?P<v>[^\r\n]*?),ValueFrom:".into(),
        // A protobuf map entry in text form (Felix v3.32.1's `ConfigUpdate` logged whole,
        // `felix/daemon/daemon.go` 1517: `config:{key:"etcdpassword" value:"X"}`; protobuf-go's
        // text format may put one or two spaces between fields).
        r#"(?i-u)\bkey:\s*"(?P<n>[A-Za-z0-9_.-]+)"\s*value:\s*(?P<v>"(?:[^"\\\r\n]|\\.)*")"#.into(),
        // confd before v3.31.6 and v3.32.0 (`confd/pkg/backends/calico/client.go`'s
        // `ParseFailed`: `Unable to parse datastore entry Key=%s; Value=%s`): the name is the
        // key's last segment (`/calico/bgp/v1/global/node_mesh_password`), the value runs to
        // the line's end.
        r"(?-u)\bKey=(?:[^;\s]*/)?(?P<n>[A-Za-z0-9_.-]+); Value=(?P<v>[^\r\n]+)".into(),
    ]
}

/// `bytes` with the value of each pair `re` finds whose name names a secret replaced by
/// `with` (in the value's quotes).
pub(super) fn redact_pairs(re: &Regex, bytes: &[u8], with: &[u8]) -> Vec<u8> {
    re.replace_all(bytes, |caps: &Captures| {
        let whole = &caps[0];
        let name = caps.name("n").or_else(|| caps.name("m"));
        let (Some(name), Some(v)) = (name, caps.name("v")) else {
            return whole.to_vec();
        };
        if !names_a_secret(name.as_bytes()) {
            return whole.to_vec();
        }
        let start = v.start() - caps.get(0).map_or(0, |m| m.start());
        let end = start + v.as_bytes().len();
        let mut out = whole[..start].to_vec();
        let q = json_quote(&out);
        let value = quoted(v.as_bytes(), with);
        if value == with && !q.is_empty() {
            out.extend_from_slice(&[q, with, q].concat());
        } else {
            out.extend_from_slice(&value);
        }
        out.extend_from_slice(&whole[end..]);
        out
    })
    .into_owned()
}

/// The quote a JSON key before a value was written in (`"value":`, `\"value\":`), empty when
/// the key was not a JSON one: an unquoted value (`2048`, `true`) replaced after it is
/// written in that quote, so JSON stays JSON.
pub(super) fn json_quote(before: &[u8]) -> &'static [u8] {
    let key = before.trim_ascii_end();
    let Some(key) = key.strip_suffix(b":") else {
        return b"";
    };
    let key = key.trim_ascii_end();
    if key.ends_with(b"\\\"") {
        b"\\\""
    } else if key.ends_with(b"\"") {
        b"\""
    } else {
        b""
    }
}

/// `r` in the quotes `value` had (`\"`, `"`, `'`, one never closed), an empty quoted value
/// as it was.
fn quoted(value: &[u8], r: &[u8]) -> Vec<u8> {
    for q in [&b"\\\""[..], b"\"", b"'"] {
        if let Some(inner) = value.strip_prefix(q) {
            let closed = inner.strip_suffix(q);
            if closed.is_some_and(<[u8]>::is_empty) {
                return value.to_vec();
            }
            let close = if closed.is_some() { q } else { b"" };
            return [q, r, close].concat();
        }
    }
    r.to_vec()
}

/// A block list's item being read (`- name: X` and the lines under it): its `-`'s column, its
/// keys' column, whether its `name` names a secret, whether the lines under its last key are
/// its `value`'s, and where that value's text is; the quote its value opened and has not
/// closed yet (a quoted scalar over lines keeps its closing quote: YAML 1.2 7.3.1, 7.3.2).
struct Item {
    dash: usize,
    col: usize,
    secret: bool,
    in_value: bool,
    open: Option<u8>,
    values: Vec<(usize, usize)>,
}

/// `bytes` with the value of each block list item (YAML 1.2 8.2.1) whose `name` names a
/// secret replaced by `with`, in either order, `valueFrom` left alone (a manifest's or
/// `kubectl get -o yaml`'s `env:`): the inline value (plain to its line's end, or inside its
/// quotes) and every line under the `value` key (a block scalar's, a plain or quoted scalar's
/// continuation).
/// One pass: an item is decided when a line less indented than its `-` closes it.
pub(super) fn redact_block_items(bytes: &[u8], with: &[u8]) -> Vec<u8> {
    let mut stack: Vec<Item> = Vec::new();
    let mut ranges = Vec::new();
    let mut at = 0;
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        let start = at;
        at += line.len();
        let end = line.len()
            - line
                .iter()
                .rev()
                .take_while(|b| matches!(b, b'\r' | b'\n'))
                .count();
        let indent = line[..end].iter().take_while(|b| **b == b' ').count();
        let rest = &line[indent..end];
        let under_value = stack.last().is_some_and(|t| t.in_value && indent > t.col);
        if rest.is_empty() || (rest.starts_with(b"#") && !under_value) {
            continue;
        }
        while stack.last().is_some_and(|t| indent <= t.dash) {
            close(stack.pop(), &mut ranges);
        }
        if let Some(top) = stack.last_mut().filter(|t| t.in_value && indent > t.col) {
            let close = top.open.and_then(|q| closing(q, rest));
            if close.is_some() {
                top.open = None;
            }
            let len = close.unwrap_or(rest.len());
            top.values.push((start + indent, start + indent + len));
            continue;
        }
        let col = match rest.strip_prefix(b"-").filter(|r| r.starts_with(b" ")) {
            Some(r) => {
                let col = end - r.len() + r.iter().take_while(|b| **b == b' ').count();
                let (dash, values) = (indent, Vec::new());
                stack.push(Item {
                    dash,
                    col,
                    secret: false,
                    in_value: false,
                    open: None,
                    values,
                });
                col
            }
            None => indent,
        };
        if let Some(top) = stack.last_mut().filter(|t| t.col == col) {
            key_line(top, &line[col..end], start + col);
        }
    }
    while let Some(item) = stack.pop() {
        close(Some(item), &mut ranges);
    }
    ranges.sort_unstable();
    let mut out = Vec::with_capacity(bytes.len());
    let mut done = 0;
    for (from, to) in ranges {
        if from >= done && to > from {
            out.extend_from_slice(&bytes[done..from]);
            out.extend_from_slice(with);
            done = to;
        }
    }
    out.extend_from_slice(&bytes[done..]);
    out
}

/// An item's value ranges, kept when its name named a secret.
fn close(item: Option<Item>, ranges: &mut Vec<(usize, usize)>) {
    if let Some(item) = item.filter(|i| i.secret) {
        ranges.extend(item.values);
    }
}

/// Reads `key: scalar` (the key perhaps quoted) at `offset` into `top`: a `name`'s scalar
/// decides the item, a `value`'s inline text is kept (inside its quotes; a block scalar's
/// indicator is not text) and the lines under it are then its.
fn key_line(top: &mut Item, text: &[u8], offset: usize) {
    let key_end = text.iter().position(|b| *b == b':').unwrap_or(text.len());
    let key = text[..key_end].trim_ascii().to_ascii_lowercase();
    // Its quotes, double or single (a Python dict's, a PowerShell hashtable's).
    let key = key.trim_ascii_start();
    let key = key
        .strip_prefix(b"\"")
        .or(key.strip_prefix(b"'"))
        .unwrap_or(key);
    let key = key
        .strip_suffix(b"\"")
        .or(key.strip_suffix(b"'"))
        .unwrap_or(key);
    let after = text.get(key_end + 1..).unwrap_or_default();
    top.in_value = key == b"value" && after.first().is_none_or(|b| *b == b' ' || *b == b'\t');
    let lead = after.len() - after.trim_ascii_start().len();
    let scalar = &after[lead..];
    let from = offset + key_end + 1 + lead;
    if key == b"name" {
        let name = scalar
            .split(|b| *b == b'#')
            .next()
            .unwrap_or_default()
            .trim_ascii();
        let name: Vec<u8> = name
            .iter()
            .filter(|b| !matches!(b, b'"' | b'\''))
            .copied()
            .collect();
        top.secret |= names_a_secret(&name);
    } else if top.in_value && !scalar.is_empty() && !matches!(scalar[0], b'|' | b'>') {
        let q = scalar[0];
        let inner = if matches!(q, b'"' | b'\'') {
            &scalar[1..]
        } else {
            scalar
        };
        let skip = scalar.len() - inner.len();
        let close = closing(q, inner);
        top.open = close.is_none().then_some(q).filter(|_| skip > 0);
        let close = close.unwrap_or(inner.len());
        top.values.push((from + skip, from + skip + close));
    }
}

/// Where the quote `q` that opened `inner` closes on its line (`\"` and PowerShell's `` `" ``
/// escape in `"`, `''` is a quote in `'`); `None` for an unquoted scalar or one continued on
/// the next line.
pub(super) fn closing(q: u8, inner: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i < inner.len() {
        match (q, inner[i]) {
            (b'"', b'\\') => i += 1,
            // PowerShell's `` `" ``; a backtick before anything else is itself.
            (b'"', b'`') if inner.get(i + 1) == Some(&b'"') => i += 1,
            (b'"', b'"') => return Some(i),
            (b'\'', b'\'') if inner.get(i + 1) == Some(&b'\'') => i += 1,
            (b'\'', b'\'') => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::Redactor;
    use super::*;

    fn redacted(s: &str) -> String {
        String::from_utf8(Redactor::new(&[]).redact(s.as_bytes())).expect("utf8")
    }

    /// Calico's rule (logutils.IsSensitiveParam), with `key` and `auth` anywhere.
    #[test]
    fn a_name_names_a_secret_as_calico_says_and_a_path_is_none() {
        for secret in [
            "CALICO_DATASTORE_PASSWORD",
            "ETCD_KEY",
            "etcd-key",
            "X_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "TYPHA_CLIENTCERT",
            "BASIC_AUTH",
            "KUBECONFIG",
        ] {
            assert!(names_a_secret(secret.as_bytes()), "{secret}");
        }
        for path in [
            "ETCD_KEY_FILE",
            "FELIX_TYPHAKEYFILE",
            "ETCD_CA_CERT_FILE",
            "TOKEN_PATH",
            "KUBE_NETWORK",
            "NODENAME",
            "ETCD_ENDPOINTS",
        ] {
            assert!(!names_a_secret(path.as_bytes()), "{path}");
        }
    }

    /// calico-node's `env:` as projectcalico/calico v3.32.1 manifests/calico-etcd.yaml
    /// writes it (every secret by `valueFrom`: stays whole), then items an administrator
    /// wrote with the value inline (Kubernetes' EnvVar: name, value, valueFrom), in either
    /// order, quoted or not, a block scalar, LF or CRLF: the values named as secrets go.
    #[test]
    fn a_block_env_lists_secret_values_go_and_value_from_stays() {
        let upstream = "          env:\n            # The location of the etcd cluster.\n            - name: ETCD_ENDPOINTS\n              valueFrom:\n                configMapKeyRef:\n                  name: calico-config\n                  key: etcd_endpoints\n            # Location of the client key for etcd.\n            - name: ETCD_KEY_FILE\n              valueFrom:\n                configMapKeyRef:\n                  name: calico-config\n                  key: etcd_key\n";
        assert_eq!(redacted(upstream), upstream);
        let inline = "            - name: CALICO_DATASTORE_PASSWORD\n              value: plain secret1 # c\n            - name: ETCD_KEY_FILE\n              value: /calico-secrets/etcd-key\n            - name: \"X_TOKEN\"\n              value: \"dq \\\"secret2\"\n            - value: 'sq''secret3'\n              name: ETCD_KEY\n            - name: BLOCK_SECRET\n              value: |\n                secret4\n\n                secret5\n            - name: FELIX_LOGSEVERITYSCREEN\n              value: info\n";
        let want = "            - name: CALICO_DATASTORE_PASSWORD\n              value: <redacted>\n            - name: ETCD_KEY_FILE\n              value: /calico-secrets/etcd-key\n            - name: \"X_TOKEN\"\n              value: \"<redacted>\"\n            - value: '<redacted>'\n              name: ETCD_KEY\n            - name: BLOCK_SECRET\n              value: |\n                <redacted>\n\n                <redacted>\n            - name: FELIX_LOGSEVERITYSCREEN\n              value: info\n";
        assert_eq!(redacted(inline), want);
        let crlf = inline.replace('\n', "\r\n");
        assert_eq!(redacted(&crlf), want.replace('\n', "\r\n"));
        // A kubeconfig's exec `env:` (client-go tools/clientcmd/api/v1 ExecEnvVar: name,
        // value), kubectl's layout.
        let kubeconfig = "users:\n- name: calico-node\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: aws\n      env:\n      - name: AWS_SECRET_ACCESS_KEY\n        value: wJalrXUtnFEMI\n      - name: AWS_PROFILE\n        value: prod\n";
        let out = redacted(kubeconfig);
        assert!(!out.contains("wJalrXUtnFEMI"), "{out}");
        assert!(
            out.contains("value: <redacted>\n      - name: AWS_PROFILE\n        value: prod\n"),
            "{out}"
        );
    }

    /// The same items as JSON (`kubectl get -o json`, one object across lines), on one line,
    /// inside a JSON string (kubectl's last-applied-configuration), and as flow YAML.
    #[test]
    fn json_and_flow_env_items_secret_values_go() {
        // As written (serde_json would sort the keys: `value` before `name` kept here).
        let doc: serde_json::Value = serde_json::from_str(
            r#"{"env": [
                {"name": "ETCD_ENDPOINTS", "value": "https://etcd:2379"},
                {"name": "CALICO_DATASTORE_PASSWORD", "value": "json secret1"},
                {"name": "ETCD_KEY", "valueFrom": {"secretKeyRef": {"name": "calico-etcd-secrets", "key": "etcd-key"}}},
                {"name": "X_TOKEN", "value": "with \"quote\" secret2"}
            ]}"#,
        )
        .expect("json");
        let pretty = serde_json::to_string_pretty(&doc).expect("json");
        let annotation =
            serde_json::json!({"last-applied": serde_json::to_string(&doc).expect("json")});
        let reversed = r#"{"env":[{"value":"https://etcd:2379","name":"ETCD_ENDPOINTS"},{"value":"json secret1","name":"CALICO_DATASTORE_PASSWORD"},{"value":"with \"quote\" secret2","name":"X_TOKEN"}]}"#;
        for text in [
            pretty,
            serde_json::to_string(&doc).expect("json"),
            annotation.to_string(),
            reversed.to_owned(),
        ] {
            let out = redacted(&text);
            for gone in ["secret1", "secret2"] {
                assert!(!out.contains(gone), "{gone} survived: {out}");
            }
            assert!(
                out.contains("https://etcd:2379")
                    && out.contains("calico-etcd-secrets") == text.contains("calico-etcd-secrets"),
                "{out}"
            );
            serde_json::from_str::<serde_json::Value>(&out)
                .unwrap_or_else(|e| panic!("not JSON ({e}): {out}"));
        }
        for (text, want) in [
            (
                "env: [{name: X_TOKEN, value: flowsecret}, {name: NODENAME, value: node1}]",
                "env: [{name: X_TOKEN, value: <redacted>}, {name: NODENAME, value: node1}]",
            ),
            (
                "- {value: 'it''s', name: ETCD_KEY}\r\n",
                "- {value: '<redacted>', name: ETCD_KEY}\r\n",
            ),
            (
                "{\"name\":\"ETCD_KEY_FILE\",\"value\":\"/calico-secrets/etcd-key\"}",
                "{\"name\":\"ETCD_KEY_FILE\",\"value\":\"/calico-secrets/etcd-key\"}",
            ),
            (
                "{\"name\":\"X_PASSWORD\",\"value\":\"\"}",
                "{\"name\":\"X_PASSWORD\",\"value\":\"\"}",
            ),
        ] {
            assert_eq!(redacted(text), want);
        }
    }

    /// Calico for Windows' PowerShell (v3.32.1 node/windows-packaging/CalicoWindows):
    /// config.ps1's settings and the lines its Set-EnvVarIfNotSet (libs/calico/calico.psm1)
    /// writes to the service's log. A path (`ETCD_KEY_FILE`) and a network's name stay.
    #[test]
    fn calico_windows_powershell_env_settings_and_their_log_lines_go() {
        for (text, want) in [
            (
                "Set-EnvVarIfNotSet -var \"ETCD_KEY_FILE\" -defaultValue \"<your etcd key>\"",
                None,
            ),
            (
                "Set-EnvVarIfNotSet -var \"CALICO_DATASTORE_PASSWORD\" -defaultValue \"ps secret\"",
                Some("-defaultValue \"<redacted>\""),
            ),
            (
                "Environment variable ETCD_KEY is already set: LS0tkey data",
                Some("is already set: <redacted>"),
            ),
            (
                "Environment variable X_TOKEN is not set. Setting it to the default value: tok1",
                Some("default value: <redacted>"),
            ),
            (
                "Environment variable KUBE_NETWORK is already set: Calico.*",
                None,
            ),
            ("$env:VXLAN_MAC_PREFIX = \"0E-2A\"", None),
            (
                "$env:ETCD_KEY = 'ps''key'",
                Some("$env:ETCD_KEY = '<redacted>'"),
            ),
            (
                "[Environment]::SetEnvironmentVariable(\"X_TOKEN\", \"abc1\", 'Process')",
                Some("(\"X_TOKEN\", \"<redacted>\", 'Process')"),
            ),
        ] {
            let out = redacted(text);
            match want {
                None => assert_eq!(out, text),
                Some(want) => assert!(
                    out.contains(want)
                        && !out.contains("secret")
                        && !out.contains("key data")
                        && !out.contains("tok1")
                        && !out.contains("abc1")
                        && !out.contains("''key"),
                    "{out}"
                ),
            }
        }
    }

    /// Inputs made to make a pairing search go far and often (pairs never closed, lists never
    /// closed, items ever deeper): each is redacted in one pass over it (a quadratic one
    /// would not end in any sensible time at this size), and what is a secret still goes.
    #[test]
    fn adversarial_inputs_are_redacted_in_one_pass() {
        let r = Redactor::new(&[]);
        let deep: String = (0..600)
            .map(|i| format!("{}- name: X_TOKEN\n", " ".repeat(i)))
            .collect();
        for unit in [
            "{name: X_TOKEN, ",
            "{\"value\": \"v\", ",
            "[--token, ",
            " --token, ",
            "- name: X_TOKEN\n  value: ",
            "\\\"name\\\":\\\"X_TOKEN\\\",",
            "Environment variable ",
            "[--token, \"",
            "[--token, '",
            "[--token, # c\n",
            " --token \"a\\\\\\\"",
            "\\\"--token\\\",\\\"a",
        ] {
            let text = unit.repeat(400_000 / unit.len()) + "{name: X_TOKEN, value: lastsecret}";
            let out = String::from_utf8(r.redact(text.as_bytes())).expect("utf8");
            assert!(!out.contains("lastsecret"), "{unit}");
            // A line at a time (`logs`), each line's pending state carried to the next.
            let mut pending = super::super::Pending::None;
            let mut out = Vec::new();
            for line in text.as_bytes().chunks(64 * 1024) {
                let (text, p) = r.redact_line(pending, line);
                (out, pending) = ([out, text].concat(), p);
            }
            assert!(
                !String::from_utf8_lossy(&out).contains("lastsecret"),
                "{unit}"
            );
        }
        let out = String::from_utf8(r.redact(deep.as_bytes())).expect("utf8");
        assert_eq!(out, deep);
    }
}
