use super::*;

const HASH: &str = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

fn hash() -> crate::config::ConfigHash {
    crate::config::ConfigHash(HASH.into())
}
const NOW: i64 = 1_800_000_000;

fn node(name: &str, hash: &str, status: &str, message: &str, beat_ago: Option<i64>) -> Node {
    let mut c = serde_json::json!({"type": CONDITION_CALICO_READY, "status": status,
        "reason": "CalicoDegraded", "message": message});
    if let Some(ago) = beat_ago {
        c["lastHeartbeatTime"] = serde_json::json!(crate::duration::time_text(NOW - ago));
    }
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "annotations": {ANNOTATION_CONFIG_HASH: hash}},
        "status": {"conditions": [{"type": "Ready", "status": "True"}, c]}
    }))
    .expect("node")
}

/// Anyone who may patch a node's status controls its text: a long message is cut with an
/// ellipsis where shown and capped where read (JSON keeps it), and a bidi override written out.
/// (Escape sequences and newlines written out, no forged table line: tests/cluster/fleet.rs
/// `hostile_node_text_is_escaped_in_the_table`.)
#[test]
fn hostile_node_text_cannot_forge_output() {
    let long = format!("\u{1b}[31mok\nwin-9{}", "x".repeat(5000));
    let r = node_row(&node("win-1\u{1b}[2J", HASH, "False", &long, Some(30)), NOW);
    assert_eq!(shown(&r.name), "win-1\\u{1b}[2J");
    let reason = shown(r.reasons.as_deref().expect("reasons"));
    assert!(reason.contains("\\n") && reason.ends_with('…'), "{reason}");
    assert_eq!(reason.chars().count(), MAX_SHOWN + 1, "{reason}");
    let kept = r.reasons.as_deref().map(|m| m.chars().count());
    assert_eq!(kept, Some(MAX_TEXT));
    assert_eq!(shown("a\u{202e}b"), "a\\u{202e}b", "a bidi override");
}

/// A hash that is no `sha256:` hex and a status that is not True/False/Unknown are named, and
/// a malformed hash gets no vote for the fleet's config.
#[test]
fn malformed_values_are_flagged() {
    let r = node_row(&node("win-1", "sha256:zz", "Maybe", "", Some(30)), NOW);
    assert_eq!(r.malformed.len(), 2, "{:?}", r.malformed);
    assert_eq!(r.calico_ready.as_deref(), Some("Unknown"));
    let mut votes = HashVotes::default();
    votes.add(&r);
    assert_eq!(votes.most_common(), None);
    votes.add(&node_row(&node("win-2", HASH, "True", "", Some(30)), NOW));
    assert_eq!(votes.most_common(), Some(hash()));
    assert!(is_hash(HASH) && !is_hash("sha256:AAAA") && !is_hash(&HASH.to_uppercase()));
}

/// The codes annotation CalicoNode writes beside its condition is read whole: a node with
/// more findings than the message names (ten, then "and N more") has every code counted, and
/// no text is parsed for them. A value that is no list of codes is named, not guessed at; a
/// healthy or stale condition names no code whatever the annotation says.
#[test]
fn each_nodes_finding_codes_are_read_whole_from_its_codes_annotation() {
    let words: Vec<String> = (0..12)
        .map(|i| format!("code-{}", char::from(b'a' + i)))
        .collect();
    let with = |status: &str, codes: serde_json::Value, beat: i64| {
        let mut n = node(
            "win-1",
            HASH,
            status,
            "ten sentences; and 2 more",
            Some(beat),
        );
        let list = serde_json::json!({
            "heartbeat": crate::duration::time_text(NOW - beat), "codes": codes});
        n.metadata
            .annotations
            .get_or_insert_default()
            .insert(ANNOTATION_FINDING_CODES.into(), list.to_string());
        node_row(&n, NOW)
    };
    let r = with("False", serde_json::json!(words), 30);
    assert_eq!(r.codes, words, "{r:?}");
    assert_eq!(code_counts(&[r]).len(), 12);
    let doubled = with(
        "False",
        serde_json::json!(["felix-unhealthy", "felix-unhealthy"]),
        30,
    );
    assert_eq!(doubled.codes, ["felix-unhealthy"]);
    for bad in [
        serde_json::json!("endpoint-stuck"),
        serde_json::json!(["[31m"]),
        serde_json::json!([1]),
    ] {
        let r = with("False", bad.clone(), 30);
        assert!(r.codes.is_empty(), "{bad}: {r:?}");
        assert!(
            r.malformed
                .iter()
                .any(|m| m.contains(ANNOTATION_FINDING_CODES)),
            "{bad}: {r:?}"
        );
    }
    assert!(codes_of("endpoint-stuck").is_err());
    assert!(with("True", serde_json::json!(words), 30).codes.is_empty());
    assert!(
        with("False", serde_json::json!(words), 3 * 86_400)
            .codes
            .is_empty(),
        "stale"
    );
}

/// A node handed to the operator a day ago: its old condition's heartbeat is not a stopped
/// CalicoNode, and neither its condition nor its missing config is a problem, with no
/// NetworkUnavailable or with calico-node's False (CalicoIsUp: every healthy node the operator
/// runs; tests/lifecycle/migrate.rs). (calico-node's True is a problem:
/// tests/cluster/fleet_migrate.rs, after "fleet status shows the nodes as the operator's"; the
/// same condition with uninstall's reason is calicoctl-win's node left degraded:
/// tests/cluster/fleet.rs `two_nodes_from_one_config_share_a_hash_and_an_uninstalled_one_is_not_healthy`.)
#[test]
fn a_node_handed_to_the_operator_a_day_ago_is_not_stale() {
    for unavailable in [None, Some("False")] {
        let mut n = serde_json::json!({
            "metadata": {"name": "win-1"},
            "status": {"conditions": [{"type": "Ready", "status": "True"},
                {"type": CONDITION_CALICO_READY, "status": "False",
                 "reason": REASON_HANDED_TO_OPERATOR, "message": "the operator's DaemonSet runs Calico",
                 "lastHeartbeatTime": crate::duration::time_text(NOW - 86_400)}]}
        });
        if let Some(status) = unavailable {
            let up = serde_json::json!({"type": "NetworkUnavailable", "status": status,
                "reason": "CalicoIsUp", "message": "Calico is running on this node"});
            n["status"]["conditions"]
                .as_array_mut()
                .expect("list")
                .push(up);
        }
        let r = node_row(&serde_json::from_value(n).expect("node"), NOW);
        assert!(r.handed_to_operator, "{unavailable:?}");
        assert_eq!(r.calico_ready.as_deref(), Some("False"), "not Unknown");
        let none = Vec::<String>::new();
        assert_eq!(row_problems(&r, Some(&hash())), none, "{unavailable:?}");
    }
}

/// Each trouble of a row is a finding of the one catalogue: its code by kind, the node as its
/// subject, the sentence as `row_problems` says it and the code's remedy. A heartbeat older
/// than three beats (or none) is Unknown, with its age: a CalicoNode that died days ago no
/// longer reads True.
#[test]
fn each_rows_trouble_is_a_finding_with_its_code_and_remedy() {
    use crate::health::judge::{Code, Finding, fleet_row};
    let found = |r: &NodeRow| -> Vec<Finding> {
        let troubles = row_troubles(r, Some(&hash()));
        troubles.iter().map(|t| fleet_row(&r.name, t)).collect()
    };
    let codes = |r: &NodeRow| found(r).iter().map(|f| f.code).collect::<Vec<_>>();
    let mut r = node_row(&node("win-1", "sha256:zz", "False", "x", Some(30)), NOW);
    r.ready = Some("False".into());
    let all = found(&r);
    use Code::*;
    let want = [
        NodeValueMalformed,
        NodeNotReady,
        CalicoDegraded,
        CodesUnknown,
        ConfigNotFleets,
    ];
    assert_eq!(codes(&r), want, "{all:?}");
    for f in &all {
        assert_eq!(f.subject, "win-1");
        assert_eq!(f.remedy.as_deref(), Some(f.code.remedy()), "{f:?}");
    }
    let said: Vec<String> = all.iter().map(|f| f.message.clone()).collect();
    assert_eq!(said, row_problems(&r, Some(&hash())));
    let row = |beat| node_row(&node("win-1", HASH, "True", "", beat), NOW);
    let mut fresh = row(Some(60));
    assert!(codes(&fresh).is_empty(), "{fresh:?}");
    fresh.calico_ready = None;
    assert_eq!(codes(&fresh), [ConditionMissing]);
    let stale = row(Some(3 * 86_400));
    assert_eq!(stale.heartbeat_age_seconds, Some(3 * 86_400));
    assert_eq!(codes(&stale), [ConditionUnknown]);
    let said = row_problems(&stale, Some(&hash())).join("; ");
    let unknown = said.contains("Calico on node win-1 is unknown") && said.contains("3d");
    assert!(unknown, "{said}");
    assert_eq!(row(None).calico_ready.as_deref(), Some("Unknown"));
}
