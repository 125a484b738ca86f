//! An adapter's IPv4 settings made through WMI's `Win32_NetworkAdapterConfiguration` methods
//! (`EnableStatic`, `SetDNSServerSearchOrder`, `SetDNSDomain`), which tell the DHCP and DNS
//! clients; the registry's TCP/IP parameters take effect only after a renew or restart.

use std::net::Ipv4Addr;

/// One setting made on an interface.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AdapterSetting {
    /// `EnableStatic`: DHCP off, these addresses (with prefix lengths) static.
    Static(Vec<(Ipv4Addr, u8)>),
    /// `SetDNSServerSearchOrder`: the DNS servers, in order.
    DnsServers(Vec<Ipv4Addr>),
    /// `SetDNSDomain`: the connection's DNS suffix.
    DnsSuffix(String),
}

/// An argument of a WMI method: a string or an array of strings (`string[]` in the MOF).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WmiArg {
    Text(String),
    List(Vec<String>),
}

/// A `Win32_NetworkAdapterConfiguration` method and its named arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WmiCall {
    pub method: &'static str,
    pub args: Vec<(&'static str, WmiArg)>,
}

/// The class whose instance, the one with the interface's `InterfaceIndex`, is called.
pub const WMI_CLASS: &str = "Win32_NetworkAdapterConfiguration";

/// The query that finds the interface's instance.
pub fn wmi_query(index: u32) -> String {
    format!("SELECT * FROM {WMI_CLASS} WHERE InterfaceIndex = {index}")
}

/// A prefix length as the dotted mask `EnableStatic`'s `SubnetMask` takes.
pub fn mask(prefix_len: u8) -> Ipv4Addr {
    let p = u32::from(prefix_len.min(32));
    Ipv4Addr::from(u32::MAX.checked_shl(32 - p).unwrap_or(0))
}

impl AdapterSetting {
    /// The call that makes it; an empty `Static` is refused (`EnableStatic` needs an address).
    pub fn wmi_call(&self) -> Result<WmiCall, String> {
        let list = |v: &[Ipv4Addr]| WmiArg::List(v.iter().map(Ipv4Addr::to_string).collect());
        Ok(match self {
            Self::Static(addresses) => {
                if addresses.is_empty() {
                    return Err("no static address to set (EnableStatic needs one)".into());
                }
                let ips: Vec<Ipv4Addr> = addresses.iter().map(|(ip, _)| *ip).collect();
                let masks: Vec<Ipv4Addr> = addresses.iter().map(|(_, p)| mask(*p)).collect();
                WmiCall {
                    method: "EnableStatic",
                    args: vec![("IPAddress", list(&ips)), ("SubnetMask", list(&masks))],
                }
            }
            Self::DnsServers(servers) => WmiCall {
                method: "SetDNSServerSearchOrder",
                args: vec![("DNSServerSearchOrder", list(servers))],
            },
            Self::DnsSuffix(suffix) => WmiCall {
                method: "SetDNSDomain",
                args: vec![("DNSDomain", WmiArg::Text(suffix.clone()))],
            },
        })
    }
}

/// What a method's `ReturnValue` means: 0 done, 1 done with a reboot required (the caller
/// reads the setting back), the rest an error.
pub fn wmi_result(method: &str, code: u32) -> Result<(), String> {
    let why = match code {
        0 | 1 => return Ok(()),
        64 => "method not supported on this platform",
        65 => "unknown failure",
        66 => "invalid subnet mask",
        68 => "invalid input parameter",
        70 => "invalid IP address",
        72 => "an error occurred while accessing the registry",
        73 => "invalid domain name",
        80 => "unable to configure TCP/IP service",
        81 => "unable to configure DHCP service",
        84 => "IP not enabled on adapter",
        90 => "parameter out of bounds",
        91 => "access denied",
        92 => "out of memory",
        95 => "unable to notify service",
        96 => "unable to notify DNS service",
        97 => "interface not configurable",
        _ => "",
    };
    Err(if why.is_empty() {
        format!("{WMI_CLASS}.{method} returned {code}")
    } else {
        format!("{WMI_CLASS}.{method} returned {code} ({why})")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_setting_is_the_documented_method_with_its_arguments() {
        let ip = |s: &str| s.parse::<Ipv4Addr>().expect("ip");
        let list = |v: &[&str]| WmiArg::List(v.iter().map(|s| (*s).to_owned()).collect());
        let statics = vec![(ip("10.0.0.6"), 24), (ip("10.1.0.6"), 16)];
        for (setting, method, args) in [
            (
                AdapterSetting::Static(statics),
                "EnableStatic",
                vec![
                    ("IPAddress", list(&["10.0.0.6", "10.1.0.6"])),
                    ("SubnetMask", list(&["255.255.255.0", "255.255.0.0"])),
                ],
            ),
            (
                AdapterSetting::DnsServers(vec![ip("10.0.0.2"), ip("10.0.0.3")]),
                "SetDNSServerSearchOrder",
                vec![("DNSServerSearchOrder", list(&["10.0.0.2", "10.0.0.3"]))],
            ),
            (
                AdapterSetting::DnsSuffix("corp.example".into()),
                "SetDNSDomain",
                vec![("DNSDomain", WmiArg::Text("corp.example".into()))],
            ),
        ] {
            assert_eq!(setting.wmi_call(), Ok(WmiCall { method, args }));
        }
        assert!(AdapterSetting::Static(Vec::new()).wmi_call().is_err());
        assert_eq!(
            wmi_query(7),
            "SELECT * FROM Win32_NetworkAdapterConfiguration WHERE InterfaceIndex = 7"
        );
    }

    #[test]
    fn masks_and_return_values_read_as_documented() {
        assert_eq!(mask(0), Ipv4Addr::UNSPECIFIED);
        assert_eq!(mask(23), Ipv4Addr::new(255, 255, 254, 0));
        assert_eq!(mask(32), Ipv4Addr::BROADCAST);
        assert!(wmi_result("SetDNSDomain", 0).is_ok());
        assert!(wmi_result("SetDNSDomain", 1).is_ok());
        assert_eq!(
            wmi_result("EnableStatic", 91).expect_err("refused"),
            "Win32_NetworkAdapterConfiguration.EnableStatic returned 91 (access denied)"
        );
        assert_eq!(
            wmi_result("EnableStatic", 4242).expect_err("refused"),
            "Win32_NetworkAdapterConfiguration.EnableStatic returned 4242"
        );
    }
}
