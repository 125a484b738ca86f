//! `service keep-token --verify-every D`: the fleet DaemonSet's container runs `verify` for
//! its node every D (in `calicoctl-win-verify`) and publishes the result as the Node's
//! condition `CalicoWindowsTraffic`, shaped as CalicoNode's `CalicoWindowsReady`, with the
//! failing codes in annotation `calicoctl-win/traffic-codes` in the same patch. It is set
//! with calico-node's credential, whose ClusterRole may patch `nodes/status`
//! (projectcalico/calico v3.31.7 `manifests/calico.yaml`), so the fleet's account gets no such
//! right. Reasons: `TrafficPasses`, `TrafficFails`, `VerifyNotRun`, `VerifyStale` (Unknown).

use crate::cluster::{Cluster, credentials};
use crate::context::Context;
use crate::duration::Stop;
use crate::host::Host;
use crate::k8s_name::NodeName;
use crate::verify::judge::Outcome;
use crate::verify::node_health;
use crate::verify::run::{self, Options, Report, RunError};
use k8s_openapi::api::core::v1::{Node, NodeCondition};
use std::time::{Duration, Instant};

/// The condition's type.
pub const CONDITION: &str = crate::cluster::node::CONDITION_TRAFFIC;
/// At most this many failing checks are named in the message (as CalicoNode's condition);
/// every code is in the codes annotation beside it.
const MAX_REASONS: usize = 10;
/// The longest message the condition carries (a cluster error's text included).
const MAX_MESSAGE: usize = 1024;
/// The reason of an Unknown set because the node's run did not judge it.
pub const NOT_RUN: &str = crate::fleet::traffic::NOT_RUN;
/// The reason of an Unknown set because the last True is older than two intervals.
pub const STALE: &str = crate::fleet::traffic::STALE;

/// One node's runs, at its own moment of each interval (`phase_s`).
pub struct Schedule {
    every: Duration,
    due: Instant,
    stale_due: Instant,
    /// Requested by the stop signal: the run under way stops and cleans up, the loop ends.
    pub stop: Stop,
    /// The probe image (`--verify-image`), else verify's default.
    image: Option<String>,
}

impl Schedule {
    /// The first run at the node's phase, or at once (`once`).
    pub fn new(every: Duration, node: &NodeName, once: bool, image: Option<String>) -> Self {
        let now = Instant::now();
        let wait = until_next(node, every, crate::duration::now());
        Self {
            every,
            due: now + if once { Duration::ZERO } else { wait },
            // A True left from before this pod (its pod was gone for long) is judged at once.
            stale_due: if once { now + every } else { now },
            stop: Stop::new(),
            image,
        }
    }

    /// Runs what is due (the staleness look, the run); what was done, or an error when the
    /// run did not judge the node.
    pub fn tick(
        &mut self,
        ctx: &mut Context,
        host: &dyn Host,
        (kubeconfig, node): (&str, &NodeName),
    ) -> anyhow::Result<Vec<String>> {
        let mut said = Vec::new();
        if Instant::now() >= self.stale_due {
            self.stale_due = Instant::now() + self.every;
            // A look that fails is said; the run below goes on.
            match mark_stale(ctx, host, (kubeconfig, node), self.every) {
                Ok(true) => said.push(format!(
                    "verify: node {node}'s condition {CONDITION} was stale: Unknown ({STALE})"
                )),
                Ok(false) => {}
                Err(e) => ctx
                    .printer
                    .warn(&format!("cannot look whether {CONDITION} is stale: {e:#}")),
            }
        }
        if Instant::now() >= self.due {
            let result = verify_and_publish(
                ctx,
                host,
                (kubeconfig, node),
                &self.stop,
                self.image.as_deref(),
            );
            let next = until_next(node, self.every, crate::duration::now());
            self.due = Instant::now() + if next.is_zero() { self.every } else { next };
            said.push(result?);
        }
        Ok(said)
    }
}

/// Sets a stale True Unknown (`VerifyStale`): whether it did.
fn mark_stale(
    ctx: &Context,
    host: &dyn Host,
    (kubeconfig, node): (&str, &NodeName),
    every: Duration,
) -> anyhow::Result<bool> {
    let as_node = as_node(ctx, host, kubeconfig)?;
    let Some(c) = stale(current(&as_node, node).as_ref(), every) else {
        return Ok(false);
    };
    crate::cluster::node::set_condition(&as_node, node, &c)?;
    Ok(true)
}

/// The second of each interval at which `node` runs: FNV-1a of its name (stable across
/// builds and hosts, unlike std's hasher) over the interval's seconds.
pub fn phase_s(node: &NodeName, every: Duration) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in node.as_str().bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h % every.as_secs().max(1)
}

/// How long, at unix time `now`, until `node`'s next run.
pub fn until_next(node: &NodeName, every: Duration, now: i64) -> Duration {
    let e = every.as_secs().max(1);
    let into = u64::try_from(now.rem_euclid(i64::try_from(e).unwrap_or(i64::MAX))).unwrap_or(0);
    Duration::from_secs((phase_s(node, every) + e - into) % e)
}

/// Runs verify for `node` and sets the condition, said. A run that could not judge the node
/// sets it Unknown (`VerifyNotRun`, with why) rather than leave an older verdict, and errs.
pub fn verify_and_publish(
    ctx: &mut Context,
    host: &dyn Host,
    (kubeconfig, node): (&str, &NodeName),
    stop: &Stop,
    image: Option<&str>,
) -> anyhow::Result<String> {
    let ran = run_once(ctx, node, stop, image);
    // The verdict in the node's metrics too; metrics never stop the run.
    if let Ok(r) = &ran
        && let Err(e) =
            crate::installed::metrics::record_verify(host, r.passed, crate::duration::now())
    {
        ctx.printer
            .warn(&format!("cannot keep verify's verdict in its metrics: {e}"));
    }
    let as_node = as_node(ctx, host, kubeconfig)?;
    let before = current(&as_node, node).map(|c| c.status);
    let before = before.as_deref();
    let c = match &ran {
        Ok(r) if r.interrupted => unknown(
            NOT_RUN,
            "verify was stopped before its verdict (its pod or service is stopping)",
            before,
        ),
        Ok(r) => condition(r, before),
        Err(why) => unknown(NOT_RUN, &format!("verify did not run: {why}"), before),
    };
    // The codes go with the verdict they are of: none beside an Unknown.
    let codes = match &ran {
        Ok(r) if !r.interrupted => codes(r),
        _ => Vec::new(),
    };
    let key = crate::cluster::node::ANNOTATION_TRAFFIC_CODES;
    crate::cluster::node::report(&as_node, node, &c, (key, &codes))?;
    let status = c["status"].as_str().unwrap_or_default();
    match ran {
        Ok(r) => Ok(format!(
            "verify: node {node} {}; condition {CONDITION} {status}",
            if r.passed {
                "passes traffic"
            } else {
                "does not pass traffic"
            },
        )),
        Err(why) => anyhow::bail!("verify did not run: {why}; condition {CONDITION} {status}"),
    }
}

/// One run in verify's namespace with the pod's own credential, stopped by `stop`.
fn run_once(
    ctx: &mut Context,
    node: &NodeName,
    stop: &Stop,
    image: Option<&str>,
) -> Result<Report, String> {
    let cluster = match ctx.connect_cluster() {
        Ok(Some(c)) => c,
        Ok(None) => return Err("this process has no credential of its own (the pod's)".into()),
        Err(e) => return Err(format!("{e} ({})", e.hint())),
    };
    // The cluster's domain as the configuration names it, as install's `--verify` takes it.
    let domain = super::common::this_node(ctx).and_then(|(_, d)| d);
    let o = Options {
        namespace: Some(crate::cluster::verify_rights::NAMESPACE.to_owned()),
        stop: stop.clone(),
        cluster_domain: domain.unwrap_or_else(|| crate::verify::options::CLUSTER_DOMAIN.into()),
        ..Options::for_node(node).paced(ctx.options.host.sim_pace)
    };
    let o = Options {
        image: image.map_or(o.image, str::to_owned),
        ..o
    };
    if stop.requested() {
        return Err("stopped before it began".into());
    }
    match run::run(&cluster, &o) {
        // A lease lost mid-run: no verdict (Unknown, `VerifyNotRun`).
        Ok(Report {
            lease_lost: Some(f),
            ..
        }) => Err(format!("{} [{}]", f.message, f.code.word())),
        Ok(mut r) => {
            // The node's own findings, joined as `verify` on the node joins them.
            super::verify::join_node_health(ctx, &mut r);
            Ok(r)
        }
        Err(RunError::Plan(e)) => Err(e.to_string()),
        Err(RunError::Cluster(e)) => Err(format!("{e} ({})", e.hint())),
    }
}

/// calico-node's own credential, which may patch `nodes/status`.
fn as_node(ctx: &Context, host: &dyn Host, kubeconfig: &str) -> anyhow::Result<Cluster> {
    let token = credentials::node_token(host, kubeconfig)?
        .ok_or_else(|| anyhow::anyhow!("calico-node has no token in {kubeconfig}"))?;
    let text = host
        .read_file(kubeconfig)?
        .ok_or_else(|| anyhow::anyhow!("{kubeconfig} is missing"))?;
    Ok(Cluster::connect_as_node(
        kubeconfig,
        &String::from_utf8_lossy(&text),
        &token,
        &ctx.env,
    )?)
}

/// The Node's condition as it is (none when it cannot be read).
fn current(as_node: &Cluster, node: &NodeName) -> Option<NodeCondition> {
    let nodes: kube::Api<Node> = kube::Api::all(as_node.client.clone());
    let n = as_node
        .call_opt("get", &format!("nodes/{node}"), nodes.get(node.as_str()))
        .ok()
        .flatten()?;
    n.status?
        .conditions?
        .into_iter()
        .find(|c| c.type_ == CONDITION)
}

/// The condition set Unknown for `reason`, given the status the Node carries (`before`).
pub fn unknown(reason: &str, message: &str, before: Option<&str>) -> serde_json::Value {
    shaped("Unknown", reason, message, before)
}

/// The condition, heartbeat now, transition time only when `status` is not `before`'s.
fn shaped(status: &str, reason: &str, message: &str, before: Option<&str>) -> serde_json::Value {
    let now = crate::duration::time_text(crate::duration::now());
    let mut c = serde_json::json!({
        "type": CONDITION,
        "status": status,
        "reason": reason,
        "message": message.chars().take(MAX_MESSAGE).collect::<String>(),
        "lastHeartbeatTime": now,
    });
    if before != Some(status) {
        c["lastTransitionTime"] = serde_json::json!(now);
    }
    c
}

/// The Unknown (`VerifyStale`) a True older than two intervals becomes.
pub fn stale(c: Option<&NodeCondition>, every: Duration) -> Option<serde_json::Value> {
    let c = c.filter(|c| c.status == "True")?;
    let beat = c.last_heartbeat_time.as_ref().map(|t| t.0.as_second());
    // The one judge `fleet status` reads the condition by too.
    if !crate::fleet::traffic::is_stale(beat, every, crate::duration::now()) {
        return None;
    }
    let at = beat.map_or_else(|| "an unknown time".to_owned(), crate::duration::time_text);
    Some(unknown(
        STALE,
        &format!(
            "the last verdict (True, at {at}) is older than two intervals ({}): verify has not published since",
            crate::duration::show(2 * every)
        ),
        Some("True"),
    ))
}

/// The failing checks' codes, each once (the annotation `traffic::of_node` reads).
pub fn codes(r: &Report) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for v in &r.checks {
        if let Outcome::Fail { finding } = &v.outcome
            && !out.contains(&finding.code.word())
        {
            out.push(finding.code.word());
        }
    }
    out
}

/// The condition a report sets, given the status the Node carries (`before`).
pub fn condition(r: &Report, before: Option<&str>) -> serde_json::Value {
    let mut reasons: Vec<String> = r
        .checks
        .iter()
        .filter_map(|v| match &v.outcome {
            Outcome::Fail { finding } => Some(match node_health::said(r, v.check) {
                Some(own) => format!("{} [{}] ({own})", finding.message, finding.code.word()),
                None => format!("{} [{}]", finding.message, finding.code.word()),
            }),
            _ => None,
        })
        .collect();
    if r.timed_out || r.interrupted {
        reasons.push(format!(
            "verify did not finish: {} of its checks judged",
            r.checks.len()
        ));
    }
    if reasons.len() > MAX_REASONS {
        let more = reasons.len() - MAX_REASONS;
        reasons.truncate(MAX_REASONS);
        reasons.push(format!("and {more} more"));
    }
    if r.passed {
        let message = format!(
            "every verify check passed ({} checks, calicoctl-win)",
            r.checks.len()
        );
        return shaped("True", "TrafficPasses", &message, before);
    }
    shaped("False", "TrafficFails", &reasons.join("; "), before)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_node_runs_at_its_own_moment_of_the_interval_and_keeps_it() {
        let every = Duration::from_secs(6 * 3600);
        let phases: std::collections::BTreeSet<u64> = (1..=20)
            .map(|i| phase_s(&format!("win-{i}").as_str().into(), every))
            .collect();
        assert!(phases.len() >= 19, "{phases:?}");
        assert!(phases.iter().all(|p| *p < every.as_secs()));
        // The same node, the same moment: deterministic, whenever its pod started.
        let p = phase_s(&"win-1".into(), every);
        assert_eq!(p, phase_s(&"win-1".into(), every));
        let start = 1_800_000_000_i64;
        for t in [start, start + 17, start + 5000] {
            let wait = until_next(&"win-1".into(), every, t).as_secs();
            let at = u64::try_from(t).expect("positive") + wait;
            assert_eq!(at % every.as_secs(), p, "{t}");
            assert!(wait < every.as_secs());
        }
    }

    fn cond(status: &str, age_s: i64) -> NodeCondition {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
        let at = jiff::Timestamp::from_second(crate::duration::now() - age_s).expect("time");
        NodeCondition {
            type_: CONDITION.into(),
            status: status.into(),
            last_heartbeat_time: Some(Time(at)),
            ..Default::default()
        }
    }

    /// hcsshim terminates a HostProcess container's job 5 s after it tells the processes left
    /// (calicoctl-win under `cmd.exe`) to stop (microsoft/hcsshim
    /// `internal/jobcontainers/jobcontainer.go`, `waitBackground`, `Shutdown`): a stopped run's
    /// wait for what it deleted fits in them (docs/commands/fleet.md, "Stopping the pods").
    #[test]
    fn a_stopped_runs_cleanup_wait_fits_in_hcsshims_five_seconds() {
        let hcsshim_shutdown = Duration::from_secs(5);
        assert!(crate::verify::run::STOPPED_CLEANUP_WAIT < hcsshim_shutdown);
    }

    #[test]
    fn a_true_older_than_two_intervals_becomes_unknown_stale() {
        let every = Duration::from_secs(600);
        assert!(stale(Some(&cond("True", 1100)), every).is_none());
        let s = stale(Some(&cond("True", 1300)), every).expect("stale");
        assert_eq!(s["status"], "Unknown");
        assert_eq!(s["reason"], STALE);
        assert!(s["lastTransitionTime"].is_string());
        // A False or an Unknown stays what it is; no condition is nothing to mark.
        assert!(stale(Some(&cond("False", 99_999)), every).is_none());
        assert!(stale(None, every).is_none());
    }
}
