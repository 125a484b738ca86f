//! Newtypes that settings are parsed into at the edge, so the core never re-validates strings.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};
use std::str::FromStr;
use std::time::Duration;

/// Why a raw value was rejected: a sentence saying what is allowed.
pub type Rejection = String;

/// A value parsed from its raw text, with a canonical form for display.
pub trait Setting: Sized + fmt::Display {
    /// Parses the raw text of one value.
    fn parse(raw: &str) -> Result<Self, Rejection>;
    /// The canonical value as shown by `config show` and written to rendered files: its
    /// text, unless a number or a switch.
    fn shown(&self) -> serde_json::Value {
        serde_json::Value::String(self.to_string())
    }
}

/// An enum of named choices, parsed in any case (aliases after `|`), shown by its first name.
macro_rules! choice {
    ($(#[$m:meta])* $name:ident, $allowed:literal,
     $($variant:ident => $text:literal $(| $alias:literal)*),+ $(,)?) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum $name { $($variant),+ }

        impl Setting for $name {
            fn parse(raw: &str) -> Result<Self, Rejection> {
                match raw.to_ascii_lowercase().as_str() {
                    $($text $(| $alias)* => Ok(Self::$variant),)+
                    _ => Err($allowed.into()),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(match self { $(Self::$variant => $text),+ })
            }
        }
    };
}

/// `Display` of a newtype: its value's.
macro_rules! display_inner {
    ($($t:ty),+) => {$(
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }
    )+};
}

choice!(
    /// Calico's networking backend (`CALICO_NETWORKING_BACKEND`); `None`: a third-party CNI
    /// plugin, Calico enforces policy only.
    Backend, "allowed: vxlan, windows-bgp (alias bgp), none",
    Vxlan => "vxlan", WindowsBgp => "windows-bgp" | "bgp", None => "none",
);
choice!(
    /// Where Calico keeps its data (`CALICO_DATASTORE_TYPE`).
    Datastore, "allowed: kubernetes, etcdv3",
    Kubernetes => "kubernetes", Etcdv3 => "etcdv3",
);
choice!(
    /// The CNI IPAM plugin (`CNI_IPAM_TYPE`).
    IpamType, "allowed: calico-ipam, host-local",
    CalicoIpam => "calico-ipam", HostLocal => "host-local",
);
choice!(
    /// The container runtime kubelet uses on this node; it decides the CNI directories and
    /// route policy type.
    ContainerRuntime, "allowed: containerd, docker",
    Containerd => "containerd", Docker => "docker",
);
choice!(
    /// The cloud the node runs on, which decides whether CalicoNode restores the metadata route
    /// the vSwitch drops: `auto` probes the metadata services at start-up as Calico's scripts do.
    PlatformChoice, "allowed: auto, bare-metal, ec2, gce, eks, aks",
    Auto => "auto", BareMetal => "bare-metal", Ec2 => "ec2", Gce => "gce", Eks => "eks",
    Aks => "aks",
);

display_inner!(
    Vni,
    Ip,
    LogSeverity,
    MacPrefix,
    Namespace,
    WinPath,
    EtcdEndpoint,
    NetworkPattern,
    Text,
    Domain,
    Port
);

/// A VXLAN network identifier usable on Windows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vni(u32);

impl Vni {
    /// Windows rejects VSIDs below this value.
    pub const MIN: u32 = 4096;
    /// VXLAN VNIs are 24 bits wide.
    pub const MAX: u32 = (1 << 24) - 1;

    pub fn get(self) -> u32 {
        self.0
    }
}

impl Setting for Vni {
    fn parse(raw: &str) -> Result<Self, Rejection> {
        let allowed = || {
            format!(
                "allowed: a whole number from {} to {} (Windows rejects VNIs below {})",
                Vni::MIN,
                Vni::MAX,
                Vni::MIN
            )
        };
        let n: u32 = raw.parse().map_err(|_| allowed())?;
        if (Self::MIN..=Self::MAX).contains(&n) {
            Ok(Self(n))
        } else {
            Err(allowed())
        }
    }
    fn shown(&self) -> serde_json::Value {
        self.0.into()
    }
}

/// The two-byte prefix of pod MAC addresses in VXLAN mode, `xx-xx` in hex, kept upper case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MacPrefix(String);

impl Setting for MacPrefix {
    fn parse(raw: &str) -> Result<Self, Rejection> {
        let b = raw.as_bytes();
        let ok =
            b.len() == 5 && b[2] == b'-' && [0, 1, 3, 4].iter().all(|&i| b[i].is_ascii_hexdigit());
        if !ok {
            return Err("allowed: two hex bytes joined by a dash, like 0E-2A".into());
        }
        // The first byte's lowest bit is the I/G bit (IEEE 802, "individual/group"): set, it
        // makes every pod's MAC a multicast (group) address, which no interface may have.
        let first = u8::from_str_radix(&raw[..2], 16).map_err(|e| e.to_string())?;
        if first & 1 == 1 {
            return Err(format!(
                "{} has the multicast (I/G) bit set in its first byte, so no pod could use the MACs it makes: use an even first byte, like {:02X}-{}",
                raw.to_ascii_uppercase(),
                first & !1,
                raw[3..].to_ascii_uppercase()
            ));
        }
        Ok(Self(raw.to_ascii_uppercase()))
    }
}

/// An IP network in CIDR notation with no host bits set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

impl Setting for Cidr {
    fn parse(raw: &str) -> Result<Self, Rejection> {
        let allowed = "allowed: an IP network in CIDR notation, like 10.96.0.0/12";
        let (a, p) = raw.split_once('/').ok_or(allowed)?;
        let addr = IpAddr::from_str(a).map_err(|_| allowed)?;
        let prefix: u8 = p.parse().map_err(|_| allowed)?;
        let bits = if addr.is_ipv4() { 32 } else { 128 };
        if prefix > bits {
            return Err(format!("{allowed}; the prefix length is at most {bits}"));
        }
        let network = mask(addr, prefix);
        if network != addr {
            return Err(format!(
                "host bits are set; the network is {network}/{prefix}"
            ));
        }
        Ok(Self { addr, prefix })
    }
}

impl Cidr {
    pub fn is_ipv4(&self) -> bool {
        self.addr.is_ipv4()
    }

    /// The prefix length (`/8` is 8).
    pub fn prefix(&self) -> u8 {
        self.prefix
    }
}

/// The network address of `addr/prefix` (`prefix` already checked against the family).
fn mask(addr: IpAddr, prefix: u8) -> IpAddr {
    ipnet::IpNet::new(addr, prefix).map_or(addr, |n| n.network())
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// An IP address (a DNS server).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ip(pub IpAddr);

impl Setting for Ip {
    fn parse(raw: &str) -> Result<Self, Rejection> {
        IpAddr::from_str(raw)
            .map(Self)
            .map_err(|_| "allowed: an IPv4 or IPv6 address, like 10.96.0.10".into())
    }
}

/// How calico-node finds this node's IPv4 address (`IP`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeIp {
    Autodetect,
    /// An address, with the prefix length of its subnet when given (`10.0.0.5/24`), as
    /// calico-node's `IP` takes it (`parseIPEnvironment` reads a CIDR or an IP).
    Fixed(Ipv4Addr, Option<u8>),
}

impl Setting for NodeIp {
    fn parse(raw: &str) -> Result<Self, Rejection> {
        if raw.eq_ignore_ascii_case("autodetect") {
            return Ok(Self::Autodetect);
        }
        let bad = || -> Rejection {
            "allowed: autodetect, or this node's IPv4 address, alone or as ADDRESS/PREFIX like 10.0.0.5/24".into()
        };
        let (addr, prefix) = match raw.split_once('/') {
            Some((a, p)) => {
                let p: u8 = p
                    .parse()
                    .ok()
                    .filter(|p| (1..=32).contains(p) && !raw.contains('+'))
                    .ok_or_else(bad)?;
                (a, Some(p))
            }
            None => (raw, None),
        };
        let ip = Ipv4Addr::from_str(addr).map_err(|_| bad())?;
        if ip.is_unspecified() || ip.is_loopback() || ip.is_multicast() || ip.is_broadcast() {
            return Err(format!("{ip} cannot be a node's address; {}", bad()));
        }
        Ok(Self::Fixed(ip, prefix))
    }
}

impl fmt::Display for NodeIp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Autodetect => f.write_str("autodetect"),
            Self::Fixed(ip, None) => ip.fmt(f),
            Self::Fixed(ip, Some(p)) => write!(f, "{ip}/{p}"),
        }
    }
}

pub use crate::k8s_name::NodeName;

impl Setting for NodeName {
    fn parse(raw: &str) -> Result<Self, Rejection> {
        crate::k8s_name::NodeName::parse(raw)
    }
}

/// A Kubernetes namespace's name: a lower-case DNS-1123 label.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Namespace(pub String);

impl Setting for Namespace {
    fn parse(raw: &str) -> Result<Self, Rejection> {
        if crate::k8s_name::is_label(raw) {
            Ok(Self(raw.to_owned()))
        } else {
            Err("allowed: a namespace's name (a-z, 0-9 and '-', at most 63 characters)".into())
        }
    }
}

/// A duration written as `90s`, `2m`, `1h` or a bare number of seconds (as config.ps1 writes it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeout(pub Duration);

impl Setting for Timeout {
    fn parse(raw: &str) -> Result<Self, Rejection> {
        let allowed = || {
            "allowed: a duration like 90s, 2m or 1h (a bare number means seconds), from 1s to 24h"
                .to_string()
        };
        let (num, unit) = match raw.find(|c: char| !c.is_ascii_digit()) {
            Some(i) => raw.split_at(i),
            None => (raw, "s"),
        };
        let n: u64 = num.parse().map_err(|_| allowed())?;
        let secs = match unit {
            "s" => n,
            "m" => n.saturating_mul(60),
            "h" => n.saturating_mul(3600),
            _ => return Err(allowed()),
        };
        if (1..=86_400).contains(&secs) {
            Ok(Self(Duration::from_secs(secs)))
        } else {
            Err(allowed())
        }
    }
}

impl fmt::Display for Timeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}s", self.0.as_secs())
    }
}

impl Timeout {
    pub fn as_secs(self) -> u64 {
        self.0.as_secs()
    }
}

/// A local absolute Windows path (`C:\...`), kept as written: what services running as
/// LocalSystem run and read from, so nothing that could name another file than it shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WinPath(String);

impl WinPath {
    /// Appends one component with a backslash.
    pub fn join(&self, part: &str) -> WinPath {
        WinPath(format!(
            "{}\\{}",
            self.0.trim_end_matches(['\\', '/']),
            part
        ))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The device names Windows reserves in every directory, with or without an extension
/// (Microsoft's "Naming Files, Paths, and Namespaces").
const DEVICES: &[&str] = &["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"];

fn is_device(component: &str) -> bool {
    let stem = component
        .split('.')
        .next()
        .unwrap_or_default()
        .trim_end_matches(' ')
        .to_ascii_uppercase();
    if DEVICES.contains(&stem.as_str()) {
        return true;
    }
    let port = stem
        .strip_prefix("COM")
        .or_else(|| stem.strip_prefix("LPT"));
    port.is_some_and(|n| {
        let mut c = n.chars();
        matches!((c.next(), c.next()), (Some('0'..='9'), None))
    })
}

/// Characters that reorder how text is shown (Unicode's bidirectional controls): a path
/// holding U+202E can display as `C:\CalicoWindows` while naming another directory.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Why `raw` is not a local absolute path on a drive that a SYSTEM service may use; `None`
/// when it is one.
pub fn local_path_problem(raw: &str) -> Option<String> {
    if raw.starts_with("\\\\") || raw.starts_with("//") {
        return Some(
            "a UNC or device path (\\\\server\\share, \\\\?\\): services running as LocalSystem would run what another machine serves; use a local drive, like C:\\CalicoWindows".into(),
        );
    }
    let b = raw.as_bytes();
    let drive =
        b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && matches!(b[2], b'\\' | b'/');
    if !drive {
        return Some("not an absolute path on a drive, like C:\\CalicoWindows".into());
    }
    if let Some(c) = raw.chars().find(|c| c.is_control() || is_bidi_control(*c)) {
        return Some(format!(
            "it holds the control character U+{:04X}, which can make the path display as another",
            u32::from(c)
        ));
    }
    if let Some(c) = raw[2..]
        .chars()
        .find(|c| matches!(c, ':' | '"' | '*' | '?' | '<' | '>' | '|'))
    {
        return Some(format!("it holds {c:?}, which a Windows file name cannot"));
    }
    for component in raw[3..].split(['\\', '/']).filter(|c| !c.is_empty()) {
        if component == "." || component == ".." {
            return Some(format!(
                "it has a {component:?} component; write the directory it means"
            ));
        }
        if component.ends_with(['.', ' ']) {
            return Some(format!(
                "its component {component:?} ends in a dot or a space, which Windows drops, so the path would name another file"
            ));
        }
        if is_device(component) {
            return Some(format!(
                "its component {component:?} is a device name Windows reserves"
            ));
        }
    }
    None
}

impl Setting for WinPath {
    fn parse(raw: &str) -> Result<Self, Rejection> {
        match local_path_problem(raw) {
            None => Ok(Self(raw.to_owned())),
            Some(why) => Err(format!(
                "allowed: a local absolute Windows path, like C:\\CalicoWindows ({why})"
            )),
        }
    }
}

/// An etcd endpoint URL: `http(s)://host:port`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EtcdEndpoint(String);

impl Setting for EtcdEndpoint {
    fn parse(raw: &str) -> Result<Self, Rejection> {
        let allowed = || {
            "allowed: an etcd URL like https://10.0.0.5:2379 (not a service ClusterIP: the host cannot reach services)".to_string()
        };
        let rest = raw
            .strip_prefix("https://")
            .or_else(|| raw.strip_prefix("http://"))
            .ok_or_else(allowed)?;
        let hostport = rest.trim_end_matches('/');
        let (host, port) = hostport.rsplit_once(':').ok_or_else(allowed)?;
        if host.is_empty() || hostport.contains('/') || port.parse::<u16>().is_err() {
            return Err(allowed());
        }
        Ok(Self(raw.trim_end_matches('/').to_owned()))
    }
}

/// A log level for felix or confd.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogSeverity(&'static str);

impl Setting for LogSeverity {
    fn parse(raw: &str) -> Result<Self, Rejection> {
        const LEVELS: [&str; 7] = [
            "none", "debug", "info", "warning", "error", "fatal", "panic",
        ];
        LEVELS
            .iter()
            .find(|l| l.eq_ignore_ascii_case(raw))
            .map(|l| Self(l))
            .ok_or_else(|| format!("allowed: {}", LEVELS.join(", ")))
    }
}

/// A regular expression matching the HNS network(s) that hold pods (`KUBE_NETWORK`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetworkPattern(String);

impl Setting for NetworkPattern {
    fn parse(raw: &str) -> Result<Self, Rejection> {
        if raw.is_empty() {
            return Err("allowed: a non-empty regular expression, like Calico.*".into());
        }
        // Parsed (to an HIR, as Regex::new does first) but not compiled: Calico's Go code
        // compiles it, and compiling here cost a tenth of every command's time.
        regex_syntax::Parser::new()
            .parse(raw)
            .map(|_| Self(raw.to_owned()))
            .map_err(|e| {
                // The last line of the parser's text says what is wrong.
                let e = e.to_string();
                format!(
                    "not a valid regular expression: {}",
                    e.lines().last().unwrap_or(&e).trim()
                )
            })
    }
}

/// A free-form text value that must stay on one line (it ends up in environment blocks and JSON).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Text(String);

impl Text {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Setting for Text {
    fn parse(raw: &str) -> Result<Self, Rejection> {
        if raw.contains(['\n', '\r', '\0']) {
            Err("allowed: text on a single line".into())
        } else {
            Ok(Self(raw.to_owned()))
        }
    }
}

/// A DNS search domain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Domain(String);

impl Setting for Domain {
    fn parse(raw: &str) -> Result<Self, Rejection> {
        let ok = !raw.is_empty()
            && raw.len() <= 253
            && raw.split('.').all(|l| {
                !l.is_empty()
                    && l.len() <= 63
                    && l.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-')
            });
        if ok {
            Ok(Self(raw.to_ascii_lowercase()))
        } else {
            Err("allowed: a DNS domain, like svc.cluster.local".into())
        }
    }
}

/// A TCP port other than 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Port(pub u16);

impl Setting for Port {
    fn parse(raw: &str) -> Result<Self, Rejection> {
        match raw.parse::<u16>() {
            Ok(p) if p > 0 => Ok(Self(p)),
            _ => Err("allowed: a TCP port, 1 to 65535".into()),
        }
    }
    fn shown(&self) -> serde_json::Value {
        self.0.into()
    }
}

/// A plain true/false switch.
impl Setting for bool {
    fn parse(raw: &str) -> Result<Self, Rejection> {
        match raw.to_ascii_lowercase().as_str() {
            "true" | "yes" | "1" => Ok(true),
            "false" | "no" | "0" => Ok(false),
            _ => Err("allowed: true or false".into()),
        }
    }
    fn shown(&self) -> serde_json::Value {
        (*self).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A MAC prefix is kept upper case; a value refused names the one meant.
    #[test]
    fn mac_prefix_is_normalised_to_upper_case() {
        assert_eq!(
            MacPrefix::parse("0e-2a").map(|m| m.to_string()),
            Ok("0E-2A".into())
        );
        for bad in ["0E2A", "0E-2G", "0E-2A-", "0E:2A"] {
            assert!(MacPrefix::parse(bad).is_err(), "{bad}");
        }
        // The I/G bit (the first byte's lowest) makes a multicast MAC: refused, with the
        // even prefix beside it named.
        let multicast = MacPrefix::parse("0f-2a").expect_err("multicast");
        assert!(multicast.contains("0E-2A"), "{multicast}");
        assert!(MacPrefix::parse("01-00").is_err());
        assert!(MacPrefix::parse("02-00").is_ok());
        // A CIDR with host bits set names its network.
        let err = Cidr::parse("10.96.0.1/12").unwrap_err();
        assert!(err.contains("10.96.0.0/12"), "{err}");
        assert!(Cidr::parse("10.96.0.0/33").is_err());
        assert!(Cidr::parse("fd00::/108").is_ok());
        assert_eq!(
            Cidr::parse("0.0.0.0/0").map(|c| c.to_string()),
            Ok("0.0.0.0/0".into())
        );
    }

    #[test]
    fn windows_paths_must_be_local_absolute_and_name_what_they_show() {
        for good in [
            "C:\\CalicoWindows",
            "D:/k/cni",
            "C:\\Program Files\\containerd\\cni\\bin",
            "C:\\k\\console.log",
            "C:\\k\\COM10",
            "C:\\k\\.hidden",
            "C:\\",
        ] {
            assert!(WinPath::parse(good).is_ok(), "{good}");
        }
        for (bad, why) in [
            ("CalicoWindows", "absolute"),
            ("\\\\srv\\share\\calico", "UNC"),
            ("\\\\?\\C:\\CalicoWindows", "UNC"),
            ("//srv/share", "UNC"),
            ("C:\\CalicoWindows\\..\\Windows", "\"..\""),
            ("C:\\.\\CalicoWindows", "\".\""),
            ("C:\\\u{202E}swodniWocilaC", "U+202E"),
            ("C:\\Calico\u{200F}Windows", "U+200F"),
            ("C:\\Calico\nWindows", "U+000A"),
            ("C:\\CON\\x", "device name"),
            ("C:\\k\\nul.txt", "device name"),
            ("C:\\k\\LPT1", "device name"),
            ("C:\\CalicoWindows.", "dot or a space"),
            ("C:\\CalicoWindows \\x", "dot or a space"),
            ("C:\\k\\file.exe:stream", "':'"),
            ("C:\\k\\a|b", "'|'"),
        ] {
            let err = WinPath::parse(bad).expect_err(bad);
            assert!(err.contains(why), "{bad:?}: {err}");
        }
        assert_eq!(
            WinPath::parse("C:\\k\\").map(|p| p.join("cni").to_string()),
            Ok("C:\\k\\cni".into())
        );
    }

    /// Timeouts take units and bare seconds; etcd endpoints need a scheme, host and port.
    #[test]
    fn timeouts_and_etcd_endpoints() {
        assert_eq!(Timeout::parse("90").map(Timeout::as_secs), Ok(90));
        assert_eq!(Timeout::parse("2m").map(Timeout::as_secs), Ok(120));
        assert!(Timeout::parse("0s").is_err());
        assert!(Timeout::parse("5d").is_err());
        assert!(EtcdEndpoint::parse("https://10.0.0.5:2379").is_ok());
        assert!(EtcdEndpoint::parse("10.0.0.5:2379").is_err());
        assert!(EtcdEndpoint::parse("https://:2379").is_err());
        assert!(EtcdEndpoint::parse("https://etcd:port").is_err());
    }
}
