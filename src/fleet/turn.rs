//! A fleet's turns: at most `count` nodes of the fleet DaemonSet change at once, each holding
//! a Lease `<name>-turn-<i>` until it is healthy again (the DaemonSet controller paces only a
//! rolling update: kubernetes v1.33 `pkg/controller/daemon/update.go`). A slot is taken on the
//! resourceVersion read (a 409: another node won); it expires as client-go's leader election
//! judges (v0.33.0 `tools/leaderelection/leaderelection.go` `isLeaseValid`: unchanged for its
//! duration on this node's monotonic clock), is renewed every third of that, and a failed
//! node's is kept, marked `FAILED`, while its Node exists.

use super::manifests::APP_LABEL as LABEL;
use crate::cluster::{Cluster, ClusterError};
use crate::error::{Diagnosis, Exit, Kind};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Api;
use kube::api::{ListParams, PostParams};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Why a run with a turn failed on its own account.
#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    #[error("no turn of {turns} came within {}: {}", crate::duration::show(*.after), .held.join(", "))]
    Waited {
        turns: String,
        after: Duration,
        held: Vec<String>,
    },
    #[error("node {node} is not healthy {} after its change: {}", crate::duration::show(*.after), .findings.join("; "))]
    Unhealthy {
        node: String,
        after: Duration,
        findings: Vec<String>,
    },
    #[error(
        "the turn {slot} could not be renewed in time, or another node took it: the change was stopped"
    )]
    Lost { slot: String },
}

impl crate::error::Diagnose for TurnError {
    fn diagnose(&self) -> Option<crate::error::Diagnosis> {
        match self {
            Self::Waited { .. } => Diagnosis::new(
                Exit::Timeout,
                Kind::TurnTimeout,
                "the nodes named hold the turns: wait (the DaemonSet's container restarts and waits again), or fix a failed node or delete its Lease (kubectl delete lease)",
            ),
            Self::Unhealthy { .. } => Diagnosis::new(
                Exit::Timeout,
                Kind::Timeout,
                "the turn stays held, marked failed, until the node is healthy: fix what 'calicoctl-win status' names on the node",
            ),
            Self::Lost { .. } => Diagnosis::new(
                Exit::Failed,
                Kind::Failed,
                "check the node's connection to the API server; the container restarts and waits for a turn again",
            ),
        }
    }
}

/// The annotation of a failed turn: `{"code": "<error kind>", "at": "<RFC 3339 time>"}`.
pub const FAILED: &str = "calicoctl-win/turn-failed";

/// A fleet's turns.
#[derive(Clone, Debug)]
pub struct Turns {
    pub namespace: String,
    /// The DaemonSet's name: the slots are `<name>-turn-<i>`, labelled with it.
    pub name: String,
    pub count: u32,
    /// The duration written in a slot this node holds.
    pub lease: Duration,
}

impl Turns {
    /// The name of slot `i`.
    pub fn slot(&self, i: u32) -> String {
        format!("{}-turn-{i}", self.name)
    }

    fn api(&self, c: &Cluster) -> Api<Lease> {
        Api::namespaced(c.client.clone(), &self.namespace)
    }
}

/// A failed turn's mark.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Failure {
    /// The kind of the failure (`error.kind` of the command's JSON).
    pub code: String,
    pub at: String,
}

/// A slot as `fleet status` shows it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Slot {
    pub slot: String,
    /// Its holder (a node's name); `None` when free.
    pub node: Option<String>,
    /// When its holder took it (`acquireTime`).
    pub since: Option<String>,
    pub failed: Option<Failure>,
}

impl Slot {
    fn of(l: &Lease) -> Self {
        let spec = l.spec.as_ref();
        Self {
            slot: l.metadata.name.clone().unwrap_or_default(),
            node: holder(l).map(str::to_owned),
            since: spec.and_then(|s| s.acquire_time.as_ref().map(|t| t.0.to_string())),
            failed: failure(l),
        }
    }
}

fn holder(l: &Lease) -> Option<&str> {
    l.spec
        .as_ref()
        .and_then(|s| s.holder_identity.as_deref())
        .filter(|h| !h.is_empty())
}

/// The failure a slot is marked with (a mark that does not parse: its text as the code).
pub fn failure(l: &Lease) -> Option<Failure> {
    let text = l.metadata.annotations.as_ref()?.get(FAILED)?;
    Some(serde_json::from_str(text).unwrap_or_else(|_| Failure {
        code: text.clone(),
        at: String::new(),
    }))
}

/// What a contender saw of each slot, and when it first saw that, by its monotonic clock.
#[derive(Default)]
pub struct Seen(BTreeMap<String, (Record, Instant)>);

/// A slot's record, as client-go compares it: the spec, and here the failure's mark.
#[derive(Clone, PartialEq)]
struct Record(Option<LeaseSpec>, Option<Failure>);

impl Seen {
    /// Whether `l` ran out by `now`: its record seen unchanged for its `leaseDurationSeconds`
    /// (one not seen before is noted now).
    fn ran_out(&mut self, l: &Lease, now: Instant) -> bool {
        let name = l.metadata.name.clone().unwrap_or_default();
        let record = Record(l.spec.clone(), failure(l));
        let secs = l
            .spec
            .as_ref()
            .and_then(|s| s.lease_duration_seconds)
            .unwrap_or(0);
        let since = match self.0.get(&name) {
            Some((r, at)) if *r == record => *at,
            _ => {
                self.0.insert(name, (record, now));
                now
            }
        };
        let lasts = Duration::from_secs(u64::try_from(secs).unwrap_or(0));
        now.saturating_duration_since(since) >= lasts
    }
}

/// A slot this node holds, as last written or read (its resourceVersion the next write's
/// precondition).
#[derive(Clone, Debug)]
pub struct Held(pub Lease);

impl Held {
    pub fn name(&self) -> &str {
        self.0.metadata.name.as_deref().unwrap_or_default()
    }
}

/// One look at the slots (a get of each): this node's own (a restarted container's) is taken
/// back; with `seen`, else the first free or run out (a failed one only when its holder's Node
/// is gone). `Err`: who holds each slot, said.
pub fn look(
    c: &Cluster,
    t: &Turns,
    me: &crate::k8s_name::NodeName,
    seen: Option<&mut Seen>,
) -> Result<Result<Held, Vec<String>>, ClusterError> {
    let now = Instant::now();
    let mut read = Vec::new();
    for i in 0..t.count {
        let name = t.slot(i);
        let l = c.get_in::<Lease>(&t.namespace, &name)?;
        read.push((name, l));
    }
    let mine = |l: &Option<Lease>| l.as_ref().is_some_and(|l| holder(l) == Some(me.as_str()));
    if let Some((name, l)) = read.iter().find(|(_, l)| mine(l)) {
        return Ok(claim(c, t, (name, l.clone()), me, true)?.ok_or_else(Vec::new));
    }
    let Some(seen) = seen else {
        return Ok(Err(Vec::new()));
    };
    let mut held_by = Vec::new();
    for (name, l) in read {
        let taken = match l {
            Some(l) if !free(c, &l, seen, now)? => {
                held_by.push(said(&Slot::of(&l)));
                None
            }
            l => claim(c, t, (&name, l), me, false)?,
        };
        if let Some(h) = taken {
            return Ok(Ok(h));
        }
    }
    Ok(Err(held_by))
}

/// A held slot in words: `calicoctl-win-turn-0 (win-1 since ..., failed: drain-timeout)`.
pub fn said(s: &Slot) -> String {
    let who = s.node.as_deref().unwrap_or("nobody");
    let since = s.since.as_deref().unwrap_or("-");
    match &s.failed {
        Some(f) => format!("{} ({who} since {since}, failed: {})", s.slot, f.code),
        None => format!("{} ({who} since {since})", s.slot),
    }
}

/// Whether another node's slot may be taken: no holder, or run out with its holder's Node
/// gone or neither failed nor cordoned (a holder killed after its cordon left its change half
/// done: the rollout stops there, as at a failed node).
fn free(c: &Cluster, l: &Lease, seen: &mut Seen, now: Instant) -> Result<bool, ClusterError> {
    let Some(h) = holder(l) else {
        return Ok(true);
    };
    if !seen.ran_out(l, now) {
        return Ok(false);
    }
    let nodes: Api<Node> = Api::all(c.client.clone());
    let Some(node) = c.call_opt("get", &format!("nodes/{h}"), nodes.get(h))? else {
        return Ok(true);
    };
    let cordoned = crate::cluster::drain::unschedulable(&node);
    Ok(failure(l).is_none() && !cordoned)
}

fn now_micro() -> MicroTime {
    MicroTime(jiff::Timestamp::now())
}

fn holding(t: &Turns, me: &crate::k8s_name::NodeName, spec: &mut LeaseSpec, back: bool) {
    let now = now_micro();
    if !back {
        spec.acquire_time = Some(now.clone());
        spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0).saturating_add(1));
    }
    spec.holder_identity = Some(me.to_string());
    spec.lease_duration_seconds = Some(i32::try_from(t.lease.as_secs()).unwrap_or(i32::MAX));
    spec.renew_time = Some(now);
}

/// Takes slot `name` as read (`None`: made now, labelled with the fleet's name; `back`: this
/// node's own, its failure mark dropped); `None` on a 409.
fn claim(
    c: &Cluster,
    t: &Turns,
    (name, l): (&str, Option<Lease>),
    me: &crate::k8s_name::NodeName,
    back: bool,
) -> Result<Option<Held>, ClusterError> {
    let made = l.is_none();
    let mut l = l.unwrap_or_else(|| Lease {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(BTreeMap::from([(LABEL.to_owned(), t.name.clone())])),
            ..ObjectMeta::default()
        },
        spec: None,
    });
    holding(t, me, l.spec.get_or_insert_default(), back);
    if let Some(a) = l.metadata.annotations.as_mut() {
        a.remove(FAILED);
    }
    let (api, pp) = (t.api(c), PostParams::default());
    let written = match made {
        true => c.call("create", "leases", api.create(&pp, &l)),
        false => c.call(
            "update",
            &format!("leases/{name}"),
            api.replace(name, &pp, &l),
        ),
    };
    match written {
        Ok(w) => Ok(Some(Held(w))),
        Err(ClusterError::Api { code: 409, .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Writes `change` on the held slot: `false` when it is not this node's any more. After a 409
/// a slot still held by `me` (a write that timed out but was made) is written once more on
/// what was read.
fn rewrite(
    c: &Cluster,
    t: &Turns,
    (me, held): (&crate::k8s_name::NodeName, &mut Held),
    change: &dyn Fn(&mut Lease),
) -> Result<bool, ClusterError> {
    let name = held.name().to_owned();
    let what = format!("leases/{name}");
    let api = t.api(c);
    for _ in 0..2 {
        let mut l = held.0.clone();
        change(&mut l);
        match c.call(
            "update",
            &what,
            api.replace(&name, &PostParams::default(), &l),
        ) {
            Ok(w) => {
                held.0 = w;
                return Ok(true);
            }
            Err(ClusterError::Api { code: 409, .. }) => {}
            Err(ClusterError::Api { code: 404, .. }) => return Ok(false),
            Err(e) => return Err(e),
        }
        match c.call_opt("get", &what, api.get(&name))? {
            Some(r) if holder(&r) == Some(me.as_str()) => held.0 = r,
            _ => return Ok(false),
        }
    }
    Ok(true)
}

/// One renewal: `false` when the slot is not this node's any more.
pub fn renew(
    c: &Cluster,
    t: &Turns,
    me: &crate::k8s_name::NodeName,
    held: &mut Held,
) -> Result<bool, ClusterError> {
    rewrite(c, t, (me, held), &|l| {
        l.spec.get_or_insert_default().renew_time = Some(now_micro());
    })
}

/// Marks the held slot failed with `code`: no other node takes it while this Node exists.
pub fn fail(
    c: &Cluster,
    t: &Turns,
    me: &crate::k8s_name::NodeName,
    held: &mut Held,
    code: &str,
) -> Result<bool, ClusterError> {
    let mark = Failure {
        code: code.to_owned(),
        at: jiff::Timestamp::now().to_string(),
    };
    let text = serde_json::to_string(&mark).unwrap_or_default();
    rewrite(c, t, (me, held), &|l| {
        l.metadata
            .annotations
            .get_or_insert_default()
            .insert(FAILED.to_owned(), text.clone());
    })
}

/// Gives the held slot back: no holder, no failure mark.
pub fn release(
    c: &Cluster,
    t: &Turns,
    me: &crate::k8s_name::NodeName,
    held: &mut Held,
) -> Result<bool, ClusterError> {
    rewrite(c, t, (me, held), &|l| {
        let spec = l.spec.get_or_insert_default();
        spec.holder_identity = None;
        spec.renew_time = Some(now_micro());
        if let Some(a) = l.metadata.annotations.as_mut() {
            a.remove(FAILED);
        }
    })
}

/// The slots of the fleet `name`, by their label (`fleet status`).
pub fn slots(c: &Cluster, namespace: &str, name: &str) -> Result<Vec<Slot>, ClusterError> {
    let api: Api<Lease> = Api::namespaced(c.client.clone(), namespace);
    let lp = ListParams::default().labels(&format!("{LABEL}={name}"));
    let mut out: Vec<Slot> = c
        .call("list", "leases", api.list(&lp))?
        .items
        .iter()
        .map(Slot::of)
        .collect();
    out.sort_by(|a, b| a.slot.cmp(&b.slot));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(holder: &str, secs: i32, renewed: i64) -> Lease {
        Lease {
            metadata: ObjectMeta {
                name: Some("f-turn-0".into()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(holder.into()),
                lease_duration_seconds: Some(secs),
                renew_time: Some(MicroTime(
                    jiff::Timestamp::from_second(renewed).expect("time"),
                )),
                ..LeaseSpec::default()
            }),
        }
    }

    /// Expiry by this contender's own clock, as client-go's: a record is judged from when it
    /// was first seen, whatever time it says (a renewTime a day ahead or behind, as a clock
    /// step writes it, changes nothing); a renewal seen starts the count again. Instants made
    /// up: no time passes.
    #[test]
    fn a_turn_runs_out_only_after_its_duration_unchanged_on_this_clock() {
        let mut seen = Seen::default();
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let behind = lease("win-1", 60, 1_700_000_000 - 86_400);
        assert!(!seen.ran_out(&behind, at(0)), "first seen now");
        assert!(!seen.ran_out(&behind, at(59)));
        assert!(seen.ran_out(&behind, at(60)));
        // Renewed (another record), even with a time far in the past: counted from now.
        let renewed = lease("win-1", 60, 1_600_000_000);
        assert!(!seen.ran_out(&renewed, at(61)));
        assert!(!seen.ran_out(&renewed, at(120)));
        assert!(seen.ran_out(&renewed, at(121)));
        // A failure's mark is a new record too.
        let mut failed = renewed.clone();
        failed.metadata.annotations = Some(BTreeMap::from([(
            FAILED.to_owned(),
            r#"{"code":"drain-timeout","at":"2026-01-01T00:00:00Z"}"#.to_owned(),
        )]));
        assert!(!seen.ran_out(&failed, at(130)));
        assert_eq!(
            failure(&failed).map(|f| f.code),
            Some("drain-timeout".into())
        );
    }
}
