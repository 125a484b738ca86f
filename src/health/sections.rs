//! The report's sections as types: each serializes to the keys and values `status -o json`
//! prints (docs/json.md), in that order. A section status could not read is `null` (`None`
//! where the report holds it).

use crate::checks::Verdict;
use crate::cluster::calico_api::{Group, Locks, Migration};
use crate::cluster::ipam::BlockUse;
use crate::health::judge::Finding;
use crate::installed::addressing::Addressing;
use serde::Serialize;
use std::net::Ipv4Addr;

/// A recorded service: its state, and how its registration differs from the config's.
#[derive(Serialize)]
pub struct Service {
    pub name: String,
    pub state: String,
    pub pid: Option<u32>,
    pub since: Option<String>,
    pub drift: Vec<String>,
}

/// The VXLAN VNI in the config, in HNS (the Calico network's VSID) and in the cluster.
#[derive(Serialize)]
pub struct Vni {
    pub config: u32,
    pub hns: Option<u32>,
    pub cluster: Option<u32>,
}

/// The node's address in each layer: the Node's InternalIP, the Calico Node's BGP address,
/// each of Calico's HNS networks' management IP (an object by network name, in their order).
#[derive(Default, Serialize)]
pub struct Address {
    pub internal_ip: Option<Ipv4Addr>,
    pub bgp: Option<Ipv4Addr>,
    #[serde(serialize_with = "in_order")]
    pub networks: Vec<(String, Option<Ipv4Addr>)>,
}

/// The networks as a JSON object: one key per name, in their order; a second network of a name
/// gives its address (as a JSON object built by hand had it).
fn in_order<S: serde::Serializer>(
    v: &[(String, Option<Ipv4Addr>)],
    s: S,
) -> Result<S::Ok, S::Error> {
    let mut once: Vec<(&str, Option<Ipv4Addr>)> = Vec::new();
    for (name, ip) in v {
        match once.iter_mut().find(|(n, _)| n == name) {
            Some(kept) => kept.1 = *ip,
            None => once.push((name, *ip)),
        }
    }
    s.collect_map(once)
}

/// The vSwitch adapter's addressing before the vSwitch, what of it is lost and what changed
/// since; the last two only when the host adapter is read and found.
#[derive(Serialize)]
pub struct AddressingNow {
    pub before_vswitch: Addressing,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_when_made: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed_since: Option<Vec<String>>,
}

/// The node in the cluster: Ready, cordoned, its pods (`namespace/name`).
#[derive(Serialize)]
pub struct NodeState {
    pub name: String,
    pub ready: bool,
    pub cordoned: bool,
    pub pods: Vec<String>,
}

/// The node's IPAM blocks and their use, against kubelet's maxPods.
#[derive(Serialize)]
pub struct Ipam {
    pub blocks: Vec<BlockUse>,
    pub pods: u64,
    pub capacity: u64,
    pub max_pods: Option<u64>,
}

/// calico-node's token: where its kubeconfig is and whether it holds one; whether it is
/// usable, or why not (`error`); the rest once it could be judged.
#[derive(Serialize)]
pub struct Token {
    pub path: String,
    pub present: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usable: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(flatten)]
    pub judged: Option<TokenJudged>,
}

/// A token that could be judged: the API server's answer, its expiry, its Node, the clock
/// difference, the last failed renewal of it.
#[derive(Serialize)]
pub struct TokenJudged {
    pub api_server: Option<Asked>,
    pub expires: Option<String>,
    pub bound_to_node: Option<String>,
    pub clock_skew_seconds: Option<i64>,
    pub renewal_failed: Option<RenewalFailed>,
}

/// The API server's answer to calico-node's token (`token_check::Answer::word`).
#[derive(Serialize)]
pub struct Asked {
    pub answer: Answered,
    pub error: Option<String>,
}

/// The API server's answer in a word, as JSON has it: `accepted`, `refused` or `unknown`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Answered {
    Accepted,
    Refused,
    Unknown,
}

/// The last failed renewal of this token.
#[derive(Serialize)]
pub struct RenewalFailed {
    pub at: String,
    pub error: String,
    pub needs_new_token: bool,
}

/// What status shows people that its JSON document does not, and what is said with a code
/// and a fix but is no problem.
#[derive(Default)]
pub struct Shown {
    pub node: String,
    pub recorded_networks: Vec<String>,
    /// Each network's endpoints, by its name: how many, how many remote, their states.
    pub network_endpoints: Vec<(String, String)>,
    pub node_not_read: Option<String>,
    pub token: Option<TokenShown>,
    pub datastore: Option<String>,
    /// Said with their code and fix, not problems: HNS gave no state for some pods' endpoints,
    /// the cluster's DatastoreMigrations could not be read.
    pub endpoint_states: Option<Finding>,
    pub datastore_unreadable: Option<Finding>,
    /// The API server refused CalicoNode the TokenReview of `GET /diags`: not the node's
    /// networking, so the fleet DaemonSet's readiness (`status -q`) does not turn on it.
    pub diags_review: Option<Finding>,
    /// Felix's metrics rule the operator's Felix left (`metrics_findings::FELIX_RULE`).
    pub felix_rule: Option<Finding>,
    /// CalicoNode's metrics endpoint reached by no scraper (`metrics_facts::unscraped`).
    pub metrics_unscraped: Option<Finding>,
}

/// What the node's own look read of the Node with calico-node's credential: its
/// `CalicoWindowsReady` status (`Some(true)`: True), and whether the API server refused the
/// read (401). Status's look reads the Node with the admin kubeconfig (`see`) instead.
#[derive(Default)]
pub struct NodeRead {
    pub calico_ready: Option<bool>,
    pub refused: bool,
}

/// calico-node's token as its lines say it, beside its section.
pub struct TokenShown {
    /// Its expiry, in seconds since 1970 by the API server's clock.
    pub expiry: Option<i64>,
    pub jwt: bool,
    /// The clock difference with the API server, when large enough to say.
    pub skew_to_say: Option<i64>,
    /// Expired by this node's clock, with no difference to the API server's measured.
    pub past_unmeasured: bool,
}

/// A check of preflight's as status shows it: kube-proxy's, and the known issues'.
#[derive(Serialize)]
pub struct KubeProxy {
    pub verdict: Verdict,
    pub message: String,
    pub remedy: Option<String>,
}

/// A directory whose files run as SYSTEM that others may change, and who.
#[derive(Serialize)]
pub struct DirAccess {
    pub dir: String,
    pub writers: Vec<String>,
}

/// What is under way: a command changing the node now, or the runs cut off (one, or a list
/// when there are several).
#[derive(Serialize)]
#[serde(untagged)]
pub enum UnderWay {
    Running { running: String },
    Interrupted(Interrupted),
    Several(Vec<Interrupted>),
}

/// A run cut off with its journal left: its command and the steps it began and finished.
#[derive(Serialize)]
pub struct Interrupted {
    pub interrupted: String,
    pub steps_done: usize,
    pub steps: usize,
}

/// The group Calico's resources are read through, the locks, the group this node's
/// components read, and the datastore migration.
#[derive(Serialize)]
pub struct CalicoApi {
    pub group: Group,
    pub datastore_ready: Option<bool>,
    pub locks: Locks,
    pub components_read: Group,
    pub components_pinned: Option<Group>,
    pub migration: Option<Migration>,
    pub migration_under_way: bool,
    pub migration_unreadable: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Each shape a section takes prints the keys, in the order and with the values, that
    /// `status -o json` printed when the sections were built as JSON by hand.
    #[test]
    fn each_shape_prints_the_documents_keys_in_order() {
        fn same(typed: impl Serialize, by_hand: serde_json::Value) {
            let typed = serde_json::to_value(typed).expect("serializes");
            assert_eq!(typed.to_string(), by_hand.to_string());
        }
        let missing = Token {
            path: "k".into(),
            present: false,
            usable: None,
            error: Some("gone".into()),
            judged: None,
        };
        let want = json!({"path": "k", "present": false, "error": "gone"});
        same(&missing, want);
        let unusable = Token {
            usable: Some(false),
            present: true,
            ..missing
        };
        let want = json!({"path": "k", "present": true, "usable": false, "error": "gone"});
        same(unusable, want);
        // A judged token's keys: the status snapshot (tests/snapshots/status.snap), but for a
        // failed renewal's.
        let failed = RenewalFailed {
            at: "t".into(),
            error: "e".into(),
            needs_new_token: true,
        };
        same(
            failed,
            json!({"at": "t", "error": "e", "needs_new_token": true}),
        );
        let cut = || Interrupted {
            interrupted: "install".into(),
            steps_done: 2,
            steps: 3,
        };
        let one = json!({"interrupted": "install", "steps_done": 2, "steps": 3});
        same(UnderWay::Interrupted(cut()), one.clone());
        same(UnderWay::Several(vec![cut(), cut()]), json!([one, one]));
        let running = "repair".to_owned();
        same(UnderWay::Running { running }, json!({"running": "repair"}));
        // One network of each name: the status snapshot. Two of one name: one key, where the
        // first stood, with the second's address.
        let ip = Some(Ipv4Addr::new(10, 0, 0, 7));
        let twice = Address {
            networks: vec![
                ("Calico".into(), ip),
                ("External".into(), ip),
                ("Calico".into(), None),
            ],
            internal_ip: ip,
            bgp: None,
        };
        let networks = json!({"Calico": null, "External": "10.0.0.7"});
        let want = json!({"internal_ip": "10.0.0.7", "bgp": null, "networks": networks});
        same(twice, want);
    }
}
