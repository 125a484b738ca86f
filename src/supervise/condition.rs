//! CalicoNode's Node condition `CalicoWindowsReady`: True when the node's own survey
//! (`health::survey`) finds nothing wrong, else False with the reasons; set when it changes,
//! with calico-node's credential (projectcalico/calico v3.31.7 `manifests/calico.yaml`,
//! ClusterRole calico-node may patch `nodes/status`). `fleet status` reads it.

use super::log::Log;
use crate::cluster::Cluster;
use crate::health::judge;
use crate::host::Host;
use crate::installed::endpoints;
use crate::k8s_name::NodeName;
use crate::layout::env::EnvVars;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The condition's type.
pub use crate::cluster::node::CONDITION_CALICO_READY as CONDITION;

/// How often CalicoNode looks again.
pub const EVERY: Duration = Duration::from_secs(60);

/// How often an unchanged condition is set again, so `lastHeartbeatTime` shows CalicoNode
/// looks: kubelet's `nodeStatusReportFrequency` (kubernetes pkg/kubelet/apis/config/v1beta1).
pub use crate::cluster::node::CONDITION_HEARTBEAT as HEARTBEAT;

/// How long a change of the advice codes alone is held back after one was set (a flickering
/// code patches the Node at most once in this time); a change of the reasons is set at once.
pub const ADVICE_HOLD: Duration = Duration::from_secs(15 * 60);

/// At most this many reasons named in the message; every code is in the codes annotation.
const MAX_REASONS: usize = 10;

/// CalicoNode's reporter: its credential and what it last set.
pub struct Reporter {
    root: crate::layout::InstallRoot,
    kubeconfig: String,
    node: NodeName,
    env: BTreeMap<String, String>,
    /// What was last set, and when.
    published: Published,
    next: Instant,
    every: Duration,
    /// The Node's InternalIP as last read.
    pub(super) internal_ip: Option<std::net::Ipv4Addr>,
    /// The last look's read of the Node was refused (401): calico-node's token is refused.
    pub(super) refused: bool,
    /// The group Calico's resources are served in, as the last look discovered it.
    pub(super) calico_group: Option<crate::cluster::calico_api::Group>,
}

impl Reporter {
    /// The reporter of node `NODENAME` with calico-node's kubeconfig, on a Kubernetes datastore.
    pub fn prepare(
        env: &BTreeMap<String, String>,
        root: &crate::layout::InstallRoot,
        every: Duration,
    ) -> Option<Self> {
        Some(Self {
            root: root.clone(),
            kubeconfig: kubeconfig(env)?.clone(),
            node: NodeName::parse(env.get(EnvVars::NODENAME)?).ok()?,
            env: env.clone(),
            published: Published::default(),
            next: Instant::now(),
            every,
            internal_ip: None,
            refused: false,
            calico_group: None,
        })
    }

    /// How long until it looks again.
    pub fn due_in(&self) -> Duration {
        self.next.saturating_duration_since(Instant::now())
    }

    /// When due: the reasons computed, and the condition set when they changed.
    pub fn keep(&mut self, host: &dyn Host, log: &Log) {
        if self.due_in() > Duration::ZERO {
            return;
        }
        self.next = Instant::now() + self.every;
        let cluster = match connect(host, &self.kubeconfig, &self.env) {
            Ok(c) => c,
            Err(e) => {
                log.warn(&format!(
                    "the node's condition {CONDITION} is not set: {e:#}"
                ));
                return;
            }
        };
        let state_dir = crate::host::lock::state_dir(host, &self.env);
        let look = reasons(
            host,
            Some(&cluster),
            &self.node,
            (&self.root, state_dir.as_deref()),
        );
        // libcalico-go's rule, with calico-node's credential (`supervise::api_group`).
        self.calico_group = crate::cluster::calico_api::discover(&cluster).ok();
        if look.internal_ip.is_some() {
            self.internal_ip = look.internal_ip;
        }
        self.refused = look.refused;
        let now = Set {
            reasons: look.reasons,
            codes: look.codes,
        };
        let Some((ready, changed_state)) = self.published.due(&now, look.on_node, Instant::now())
        else {
            return;
        };
        match crate::cluster::node::report(
            &cluster,
            &self.node,
            &condition(ready, &now.reasons, changed_state),
            (crate::cluster::node::ANNOTATION_FINDING_CODES, &now.codes),
        ) {
            Ok(()) => {
                log.info(&format!(
                    "node {} condition {CONDITION}: {}",
                    self.node,
                    if ready {
                        "True".to_owned()
                    } else {
                        format!("False ({})", now.reasons.join("; "))
                    }
                ));
                self.published.set(now, Instant::now());
            }
            Err(e) => log.warn(&format!("cannot set the node's condition {CONDITION}: {e}")),
        }
    }
}

/// calico-node's kubeconfig (`KUBECONFIG`) on a Kubernetes datastore.
pub(super) fn kubeconfig(env: &BTreeMap<String, String>) -> Option<&String> {
    let kubernetes =
        env.get(EnvVars::CALICO_DATASTORE_TYPE).map(String::as_str) == Some("kubernetes");
    env.get(EnvVars::KUBECONFIG)
        .filter(|k| kubernetes && !k.is_empty())
}

/// A client of the cluster as calico-node: its kubeconfig and the token client-go sends with
/// it (`credentials::node_token_in`).
pub(super) fn connect(
    host: &dyn Host,
    kubeconfig: &str,
    env: &BTreeMap<String, String>,
) -> anyhow::Result<Cluster> {
    let text = host
        .read_file(kubeconfig)?
        .ok_or_else(|| anyhow::anyhow!("{kubeconfig} is missing"))?;
    let text = String::from_utf8_lossy(&text);
    let token = crate::cluster::credentials::node_token_in(host, &text)?
        .ok_or_else(|| anyhow::anyhow!("calico-node's token file is missing or empty"))?;
    Ok(Cluster::connect_as_node(kubeconfig, &text, &token, env)?)
}

/// What a look found that the Node is told: the condition's reasons and the codes annotation.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Set {
    reasons: Vec<String>,
    codes: Vec<String>,
}

/// What was last set and when: whether a look sets the condition again (`due`).
#[derive(Default)]
struct Published {
    /// The reasons and the codes last set.
    last: Option<Set>,
    /// When the condition was last set.
    at: Option<Instant>,
    /// When a change of the advice codes alone was last set (`ADVICE_HOLD`).
    advice_at: Option<Instant>,
}

impl Published {
    /// Whether a look at `at` finding `now` sets the condition, advice-only changes held back.
    fn due(&self, now: &Set, on_node: Option<bool>, at: Instant) -> Option<(bool, bool)> {
        let beat_due = self.at.is_none_or(|t| at.duration_since(t) >= HEARTBEAT);
        let held = self
            .advice_at
            .is_some_and(|t| at.duration_since(t) < ADVICE_HOLD);
        if held && !beat_due && self.advice_only(now) {
            return None;
        }
        to_set(self.last.as_ref(), now, beat_due, on_node)
    }

    /// `now` was set at `at`.
    fn set(&mut self, now: Set, at: Instant) {
        if self.advice_only(&now) {
            self.advice_at = Some(at);
        }
        self.last = Some(now);
        self.at = Some(at);
    }

    /// Whether `now` differs from what was last set in its advice codes alone.
    fn advice_only(&self, now: &Set) -> bool {
        self.last
            .as_ref()
            .is_some_and(|l| l.reasons == now.reasons && l.codes != now.codes)
    }
}

/// What a look sets, given what was last set (`None` since start) and the Node's condition
/// now: nothing when unchanged and no heartbeat is due, else the status and whether it
/// changed. The transition time survives restarts, as kubelet's does (kubernetes
/// pkg/kubelet/nodestatus/setters.go, `ReadyCondition`).
fn to_set(
    last: Option<&Set>,
    now: &Set,
    beat_due: bool,
    on_node: Option<bool>,
) -> Option<(bool, bool)> {
    if last == Some(now) && !beat_due {
        return None;
    }
    let ready = now.reasons.is_empty();
    let changed = match last {
        Some(l) => l.reasons.is_empty() != ready,
        None => on_node != Some(ready),
    };
    Some((ready, changed))
}

/// The condition as the API server keeps it: a new transition time only on a status change.
fn condition(ready: bool, reasons: &[String], changed_state: bool) -> serde_json::Value {
    let now = crate::duration::time_text(crate::duration::now());
    let mut shown: Vec<String> = reasons.iter().take(MAX_REASONS).cloned().collect();
    if reasons.len() > MAX_REASONS {
        shown.push(format!("and {} more", reasons.len() - MAX_REASONS));
    }
    let mut c = serde_json::json!({
        "type": CONDITION,
        "status": if ready { "True" } else { "False" },
        "reason": if ready { "CalicoHealthy" } else { "CalicoDegraded" },
        "message": if ready {
            "Calico for Windows is healthy (calicoctl-win)".to_owned()
        } else {
            shown.join("; ")
        },
        "lastHeartbeatTime": now,
    });
    if changed_state {
        c["lastTransitionTime"] = serde_json::json!(now);
    }
    c
}

/// A finding as the condition's message gives it: its sentence and code (docs/findings.md).
fn said(f: judge::Finding) -> String {
    format!("{} [{}]", f.message, f.code.word())
}

/// What one look found.
pub struct Look {
    /// What is wrong with Calico on this node (empty when nothing is).
    pub reasons: Vec<String>,
    /// The findings' codes, each once in the order found: the node's codes annotation.
    pub codes: Vec<String>,
    /// The Node's InternalIP, when it was read.
    pub internal_ip: Option<std::net::Ipv4Addr>,
    /// The API server refused the read of the Node (401).
    pub refused: bool,
    /// The Node's `CalicoWindowsReady` status as read (`Some(true)`: True).
    pub on_node: Option<bool>,
}

/// What is wrong with Calico on this node, as CalicoNode sees it, with what it read of the Node.
pub fn reasons(
    host: &dyn Host,
    cluster: Option<&Cluster>,
    node: &NodeName,
    (root, state_dir): (&crate::layout::InstallRoot, Option<&std::path::Path>),
) -> Look {
    // CalicoNode's look every minute is what ages the faults (`endpoints::seen`).
    let own = crate::health::Own {
        cluster,
        remote: endpoints::Remote::Skip,
        ageing: endpoints::Ageing::Record,
    };
    let seen = crate::health::OwnView::of(crate::health::survey(crate::health::Look {
        host,
        root,
        node,
        grace: endpoints::DEFAULT_GRACE,
        state_dir,
        mode: crate::health::Mode::Own(own),
    }));
    let mut faults = std::collections::BTreeMap::new();
    for v in seen
        .findings
        .iter()
        .filter_map(|f| judge::verdict_of(f.code))
    {
        *faults.entry(v.word()).or_insert(0) += 1;
    }
    use crate::installed::metrics::{ENDPOINT_FAULTS, NODE_FILE, set_gauge};
    // Metrics never stop the look: a file that cannot be written keeps its last values.
    let _ = set_gauge(host, root, NODE_FILE, ENDPOINT_FAULTS, "verdict", &faults);
    // The codes of what is said but no problem go beside the reasons, never among them.
    let mut codes: Vec<String> = Vec::new();
    let advice = seen.advice.iter().map(|f| f.code.word());
    for word in seen.findings.iter().map(|f| f.code.word()).chain(advice) {
        if !codes.contains(&word) {
            codes.push(word);
        }
    }
    Look {
        reasons: seen.findings.into_iter().map(said).collect(),
        codes,
        internal_ip: seen.internal_ip,
        refused: seen.refused,
        on_node: seen.calico_ready,
    }
}

#[cfg(test)]
mod tests {
    use super::{ADVICE_HOLD, EVERY, Published, Set, to_set};
    use std::time::Instant;

    /// What a look found: these reasons, and their codes.
    fn set(reasons: &[&str], codes: &[&str]) -> Set {
        Set {
            reasons: reasons.iter().map(|r| (*r).to_owned()).collect(),
            codes: codes.iter().map(|c| (*c).to_owned()).collect(),
        }
    }

    /// `to_set(last, now, heartbeat due, the Node's status)`: whether the condition is patched,
    /// with its status and whether its transition time is new.
    #[test]
    fn the_condition_is_set_only_when_the_answer_changes() {
        let ok = &set(&[], &[]);
        let felix = &set(&["CalicoFelix is Stopped"], &["felix-unhealthy"]);
        let network = &set(
            &["the HNS network Calico does not exist"],
            &["network-missing"],
        );
        let advised = &set(&[], &["endpoint-state-unknown"]);
        let more = &set(
            &["CalicoFelix is Stopped"],
            &["felix-unhealthy", "endpoint-state-unknown"],
        );
        #[rustfmt::skip]
        let cases = [
            ("the first look sets it, with a transition", None, ok, true, None, Some((true, true))),
            ("the first look, not ready", None, felix, true, None, Some((false, true))),
            ("the same answer again: no patch", Some(ok), ok, false, None, None),
            ("the same failure again: no patch", Some(felix), felix, false, None, None),
            ("the heartbeat is due", Some(ok), ok, true, None, Some((true, false))),
            ("the heartbeat, not ready", Some(felix), felix, true, None, Some((false, false))),
            ("other reasons, still False", Some(felix), network, false, None, Some((false, false))),
            ("healthy again", Some(felix), ok, false, None, Some((true, true))),
            ("not healthy any more", Some(ok), network, false, None, Some((false, true))),
            // An advice code coming or going under the same reasons is set at once.
            ("an advice code comes", Some(ok), advised, false, None, Some((true, false))),
            ("an advice code goes", Some(advised), ok, false, None, Some((true, false))),
            ("the same advice", Some(advised), advised, false, None, None),
            ("a code more under a failure", Some(felix), more, false, None, Some((false, false))),
            // A CalicoNode restart keeps the transition time when the Node has the same status.
            ("restarted, True on the Node", None, ok, true, Some(true), Some((true, false))),
            ("restarted, False on the Node", None, felix, true, Some(false), Some((false, false))),
            ("restarted, healthy again", None, ok, true, Some(false), Some((true, true))),
            ("restarted, not healthy any more", None, felix, true, Some(true), Some((false, true))),
        ];
        for (name, last, now, beat, on_node, want) in cases {
            assert_eq!(to_set(last, now, beat, on_node), want, "{name}");
        }
    }

    /// A flickering advice code patches at most once per `ADVICE_HOLD`; a new failure at once.
    #[test]
    fn a_flapping_advice_code_is_held_back_and_a_new_failure_is_not() {
        let ok = set(&[], &[]);
        let advised = set(&[], &["endpoint-state-unknown"]);
        let mut p = Published::default();
        let start = Instant::now();
        let mut patches = Vec::new();
        // An hour of looks, the code there at every other one.
        for minute in 0..60_u32 {
            let at = start + EVERY * minute;
            let now = if minute % 2 == 1 { &advised } else { &ok };
            if p.due(now, Some(true), at).is_some() {
                p.set(now.clone(), at);
                patches.push(minute);
            }
        }
        // First set, first change, heartbeats (5 min) and one held change per 15 min.
        assert!(patches.len() <= 1 + 60 / 5 + 60 / 15, "{patches:?}");
        assert_eq!(&patches[..2], [0, 1], "{patches:?}");
        let per_hold = ADVICE_HOLD.as_secs() / 60;
        assert!(per_hold >= 5, "{per_hold}");

        // Held back, a new failure is set at once, and so is its end.
        let at = start + EVERY * 61;
        let felix = set(&["CalicoFelix is Stopped"], &["felix-unhealthy"]);
        assert_eq!(p.due(&felix, Some(true), at), Some((false, true)));
        p.set(felix.clone(), at);
        let after = at + EVERY;
        assert_eq!(p.due(&ok, Some(false), after), Some((true, true)));
    }
}
