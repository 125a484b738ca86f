//! The routes the vSwitch drops, kept in the registry and put back; the metadata route ensured.

use crate::host::{Host, HostError, Route};
use crate::installed::failure::Blocks;
/// The cloud metadata service's address; the vSwitch drops its route.
use crate::installed::routes::METADATA;
use crate::layout::{CALICO_KEY, EXTERNAL_NETWORK, ROUTES_VALUE};
use crate::supervise::child::report_failure;
use crate::supervise::log::Log;
use crate::supervise::settings::Result;
use std::net::Ipv4Addr;

/// The service this body is, in what it records.
pub(super) const NODE: &str = "CalicoNode";

/// After the vSwitch: the routes it dropped put back (kept in the registry until all are),
/// and the metadata route where the platform needs it.
pub(super) fn keep_routes(
    host: &dyn Host,
    snapshot: &[Route],
    (mgmt, vnic): (Ipv4Addr, Option<u32>),
    created_external: bool,
    metadata: bool,
    log: &Log,
) -> Result<Vec<String>> {
    let mut restored = Vec::new();
    if created_external {
        restored = restore_routes(host, snapshot, (mgmt, vnic), log)?;
    } else if host.reg_get(CALICO_KEY, ROUTES_VALUE)?.is_some() {
        // An earlier start made the vSwitch but did not restore them all.
        restored = restore_routes(host, snapshot, (mgmt, None), log)?;
    }
    let now = host.routes()?;
    if snapshot
        .iter()
        .all(|r| crate::installed::routes::has_destination(&now, r))
    {
        host.reg_delete_value(CALICO_KEY, ROUTES_VALUE)?;
    } else {
        log.info("the routes not restored stay in the registry; the next start tries them again");
    }
    if metadata {
        ensure_metadata_route(host, mgmt, log)?;
    }
    Ok(restored)
}

/// The routes before the vSwitch, kept in the registry until all are restored.
pub(super) fn routes_before_vswitch(
    host: &dyn Host,
    first_run_since_boot: bool,
) -> Result<Vec<Route>> {
    let kept: Option<Vec<Route>> = crate::installed::calico_json(host, ROUTES_VALUE)?;
    Ok(match kept {
        Some(routes) => routes,
        None => {
            let routes = host.routes()?;
            let external = host
                .hns_networks()?
                .iter()
                .any(|n| n.name == EXTERNAL_NETWORK);
            // After a boot the networks are deleted and the vSwitch made again.
            if !external || first_run_since_boot {
                crate::installed::keep_json(host, ROUTES_VALUE, &routes)?;
            }
            routes
        }
    })
}

/// Adds back the routes the vSwitch dropped; one whose interface went moves to `vnic` (else
/// the adapter holding the management IP).
fn restore_routes(
    host: &dyn Host,
    snapshot: &[Route],
    (mgmt, vnic): (Ipv4Addr, Option<u32>),
    log: &Log,
) -> Result<Vec<String>> {
    let now = host.routes()?;
    let addrs = host.ipv4_addresses()?;
    let vswitch = vnic.or_else(|| addrs.iter().find(|a| a.ip == mgmt).map(|a| a.index));
    let mut restored = Vec::new();
    for r in snapshot {
        if crate::installed::routes::has_destination(&now, r) {
            continue;
        }
        let what = format!("{}/{} via {}", r.destination, r.prefix_len, r.next_hop);
        let fail = |error: &str| {
            let doing = format!("restore the route {what} that the vSwitch dropped");
            let blocks = Blocks::Route(format!("{}/{}", r.destination, r.prefix_len));
            report_failure(host, NODE, &doing, error, blocks, log);
        };
        let index = if addrs.iter().any(|a| a.index == r.interface_index) {
            r.interface_index
        } else if let Some(i) = vswitch {
            i
        } else {
            fail(&format!("no interface holds the management IP {mgmt}"));
            continue;
        };
        let route = Route {
            interface_index: index,
            ..r.clone()
        };
        match host.add_route(&route) {
            Ok(()) | Err(HostError::Exists { .. }) => {
                log.info(&format!("restored route {what} that the vSwitch dropped"));
                restored.push(what);
            }
            Err(e) => fail(&e.to_string()),
        }
    }
    Ok(restored)
}

/// EC2 and GCE: the metadata service must stay reachable through the vSwitch.
fn ensure_metadata_route(host: &dyn Host, mgmt: Ipv4Addr, log: &Log) -> Result<()> {
    if host
        .routes()?
        .iter()
        .any(crate::installed::routes::is_metadata)
    {
        return Ok(());
    }
    let fail = |error: &str| {
        let doing = format!("add the metadata route {METADATA}/32");
        report_failure(
            host,
            NODE,
            &doing,
            error,
            Blocks::Route(format!("{METADATA}/32")),
            log,
        );
    };
    let Some(index) = host
        .ipv4_addresses()?
        .iter()
        .find(|a| a.ip == mgmt)
        .map(|a| a.index)
    else {
        fail(&format!("no interface holds the management IP {mgmt}"));
        return Ok(());
    };
    let route = Route {
        destination: METADATA,
        prefix_len: 32,
        next_hop: Ipv4Addr::UNSPECIFIED,
        interface_index: index,
        metric: 256,
    };
    match host.add_route(&route) {
        Ok(()) | Err(HostError::Exists { .. }) => log.info(&format!(
            "added the metadata route {METADATA}/32 on interface {index}"
        )),
        Err(e) => fail(&e.to_string()),
    }
    Ok(())
}
