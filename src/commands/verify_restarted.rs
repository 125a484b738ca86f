//! `install --verify` and `reconfigure --verify` after a change that (re)started Felix or
//! kube-proxy: the traffic checks wait, within verify's `--timeout`, for the restarted service's
//! own word that it has programmed the node, asked on this host's loopback as `status` asks
//! Felix. A policy check run before Felix's first apply, or a ClusterIP check before
//! kube-proxy's first sync, would fail and blame a layer that is only starting.
//!
//! - Felix: `GET /readiness` on its health port (`installed::felix_health`; install renders
//!   `FELIX_HEALTHENABLED`). On Windows Felix reports ready only once its dataplane's first
//!   apply is done (projectcalico/calico v3.32.1 `felix/dataplane/windows/win_dataplane.go`,
//!   `reportHealth`: `Ready: d.doneFirstApply`; served by `libcalico-go/lib/health/health.go`,
//!   `ServeHTTP`, when `HealthEnabled`). Where the config's extra_env turned the endpoint off,
//!   nothing on the node says Felix applied its dataplane: CalicoFelix running is all that is
//!   waited for, and the policy checks' own waits (30 s) cover its first apply.
//! - kube-proxy: `GET /healthz` on its healthz port, 10256 by default (its
//!   `--healthz-bind-address`, which calicoctl-win leaves at its default: kubernetes
//!   `pkg/cluster/ports/ports.go` `ProxyHealthzPort`), answered by
//!   `pkg/proxy/healthcheck/proxy_health.go` `healthzHandler`: 503 while a queued Service
//!   change is later than its health timeout or the node is being deleted, else 200. That is
//!   the most kube-proxy says: it is "healthy while it's starting up" (`Health`), and its
//!   answer names a proxier (`status`, kube-proxy 1.33 and later) only once that proxier
//!   synced, so an answer without one cannot be told from an older kube-proxy's. The wait
//!   therefore proves kube-proxy runs and serves, not that its first sync of the HNS load
//!   balancers is done; the Service checks' own settling dials (`verify::settle`) cover that.

use crate::duration::{Look, Pauses, Stop, Stopped, Wait, poll_until};
use crate::host::{Host, HostResult, ServiceState};
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
pub fn not_ready(host: &dyn Host, root: &InstallRoot, r: Restarted) -> HostResult<Vec<String>> {
    let mut missing = Vec::new();
    if r.felix {
        let h = crate::installed::felix_health::read(host, root)?;
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
            .service_query(Role::KubeProxy.service_name())?
            .is_some_and(|s| s.state == ServiceState::Running);
        let answer = match running {
            true => host.local_http_get(KUBE_PROXY_HEALTHZ_PORT, "/healthz", ASK_WITHIN)?,
            false => None,
        };
        if let Err(why) = kube_proxy_serves(running, answer.as_ref()) {
            missing.push(why);
        }
    }
    Ok(missing)
}

/// kube-proxy's `/healthz` answer judged: running, and answering 200.
pub fn kube_proxy_serves(
    running: bool,
    answer: Option<&crate::host::http_probe::Answer>,
) -> Result<(), String> {
    let port = KUBE_PROXY_HEALTHZ_PORT;
    match (running, answer) {
        (false, _) => Err("kube-proxy to run".into()),
        (true, None) => Err(format!(
            "kube-proxy's /healthz on 127.0.0.1:{port} to answer"
        )),
        (true, Some(a)) if a.code != 200 => Err(format!(
            "kube-proxy's /healthz on 127.0.0.1:{port} to answer 200 (it answers {}: {:.200})",
            a.code,
            a.body.trim()
        )),
        (true, Some(_)) => Ok(()),
    }
}

/// Why the wait for the restarted services ended without them.
#[derive(Debug, thiserror::Error)]
pub enum NotReady {
    #[error(
        "the services this command restarted were waited for {} and are not ready: {missing}",
        crate::duration::show(*waited)
    )]
    Never { waited: Duration, missing: String },
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
            _ => None,
        }
    }
}

/// Waits, up to `timeout`, until every service in `r` is ready (`not_ready`), saying so.
pub fn wait(
    host: &dyn Host,
    root: &InstallRoot,
    r: Restarted,
    (timeout, stop): (Duration, &Stop),
    say: &mut dyn FnMut(&str),
) -> Result<(), NotReady> {
    if !r.felix && !r.kube_proxy {
        return Ok(());
    }
    let look = || -> Result<Look<(), String>, NotReady> {
        let missing = not_ready(host, root, r).map_err(|e| NotReady::Host(e.to_string()))?;
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
