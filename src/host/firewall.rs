//! Windows Firewall: its rules and the trait that adds and removes them.

use super::error::HostResult;
use serde::{Deserialize, Serialize};

#[path = "firewall_unset.rs"]
mod unset;
pub use unset::{AppContainerScope, EDGE_TRAVERSAL_ALLOW, NotDefault, Unset};

/// A firewall rule (calicoctl-win makes inbound ones only).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FirewallRule {
    /// The name the firewall shows (PowerShell's DisplayName; INetFwRule's Name).
    pub name: String,
    /// `INetFwRule::Description`: `MARKER` on every rule calicoctl-win makes.
    #[serde(default = "marker", skip_serializing_if = "is_marker")]
    pub description: String,
    pub protocol: Protocol,
    /// `INetFwRule::Direction`: inbound or outbound traffic (a rule read back says which).
    #[serde(default, skip_serializing_if = "Direction::is_in")]
    pub direction: Direction,
    /// `INetFwRule::ApplicationName`: the program's full path; none for every program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    pub local_port: u16,
    pub allow: bool,
    pub enabled: bool,
    /// The profiles it applies in (`NET_FW_PROFILE_TYPE2`: Domain 1, Private 2, Public 4).
    #[serde(default = "all_profiles")]
    pub profiles: u32,
    /// The remote addresses it lets in, as CIDRs; empty for any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remote_addresses: Vec<String>,
    /// The properties calicoctl-win does not set, as the firewall holds them (absent in
    /// older records: Windows' defaults).
    #[serde(flatten)]
    pub unset: Unset,
}

/// One `RemoteAddresses` token as compared: bare, prefix and mask notation are one
/// (Microsoft's INetFwRule::put_RemoteAddresses), host bits cleared; IPv6 alone is `/128`; a
/// range, a keyword or a non-prefix mask is kept as written.
pub fn normal_address(token: &str) -> String {
    use std::net::{IpAddr, Ipv4Addr};
    let token = token.trim();
    let (ip, suffix) = token.split_once('/').unwrap_or((token, ""));
    let Ok(ip) = ip.parse::<IpAddr>() else {
        return token.to_owned();
    };
    let full = if ip.is_ipv4() { 32 } else { 128 };
    let prefix = if suffix.is_empty() {
        Some(full)
    } else if let Ok(p) = suffix.parse::<u8>() {
        Some(p)
    } else {
        suffix
            .parse::<Ipv4Addr>()
            .ok()
            .filter(|_| ip.is_ipv4())
            .map(u32::from)
            .filter(|m| m.leading_ones() + m.trailing_zeros() == 32)
            .map(|m| m.leading_ones() as u8)
    };
    match prefix.and_then(|p| ipnet::IpNet::new(ip, p).ok()) {
        Some(net) => format!("{}/{}", net.network(), net.prefix_len()),
        None => token.to_owned(),
    }
}

/// Every IPv4 address, which Windows may read back as `*` (INetFwRule::RemoteAddresses).
const ANY_IPV4: &str = "0.0.0.0/0";

/// The description calicoctl-win gives every rule it makes, which marks it as made by it.
pub const MARKER: &str = "Created by calicoctl-win";

fn marker() -> String {
    MARKER.into()
}

fn is_marker(d: &String) -> bool {
    d == MARKER
}

/// `NET_FW_PROFILE2_ALL` (icftypes.h): the rule applies in every profile.
pub const ALL_PROFILES: u32 = 0x7FFF_FFFF;
const PROFILE_NAMES: [(u32, &str); 3] = [(1, "Domain"), (2, "Private"), (4, "Public")];

fn all_profiles() -> u32 {
    ALL_PROFILES
}

impl FirewallRule {
    /// Whether the rule lets inbound `protocol` traffic to `port` in, in every profile, for
    /// every program, unnarrowed (`Unset::lets_all_in`).
    pub fn opens(&self, protocol: Protocol, port: u16) -> bool {
        self.enabled
            && self.allow
            && self.direction == Direction::In
            && self.program.is_none()
            && self.protocol == protocol
            && self.local_port == port
            && self.profiles & 7 == 7
            && self.unset.lets_all_in()
    }

    /// `INetFwRule::RemoteAddresses` for the rule: `*`, or the CIDRs comma-separated.
    pub fn remote_addresses_text(&self) -> String {
        if self.remote_addresses.is_empty() {
            "*".into()
        } else {
            self.remote_addresses.join(",")
        }
    }

    /// The remote addresses from `INetFwRule::RemoteAddresses`: `*` is any; each token as
    /// `normal_address` has it.
    pub fn remote_addresses_from(text: &str) -> Vec<String> {
        text.split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty() && *a != "*")
            .map(normal_address)
            .collect()
    }

    /// Whether the two rules are the same: every field alike (`key`).
    pub fn same(&self, other: &FirewallRule) -> bool {
        self.key() == other.key()
    }

    /// The rule as compared: name and program in any case, remote addresses as a set of
    /// `normal_address` tokens, the unset properties by `Unset::key`, the rest as it is.
    fn key(&self) -> impl PartialEq + '_ {
        let FirewallRule {
            name,
            description,
            protocol,
            direction,
            program,
            local_port,
            allow,
            enabled,
            profiles,
            remote_addresses,
            unset,
        } = self;
        let mut remote: Vec<String> = remote_addresses.iter().map(|a| normal_address(a)).collect();
        if remote.iter().any(|a| a == ANY_IPV4) {
            remote.clear();
        }
        remote.sort_unstable();
        remote.dedup();
        (
            (
                name.to_ascii_lowercase(),
                description,
                *protocol,
                *direction,
            ),
            program.as_deref().map(str::to_ascii_lowercase),
            (*local_port, *allow, *enabled, *profiles),
            remote,
            unset.key(),
        )
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

/// Whether rules added here take effect (`INetFwPolicy2::LocalPolicyModifyState`, icftypes.h).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FirewallModifyState {
    /// `NET_FW_MODIFY_STATE_OK`: a local rule takes effect.
    #[default]
    Ok,
    /// `NET_FW_MODIFY_STATE_GP_OVERRIDE`: Group Policy overrides local rules.
    GroupPolicyOverride,
    /// `NET_FW_MODIFY_STATE_INBOUND_BLOCKED`: all inbound traffic blocked.
    InboundBlocked,
}

/// `INetFwRule::Protocol`: an IANA number (TCP 6, UDP 17), or any (`NET_FW_IP_PROTOCOL_ANY`, 256).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    Tcp,
    Udp,
    Any,
    /// Another protocol, by its number (ICMP 1, GRE 47, ...).
    Other(i32),
}

impl Protocol {
    /// The protocol of `INetFwRule::Protocol`'s number.
    pub fn from_number(n: i32) -> Self {
        match n {
            6 => Self::Tcp,
            17 => Self::Udp,
            256 => Self::Any,
            n => Self::Other(n),
        }
    }

    /// Its number for `INetFwRule::Protocol`.
    pub fn number(self) -> i32 {
        match self {
            Self::Tcp => 6,
            Self::Udp => 17,
            Self::Any => 256,
            Self::Other(n) => n,
        }
    }
}

/// `INetFwRule::Direction` (`NET_FW_RULE_DIRECTION`, icftypes.h: in 1, out 2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    #[default]
    In,
    Out,
}

impl Direction {
    fn is_in(&self) -> bool {
        *self == Direction::In
    }
}

/// Whether `rules` (all of one name) are exactly the rule `made`, alone: only then is it ours
/// to keep or remove.
pub fn only(rules: &[FirewallRule], made: &FirewallRule) -> bool {
    matches!(rules, [one] if one.same(made))
}

/// Whether `rules` of a made rule's name are ours to remove: `only` it; with `made` unknown (an
/// older journal), the one rule of the name carrying `MARKER`. The one judge of every removal.
pub fn ours(rules: &[FirewallRule], made: Option<&FirewallRule>) -> bool {
    match made {
        Some(made) => only(rules, made),
        None => matches!(rules, [one] if one.description == MARKER),
    }
}

/// The warning of a made rule left because its name holds something else than it alone.
pub fn kept(name: &str, rules: &[FirewallRule]) -> String {
    format!(
        "kept the firewall rule '{name}': the firewall holds {} now (an administrator's rule of that name, or ours changed since), left as it is; remove it yourself if it is not wanted (Get-NetFirewallRule -DisplayName '{name}')",
        held(rules)
    )
}

/// What the firewall holds under a name that is not one rule as made, in words for a
/// finding.
pub fn held(rules: &[FirewallRule]) -> String {
    match rules.len() {
        0 => "no rule of that name".into(),
        1 => "one rule of that name, not as calicoctl-win made it".into(),
        n => format!("{n} rules of that name"),
    }
}

/// Windows Firewall rules, by the name the firewall shows; several may share a name
/// (PowerShell's New-NetFirewallRule: only `-Name`, the ID, is unique).
pub trait Firewall {
    /// Every rule of this name (any case), in the firewall's order.
    fn firewall_rules(&self, name: &str) -> HostResult<Vec<FirewallRule>>;
    /// One rule of this name, the first (as `INetFwRules::Item` gives): for reading only,
    /// never for deciding whether a rule is ours.
    fn firewall_rule(&self, name: &str) -> HostResult<Option<FirewallRule>> {
        Ok(self.firewall_rules(name)?.into_iter().next())
    }
    /// Adds a rule; a taken name is `Exists` (Windows would add a second).
    fn firewall_add(&self, rule: &FirewallRule) -> HostResult<()>;
    /// Removes the one rule of this name; returns whether there was one. Refused while several
    /// have the name: `INetFwRules::Remove` does not say which it takes.
    fn firewall_remove(&self, name: &str) -> HostResult<bool>;
    /// Whether a rule added here takes effect in the profiles in effect now.
    fn firewall_modify_state(&self) -> HostResult<FirewallModifyState>;
}

/// The refusal of a removal by name while `count` rules have the name.
pub fn several(name: &str, count: usize) -> super::error::HostError {
    super::error::HostError::refused(
        format!("remove firewall rule {name}"),
        format!(
            "{count} rules have that name, and removal by name cannot choose one of them: none removed"
        ),
    )
}

#[cfg(test)]
#[path = "firewall_tests.rs"]
mod tests;
