//! One node's bundle streamed through the pod proxy to a file, and the run's nodes asked at
//! most `concurrency` at once, each within its timeout and all within the run's
//! (`diags_gather`).

use super::diags_gather::{Gather, NodeBundle, PATH, Reason};
use http_body_util::BodyExt;
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

/// How much of a refusal's text is kept: the API server's or the endpoint's sentence, never a
/// bundle (an answer that is not 200 carries none).
const SHOWN: usize = 200;

/// Asks each `(node, pod)` in turn, at most `g.concurrency` at once, until all answered or
/// the run's timeout: the lines of the nodes asked, and whether that timeout came. A node not
/// answered by then is named with `RunTimedOut`; what it had written is removed.
pub async fn all(
    client: kube::Client,
    g: &Gather,
    asked: Vec<(String, String)>,
) -> (Vec<NodeBundle>, bool) {
    let deadline = tokio::time::Instant::now() + g.total_timeout;
    let shared = Arc::new(g.clone());
    let mut pending: BTreeSet<String> = asked.iter().map(|(n, _)| n.clone()).collect();
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
                pending.remove(&line.node);
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
    for node in pending {
        let _ = std::fs::remove_file(part_of(&g.out, &node));
        lines.push(if timed_out {
            NodeBundle::failed_line(
                &node,
                Reason::RunTimedOut,
                format!(
                    "the run's timeout ({}) came before its bundle",
                    crate::duration::show(g.total_timeout)
                ),
            )
        } else {
            NodeBundle::failed_line(
                &node,
                Reason::NotWritten,
                "its gathering stopped before it ended".into(),
            )
        });
    }
    (lines, timed_out)
}

/// The name a node's bundle is written under while it comes.
fn part_of(out: &Path, node: &str) -> std::path::PathBuf {
    out.join(format!(".{node}.zip.part"))
}

/// Whether a node's name is a file name as it stands (a DNS subdomain, as the API server
/// makes sure; checked again, as it becomes a path).
fn is_file_name(node: &str) -> bool {
    !node.is_empty()
        && !node.starts_with('.')
        && node
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
}

/// One node: its bundle streamed to its `.part` file within its timeout, renamed to
/// `NODE.zip` when whole; removed otherwise.
async fn one(client: &kube::Client, g: &Gather, node: &str, pod: &str) -> NodeBundle {
    if !is_file_name(node) {
        return NodeBundle::failed_line(
            node,
            Reason::NotWritten,
            "its name is not a file name".into(),
        );
    }
    let part = part_of(&g.out, node);
    let streamed = tokio::time::timeout(g.node_timeout, stream(client, g, pod, &part)).await;
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
        std::fs::rename(&part, g.out.join(&file))
            .map(|()| (size, sha))
            .map_err(|e| (Reason::NotWritten, format!("{}: {e}", part.display())))
    });
    match outcome {
        Ok((size, sha256)) => NodeBundle {
            node: node.to_owned(),
            result: "ok",
            file: Some(file),
            size: Some(size),
            sha256: Some(sha256),
            reason: None,
            message: None,
        },
        Err((reason, message)) => {
            let _ = std::fs::remove_file(&part);
            NodeBundle::failed_line(node, reason, message)
        }
    }
}

type Failure = (Reason, String);

/// `GET /diags` of `pod` through the pod proxy, its body written to `part` frame by frame
/// (never whole in memory), capped at `g.cap`: its size and sha256.
async fn stream(
    client: &kube::Client,
    g: &Gather,
    pod: &str,
    part: &Path,
) -> Result<(u64, String), Failure> {
    let path = format!(
        "/api/v1/namespaces/{}/pods/{pod}:{}/proxy{PATH}",
        g.namespace, g.port
    );
    let request = http::Request::get(path)
        .body(kube::client::Body::empty())
        .map_err(|e| (Reason::Refused, e.to_string()))?;
    let answer = client
        .send(request)
        .await
        .map_err(|e| (Reason::Unreachable, format!("the API server: {e}")))?;
    let status = answer.status().as_u16();
    let mut body = answer.into_body();
    if status != 200 {
        return Err(refusal(status, &mut body).await);
    }
    let write_error = |e: std::io::Error| (Reason::NotWritten, format!("{}: {e}", part.display()));
    let mut file = std::fs::File::create(part).map_err(write_error)?;
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
    if super::error::cause_of::<super::guard::TooLong>(e).is_some() {
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

/// An answer other than 200: what it is, with the first of its text (the API server's Status
/// or the proxy's sentence), escaped.
async fn refusal(status: u16, body: &mut kube::client::Body) -> Failure {
    let mut text = Vec::new();
    while text.len() < SHOWN {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    text.extend_from_slice(&data[..data.len().min(SHOWN - text.len())]);
                }
            }
            _ => break,
        }
    }
    let said = String::from_utf8_lossy(&text);
    let said = said.escape_debug();
    match status {
        401 | 403 => (
            Reason::Refused,
            format!("the API server refused get pods/proxy ({status}): {said}"),
        ),
        413 => (
            Reason::TooBig,
            format!("its node's bundle is longer than the node serves ({status})"),
        ),
        400..=499 => (Reason::Refused, format!("refused ({status}): {said}")),
        _ => (
            Reason::Unreachable,
            format!("the API server did not reach its pod ({status}): {said}"),
        ),
    }
}
