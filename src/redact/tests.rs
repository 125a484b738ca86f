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
