//! The node ready again: the recorded routes put back where their interfaces are now, and the
//! wait for CalicoNode's start-up, the networks and the routes.

use crate::duration::{Look, Pauses, poll_quietly};
use crate::host::{Host, HostError, Route};
use crate::installed::failure::{self, Blocks, Failure};
use std::time::{Duration, Instant};

/// Adds back the recorded routes that are missing, each on its interface or where that
/// interface's address is now (`routes::place`); returns the routes that have nowhere to go,
/// as warnings (the rest of the run still matters more than one route).
pub(super) fn restore_routes(
    host: &dyn Host,
    routes: &[Route],
    addresses: &[crate::host::InterfaceAddress],
) -> anyhow::Result<Vec<String>> {
    let now = host.routes()?;
    let here = host.ipv4_addresses()?;
    let mut warnings = Vec::new();
    for r in routes.iter().filter(|r| !now.contains(r)) {
        let what = format!("{}/{} via {}", r.destination, r.prefix_len, r.next_hop);
        let Some(index) = crate::installed::routes::place(r, &here, addresses) else {
            warnings.push(format!(
                "the route {what} was not restored: its interface {} is gone and no interface holds its address or next hop now",
                r.interface_index
            ));
            continue;
        };
        let route = Route {
            interface_index: index,
            ..r.clone()
        };
        if now.contains(&route) {
            continue;
        }
        match host.add_route(&route) {
            Err(HostError::Exists { .. }) | Ok(()) => {}
            Err(e) => warnings.push(format!("the route {what} was not restored: {e}")),
        }
    }
    Ok(warnings)
}

/// Why the node did not become ready.
#[derive(Debug, thiserror::Error)]
pub enum ReadyError {
    /// CalicoNode recorded that it could not do something the wait was waiting for.
    #[error("{}", failed_text(.0))]
    ServiceFailed(Vec<Failure>),
    #[error(transparent)]
    Host(#[from] HostError),
}

fn failed_text(failures: &[Failure]) -> String {
    failures
        .iter()
        .map(|f| format!("{} could not {}: {}", f.service, f.what, f.error))
        .collect::<Vec<_>>()
        .join("; ")
}

impl crate::error::Diagnose for ReadyError {
    fn diagnose(&self) -> Option<crate::error::Diagnosis> {
        use crate::error::{Diagnosis, Exit, Kind};
        match self {
            Self::ServiceFailed(_) => Diagnosis::new(
                Exit::Failed,
                Kind::ServiceFailed,
                "the service's log (calico-node.log in the logs directory) and the Application event log (source calicoctl-win) have the whole story; once the cause is fixed, run the command again",
            ),
            Self::Host(_) => None,
        }
    }
}

/// Waits until CalicoNode's init marker is set for this boot, the networks exist (Calico's
/// with `vsid`), `routes` are back and the CNI config is no longer withheld. A failure
/// CalicoNode recorded since `since` for something still waited for ends the wait at once.
#[allow(clippy::too_many_arguments)]
pub(super) fn wait_ready(
    host: &dyn Host,
    networks: &[String],
    vsid: Option<u32>,
    routes: &[Route],
    cni_config: Option<&str>,
    timeout: Duration,
    since: i64,
) -> Result<(), ReadyError> {
    let look = || -> Result<Look<(), String>, ReadyError> {
        let init = crate::installed::boot_marker::init_done(host)?;
        let present = host.hns_networks()?;
        let missing: Vec<String> = networks
            .iter()
            .filter(|n| !present.iter().any(|p| &p.name == *n))
            .cloned()
            .chain(vsid.and_then(|v| {
                let calico = present
                    .iter()
                    .find(|p| p.name == crate::layout::CALICO_NETWORK)?;
                (calico.vsid() != Some(v)).then(|| {
                    format!(
                        "Calico with VSID {v} (it has {})",
                        calico.vsid().map_or("none".into(), |x| x.to_string())
                    )
                })
            }))
            .collect();
        let now = if routes.is_empty() {
            Vec::new()
        } else {
            host.routes()?
        };
        let lost: Vec<String> = routes
            .iter()
            .filter(|r| !crate::installed::routes::has_destination(&now, r))
            .map(|r| format!("{}/{}", r.destination, r.prefix_len))
            .collect();
        let withheld = match cni_config {
            Some(conf) => host
                .file_access(&format!("{conf}{}", crate::layout::WITHHELD_SUFFIX))?
                .is_some(),
            None => false,
        };
        if init && missing.is_empty() && lost.is_empty() && !withheld {
            return Ok(Look::Done(()));
        }
        let blocking: Vec<Failure> = failure::recorded_since(host, since)?
            .into_iter()
            .filter(|f| match &f.blocks {
                Blocks::Init => !init,
                Blocks::Route(r) => lost.contains(r),
            })
            .collect();
        if !blocking.is_empty() {
            return Err(ReadyError::ServiceFailed(blocking));
        }
        Ok(Look::Pending(waited_for(init, &missing, &lost, withheld)))
    };
    let pauses = Pauses {
        first: Duration::from_millis(100),
        most: Duration::from_secs(2),
    };
    poll_quietly(Instant::now() + timeout, pauses, look, |what| {
        Err(HostError::Timeout {
            what,
            after: timeout,
        }
        .into())
    })
}

/// What a ready wait that timed out was still waiting for.
fn waited_for(init: bool, missing: &[String], lost: &[String], withheld: bool) -> String {
    let mut what = Vec::new();
    if !init {
        what.push("CalicoNode to finish initialising".to_owned());
    }
    if !missing.is_empty() {
        what.push(format!("HNS network {}", missing.join(", ")));
    }
    if !lost.is_empty() {
        what.push(format!(
            "the route to {} that the node had before (CalicoNode restores it; its log says why not)",
            lost.join(", ")
        ));
    }
    if withheld {
        what.push(
            "calico-node startup to finish (CalicoNode withholds the CNI config until it has)"
                .to_owned(),
        );
    }
    what.join(" and ")
}
