//! What CalicoNode's token renewal records in Calico's registry key for the next renewal and
//! for `status`: the token the last renewal wrote (`TokenIssued`) and the last failed attempt
//! (`TokenRenewal`, cleared by a success). Written by `supervise::renew`, read by both.

use crate::cluster::credentials::Token;
use crate::host::{Host, HostResult};
use crate::layout::{CALICO_KEY, ISSUED_VALUE, RENEWAL_VALUE};
use serde::{Deserialize, Serialize};

/// A clock difference with the API server larger than this (or than a quarter of the token's
/// life) is said.
const SKEW_SAID: i64 = 60;
/// A failed renewal, as recorded for `status`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refused {
    /// Unix seconds of the attempt.
    pub at: i64,
    /// When the current token expires (Unix seconds).
    pub expires: Option<i64>,
    /// The error, with its cause (the API server's answer).
    pub error: String,
    /// The API server refused the current token itself (401): only a new token helps.
    #[serde(default)]
    pub unauthorized: bool,
    /// `Token::fingerprint` of the token the attempt was made with, never the token: the
    /// record is of that one token, and says nothing of a new one written since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

impl Refused {
    /// Whether no renewal can succeed until someone issues a new token, `now` by the API
    /// server's clock.
    pub fn needs_new_token(&self, now: i64) -> bool {
        self.unauthorized || self.expires.is_some_and(|e| e <= now)
    }

    /// Whether the attempt was made with `token` (a record of an earlier version, without a
    /// fingerprint, is taken as of the token there is).
    pub fn is_of(&self, token: &Token) -> bool {
        self.token
            .as_deref()
            .is_none_or(|f| f == token.fingerprint())
    }
}

/// The clock difference measured when a token arrived (this node's clock at `received`
/// minus the token's `iat`, the API server's clock when it issued it), said when it is large
/// enough to matter for a token of `lifetime` seconds.
pub fn skew_sentence(skew: i64, lifetime: i64) -> Option<String> {
    (skew.unsigned_abs() > SKEW_SAID.min(lifetime / 4).unsigned_abs()).then(|| {
        format!(
            "this node's clock is {}s {} the API server's ('w32tm /query /status' shows the time source, 'w32tm /resync' sets it)",
            skew.unsigned_abs(),
            if skew > 0 { "ahead of" } else { "behind" }
        )
    })
}

/// The token the last renewal wrote, as recorded for the next renewal and for `status`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssuedRecord {
    /// `Token::fingerprint` of the token written.
    pub fingerprint: String,
    pub namespace: String,
    pub service_account: String,
    /// When the answer came, by this node's clock (Unix seconds).
    pub received: i64,
    /// The life the API server granted it, in seconds.
    pub lifetime: i64,
    /// When it expires (Unix seconds): its `exp`, else the answer's `expirationTimestamp`.
    pub expires: i64,
    /// This node's clock minus the API server's when it was issued (from `iat`), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skew: Option<i64>,
}

impl IssuedRecord {
    /// The clock difference with the API server, when it is large enough to say.
    pub fn skew_to_say(&self) -> Option<i64> {
        self.skew
            .filter(|s| skew_sentence(*s, self.lifetime).is_some())
    }

    /// When the token it describes is due: two thirds of its life after it came.
    pub fn due(&self) -> i64 {
        self.received
            .saturating_add(self.lifetime.saturating_mul(2) / 3)
    }
}

/// The last failed renewal, if the last attempt failed.
pub fn refused(host: &dyn Host) -> HostResult<Option<Refused>> {
    super::calico_json(host, RENEWAL_VALUE)
}

/// The record of the last renewal, when it describes `token`.
pub fn issued(host: &dyn Host, token: &Token) -> HostResult<Option<IssuedRecord>> {
    let record: Option<IssuedRecord> = super::calico_json(host, ISSUED_VALUE)?;
    Ok(record.filter(|r| r.fingerprint == token.fingerprint()))
}

/// Records a failed renewal.
pub fn keep_refused(host: &dyn Host, r: &Refused) -> HostResult<()> {
    super::keep_json(host, RENEWAL_VALUE, r)
}

/// Records a renewal that succeeded, and clears the record of a failed one.
pub fn keep_issued(host: &dyn Host, fresh: &IssuedRecord) -> HostResult<()> {
    host.reg_delete_value(CALICO_KEY, RENEWAL_VALUE)?;
    super::keep_json(host, ISSUED_VALUE, fresh)
}
