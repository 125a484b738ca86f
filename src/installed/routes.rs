//! Routes the vSwitch takes and the tool puts back: where a recorded route goes when the
//! interface it was on is gone, and the cloud metadata route a node must keep.

use crate::host::{InterfaceAddress, Route};
use std::net::Ipv4Addr;

/// The cloud metadata service (EC2, GCE, Azure's IMDS): creating the vSwitch drops its /32
/// route, which CalicoNode restores as Calico's node-service.ps1 does.
pub const METADATA: Ipv4Addr = Ipv4Addr::new(169, 254, 169, 254);

pub fn is_metadata(r: &Route) -> bool {
    r.destination == METADATA && r.prefix_len == 32
}

/// Whether `routes` has a route to `r`'s destination (on any interface).
pub fn has_destination(routes: &[Route], r: &Route) -> bool {
    routes
        .iter()
        .any(|x| x.destination == r.destination && x.prefix_len == r.prefix_len)
}

/// The interface a recorded route goes back on: its own when it still exists; else the one
/// holding now the address its interface held when it was recorded (creating and deleting the
/// vSwitch moves the address between `Ethernet` and `vEthernet (Ethernet)`, with new indexes);
/// else the one whose subnet holds its next hop. `None` when nothing says where it belongs.
pub fn place(r: &Route, now: &[InterfaceAddress], before: &[InterfaceAddress]) -> Option<u32> {
    if now.iter().any(|a| a.index == r.interface_index) {
        return Some(r.interface_index);
    }
    let by_address = before
        .iter()
        .filter(|b| b.index == r.interface_index)
        .find_map(|b| now.iter().find(|a| a.ip == b.ip).map(|a| a.index));
    by_address.or_else(|| {
        let hop = Some(r.next_hop).filter(|h| !h.is_unspecified())?;
        let on_link = now.iter().find(|a| same_subnet(a.ip, hop, a.prefix_len));
        on_link.map(|a| a.index)
    })
}

/// Whether `a` and `b` share their first `prefix_len` bits.
pub fn same_subnet(a: Ipv4Addr, b: Ipv4Addr, prefix_len: u8) -> bool {
    let mask = u32::MAX
        .checked_shl(32 - u32::from(prefix_len.min(32)))
        .unwrap_or(0);
    u32::from(a) & mask == u32::from(b) & mask
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(interface: &str, index: u32, ip: [u8; 4]) -> InterfaceAddress {
        InterfaceAddress {
            interface: interface.into(),
            index,
            ip: ip.into(),
            prefix_len: 24,
        }
    }

    fn route(dest: [u8; 4], prefix_len: u8, hop: [u8; 4], index: u32) -> Route {
        Route {
            destination: dest.into(),
            prefix_len,
            next_hop: hop.into(),
            interface_index: index,
            metric: 256,
        }
    }

    #[test]
    fn a_route_follows_its_interfaces_address_then_its_next_hop() {
        let vswitch = [addr("vEthernet (Ethernet)", 7, [10, 0, 0, 5])];
        let nic = [addr("Ethernet", 4, [10, 0, 0, 5])];
        let metadata = route([169, 254, 169, 254], 32, [0, 0, 0, 0], 7);
        // Recorded on the vEthernet, put back once the vSwitch is gone: on the NIC.
        assert_eq!(place(&metadata, &nic, &vswitch), Some(4));
        assert_eq!(place(&metadata, &vswitch, &vswitch), Some(7));
        // Nothing recorded about interface 7: an on-link route has nowhere to go...
        assert_eq!(place(&metadata, &nic, &[]), None);
        // ... and a gatewayed one goes where its gateway is.
        let via = route([192, 168, 5, 0], 24, [10, 0, 0, 1], 7);
        assert_eq!(place(&via, &nic, &[]), Some(4));
        assert_eq!(place(&via, &[addr("Other", 9, [172, 16, 0, 2])], &[]), None);
    }
}
