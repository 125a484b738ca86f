use super::*;
use crate::host::http_probe::Answer;

fn answer(code: u16, body: &str) -> Answer {
    Answer {
        code,
        body: body.into(),
    }
}

/// kube-proxy's `/healthz` as `proxy_health.go` answers it: stopped, no answer or a 503 (a
/// late queued change) is not ready; a 200 is, with or without its proxiers named.
#[test]
fn kube_proxy_is_ready_when_it_runs_and_its_healthz_answers_200() {
    assert!(kube_proxy_serves(false, None).is_err());
    assert!(kube_proxy_serves(true, None).is_err());
    let late = answer(503, r#"{"healthy":false,"nodeEligible":true}"#);
    assert!(matches!(
        kube_proxy_serves(true, Some(&late)),
        Err(KubeProxyUnready::Waiting(w)) if w.contains("503")
    ));
    let synced = answer(
        200,
        r#"{"healthy":true,"status":{"IPv4":{"lastUpdated":"2026-01-01T00:00:00Z","healthy":true}}}"#,
    );
    assert!(kube_proxy_serves(true, Some(&synced)).is_ok());
    let older = answer(
        200,
        r#"{"lastUpdated":"2026-01-01T00:00:00Z","currentTime":"2026-01-01T00:00:00Z"}"#,
    );
    assert!(kube_proxy_serves(true, Some(&older)).is_ok());
}

/// A 503 whose JSON says `"nodeEligible": false` is the node being removed, as both forms of
/// `healthzHandler` write it: `fmt.Fprintf` (kube-proxy 1.28 until the `ProxyHealth` struct)
/// and `json.Marshal` of `ProxyHealth` (newer, `"healthy"` the proxier's alone, so true
/// beside the 503). A 503 of a late change with the node eligible, or an unreadable body,
/// is waited for.
#[test]
fn a_503_saying_the_node_is_not_eligible_is_the_node_being_removed() {
    let formatted = answer(
        503,
        r#"{"lastUpdated": "2026-01-01 00:00:00 +0000 UTC","currentTime": "2026-01-01 00:00:01 +0000 UTC", "nodeEligible": false}"#,
    );
    let marshalled = answer(
        503,
        r#"{"lastUpdated":"2026-01-01T00:00:00Z","currentTime":"2026-01-01T00:00:01Z","nodeEligible":false,"healthy":true,"status":{"IPv4":{"lastUpdated":"2026-01-01T00:00:00Z","healthy":true}}}"#,
    );
    for a in [&formatted, &marshalled] {
        assert_eq!(
            kube_proxy_serves(true, Some(a)),
            Err(KubeProxyUnready::NodeBeingRemoved),
            "{}",
            a.body
        );
    }
    for body in [r#"{"nodeEligible":true,"healthy":false}"#, "not json"] {
        assert!(matches!(
            kube_proxy_serves(true, Some(&answer(503, body))),
            Err(KubeProxyUnready::Waiting(_))
        ));
    }
    let f = node_being_removed(&"win-1".into());
    assert_eq!(f.code, Code::NodeBeingRemoved);
    assert_eq!(f.subject, "win-1");
}
