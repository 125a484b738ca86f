//! The properties of a firewall rule calicoctl-win never sets, as the firewall holds them.

use super::normal_address;
use serde::{Deserialize, Serialize};

/// `NET_FW_EDGE_TRAVERSAL_TYPE_ALLOW` (icftypes.h; `_DENY` 0, `_DEFER_TO_APP` 2, `..._USER` 3).
pub const EDGE_TRAVERSAL_ALLOW: i32 = 1;

/// The `INetFwRule` properties calicoctl-win never sets, read so a rule an administrator
/// tightened is judged changed and kept, and one put back is as read. `Default` is Windows'
/// (checked by `a_fresh_rule_reads_back_the_defaults_relied_on`); defaults are not recorded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Unset {
    /// `INetFwRule::LocalAddresses`: "\"*\" is the default value", any local address.
    #[serde(skip_serializing_if = "is_star")]
    pub local_addresses: String,
    /// `INetFwRule::RemotePorts`: `*` when none was set (the Windows workflow reads it back).
    #[serde(skip_serializing_if = "is_star")]
    pub remote_ports: String,
    /// `INetFwRule::InterfaceTypes`: `All` when none was set (New-NetFirewallRule
    /// `-InterfaceType`: "The default value is Any").
    #[serde(skip_serializing_if = "is_all")]
    pub interface_types: String,
    /// `INetFwRule::EdgeTraversal`: "disabled by default" (its page).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub edge_traversal: bool,
    /// `INetFwRule::Grouping`, the console's group: none unless set.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub grouping: String,
    /// `INetFwRule::ServiceName`, the one service it lets in: none unless set (`*`: any).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub service_name: String,
    /// `INetFwRule::Interfaces` by friendly name: none is every interface.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub interfaces: Vec<String>,
    /// `INetFwRule2::EdgeTraversalOptions`: `_DENY` (0) by default.
    #[serde(skip_serializing_if = "is_zero")]
    pub edge_traversal_options: i32,
    /// INetFwRule3's properties (Windows 8, Server 2012 on: its page).
    #[serde(flatten)]
    pub app_container: AppContainerScope,
}

/// The properties of `INetFwRule3`, each narrowing whom a rule lets in; none set by default
/// (New-NetFirewallRule: "Default value: None"; `SecureFlags` 0, NET_FW_AUTHENTICATE_NONE).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AppContainerScope {
    /// `LocalAppPackageId`: the package or app container whose traffic alone it lets in.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub local_app_package_id: String,
    /// `LocalUserOwner`: the SID of the rule's owner.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub local_user_owner: String,
    /// `LocalUserAuthorizedList`: "a list of authorized local users for an app container".
    #[serde(skip_serializing_if = "String::is_empty")]
    pub local_user_authorized_list: String,
    /// `RemoteUserAuthorizedList`: remote users authorized to reach an app container.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub remote_user_authorized_list: String,
    /// `RemoteMachineAuthorizedList`: remote computers authorized to reach an app container.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub remote_machine_authorized_list: String,
    /// `SecureFlags` (`NET_FW_AUTHENTICATE_TYPE`): the IPsec protection traffic needs
    /// ([MS-FASP] 2.2.35).
    #[serde(skip_serializing_if = "is_zero")]
    pub secure_flags: i32,
}

impl AppContainerScope {
    /// Whether every property is at its default (`Default`), as compared (`key`).
    pub fn is_default(&self) -> bool {
        self.key() == AppContainerScope::default().key() && self.secure_flags == 0
    }

    /// The properties as compared: each string trimmed (an SDDL string or SID as written).
    fn key(&self) -> [&str; 5] {
        [
            self.local_app_package_id.trim(),
            self.local_user_owner.trim(),
            self.local_user_authorized_list.trim(),
            self.remote_user_authorized_list.trim(),
            self.remote_machine_authorized_list.trim(),
        ]
    }
}

impl Default for Unset {
    fn default() -> Self {
        Self {
            local_addresses: "*".into(),
            remote_ports: "*".into(),
            interface_types: "All".into(),
            edge_traversal: false,
            grouping: String::new(),
            service_name: String::new(),
            interfaces: Vec::new(),
            edge_traversal_options: 0,
            app_container: AppContainerScope::default(),
        }
    }
}

fn is_star(s: &str) -> bool {
    s == "*"
}

fn is_all(s: &str) -> bool {
    s.eq_ignore_ascii_case("all")
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

/// A comma-separated list as a sorted set of trimmed, lower-case tokens, addresses as
/// `normal_address` has them; empty is `empty`.
fn token_set(text: &str, empty: &str) -> Vec<String> {
    let mut v: Vec<String> = text
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| normal_address(t).to_ascii_lowercase())
        .collect();
    if v.is_empty() {
        v.push(empty.into());
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// Which of `Unset`'s properties are not at Windows' default: what a rule put back sets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NotDefault {
    pub local_addresses: bool,
    pub remote_ports: bool,
    pub interface_types: bool,
    /// Edge traversal other than denied, through `EdgeTraversal` or `EdgeTraversalOptions`.
    pub edge_traversal: bool,
    pub grouping: bool,
    pub service_name: bool,
    pub interfaces: bool,
    /// Any of INetFwRule3's properties (`AppContainerScope`).
    pub app_container: bool,
}

/// `Unset` as compared (`Unset::key`).
pub(super) type UnsetKey<'a> = (
    [Vec<String>; 3],
    i32,
    (&'a str, String),
    Vec<String>,
    ([&'a str; 5], i32),
);

impl Unset {
    /// Which fields are not at the default, as `key` compares them (`""`, `" * "` are `*`).
    pub fn not_default(&self) -> NotDefault {
        let (a, b) = (self.key(), Unset::default());
        let d = b.key();
        NotDefault {
            local_addresses: a.0[0] != d.0[0],
            remote_ports: a.0[1] != d.0[1],
            interface_types: a.0[2] != d.0[2],
            edge_traversal: a.1 != d.1,
            grouping: a.2.0 != d.2.0,
            service_name: a.2.1 != d.2.1,
            interfaces: a.3 != d.3,
            app_container: a.4 != d.4,
        }
    }

    /// The edge traversal as one `NET_FW_EDGE_TRAVERSAL_TYPE`: the options when they say more
    /// than denied, else `_ALLOW` or `_DENY` from `edge_traversal`.
    pub fn edge(&self) -> i32 {
        if self.edge_traversal_options != 0 {
            self.edge_traversal_options
        } else {
            i32::from(self.edge_traversal)
        }
    }

    /// Whether they let in what a rule without them does on a node's network: any local
    /// address and remote port (VXLAN's source port is a hash, RFC 7348 section 5), no service,
    /// interface types `All` or with `Lan`, every interface, no INetFwRule3 property.
    pub fn lets_all_in(&self) -> bool {
        let ([local, remote, types], ..) = self.key();
        local == ["*"]
            && remote == ["*"]
            && self.service_name.trim().is_empty()
            && types.iter().any(|t| t == "all" || t == "lan")
            && self.interfaces.iter().all(|i| i.trim().is_empty())
            && self.app_container.is_default()
    }

    /// The fields as compared: lists as sets, the service name in any case, interfaces as a
    /// set of trimmed names, edge traversal as one value.
    pub(super) fn key(&self) -> UnsetKey<'_> {
        let mut interfaces: Vec<String> = self
            .interfaces
            .iter()
            .map(|i| i.trim().to_owned())
            .filter(|i| !i.is_empty())
            .collect();
        interfaces.sort_unstable();
        interfaces.dedup();
        (
            [
                token_set(&self.local_addresses, "*"),
                token_set(&self.remote_ports, "*"),
                token_set(&self.interface_types, "all"),
            ],
            self.edge(),
            (
                self.grouping.as_str(),
                self.service_name.to_ascii_lowercase(),
            ),
            interfaces,
            (self.app_container.key(), self.app_container.secure_flags),
        )
    }
}
