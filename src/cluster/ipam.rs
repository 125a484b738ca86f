//! How many pods a Windows node can address: its IP pools' block size less the addresses
//! Calico reserves on Windows, and what its blocks hold now.
//!
//! Calico's CNI plugin on Windows claims blocks with `HostReservedAttr{StartOfBlock: 3,
//! EndOfBlock: 1, Handle: "windows-reserved-ipam-handle"}` (cni-plugin/pkg/ipamplugin/
//! ipam_plugin.go at v3.31.7), so a /26 holds 60 pods; with `windows_use_single_network`
//! (kube-proxy needs it) the node gets one block only (Calico's Windows limitations page).

use crate::k8s_name::NodeName;
use std::collections::BTreeMap;

use kube::Api;
use kube::api::DynamicObject;
use serde::Serialize;
use serde_json::Value;

use super::facts::IpPool;
use super::{Cluster, ClusterError};

/// The addresses of every Windows node's block that pods cannot have.
pub const WINDOWS_RESERVED: u64 = 4;
/// The IPAM handle of those addresses.
pub const WINDOWS_RESERVED_HANDLE: &str = "windows-reserved-ipam-handle";

/// The pods one block of `/block_size` holds on Windows.
pub fn pods_per_block(block_size: u8) -> u64 {
    let addresses = 1u64 << (32 - u32::from(block_size.clamp(1, 32)));
    addresses.saturating_sub(WINDOWS_RESERVED)
}

/// The enabled IPv4 pools whose node selector takes a node with `labels` (one that does not
/// parse takes it: Calico would not have accepted the pool); without labels (no Node yet),
/// every one.
pub fn node_pools<'a>(
    pools: &'a [IpPool],
    labels: Option<&BTreeMap<String, String>>,
) -> Vec<&'a IpPool> {
    pools
        .iter()
        .filter(|p| !p.ipv6 && !p.disabled)
        .filter(|p| {
            let Some(labels) = labels else { return true };
            crate::selector::parse(&p.node_selector).map_or(true, |s| s.matches(labels))
        })
        .collect()
}

/// One of the node's blocks: its addresses, the pods' and the reserved ones in use.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BlockUse {
    pub cidr: String,
    pub addresses: u64,
    /// The pods it holds on Windows (`pods_per_block` of its prefix).
    pub capacity: u64,
    pub pods: u64,
    pub reserved: u64,
}

/// The blocks affine to `node` (`spec.affinity: host:<node>`), listed a page at a time.
pub fn node_blocks(c: &Cluster, node: &NodeName) -> Result<Vec<BlockUse>, ClusterError> {
    let api: Api<DynamicObject> = Api::all_with(
        c.client.clone(),
        &c.calico_resource(super::calico_api::Kind::IpamBlock)?,
    );
    let affinity = format!("host:{node}");
    let mut out = Vec::new();
    c.for_each_page(&api, "ipamblocks", |items| {
        for b in &items {
            let spec = b.data.get("spec").cloned().unwrap_or(Value::Null);
            if spec.get("affinity").and_then(Value::as_str) == Some(affinity.as_str()) {
                out.push(block_use(&spec));
            }
        }
        Ok::<(), ClusterError>(())
    })?;
    Ok(out)
}

/// What a block's allocations hold: each non-null entry is an address in use, whose
/// attribute's `handle_id` says whether Windows reserved it (libcalico-go
/// lib/apis/v3/ipam_block.go).
fn block_use(spec: &Value) -> BlockUse {
    let attrs = spec.get("attributes").and_then(Value::as_array);
    let allocations = spec.get("allocations").and_then(Value::as_array);
    let (mut pods, mut reserved) = (0, 0);
    for a in allocations.into_iter().flatten().filter_map(Value::as_u64) {
        let handle = attrs
            .and_then(|l| l.get(usize::try_from(a).unwrap_or(usize::MAX)))
            .and_then(|x| x.get("handle_id"))
            .and_then(Value::as_str);
        if handle == Some(WINDOWS_RESERVED_HANDLE) {
            reserved += 1;
        } else {
            pods += 1;
        }
    }
    let cidr = spec.get("cidr").and_then(Value::as_str).unwrap_or("");
    let prefix = cidr
        .rsplit_once('/')
        .and_then(|(_, p)| p.parse::<u8>().ok());
    BlockUse {
        capacity: prefix.map_or(0, pods_per_block),
        cidr: cidr.to_owned(),
        addresses: allocations.map_or(0, |a| a.len() as u64),
        pods,
        reserved,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A /26 holds 60 pods, a /24 252; reserved addresses are told from pods by their handle.
    #[test]
    fn reserved_addresses_are_told_from_pods_by_their_handle() {
        assert_eq!(pods_per_block(26), 60);
        assert_eq!(pods_per_block(24), 252);
        let spec = serde_json::json!({
            "cidr": "10.244.1.0/30",
            "allocations": [0, null, 1, 0],
            "attributes": [{"handle_id": WINDOWS_RESERVED_HANDLE}, {"handle_id": "k8s-pod-network.abc"}],
        });
        let u = block_use(&spec);
        assert_eq!((u.addresses, u.pods, u.reserved), (4, 1, 2));
        assert_eq!(u.capacity, 0, "a /30 holds no pod on Windows");
    }
}
