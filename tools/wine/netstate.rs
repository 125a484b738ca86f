//! The IPv4 configuration the Wine stand-ins share: the adapters and the routing table of the
//! simulated node, kept in the prefix's `C:\calicoctl-win-net\state.json`. The `iphlpapi.dll`
//! stand-in reads and changes it; the `computenetwork.dll` stand-in changes it as creating and
//! deleting the vSwitch does. Included by both with `#[path]`.
//!
//! What a vSwitch does to the host's IP configuration follows Calico's own account
//! (`node-service.ps1` and projectcalico/node#604: creating the External network moves the
//! host's address to the `vEthernet (<adapter>)` interface and drops the other routes, the
//! cloud metadata route among them, which is why Calico restores it). Which routes Windows
//! carries over is a guess: the ones it derives from the address (the on-link subnet, the
//! host route, the default route through the gateway).

use serde_json::{Value, json};
use std::net::Ipv4Addr;
use std::path::PathBuf;

/// The node's first configuration: a loopback and one Ethernet adapter on a /24 with a
/// gateway, and the cloud metadata route a VM on EC2 has.
pub const PHYSICAL: &str = "Ethernet";
pub const PHYSICAL_INDEX: u32 = 4;
pub const HOST_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 15);
pub const GATEWAY: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 2);
pub const PREFIX: u8 = 24;
pub const METADATA: Ipv4Addr = Ipv4Addr::new(169, 254, 169, 254);

fn root() -> PathBuf {
    PathBuf::from(r"C:\calicoctl-win-net")
}

fn path() -> PathBuf {
    root().join("state.json")
}

pub fn route(dest: Ipv4Addr, prefix: u8, next_hop: Ipv4Addr, index: u32, metric: u32) -> Value {
    json!({"destination": dest.to_string(), "prefix_len": prefix,
           "next_hop": next_hop.to_string(), "interface_index": index, "metric": metric})
}

/// The routes Windows derives from an address on an interface.
fn derived(index: u32) -> Vec<Value> {
    let subnet = Ipv4Addr::from(u32::from(HOST_IP) & (u32::MAX << (32 - PREFIX)));
    vec![
        route(Ipv4Addr::UNSPECIFIED, 0, GATEWAY, index, 0),
        route(subnet, PREFIX, Ipv4Addr::UNSPECIFIED, index, 256),
        route(HOST_IP, 32, Ipv4Addr::UNSPECIFIED, index, 256),
    ]
}

fn initial() -> Value {
    let mut routes = vec![route(
        Ipv4Addr::new(127, 0, 0, 0),
        8,
        Ipv4Addr::UNSPECIFIED,
        1,
        256,
    )];
    routes.extend(derived(PHYSICAL_INDEX));
    routes.push(route(METADATA, 32, GATEWAY, PHYSICAL_INDEX, 256));
    json!({
        "adapters": [
            {"name": "Loopback Pseudo-Interface 1", "index": 1, "ip": "127.0.0.1", "prefix_len": 8},
            {"name": PHYSICAL, "index": PHYSICAL_INDEX, "ip": HOST_IP.to_string(), "prefix_len": PREFIX},
        ],
        "routes": routes,
        "next_index": 10,
    })
}

/// The state, seeded with the first configuration when the prefix has none.
pub fn load() -> Value {
    std::fs::read_to_string(path())
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_else(initial)
}

/// Test-only: the routes (`"169.254.169.254/32"`) that adding is refused for, with
/// ERROR_ACCESS_DENIED, as a locked-down node would (`refuse_routes` in the state).
/// CreateIpForwardEntry2's reference (Microsoft's netioapi.h documentation) lists
/// ERROR_ACCESS_DENIED for a caller without administrative rights; that a node's policy gives
/// the same code is a guess.
pub fn refused_route(destination: Ipv4Addr, prefix_len: u8) -> bool {
    let wanted = format!("{destination}/{prefix_len}");
    load()["refuse_routes"]
        .as_array()
        .is_some_and(|list| list.iter().any(|r| r.as_str() == Some(wanted.as_str())))
}

pub fn store(state: &Value) -> std::io::Result<()> {
    std::fs::create_dir_all(root())?;
    let tmp = root().join(format!("state.{}.tmp", std::process::id()));
    std::fs::write(&tmp, state.to_string())?;
    std::fs::rename(tmp, path())
}

fn vswitch_name() -> String {
    format!("vEthernet ({PHYSICAL})")
}

/// Creating the vSwitch: the host address moves to a new `vEthernet` interface, which gets
/// the derived routes; every other route of the physical interface is dropped. Returns the
/// management IP.
pub fn create_vswitch() -> std::io::Result<Ipv4Addr> {
    let mut s = load();
    if s["adapters"]
        .as_array()
        .is_some_and(|a| a.iter().any(|x| x["name"] == vswitch_name()))
    {
        return Ok(HOST_IP);
    }
    let index = s["next_index"].as_u64().unwrap_or(10) as u32;
    s["next_index"] = json!(index + 1);
    let mut adapters: Vec<Value> = s["adapters"].as_array().cloned().unwrap_or_default();
    adapters.retain(|a| a["name"] != PHYSICAL);
    adapters.push(json!({"name": vswitch_name(), "index": index, "ip": HOST_IP.to_string(), "prefix_len": PREFIX}));
    let mut routes: Vec<Value> = s["routes"].as_array().cloned().unwrap_or_default();
    routes.retain(|r| r["interface_index"] != PHYSICAL_INDEX);
    routes.extend(derived(index));
    s["adapters"] = json!(adapters);
    s["routes"] = json!(routes);
    store(&s)?;
    Ok(HOST_IP)
}

/// Deleting the last network on the vSwitch: the address returns to the physical adapter
/// with its derived routes; the routes of the vEthernet interface go with it.
pub fn delete_vswitch() -> std::io::Result<()> {
    let mut s = load();
    let mut adapters: Vec<Value> = s["adapters"].as_array().cloned().unwrap_or_default();
    let Some(v) = adapters.iter().position(|a| a["name"] == vswitch_name()) else {
        return Ok(());
    };
    let gone = adapters.remove(v)["index"].clone();
    adapters.push(json!({"name": PHYSICAL, "index": PHYSICAL_INDEX, "ip": HOST_IP.to_string(), "prefix_len": PREFIX}));
    adapters.sort_by_key(|a| a["index"].as_u64());
    let mut routes: Vec<Value> = s["routes"].as_array().cloned().unwrap_or_default();
    routes.retain(|r| r["interface_index"] != gone);
    routes.extend(derived(PHYSICAL_INDEX));
    s["adapters"] = json!(adapters);
    s["routes"] = json!(routes);
    store(&s)
}
