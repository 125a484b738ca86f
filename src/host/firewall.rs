//! Windows Firewall: its rules and the trait that adds and removes them.

use super::error::HostResult;
use serde::{Deserialize, Serialize};

/// An inbound firewall rule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FirewallRule {
    /// The name the firewall shows (PowerShell's DisplayName; INetFwRule's Name).
    pub name: String,
    pub protocol: Protocol,
    pub local_port: u16,
    pub allow: bool,
    pub enabled: bool,
    /// The firewall profiles it applies in (`NET_FW_PROFILE_TYPE2`: Domain 1, Private 2,
    /// Public 4; `ALL_PROFILES` for every one). A rule of one profile does nothing while the
    /// node's network is in another.
    #[serde(default = "all_profiles")]
    pub profiles: u32,
    /// The remote addresses it lets in, as CIDRs (`INetFwRule::RemoteAddresses`); empty for
    /// any address.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remote_addresses: Vec<String>,
}

/// `NET_FW_PROFILE2_ALL` (icftypes.h): the rule applies in every profile.
pub const ALL_PROFILES: u32 = 0x7FFF_FFFF;
const PROFILE_NAMES: [(u32, &str); 3] = [(1, "Domain"), (2, "Private"), (4, "Public")];

fn all_profiles() -> u32 {
    ALL_PROFILES
}

impl FirewallRule {
    /// Whether the rule lets inbound `protocol` traffic to `port` in, in every profile.
    pub fn opens(&self, protocol: Protocol, port: u16) -> bool {
        self.enabled
            && self.allow
            && self.protocol == protocol
            && self.local_port == port
            && self.profiles & 7 == 7
    }

    /// `INetFwRule::RemoteAddresses` for the rule: `*` (any), or the CIDRs comma-separated
    /// (Microsoft's INetFwRule::RemoteAddresses page: a subnet in prefix or mask notation).
    pub fn remote_addresses_text(&self) -> String {
        if self.remote_addresses.is_empty() {
            "*".into()
        } else {
            self.remote_addresses.join(",")
        }
    }

    /// The remote addresses from `INetFwRule::RemoteAddresses`: `*` is any; a subnet read
    /// back in mask notation (`10.0.0.0/255.0.0.0`) becomes a CIDR again.
    pub fn remote_addresses_from(text: &str) -> Vec<String> {
        text.split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty() && *a != "*")
            .map(|a| match a.split_once('/') {
                Some((ip, mask)) => match mask.parse::<std::net::Ipv4Addr>() {
                    Ok(m) => format!("{ip}/{}", u32::from(m).leading_ones()),
                    Err(_) => a.to_owned(),
                },
                None => a.to_owned(),
            })
            .collect()
    }

    /// The profiles it applies in, in words (`Domain, Private`).
    pub fn profile_names(&self) -> String {
        let names: Vec<&str> = PROFILE_NAMES
            .iter()
            .filter(|(bit, _)| self.profiles & bit != 0)
            .map(|(_, name)| *name)
            .collect();
        if names.is_empty() {
            "none".into()
        } else {
            names.join(", ")
        }
    }
}

/// Whether rules added on this host take effect (`INetFwPolicy2::LocalPolicyModifyState`,
/// `NET_FW_MODIFY_STATE` in icftypes.h, for the profiles in effect now).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FirewallModifyState {
    /// `NET_FW_MODIFY_STATE_OK`: a local rule takes effect.
    #[default]
    Ok,
    /// `NET_FW_MODIFY_STATE_GP_OVERRIDE`: Group Policy overrides local rules; one added here
    /// does not take effect.
    GroupPolicyOverride,
    /// `NET_FW_MODIFY_STATE_INBOUND_BLOCKED`: inbound traffic is blocked whatever the rules
    /// say (the profile's "block all inbound connections").
    InboundBlocked,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    Tcp,
    Udp,
}

/// Windows Firewall rules, by name.
pub trait Firewall {
    fn firewall_rule(&self, name: &str) -> HostResult<Option<FirewallRule>>;
    /// Adds a rule; a taken name is refused with `Exists`.
    fn firewall_add(&self, rule: &FirewallRule) -> HostResult<()>;
    /// Removes a rule; returns whether it existed.
    fn firewall_remove(&self, name: &str) -> HostResult<bool>;
    /// Whether a rule added here takes effect in the profiles in effect now.
    fn firewall_modify_state(&self) -> HostResult<FirewallModifyState>;
}
