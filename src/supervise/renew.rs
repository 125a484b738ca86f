//! calico-node's token, renewed by CalicoNode with its own credential at two thirds of its
//! life through the TokenRequest API (the node's grant, `cluster::renewal`), written
//! atomically over the kubeconfig's `tokenFile` (client-go re-reads it).
//!
//! Timed by this clock from the answer, never sooner than `floor` after a success. A failure
//! is retried at a tenth of the remaining life (1 s to 5 minutes); an expired or refused token
//! backs off from 5 to 30 minutes. Each outage writes one Application event.

use super::log::Log;
use crate::cluster::credentials::{self, Token};
use crate::cluster::{Cluster, ClusterError};
use crate::host::{Access, EventLevel, Host};
use crate::installed::metrics;
use crate::installed::token_records::{self, IssuedRecord, Refused, skew_sentence};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The event id of a failed renewal (listed in `layout`).
pub use crate::layout::EVENT_RENEWAL_FAILED;
/// Counts an event in CalicoNode's metrics; a failure is said, never more.
pub(super) fn count(host: &dyn Host, name: &str, log: &Log) {
    let counted = metrics::count(host, metrics::NODE_FILE, name, 1);
    log.failed(&format!("cannot count {name}"), counted);
}

/// How often a token that never expires, or a node without one, is looked at again.
const IDLE: Duration = Duration::from_secs(3600);
/// The lifetime asked when the token's is unknown: the TokenRequest API's default, 3600 s.
const DEFAULT_LIFETIME: i64 = 3600;
/// The shortest lifetime the TokenRequest API grants (10 minutes).
const MIN_LIFETIME: i64 = 600;
/// The most time between successful renewals may shrink to; less for a shorter-lived token.
const FLOOR: i64 = 60;
/// Retries once no retry can succeed (expired, or refused as 401): from 5 to 30 minutes.
const OUTAGE_RETRY: (u64, u64) = (300, 1800);

/// When the node's token is due (Unix seconds): by its renewal's record, else at two thirds of
/// its life (or a third of the smallest lifetime before `exp` without `iat`); now when neither
/// tells; `None` when it never expires.
fn due(token: &Token, record: Option<&IssuedRecord>, now: i64) -> Option<i64> {
    if let Some(r) = record {
        return Some(r.due());
    }
    if !token.is_jwt() || token.unusable().is_some() {
        return Some(now);
    }
    let exp = token.expiry()?;
    Some(match token.issued_at() {
        Some(iat) if iat < exp => iat + (exp - iat) * 2 / 3,
        _ => exp - MIN_LIFETIME / 3,
    })
}

/// The wait after a success: two thirds of the granted life, at least the floor.
pub fn after_success(lifetime: i64) -> Duration {
    let floor = FLOOR.min(lifetime / 2).max(1);
    secs((lifetime.saturating_mul(2) / 3).max(floor))
}

/// How long after the `failures`-th failure in a row the next attempt is.
pub fn retry_after(
    expires: Option<i64>,
    now: i64,
    needs_new_token: bool,
    failures: u32,
) -> Duration {
    if needs_new_token {
        let doubled = OUTAGE_RETRY
            .0
            .saturating_mul(1 << failures.saturating_sub(1).min(8));
        return Duration::from_secs(doubled.min(OUTAGE_RETRY.1));
    }
    let left = expires.map_or(IDLE.as_secs() as i64, |e| e.saturating_sub(now));
    secs(left / 10).clamp(Duration::from_secs(1), Duration::from_secs(300))
}

/// Whether the API server refused the credential itself (401) anywhere in the error's chain.
fn unauthorized(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        matches!(
            c.downcast_ref::<ClusterError>(),
            Some(ClusterError::Api { code: 401, .. })
        )
    })
}

/// CalicoNode's renewal: the kubeconfig it keeps fresh and when it looks next.
pub struct Renewal {
    kubeconfig: String,
    token_file: String,
    env: BTreeMap<String, String>,
    next: Instant,
    /// Failures in a row; 0 after a success.
    failures: u32,
    /// The last attempt was refused as 401 (cleared by a success).
    refused: bool,
    /// A renewal is tried at the next look whether the token is due or not.
    forced: bool,
}

impl Renewal {
    /// The renewal of the node's kubeconfig (`KUBECONFIG`) when it reads its token from a file
    /// on a Kubernetes datastore; `None`, said in the log, otherwise.
    pub fn prepare(host: &dyn Host, env: &BTreeMap<String, String>, log: &Log) -> Option<Self> {
        let kubeconfig = super::condition::kubeconfig(env)?.clone();
        let text = match host.read_file(&kubeconfig) {
            Ok(Some(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
            Ok(None) => {
                log.warn(&format!(
                    "calico-node's kubeconfig {kubeconfig} is missing: its token cannot be renewed"
                ));
                return None;
            }
            Err(e) => {
                log.warn(&format!("cannot read {kubeconfig}: {e}"));
                return None;
            }
        };
        let Some(token_file) = crate::render::kubeconfig::token_file_of(&text) else {
            log.info(&format!(
                "{kubeconfig} holds its token inline: CalicoNode renews only a token in a file ('calicoctl-win install' writes one)"
            ));
            return None;
        };
        Some(Self {
            kubeconfig,
            token_file,
            env: env.clone(),
            next: Instant::now(),
            failures: 0,
            refused: false,
            forced: false,
        })
    }

    /// How long until it looks again.
    pub fn due_in(&self) -> Duration {
        self.next.saturating_duration_since(Instant::now())
    }

    /// Another call with the token was refused (401): a renewal is tried at once, so the
    /// refusal is known within the minute.
    pub fn refused_elsewhere(&mut self, log: &Log) {
        if self.refused || self.forced {
            return;
        }
        log.warn("the API server refused calico-node's token (401) when CalicoNode read its Node: trying a renewal now");
        self.forced = true;
        self.next = Instant::now();
    }

    /// Renews the token when it is due; says a failure and schedules the next look.
    pub fn keep(&mut self, host: &dyn Host, log: &Log) {
        if self.due_in() > Duration::ZERO {
            return;
        }
        let forced = std::mem::take(&mut self.forced);
        let now = crate::duration::now();
        let token = match credentials::node_token(host, &self.kubeconfig) {
            Ok(Some(t)) => t,
            Ok(None) => {
                log.warn(&format!(
                    "calico-node's token file {} is missing or empty: its token cannot be renewed",
                    self.token_file
                ));
                self.next = Instant::now() + IDLE;
                return;
            }
            Err(e) => {
                let error = format!("{e}; {}", e.hint());
                self.fail(host, (None, None), &error, true, log);
                return;
            }
        };
        let record = token_records::issued(host, &token).ok().flatten();
        // A token another renewer wrote and recorded ends the earlier refusal.
        if record.is_some() && self.refused {
            log.info("calico-node's token was replaced (by the fleet's renewer): taken as this node's renewal");
            self.refused = false;
            self.failures = 0;
        }
        let Some(due) = due(&token, record.as_ref(), now) else {
            self.next = Instant::now() + IDLE;
            return;
        };
        if now < due && !forced {
            self.next = Instant::now() + secs(due - now);
            let when = crate::duration::show(secs(due - now));
            log.info(&format!("calico-node's token is due for renewal in {when}"));
            return;
        }
        let expires = token.expiry().or(record.as_ref().map(|r| r.expires));
        match self.renew(host, &token, record.as_ref()) {
            Ok(fresh) => {
                count(host, metrics::TOKEN_RENEWALS, log);
                self.succeeded(host, &fresh, log)
            }
            Err(e) => {
                let needs_new = unauthorized(&e);
                if needs_new {
                    count(host, metrics::TOKEN_REFUSALS, log);
                }
                let attempt = (expires, Some(token.fingerprint()));
                self.fail(host, attempt, &format!("{e:#}"), needs_new, log);
            }
        }
    }

    /// Records a success and times the next renewal from it.
    fn succeeded(&mut self, host: &dyn Host, fresh: &IssuedRecord, log: &Log) {
        let after = after_success(fresh.lifetime);
        log.info(&format!(
            "renewed calico-node's token in {}: valid until {}; renewed again in {}",
            self.token_file,
            crate::duration::time_text(fresh.expires),
            crate::duration::show(after)
        ));
        if let Some(said) = fresh.skew.and_then(|s| skew_sentence(s, fresh.lifetime)) {
            log.warn(&format!("{said}: renewals are timed by this node's clock"));
        }
        let kept = token_records::keep_issued(host, fresh);
        log.failed("cannot record the renewal for status", kept);
        self.failures = 0;
        self.refused = false;
        self.next = Instant::now() + after;
    }

    /// The token's service account: its subject, else the record's, else calico-node.
    fn service_account(
        &self,
        token: &Token,
        record: Option<&IssuedRecord>,
        kubeconfig: &str,
    ) -> anyhow::Result<(String, String)> {
        if let Some(sa) = token.service_account() {
            return Ok(sa);
        }
        if let Some(r) = record {
            return Ok((r.namespace.clone(), r.service_account.clone()));
        }
        if token.is_jwt() {
            anyhow::bail!(
                "the token in {} is not a service account's",
                self.token_file
            );
        }
        let ns = crate::render::kubeconfig::namespace_of(kubeconfig).ok_or_else(|| {
            anyhow::anyhow!(
                "the token in {} is not a JWT and {} names no namespace: its service account is unknown",
                self.token_file,
                self.kubeconfig
            )
        })?;
        Ok((ns, "calico-node".into()))
    }

    /// A new token of the same service account and lifetime, written over the token file.
    fn renew(
        &self,
        host: &dyn Host,
        token: &Token,
        record: Option<&IssuedRecord>,
    ) -> anyhow::Result<IssuedRecord> {
        let text = host
            .read_file(&self.kubeconfig)?
            .ok_or_else(|| anyhow::anyhow!("{} is missing", self.kubeconfig))?;
        let text = String::from_utf8_lossy(&text);
        let (namespace, name) = self.service_account(token, record, &text)?;
        // At most what the admission policy admits of calico-node's account.
        let cap =
            i64::try_from(crate::fleet::rights::TOKEN_LIFETIME_CAP.as_secs()).unwrap_or(i64::MAX);
        let lifetime = match (token.issued_at(), token.expiry(), record) {
            (Some(iat), Some(exp), _) if iat < exp => (exp - iat).max(MIN_LIFETIME),
            (_, _, Some(r)) => r.lifetime.max(MIN_LIFETIME),
            _ => DEFAULT_LIFETIME,
        }
        .min(cap);
        let cluster = Cluster::connect_as_node(&self.kubeconfig, &text, token, &self.env)?;
        // Bound to the node's Node again where the server allows it.
        let node = super::diags_review::node_of(&self.env);
        let issued = credentials::token_request(
            &cluster,
            &namespace,
            &name,
            Duration::from_secs(lifetime.unsigned_abs()),
            node.as_ref(),
        )?;
        let received = crate::duration::now();
        let fresh = issued_record(&issued, &namespace, &name, received)?;
        host.write_file(
            &self.token_file,
            issued.token.expose().as_bytes(),
            Access::Secret,
        )?;
        Ok(fresh)
    }

    /// Says a failed renewal where `status` and an administrator look (one event per outage)
    /// and schedules the next attempt.
    fn fail(
        &mut self,
        host: &dyn Host,
        (expires, token): (Option<i64>, Option<String>),
        error: &str,
        unauthorized: bool,
        log: &Log,
    ) {
        let now = crate::duration::now();
        let record = Refused {
            at: now,
            expires,
            error: error.to_owned(),
            unauthorized,
            token,
        };
        let needs_new = record.needs_new_token(now);
        self.refused = unauthorized;
        let line = format!(
            "could not renew calico-node's token ({}): {error}{}",
            expires.map_or("no expiry known".into(), |e| format!(
                "it {} {}",
                if e <= now { "expired" } else { "expires" },
                crate::duration::time_text(e)
            )),
            if needs_new {
                "; no renewal can succeed with this token: issue a new one with 'calicoctl-win fetch kubeconfig --kubeconfig installer.kubeconfig'"
            } else {
                ""
            }
        );
        // A refused token cannot read what tells the other causes apart: status can.
        let line = if unauthorized && expires.is_none_or(|e| e > now) {
            format!(
                "{line} (the token has not expired by this node's clock: 'calicoctl-win status' with an admin kubeconfig tells whether its ServiceAccount was made again, the issuer changed or the signing key rotated)"
            )
        } else {
            line
        };
        self.failures = self.failures.saturating_add(1);
        let after = retry_after(expires, now, needs_new, self.failures);
        log.warn(&format!(
            "{line}; tried again in {}",
            crate::duration::show(after)
        ));
        if self.failures == 1 {
            let message = format!("CalicoNode {line}");
            log.event(host, EventLevel::Warning, EVENT_RENEWAL_FAILED, &message);
        }
        let kept = token_records::keep_refused(host, &record);
        log.failed("cannot record the failed renewal for status", kept);
        self.next = Instant::now() + after;
    }
}

/// What a TokenRequest's answer says of its token, by this node's clock; refused when it has
/// no life left. `service keep-token` keeps the same record.
pub fn issued_record(
    issued: &credentials::Issued,
    namespace: &str,
    name: &str,
    received: i64,
) -> anyhow::Result<IssuedRecord> {
    let token = &issued.token;
    if let Some(why) = token.unusable() {
        anyhow::bail!("the API server issued a token that cannot be used: {why}");
    }
    let expires = issued
        .expires
        .or_else(|| token.expiry())
        .ok_or_else(|| anyhow::anyhow!("the API server's token has no expiry"))?;
    let iat = token.issued_at();
    let lifetime = match iat {
        Some(iat) => expires - iat,
        None => expires.saturating_sub(received),
    };
    if lifetime <= 0 {
        anyhow::bail!(
            "the token the API server issued expired ({}) before it reached this node ({}): the node's clock is far ahead of the API server's ('w32tm /resync')",
            crate::duration::time_text(expires),
            crate::duration::time_text(received)
        );
    }
    Ok(IssuedRecord {
        fingerprint: token.fingerprint(),
        namespace: namespace.into(),
        service_account: name.into(),
        received,
        lifetime,
        expires,
        skew: iat.map(|iat| received.saturating_sub(iat)),
    })
}

fn secs(s: i64) -> Duration {
    Duration::from_secs(s.max(0).unsigned_abs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    fn jwt(claims: &str) -> Token {
        let enc = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        Token::new(format!("{}.{}.sig", enc(r#"{"alg":"RS256"}"#), enc(claims)))
    }

    #[test]
    fn a_token_is_due_at_two_thirds_of_its_life() {
        let due_at = |claims| due(&jwt(claims), None, 0);
        assert_eq!(due_at(r#"{"iat":1000,"exp":1900}"#), Some(1600));
        // No iat: a third of the smallest lifetime before it expires.
        assert_eq!(due_at(r#"{"exp":1900}"#), Some(1700));
        // A legacy secret's token never expires.
        assert_eq!(due_at(r#"{"sub":"x"}"#), None);
        // Not a JWT and no record: due now, so that the renewal learns its expiry.
        assert_eq!(due(&Token::new("opaque"), None, 7), Some(7));
    }

    #[test]
    fn an_outage_backs_off_to_minutes_and_a_valid_token_retries_at_a_tenth_of_its_life() {
        // Expired, or refused as 401: 5, 10, 20, then 30 minutes.
        let mins = |f| retry_after(Some(0), 100, true, f).as_secs() / 60;
        assert_eq!(
            [mins(1), mins(2), mins(3), mins(4), mins(40)],
            [5, 10, 20, 30, 30]
        );
        // Still valid: a tenth of what is left, between 1 s and 5 minutes.
        assert_eq!(
            retry_after(Some(1100), 100, false, 1),
            Duration::from_secs(100)
        );
        assert_eq!(
            retry_after(Some(105), 100, false, 9),
            Duration::from_secs(1)
        );
    }
}
