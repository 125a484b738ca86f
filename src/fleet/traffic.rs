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

    fn node(status: &str, reason: &str, age_s: Option<i64>) -> Node {
        Node {
            status: Some(NodeStatus {
                conditions: Some(vec![NodeCondition {
                    type_: CONDITION_TRAFFIC.into(),
                    status: status.into(),
                    reason: Some(reason.into()),
                    message: Some("said".into()),
                    last_heartbeat_time: age_s
                        .map(|a| Time(jiff::Timestamp::from_second(NOW - a).expect("time"))),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// The node's condition judged against a 600 s schedule.
    fn judged(status: &str, reason: &str, age_s: Option<i64>) -> Traffic {
        let every = Some(Duration::from_secs(600));
        of_node(&node(status, reason, age_s), every, NOW, &mut Vec::new()).expect("t")
    }

    #[test]
    fn a_verdict_older_than_two_intervals_is_stale_and_a_problem() {
        let fresh = judged("True", "TrafficPasses", Some(1100));
        assert_eq!(fresh.status, "True");
        assert_eq!(problem("win-1", &fresh), None);
        let old = judged("True", "TrafficPasses", Some(1300));
        assert_eq!(
            (old.status.as_str(), old.reason.as_deref()),
            ("Unknown", Some(STALE))
        );
        assert!(
            problem("win-1", &old)
                .expect("a problem")
                .contains("is stale")
        );
        // A False as old is stale too. (Without a schedule nothing is judged stale:
        // tests/cluster/fleet.rs
        // `fleet_status_reads_the_traffic_verdict_against_the_daemonsets_interval`.)
        let false_old = judged("False", "TrafficFails", Some(9999));
        assert_eq!(false_old.reason.as_deref(), Some(STALE));
        let no_beat = judged("True", "TrafficPasses", None);
        assert_eq!(no_beat.status, "Unknown");
    }

    /// (A False verdict's problem: tests/cluster/fleet.rs
    /// `fleet_status_reads_the_traffic_verdict_against_the_daemonsets_interval`.)
    #[test]
    fn an_unknown_not_run_is_a_problem_only_once_stale() {
        let every = Some(Duration::from_secs(600));
        let u = judged("Unknown", NOT_RUN, Some(5));
        assert_eq!(problem("win-1", &u), None);
        // Not run, changed to that more than two intervals ago: its runs never judge, stale.
        let mut never = node("Unknown", NOT_RUN, Some(5));
        if let Some(c) = never
            .status
            .as_mut()
            .and_then(|s| s.conditions.as_mut())
            .and_then(|c| c.first_mut())
        {
            c.last_transition_time = Some(Time(
                jiff::Timestamp::from_second(NOW - 1300).expect("time"),
            ));
        }
        let n = of_node(&never, every, NOW, &mut Vec::new()).expect("t");
        assert_eq!(n.reason.as_deref(), Some(STALE));
        assert!(
            problem("win-1", &n)
                .expect("a problem")
                .contains("has not judged")
        );
        assert_eq!(of_node(&Node::default(), every, NOW, &mut Vec::new()), None);
    }

    /// `node` with the traffic codes annotation written with a heartbeat `age_s` old.
    fn with_codes(mut n: Node, age_s: i64, codes: &str) -> Node {
        let beat = jiff::Timestamp::from_second(NOW - age_s).expect("time");
        let text = format!(r#"{{"heartbeat": "{beat}", "codes": {codes}}}"#);
        n.metadata.annotations = Some([(ANNOTATION_TRAFFIC_CODES.to_owned(), text)].into());
        n
    }

    /// A False verdict's codes are read whole from the annotation written in its patch (its
    /// heartbeat the condition's); one an earlier run wrote (an older heartbeat) is no code of
    /// this verdict: unknown, not shown; a stale verdict shows none; a malformed one is named.
    #[test]
    fn a_false_verdicts_codes_are_those_written_with_its_heartbeat() {
        let every = Some(Duration::from_secs(600));
        let mut bad = Vec::new();
        let all = r#"["traffic-cni", "traffic-dns", "traffic-cni"]"#;
        let fresh = with_codes(node("False", "TrafficFails", Some(5)), 5, all);
        let t = of_node(&fresh, every, NOW, &mut bad).expect("t");
        assert_eq!(t.codes, ["traffic-cni", "traffic-dns"]);
        assert!(!t.codes_unknown && bad.is_empty());
        // (An earlier run's codes beside a later verdict, not current: tests/cluster/fleet.rs
        // `fleet_status_shows_each_traffic_code_with_its_fix_and_no_earlier_runs`.)
        let none = of_node(
            &node("False", "TrafficFails", Some(5)),
            every,
            NOW,
            &mut bad,
        );
        assert!(none.expect("t").codes_unknown);
        // A stale False is Unknown: no codes stand for it.
        let stale = with_codes(node("False", "TrafficFails", Some(1300)), 1300, all);
        let t = of_node(&stale, every, NOW, &mut bad).expect("t");
        assert!(t.codes.is_empty() && !t.codes_unknown, "{t:?}");
        // A True has no codes, whatever an annotation says.
        let passes = with_codes(node("True", "TrafficPasses", Some(5)), 5, all);
        assert!(
            of_node(&passes, every, NOW, &mut bad)
                .expect("t")
                .codes
                .is_empty()
        );
        assert!(bad.is_empty(), "{bad:?}");
        let malformed = with_codes(
            node("False", "TrafficFails", Some(5)),
            5,
            r#""traffic-cni""#,
        );
        let t = of_node(&malformed, every, NOW, &mut bad).expect("t");
        assert!(t.codes_unknown);
        assert_eq!(bad.len(), 1);
        assert!(bad[0].contains(ANNOTATION_TRAFFIC_CODES), "{bad:?}");
    }
}
