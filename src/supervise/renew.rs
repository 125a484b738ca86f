//! calico-node's token, renewed by CalicoNode before it expires, with calico-node's own
//! credential: no admin kubeconfig stays on a node.
//!
//! The kubeconfig names its token file (`tokenFile`); when two thirds of the token's life have
//! passed, CalicoNode asks the TokenRequest API for a new token of the same service account
//! and lifetime (the API server may cap it), authenticating with the current one, and writes
//! it atomically over the file; felix, confd, calico-node and the CNI plugin read the file
//! again (client-go re-reads a `tokenFile` every minute). The right to do so is the node's
//! grant (`cluster::renewal`), which install creates.
//!
//! A renewal that fails is tried again at a tenth of the remaining life (between 1 s and 5
//! minutes) and said in the log, in the Application event log (event 5, a warning) and in
//! Calico's registry key, where `status` reads it: a third of the token's life is left when
//! the first attempt fails.

use super::{CALICO_KEY, EVENT_SOURCE, Log};
use crate::cluster::Cluster;
use crate::cluster::credentials::{self, Token};
use crate::host::{Access, EventLevel, Host, HostResult, RegValue};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The registry value (REG_SZ, JSON) holding the last failed renewal; deleted by a success.
pub const RENEWAL_VALUE: &str = "TokenRenewal";
/// The event id of a failed renewal (a warning: the token is still valid).
pub const EVENT_RENEWAL_FAILED: u32 = 5;
/// How often a token that never expires, or a node without one, is looked at again.
const IDLE: Duration = Duration::from_secs(3600);
/// The shortest lifetime the TokenRequest API grants (`expirationSeconds` of at least 10
/// minutes, kube-apiserver's validation).
const MIN_LIFETIME: i64 = 600;

/// A failed renewal, as recorded for `status`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refused {
    /// Unix seconds of the attempt.
    pub at: i64,
    /// When the current token expires (Unix seconds).
    pub expires: Option<i64>,
    /// The error, with its cause (the API server's answer).
    pub error: String,
}

/// The last failed renewal, if the last attempt failed.
pub fn refused(host: &dyn Host) -> HostResult<Option<Refused>> {
    Ok(match host.reg_get(CALICO_KEY, RENEWAL_VALUE)? {
        Some(RegValue::Sz(json)) => serde_json::from_str(&json).ok(),
        _ => None,
    })
}

/// When a token is due for renewal (Unix seconds): at two thirds of its life; `None` when it
/// never expires. A token without `iat` is renewed a third of the smallest lifetime before it
/// expires.
pub fn due_at(token: &Token) -> Option<i64> {
    let exp = token.expiry()?;
    Some(match token.issued_at() {
        Some(iat) if iat < exp => iat + (exp - iat) * 2 / 3,
        _ => exp - MIN_LIFETIME / 3,
    })
}

/// CalicoNode's renewal: the kubeconfig it keeps fresh and when it looks next.
pub struct Renewal {
    kubeconfig: String,
    token_file: String,
    env: BTreeMap<String, String>,
    next: Instant,
}

impl Renewal {
    /// The renewal of the node's kubeconfig (`KUBECONFIG` in the environment), when the
    /// datastore is Kubernetes and the kubeconfig reads its token from a file; `None`, with
    /// the reason in the log, otherwise.
    pub fn prepare(host: &dyn Host, env: &BTreeMap<String, String>, log: &Log) -> Option<Self> {
        if env.get("CALICO_DATASTORE_TYPE").map(String::as_str) != Some("kubernetes") {
            return None;
        }
        let kubeconfig = env.get("KUBECONFIG").filter(|k| !k.is_empty())?.clone();
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
        })
    }

    /// How long until it looks again.
    pub fn due_in(&self) -> Duration {
        self.next.saturating_duration_since(Instant::now())
    }

    /// Renews the token when it is due; says a failure and schedules the next look.
    pub fn keep(&mut self, host: &dyn Host, log: &Log) {
        if self.due_in() > Duration::ZERO {
            return;
        }
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
                self.fail(
                    host,
                    None,
                    &format!("cannot read {}: {e}", self.token_file),
                    log,
                );
                return;
            }
        };
        let Some(due) = due_at(&token) else {
            self.next = Instant::now() + IDLE;
            return;
        };
        if now < due {
            self.next = Instant::now() + secs(due - now);
            return;
        }
        match self.renew(host, &token) {
            Ok(fresh) => {
                let until = fresh.expiry().map_or("without expiry".into(), |t| {
                    format!("valid until {}", crate::duration::time_text(t))
                });
                log.info(&format!(
                    "renewed calico-node's token in {}: {until}",
                    self.token_file
                ));
                if let Err(e) = host.reg_delete_value(CALICO_KEY, RENEWAL_VALUE) {
                    log.warn(&format!("cannot clear the renewal record: {e}"));
                }
                let next = due_at(&fresh).map_or(IDLE, |d| secs(d - crate::duration::now()));
                self.next = Instant::now() + next;
            }
            Err(e) => self.fail(host, token.expiry(), &format!("{e:#}"), log),
        }
    }

    /// A new token of the same service account and lifetime, written over the token file.
    fn renew(&self, host: &dyn Host, token: &Token) -> anyhow::Result<Token> {
        let (namespace, name) = token.service_account().ok_or_else(|| {
            anyhow::anyhow!(
                "the token in {} is not a service account's",
                self.token_file
            )
        })?;
        let lifetime = match (token.issued_at(), token.expiry()) {
            (Some(iat), Some(exp)) => (exp - iat).max(MIN_LIFETIME),
            _ => MIN_LIFETIME,
        };
        let text = host
            .read_file(&self.kubeconfig)?
            .ok_or_else(|| anyhow::anyhow!("{} is missing", self.kubeconfig))?;
        let cluster = Cluster::connect_as_node(
            &self.kubeconfig,
            &String::from_utf8_lossy(&text),
            token,
            &self.env,
        )?;
        let issued = credentials::token_request(
            &cluster,
            &namespace,
            &name,
            Duration::from_secs(lifetime.unsigned_abs()),
        )?;
        host.write_file(
            &self.token_file,
            issued.token.expose().as_bytes(),
            Access::Secret,
        )?;
        Ok(issued.token)
    }

    /// Says a failed renewal everywhere `status` and an administrator look, and tries again
    /// at a tenth of the remaining life.
    fn fail(&mut self, host: &dyn Host, expires: Option<i64>, error: &str, log: &Log) {
        let left = expires.map_or(IDLE.as_secs() as i64, |e| e - crate::duration::now());
        let line = format!(
            "could not renew calico-node's token ({}): {error}",
            expires.map_or("no expiry known".into(), |e| format!(
                "it expires {}",
                crate::duration::time_text(e)
            ))
        );
        log.warn(&line);
        if let Err(e) = host.report_event(
            EVENT_SOURCE,
            EventLevel::Warning,
            EVENT_RENEWAL_FAILED,
            &format!("CalicoNode {line}"),
        ) {
            log.warn(&format!("cannot write to the Application event log: {e}"));
        }
        let record = Refused {
            at: crate::duration::now(),
            expires,
            error: error.to_owned(),
        };
        let json = serde_json::to_string(&record).unwrap_or_default();
        if let Err(e) = host.reg_set(CALICO_KEY, RENEWAL_VALUE, &RegValue::Sz(json)) {
            log.warn(&format!("cannot record the failed renewal for status: {e}"));
        }
        let retry = secs(left / 10).clamp(Duration::from_secs(1), Duration::from_secs(300));
        self.next = Instant::now() + retry;
    }
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
        assert_eq!(due_at(&jwt(r#"{"iat":1000,"exp":1900}"#)), Some(1600));
        // No iat: a third of the smallest lifetime before it expires.
        assert_eq!(due_at(&jwt(r#"{"exp":1900}"#)), Some(1700));
        // A legacy secret's token never expires.
        assert_eq!(due_at(&jwt(r#"{"sub":"x"}"#)), None);
    }
}
