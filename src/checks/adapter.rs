//! The adapter the External vSwitch binds, checked before anything changes: `adapter` (one
//! can be chosen for certain, and it can carry a vSwitch) and `default-routes` (no two default
//! routes tie).

use super::Check;
use crate::host::uplink::Choice;
use crate::host::{Adapter, Route};

/// The description Windows gives an LBFO team's adapter.
pub const LBFO_DESCRIPTION: &str = "Microsoft Network Adapter Multiplexor Driver";

/// Windows Server 2022's build: from it on a Hyper-V vSwitch cannot be bound to an LBFO team
/// (Microsoft Learn, "Features removed or no longer developed starting with Windows Server 2022").
const SERVER_2022: u32 = 20348;

/// An APIPA address is no node IP to Calico's start-up (projectcalico/calico v3.32.1
/// `node/windows-packaging/CalicoWindows/node/node-service.ps1`, `$IPRegEx2='(^169\.254\.)'`).
const APIPA_FACT: &str = "an APIPA address (169.254.0.0/16: Windows' own when DHCP did not answer), which Calico's start-up never takes as the node IP, so install would wait node.startup_valid_ip_timeout and fail";

const APIPA_REMEDY: &str = "give the adapter its real address first (check that DHCP answers: ipconfig /renew; or set a static one with New-NetIPAddress), or set vxlan.adapter to the adapter that holds the node IP; then run preflight again";

const SET_REMEDY: &str = "bind the vSwitch to one physical adapter (vxlan.adapter), or replace the LBFO team with Switch Embedded Teaming (New-VMSwitch -EnableEmbeddedTeaming), which calicoctl-win does not make: docs/network-identity.md";

/// `adapter`: the choice (`host::uplink::choose`) or why there is none, and whether the chosen
/// adapter can carry a vSwitch.
pub fn adapter(
    choice: &Result<Choice, String>,
    remedy: Option<&str>,
    adapters: &[Adapter],
    build: Option<u32>,
) -> Check {
    const ID: &str = "adapter";
    let choice = match choice {
        Ok(c) => c,
        Err(why) => {
            return Check::fail(
                ID,
                format!("the External vSwitch's adapter cannot be chosen: {why}"),
                remedy
                    .unwrap_or("set vxlan.adapter to the physical adapter that holds the node IP"),
            );
        }
    };
    let Some(name) = &choice.adapter else {
        // HNS picks among them: with nothing but APIPA addresses there is nothing to pick.
        let all: Vec<&crate::host::AdapterAddress> = adapters
            .iter()
            .flat_map(|a| &a.addresses)
            .filter(|x| !x.ip.is_loopback())
            .collect();
        if !all.is_empty() && all.iter().all(|x| x.ip.is_link_local()) {
            return Check::fail(
                ID,
                format!("{APIPA_FACT}: no adapter of this host has another"),
                APIPA_REMEDY,
            );
        }
        return Check::pass(ID, choice.describe());
    };
    let Some(a) = adapters.iter().find(|a| &a.name == name) else {
        return Check::pass(ID, choice.describe());
    };
    if !a.addresses.is_empty() && a.addresses.iter().all(|x| x.ip.is_link_local()) {
        let ips: Vec<String> = a.addresses.iter().map(|x| x.ip.to_string()).collect();
        return Check::fail(
            ID,
            format!("{name} holds only {} ({APIPA_FACT})", ips.join(", ")),
            APIPA_REMEDY,
        );
    }
    if a.description.starts_with(LBFO_DESCRIPTION) {
        let refused = build.is_some_and(|b| b >= SERVER_2022);
        let message = format!(
            "{name} is an LBFO team ({}): {}",
            a.description,
            if refused {
                "from Windows Server 2022 on a Hyper-V vSwitch cannot be bound to one, and creating the External network would cut the node off"
            } else {
                "Windows Server 2022 and later refuse a vSwitch on one, and Microsoft no longer develops LBFO with Hyper-V"
            }
        );
        return if refused {
            Check::fail(ID, message, SET_REMEDY)
        } else {
            Check::warn(ID, message, SET_REMEDY)
        };
    }
    Check::pass(ID, choice.describe())
}

/// `default-routes`: two default routes whose metrics (route plus interface metric, as Windows
/// sums them) tie leave the outgoing adapter, and the one HNS binds, to chance
/// (rancher/windows#121).
pub fn default_routes(adapters: &[Adapter], routes: &[Route]) -> Check {
    const ID: &str = "default-routes";
    let mut defaults: Vec<(u32, &Route, &str)> = routes
        .iter()
        .filter(|r| r.prefix_len == 0 && r.destination.is_unspecified())
        .map(|r| {
            let a = adapters.iter().find(|a| a.index == r.interface_index);
            let metric = r.metric.saturating_add(a.map_or(0, |a| a.metric));
            (
                metric,
                r,
                a.map_or("an unknown interface", |a| a.name.as_str()),
            )
        })
        .collect();
    defaults.sort_by_key(|(m, r, _)| (*m, r.interface_index));
    let tied: Vec<String> = defaults
        .windows(2)
        .filter(|w| w[0].0 == w[1].0 && w[0].1.interface_index != w[1].1.interface_index)
        .flat_map(|w| [&w[0], &w[1]])
        .map(|(m, r, name)| format!("via {} on {name} (metric {m})", r.next_hop))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if tied.is_empty() {
        let n = defaults.len();
        return Check::pass(
            ID,
            match n {
                0 => "no default route".to_owned(),
                1 => "one default route".to_owned(),
                _ => format!("{n} default routes, none tied"),
            },
        );
    }
    Check::warn(
        ID,
        format!(
            "default routes tie: {}; which adapter traffic leaves by is left to chance",
            tied.join(", ")
        ),
        "give the adapter that should not carry the default route a higher metric (Set-NetIPInterface -InterfaceMetric), or remove its default route",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn nic(name: &str, index: u32, description: &str, metric: u32) -> Adapter {
        let ip = format!("10.0.0.{index}");
        Adapter {
            description: description.into(),
            metric,
            ..Adapter::for_test(name, index, &format!("00-15-5D-00-00-{index:02X}"), &[&ip])
        }
    }

    fn default_route(index: u32, metric: u32) -> Route {
        Route {
            destination: Ipv4Addr::UNSPECIFIED,
            prefix_len: 0,
            next_hop: Ipv4Addr::new(10, 0, 0, 1),
            interface_index: index,
            metric,
        }
    }

    fn chosen(name: &str) -> Result<Choice, String> {
        Ok(Choice {
            adapter: Some(name.into()),
            why: "it holds 10.0.0.4 (the Node's InternalIP)".into(),
        })
    }

    /// An adapter DHCP never answered holds only its APIPA address: Calico's start-up would
    /// wait for another and fail, so preflight fails it now, with what to do.
    #[test]
    fn an_adapter_with_only_an_apipa_address_fails_with_a_hint() {
        let apipa = Adapter {
            description: "NIC".into(),
            ..Adapter::for_test("Ethernet", 4, "00-15-5D-00-00-04", &["169.254.12.7"])
        };
        let c = adapter(
            &chosen("Ethernet"),
            None,
            std::slice::from_ref(&apipa),
            Some(20348),
        );
        assert_eq!(c.verdict, super::super::Verdict::Fail, "{}", c.message);
        assert!(c.message.contains("169.254.12.7"), "{}", c.message);
        assert!(
            c.remedy
                .as_deref()
                .is_some_and(|r| r.contains("ipconfig /renew"))
        );
        let hns_picks = Ok(Choice {
            adapter: None,
            why: "no node IP and no default route".into(),
        });
        let c = adapter(&hns_picks, None, &[apipa], Some(20348));
        assert_eq!(c.verdict, super::super::Verdict::Fail, "{}", c.message);
        let plain = [nic("Ethernet", 4, "NIC", 15)];
        let c = adapter(&hns_picks, None, &plain, Some(20348));
        assert_eq!(c.verdict, super::super::Verdict::Pass, "{}", c.message);
    }

    #[test]
    fn no_choice_fails_with_its_reason_and_remedy() {
        let c = adapter(
            &Err("no adapter holds 10.0.0.9".into()),
            Some("set vxlan.adapter"),
            &[],
            Some(20348),
        );
        assert_eq!(c.verdict, super::super::Verdict::Fail);
        assert!(
            c.message.contains("no adapter holds 10.0.0.9"),
            "{}",
            c.message
        );
        assert_eq!(c.remedy.as_deref(), Some("set vxlan.adapter"));
    }

    #[test]
    fn default_routes_that_tie_on_summed_metric_are_a_warning() {
        let adapters = [
            nic("Ethernet", 4, "NIC", 15),
            nic("Ethernet 2", 6, "NIC", 10),
        ];
        // 0 + 15 and 5 + 10: a tie Windows cannot break.
        let c = default_routes(&adapters, &[default_route(4, 0), default_route(6, 5)]);
        assert_eq!(c.verdict, super::super::Verdict::Warn, "{}", c.message);
        assert!(
            c.message.contains("on Ethernet (metric 15)")
                && c.message.contains("on Ethernet 2 (metric 15)"),
            "{}",
            c.message
        );
        // 0 + 15 and 0 + 10: Ethernet 2 wins.
        let c = default_routes(&adapters, &[default_route(4, 0), default_route(6, 0)]);
        assert_eq!(c.verdict, super::super::Verdict::Pass, "{}", c.message);
        let c = default_routes(&adapters, &[default_route(4, 0)]);
        assert_eq!(c.verdict, super::super::Verdict::Pass, "{}", c.message);
    }
}
