//! One node's bundle streamed through the pod proxy to a file; the run's nodes asked at most
//! `concurrency` at once, each within its timeout, all within the run's.

use crate::k8s_name::NodeName;
use http_body_util::BodyExt;
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The path the DaemonSet's pod answers with its node's bundle.
pub const PATH: &str = "/diags";

/// How long CalicoNode lets its bundle be built (`supervise::diags_server`: 504 after it).
pub const NODE_BUILD_TIME: Duration = Duration::from_secs(45);
/// How long CalicoNode lets its built bundle be sent.
pub const NODE_SEND_TIME: Duration = Duration::from_secs(30);
/// How long CalicoNode's TokenReview of the request's token may take: the API client's
/// connect (10 s) and call (15 s) bounds (`cluster::client`).
pub const NODE_REVIEW_TIME: Duration = Duration::from_secs(25);
/// The default of `--node-timeout`: the node's own bounds and 10 s for the TokenRequest and the
/// proxy, so a node answering within its bounds is never cut short.
pub const NODE_TIMEOUT: Duration = Duration::from_secs(
    NODE_BUILD_TIME.as_secs() + NODE_SEND_TIME.as_secs() + NODE_REVIEW_TIME.as_secs() + 10,
);
/// The header CalicoNode marks its own answers to `GET /diags` with (its value a word of
/// `NodeSaid`), so that they are told from the API server's (a `Status` in JSON).
pub const ANSWER_HEADER: &str = "calicoctl-win-diags";

/// What to gather, from where, into where.
#[derive(Clone, Debug)]
pub struct Gather {
    /// The DaemonSet's namespace, name (its pods name it their controller), pods' selector.
    pub namespace: String,
    pub daemon_set: String,
    pub pod_selector: String,
    /// The port the pods' endpoint listens on (the node's own: the pods are on its network).
    pub port: u16,
    /// Labels the nodes must have besides `kubernetes.io/os=windows` (a label selector).
    pub node_selector: Option<String>,
    /// Where the zips and the index go (`out::prepare_out`).
    pub out: PathBuf,
    pub concurrency: usize,
    pub node_timeout: Duration,
    pub total_timeout: Duration,
    /// The most one bundle may hold (at most `BUNDLE_CAP`).
    pub cap: u64,
}

/// Why a node's bundle is not there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    /// No pod of the DaemonSet is on the node.
    NoPod,
    /// The node's only pods with the DaemonSet's labels are not its own: none was asked.
    NotOurPod,
    /// The node's pod does not run, or has no address yet.
    PodNotRunning,
    /// The node did not answer whole within its timeout.
    TimedOut,
    /// The run's own timeout came first: the node was not asked, or not answered, by then.
    RunTimedOut,
    /// The API server refused the request (its 4xx `Status`).
    Refused,
    /// The API server did not reach the node's endpoint (its 5xx `Status`, or the connection).
    Unreachable,
    /// The node refused the request's token (its own 401), or could not review it.
    NodeRefused,
    /// The node was building another bundle, or held as many connections as it takes (its
    /// own 503 with Retry-After).
    NodeBusy,
    /// The node's bundle was not built within the node's own limit (its own 504).
    NodeTimedOut,
    /// The node failed to build its bundle, or was stopping (its own 500 or 503).
    NodeFailed,
    /// Something other than CalicoNode answered on the node's port (no mark, no `Status`).
    NotCalicoNode,
    /// The bundle is longer than the cap, or than the node serves (its own 413).
    TooBig,
    /// The answer is not a zip.
    NotAZip,
    /// The bundle could not be written under the output directory.
    NotWritten,
}

/// One node's line in the index.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct NodeBundle {
    pub node: String,
    /// `ok` or `failed`.
    pub result: &'static str,
    /// The zip's file name under the output directory, its size and sha256 (when ok).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Why it failed, as a code and a sentence (when failed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<Reason>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The node's pods with the DaemonSet's labels that were not asked, each named with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
}

impl NodeBundle {
    pub(super) fn failed_line(node: &NodeName, reason: Reason, message: String) -> Self {
        NodeBundle {
            node: node.to_string(),
            result: "failed",
            reason: Some(reason),
            message: Some(message),
            ..NodeBundle::default()
        }
    }
}

/// Asks each `(node, pod)`, at most `g.concurrency` at once, until all answered or the run's
/// timeout: their lines, and whether it came. A node not answered by then is `RunTimedOut`,
/// what it wrote removed.
pub async fn all(
    client: kube::Client,
    g: &Gather,
    asked: Vec<(NodeName, String)>,
) -> (Vec<NodeBundle>, bool) {
    let deadline = tokio::time::Instant::now() + g.total_timeout;
    let shared = Arc::new(g.clone());
    let mut pending: BTreeSet<NodeName> = asked.iter().map(|(n, _)| n.clone()).collect();
    let mut queue = asked.into_iter();
    let mut set = tokio::task::JoinSet::new();
    let mut lines = Vec::new();
    let mut timed_out = false;
    loop {
        while set.len() < g.concurrency.max(1) {
            let Some((node, pod)) = queue.next() else {
                break;
            };
            let (client, g) = (client.clone(), shared.clone());
            set.spawn(async move { one(&client, &g, &node, &pod).await });
        }
        match tokio::time::timeout_at(deadline, set.join_next()).await {
            Ok(None) => break,
            Ok(Some(Ok(line))) => {
                pending.remove(line.node.as_str());
                lines.push(line);
            }
            // A task that panicked: its node stays pending and is named below.
            Ok(Some(Err(_))) => {}
            Err(_) => {
                timed_out = true;
                break;
            }
        }
    }
    set.shutdown().await;
    let (reason, why) = match timed_out {
        true => (
            Reason::RunTimedOut,
            format!(
                "the run's timeout ({}) came before its bundle",
                crate::duration::show(g.total_timeout)
            ),
        ),
        false => (
            Reason::NotWritten,
            "its gathering stopped before it ended".into(),
        ),
    };
    for node in pending {
        let _ = fs_err::remove_file(part_of(&g.out, &node));
        lines.push(NodeBundle::failed_line(&node, reason, why.clone()));
    }
    (lines, timed_out)
}

/// The name a node's bundle is written under while it comes.
pub(super) fn part_of(out: &Path, node: &NodeName) -> std::path::PathBuf {
    out.join(format!(".{node}.zip.part"))
}

/// One node's bundle streamed to its `.part` file within its timeout, renamed to `NODE.zip`
/// when whole, else removed.
async fn one(client: &kube::Client, g: &Gather, node: &NodeName, pod: &str) -> NodeBundle {
    let part = part_of(&g.out, node);
    let streamed =
        tokio::time::timeout(g.node_timeout, stream(client, g, (node, pod), &part)).await;
    let outcome = match streamed {
        Err(_) => Err((
            Reason::TimedOut,
            format!(
                "its pod {pod} did not answer whole within {}",
                crate::duration::show(g.node_timeout)
            ),
        )),
        Ok(r) => r,
    };
    let file = format!("{node}.zip");
    let outcome = outcome.and_then(|(size, sha)| {
        fs_err::rename(&part, g.out.join(&file))
            .map(|()| (size, sha))
            .map_err(|e| (Reason::NotWritten, e.to_string()))
    });
    match outcome {
        Ok((size, sha256)) => NodeBundle {
            node: node.to_string(),
            result: "ok",
            file: Some(file),
            size: Some(size),
            sha256: Some(sha256),
            ..NodeBundle::default()
        },
        Err((reason, message)) => {
            let _ = fs_err::remove_file(&part);
            NodeBundle::failed_line(node, reason, message)
        }
    }
}

type Failure = (Reason, String);

/// `GET /diags` of `node`'s `pod` through the pod proxy with a token for that node alone
/// (`auth`), its body written to `part` frame by frame, capped at `g.cap`: its size and sha256.
async fn stream(
    client: &kube::Client,
    g: &Gather,
    (node, pod): (&NodeName, &str),
    part: &Path,
) -> Result<(u64, String), Failure> {
    let token = super::auth::mint(client, &g.namespace, node)
        .await
        .map_err(|e| (Reason::Refused, format!("no token for it: {e}")))?;
    let path = format!(
        "/api/v1/namespaces/{}/pods/{pod}:{}/proxy{PATH}",
        g.namespace, g.port
    );
    let mut value = http::HeaderValue::from_str(&token)
        .map_err(|_| (Reason::Refused, "the token is no header value".to_owned()))?;
    value.set_sensitive(true);
    let request = http::Request::get(path)
        .header(super::auth::HEADER, value)
        .body(kube::client::Body::empty())
        .map_err(|_| (Reason::Refused, "the request cannot be made".to_owned()))?;
    let answer = client
        .send(request)
        .await
        .map_err(|e| (Reason::Unreachable, format!("the API server: {e}")))?;
    let status = answer.status().as_u16();
    let mark = answer.headers().get(ANSWER_HEADER).map(|v| {
        String::from_utf8_lossy(v.as_bytes())
            .chars()
            .take(40)
            .collect()
    });
    let mut body = answer.into_body();
    if status != 200 {
        return Err(refusal(status, mark, body).await);
    }
    let write_error = |e: std::io::Error| (Reason::NotWritten, e.to_string());
    let mut file = fs_err::File::create(part).map_err(write_error)?;
    let (mut size, mut hash, mut head) = (0u64, Sha256::new(), Vec::with_capacity(4));
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| cut_off(&e, g.cap))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        size += data.len() as u64;
        if size > g.cap {
            return Err(too_big(g.cap));
        }
        let want = 4usize.saturating_sub(head.len()).min(data.len());
        head.extend_from_slice(&data[..want]);
        hash.update(&data);
        file.write_all(&data).map_err(write_error)?;
    }
    file.sync_all().map_err(write_error)?;
    if !(head == b"PK\x03\x04" || head == b"PK\x05\x06") {
        return Err((
            Reason::NotAZip,
            format!("its answer of {size} bytes is not a zip"),
        ));
    }
    Ok((size, crate::files::hex(&hash.finalize())))
}

/// A body that failed while it came: longer than the client reads, or cut off.
fn cut_off(e: &kube::Error, cap: u64) -> Failure {
    if crate::cluster::error::cause_of::<crate::cluster::guard::TooLong>(e).is_some() {
        return too_big(cap);
    }
    (Reason::Unreachable, format!("its answer was cut off: {e}"))
}

fn too_big(cap: u64) -> Failure {
    (
        Reason::TooBig,
        format!("its bundle is longer than {cap} bytes, the most gathered"),
    )
}

/// An answer other than 200: the node's own (marked with `ANSWER_HEADER`), the API server's
/// (a `Status`, a failed dial too: k8s.io/apimachinery `pkg/util/proxy/transport.go`), or
/// another program's on the port; with the first of its text (`guard::first_bytes`), escaped.
async fn refusal(status: u16, mark: Option<String>, body: kube::client::Body) -> Failure {
    let said = crate::cluster::guard::first_bytes(body).await;
    if let Some(word) = mark {
        return node_said(status, &word);
    }
    // kube-apiserver writes its Status compact (encoding/json).
    let is_status = said.contains("\"kind\":\"Status\"");
    let said = said.escape_debug();
    match status {
        _ if !is_status => (
            Reason::NotCalicoNode,
            format!(
                "its pod's port answered {status} without CalicoNode's mark (another program, or a node whose calicoctl-win serves no authenticated /diags): {said}"
            ),
        ),
        401 | 403 => (
            Reason::Refused,
            format!("the API server refused get pods/proxy ({status}): {said}"),
        ),
        400..=499 => (
            Reason::Refused,
            format!("the API server refused ({status}): {said}"),
        ),
        _ => (
            Reason::Unreachable,
            format!("the API server did not reach its pod ({status}): {said}"),
        ),
    }
}

/// The node's own answer, by the word it marked it with.
fn node_said(status: u16, word: &str) -> Failure {
    let retry = NODE_BUILD_TIME.as_secs();
    let (reason, why) = match word {
        "busy" => (
            Reason::NodeBusy,
            format!(
                "its node was busy, building another bundle or answering as many connections as its endpoint takes; ask it again in {retry}s"
            ),
        ),
        "build-timed-out" => (
            Reason::NodeTimedOut,
            format!(
                "its node did not build its bundle within its own limit ({}s)",
                NODE_BUILD_TIME.as_secs()
            ),
        ),
        "too-big" => (
            Reason::TooBig,
            "its node's bundle is longer than the node serves".into(),
        ),
        "unauthenticated" => (
            Reason::NodeRefused,
            "its node refused the request's token".into(),
        ),
        "review-failed" => (
            Reason::NodeRefused,
            "its node could not review the request's token (its CalicoNode log and 'calicoctl-win status' say why)".into(),
        ),
        "stopping" => (Reason::NodeFailed, "its CalicoNode was stopping".into()),
        _ => (
            Reason::NodeFailed,
            "its node failed to build its bundle (its CalicoNode log says why)".into(),
        ),
    };
    (reason, format!("{why} ({status} {})", word.escape_debug()))
}
