//! The judges of calico-node's token: missing, unusable, expired or about to, refused by the
//! API server now, a renewal that failed.

use super::finding::{Code, Finding};

/// How to put a new token on the node, said where only a new one helps.
pub const NEW_TOKEN: &str = "issue a new one with 'calicoctl-win fetch kubeconfig --kubeconfig installer.kubeconfig' (an admin makes installer.kubeconfig with 'calicoctl-win fetch installer-kubeconfig'); where the fleet DaemonSet runs ('fleet plan'), its container ('service keep-token') writes a new one within 20 s of a refusal";

/// Something about calico-node's token, said as it is, with what fixes it.
pub fn token(subject: &str, message: String, remedy: impl Into<String>) -> Finding {
    Finding::new(Code::Token, subject, message, remedy)
}

/// A record of the token's renewals that cannot be read (`what`: the renewal, the failed
/// renewal).
pub fn token_record_unreadable(what: &str, e: &dyn std::fmt::Display) -> Finding {
    token(
        "token",
        format!("cannot read the {what}'s record: {e}"),
        "read calico-node.log; the record is rewritten at CalicoNode's next renewal",
    )
}

/// calico-node's kubeconfig at `path` is missing, cannot be read, or names no token
/// (`why`, said as it is).
pub fn token_missing(path: &str, why: Option<String>) -> Finding {
    let message = why.unwrap_or_else(|| format!(
        "calico-node's kubeconfig {path} holds no token, or the token file it names is missing or empty"
    ));
    token("calico-node's token", message, NEW_TOKEN)
}

/// calico-node's token cannot be used at all.
pub fn token_unusable(path: &str, why: &str) -> Finding {
    token(
        "calico-node's token",
        format!("calico-node's token in {path} is unusable: {why}"),
        NEW_TOKEN,
    )
}

/// calico-node's token by its expiry, `now` being seconds since 1970: expired (no renewal
/// can succeed with it), or with less than `overdue` seconds left, past when CalicoNode renews
/// (at two thirds of its life: less than a quarter left means renewals failed for a while).
pub fn token_expiry(path: &str, expiry: Option<i64>, overdue: i64, now: i64) -> Option<Finding> {
    let expiry = expiry?;
    let left = expiry.saturating_sub(now);
    if left <= 0 {
        return Some(token(
            "calico-node's token",
            format!(
                "calico-node's token in {path} expired {}: no renewal can succeed with it",
                crate::duration::time_text(expiry)
            ),
            NEW_TOKEN,
        ));
    }
    (left < overdue).then(|| {
        token(
            "calico-node's token",
            format!(
                "calico-node's token in {path} expires {} and CalicoNode has not renewed it",
                crate::duration::time_text(expiry)
            ),
            "read calico-node.log: it says why each renewal failed",
        )
    })
}

/// The API server refuses calico-node's token now (401 to a request made with calico-node's
/// own kubeconfig), with its cause where it was told.
pub fn token_refused_now(path: &str, cause: Option<&crate::cluster::refusal::Cause>) -> Finding {
    let (why, remedy) = match cause {
        Some(c) => (
            format!("; cause {}: {}", c.word(), c.describe()),
            c.remedy().to_owned(),
        ),
        None => (
            String::new(),
            format!(
                "{NEW_TOKEN}; 'calicoctl-win status' with an admin kubeconfig tells the refusal's cause"
            ),
        ),
    };
    token(
        "calico-node's token",
        format!(
            "the API server refuses calico-node's token in {path} (401 to calico-node's own kubeconfig{why}): no renewal can succeed with it"
        ),
        remedy,
    )
}

/// CalicoNode's last renewal failed; a 401 (the API server refuses the token itself) needs a
/// new token, said unless the token's expiry already says so.
pub fn token_refused(
    f: &crate::installed::token_records::Refused,
    expiry: Option<i64>,
    now: i64,
    cause: Option<&crate::cluster::refusal::Cause>,
) -> Finding {
    let expired_said = expiry.is_some_and(|e| e <= now);
    let needs_new = f.unauthorized && !expired_said;
    let why = match cause {
        Some(c) => format!(" (cause {}: {})", c.word(), c.describe()),
        None if needs_new => " (its cause was not told: the cluster could not be read)".into(),
        None => String::new(),
    };
    let remedy = match (needs_new, cause) {
        (true, Some(c)) => c.remedy(),
        (true, None) => NEW_TOKEN,
        _ => {
            "none needed while the token is valid: CalicoNode tries again; read calico-node.log if it keeps failing"
        }
    };
    token(
        "calico-node's token",
        format!(
            "CalicoNode could not renew calico-node's token at {}{}: {}{}",
            crate::duration::time_text(f.at),
            f.expires.map_or(String::new(), |e| format!(
                " (it expires {})",
                crate::duration::time_text(e)
            )),
            f.error,
            if needs_new {
                format!("; the API server refuses the token itself (401){why}")
            } else {
                String::new()
            }
        ),
        remedy,
    )
}
