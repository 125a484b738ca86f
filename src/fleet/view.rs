//! The fleet as its nodes say it, against the config most nodes have. Whoever may patch a
//! Node writes what is read here: every value is capped (`MAX_TEXT`), checked for its form
//! (else named `malformed`), and escaped for a terminal (`shown`).

use crate::cluster::node::{
    ANNOTATION_CALICO_VERSION, ANNOTATION_CONFIG_HASH, ANNOTATION_FINDING_CODES,
    ANNOTATION_TOOL_VERSION, CONDITION_CALICO_READY, CONDITION_STALE_AFTER,
    REASON_HANDED_TO_OPERATOR, REASON_NOT_INSTALLED,
};
use crate::config::ConfigHash;
use k8s_openapi::api::core::v1::Node;
use std::collections::BTreeMap;

/// The most characters of a node's text (an annotation, a condition's message) kept.
pub const MAX_TEXT: usize = 2048;
/// The most characters of one value printed in a table cell or a problem line.
pub const MAX_SHOWN: usize = 160;

/// One Windows node as `fleet status` shows it.
#[derive(Debug, serde::Serialize)]
pub struct NodeRow {
    pub name: String,
    pub calicoctl_win: Option<String>,
    pub calico: Option<String>,
    pub config_hash: Option<String>,
    /// kubelet's Ready condition.
    pub ready: Option<String>,
    /// CalicoNode's `CalicoWindowsReady` as judged: True, False, Unknown (heartbeat older
    /// than `CONDITION_STALE_AFTER`, or status malformed), or none yet.
    pub calico_ready: Option<String>,
    pub reasons: Option<String>,
    /// The finding codes of CalicoNode's last look, each once (`codes_with`).
    pub codes: Vec<String>,
    /// The node is degraded and its codes are not known.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub codes_unknown: bool,
    /// The condition's `lastHeartbeatTime`, and its age in seconds when read.
    pub heartbeat: Option<String>,
    pub heartbeat_age_seconds: Option<i64>,
    /// Values that do not have their form, named.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub malformed: Vec<String>,
    /// Handed to the operator (`migrate to-operator`): judged by calico-node's
    /// NetworkUnavailable (calico v3.32.1 `node/pkg/lifecycle/utils/utils.go`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub handed_to_operator: bool,
    /// The scheduled verify's verdict (`traffic::of_node`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traffic: Option<Traffic>,
}

/// A node's `CalicoWindowsTraffic` as judged (`traffic`).
#[derive(Debug, PartialEq, serde::Serialize)]
pub struct Traffic {
    /// True, False or Unknown (stale, `VerifyStale`, or none of the three).
    pub status: String,
    pub reason: Option<String>,
    pub message: Option<String>,
    pub heartbeat: Option<String>,
    pub heartbeat_age_seconds: Option<i64>,
    /// A False verdict's finding codes, each once (`codes_with`).
    pub codes: Vec<String>,
    /// The verdict is False and its codes are not known.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub codes_unknown: bool,
}

/// At most `MAX_TEXT` characters of `s`.
pub fn capped(s: &str) -> String {
    s.chars().take(MAX_TEXT).collect()
}

/// Whether `h` is `sha256:` and 64 lower-case hex digits, as install writes it.
pub fn is_hash(h: &str) -> bool {
    h.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// What a node says of itself, `now` being seconds since 1970.
pub fn node_row(n: &Node, now: i64) -> NodeRow {
    let note = |k: &str| {
        n.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(k).map(|v| capped(v)))
    };
    let conditions = n.status.as_ref().and_then(|s| s.conditions.as_ref());
    let condition = |kind: &str| conditions.and_then(|cs| cs.iter().find(|c| c.type_ == kind));
    let calico = condition(CONDITION_CALICO_READY);
    let mut malformed = Vec::new();
    let config_hash = note(ANNOTATION_CONFIG_HASH);
    if let Some(h) = config_hash.as_deref().filter(|h| !is_hash(h)) {
        malformed.push(format!(
            "annotation {ANNOTATION_CONFIG_HASH} is no sha256: hash: {}",
            shown(h)
        ));
    }
    let heartbeat = calico.and_then(|c| c.last_heartbeat_time.as_ref());
    let heartbeat_age_seconds = heartbeat.map(|t| now.saturating_sub(t.0.as_second()));
    let mut calico_ready = calico.map(|c| capped(&c.status));
    let mut reasons = calico
        .filter(|c| c.status != "True")
        .and_then(|c| c.message.as_deref().map(capped));
    if let Some(s) = calico_ready
        .as_deref()
        .filter(|s| !matches!(*s, "True" | "False" | "Unknown"))
    {
        malformed.push(format!(
            "condition {CONDITION_CALICO_READY} has status {}, not True, False or Unknown",
            shown(s)
        ));
        calico_ready = Some("Unknown".into());
    }
    let stale = CONDITION_STALE_AFTER.as_secs() as i64;
    let handed_to_operator = calico.is_some_and(|c| {
        c.status == "False" && c.reason.as_deref() == Some(REASON_HANDED_TO_OPERATOR)
    });
    if handed_to_operator {
        // The operator's Calico, said by calico-node's NetworkUnavailable: down when True.
        reasons = condition("NetworkUnavailable").and_then(operator_down);
    } else if calico.is_some_and(|c| c.reason.as_deref() != Some(REASON_NOT_INSTALLED)) {
        match heartbeat_age_seconds {
            Some(age) if age > stale => {
                calico_ready = Some("Unknown".into());
                reasons = Some(format!(
                    "CalicoNode's last heartbeat is {} old (it sets one every 5m): it has stopped, or cannot reach the API server",
                    crate::duration::show(std::time::Duration::from_secs(age.max(0) as u64))
                ));
            }
            None => {
                calico_ready = Some("Unknown".into());
                reasons = Some("the condition has no heartbeat time".into());
            }
            _ => {}
        }
    }
    // Codes only where CalicoNode's look found Calico degraded (not stale, handed or gone).
    let degraded = calico_ready.as_deref() == Some("False") && !handed_to_operator;
    let codes = row_codes(n, calico.filter(|_| degraded), &mut malformed);
    NodeRow {
        codes_unknown: codes.is_none(),
        codes: codes.unwrap_or_default(),
        name: capped(n.metadata.name.as_deref().unwrap_or_default()),
        calicoctl_win: note(ANNOTATION_TOOL_VERSION),
        calico: note(ANNOTATION_CALICO_VERSION),
        config_hash,
        ready: condition("Ready").map(|c| capped(&c.status)),
        calico_ready,
        reasons,
        heartbeat: heartbeat.map(|t| t.0.to_string()),
        heartbeat_age_seconds,
        malformed,
        handed_to_operator,
        traffic: None,
    }
}

/// The operator's Calico down, by calico-node's NetworkUnavailable condition (True).
fn operator_down(c: &k8s_openapi::api::core::v1::NodeCondition) -> Option<String> {
    (c.status == "True").then(|| {
        capped(&format!(
            "the operator's Calico is down: NetworkUnavailable {} ({})",
            c.reason.as_deref().unwrap_or("no reason"),
            c.message.as_deref().unwrap_or("no message")
        ))
    })
}

/// A degraded node's finding codes (none for another), by its condition (`codes_with`).
fn row_codes(
    n: &Node,
    degraded: Option<&k8s_openapi::api::core::v1::NodeCondition>,
    malformed: &mut Vec<String>,
) -> Option<Vec<String>> {
    let Some(c) = degraded.filter(|c| c.reason.as_deref() != Some(REASON_NOT_INSTALLED)) else {
        return Some(Vec::new());
    };
    let beat = c.last_heartbeat_time.as_ref().map(|t| t.0.as_second());
    codes_with(n, ANNOTATION_FINDING_CODES, beat, malformed)
}

/// The codes of the annotation `key` when written with the condition's heartbeat `beat`, else
/// `None` (an earlier run's must not stand for this look). A malformed one is named.
pub fn codes_with(
    n: &Node,
    key: &str,
    beat: Option<i64>,
    malformed: &mut Vec<String>,
) -> Option<Vec<String>> {
    let written = n.metadata.annotations.as_ref()?.get(key)?;
    match codes_in(key, written) {
        Ok(c) => (c.heartbeat.is_some() && c.heartbeat == beat).then_some(c.codes),
        Err(bad) => {
            malformed.push(bad);
            None
        }
    }
}

/// Whether `word` has a finding code's form: lower-case words joined by `-`.
fn is_code(word: &str) -> bool {
    !word.is_empty()
        && word.len() <= 40
        && word.starts_with(|c: char| c.is_ascii_lowercase())
        && word.bytes().all(|b| b.is_ascii_lowercase() || b == b'-')
}

/// A codes annotation: its codes, and the heartbeat they were written with (none in an older
/// CalicoNode's plain list).
#[derive(Debug, PartialEq, Eq)]
pub struct Codes {
    pub heartbeat: Option<i64>,
    pub codes: Vec<String>,
}

/// `{"heartbeat": "<lastHeartbeatTime>", "codes": [...]}`, or an older CalicoNode's list.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum Written {
    Beat {
        heartbeat: String,
        codes: Vec<String>,
    },
    Plain(Vec<String>),
}

/// CalicoNode's codes annotation as read (`codes_in`).
pub fn codes_of(text: &str) -> Result<Codes, String> {
    codes_in(ANNOTATION_FINDING_CODES, text)
}

/// A codes annotation (`key`) as `node::report` writes it, each code once in order; else
/// named malformed.
pub fn codes_in(key: &str, text: &str) -> Result<Codes, String> {
    let bad = || format!("annotation {key} is no heartbeat with a JSON list of finding codes");
    let (heartbeat, words) = match serde_json::from_str(text).map_err(|_| bad())? {
        Written::Beat { heartbeat, codes } => {
            let t: jiff::Timestamp = heartbeat.parse().map_err(|_| bad())?;
            (Some(t.as_second()), codes)
        }
        Written::Plain(codes) => (None, codes),
    };
    if !words.iter().all(|w| is_code(w)) {
        return Err(bad());
    }
    let mut seen = std::collections::HashSet::new();
    let codes = words
        .into_iter()
        .filter(|w| seen.insert(w.clone()))
        .collect();
    Ok(Codes { heartbeat, codes })
}

/// How many nodes name each finding code: CalicoNode's, and its traffic verdict's.
pub fn code_counts(rows: &[NodeRow]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for r in rows {
        let traffic = r.traffic.iter().flat_map(|t| &t.codes);
        let mut named = std::collections::BTreeSet::new();
        for code in r.codes.iter().chain(traffic).filter(|c| named.insert(*c)) {
            *out.entry(code.clone()).or_insert(0) += 1;
        }
    }
    out
}

/// What is not as it should be with a node, by kind: each a finding code of the one catalogue
/// (`health::judge::fleet_row`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trouble {
    /// A value that does not have its form (`malformed`).
    Malformed,
    /// kubelet's Ready condition is not True.
    NotReady,
    /// Calico is degraded: calicoctl-win's condition False, or the operator's calico-node down.
    Degraded,
    /// calicoctl-win's condition is Unknown: its heartbeat is stale, or its status malformed.
    Unknown,
    /// No `CalicoWindowsReady` condition.
    NoCondition,
    /// Degraded, with the codes of its CalicoNode's last look unknown.
    CodesUnknown,
    /// Another config than the fleet's, or none recorded.
    OtherConfig,
}

/// What is not as it should be with a node: each kind and sentence (values `shown`).
pub fn row_troubles(r: &NodeRow, fleet_hash: Option<&ConfigHash>) -> Vec<(Trouble, String)> {
    let name = shown(&r.name);
    let mut out: Vec<(Trouble, String)> = r
        .malformed
        .iter()
        .map(|m| (Trouble::Malformed, format!("node {name}: {m}")))
        .collect();
    if r.ready.as_deref() != Some("True") {
        out.push((Trouble::NotReady, format!("node {name} is not Ready")));
    }
    if r.handed_to_operator {
        // Neither calicoctl-win's condition nor its config is this node's any more.
        if let Some(why) = &r.reasons {
            out.push((Trouble::Degraded, format!("node {name}: {}", shown(why))));
        }
        return out;
    }
    let why = || r.reasons.as_deref().map_or("no reason given".into(), shown);
    match r.calico_ready.as_deref() {
        Some("True") => {}
        Some("Unknown") => out.push((
            Trouble::Unknown,
            format!("Calico on node {name} is unknown: {}", why()),
        )),
        Some(_) => out.push((
            Trouble::Degraded,
            format!("Calico on node {name} is degraded: {}", why()),
        )),
        None => out.push((
            Trouble::NoCondition,
            format!(
                "node {name} has no CalicoWindowsReady condition (no CalicoNode of this calicoctl-win runs there)"
            ),
        )),
    }
    if r.codes_unknown {
        out.push((
            Trouble::CodesUnknown,
            format!(
                "node {name}: the finding codes of its CalicoNode are unknown: it predates codes as data (annotation {ANNOTATION_FINDING_CODES} written with the condition's heartbeat)"
            ),
        ));
    }
    if r.config_hash.as_deref() != fleet_hash.map(ConfigHash::as_str) {
        let which = r
            .config_hash
            .as_deref()
            .map_or("no recorded".to_owned(), |h| {
                format!("another ({})", short_hash(h))
            });
        out.push((
            Trouble::OtherConfig,
            format!("node {name} has {which} config, not the fleet's"),
        ));
    }
    out
}

/// The sentences of `row_troubles`.
#[cfg(test)]
pub fn row_problems(r: &NodeRow, fleet_hash: Option<&ConfigHash>) -> Vec<String> {
    row_troubles(r, fleet_hash)
        .into_iter()
        .map(|(_, said)| said)
        .collect()
}

/// Counts of the config hashes seen, to find the fleet's (only well-formed hashes vote).
#[derive(Debug, Default)]
pub struct HashVotes(BTreeMap<String, usize>);

impl HashVotes {
    pub fn add(&mut self, r: &NodeRow) {
        if let Some(h) = r.config_hash.as_deref().filter(|h| is_hash(h)) {
            *self.0.entry(h.to_owned()).or_default() += 1;
        }
    }

    /// The hash most nodes have (the first of equals in sort order).
    pub fn most_common(&self) -> Option<ConfigHash> {
        let best = self.0.values().copied().max()?;
        self.0
            .iter()
            .find(|(_, n)| **n == best)
            .map(|(k, _)| ConfigHash(k.clone()))
    }
}

/// `sha256:` and the first 8 hex digits, escaped.
pub fn short_hash(h: &str) -> String {
    let hex = h.strip_prefix("sha256:").unwrap_or(h);
    shown(&format!(
        "sha256:{}",
        hex.chars().take(8).collect::<String>()
    ))
}

/// A value as a terminal may show it: control and bidi characters written out (`\n`,
/// `\u{1b}`), at most `MAX_SHOWN` characters, with an ellipsis when cut.
pub fn shown(s: &str) -> String {
    let mut out = String::new();
    let mut count = 0;
    for c in s.chars() {
        let piece = match c {
            '\n' => "\\n".to_owned(),
            '\r' => "\\r".to_owned(),
            '\t' => "\\t".to_owned(),
            c if c.is_control() || crate::cluster::forbidden::bidi_control(c) => {
                format!("\\u{{{:x}}}", c as u32)
            }
            c => c.to_string(),
        };
        count += piece.chars().count();
        if count > MAX_SHOWN {
            out.push('…');
            break;
        }
        out.push_str(&piece);
    }
    out
}

#[cfg(test)]
mod tests;
