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

/// The node's first configuration: a loopback, the Ethernet adapter on a /24 with a gateway
/// and a DNS server (DHCP), and a second adapter `Ethernet 2` with a static address and its
/// own DNS server but no gateway; and the cloud metadata route a VM on EC2 has.
pub const PHYSICAL: &str = "Ethernet";
pub const PHYSICAL_INDEX: u32 = 4;
pub const HOST_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 15);
pub const GATEWAY: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 2);
pub const PREFIX: u8 = 24;
pub const METADATA: Ipv4Addr = Ipv4Addr::new(169, 254, 169, 254);
/// What Windows calls a vSwitch's host adapter (its `Description`).
pub const VSWITCH_DESCRIPTION: &str = "Hyper-V Virtual Ethernet Adapter";

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

fn ipv4(v: &Value) -> Option<Ipv4Addr> {
    v.as_str().and_then(|s| s.parse().ok())
}

/// The routes Windows derives from an adapter's address (the on-link subnet, the host route)
/// and, when it has a gateway, the default route through it.
fn derived(adapter: &Value, index: u32) -> Vec<Value> {
    let Some(ip) = ipv4(&adapter["ip"]) else {
        return Vec::new();
    };
    let prefix = adapter["prefix_len"].as_u64().unwrap_or(24) as u8;
    let subnet = Ipv4Addr::from(u32::from(ip) & (u32::MAX << (32 - u32::from(prefix))));
    let mut out = Vec::new();
    if let Some(gw) = ipv4(&adapter["gateway"]) {
        out.push(route(Ipv4Addr::UNSPECIFIED, 0, gw, index, 0));
    }
    out.push(route(subnet, prefix, Ipv4Addr::UNSPECIFIED, index, 256));
    out.push(route(ip, 32, Ipv4Addr::UNSPECIFIED, index, 256));
    out
}

fn physical() -> Value {
    json!({"name": PHYSICAL, "index": PHYSICAL_INDEX, "ip": HOST_IP.to_string(), "prefix_len": PREFIX,
           "description": "Microsoft Hyper-V Network Adapter", "mac": [0, 0x15, 0x5d, 0, 2, 0x0f],
           "dhcp": true, "gateway": GATEWAY.to_string(), "dns": ["10.0.2.3"], "suffix": "cluster.example",
           "metric": 15})
}

fn initial() -> Value {
    let mut routes = vec![route(
        Ipv4Addr::new(127, 0, 0, 0),
        8,
        Ipv4Addr::UNSPECIFIED,
        1,
        256,
    )];
    let second = json!({"name": "Ethernet 2", "index": 6, "ip": "10.0.3.15", "prefix_len": 24,
           "description": "Microsoft Hyper-V Network Adapter #2", "mac": [0, 0x15, 0x5d, 0, 3, 0x0f],
           "dhcp": false, "dns": ["10.0.3.3"], "metric": 25});
    routes.extend(derived(&physical(), PHYSICAL_INDEX));
    routes.extend(derived(&second, 6));
    routes.push(route(METADATA, 32, GATEWAY, PHYSICAL_INDEX, 256));
    json!({
        "adapters": [
            {"name": "Loopback Pseudo-Interface 1", "index": 1, "ip": "127.0.0.1", "prefix_len": 8,
             "description": "Software Loopback Interface 1", "metric": 75},
            physical(),
            second,
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

/// Creating the vSwitch on `named` (the document's `NetAdapterName`), else on the adapter of
/// the default route: the adapter's address moves to a new `vEthernet (<adapter>)` adapter
/// with its MAC and the description of a vSwitch port (antrea `pkg/agent/util/net_windows.go`
/// `adapterIPExists` finds it by that MAC and name), which gets the derived routes; every
/// other route of the adapter is dropped, and the adapter stays, without an address and with
/// IPv4 unbound (`"ipv4": false`: the vSwitch takes the physical adapter and its host
/// adapter carries the IP configuration), so that `GetAdaptersAddresses(AF_INET)` leaves it
/// out. Returns the management IP; a second network on the vSwitch gets the same.
pub fn create_vswitch(named: Option<&str>) -> std::io::Result<Ipv4Addr> {
    let mut s = load();
    let mut adapters: Vec<Value> = s["adapters"].as_array().cloned().unwrap_or_default();
    if let Some(v) = adapters
        .iter()
        .find(|a| a["description"] == VSWITCH_DESCRIPTION)
    {
        return Ok(ipv4(&v["ip"]).unwrap_or(Ipv4Addr::UNSPECIFIED));
    }
    let default_index = s["routes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["prefix_len"] == 0)
        .and_then(|r| r["interface_index"].as_u64());
    let Some(at) = adapters.iter().position(|a| match named {
        Some(n) => a["name"]
            .as_str()
            .is_some_and(|x| x.eq_ignore_ascii_case(n)),
        None => a["index"].as_u64() == default_index,
    }) else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!(
                "no network adapter {}",
                named.unwrap_or("of the default route")
            ),
        ));
    };
    let index = s["next_index"].as_u64().unwrap_or(10) as u32;
    s["next_index"] = json!(index + 1);
    let uplink = adapters[at].clone();
    let old = uplink["index"].clone();
    let mut vnic = uplink.clone();
    vnic["name"] = json!(format!(
        "vEthernet ({})",
        uplink["name"].as_str().unwrap_or_default()
    ));
    vnic["index"] = json!(index);
    vnic["description"] = json!(VSWITCH_DESCRIPTION);
    vnic["uplink_index"] = old.clone();
    adapters[at]["ip"] = Value::Null;
    adapters[at]["ipv4"] = json!(false);
    adapters.push(vnic.clone());
    let mut routes: Vec<Value> = s["routes"].as_array().cloned().unwrap_or_default();
    routes.retain(|r| r["interface_index"] != old);
    routes.extend(derived(&vnic, index));
    s["adapters"] = json!(adapters);
    s["routes"] = json!(routes);
    store(&s)?;
    Ok(ipv4(&vnic["ip"]).unwrap_or(Ipv4Addr::UNSPECIFIED))
}

/// Deleting the last network on the vSwitch: the address returns to the adapter, IPv4 bound
/// again, with its derived routes; the routes of the vEthernet adapter go with it.
pub fn delete_vswitch() -> std::io::Result<()> {
    let mut s = load();
    let mut adapters: Vec<Value> = s["adapters"].as_array().cloned().unwrap_or_default();
    let Some(v) = adapters
        .iter()
        .position(|a| a["description"] == VSWITCH_DESCRIPTION)
    else {
        return Ok(());
    };
    let vnic = adapters.remove(v);
    let gone = vnic["index"].clone();
    let mut routes: Vec<Value> = s["routes"].as_array().cloned().unwrap_or_default();
    routes.retain(|r| r["interface_index"] != gone);
    if let Some(a) = adapters
        .iter_mut()
        .find(|a| a["index"] == vnic["uplink_index"])
    {
        a["ip"] = vnic["ip"].clone();
        if let Some(o) = a.as_object_mut() {
            o.remove("ipv4");
        }
        let index = a["index"].as_u64().unwrap_or(0) as u32;
        routes.extend(derived(a, index));
    }
    s["adapters"] = json!(adapters);
    s["routes"] = json!(routes);
    store(&s)
}
