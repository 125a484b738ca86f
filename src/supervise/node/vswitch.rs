//! The External vSwitch: stale networks deleted after a boot, the network made on a stable
//! address, its host adapter and management IP found, the lost addressing put back.

use crate::duration::{Look, Pauses, Stop};
use crate::host::{HnsNetwork, Host, HostError};
use crate::installed::addressing;
use crate::layout::EXTERNAL_NETWORK;
use crate::supervise::log::Log;
use crate::supervise::settings::{Result, Settings, SuperviseError};
use std::net::Ipv4Addr;
use std::time::Instant;

fn is_ours(n: &HnsNetwork, all_non_nat: bool) -> bool {
    if all_non_nat {
        return !n.network_type.eq_ignore_ascii_case("nat");
    }
    n.name == "Calico" || n.name.starts_with("Calico-") || n.name == EXTERNAL_NETWORK
}

/// After a boot: delete Calico's networks (every non-NAT one with `delete_all_non_nat_networks`).
pub(super) fn delete_stale_networks(
    host: &dyn Host,
    s: &Settings,
    stop: &Stop,
    log: &Log,
) -> Result<Vec<String>> {
    let stale = || -> Result<Vec<HnsNetwork>> {
        Ok(host
            .hns_networks()?
            .into_iter()
            .filter(|n| is_ours(n, s.delete_all_non_nat_networks))
            .collect())
    };
    let mut deleted = Vec::new();
    let mut ids: Vec<String> = Vec::new();
    let look = || -> Result<Look<Vec<String>, String>> {
        let found = stale()?;
        if found.is_empty() {
            return Ok(Look::Done(std::mem::take(&mut deleted)));
        }
        for n in &found {
            match host.hns_delete_network(&n.id) {
                // Named once, however many looks HNS still lists it at.
                Ok(()) | Err(HostError::NotFound { .. }) if !ids.contains(&n.id) => {
                    log.info(&format!(
                        "first run since boot: deleted HNS network {} ({})",
                        n.name, n.id
                    ));
                    deleted.push(n.name.clone());
                    ids.push(n.id.clone());
                }
                Ok(()) | Err(HostError::NotFound { .. }) => {}
                Err(e) => log.warn(&format!("could not delete HNS network {}: {e}", n.name)),
            }
        }
        // Gone at once (HNS deletes as it answers): no pause before saying so.
        let left = stale()?;
        Ok(if left.is_empty() {
            Look::Done(std::mem::take(&mut deleted))
        } else {
            Look::Pending(
                left.iter()
                    .map(|n| n.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            )
        })
    };
    let wait = (
        "the stale HNS networks to be deleted",
        s.network_timeout,
        Pauses::every(s.timing.poll),
    );
    log.poll_until(wait, stop, look, |names| {
        Err(SuperviseError::NetworksRemain {
            names,
            after: s.network_timeout,
        })
    })
}

/// Creates the External network unless it exists, retried with backoff up to the network
/// timeout: `None` when it existed, else the adapter it binds (`None` inside: HNS picks).
pub(super) fn ensure_external(
    host: &dyn Host,
    s: &Settings,
    stop: &Stop,
    log: &Log,
) -> Result<Option<Option<Uplink>>> {
    if host
        .hns_networks()?
        .iter()
        .any(|n| n.name == EXTERNAL_NETWORK)
    {
        return Ok(None);
    }
    let path = s.path(crate::layout::EXTERNAL_FILE);
    let spec = host
        .read_file(&path)?
        .ok_or(SuperviseError::NoExternalSpec { path })?;
    let spec = String::from_utf8_lossy(&spec);
    let named = serde_json::from_str(&spec)
        .ok()
        .and_then(|d| crate::host::hns::document_adapter(&d));
    let uplink = match named {
        Some(name) => Some(wait_for_stable_address(host, s, &name, stop, log)?),
        None => None,
    };
    log.info("creating the External HNS network: this creates the vSwitch, and remote desktop may drop for a few seconds");
    let started = Instant::now();
    let pauses = Pauses {
        first: s.timing.backoff_min,
        most: s.timing.backoff_max,
    };
    let mut failures = 0;
    let created = log.poll_until(
        (
            "the External network to be created",
            s.network_timeout,
            pauses,
        ),
        stop,
        || match host.hns_create_network(&spec) {
            Ok(n) => Ok(Look::Done(Some(n))),
            Err(HostError::Exists { .. }) => Ok(Look::Done(None)),
            Err(e) => {
                let last = crate::error::chain(&e);
                failures += 1;
                let left = s.network_timeout.saturating_sub(started.elapsed());
                if !left.is_zero() {
                    let d = pauses.after(failures).min(left);
                    log.warn(&format!(
                        "could not create the External network: {last}; retrying in {d:?}"
                    ));
                }
                Ok(Look::Pending(last))
            }
        },
        |last| {
            Err(SuperviseError::ExternalNetwork {
                after: s.network_timeout,
                last,
            })
        },
    )?;
    let Some(n) = created else { return Ok(None) };
    log.info(&format!("created HNS network External ({})", n.id));
    if uplink.is_some() {
        addressing::key_to(host, &n.id)?;
    }
    Ok(Some(uplink))
}

/// The adapter the vSwitch is made on, as it was just before: name, MAC, stable address.
#[derive(Clone, Debug)]
pub(crate) struct Uplink {
    pub(crate) name: String,
    pub(crate) mac: String,
    pub(crate) ip: Ipv4Addr,
    /// On DHCP: its host adapter gets an address from DHCP, never from what was kept.
    pub(crate) dhcp: bool,
}

impl Uplink {
    /// Whether `a` is its vSwitch host adapter: a vSwitch port with its MAC, name and address
    /// (`uplink::is_host_adapter_of`), or with any address when `any_address`.
    pub(crate) fn is_its_vswitch_adapter(
        &self,
        a: &crate::host::Adapter,
        any_address: bool,
    ) -> bool {
        crate::host::uplink::is_host_adapter_of(a, &self.name, &self.mac)
            && (any_address || a.holds(self.ip))
    }
}

/// Waits until the External adapter holds a Preferred, non-APIPA IPv4 address
/// (Azure/AgentBaker 6e2dbb2a24, `azurecnifunc.ps1`).
fn wait_for_stable_address(
    host: &dyn Host,
    s: &Settings,
    name: &str,
    stop: &Stop,
    log: &Log,
) -> Result<Uplink> {
    let look = || -> Result<Look<Uplink, Vec<String>>> {
        let adapters = host.adapters()?;
        let adapter = adapters.iter().find(|a| a.name.eq_ignore_ascii_case(name));
        if let Some(a) = adapter
            && let Some(x) = a.stable_address()
        {
            log.info(&format!(
                "{} holds {} (Preferred): making the vSwitch on it",
                a.name, x.ip
            ));
            // What the vSwitch may lose of it, kept to be put back (`addressing`).
            let boot = host.system_facts()?.boot_id;
            addressing::record(host, &addressing::Addressing::of(a).taken_in(boot))?;
            return Ok(Look::Done(Uplink {
                name: a.name.clone(),
                mac: a.mac.clone(),
                ip: x.ip,
                dhcp: a.dhcp,
            }));
        }
        Ok(Look::Pending(adapter.map_or_else(
            || vec![format!("no adapter named {name}")],
            |a| {
                a.addresses
                    .iter()
                    .map(|x| {
                        let state = if x.preferred { "" } else { " (tentative)" };
                        format!("{}{state}", x.ip)
                    })
                    .collect()
            },
        )))
    };
    let what = format!(
        "{name} to hold a stable IPv4 address (Preferred, not 169.254/16) before making the vSwitch on it"
    );
    let wait = (
        what.as_str(),
        s.adapter_address_timeout,
        Pauses::every(s.timing.ip_poll),
    );
    log.poll_until(wait, stop, look, |seen| {
        Err(SuperviseError::AdapterAddress {
            adapter: name.to_owned(),
            waited: s.adapter_address_timeout,
            seen,
        })
    })
}

/// The vSwitch's host adapter for `uplink` by address, MAC and `vEthernet` name together
/// (antrea `adapterIPExists`); its interface index.
pub(super) fn find_vswitch_adapter(
    host: &dyn Host,
    s: &Settings,
    uplink: &Uplink,
    stop: &Stop,
    log: &Log,
) -> Result<u32> {
    let look = || -> Result<Look<u32, ()>> {
        let adapters = host.adapters()?;
        let found = |any_address| {
            adapters
                .iter()
                .find(|a| uplink.is_its_vswitch_adapter(a, any_address))
        };
        if let Some(a) = found(false) {
            log.info(&format!(
                "the vSwitch's host adapter is {} (index {}, MAC {}, {})",
                a.name, a.index, a.mac, uplink.ip
            ));
            return Ok(Look::Done(a.index));
        }
        // A static address may not come over (projectcalico/calico#4631): put back from the record.
        if !uplink.dhcp
            && let Some(a) = found(true)
        {
            log.warn(&format!(
                "the vSwitch's host adapter {} (index {}, MAC {}) does not hold {}: the static address did not come over, and is put back",
                a.name, a.index, a.mac, uplink.ip
            ));
            return Ok(Look::Done(a.index));
        }
        Ok(Look::Pending(()))
    };
    let what = format!(
        "the vSwitch's host adapter on {} (MAC {})",
        uplink.name, uplink.mac
    );
    let wait = (
        what.as_str(),
        s.network_timeout,
        Pauses::every(s.timing.poll),
    );
    log.poll_until(wait, stop, look, |()| {
        Err(SuperviseError::VswitchAdapter {
            uplink: uplink.name.clone(),
            mac: uplink.mac.clone(),
            ip: uplink.ip,
            after: s.network_timeout,
        })
    })
}

pub(super) fn wait_for_management_ip(
    host: &dyn Host,
    s: &Settings,
    stop: &Stop,
    log: &Log,
) -> Result<Ipv4Addr> {
    let look = || -> Result<Look<Ipv4Addr, ()>> {
        let ip = host
            .hns_networks()?
            .into_iter()
            .find(|n| n.name == EXTERNAL_NETWORK)
            .and_then(|n| n.management_ip)
            .and_then(|ip| ip.parse::<Ipv4Addr>().ok());
        Ok(ip.map_or(Look::Pending(()), |ip| {
            log.info(&format!("management IP on the vSwitch: {ip}"));
            Look::Done(ip)
        }))
    };
    let wait = (
        "the vSwitch's management IP",
        s.network_timeout,
        Pauses::every(s.timing.poll),
    );
    log.poll_until(wait, stop, look, |()| {
        Err(SuperviseError::ManagementIp {
            after: s.network_timeout,
        })
    })
}

/// What the vSwitch dropped of its adapter's addressing, put back once (`addressing`); a
/// record of a gone network is dropped.
pub(super) fn put_back_addressing(host: &dyn Host, log: &Log) -> Result<()> {
    let Some(mut kept) = addressing::recorded(host) else {
        return Ok(());
    };
    let networks = host.hns_networks()?;
    let boot = host.system_facts()?.boot_id;
    if !kept.belongs(&networks, boot.as_deref()) {
        log.info(&format!(
            "the addressing of {} kept from before the vSwitch belongs to an External network that is gone: dropped",
            kept.adapter
        ));
        addressing::forget(host)?;
        return Ok(());
    }
    if kept.lost.is_some() && kept.pending.is_empty() {
        return Ok(());
    }
    if kept.network.is_none() {
        kept.network = networks
            .iter()
            .find(|n| n.name == EXTERNAL_NETWORK)
            .map(|n| n.id.clone());
    }
    let adapters = host.adapters()?;
    let Some(now) = kept.host_adapter(&adapters) else {
        log.info(&format!(
            "the vSwitch's host adapter for {} is not there: its addressing is left as it is",
            kept.adapter
        ));
        return Ok(());
    };
    let (done, failed) = addressing::put_back(host, &mut kept, now);
    for d in done {
        log.info(&format!("{}: {d}", now.name));
    }
    for f in failed {
        log.warn(&format!("{}: {f}", now.name));
    }
    addressing::record(host, &kept)?;
    Ok(())
}
