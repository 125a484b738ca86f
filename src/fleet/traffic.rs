//! The Node condition `CalicoWindowsTraffic` as `fleet status` reads it: the DaemonSet's
//! scheduled `verify` verdict, stale by its heartbeat against the `--verify-every` read once
//! from the DaemonSet's command line.

pub use super::view::Traffic;
use super::view::{capped, codes_with, shown};
use crate::cluster::node::{ANNOTATION_TRAFFIC_CODES, CONDITION_TRAFFIC};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::Node;
use std::time::Duration;

/// The reason of an Unknown set because the node's run did not judge it.
pub const NOT_RUN: &str = "VerifyNotRun";
/// The reason of an Unknown set because the last verdict is older than two intervals.
pub const STALE: &str = "VerifyStale";
/// The flag of `service keep-token` that schedules the runs, as `fleet plan` writes it.
const EVERY_FLAG: &str = "--verify-every=";

/// Whether a verdict of heartbeat `beat` is older than two intervals at `now` (for the pod's
/// own mark and `fleet status` alike).
pub fn is_stale(beat: Option<i64>, every: Duration, now: i64) -> bool {
    let two = i64::try_from(2 * every.as_secs()).unwrap_or(i64::MAX);
    beat.is_none_or(|b| now.saturating_sub(b) > two)
}

/// The node's condition judged at `now` against the DaemonSet's interval (none: never stale),
/// with a False verdict's codes (a malformed annotation named in `malformed`).
pub fn of_node(
    n: &Node,
    every: Option<Duration>,
    now: i64,
    malformed: &mut Vec<String>,
) -> Option<Traffic> {
    let c = n
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == CONDITION_TRAFFIC)?;
    let beat = c.last_heartbeat_time.as_ref().map(|t| t.0.as_second());
    let mut t = Traffic {
        status: capped(&c.status),
        reason: c.reason.as_deref().map(capped),
        message: c.message.as_deref().map(capped),
        heartbeat: c.last_heartbeat_time.as_ref().map(|t| t.0.to_string()),
        heartbeat_age_seconds: beat.map(|b| now.saturating_sub(b)),
        codes: Vec::new(),
        codes_unknown: false,
    };
    if !matches!(t.status.as_str(), "True" | "False" | "Unknown") {
        t.message = Some(format!(
            "its status is {}, not True, False or Unknown",
            shown(&t.status)
        ));
        t.status = "Unknown".into();
    }
    if let Some(every) = every.filter(|e| t.status != "Unknown" && is_stale(beat, *e, now)) {
        t.message = Some(format!(
            "the last verdict ({}, at {}) is older than two intervals of the DaemonSet's --verify-every ({}): its scheduled verify has not published since",
            t.status,
            t.heartbeat.as_deref().unwrap_or("an unknown time"),
            crate::duration::show(every)
        ));
        t.status = "Unknown".into();
        t.reason = Some(STALE.into());
    }
    // Runs that could not judge keep the heartbeat fresh: unjudged for two intervals since the
    // last change is stale too.
    let since = c.last_transition_time.as_ref().map(|t| t.0.as_second());
    if let Some(every) = every.filter(|e| {
        t.reason.as_deref() == Some(NOT_RUN) && since.is_some() && is_stale(since, *e, now)
    }) {
        t.message = Some(format!(
            "its scheduled verify has not judged the node's traffic for more than two intervals of the DaemonSet's --verify-every ({}), since {}: {}",
            crate::duration::show(every),
            c.last_transition_time
                .as_ref()
                .map_or("an unknown time".into(), |t| t.0.to_string()),
            t.message.as_deref().map_or("no message".into(), shown)
        ));
        t.reason = Some(STALE.into());
    }
    if t.status == "False" {
        let codes = codes_with(n, ANNOTATION_TRAFFIC_CODES, beat, malformed);
        t.codes_unknown = codes.is_none();
        t.codes = codes.unwrap_or_default();
    }
    Some(t)
}

/// What is not as it should be in node `name`'s traffic: a verdict False, or a stale one.
pub fn problem(name: &str, t: &Traffic) -> Option<String> {
    let said = t.message.as_deref().map_or("no message".into(), shown);
    if t.status == "False" {
        return Some(format!(
            "node {} does not pass traffic ({CONDITION_TRAFFIC} False): {said}",
            shown(name)
        ));
    }
    (t.reason.as_deref() == Some(STALE)).then(|| {
        format!(
            "node {}: its {CONDITION_TRAFFIC} verdict is stale: {said}",
            shown(name)
        )
    })
}

fn command_of(ds: &DaemonSet) -> &[String] {
    let first = ds
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|p| p.containers.first());
    first.and_then(|c| c.command.as_deref()).unwrap_or_default()
}

/// The `--verify-every=D` of a DaemonSet's first container.
pub fn every_of(ds: &DaemonSet) -> Option<Duration> {
    command_of(ds)
        .iter()
        .find_map(|a| a.strip_prefix(EVERY_FLAG))
        .and_then(|d| crate::duration::parse(d).ok())
}

/// Whether a DaemonSet's pods take turns (`reconfigure --turn`; beside a Plan they do not).
pub fn takes_turns(ds: &DaemonSet) -> bool {
    command_of(ds).iter().any(|a| a.starts_with("--turn="))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{NodeCondition, NodeStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    const NOW: i64 = 1_800_000_000;

    /// The node's condition, its heartbeat `age_s` old and its last change `since_s` ago.
    fn node(status: &str, reason: &str, age_s: Option<i64>, since_s: Option<i64>) -> Node {
        let ago = |a: i64| Time(jiff::Timestamp::from_second(NOW - a).expect("time"));
        Node {
            status: Some(NodeStatus {
                conditions: Some(vec![NodeCondition {
                    type_: CONDITION_TRAFFIC.into(),
                    status: status.into(),
                    reason: Some(reason.into()),
                    message: Some("said".into()),
                    last_heartbeat_time: age_s.map(ago),
                    last_transition_time: since_s.map(ago),
                }]),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// Against a 600 s schedule: a verdict older than two intervals (or with no heartbeat) is
    /// stale and a problem, a False too; one not run is a problem only once unjudged for two
    /// intervals since it changed to that. (Without a schedule nothing is judged stale, and a
    /// False verdict's problem: tests/cluster/fleet.rs
    /// `fleet_status_reads_the_traffic_verdict_against_the_daemonsets_interval`.)
    #[test]
    fn a_verdict_older_than_two_intervals_is_stale_and_a_problem() {
        let every = Some(Duration::from_secs(600));
        let (pass, fail) = (("True", "TrafficPasses"), ("False", "TrafficFails"));
        let (not_run, stale) = (("Unknown", NOT_RUN), ("Unknown", STALE));
        for (cond, beat, since, want, said) in [
            (pass, Some(1100), None, pass, ""),
            (pass, Some(1300), None, stale, "is stale"),
            (fail, Some(9999), None, stale, "is stale"),
            (pass, None, None, stale, "is stale"),
            (not_run, Some(5), None, not_run, ""),
            (not_run, Some(5), Some(1300), stale, "has not judged"),
        ] {
            let case = format!("{cond:?} beat {beat:?} since {since:?}");
            let n = node(cond.0, cond.1, beat, since);
            let t = of_node(&n, every, NOW, &mut Vec::new()).expect("judged");
            let got = (t.status.as_str(), t.reason.as_deref().unwrap_or_default());
            assert_eq!(got, want, "{case}");
            let problem = problem("win-1", &t).unwrap_or_default();
            assert_eq!(problem.is_empty(), said.is_empty(), "{case}: {problem}");
            assert!(problem.contains(said), "{case}: {problem}");
        }
        assert_eq!(of_node(&Node::default(), every, NOW, &mut Vec::new()), None);
    }

    /// A False (or True) verdict `age_s` old with `codes` written beside it with its heartbeat,
    /// judged against a 600 s schedule (a malformed annotation named in `bad`).
    fn coded(passes: bool, age_s: i64, codes: Option<&str>, bad: &mut Vec<String>) -> Traffic {
        let (status, reason) = match passes {
            true => ("True", "TrafficPasses"),
            false => ("False", "TrafficFails"),
        };
        let mut n = node(status, reason, Some(age_s), None);
        if let Some(codes) = codes {
            let beat = jiff::Timestamp::from_second(NOW - age_s).expect("time");
            let text = format!(r#"{{"heartbeat": "{beat}", "codes": {codes}}}"#);
            n.metadata.annotations = Some([(ANNOTATION_TRAFFIC_CODES.to_owned(), text)].into());
        }
        of_node(&n, Some(Duration::from_secs(600)), NOW, bad).expect("judged")
    }

    /// A False verdict's codes are read whole from the annotation written in its patch (its
    /// heartbeat the condition's); none written with it: unknown, not shown; a stale verdict
    /// shows none; a malformed one is named.
    #[test]
    fn a_false_verdicts_codes_are_those_written_with_its_heartbeat() {
        let mut bad = Vec::new();
        let all = Some(r#"["traffic-cni", "traffic-dns", "traffic-cni"]"#);
        let t = coded(false, 5, all, &mut bad);
        assert_eq!(t.codes, ["traffic-cni", "traffic-dns"]);
        assert!(!t.codes_unknown && bad.is_empty());
        // (An earlier run's codes beside a later verdict, not current: tests/cluster/fleet.rs
        // `fleet_status_shows_each_traffic_code_with_its_fix_and_no_earlier_runs`.)
        assert!(coded(false, 5, None, &mut bad).codes_unknown);
        // A stale False is Unknown: no codes stand for it.
        let t = coded(false, 1300, all, &mut bad);
        assert!(t.codes.is_empty() && !t.codes_unknown, "{t:?}");
        // A True has no codes, whatever an annotation says.
        assert!(coded(true, 5, all, &mut bad).codes.is_empty());
        assert!(bad.is_empty(), "{bad:?}");
        assert!(coded(false, 5, Some(r#""traffic-cni""#), &mut bad).codes_unknown);
        assert_eq!(bad.len(), 1);
        assert!(bad[0].contains(ANNOTATION_TRAFFIC_CODES), "{bad:?}");
    }
}
