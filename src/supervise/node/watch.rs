//! The CalicoNode service body: calico-node startup whenever kubelet's process or the node's
//! address changes, with the token's renewal, the HNS watchdog and the condition beside it.

use super::startup::{init, startup};
use crate::duration::Stop;
use crate::host::Host;
use crate::installed::addressing;
use crate::supervise::api_group;
use crate::supervise::cni;
use crate::supervise::log::Log;
use crate::supervise::renew::Renewal;
use crate::supervise::settings::{
    Component, Launch, Result, Settings, SuperviseError, environment, required,
};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;

/// The CalicoNode service body: start-up, then startup runs until stopped, with the token's
/// renewal beside it (no `-monitor-token`: node-service.ps1 runs it only in a HostProcess pod).
pub fn run(host: &dyn Host, s: &Settings, stop: &Stop, log: &Log) -> Result<()> {
    let env = environment(host, s)?;
    let program = required(host, s, Component::Startup)?;
    init(host, s, &env, stop, log)?;
    let mut renewal = Renewal::prepare(host, &env, log);
    let review = s.diags.then(|| {
        crate::supervise::diags_review::ClusterReview::new(host, &env, &s.diags_namespace)
    });
    let out = std::thread::scope(|scope| {
        let port = s.metrics_port;
        let review = review
            .as_ref()
            .map(|r| r as &dyn crate::supervise::diags_review::Review);
        scope.spawn(move || {
            crate::supervise::metrics_server::run(host, &s.install_root, (port, review), stop, log)
        });
        let out = watch_kubelet(host, s, &env, &program, renewal.as_mut(), stop, log);
        // The server ends with the stop; a body that ended on its own stops it too.
        if port.is_some() && !stop.requested() {
            stop.request();
        }
        out
    });
    if stop.is_shutdown() {
        // The next boot makes the networks again: no pod may start before it has.
        cni::withhold(host, &env, "the machine is shutting down", log)?;
    }
    out
}

/// Runs calico-node startup whenever kubelet's process changes (node-service.ps1's loop),
/// with the token's renewal, the HNS watchdog and the node's condition.
fn watch_kubelet(
    host: &dyn Host,
    s: &Settings,
    env: &BTreeMap<String, String>,
    program: &Launch,
    mut renewal: Option<&mut Renewal>,
    stop: &Stop,
    log: &Log,
) -> Result<()> {
    let mut last: Option<u32> = None;
    let mut said_waiting = false;
    let mut hns = crate::supervise::hns_watch::HnsWatch::default();
    let mut condition =
        crate::supervise::condition::Reporter::prepare(env, &s.install_root, s.timing.look);
    let mut addresses = AddressWatch::default();
    let mut groups = crate::supervise::api_group::GroupWatch::new(env);
    loop {
        hns.check(host, s, stop, log)?;
        let internal = condition.as_ref().and_then(|c| c.internal_ip);
        match host.process_pid("kubelet.exe") {
            Ok(Some(pid)) if last != Some(pid) => {
                let again = if last.is_some() { " again" } else { "" };
                log.info(&format!(
                    "kubelet is running{again} (pid {pid}): running calico-node startup"
                ));
                start_calico_node(
                    host,
                    s,
                    (env, program),
                    (&mut addresses, internal),
                    stop,
                    log,
                )?;
                last = Some(pid);
                said_waiting = false;
            }
            Ok(Some(_)) => {
                if let Some(what) = addresses.changed(host, internal) {
                    follow_address(host, log, &what);
                    let watch = (&mut addresses, internal);
                    start_calico_node(host, s, (env, program), watch, stop, log)?;
                }
            }
            Ok(None) if !said_waiting => {
                log.info("kubelet is not running; waiting for it to start");
                said_waiting = true;
            }
            Err(e) => log.warn(&format!("cannot list processes: {e}")),
            _ => {}
        }
        let mut wait = s.timing.kubelet_poll;
        if let Some(r) = renewal.as_deref_mut() {
            r.keep(host, log);
            wait = wait.min(r.due_in());
        }
        // The condition once kubelet runs (its node exists and calico-node startup ran).
        if let Some(c) = condition.as_mut().filter(|_| last.is_some()) {
            c.keep(host, log);
            wait = wait.min(c.due_in());
            // A refused token is known within the minute, not at its renewal time.
            if c.refused
                && let Some(r) = renewal.as_deref_mut()
            {
                r.refused_elsewhere(log);
                r.keep(host, log);
            }
            if let Some(change) = c.calico_group.and_then(|g| groups.changed(g)) {
                api_group::restart_components(host, change, s.service_stop_wait(), stop, log)?;
                startup(host, s, env, program, None, stop, log)?;
            }
        }
        if stop.wait(wait) {
            return Err(SuperviseError::Stopped);
        }
    }
}

/// Startup run to success, then the CNI config released and `Calico_ep`'s metric kept; what it
/// ran with noted in `addresses`.
fn start_calico_node(
    host: &dyn Host,
    s: &Settings,
    (env, program): (&BTreeMap<String, String>, &Launch),
    (addresses, internal): (&mut AddressWatch, Option<Ipv4Addr>),
    stop: &Stop,
    log: &Log,
) -> Result<()> {
    // The addresses as startup begins: a change while it runs is followed next.
    let seen = AddressWatch::look(host);
    startup(host, s, env, program, None, stop, log)?;
    addresses.ran_with(seen, internal);
    cni::release(host, env, log)?;
    keep_ep_metric(host, log);
    Ok(())
}

/// The node's addresses as calico-node's startup last ran with them: a change is followed at
/// once (projectcalico/calico#8700).
#[derive(Debug, Default)]
pub(crate) struct AddressWatch {
    host: Vec<Ipv4Addr>,
    internal: Option<Ipv4Addr>,
}

impl AddressWatch {
    /// The External adapter's Preferred IPv4 addresses but loopback and 169.254/16, sorted: the
    /// node's addresses now, for `ran_with` once startup ran.
    pub(crate) fn look(host: &dyn Host) -> Vec<Ipv4Addr> {
        // A vSwitch's physical adapter is listed only by the interface table (`every_adapter`).
        let adapters = crate::host::uplink::every_adapter(host).unwrap_or_default();
        let networks = host.hns_networks().unwrap_or_default();
        let kept = addressing::current(host, &networks);
        let ours = addressing::external_adapter(kept.as_ref(), &adapters, &networks);
        let mut out: Vec<Ipv4Addr> = ours
            .iter()
            .flat_map(|a| a.addresses.iter())
            .filter(|x| x.preferred && !x.ip.is_loopback() && !x.ip.is_link_local())
            .map(|x| x.ip)
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// What calico-node's startup just ran with (the addresses now), for the Unix-only tests.
    #[cfg(all(test, unix))]
    pub(crate) fn ran(&mut self, host: &dyn Host, internal: Option<Ipv4Addr>) {
        self.ran_with(Self::look(host), internal);
    }

    /// What startup ran with: the addresses as it began, so a change meanwhile is followed.
    pub(crate) fn ran_with(&mut self, seen: Vec<Ipv4Addr>, internal: Option<Ipv4Addr>) {
        self.host = seen;
        self.internal = internal.or(self.internal);
    }

    /// What changed since, in words: the host's addresses (not while it has none) or InternalIP.
    pub(crate) fn changed(
        &mut self,
        host: &dyn Host,
        internal: Option<Ipv4Addr>,
    ) -> Option<String> {
        let show = |v: &[Ipv4Addr]| {
            v.iter()
                .map(Ipv4Addr::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let now = Self::look(host);
        if !now.is_empty() && !self.host.is_empty() && now != self.host {
            return Some(format!(
                "the node's addresses changed from {} to {}",
                show(&self.host),
                show(&now)
            ));
        }
        match (self.internal, internal) {
            (Some(was), Some(is)) if was != is => {
                Some(format!("the Node's InternalIP changed from {was} to {is}"))
            }
            (None, Some(is)) => {
                self.internal = Some(is);
                None
            }
            _ => None,
        }
    }
}

/// Says in the log and the Application event log that startup runs again for a new address.
fn follow_address(host: &dyn Host, log: &Log, what: &str) {
    let line = format!(
        "{what}: running calico-node startup again, so that the Calico Node's BGP address follows; pods made before keep the old provider address until 'calicoctl-win repair' recreates them"
    );
    log.info(&line);
    let message = format!("CalicoNode: {line}");
    let level = crate::host::EventLevel::Information;
    log.event(host, level, crate::layout::EVENT_ADDRESS_CHANGED, &message);
}

/// `Calico_ep`'s metric kept above the LAN host adapter's (projectcalico/calico#4664).
fn keep_ep_metric(host: &dyn Host, log: &Log) {
    let networks = host.hns_networks().unwrap_or_default();
    let Some(before) = addressing::current(host, &networks) else {
        return;
    };
    let Ok(adapters) = host.adapters() else {
        return;
    };
    let Some(lan) = before.host_adapter(&adapters) else {
        return;
    };
    if let Some(ep) = addressing::ep_metric_clash(&adapters, lan) {
        let metric = lan.metric + addressing::EP_METRIC_ABOVE;
        match host.set_interface_metric(ep.index, metric) {
            Ok(()) => log.info(&format!(
                "{} had the interface metric {}, not above {}'s {}: set to {metric}",
                ep.name, ep.metric, lan.name, lan.metric
            )),
            Err(e) => log.warn(&format!("cannot set {}'s interface metric: {e}", ep.name)),
        }
    }
}
