//! SimHost playing calico-node: what `calico-node.exe -startup` (or `calico.exe component node
//! startup`) does to HNS on a Windows node, so the whole lifecycle can run on a simulated host.
//!
//! Like the real startup (`SetupVxlanNetwork` in Calico's Windows dataplane), it **reuses an
//! existing `Calico` network whose type, subnet and gateway match, without comparing its VSID**.
//! So after the VNI in the service environment changes, the network keeps the old VSID: this is
//! exactly the silent VNI problem that `reconfigure` solves, reproduced on the simulated host.

use super::SimHost;
use crate::host::{Hns, HostResult, ProcessSpec};
use serde_json::json;
use std::fmt::Write as _;

/// Which calico-node component a command line runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Component {
    Startup,
    Felix,
    Confd,
    Other,
}

/// Reads the component from `calico-node.exe -startup|-felix|-confd` (v3.2x–3.33) or
/// `calico.exe component node startup|felix|confd` (3.34+); `None` for other programs.
pub fn component(spec: &ProcessSpec) -> Option<Component> {
    let file = spec
        .program
        .rsplit(['\\', '/'])
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let has = |a: &str| spec.args.iter().any(|x| x == a);
    match file.as_str() {
        "calico-node.exe" => Some(if has("-startup") {
            Component::Startup
        } else if has("-felix") {
            Component::Felix
        } else if has("-confd") {
            Component::Confd
        } else {
            Component::Other
        }),
        "calico.exe" if has("component") => Some(if has("node") && has("startup") {
            Component::Startup
        } else if has("felix") {
            Component::Felix
        } else if has("confd") {
            Component::Confd
        } else {
            Component::Other
        }),
        _ => None,
    }
}

/// Runs the simulated startup; returns the exit code and what it did, for the child's log.
pub fn startup(host: &SimHost, spec: &ProcessSpec) -> HostResult<(i32, String)> {
    let mut log = String::new();
    let backend = spec
        .env
        .get("CALICO_NETWORKING_BACKEND")
        .map(String::as_str)
        .unwrap_or("vxlan");
    let network_type = match backend {
        "vxlan" => "Overlay",
        "windows-bgp" => "L2Bridge",
        "none" => {
            let _ = writeln!(log, "backend none: no network to create");
            return Ok((0, log));
        }
        other => {
            let _ = writeln!(log, "invalid backend configuration: {other}");
            return Ok((1, log));
        }
    };
    let vni: u32 = match spec.env.get("VXLAN_VNI").map(|v| v.parse()) {
        None => 4096,
        Some(Ok(v)) if v >= 4096 => v,
        Some(_) => {
            let _ = writeln!(log, "Windows does not support VXLANVNI < 4096");
            return Ok((1, log));
        }
    };
    let networks = match host.hns_networks() {
        Ok(n) => n,
        Err(e) => {
            let _ = writeln!(log, "cannot reach HNS: {e}");
            return Ok((1, log));
        }
    };
    let block = host.read(|s| s.settings.pod_block.clone());
    let gateway = gateway_of(&block);
    if let Some(existing) = networks.iter().find(|n| n.name == "Calico") {
        let matches = existing.network_type == network_type
            && existing
                .subnets
                .iter()
                .any(|s| s.prefix == block && s.gateway.as_deref() == Some(gateway.as_str()));
        if matches {
            // The VSID is deliberately not compared: calico-node does not compare it either.
            let _ = writeln!(log, "reusing HNS network Calico ({})", existing.id);
            return Ok((0, log));
        }
        host.hns_delete_network(&existing.id)?;
        let _ = writeln!(log, "deleted stale HNS network Calico ({})", existing.id);
    }
    let mut subnet = json!({
        "IpAddressPrefix": block,
        "Routes": [{"NextHop": gateway, "DestinationPrefix": "0.0.0.0/0"}],
    });
    if network_type == "Overlay" {
        subnet["Policies"] = json!([{"Type": "VSID", "Settings": {"IsolationId": vni}}]);
    }
    let doc = json!({
        "SchemaVersion": {"Major": 2, "Minor": 0},
        "Name": "Calico",
        "Type": network_type,
        "Ipams": [{"Type": "Static", "Subnets": [subnet]}],
        "Policies": [{"Type": "HostRoute", "Settings": {}}],
    });
    let created = host.hns_create_network(&doc.to_string())?;
    let _ = writeln!(
        log,
        "created HNS network Calico ({}), {network_type}, VSID {}",
        created.id,
        created.vsid().map_or("none".into(), |v| v.to_string())
    );
    Ok((0, log))
}

/// The block's first host address (`10.244.1.0/26` → `10.244.1.1`).
fn gateway_of(block: &str) -> String {
    let base = block.split('/').next().unwrap_or(block);
    match base.parse::<std::net::Ipv4Addr>() {
        Ok(ip) => std::net::Ipv4Addr::from(u32::from(ip) + 1).to_string(),
        Err(_) => base.to_owned(),
    }
}
