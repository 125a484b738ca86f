//! Host checks: what the Windows node must offer before Calico is installed.

use super::Check;
use crate::config::Config;
use crate::config::types::Backend;
use crate::host::runtime::{RuntimeFacts, same_dir};
use crate::host::{
    FirewallRule, HnsNetwork, Host, HostError, InstalledService, Protocol, RegValue, ServiceState,
    StartType, SystemFacts, split_command_line,
};
use crate::installed::legacy::is_legacy_service;
use crate::installed::protection::{protect_command, reparse_points, weak_dirs};
use crate::layout::CALICO_SCRIPT_VXLAN_RULE;
use crate::layout::VXLAN_RULE;

const SCHANNEL_TLS12_CLIENT: &str =
    r"HKLM\SYSTEM\CurrentControlSet\Control\SecurityProviders\SCHANNEL\Protocols\TLS 1.2\Client";
const DOTNET_4: &str = r"HKLM\SOFTWARE\Microsoft\.NETFramework\v4.0.30319";

/// Everything the host checks look at, read once.
#[derive(Debug)]
pub struct HostSnapshot {
    pub system: Result<SystemFacts, String>,
    pub tls12_client_enabled: Option<u32>,
    pub tls12_client_disabled_by_default: Option<u32>,
    pub dotnet_strong_crypto: Option<u32>,
    /// HNS networks; `Err` with the reason when HNS cannot be used.
    pub hns: Result<Vec<HnsNetwork>, String>,
    pub runtime: Result<Option<RuntimeFacts>, String>,
    /// The runtime's version as the Node reports it (`status.nodeInfo.containerRuntimeVersion`,
    /// `containerd://1.7.20`), set by the command that read the cluster.
    pub runtime_version: Option<String>,
    pub remote_access: Option<InstalledService>,
    /// The VXLAN rules found; `Err` with the reason when the firewall cannot be read.
    pub vxlan_rules: Result<Vec<FirewallRule>, String>,
    /// Whether a rule added here takes effect (Group Policy may override local rules).
    pub firewall_modify_state: Result<crate::host::FirewallModifyState, String>,
    pub flanneld: Option<InstalledService>,
    /// CalicoNode and CalicoFelix as registered now.
    pub calico_services: Vec<InstalledService>,
    pub kubelet_service: Option<InstalledService>,
    /// `Parameters\AppParameters` of kubelet's service key: what NSSM runs for it.
    pub kubelet_app_parameters: Option<String>,
    pub kubelet_pid: Option<u32>,
    /// kube-proxy's service, its network setting and Calico's source VIP endpoint.
    pub kube_proxy: super::kube_proxy::KubeProxyFacts,
    /// When the facts were read (Unix seconds): the day containerd's support is judged on.
    pub now: i64,
    /// The network adapters and the routing table (`adapter`, `default-routes`).
    pub adapters: Result<Vec<crate::host::Adapter>, String>,
    pub routes: Result<Vec<crate::host::Route>, String>,
}

fn dword(h: &dyn Host, key: &str, name: &str) -> Option<u32> {
    match h.reg_get(key, name) {
        Ok(Some(RegValue::Dword(v))) => Some(v),
        _ => None,
    }
}

/// Reads the facts. Reading never fails as a whole: what cannot be read is recorded.
pub fn snapshot(h: &dyn Host) -> HostSnapshot {
    let text = |e: HostError| e.to_string();
    let service = |name: &str| h.service_query(name).ok().flatten();
    // A rule that cannot be read is not a rule that is missing: the error is kept. Every
    // rule of each name: Windows keeps several of one name side by side.
    let vxlan_rules = [VXLAN_RULE, CALICO_SCRIPT_VXLAN_RULE]
        .into_iter()
        .map(|name| h.firewall_rules(name))
        .collect::<Result<Vec<_>, _>>()
        .map(|r| r.concat())
        .map_err(text);
    HostSnapshot {
        system: h.system_facts().map_err(text),
        tls12_client_enabled: dword(h, SCHANNEL_TLS12_CLIENT, "Enabled"),
        tls12_client_disabled_by_default: dword(h, SCHANNEL_TLS12_CLIENT, "DisabledByDefault"),
        dotnet_strong_crypto: dword(h, DOTNET_4, "SchUseStrongCrypto"),
        hns: h.hns_networks().map_err(text),
        runtime: crate::host::runtime::detect(h).map_err(text),
        runtime_version: None,
        remote_access: service("RemoteAccess"),
        vxlan_rules,
        firewall_modify_state: h.firewall_modify_state().map_err(text),
        flanneld: service("flanneld"),
        calico_services: ["CalicoNode", "CalicoFelix"]
            .into_iter()
            .filter_map(service)
            .collect(),
        kubelet_service: service("kubelet"),
        kubelet_app_parameters: kubelet_app_parameters(h),
        kubelet_pid: h.process_pid("kubelet.exe").ok().flatten(),
        kube_proxy: kube_proxy_facts(h),
        now: crate::duration::now(),
        adapters: h.adapters().map_err(text),
        routes: h.routes().map_err(text),
    }
}

/// What NSSM runs for the kubelet service: its `AppParameters`.
fn kubelet_app_parameters(h: &dyn Host) -> Option<String> {
    let key = r"HKLM\SYSTEM\CurrentControlSet\Services\kubelet\Parameters";
    match h.reg_get(key, "AppParameters") {
        Ok(Some(RegValue::Sz(s) | RegValue::ExpandSz(s))) => Some(s),
        _ => None,
    }
}

/// Where Windows keeps a service's environment (`REG_MULTI_SZ` of `NAME=VALUE`).
const KUBE_PROXY_KEY: &str = r"HKLM\SYSTEM\CurrentControlSet\Services\kube-proxy";

pub fn kube_proxy_facts(h: &dyn Host) -> super::kube_proxy::KubeProxyFacts {
    let kube_network_env = match h.reg_get(KUBE_PROXY_KEY, "Environment") {
        Ok(Some(RegValue::MultiSz(vars))) => vars
            .iter()
            .find_map(|v| v.strip_prefix("KUBE_NETWORK=").map(str::to_owned)),
        _ => None,
    };
    let calico_network = h
        .hns_networks()
        .is_ok_and(|nets| nets.iter().any(|n| n.name == crate::layout::CALICO_NETWORK));
    super::kube_proxy::KubeProxyFacts {
        service: h.service_query("kube-proxy").ok().flatten(),
        kube_network_env,
        calico_network,
        source_vip_endpoint: super::kube_proxy::source_vip_endpoint(h).ok().flatten(),
        os_build: h
            .system_facts()
            .ok()
            .map(|f| crate::render::facts::OsBuild {
                build: f.build,
                ubr: f.ubr.unwrap_or(0),
            }),
        // The Node's, set by the command that read the cluster.
        version: None,
        node_reported: false,
    }
}

/// The ids of the host checks, in the order they are shown.
pub const IDS: &[&str] = &[
    "os-build",
    "arch",
    "elevation",
    "tls12",
    "hns",
    "container-runtime",
    "cni-dirs",
    "remote-access",
    "firewall-vxlan",
    "foreign-cni",
    "node-name",
    "kube-proxy",
    "dir-access",
    "adapter",
    "default-routes",
];

/// The checks of the adapter the External vSwitch binds (`checks::adapter`), given the choice
/// (`plan::desired::choose_uplink`) or why there is none and its remedy.
pub fn adapter_checks(
    s: &HostSnapshot,
    c: &Config,
    choice: &Result<crate::host::uplink::Choice, String>,
    remedy: Option<&str>,
) -> Vec<Check> {
    let both = |check: &dyn Fn(&'static str) -> Check| {
        ["adapter", "default-routes"]
            .into_iter()
            .map(check)
            .collect()
    };
    if c.backend == Backend::None {
        return both(&|id| Check::skip(id, "the none backend makes no vSwitch"));
    }
    let (adapters, routes) = match (&s.adapters, &s.routes) {
        (Ok(a), Ok(r)) => (a, r),
        (Err(e), _) | (_, Err(e)) => {
            return both(&|id| {
                Check::fail(
                    id,
                    format!("the network adapters or routes cannot be read: {e}"),
                    "run elevated on the node; the IP helper API must answer",
                )
            });
        }
    };
    let build = s.system.as_ref().ok().map(|f| f.build);
    vec![
        super::adapter::adapter(choice, remedy, adapters, build),
        super::adapter::default_routes(adapters, routes),
    ]
}

/// Every host check, in the order of `IDS`.
pub fn evaluate(s: &HostSnapshot, c: &Config) -> Vec<Check> {
    vec![
        os_build(s),
        arch(s),
        elevation(s),
        tls12(s),
        hns(s),
        container_runtime(s, c),
        cni_dirs(s, c),
        remote_access(s, c),
        firewall_vxlan(s, c),
        foreign_cni(s),
        node_name(s, c),
        super::kube_proxy::check(&s.kube_proxy, c),
    ]
}

/// The supported Windows Server builds (docs/commands/preflight.md has the same table); what
/// breaks at some updates is in `known_issues.rs`.
pub const SUPPORTED_BUILDS: &[(u32, &str, Option<u32>)] = &[
    (17763, "Windows Server 2019 (1809)", Some(1432)),
    (18362, "Windows Server 1903", None),
    (18363, "Windows Server 1909", None),
    (19041, "Windows Server 2004", None),
    (19042, "Windows Server 20H2", None),
    (20348, "Windows Server 2022", Some(169)),
    (26100, "Windows Server 2025", None),
];

fn os_build(s: &HostSnapshot) -> Check {
    const ID: &str = "os-build";
    let sys = match &s.system {
        Ok(sys) => sys,
        Err(e) => {
            return Check::fail(
                ID,
                format!("cannot read the Windows version: {e}"),
                "run on a Windows Server node",
            );
        }
    };
    if sys.installation_type.as_deref() == Some("Client") {
        return Check::fail(
            ID,
            format!(
                "build {} is a Windows client, not Windows Server",
                sys.build
            ),
            "install Calico on Windows Server 2019, 2022 or 2025",
        );
    }
    let Some((_, release, min_ubr)) = SUPPORTED_BUILDS.iter().find(|(b, _, _)| *b == sys.build)
    else {
        return Check::fail(
            ID,
            format!(
                "Windows build {} is not supported by Calico for Windows",
                sys.build
            ),
            "use Windows Server 2019 (17763.1432+), 2022 (20348.169+) or 2025; see docs/commands/preflight.md",
        );
    };
    match (min_ubr, sys.ubr) {
        (Some(min), Some(ubr)) if ubr < *min => Check::fail(
            ID,
            format!(
                "{release} build {}.{ubr} is older than {}.{min}, the first with the fixes Calico needs (DSR)",
                sys.build, sys.build
            ),
            format!(
                "install the latest cumulative update (at least {}.{min}) and reboot",
                sys.build
            ),
        ),
        (Some(min), None) => Check::warn(
            ID,
            format!(
                "{release} build {}: the update revision (UBR) is unknown, so {}.{min} or later cannot be confirmed",
                sys.build, sys.build
            ),
            format!(
                "confirm with 'Get-ItemProperty \"HKLM:\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion\" UBR' that UBR >= {min}"
            ),
        ),
        (_, ubr) => Check::pass(
            ID,
            format!(
                "{release}, build {}{}",
                sys.build,
                ubr.map(|u| format!(".{u}")).unwrap_or_default()
            ),
        ),
    }
}

fn arch(s: &HostSnapshot) -> Check {
    match &s.system {
        Ok(sys) if sys.is_64bit => Check::pass("arch", "64-bit Windows"),
        Ok(_) => Check::fail(
            "arch",
            "32-bit Windows",
            "Calico for Windows needs 64-bit Windows Server",
        ),
        Err(e) => Check::fail(
            "arch",
            format!("cannot read the architecture: {e}"),
            "run on a Windows Server node",
        ),
    }
}

fn elevation(s: &HostSnapshot) -> Check {
    match &s.system {
        Ok(sys) if sys.elevated => Check::pass("elevation", "running elevated (as administrator)"),
        _ => Check::fail(
            "elevation",
            "not running elevated: installing services, HNS networks and firewall rules needs administrator rights",
            "start PowerShell with 'Run as administrator' and run the command again",
        ),
    }
}

fn tls12(s: &HostSnapshot) -> Check {
    const ID: &str = "tls12";
    let advisory = match s.dotnet_strong_crypto {
        Some(1) => "",
        _ => {
            "; advisory: .NET SchUseStrongCrypto is not set, so old PowerShell scripts may fall back to TLS 1.0"
        }
    };
    // Schannel's settings bind only programs that use Schannel: calicoctl-win's TLS is rustls
    // and Calico's is Go's crypto/tls, each with TLS 1.2 and 1.3 of its own, so neither needs
    // it; Windows tools (PowerShell's Invoke-WebRequest, .NET) do.
    if s.tls12_client_enabled == Some(0) || s.tls12_client_disabled_by_default == Some(1) {
        return Check::warn(
            ID,
            "TLS 1.2 is disabled for Schannel clients (SCHANNEL\\Protocols\\TLS 1.2\\Client): calicoctl-win (rustls) and Calico (Go's crypto/tls) do not use Schannel and are not affected, but Windows tools such as PowerShell downloads are",
            format!(
                "reg add \"{SCHANNEL_TLS12_CLIENT}\" /v Enabled /t REG_DWORD /d 1 /f; reg add \"{SCHANNEL_TLS12_CLIENT}\" /v DisabledByDefault /t REG_DWORD /d 0 /f; then reboot"
            ),
        );
    }
    let how = if s.tls12_client_enabled.is_some() {
        "enabled in SCHANNEL"
    } else {
        "enabled (OS default)"
    };
    Check::pass(ID, format!("TLS 1.2 {how}{advisory}"))
}

fn hns(s: &HostSnapshot) -> Check {
    match &s.hns {
        Ok(n) => Check::pass(
            "hns",
            format!("the Host Network Service answers ({} networks)", n.len()),
        ),
        Err(e) => Check::fail(
            "hns",
            format!("the Host Network Service cannot be used: {e}"),
            "Install-WindowsFeature -Name Containers; Restart-Computer",
        ),
    }
}

fn container_runtime(s: &HostSnapshot, c: &Config) -> Check {
    const ID: &str = "container-runtime";
    let want = c.container_runtime;
    let found = match &s.runtime {
        Ok(f) => f,
        Err(e) => {
            return Check::fail(
                ID,
                format!("cannot query the container runtime: {e}"),
                "check that the service control manager answers (sc.exe query containerd)",
            );
        }
    };
    match (want, found) {
        (_, None) => Check::fail(
            ID,
            format!("no container runtime: the {want} service is not installed"),
            "install containerd and register it as a service (containerd.exe --register-service), then set container_runtime",
        ),
        (_, Some(f)) if f.name != want.to_string() => Check::fail(
            ID,
            format!("{} is installed but container_runtime is {want}", f.name),
            format!(
                "set container_runtime: {} in calico-windows.yaml (or --set container_runtime={})",
                f.name, f.name
            ),
        ),
        (_, Some(f)) if !f.running => Check::fail(
            ID,
            format!(
                "{} is installed in {} but not running",
                f.name, f.install_dir
            ),
            format!("Start-Service {}", f.name),
        ),
        (_, Some(f)) => match s
            .runtime_version
            .as_deref()
            .and_then(|v| containerd_out_of_support(v, s.now))
        {
            Some(why) => Check::warn(
                ID,
                format!("{} is running ({}); {why}", f.name, f.install_dir),
                "move to containerd 2.3, the LTS line supported through April 30, 2028 (containerd's RELEASES.md)",
            ),
            None => Check::pass(ID, format!("{} is running ({})", f.name, f.install_dir)),
        },
    }
}

/// A containerd release line, `(major, minor)`.
type Line = (u32, u32);

/// Each containerd release line and the last day of its support, from containerd's
/// RELEASES.md at v2.3.4 ("Current State of containerd Releases"): "September 2026" and
/// "March, 2027" (1.7's and 2.0's extended support, for GKE only) as their months' last days.
const CONTAINERD_END_OF_LIFE: &[(Line, (i16, i8, i8))] = &[
    ((1, 5), (2023, 2, 28)),
    ((1, 6), (2025, 8, 23)),
    ((1, 7), (2026, 9, 30)),
    ((2, 0), (2027, 3, 31)),
    ((2, 1), (2026, 5, 5)),
    ((2, 2), (2026, 11, 6)),
    ((2, 3), (2028, 4, 30)),
];

/// Why a containerd release the Node reports (`containerd://1.7.20`) is out of support on
/// `now` (Unix seconds), if it is: its line's end of life (`CONTAINERD_END_OF_LIFE`) passed.
fn containerd_out_of_support(version: &str, now: i64) -> Option<String> {
    let v = version
        .strip_prefix("containerd://")?
        .trim_start_matches('v');
    let line = super::major_minor(v)?;
    let today = jiff::Timestamp::from_second(now)
        .ok()?
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date();
    let key = line.max((1, 5));
    let (_, (y, m, d)) = CONTAINERD_END_OF_LIFE.iter().find(|(l, _)| *l == key)?;
    let ended = jiff::civil::date(*y, *m, *d);
    (today > ended).then(|| {
        format!(
            "containerd {v} is out of support: the {}.{} line's support ended {ended} (containerd's RELEASES.md)",
            line.0, line.1
        )
    })
}

fn cni_dirs(s: &HostSnapshot, c: &Config) -> Check {
    const ID: &str = "cni-dirs";
    let Ok(Some(f)) = &s.runtime else {
        return Check::skip(ID, "no container runtime found");
    };
    let (Some(bin), Some(conf)) = (&f.cni_bin_dir, &f.cni_conf_dir) else {
        return Check::skip(
            ID,
            format!(
                "{} keeps no CNI directories of its own (kubelet's flags decide)",
                f.name
            ),
        );
    };
    let source = f
        .config_file
        .as_deref()
        .map_or("its defaults".to_owned(), |p| p.to_owned());
    let mut wrong = Vec::new();
    let mut fix = Vec::new();
    for (key, ours, theirs) in [
        ("cni.bin_dir", c.cni.bin_dir.as_str(), bin),
        ("cni.conf_dir", c.cni.conf_dir.as_str(), conf),
    ] {
        if !same_dir(ours, theirs) {
            wrong.push(format!("{key} is {ours} but containerd uses {theirs}"));
            fix.push(format!("--set {key}=\"{theirs}\""));
        }
    }
    if wrong.is_empty() {
        Check::pass(ID, format!("CNI dirs match containerd's ({source})"))
    } else {
        Check::fail(
            ID,
            format!("{} (from {source})", wrong.join("; ")),
            format!("set them in calico-windows.yaml, or pass {}", fix.join(" ")),
        )
    }
}

fn remote_access(s: &HostSnapshot, c: &Config) -> Check {
    const ID: &str = "remote-access";
    if c.backend != Backend::WindowsBgp {
        return Check::skip(
            ID,
            format!(
                "only needed for the windows-bgp backend (backend is {})",
                c.backend
            ),
        );
    }
    match &s.remote_access {
        None => Check::fail(
            ID,
            "the RemoteAccess service (Routing) is not installed; windows-bgp needs it",
            "Install-WindowsFeature RemoteAccess, RSAT-RemoteAccess-PowerShell, Routing; Restart-Computer; Install-RemoteAccess -VpnType RoutingOnly",
        ),
        Some(svc) if svc.start == StartType::Disabled => Check::fail(
            ID,
            "the RemoteAccess service is disabled",
            "Set-Service RemoteAccess -StartupType Automatic; Start-Service RemoteAccess",
        ),
        Some(svc) if svc.state != ServiceState::Running => Check::fail(
            ID,
            "the RemoteAccess service is installed but not running",
            "Install-RemoteAccess -VpnType RoutingOnly; Start-Service RemoteAccess",
        ),
        Some(_) => Check::pass(ID, "RemoteAccess is running"),
    }
}

/// The failure of a VXLAN rule that would let UDP 4789 in but for a property calicoctl-win
/// does not set (`Unset::lets_all_in`), each named.
fn narrowed(r: &FirewallRule) -> Check {
    let u = &r.unset;
    Check::fail(
        "firewall-vxlan",
        format!(
            "firewall rule {} lets UDP 4789 in only for local addresses {}, remote ports {}, interface types {}, service '{}'{}{}: VXLAN (from any source port, RFC 7348) is dropped in part or whole",
            r.name,
            u.local_addresses,
            u.remote_ports,
            u.interface_types,
            u.service_name,
            if u.interfaces.is_empty() {
                String::new()
            } else {
                format!(", interfaces [{}]", u.interfaces.join(", "))
            },
            if u.app_container.is_default() {
                ""
            } else {
                ", and an app container, user, remote machine or IPsec requirement"
            }
        ),
        if u.app_container.is_default() && u.interfaces.is_empty() {
            format!(
                "Set-NetFirewallRule -DisplayName '{}' -LocalAddress Any -RemotePort Any -InterfaceType Any -Service Any; or remove it (Remove-NetFirewallRule -DisplayName '{}'): install creates the rule again",
                r.name, r.name
            )
        } else {
            // What clears an interface list or an app container, user, machine or IPsec
            // requirement is not one Set-NetFirewallRule form: the rule made again is.
            format!(
                "remove it (Remove-NetFirewallRule -DisplayName '{}'): install creates the rule again, open to every interface and with no app container, user, remote machine or IPsec requirement",
                r.name
            )
        },
    )
}

fn firewall_vxlan(s: &HostSnapshot, c: &Config) -> Check {
    const ID: &str = "firewall-vxlan";
    if c.backend != Backend::Vxlan {
        return Check::skip(
            ID,
            format!(
                "only needed for the vxlan backend (backend is {})",
                c.backend
            ),
        );
    }
    let rules = match &s.vxlan_rules {
        Ok(rules) => rules,
        Err(e) => {
            return Check::fail(
                ID,
                format!("the firewall rules cannot be read: {e}"),
                "check the Windows Firewall service ('Get-Service mpssvc') and 'Get-NetFirewallRule'; install needs to read and add the UDP 4789 rule",
            );
        }
    };
    if let Some(check) = firewall_policy(s, rules) {
        return check;
    }
    if let Some(r) = rules.iter().find(|r| r.opens(Protocol::Udp, 4789)) {
        return Check::pass(ID, format!("firewall rule {} allows UDP 4789", r.name));
    }
    if let Some(r) = rules.first() {
        let all_but_profiles = FirewallRule {
            profiles: crate::host::ALL_PROFILES,
            ..r.clone()
        };
        if all_but_profiles.opens(Protocol::Udp, 4789) {
            return Check::fail(
                ID,
                format!(
                    "firewall rule {} allows UDP 4789 only in the {} profile(s): VXLAN is dropped while the node's network is in another",
                    r.name,
                    r.profile_names()
                ),
                format!("Set-NetFirewallRule -DisplayName '{}' -Profile Any", r.name),
            );
        }
        let whole = FirewallRule {
            unset: Default::default(),
            ..all_but_profiles
        };
        if whole.opens(Protocol::Udp, 4789) {
            return narrowed(r);
        }
        return Check::fail(
            ID,
            format!(
                "firewall rule {} exists but does not allow inbound UDP 4789 (enabled: {}, allow: {})",
                r.name, r.enabled, r.allow
            ),
            format!(
                "Remove-NetFirewallRule -DisplayName '{}'; install creates the rule again",
                r.name
            ),
        );
    }
    Check::pass(
        ID,
        format!("UDP 4789 is not open yet; install opens it (rule {VXLAN_RULE})"),
    )
}

/// What the firewall's own policy says of the VXLAN rules: a profile that blocks all inbound
/// traffic fails whatever the rules; under a Group Policy override a local rule does not take
/// effect, so install cannot open the port (fail) and a rule found may be a local one that is
/// ignored (warn). `None` when local rules take effect.
fn firewall_policy(s: &HostSnapshot, rules: &[FirewallRule]) -> Option<Check> {
    const ID: &str = "firewall-vxlan";
    use crate::host::FirewallModifyState as State;
    let state = match &s.firewall_modify_state {
        Ok(state) => *state,
        Err(e) => {
            return Some(Check::warn(
                ID,
                format!("whether local firewall rules take effect cannot be read: {e}"),
                "Get-NetFirewallProfile | Format-List Name, AllowLocalFirewallRules, DefaultInboundAction",
            ));
        }
    };
    match state {
        State::Ok => None,
        State::InboundBlocked => Some(Check::fail(
            ID,
            "the firewall blocks all inbound connections in the current profile, whatever its rules say: VXLAN from other nodes is dropped",
            "Set-NetFirewallProfile -AllowInboundRules True (or the Group Policy setting that blocks all inbound connections)",
        )),
        State::GroupPolicyOverride => {
            let open = rules.iter().any(|r| r.opens(Protocol::Udp, 4789));
            let message = "Group Policy overrides local firewall rules on this node (LocalPolicyModifyState: GP_OVERRIDE)";
            let remedy = "allow inbound UDP 4789 in the Group Policy that manages this node's firewall (Windows Defender Firewall with Advanced Security > Inbound Rules), or let it merge local rules";
            Some(if open {
                Check::warn(
                    ID,
                    format!(
                        "{message}: UDP 4789 is open only if the rule found comes from that policy"
                    ),
                    remedy,
                )
            } else {
                Check::fail(
                    ID,
                    format!("{message}: a rule install adds for UDP 4789 would not take effect"),
                    remedy,
                )
            })
        }
    }
}

fn foreign_cni(s: &HostSnapshot) -> Check {
    const ID: &str = "foreign-cni";
    let mut found = Vec::new();
    let mut fix = Vec::new();
    let flannel_nets: Vec<&HnsNetwork> = s.hns.as_ref().map_or(Vec::new(), |n| {
        n.iter()
            .filter(|n| n.name.starts_with("flannel") || n.name == "vxlan0" || n.name == "cbr0")
            .collect()
    });
    if s.flanneld.is_some() || !flannel_nets.is_empty() {
        let names: Vec<&str> = flannel_nets.iter().map(|n| n.name.as_str()).collect();
        found.push(format!(
            "flannel leftovers (service flanneld: {}; HNS networks: {})",
            if s.flanneld.is_some() { "yes" } else { "no" },
            if names.is_empty() {
                "none".into()
            } else {
                names.join(", ")
            }
        ));
        let mut cmd = vec!["Stop-Service flanneld; sc.exe delete flanneld".to_owned()];
        for n in &names {
            cmd.push(format!(
                "Get-HnsNetwork | ? Name -eq '{n}' | Remove-HnsNetwork"
            ));
        }
        fix.push(cmd.join("; "));
    }
    let legacy: Vec<&InstalledService> = s
        .calico_services
        .iter()
        .filter(|svc| is_legacy_service(svc))
        .collect();
    if !legacy.is_empty() {
        let (program, _) = split_command_line(&legacy[0].command_line);
        let root = program
            .rsplit_once('\\')
            .map_or("C:\\CalicoWindows", |(d, _)| d);
        found.push(format!(
            "a legacy NSSM-based Calico install ({} in {root})",
            legacy
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        fix.push(format!(
            "powershell -ExecutionPolicy Bypass -File {root}\\uninstall-calico.ps1"
        ));
    }
    if found.is_empty() {
        Check::pass(ID, "no other CNI or older Calico install found")
    } else {
        Check::fail(
            ID,
            format!("found {}", found.join(" and ")),
            fix.join("; then "),
        )
    }
}

/// The `known-issues` check for this host, the config's backend and the Calico release
/// `calico` (installed or to install; the cluster's when that is all that is known).
pub fn known_issues(
    s: &HostSnapshot,
    c: &Config,
    calico: Option<&str>,
    allowed: &[String],
) -> Check {
    let windows = s.system.as_ref().ok().map(|f| (f.build, f.ubr));
    let kubelet = s.kubelet_service.as_ref().map(|k| k.command_line.as_str());
    let params = s.kubelet_app_parameters.as_deref();
    judge_known_issues(c, calico, windows, (kubelet, params), allowed)
}

/// The `known-issues` check as `status` runs it: the same table, from the facts it reads of
/// the host itself (the installed release, no entry accepted).
pub fn known_issues_on(h: &dyn Host, c: &Config, calico: Option<&str>) -> Check {
    let windows = h.system_facts().ok().map(|f| (f.build, f.ubr));
    let kubelet = h.service_query("kubelet").ok().flatten();
    let params = kubelet_app_parameters(h);
    let kubelet = kubelet.as_ref().map(|k| k.command_line.as_str());
    judge_known_issues(c, calico, windows, (kubelet, params.as_deref()), &[])
}

fn judge_known_issues(
    c: &Config,
    calico: Option<&str>,
    windows: Option<(u32, Option<u32>)>,
    (kubelet, params): (Option<&str>, Option<&str>),
    allowed: &[String],
) -> Check {
    let version = calico.and_then(|v| crate::release::version::CalicoVersion::parse(v).ok());
    let facts = super::known_issues::Facts {
        calico: version.as_ref(),
        backend: c.backend,
        windows,
        kubelet_command_line: kubelet,
        kubelet_app_parameters: params,
        install_root: c.install_root.as_str(),
    };
    super::known_issues::check(&facts, allowed)
}

/// Whether the config's node name is the one kubelet registers the node as.
pub fn node_name(s: &HostSnapshot, c: &Config) -> Check {
    const ID: &str = "node-name";
    let Some(kubelet) = &s.kubelet_service else {
        let msg = match s.kubelet_pid {
            Some(pid) => format!(
                "kubelet runs (pid {pid}) but not as a service, so its node name is unknown"
            ),
            None => "kubelet is not installed yet".to_owned(),
        };
        return Check::skip(ID, msg);
    };
    let kubelet_says = crate::config::host::HostDefaults {
        hostname: s.system.as_ref().ok().and_then(|f| f.hostname.clone()),
        kubelet: Some(kubelet.command_line.clone()),
        runtime: None,
    };
    let Some((kubelets, from)) = kubelet_says.node_name() else {
        return Check::skip(
            ID,
            "kubelet's node name is unknown (no --hostname-override, no host name)",
        );
    };
    let ours = c.node.name.to_string();
    if ours == kubelets {
        Check::pass(ID, format!("node.name {ours} matches kubelet's ({from})"))
    } else {
        Check::fail(
            ID,
            format!("node.name is {ours} but kubelet registers the node as {kubelets} ({from})"),
            format!(
                "set node.name: {kubelets} in calico-windows.yaml (or --set node.name={kubelets})"
            ),
        )
    }
}

#[cfg(test)]
#[path = "host_tests.rs"]
mod tests;

/// `dir-access`: what runs as SYSTEM must come from directories only SYSTEM and
/// Administrators can change. Checked whenever the directories exist.
pub fn dir_access(h: &dyn Host, c: &Config) -> Check {
    const ID: &str = "dir-access";
    let links = reparse_points(h, c);
    if !links.is_empty() {
        return Check::fail(
            ID,
            format!(
                "{} is a junction or another reparse point: what install writes there, and the access list it sets, would go wherever it points, which its maker chose",
                links.join(", ")
            ),
            format!(
                "remove it and make a directory in its place (in an elevated prompt: {}), then check again",
                links
                    .iter()
                    .map(|l| format!("rmdir \"{l}\"; mkdir \"{l}\""))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        );
    }
    let weak = weak_dirs(h, c);
    if weak.is_empty() {
        return Check::pass(
            ID,
            "the directories whose files run as SYSTEM are changeable only by SYSTEM and Administrators (or do not exist yet)",
        );
    }
    let what: Vec<String> = weak
        .iter()
        .map(|(d, who)| format!("{d}: {}", who.join("; ")))
        .collect();
    let fix: Vec<String> = weak.iter().map(|(d, _)| protect_command(d)).collect();
    Check::fail(
        ID,
        format!(
            "a local user could replace what runs as SYSTEM: {}",
            what.join(" | ")
        ),
        format!(
            "run 'calicoctl-win preflight --fix' (install does the same), or: {}",
            fix.join("; ")
        ),
    )
}
