//! The built-in simulated hosts, each a Windows Server node in a state worth testing.

use super::state::{SimService, SimSettings, State};
use crate::host::{
    Adapter, FirewallRule, InterfaceAddress, Protocol, RegValue, Route, ServiceState, StartType,
    SystemFacts,
};
use serde_json::json;
use std::net::Ipv4Addr;

/// Profile names with one line each, for help and errors.
pub const PROFILES: &[(&str, &str)] = &[
    ("ws2019", "Windows Server 2019, 17763.1432, containerd"),
    (
        "ws2019-unpatched",
        "Windows Server 2019, 17763.1000 (before the DSR update), containerd",
    ),
    ("ws20h2", "Windows Server 20H2, 19042, containerd"),
    ("ws2022", "Windows Server 2022, 20348.2227, containerd"),
    (
        "ws2025",
        "Windows Server 2025, 26100.1742 (before the April 2026 update), containerd",
    ),
    (
        "ws2025-april2026",
        "Windows Server 2025, 26100.32690 (the April 2026 update, KB5082063), containerd",
    ),
    (
        "ws2022-docker",
        "Windows Server 2022 with docker, no containerd",
    ),
    (
        "ws2022-no-hns",
        "Windows Server 2022 without the Containers feature (no HNS)",
    ),
    (
        "ws2022-flannel",
        "Windows Server 2022 with flannel's HNS network and flanneld service left over",
    ),
    (
        "ws2022-aks",
        "Windows Server 2022 on AKS: Azure CNI's L2Bridge network azure (policy-only Calico)",
    ),
    (
        "ws2022-two-nics",
        "Windows Server 2022 with two NICs on one subnet: the default route on Ethernet, kubelet's --node-ip on Ethernet 2",
    ),
    (
        "ws2022-legacy-calico",
        "Windows Server 2022 with an NSSM-based Calico install in C:\\CalicoWindows",
    ),
];

pub const DEFAULT_PROFILE: &str = "ws2022";

/// A file the profile places on the host: path and contents.
pub type SeedFile = (String, Vec<u8>);

/// A program the profile places on the host.
fn program(path: &str) -> SeedFile {
    (path.to_owned(), b"simulated program\n".to_vec())
}

/// The state and files of a profile, or `None` for an unknown name.
pub fn build(name: &str) -> Option<(State, Vec<SeedFile>)> {
    PROFILES.iter().find(|(n, _)| *n == name)?;
    let (build, ubr, product) = match name {
        "ws2019" => (17763, 1432, "Windows Server 2019 Datacenter"),
        "ws2019-unpatched" => (17763, 1000, "Windows Server 2019 Datacenter"),
        "ws20h2" => (19042, 1415, "Windows Server Datacenter"),
        "ws2025" => (26100, 1742, "Windows Server 2025 Datacenter"),
        "ws2025-april2026" => (26100, 32690, "Windows Server 2025 Datacenter"),
        _ => (20348, 2227, "Windows Server 2022 Datacenter"),
    };
    let mut state = base(name, build, ubr, product);
    let mut files: Vec<SeedFile> = Vec::new();

    if name == "ws2022-docker" {
        let exe = r"C:\Program Files\docker\dockerd.exe";
        files.push(program(exe));
        add_service(
            &mut state,
            "docker",
            "Docker Engine",
            &format!("\"{exe}\" --run-service"),
        );
    } else {
        let exe = r"C:\Program Files\containerd\containerd.exe";
        files.push(program(exe));
        add_service(
            &mut state,
            "containerd",
            "containerd",
            &format!("\"{exe}\" --register-service"),
        );
        files.push((
            r"C:\Program Files\containerd\config.toml".into(),
            CONTAINERD_CONFIG.as_bytes().to_vec(),
        ));
    }
    if name == "ws2022-no-hns" {
        state.settings.hns_available = false;
    } else {
        add_service(
            &mut state,
            "hns",
            "Host Network Service",
            r"C:\Windows\system32\svchost.exe -k NetSvcs -p",
        );
        add_service(
            &mut state,
            "vmcompute",
            "Hyper-V Host Compute Service",
            r"C:\Windows\system32\vmcompute.exe",
        );
    }
    let kubelet = r"C:\k\kubelet.exe";
    files.push(program(kubelet));
    let node_ip = if name == "ws2022-two-nics" {
        two_nics(&mut state);
        " --node-ip=10.0.0.6"
    } else {
        ""
    };
    add_service(
        &mut state,
        "kubelet",
        "kubelet",
        &format!(
            "{kubelet} --hostname-override=win-1 --config=C:\\var\\lib\\kubelet\\config.yaml{node_ip}"
        ),
    );
    state.processes.insert("kubelet.exe".into(), 3120);

    match name {
        "ws2022-flannel" => flannel(&mut state, &mut files),
        "ws2022-aks" => aks(&mut state),
        "ws2022-legacy-calico" => legacy_calico(&mut state, &mut files),
        _ => {}
    }
    Some((state, files))
}

const CONTAINERD_CONFIG: &str = r#"version = 2
root = 'C:\ProgramData\containerd\root'
state = 'C:\ProgramData\containerd\state'

[plugins."io.containerd.grpc.v1.cri".cni]
  bin_dir = 'C:\Program Files\containerd\cni\bin'
  conf_dir = 'C:\Program Files\containerd\cni\conf'
"#;

/// The operating system of a simulated Windows Server host.
fn system(build: u32, ubr: u32, product: &str) -> SystemFacts {
    SystemFacts {
        build,
        ubr: Some(ubr),
        product_name: Some(product.to_owned()),
        edition: Some("ServerDatacenter".into()),
        installation_type: Some("Server Core".into()),
        is_64bit: true,
        elevated: true,
        boot_id: Some("1763712000".into()),
        // The same boot on a wall clock one hour ahead of UTC.
        boot_local_seconds: Some(1_763_715_600),
        boot_local_seconds_reported: None,
        boot_local_seconds_dated: None,
        // Windows names hosts in capitals; kubelet registers the node as `win-1`.
        hostname: Some("WIN-1".into()),
        winhttp_proxy: None,
        user_sid: None,
        // The system drive and a data disk (cloud VMs have one: Azure's D:).
        drives: [
            ('C', crate::host::DriveKind::Fixed),
            ('D', crate::host::DriveKind::Fixed),
        ]
        .into(),
    }
}

fn base(profile: &str, build: u32, ubr: u32, product: &str) -> State {
    let mut state = State {
        profile: profile.to_owned(),
        system: system(build, ubr, product),
        settings: SimSettings {
            hns_available: true,
            pod_block: "10.244.1.0/26".into(),
            next_pid: 4000,
            next_id: 1,
            ..SimSettings::default()
        },
        ..State::default()
    };
    let cv = r"HKLM\SOFTWARE\Microsoft\Windows NT\CurrentVersion";
    for (k, v) in [
        ("CurrentBuild", RegValue::Sz(build.to_string())),
        ("CurrentBuildNumber", RegValue::Sz(build.to_string())),
        ("UBR", RegValue::Dword(ubr)),
        ("ProductName", RegValue::Sz(product.to_owned())),
        ("EditionID", RegValue::Sz("ServerDatacenter".into())),
        ("InstallationType", RegValue::Sz("Server Core".into())),
    ] {
        state.reg_set(cv, k, v);
    }
    system_international(&mut state);
    // Every Windows has the Application event log (20 MB by default); sources are its keys.
    state.reg_set(
        r"HKLM\SYSTEM\CurrentControlSet\Services\EventLog\Application",
        "MaxSize",
        RegValue::Dword(20 * 1024 * 1024),
    );
    let ethernet = InterfaceAddress::new("Ethernet", 4, Ipv4Addr::new(10, 0, 0, 5), 24);
    let loopback = ("Loopback Pseudo-Interface 1", Ipv4Addr::LOCALHOST);
    let loopback = InterfaceAddress::new(loopback.0, 1, loopback.1, 8);
    state.interfaces.extend([ethernet, loopback]);
    state.adapters.push(cloud_nic());
    let route = |d: [u8; 4], len, hop: [u8; 4], metric| Route {
        destination: Ipv4Addr::from(d),
        prefix_len: len,
        next_hop: Ipv4Addr::from(hop),
        interface_index: 4,
        metric,
    };
    state.routes = vec![
        route([0, 0, 0, 0], 0, [10, 0, 0, 1], 15),
        route([10, 0, 0, 0], 24, [0, 0, 0, 0], 271),
        // The cloud metadata route that creating the vSwitch drops (see `Hns` in sim).
        route([169, 254, 169, 254], 32, [10, 0, 0, 1], 15),
    ];
    state
}

/// A cloud VM's NIC: DHCP gives its address, gateway and DNS server.
fn cloud_nic() -> Adapter {
    Adapter {
        mac: "00-15-5D-00-00-05".into(),
        gateways: vec![Ipv4Addr::new(10, 0, 0, 1)],
        dns_servers: vec![Ipv4Addr::new(10, 0, 0, 2)],
        dns_suffix: "cluster.example".into(),
        ..Adapter::hyperv_nic("Ethernet", 4)
    }
}

/// A second NIC on the first one's subnet holding the node IP, without a default route
/// (rancher/rke2#3533).
fn two_nics(state: &mut State) {
    let ip = Ipv4Addr::new(10, 0, 0, 6);
    state
        .interfaces
        .push(InterfaceAddress::new("Ethernet 2", 6, ip, 24));
    state.adapters.push(Adapter {
        description: "Microsoft Hyper-V Network Adapter #2".into(),
        dhcp: false,
        dns_servers: vec![Ipv4Addr::new(10, 0, 0, 2)],
        ..Adapter::hyperv_nic("Ethernet 2", 6)
    });
}

fn add_service(state: &mut State, name: &str, display: &str, command_line: &str) {
    state.services.insert(
        name.to_ascii_lowercase(),
        SimService {
            name: name.to_owned(),
            display_name: display.to_owned(),
            description: String::new(),
            command_line: command_line.to_owned(),
            start: StartType::Auto,
            dependencies: Vec::new(),
            recovery: None,
            state: ServiceState::Running,
            pid: Some(state.settings.next_pid()),
            // Started at boot.
            since: state.system.boot_id.as_deref().and_then(|b| b.parse().ok()),
            stop_takes_ms: None,
            stopped_at_ms: None,
        },
    );
}

fn flannel(state: &mut State, files: &mut Vec<SeedFile>) {
    let exe = r"C:\flannel\flanneld.exe";
    files.push(program(exe));
    add_service(
        state,
        "flanneld",
        "flanneld",
        &format!("{exe} --kube-subnet-mgr --iface=10.0.0.5"),
    );
    let id = state.settings.next_guid();
    state.networks.push(json!({
        "ID": id, "Name": "flannel.4096", "Type": "Overlay",
        "Ipams": [{"Type": "Static", "Subnets": [{
            "IpAddressPrefix": "10.244.3.0/24",
            "Routes": [{"NextHop": "10.244.3.1", "DestinationPrefix": "0.0.0.0/0"}],
            "Policies": [{"Type": "VSID", "Settings": {"IsolationId": 4096}}]}]}],
        "Policies": [{"Type": "ProviderAddress", "Settings": {"ProviderAddress": "10.0.0.5"}}]
    }));
    files.push((
        r"C:\etc\cni\net.d\10-flannel.conf".into(),
        br#"{"name":"flannel.4096","type":"flannel"}"#.to_vec(),
    ));
}

/// Azure CNI's network, by which Calico's `GetPlatformType` knows AKS.
fn aks(state: &mut State) {
    let id = state.settings.next_guid();
    state.networks.push(json!({
        "ID": id, "Name": "azure", "Type": "L2Bridge",
        "Ipams": [{"Type": "Static", "Subnets": [{
            "IpAddressPrefix": "10.240.0.0/16",
            "Routes": [{"NextHop": "10.240.0.1", "DestinationPrefix": "0.0.0.0/0"}]}]}],
        "Policies": [{"Type": "ProviderAddress", "Settings": {"ProviderAddress": "10.240.0.4"}}]
    }));
}

fn legacy_calico(state: &mut State, files: &mut Vec<SeedFile>) {
    let root = r"C:\CalicoWindows";
    for f in ["nssm.exe", "calico-node.exe"] {
        files.push(program(&crate::layout::join(root, f)));
    }
    files.push((
        crate::layout::join(root, "config.ps1"),
        b"$env:CALICO_NETWORKING_BACKEND=\"vxlan\"\n".to_vec(),
    ));
    files.push((
        r"C:\Program Files\containerd\cni\conf\10-calico.conf".into(),
        br#"{"name":"Calico","cniVersion":"0.3.1","type":"calico"}"#.to_vec(),
    ));
    for (name, display, dep) in [
        ("CalicoNode", "Calico Windows Startup", None),
        ("CalicoFelix", "Calico Windows Agent", Some("CalicoNode")),
    ] {
        add_service(state, name, display, &crate::layout::join(root, "nssm.exe"));
        if let Some(svc) = state.services.get_mut(&name.to_ascii_lowercase()) {
            svc.dependencies = dep.into_iter().map(str::to_owned).collect();
        }
    }
    state.firewall.insert(
        "overlay traffic 4789 udp".into(),
        FirewallRule {
            name: "Overlay Traffic 4789 UDP".into(),
            // projectcalico/calico v3.32.1 node/windows-packaging/CalicoWindows/node/
            // node-service.ps1: New-NetFirewallRule ... -Description "Overlay network traffic UDP".
            description: "Overlay network traffic UDP".into(),
            protocol: Protocol::Udp,
            direction: crate::host::Direction::In,
            program: None,
            local_port: 4789,
            allow: true,
            enabled: true,
            profiles: crate::host::ALL_PROFILES,
            remote_addresses: Vec::new(),
            unset: Default::default(),
        },
    );
}

/// SYSTEM's regional settings as an en-US Windows Server writes them (`Control
/// Panel\International`), for the boot marker's format.
fn system_international(state: &mut State) {
    for (k, v) in [
        ("LocaleName", "en-US"),
        ("sShortDate", "M/d/yyyy"),
        ("sTimeFormat", "h:mm:ss tt"),
        ("s1159", "AM"),
        ("s2359", "PM"),
    ] {
        state.reg_set(
            crate::layout::SYSTEM_INTERNATIONAL,
            k,
            RegValue::Sz(v.into()),
        );
    }
}
