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
    assert!(
        kube_proxy_serves(true, Some(&late))
            .unwrap_err()
            .contains("503")
    );
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
