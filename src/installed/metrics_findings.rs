//! What can leave the metrics ports other than the config says: a firewall rule Felix made for
//! its Prometheus port, open to every address, and CalicoNode's endpoint not listening.

use super::health::{Code, Finding};
use crate::host::{FirewallRule, Protocol};

/// The rule Felix makes for its Prometheus port (calico v3.32.1
/// libcalico-go/lib/winutils/winutils.go `MaybeConfigureWindowsFirewallRules`:
/// `New-NetFirewallRule -DisplayName '<this>' -Direction inbound -Profile Any -Action Allow
/// -LocalPort <PrometheusMetricsPort> -Protocol TCP`, no remote address, no program). Felix
/// makes it, and removes it, only inside a HostProcess container (`InHostProcessContainer`:
/// `CONTAINER_SANDBOX_MOUNT_POINT` set) with `WindowsManageFirewallRules` `Enabled`: an
/// operator-managed node's Felix, never the Felix CalicoFelix runs (a Windows service, whose
/// environment also says `Disabled`). One left by the operator's Felix before `migrate` stays
/// for good: nothing removes it once that Felix is gone.
pub const FELIX_RULE: &str = "Calico Prometheus Ports (calico-managed rule)";

/// Felix's rule, when it lets every address reach its port. calicoctl-win never removes it
/// (it is not ours, and a HostProcess Felix may still want it): it names it, and the remedy
/// removes it by its exact name.
pub fn felix_rule(rule: Option<&FirewallRule>) -> Option<Finding> {
    let r = rule.filter(|r| {
        r.name == FELIX_RULE
            && r.opens(Protocol::Tcp, r.local_port)
            && r.remote_addresses.is_empty()
    })?;
    Some(Finding::new(
        Code::FelixMetricsRule,
        "firewall",
        format!(
            "the firewall rule '{FELIX_RULE}' lets every address reach TCP port {}: a Felix in a HostProcess container (the operator's) made it with windowsManageFirewallRules Enabled, and no Felix calicoctl-win runs removes it",
            r.local_port
        ),
        format!(
            "if no HostProcess Felix runs on this node any more: Remove-NetFirewallRule -DisplayName '{FELIX_RULE}' (calicoctl-win's own rules open the metrics ports to metrics.source_ranges only)"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn felix_made(port: u16) -> FirewallRule {
        FirewallRule {
            name: FELIX_RULE.into(),
            protocol: Protocol::Tcp,
            local_port: port,
            allow: true,
            enabled: true,
            profiles: crate::host::ALL_PROFILES,
            remote_addresses: Vec::new(),
        }
    }

    #[test]
    fn felix_s_rule_open_to_every_address_is_named_and_no_other() {
        let found = felix_rule(Some(&felix_made(9091))).expect("a finding");
        assert_eq!(found.code, Code::FelixMetricsRule);
        assert!(found.message.contains("TCP port 9091"), "{found}");
        assert!(
            found
                .remedy
                .as_deref()
                .is_some_and(|r| r.contains(&format!("-DisplayName '{FELIX_RULE}'"))),
            "{found}"
        );
        // Scoped by an administrator, disabled, or another rule: nothing to say.
        let scoped = FirewallRule {
            remote_addresses: vec!["10.0.0.0/8".into()],
            ..felix_made(9091)
        };
        let disabled = FirewallRule {
            enabled: false,
            ..felix_made(9091)
        };
        let other = FirewallRule {
            name: "Calico Prometheus Ports".into(),
            ..felix_made(9091)
        };
        for r in [scoped, disabled, other] {
            assert_eq!(felix_rule(Some(&r)), None, "{r:?}");
        }
        assert_eq!(felix_rule(None), None);
    }
}
