//! The `External` bootstrap HNS network as a schema-2.0 HCN document.

use crate::config::Config;
use crate::config::types::Backend;
use crate::layout::EXTERNAL_NETWORK;
use serde_json::{Value, json};

/// Its address prefix and gateway: a tiny range no pod uses.
const PREFIX: &str = "192.168.255.0/30";
const GATEWAY: &str = "192.168.255.1";
/// The External network's VSID; unrelated to the pod VNI.
const EXTERNAL_VSID: u32 = 9999;

/// The network document, or `None` for the `none` backend (no Calico networking, no vSwitch).
/// `uplink` is the adapter the vSwitch binds (`NetAdapterName`, hcsshim
/// `hcn/hcnpolicy.go` `NetAdapterNameNetworkPolicySetting`); without one HNS takes the
/// default route's.
pub fn external_network(c: &Config, uplink: Option<&str>) -> Option<Value> {
    let route = json!([{ "NextHop": GATEWAY, "DestinationPrefix": "0.0.0.0/0" }]);
    let (kind, subnet) = match c.backend {
        Backend::None => return None,
        Backend::Vxlan => {
            let subnet = json!({
                "IpAddressPrefix": PREFIX,
                "Routes": route,
                "Policies": [{ "Type": "VSID", "Settings": { "IsolationId": EXTERNAL_VSID } }],
            });
            ("Overlay", subnet)
        }
        Backend::WindowsBgp => (
            "L2Bridge",
            json!({ "IpAddressPrefix": PREFIX, "Routes": route }),
        ),
    };
    let policies: Vec<Value> = uplink
        .iter()
        .map(|a| json!({ "Type": "NetAdapterName", "Settings": { "NetworkAdapterName": a } }))
        .collect();
    Some(json!({
        "SchemaVersion": { "Major": 2, "Minor": 0 },
        "Name": EXTERNAL_NETWORK,
        "Type": kind,
        "Flags": 0,
        "Ipams": [{ "Type": "Static", "Subnets": [subnet] }],
        "Policies": policies,
    }))
}
