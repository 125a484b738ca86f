//! Whose an HNS endpoint on the Calico network is, told only from how its maker names and marks
//! it. `repair` deletes only the two kinds it can tell positively, a pod's endpoint made by
//! Calico's CNI plugin and another host's endpoint kube-proxy made for a Service backend; the
//! rest is kept, whatever the pods and EndpointSlices say:
//!
//! - Calico's CNI plugin names a pod's endpoint `<sandbox id>_<CNI network name>`
//!   (projectcalico/calico v3.32.1 `cni-plugin/pkg/dataplane/windows/dataplane_windows.go`,
//!   `createAndAttachContainerEP`: `hns.ConstructEndpointName(args.ContainerID, args.Netns,
//!   n.Name)`; containernetworking/plugins v1.9.0, the release's go.mod, `pkg/hns/
//!   endpoint_windows.go` `ConstructEndpointName`: `GetSandboxContainerID(containerID, netNs) +
//!   "_" + networkName`), and makes it on this host (never `IsRemoteEndpoint`). The CNI network
//!   name is the CNI config's `name`, `Calico` in the config install renders. The runtimes'
//!   sandbox ids are hexadecimal; a name whose id has anything but letters and digits is not
//!   one.
//! - Calico's host endpoint is `<network>_ep` at the block's `.2` (`SetupVxlanNetwork`,
//!   `SetupL2bridgeNetwork`): on VXLAN it is a **remote** endpoint (`createAndAttachVxlanHostEP`:
//!   `IsRemoteEndpoint: true`, the `PA` policy the management IP), on L2Bridge a local one
//!   attached to the host (`CreateAndAttachHostEP`). kube-proxy takes that address as its source
//!   VIP on overlay, and makes a local endpoint of its own there only when none has it
//!   (kubernetes `pkg/proxy/winkernel/proxier.go`, `syncProxyRules`: `newSourceVIP` when
//!   `queriedEndpoints[proxier.sourceVip]` is absent). So the block's `.2` is never deleted,
//!   whoever holds it.
//! - kube-proxy makes another host's endpoint for a Service backend with no name, the remote
//!   flag and the MAC address it conjures from the backend's address, `02-11` then its four
//!   octets (`proxier.go`: `macAddress: conjureMac("02-11", ...ep.ip)`, `isLocal: false`;
//!   `hns.go` `createEndpoint`: `Flags |= hcn.EndpointFlagsRemoteEndpoint`, no `Name`;
//!   `conjureMac` gives `02-11-22-33-44-55` for an address that is not IPv4). Its endpoints for
//!   a Service's ClusterIP carry the host's MAC instead and are not told apart: kept.

use crate::host::HnsEndpoint;
use crate::layout::{CNI_NETWORK_NAME, SOURCE_VIP_ENDPOINT};
use serde::Serialize;

/// Whose an endpoint is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A pod's endpoint made by Calico's CNI plugin on this host.
    Pod,
    /// Calico's host endpoint `Calico_ep`, or another at the block's `.2` (kube-proxy's source
    /// VIP): infrastructure, never deleted.
    Infrastructure,
    /// Another host's endpoint kube-proxy made for a Service backend.
    ServiceBackend,
    /// None of these: reported and kept.
    Unknown,
}

/// What an endpoint is, `source_vip` being the Calico network's block `.2` when known.
pub fn classify(e: &HnsEndpoint, source_vip: Option<&str>) -> Kind {
    if e.name == SOURCE_VIP_ENDPOINT || (source_vip.is_some() && e.ip.as_deref() == source_vip) {
        Kind::Infrastructure
    } else if !e.remote && named_by_cni(&e.name) {
        Kind::Pod
    } else if e.remote && e.ip.as_deref().is_some_and(|ip| kube_proxy_mac(e, ip)) {
        Kind::ServiceBackend
    } else {
        Kind::Unknown
    }
}

/// `<sandbox id>_<CNI network name>`, the id letters and digits only.
fn named_by_cni(name: &str) -> bool {
    name.strip_suffix(CNI_NETWORK_NAME)
        .and_then(|rest| rest.strip_suffix('_'))
        .is_some_and(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// The MAC kube-proxy conjures for a backend's address (`conjureMac("02-11", ip)`), as HNS
/// gives it back (either case, `-` or `:` between the octets).
fn kube_proxy_mac(e: &HnsEndpoint, ip: &str) -> bool {
    let Some(mac) = &e.mac else {
        return false;
    };
    let want = match ip.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(v4)) => conjured(v4),
        Ok(std::net::IpAddr::V6(_)) => "02-11-22-33-44-55".to_owned(),
        Err(_) => return false,
    };
    mac.replace(':', "-").eq_ignore_ascii_case(&want)
}

/// The block's `.2`, Calico's host endpoint's address and kube-proxy's source VIP
/// (`getNthIP(subNet, 2)` in Calico's dataplane), from the Calico network's subnet prefix.
pub fn source_vip(prefix: &str) -> Option<String> {
    let base: std::net::Ipv4Addr = prefix.split('/').next()?.parse().ok()?;
    Some(std::net::Ipv4Addr::from(u32::from(base).checked_add(2)?).to_string())
}

/// `conjureMac("02-11", ip)` for an IPv4 address.
pub(super) fn conjured(ip: std::net::Ipv4Addr) -> String {
    let [a, b, c, d] = ip.octets();
    format!("02-11-{a:02x}-{b:02x}-{c:02x}-{d:02x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ep(name: &str, ip: &str, remote: bool, mac: Option<&str>) -> HnsEndpoint {
        HnsEndpoint {
            id: "id".into(),
            name: name.into(),
            network_id: "net".into(),
            ip: Some(ip.into()),
            remote,
            state: None,
            namespace: None,
            provider_address: None,
            mac: mac.map(str::to_owned),
        }
    }

    /// containernetworking/plugins `ConstructEndpointName`: `<sandbox id>_<network name>`, made
    /// on this host; a containerd sandbox id is 64 hexadecimal digits.
    #[test]
    fn a_pods_endpoint_is_told_by_the_name_calicos_cni_plugin_gives_it() {
        let id = "3f1c0ad2b9e84c5d8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e";
        let pod = |name: &str, remote| classify(&ep(name, "10.244.1.7", remote, None), None);
        assert_eq!(pod(&format!("{id}_Calico"), false), Kind::Pod);
        assert_eq!(pod("web1_Calico", false), Kind::Pod);
        for name in [
            "_Calico",
            "a-b_Calico",
            "x_Calico_2",
            "Calico",
            "x_calico",
            "x_Other",
            "",
        ] {
            assert_eq!(pod(name, false), Kind::Unknown, "{name}");
        }
        // The CNI plugin never makes a pod's endpoint remote.
        assert_eq!(pod(&format!("{id}_Calico"), true), Kind::Unknown);
    }

    /// kubernetes pkg/proxy/winkernel/proxier.go: `conjureMac("02-11", ip)` for another host's
    /// Service backend, `02-11-22-33-44-55` for an address that is not IPv4.
    #[test]
    fn a_service_backend_is_told_by_the_mac_kube_proxy_conjures() {
        use Kind::{ServiceBackend, Unknown};
        #[rustfmt::skip]
        let cases = [
            ("10.244.9.9", true, Some("02-11-0a-f4-09-09"), ServiceBackend),
            ("10.244.9.9", true, Some("02:11:0A:F4:09:09"), ServiceBackend),
            ("fd00::9", true, Some("02-11-22-33-44-55"), ServiceBackend),
            ("10.244.9.9", true, Some("02-11-0a-f4-09-08"), Unknown),
            ("10.244.9.9", true, Some("00-15-5d-0a-f4-09"), Unknown),
            ("10.244.9.9", true, None, Unknown),
            // A local endpoint with that MAC is no remote endpoint kube-proxy made for a backend.
            ("10.244.9.9", false, Some("02-11-0a-f4-09-09"), Unknown),
        ];
        for (ip, remote, mac, want) in cases {
            assert_eq!(
                classify(&ep("", ip, remote, mac), None),
                want,
                "{ip} {remote} {mac:?}"
            );
        }
    }

    /// `Calico_ep` by name, local (L2Bridge) or remote (VXLAN), and whatever holds the block's
    /// `.2` (`getNthIP(subNet, 2)`), are infrastructure, even named as a pod's.
    #[test]
    fn calicos_host_endpoint_and_the_source_vip_are_infrastructure() {
        assert_eq!(source_vip("10.244.1.0/26").as_deref(), Some("10.244.1.2"));
        assert_eq!(source_vip("nonsense"), None);
        let (at, vip) = ("10.244.1.2", Some("10.244.1.2"));
        for (e, vip) in [
            (ep(SOURCE_VIP_ENDPOINT, at, false, None), None),
            (ep(SOURCE_VIP_ENDPOINT, at, true, None), None),
            (ep("", at, false, None), vip),
            (ep("x_Calico", at, false, None), vip),
            (ep("", at, true, Some("02-11-0a-f4-01-02")), vip),
        ] {
            assert_eq!(classify(&e, vip), Kind::Infrastructure, "{e:?}");
        }
    }
}
