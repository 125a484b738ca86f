//! `install --verify` and `reconfigure --verify` after a change that (re)started Felix or
//! kube-proxy: the traffic checks wait, within verify's `--timeout`, for the restarted
//! service's own word, asked on this host's loopback as `status` asks Felix.
//!
//! - Felix: `GET /readiness` on its health port (`installed::felix_health`), ready on Windows
//!   once its first dataplane apply is done (projectcalico/calico v3.32.1
//!   `felix/dataplane/windows/win_dataplane.go`, `reportHealth`). With the endpoint turned off
//!   by extra_env, CalicoFelix running is all that is waited for.
//! - kube-proxy: `GET /healthz` on 10256 (kubernetes `pkg/cluster/ports/ports.go`
//!   `ProxyHealthzPort`; `pkg/proxy/healthcheck/proxy_health.go` `healthzHandler`): 200 once
//!   it serves; 503 with `"nodeEligible": false` while the Node is deleted or carries
//!   `ToBeDeletedByClusterAutoscaler` (KEP-3836, 1.28 and later), which ends the wait at once
//!   with `node-being-removed`. It says nothing of its first HNS sync: the Service checks'
//!   settling dials (`verify::settle`) cover that.

use crate::duration::{Look, Pauses, Stop, Stopped, Wait, poll_until};
use crate::health::judge::{Code, Finding};
use crate::host::{Host, ServiceState};
use crate::k8s_name::NodeName;
use crate::layout::{InstallRoot, Role};
use std::time::Duration;

pub use crate::layout::KUBE_PROXY_HEALTHZ_PORT;

/// How long one question to a service may take.
const ASK_WITHIN: Duration = Duration::from_secs(2);

/// The services a change (re)started that the traffic checks stand on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Restarted {
    /// CalicoNode: its `CalicoWindowsReady` must be written since the command's start.
    pub node: bool,
    pub felix: bool,
    pub kube_proxy: bool,
}

impl Restarted {
    /// What a changing command's plan started.
    pub(crate) fn of<D>(doc: &super::change::Changing<D>) -> Self {
        Self {
            node: doc.starts(Role::Node.service_name()),
            felix: doc.starts(Role::Felix.service_name()),
            kube_proxy: doc.starts(Role::KubeProxy.service_name()),
        }
    }
}

/// Why a restarted service is not ready yet, one look; empty when every one is.
pub fn not_ready(
    host: &dyn Host,
    root: &InstallRoot,
    r: Restarted,
    node: &NodeName,
) -> Result<Vec<String>, NotReady> {
    let host_error = |e: crate::host::HostError| NotReady::Host(e.to_string());
    let mut missing = Vec::new();
    if r.felix {
        let h = crate::installed::felix_health::read(host, root).map_err(host_error)?;
        match (h.running_since, h.enabled, h.ready) {
            (None, ..) => missing.push("CalicoFelix to run".to_owned()),
            (Some(_), true, Some(true)) | (Some(_), false, _) => {}
            (Some(_), true, ready) => missing.push(format!(
                "Felix's /readiness on 127.0.0.1:{} ({}: its first dataplane apply)",
                h.port,
                match ready {
                    Some(_) => h.detail.unwrap_or_else(|| "not ready".into()),
                    None => "no answer yet".into(),
                }
            )),
        }
    }
    if r.kube_proxy {
        let running = host
            .service_query(Role::KubeProxy.service_name())
            .map_err(host_error)?
            .is_some_and(|s| s.state == ServiceState::Running);
        let answer = match running {
            true => host
                .local_http_get(KUBE_PROXY_HEALTHZ_PORT, "/healthz", ASK_WITHIN)
                .map_err(host_error)?,
            false => None,
        };
        match kube_proxy_serves(running, answer.as_ref()) {
            Ok(()) => {}
            Err(KubeProxyUnready::Waiting(why)) => missing.push(why),
            Err(KubeProxyUnready::NodeBeingRemoved) => {
                return Err(NotReady::NodeBeingRemoved(Box::new(node_being_removed(
                    node,
                ))));
            }
        }
    }
    Ok(missing)
}

/// Why kube-proxy's `/healthz` does not say it serves.
#[derive(Debug, PartialEq, Eq)]
pub enum KubeProxyUnready {
    /// Not yet: what is waited for.
    Waiting(String),
    /// 503 with `"nodeEligible": false`: its Node is being removed, and no wait helps.
    NodeBeingRemoved,
}

/// kube-proxy's `/healthz` answer judged: ready when running and answering 200.
pub fn kube_proxy_serves(
    running: bool,
    answer: Option<&crate::host::http_probe::Answer>,
) -> Result<(), KubeProxyUnready> {
    let port = KUBE_PROXY_HEALTHZ_PORT;
    let waiting = |s: String| Err(KubeProxyUnready::Waiting(s));
    match (running, answer) {
        (false, _) => waiting("kube-proxy to run".into()),
        (true, None) => waiting(format!(
            "kube-proxy's /healthz on 127.0.0.1:{port} to answer"
        )),
        (true, Some(a)) if a.code == 503 && node_ineligible(&a.body) => {
            Err(KubeProxyUnready::NodeBeingRemoved)
        }
        (true, Some(a)) if a.code != 200 => waiting(format!(
            "kube-proxy's /healthz on 127.0.0.1:{port} to answer 200 (it answers {}: {:.200})",
            a.code,
            a.body.trim()
        )),
        (true, Some(_)) => Ok(()),
    }
}

/// Whether `/healthz`'s JSON says `"nodeEligible": false`.
fn node_ineligible(body: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("nodeEligible")?.as_bool())
        == Some(false)
}

/// The finding kube-proxy's word on `node` makes: it is being removed.
fn node_being_removed(node: &NodeName) -> Finding {
    Finding::new(
        Code::NodeBeingRemoved,
        node,
        format!(
            "kube-proxy's /healthz on 127.0.0.1:{KUBE_PROXY_HEALTHZ_PORT} answers 503 with \"nodeEligible\": false: node {node} has a deletion timestamp or the ToBeDeletedByClusterAutoscaler taint, so kube-proxy drains it as a node being removed and verify cannot pass while that lasts"
        ),
        Code::NodeBeingRemoved.remedy(),
    )
}

/// Why the wait for the restarted services ended without them.
#[derive(Debug, thiserror::Error)]
pub enum NotReady {
    #[error(
        "the services this command restarted were waited for {} and are not ready: {missing}",
        crate::duration::show(*waited)
    )]
    Never { waited: Duration, missing: String },
    #[error("{} [{}]", .0.said.message, .0.code.word())]
    NodeBeingRemoved(Box<Finding>),
    #[error(transparent)]
    Stopped(#[from] Stopped),
    #[error("this host could not be asked: {0}")]
    Host(String),
}

impl crate::error::Diagnose for NotReady {
    fn diagnose(&self) -> Option<crate::error::Diagnosis> {
        use crate::error::{Diagnosis, Exit, Kind};
        match self {
            NotReady::Never { .. } => Diagnosis::new(
                Exit::Timeout,
                Kind::Timeout,
                "the change stays: 'calicoctl-win status' on the node (Felix health, kube-proxy) and the services' logs under the install root say why, then run 'calicoctl-win verify'",
            ),
            NotReady::NodeBeingRemoved(f) => Diagnosis::new(
                Exit::Failed,
                Kind::Failed,
                f.said.remedy.clone().unwrap_or_default(),
            ),
            _ => None,
        }
    }
}

/// Waits, up to `timeout`, until every service in `r` is ready (`not_ready`), saying so; a
/// node being removed ends it at once.
pub fn wait(
    host: &dyn Host,
    root: &InstallRoot,
    (r, node): (Restarted, &NodeName),
    (timeout, stop): (Duration, &Stop),
    say: &mut dyn FnMut(&str),
) -> Result<(), NotReady> {
    let look = || -> Result<Look<(), String>, NotReady> {
        let missing = not_ready(host, root, r, node)?;
        Ok(match missing.is_empty() {
            true => Look::Done(()),
            false => Look::Pending(missing.join("; ")),
        })
    };
    let what = match (r.felix, r.kube_proxy) {
        (true, true) => "the restarted Felix and kube-proxy to be ready",
        (true, false) => "the restarted Felix to be ready",
        _ => "the restarted kube-proxy to be ready",
    };
    let wait = Wait {
        what,
        timeout,
        pauses: Pauses::every(Duration::from_secs(1)),
        stop,
        say,
    };
    poll_until(wait, look, |missing| {
        Err(NotReady::Never {
            waited: timeout,
            missing,
        })
    })
}

#[cfg(test)]
#[path = "verify_restarted_tests.rs"]
mod tests;
