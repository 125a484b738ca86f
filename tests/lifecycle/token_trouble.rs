//! What can go wrong with calico-node's token on a node, and what CalicoNode and `status` do
//! about it: a renewal is no drift, an expired or refused token is not asked for again every
//! second, a server whose clock is behind cannot make renewals loop, a token that is no JWT
//! takes its expiry from the TokenRequest answer, and a token file status cannot use is one
//! problem among the others. Against the fake API server, on the simulated host.

#![cfg(unix)]

use crate::support::fake_api::FakeApi;
use crate::support::release::release_zip;
use crate::support::{Node, on_node};
use base64::Engine;
use serde_json::{Value, json};
use std::time::Duration;

const TOKEN_PATH: &str = "/api/v1/namespaces/calico-system/serviceaccounts/calico-node/token";

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64
}

/// A JWT with these claims (not signed: the fake server accepts only tokens it issued).
fn jwt(claims: &str) -> String {
    let enc = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
    format!("{}.{}.sig", enc(r#"{"alg":"RS256"}"#), enc(claims))
}

/// A node installed (services not started) against `api`.
fn installed(api: &FakeApi) -> Node {
    let node = Node::new(api);
    let zip = release_zip(node.dir.path(), "3.30.2", "calico-node.exe");
    let zip = zip.display().to_string();
    let (code, _, stderr) = node.run(&["install", "--no-start", "--release-zip", &zip]);
    assert_eq!(code, 0, "{stderr}");
    node
}

fn token_file(node: &Node) -> std::path::PathBuf {
    node.c_drive("calicowindows/calico-kube-config.token")
}

/// `status --offline -o json` (and `--verify` with `verify`): exit code and document.
fn status(node: &Node, verify: bool) -> (Option<i32>, Value, String) {
    let mut cmd = on_node();
    cmd.args(["status", "--offline", "-o", "json", "--sim-host"])
        .arg(node.sim());
    if verify {
        cmd.arg("--verify");
    }
    let out = cmd.output().expect("status");
    (
        out.status.code(),
        crate::support::json(&out.stdout),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn problems(doc: &Value) -> Vec<String> {
    crate::support::status_problems(doc)
}

/// CalicoNode in the foreground until what it adds to its log file satisfies `ready` (at most
/// 60 s: a loaded CI machine starts it slowly); then stopped: its log.
fn run_node_until(node: &Node, ready: impl Fn(&str) -> bool) -> String {
    let log_file = node.c_drive("calicowindows/logs/calico-node.log");
    let before = fs_err::read_to_string(&log_file).map_or(0, |t| t.len());
    let child = crate::support::console_node(&node.sim(), &[]);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let text = fs_err::read_to_string(&log_file).unwrap_or_default();
        if ready(text.get(before..).unwrap_or_default()) {
            break;
        }
        if std::time::Instant::now() > deadline {
            let log = crate::support::stop_console(child);
            panic!("CalicoNode never got there in 60 s: {log}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    crate::support::stop_console(child)
}

fn token_requests(api: &FakeApi) -> usize {
    api.requests()
        .iter()
        .filter(|(m, p)| m == "POST" && p == TOKEN_PATH)
        .count()
}

fn renewal_events(node: &Node) -> usize {
    let text = fs_err::read_to_string(node.sim().join("state.json")).expect("state");
    let state: Value = serde_json::from_str(&text).expect("json");
    state["events"]
        .as_array()
        .map_or(0, |e| e.iter().filter(|e| e["id"] == 5).count())
}

#[test]
fn a_renewed_token_is_not_drift() {
    let api = FakeApi::calico();
    let node = installed(&api);
    // What CalicoNode does at a renewal: a new token of the same account over the file.
    let fresh = jwt(&format!(
        r#"{{"iat":{},"exp":{},"sub":"system:serviceaccount:calico-system:calico-node"}}"#,
        now(),
        now() + 3600
    ));
    fs_err::write(token_file(&node), &fresh).expect("renew");
    for verify in [false, true] {
        let (_, doc, stderr) = status(&node, verify);
        let p = problems(&doc);
        assert!(
            p.iter().all(|l| !l.contains("calico-kube-config.token")),
            "verify={verify}: {p:?} {stderr}"
        );
    }
    // Gone is still drift.
    fs_err::remove_file(token_file(&node)).expect("remove");
    let (code, doc, _) = status(&node, false);
    assert_eq!(code, Some(1));
    assert!(
        problems(&doc)
            .iter()
            .any(|l| l.contains("calico-kube-config.token is missing")),
        "{doc}"
    );
}

#[test]
fn an_expired_token_is_not_asked_for_again_every_second_and_status_says_what_to_do() {
    let api = FakeApi::calico();
    let node = installed(&api);
    let expired = jwt(&format!(
        r#"{{"iat":{},"exp":{},"sub":"system:serviceaccount:calico-system:calico-node"}}"#,
        now() - 7200,
        now() - 3600
    ));
    fs_err::write(token_file(&node), &expired).expect("expire");
    let before = token_requests(&api);
    // The first attempt, and when the next is: not in a second (its log says when). The run
    // ends once the Node's condition was refused too: the watch loop's answer to that refusal
    // (a renewal at once, `refused_elsewhere`) has then had its turn, and must not ask again.
    let log = run_node_until(&node, |l| {
        l.contains("could not renew") && l.contains("cannot set the node's condition")
    });
    let asked = token_requests(&api) - before;
    assert_eq!(asked, 1, "{asked} TokenRequests: {log}");
    assert!(log.contains("; tried again in 5m"), "{log}");
    assert_eq!(renewal_events(&node), 1, "{log}");
    assert!(log.contains("no renewal can succeed"), "{log}");
    let (code, doc, _) = status(&node, false);
    assert_eq!(code, Some(1));
    // The sentence says what is so, its remedy what to do: one finding says both.
    let findings = doc["findings"].as_array().cloned().unwrap_or_default();
    assert!(
        findings.iter().any(|f| f["code"] == "token"
            && f["message"].as_str().is_some_and(|m| m.contains("expired"))
            && f["remedy"]
                .as_str()
                .is_some_and(|r| r.contains("fetch kubeconfig"))),
        "{}",
        problems(&doc).join("\n")
    );
    assert_eq!(
        doc["token"]["renewal_failed"]["needs_new_token"], true,
        "{doc}"
    );
}

#[test]
fn a_server_clock_behind_the_nodes_cannot_make_renewals_loop() {
    let api = FakeApi::calico();
    {
        let mut st = api.lock();
        // Tokens of 30 s from a server 25 s behind: each is due by its own claims on arrival.
        st.max_token_seconds = Some(30);
        st.clock_behind = 25;
    }
    let node = installed(&api);
    let before = token_requests(&api);
    // The first renewal (the install's token is due by its own claims), and when the next is:
    // two thirds of the 30 s granted, not at once as by the new token's own claims (its log
    // says when).
    let log = run_node_until(&node, |l| l.contains("renewed calico-node's token"));
    let asked = token_requests(&api) - before;
    assert_eq!(asked, 1, "{asked} TokenRequests: {log}");
    assert!(log.contains("; renewed again in 20s"), "{log}");
    assert!(log.contains("s ahead of the API server's"), "{log}");
    let (_, doc, _) = status(&node, false);
    assert!(
        doc["token"]["clock_skew_seconds"]
            .as_i64()
            .is_some_and(|s| s >= 24),
        "{doc}"
    );
}

#[test]
fn a_token_that_is_no_jwt_takes_its_expiry_from_the_tokenrequest_answer() {
    let api = FakeApi::calico();
    api.lock().opaque_tokens = true;
    api.lock().max_token_seconds = Some(3600);
    let node = installed(&api);
    let first = fs_err::read_to_string(token_file(&node)).expect("token");
    assert!(first.starts_with("opaque-token-"), "{first}");
    let (_, doc, _) = status(&node, false);
    assert!(doc["token"]["expires"].is_null(), "{doc}");
    // CalicoNode renews it at once to learn its expiry, then not again for 40 minutes.
    let log = run_node_until(&node, |l| l.contains("renewed calico-node's token"));
    let second = fs_err::read_to_string(token_file(&node)).expect("token");
    assert_ne!(first, second, "{log}");
    let (_, doc, _) = status(&node, false);
    let expires = doc["token"]["expires"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(!expires.is_empty(), "{doc}");
    let asked = token_requests(&api);
    // Into the loop that renews, until it looked at the token (its log says when it is due).
    let log = run_node_until(&node, |l| {
        l.contains("calico-node's token is due for renewal in") || l.contains("renewed")
    });
    assert_eq!(
        token_requests(&api),
        asked,
        "renewed again before it was due: {log}"
    );
    let due = log.split("due for renewal in ").nth(1);
    let due = due.and_then(|t| t.split_whitespace().next());
    let due = due.map(calicoctl_win::duration::parse);
    assert!(
        matches!(due, Some(Ok(d)) if d > Duration::from_secs(30 * 60)),
        "{log}"
    );
}

#[test]
fn absurd_token_claims_are_an_unusable_token_not_a_crash() {
    let api = FakeApi::calico();
    let node = installed(&api);
    for claims in [
        format!(r#"{{"iat":{},"exp":{}}}"#, i64::MIN, i64::MAX),
        format!(r#"{{"iat":{},"exp":{}}}"#, i64::MAX, i64::MIN),
        r#"{"exp":1e300}"#.to_owned(),
    ] {
        fs_err::write(token_file(&node), jwt(&claims)).expect("write");
        let (code, doc, stderr) = status(&node, false);
        assert_eq!(code, Some(1), "{claims}: {stderr}");
        let p = problems(&doc).join("\n");
        assert!(p.contains("is unusable"), "{claims}: {p}");
        // CalicoNode does not crash on it either (a debug build panics on overflow).
        let log = run_node_until(&node, |l| l.contains("could not renew"));
        assert!(!log.contains("panicked"), "{claims}: {log}");
        assert!(log.contains("could not renew"), "{claims}: {log}");
    }
}

#[test]
fn a_token_file_status_cannot_use_is_one_problem_among_the_others() {
    let api = FakeApi::calico();
    let node = installed(&api);
    let file = token_file(&node);
    // Unreadable: a directory in its place.
    fs_err::remove_file(&file).expect("remove");
    fs_err::create_dir(&file).expect("dir");
    let (code, doc, stderr) = status(&node, false);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(doc["healthy"], false, "{doc}");
    assert!(
        doc["services"].is_array() || doc["services"].is_object(),
        "{doc}"
    );
    assert!(
        problems(&doc)
            .iter()
            .any(|p| p.contains("calico-kube-config.token")),
        "{doc}"
    );
    fs_err::remove_dir(&file).expect("rmdir");
    // Over the cap: said as such, not as missing.
    fs_err::write(&file, vec![b'a'; 70 * 1024]).expect("write");
    let (_, doc, _) = status(&node, false);
    let p = problems(&doc).join("\n");
    assert!(p.contains("over the 64 KiB cap"), "{p}");
    assert!(!p.contains("missing or empty"), "{p}");
    // Control characters: no token.
    fs_err::write(&file, "abc\u{1b}[2Jdef").expect("write");
    let (_, doc, _) = status(&node, false);
    let p = problems(&doc).join("\n");
    assert!(p.contains("control characters"), "{p}");
    let log = run_node_until(&node, |l| l.contains("control characters"));
    assert!(log.contains("control characters"), "{log}");
}

/// A renewal refused with 401, as CalicoNode records it (`TokenRenewal` in Calico's key).
fn refused_now(node: &Node) {
    let record = json!({"at": now(), "expires": now() + 3600,
        "error": "the API server refused the request: Unauthorized (401)", "unauthorized": true});
    node.edit_state(|state| {
        state["registry"][r"hklm\software\tigera\calico"]["tokenrenewal"] =
            json!({"type": "REG_SZ", "data": record.to_string()});
    });
}

/// `status` with the cluster read: the cause of the 401 its token finding names.
fn cause_said(node: &Node) -> String {
    let (code, doc, err) = node.run(&["status"]);
    assert_eq!(code, 1, "{err} {doc}");
    problems(&doc)
        .into_iter()
        .find(|p| p.contains("refuses calico-node's token"))
        .unwrap_or_else(|| panic!("no refusal said: {doc}"))
}

/// Each cause of a 401 told apart: the ServiceAccount made again (kube-apiserver refuses a
/// token whose account uid is gone), the issuer changed, the signing key rotated.
#[test]
fn status_names_the_cause_of_a_refused_token() {
    let api = FakeApi::calico();
    let node = installed(&api);
    refused_now(&node);
    // Nothing changed in the cluster: the token's account and issuer are current.
    api.rotate_signing_key();
    let said = cause_said(&node);
    assert!(said.contains("cause signing-key"), "{said}");

    api.recreate_service_account("calico-system", "calico-node");
    let said = cause_said(&node);
    assert!(
        said.contains("cause serviceaccount-recreated") && said.contains("-again"),
        "{said}"
    );

    let node = installed(&api);
    refused_now(&node);
    api.set_issuer("https://issuer.example");
    let said = cause_said(&node);
    assert!(
        said.contains("cause issuer-changed")
            && said.contains("https://kubernetes.default.svc")
            && said.contains("https://issuer.example"),
        "{said}"
    );
}

/// A refused token is noticed within the minute: CalicoNode's look at its Node gets a 401, a
/// renewal is tried at once (not at two thirds of the token's year), refused and recorded, and
/// `status` names the cause.
#[test]
fn a_refused_token_is_noticed_at_the_first_look_not_at_its_renewal_time() {
    let api = FakeApi::calico();
    let node = installed(&api);
    api.recreate_service_account("calico-system", "calico-node");
    let before = token_requests(&api);
    let log = run_node_until(&node, |l| l.contains("could not renew"));
    assert!(
        log.contains(
            "refused calico-node's token (401) when CalicoNode read its Node: trying a renewal now"
        ),
        "{log}"
    );
    assert_eq!(token_requests(&api) - before, 1, "{log}");
    assert_eq!(renewal_events(&node), 1, "{log}");
    // Counted in CalicoNode's metrics file: one refusal, no renewal.
    let counted = crate::node_health::metrics_file(&node, "calicoctl-win-metrics.json");
    assert_eq!(
        counted["calicoctl_win_token_refusals_total"], 1,
        "{counted}"
    );
    assert!(
        counted.get("calicoctl_win_token_renewals_total").is_none(),
        "{counted}"
    );
    let said = cause_said(&node);
    assert!(said.contains("cause serviceaccount-recreated"), "{said}");
}

/// Tokens bound to the Node where the server binds them (by default from Kubernetes 1.31): status
/// says so, deleting the Node revokes the token, noticed at CalicoNode's first look and told
/// as `node-deleted`; an older server (no Node binding) gives an unbound token, and install
/// and status say so.
#[test]
fn tokens_are_bound_to_the_node_where_the_server_allows_and_status_says_which() {
    let api = FakeApi::calico();
    let node = installed(&api);
    let (_, doc, err) = node.run(&["status"]);
    assert_eq!(doc["token"]["bound_to_node"], "win-1", "{err} {doc}");

    let mut saved = api.get("/api/v1/nodes/win-1").expect("node");
    api.remove("/api/v1/nodes/win-1");
    run_node_until(&node, |l| l.contains("could not renew"));
    // kubelet registers the Node again: a new object, with a new uid.
    saved["metadata"]["uid"] = "uid-win-1-again".into();
    api.put("/api/v1/nodes/win-1", saved);
    let said = {
        let (_, doc, _) = node.run(&["status"]);
        problems(&doc)
            .into_iter()
            .find(|p| p.contains("refuses calico-node's token"))
            .unwrap_or_else(|| panic!("{doc}"))
    };
    assert!(
        said.contains("cause node-deleted") && said.contains("win-1"),
        "{said}"
    );

    let old = FakeApi::calico();
    old.set_node_binding(false);
    let node = Node::new(&old);
    let zip = release_zip(node.dir.path(), "3.30.2", "calico-node.exe");
    let zip = zip.display().to_string();
    let (code, doc, err) = node.run(&["install", "--no-start", "--release-zip", &zip]);
    assert_eq!(code, 0, "{err}");
    assert!(
        crate::support::items(&doc, "prepare").any(|p| p.as_str().is_some_and(|p| p
            .contains("not bound to the Node")
            && p.contains("Unsupported value"))),
        "{doc}"
    );
    let (_, doc, _) = node.run(&["status"]);
    assert_eq!(doc["token"]["bound_to_node"], Value::Null, "{doc}");
}

/// No restart: a client that reads the kubeconfig's `tokenFile` as client-go does
/// (`support::client_go`) uses a new token written over the file within 50 s, or at its next
/// request after a 401 (the token refused: the ServiceAccount made again), with no restart of
/// the program that holds it.
#[test]
fn a_new_token_written_over_the_file_is_used_without_a_restart() {
    let api = FakeApi::calico();
    let node = installed(&api);
    let mut felix = crate::support::client_go::FileTokenSource::new(token_file(&node));
    let accepts = |t: &str| api.accepts(t);
    let (old, ok) = felix.request(accepts);
    assert!(ok, "the installed token is accepted");

    // A new token written over the file (here by 'fetch kubeconfig' again): used at the next
    // read, at most 50 s later, without a restart.
    let (code, _, err) = node.run(&[
        "fetch",
        "kubeconfig",
        "--refresh-if-expiring-within",
        "1000d",
    ]);
    assert_eq!(code, 0, "{err}");
    felix.now = 49;
    assert_eq!(felix.request(accepts).0, old, "cached within the period");
    felix.now = 50;
    let (fresh, ok) = felix.request(accepts);
    assert!(ok && fresh != old, "read again after 50 s");

    // The token refused: the 401 makes the next request read the file, where the new token
    // written since is taken at once.
    api.recreate_service_account("calico-system", "calico-node");
    felix.now = 60;
    assert!(!felix.request(accepts).1, "refused");
    let (code, _, err) = node.run(&[
        "fetch",
        "kubeconfig",
        "--refresh-if-expiring-within",
        "1000d",
    ]);
    assert_eq!(code, 0, "{err}");
    felix.now = 61;
    let (newest, ok) = felix.request(accepts);
    assert!(
        ok && newest != fresh,
        "taken at the first request after the 401"
    );
}

/// The token's fingerprint as CalicoNode records it (`Token::fingerprint`: the first 16 hex
/// digits of its SHA-256), never the token.
fn fingerprint(token: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(token.trim().as_bytes())[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A token the API server refuses is a problem at status's first look, with CalicoNode
/// stopped and no renewal recorded: status asks with calico-node's own kubeconfig, online
/// (the cause told with the admin kubeconfig) and offline, as the fleet DaemonSet's readiness
/// runs it.
#[test]
fn status_asks_the_api_server_whether_it_takes_the_token() {
    let api = FakeApi::calico();
    let node = installed(&api);
    api.recreate_service_account("calico-system", "calico-node");
    let (code, doc, err) = node.run(&["status"]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(doc["token"]["usable"], false, "{doc}");
    assert!(doc["token"]["renewal_failed"].is_null(), "{doc}");
    let said = problems(&doc).join("\n");
    assert!(
        said.contains("refuses calico-node's token")
            && said.contains("cause serviceaccount-recreated"),
        "{said}"
    );
    let (code, doc, _) = status(&node, false);
    assert_eq!(code, Some(1));
    assert_eq!(doc["token"]["api_server"]["answer"], "refused", "{doc}");
    assert!(
        problems(&doc)
            .iter()
            .any(|p| p.contains("refuses calico-node's token")),
        "{doc}"
    );
    // A new token for the new account: taken.
    let (code, _, err) = node.run(&["fetch", "kubeconfig"]);
    assert_eq!(code, 0, "{err}");
    let (_, doc, err) = node.run(&["status"]);
    assert_eq!(
        doc["token"]["api_server"]["answer"], "accepted",
        "{err} {doc}"
    );
    assert_eq!(doc["token"]["usable"], true, "{doc}");
}

/// calico-node's kubeconfig carries the cluster's CA, which alone is trusted (client-go leaves
/// the system roots out when a CA is given): a server whose certificate another CA signed is
/// never asked, and the answer is unknown, not taken.
#[test]
fn a_server_certificate_from_another_ca_than_the_kubeconfigs_leaves_the_answer_unknown() {
    let api = FakeApi::calico();
    let node = installed(&api);
    let (_, doc, _) = status(&node, false);
    assert_eq!(doc["token"]["api_server"]["answer"], "accepted", "{doc}");
    let path = node.c_drive("calicowindows/calico-kube-config");
    let mut kubeconfig: Value =
        serde_json::from_str(&fs_err::read_to_string(&path).expect("read")).expect("json");
    let other = FakeApi::start();
    kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"] =
        json!(base64::engine::general_purpose::STANDARD.encode(&other.ca_pem));
    fs_err::write(&path, kubeconfig.to_string()).expect("write");
    let asked = api.requests().len();
    let (_, doc, _) = status(&node, false);
    assert_eq!(doc["token"]["api_server"]["answer"], "unknown", "{doc}");
    assert_eq!(
        api.requests().len(),
        asked,
        "the TLS handshake failed first"
    );
}

/// A recorded refusal is of the one token it was made with: once 'fetch kubeconfig' wrote a
/// new token, the old refusal no longer degrades the node.
#[test]
fn a_refusal_of_the_old_token_is_not_the_new_ones() {
    let api = FakeApi::calico();
    let node = installed(&api);
    let old = fs_err::read_to_string(token_file(&node)).expect("token");
    let record = json!({"at": now(), "expires": now() + 3600, "unauthorized": false,
        "error": "serviceaccounts \"calico-node\" is forbidden (403)", "token": fingerprint(&old)});
    node.edit_state(|state| {
        state["registry"][r"hklm\software\tigera\calico"]["tokenrenewal"] =
            json!({"type": "REG_SZ", "data": record.to_string()});
    });
    let refusal = |doc: &Value| {
        problems(doc)
            .into_iter()
            .any(|p| p.contains("could not renew calico-node's token"))
    };
    let (_, doc, _) = status(&node, false);
    assert!(refusal(&doc), "{doc}");
    let (code, _, err) = node.run(&["fetch", "kubeconfig"]);
    assert_eq!(code, 0, "{err}");
    assert_ne!(
        fs_err::read_to_string(token_file(&node)).expect("token"),
        old
    );
    let (_, doc, _) = status(&node, false);
    assert!(!refusal(&doc), "{doc}");
    assert!(doc["token"]["renewal_failed"].is_null(), "{doc}");
}

/// The node's clock two hours ahead of the API server's, tokens of an hour: install and
/// 'fetch kubeconfig' say the difference they measure (and fetch does not take it for the
/// server's cap); status judges the token by the API server's clock, with the difference
/// CalicoNode's renewal measured, so a working token is not called expired, the API server
/// unreachable or not.
#[test]
fn a_node_clock_two_hours_ahead_does_not_expire_a_working_token() {
    let api = FakeApi::calico();
    {
        let mut st = api.lock();
        st.max_token_seconds = Some(3600);
        st.clock_behind = 7200;
    }
    let node = Node::new(&api);
    let zip = release_zip(node.dir.path(), "3.30.2", "calico-node.exe");
    let zip = zip.display().to_string();
    let (code, _, install_err) = node.run(&["install", "--no-start", "--release-zip", &zip]);
    assert_eq!(code, 0, "{install_err}");
    let expired = |doc: &Value| problems(doc).into_iter().any(|p| p.contains("expired"));
    let (_, doc, _) = node.run(&["status"]);
    assert!(!expired(&doc), "{doc}");
    let (code, _, err) = node.run(&["fetch", "kubeconfig", "--lifetime", "2h"]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("granted 0s"), "{err}");
    assert!(
        err.contains("granted 1h") && err.contains("s ahead of the API server's"),
        "{err}"
    );
    assert!(
        install_err.contains("s ahead of the API server's"),
        "{install_err}"
    );
    // CalicoNode's renewal measures the difference and records it with the new token.
    run_node_until(&node, |l| l.contains("renewed calico-node's token"));
    let (_, doc, _) = status(&node, false);
    assert!(
        doc["token"]["clock_skew_seconds"]
            .as_i64()
            .is_some_and(|s| s >= 7199),
        "{doc}"
    );
    // No API server to ask: judged on its clock by the recorded difference.
    drop(api);
    let (_, doc, _) = status(&node, false);
    assert_eq!(doc["token"]["api_server"]["answer"], "unknown", "{doc}");
    assert!(!expired(&doc), "{doc}");
}
