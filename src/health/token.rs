//! calico-node's token: present, whether the API server takes it now (asked with
//! calico-node's own kubeconfig), how long it stays valid by the API server's clock, and a
//! failed renewal with its cause (`cluster::refusal`).

use super::judge;
use super::look::Notes;
use super::sections::{Answered, Asked, RenewalFailed, Token, TokenJudged, TokenShown};
use crate::cluster::credentials;
use crate::cluster::read::ClusterRead;
use crate::cluster::token_check;
use crate::config::Config;
use crate::duration::{now, time_text};
use crate::host::Host;
use crate::installed::token_records::IssuedRecord;

/// A token closer to its expiry than this is a problem worth reporting.
const TOKEN_WARN_SECS: i64 = 7 * 24 * 3600;

/// calico-node's token: present, whether the API server takes it now (`asked`, with
/// calico-node's own kubeconfig), and how long it stays valid by the API server's clock.
/// Whatever is wrong with it is a problem among the others, never the end of the report.
pub(super) fn token(
    host: &dyn Host,
    config: &Config,
    cluster: &ClusterRead,
    asked: Option<&token_check::Answer>,
    n: &mut Notes,
) -> Option<Token> {
    use crate::installed::token_records as renew;
    let path = match config.kubeconfig.as_ref().map(|p| p.as_str().to_owned()) {
        Some(path) if config.datastore == crate::config::types::Datastore::Kubernetes => path,
        _ => return None,
    };
    let token = match node_token(host, &path, n) {
        Ok(token) => token,
        Err(error) => return Some(Token::missing(path, error)),
    };
    if let Some(why) = token.unusable() {
        n.findings.push(judge::token_unusable(&path, &why));
        return Some(Token {
            present: true,
            usable: Some(false),
            ..Token::missing(path, Some(why))
        });
    }
    // A token that is no JWT has the expiry its TokenRequest answer gave, when CalicoNode
    // renewed it; a record also says the clock difference with the API server.
    let record = renew::issued(host, &token).unwrap_or_else(|e| {
        n.findings
            .push(judge::token_record_unreadable("renewal", &e));
        None
    });
    let clock = Clock::of(record.as_ref());
    let expiry = token.expiry().or(record.as_ref().map(|rec| rec.expires));
    let refused_now = match asked {
        Some(token_check::Answer::Refused(_)) => {
            let cause = cause_of_refusal(&token, clock, cluster);
            n.findings
                .push(judge::token_refused_now(&path, cause.as_ref()));
            true
        }
        _ => false,
    };
    let taken = matches!(asked, Some(token_check::Answer::Accepted(_)));
    // The API server just took it: not expired, whatever this node's clock says.
    let taken_past_expiry = taken && expiry.is_some_and(|e| e <= clock.server_now);
    if !(refused_now || taken_past_expiry) {
        let overdue = overdue(&token, record.as_ref());
        n.findings.extend(judge::token_expiry(
            &path,
            expiry,
            overdue,
            clock.server_now,
        ));
    }
    let refused = refused_renewal(host, (&token, expiry), clock, cluster, refused_now, n);
    n.shown.token = Some(shown(&token, expiry, record.as_ref(), clock));
    Some(Token {
        path,
        present: true,
        usable: Some(!refused_now),
        error: None,
        judged: Some(TokenJudged {
            api_server: asked.map(said),
            expires: expiry.map(time_text),
            bound_to_node: token.bound_node(),
            clock_skew_seconds: record.and_then(|rec| rec.skew),
            renewal_failed: refused.map(|f| RenewalFailed {
                at: time_text(f.at),
                needs_new_token: f.needs_new_token(clock.server_now),
                error: f.error,
            }),
        }),
    })
}

/// Now, by this node's clock and by the API server's (the node's minus the difference the
/// record of the token's issue measured; the node's when none was measured).
#[derive(Clone, Copy)]
struct Clock {
    node_now: i64,
    server_now: i64,
    skew: Option<i64>,
}

impl Clock {
    fn of(record: Option<&IssuedRecord>) -> Self {
        let skew = record.and_then(|rec| rec.skew);
        let node_now = now();
        Self {
            node_now,
            server_now: node_now.saturating_sub(skew.unwrap_or(0)),
            skew,
        }
    }
}

/// How little life left means renewals have failed for a while: CalicoNode renews at two
/// thirds of the token's life, so less than a quarter left.
fn overdue(token: &credentials::Token, record: Option<&IssuedRecord>) -> i64 {
    match (token.issued_at().zip(token.expiry()), record) {
        (Some((iat, exp)), _) => (exp - iat) / 4,
        (None, Some(rec)) => rec.lifetime / 4,
        (None, None) => TOKEN_WARN_SECS,
    }
}

/// Why the API server refuses the token (`cluster::refusal`): told from the cluster when it
/// was read with an admin kubeconfig, else from the token alone (its expiry).
fn cause_of_refusal(
    token: &credentials::Token,
    clock: Clock,
    cluster: &ClusterRead,
) -> Option<crate::cluster::refusal::Cause> {
    use crate::cluster::refusal;
    let said = match (cluster, token.service_account()) {
        (ClusterRead::Read(c, _), Some((ns, name))) => refusal::read_now(c, token, (&ns, &name)),
        _ => refusal::Now::default(),
    };
    refusal::cause(
        token,
        clock.node_now,
        &refusal::Now {
            clock_skew: clock.skew,
            ..said
        },
    )
}

/// The token as its lines say it: its expiry, whether it is a JWT, the clock difference to
/// say, and whether it expired by this node's clock with no difference measured.
fn shown(
    token: &credentials::Token,
    expiry: Option<i64>,
    record: Option<&IssuedRecord>,
    clock: Clock,
) -> TokenShown {
    TokenShown {
        expiry,
        jwt: token.is_jwt(),
        skew_to_say: record.and_then(IssuedRecord::skew_to_say),
        past_unmeasured: expiry.is_some_and(|e| e <= clock.node_now) && clock.skew.is_none(),
    }
}

/// The API server's answer to calico-node's token, as the report gives it.
fn said(a: &token_check::Answer) -> Asked {
    use token_check::Answer as A;
    let (answer, error) = match a {
        A::Accepted(_) => (Answered::Accepted, None),
        A::Refused(e) => (Answered::Refused, Some(e.clone())),
        A::Unknown(e) => (Answered::Unknown, Some(e.clone())),
    };
    Asked { answer, error }
}

impl Token {
    /// No token to judge in the kubeconfig at `path`, with the error that said why, if any.
    fn missing(path: String, error: Option<String>) -> Self {
        Self {
            path,
            present: false,
            usable: None,
            error,
            judged: None,
        }
    }
}

/// calico-node's token as its kubeconfig at `path` names it; when there is none to judge,
/// the problem said and the error the report gives (`None`: nothing failed to be read).
fn node_token(
    host: &dyn Host,
    path: &str,
    n: &mut Notes,
) -> Result<credentials::Token, Option<String>> {
    let missing = |why: String| judge::token_missing(path, Some(why));
    let (finding, error) = match host.read_file(path) {
        Ok(Some(k)) => match credentials::node_token_in(host, &String::from_utf8_lossy(&k)) {
            Ok(Some(token)) => return Ok(token),
            Ok(None) => (judge::token_missing(path, None), None),
            Err(e) => {
                let said = e.to_string();
                let f = judge::token("calico-node's token", said.clone(), e.hint());
                (f, Some(said))
            }
        },
        Ok(None) => (
            missing(format!("calico-node's kubeconfig {path} is missing")),
            None,
        ),
        Err(e) => (
            missing(format!("calico-node's kubeconfig: {e}")),
            Some(e.to_string()),
        ),
    };
    n.findings.push(finding);
    Err(error)
}

/// The last failed renewal of this token (a record of another token says nothing of this
/// one), said as a problem with what to do when only a new token helps; a 401's cause told
/// (`cluster::refusal`). A refusal the API server has just repeated (`refused_now`) is said
/// once, by that answer.
fn refused_renewal(
    host: &dyn Host,
    (token, expiry): (&credentials::Token, Option<i64>),
    clock: Clock,
    cluster: &ClusterRead,
    refused_now: bool,
    n: &mut Notes,
) -> Option<crate::installed::token_records::Refused> {
    let refused = crate::installed::token_records::refused(host)
        .unwrap_or_else(|e| {
            n.findings
                .push(judge::token_record_unreadable("failed renewal", &e));
            None
        })
        .filter(|f| f.is_of(token));
    if let Some(f) = &refused
        && !(refused_now && f.unauthorized)
    {
        let cause = if f.unauthorized {
            cause_of_refusal(token, clock, cluster)
        } else {
            None
        };
        n.findings.push(judge::token_refused(
            f,
            expiry,
            clock.server_now,
            cause.as_ref(),
        ));
    }
    refused
}
