//! Cluster checks: what Calico on the cluster must look like for a Windows node to join.

use super::{Check, major_minor as version};
use crate::cluster::facts::{ClusterFacts, IpPool, encapsulation_on as on};
use crate::cluster::ipam;
use crate::config::Config;
use crate::config::types::Backend;
use crate::health::judge;

/// The ids of the cluster checks, in the order they are shown.
pub const IDS: &[&str] = &[
    "calico-version",
    "calico-api",
    "datastore-migration",
    "operator-windows",
    "ipip-disabled",
    "strict-affinity",
    "ip-pools",
    "vxlan-vni",
    "vxlan-port",
    "wireguard",
    "datastore",
    "rbac",
    "block-capacity",
    "node-address",
];

/// What the checks need from the configuration besides `Config`.
pub struct Asked<'a> {
    /// Whether the user set vxlan.vni (rather than taking the default).
    pub vni_explicit: bool,
    /// The Calico release the node is to run, when known (install); else the cluster's.
    pub release: Option<&'a str>,
}

/// Every cluster check, in the order of `IDS`.
pub fn evaluate(f: &ClusterFacts, c: &Config, asked: &Asked<'_>) -> Vec<Check> {
    vec![
        calico_version(f),
        calico_api(f, asked.release.or(f.calico_version.as_deref())),
        datastore_migration(f),
        operator_windows(f),
        ipip(f),
        strict_affinity(f),
        ip_pools(f, c),
        vxlan_vni(f, c, asked),
        vxlan_port(f, c),
        wireguard(f),
        datastore(f, c),
        rbac(f),
        block_capacity(f, c),
        node_address(f),
    ]
}

/// `calico-api`: the group Calico's resources are served in (`cluster::calico_api`); only
/// `projectcalico.org/v3` CRDs need the node's Calico at v3.32.0 or later.
fn calico_api(f: &ClusterFacts, release: Option<&str>) -> Check {
    use crate::cluster::calico_api::Group;
    const ID: &str = "calico-api";
    if f.calico_api == Group::V1 {
        return Check::pass(
            ID,
            "Calico's resources are served as crd.projectcalico.org/v1",
        );
    }
    let served = "Calico's resources are served only as projectcalico.org/v3 CRDs";
    let version = release.map(|r| (r, crate::release::version::CalicoVersion::parse(r)));
    match version {
        Some((r, Ok(v))) if !v.reads_v3_crds() => Check::fail(
            ID,
            format!(
                "{served}, which Calico {r} cannot read (its libcalico-go reads crd.projectcalico.org only; the group is discovered from v3.32.0)"
            ),
            "install Calico v3.32.0 or later on the node (--calico-version, at least the cluster's)",
        ),
        Some((r, Ok(_))) => Check::pass(ID, format!("{served}; Calico {r} reads them")),
        _ => Check::warn(
            ID,
            format!("{served}; the release is unknown, and Calico before v3.32.0 cannot read them"),
            "install Calico v3.32.0 or later on the node",
        ),
    }
}

/// `datastore-migration`: a migration of Calico's datastore to the v3 CRDs, or a datastore
/// locked otherwise, is said as under way (a warning), not as a failure: Calico's components
/// pause and keep the data plane meanwhile (`calico_api::Migration::sentence`).
fn datastore_migration(f: &ClusterFacts) -> Check {
    const ID: &str = "datastore-migration";
    let wait = "wait for it to reach Complete ('kubectl get datastoremigration -w'); this node joins meanwhile and its components start once the datastore is unlocked";
    match f.datastore_state() {
        Some(s) if s.under_way => Check::warn(ID, s.sentence, wait),
        Some(s) => Check::pass(ID, s.sentence),
        None => match &f.datastore_migration_unreadable {
            Some(why) => Check::warn(
                ID,
                format!(
                    "cannot read the cluster's DatastoreMigrations ({why}): a migration under way would not be seen"
                ),
                "give the identity list on datastoremigrations.migration.projectcalico.org (calicoctl-win fleet rbac writes it)",
            ),
            None => Check::pass(ID, "no datastore migration under way"),
        },
    }
}

/// `node-address`: the BGP address already set on this node must be the Node's InternalIP
/// (`health::node_address`); a warning, since calico-node's start-up may set it again.
fn node_address(f: &ClusterFacts) -> Check {
    const ID: &str = "node-address";
    let (Some(internal), Some(bgp)) = (f.node_internal_ip, f.node_bgp_ipv4) else {
        return Check::skip(
            ID,
            "the Node has no InternalIP or calico-node has not set its BGP address yet",
        );
    };
    match judge::node_address(&f.node, (Some(internal), Some(bgp)), &[], None).pop() {
        None => Check::pass(
            ID,
            format!("InternalIP and BGP address are both {internal}"),
        ),
        Some(found) => Check::of(ID, super::Verdict::Warn, found.said),
    }
}

/// Every cluster check with the same verdict and message: skipped (`--offline`, no
/// kubeconfig) or failed (the cluster could not be read).
pub fn all(verdict: super::Verdict, message: &str, remedy: Option<&str>) -> Vec<Check> {
    IDS.iter()
        .map(|id| Check::new(id, verdict, message, remedy))
        .collect()
}

/// Every cluster check when the cluster cannot be read: the first says why and what to do,
/// the others fail with a pointer to it (the same error a dozen times hides the rest).
pub fn unreadable(message: &str, remedy: &str) -> Vec<Check> {
    let fail = super::Verdict::Fail;
    let mut checks = all(
        fail,
        &format!("the cluster could not be read (see {})", IDS[0]),
        None,
    );
    checks[0] = Check::new(IDS[0], fail, message, Some(remedy));
    checks
}

fn calico_version(f: &ClusterFacts) -> Check {
    const ID: &str = "calico-version";
    match f.calico_version.as_deref() {
        None => Check::fail(
            ID,
            format!(
                "Calico is not installed on the cluster at {} (no ClusterInformation)",
                f.server
            ),
            "install Calico on the Linux control plane first (operator or manifest), then add Windows nodes",
        ),
        Some(v) if version(v).is_some_and(|x| x >= (3, 12)) && !f.node_exists => Check::warn(
            ID,
            format!(
                "Calico {v} on {}, but that cluster has no Node {}: is the kubeconfig this cluster's? (a node whose kubelet has not joined yet has none)",
                f.server, f.node
            ),
            format!(
                "check with 'kubectl get node {}' against the kubeconfig given; pass this cluster's with --kubeconfig, or join the node first",
                f.node
            ),
        ),
        Some(v) if version(v).is_some_and(|x| x >= (3, 12)) => {
            Check::pass(ID, format!("Calico {v} on {}", f.server))
        }
        // "master", a build's own tag, empty: not a release, so no release to compare.
        Some(v) if version(v).is_none() => Check::warn(
            ID,
            format!(
                "the cluster's Calico version {:?} is no release version: which Windows fixes it has is unknown",
                crate::fleet::view::shown(v)
            ),
            "install a Calico release on the cluster, or pass --calico-version for the Windows release to install",
        ),
        Some(v) => Check::fail(
            ID,
            format!("Calico {v} is older than 3.12, the first release that supports Windows nodes"),
            "upgrade Calico on the cluster",
        ),
    }
}

/// The operator's Windows DaemonSet (`windowsDataplane: HNS`) removes script-installed
/// services in its init container: safe only on a node its affinity keeps off
/// (`cluster::operator::LABEL`, which `migrate` writes).
fn operator_windows(f: &ClusterFacts) -> Check {
    const ID: &str = "operator-windows";
    let label = crate::cluster::operator::LABEL;
    match &f.installation {
        Some(i) if i.windows_enabled() && i.keeps_off(&f.node_labels) => Check::pass(
            ID,
            format!(
                "the operator runs Calico on Windows nodes, and its DaemonSet's affinity keeps it off this node (label {label}=true)"
            ),
        ),
        Some(i) if i.windows_enabled() => Check::fail(
            ID,
            "the operator's Installation has calicoNetwork.windowsDataplane: HNS, so the operator deploys calico-node-windows to this node, and its init container removes services installed outside it",
            format!(
                "move this node from the operator with 'calicoctl-win migrate from-operator' (it keeps the node's pods' networks and labels it {label}=true, which the DaemonSet's affinity then excludes); or set windowsDataplane: Disabled (kubectl patch installation default --type merge -p '{{\"spec\":{{\"calicoNetwork\":{{\"windowsDataplane\":\"Disabled\"}}}}}}') once no node runs the operator's pods"
            ),
        ),
        Some(i) => Check::pass(
            ID,
            format!(
                "the operator does not install Calico on Windows (windowsDataplane: {})",
                i.windows_dataplane.as_deref().unwrap_or("unset")
            ),
        ),
        None => Check::pass(ID, "no operator Installation manages Windows nodes"),
    }
}

fn ipip(f: &ClusterFacts) -> Check {
    const ID: &str = "ipip-disabled";
    let pools: Vec<&IpPool> = f.ip_pools.iter().filter(|p| on(&p.ipip_mode)).collect();
    let mut fixes = Vec::new();
    if f.felix.ipip_enabled == Some(true) {
        fixes.push(
            r#"calicoctl patch felixconfiguration default -p '{"spec":{"ipipEnabled":false}}'"#
                .to_owned(),
        );
    }
    for p in &pools {
        fixes.push(format!(
            r#"calicoctl patch ippool {} -p '{{"spec":{{"ipipMode":"Never"}}}}'"#,
            p.name
        ));
    }
    if fixes.is_empty() {
        return Check::pass(ID, "IPIP is off (Windows has no IPIP)");
    }
    let names: Vec<&str> = pools.iter().map(|p| p.name.as_str()).collect();
    Check::fail(
        ID,
        format!(
            "IPIP is on (FelixConfiguration ipipEnabled: {}; IP pools with ipipMode: {}); Windows nodes cannot use IPIP",
            f.felix
                .ipip_enabled
                .map_or("unset".into(), |b| b.to_string()),
            if names.is_empty() {
                "none".into()
            } else {
                names.join(", ")
            }
        ),
        format!("{} (or: calicoctl-win preflight --fix)", fixes.join("; ")),
    )
}

fn strict_affinity(f: &ClusterFacts) -> Check {
    const ID: &str = "strict-affinity";
    if f.strict_affinity == Some(true) {
        return Check::pass(ID, "IPAM strictAffinity is true");
    }
    Check::fail(
        ID,
        format!(
            "IPAM strictAffinity is {}; Windows nodes need their own IP blocks",
            f.strict_affinity.map_or("unset".into(), |b| b.to_string())
        ),
        r#"kubectl patch ipamconfigurations default --type merge --patch='{"spec": {"strictAffinity": true}}' (or: calicoctl-win preflight --fix)"#,
    )
}

fn encapsulation(p: &IpPool) -> &'static str {
    if on(&p.vxlan_mode) {
        "vxlan"
    } else if on(&p.ipip_mode) {
        "ipip"
    } else {
        "none"
    }
}

/// A pool with `vxlanMode: CrossSubnet` fails: Calico's Windows limitations page lists
/// cross-subnet as not supported (tigera/docs#1547), and it is the operator's default.
fn cross_subnet(v4: &[&IpPool]) -> Option<Check> {
    const ID: &str = "ip-pools";
    let p = v4.iter().find(|p| p.vxlan_mode == "CrossSubnet")?;
    Some(Check::fail(
        ID,
        format!(
            "pool {} has vxlanMode: CrossSubnet, which Calico does not support on Windows (Calico's Windows limitations; tigera/docs#1547)",
            p.name
        ),
        format!(
            "kubectl patch ippool {} --type merge -p '{{\"spec\":{{\"vxlanMode\":\"Always\"}}}}' (with the operator, set the Installation's ipPools[].encapsulation to VXLAN)",
            p.name
        ),
    ))
}

fn ip_pools(f: &ClusterFacts, c: &Config) -> Check {
    const ID: &str = "ip-pools";
    let v6: Vec<&str> = f
        .ip_pools
        .iter()
        .filter(|p| p.ipv6)
        .map(|p| p.name.as_str())
        .collect();
    if !v6.is_empty() {
        return Check::fail(
            ID,
            format!(
                "IPv6 pools ({}) are not supported for Windows nodes (no IPv6 or dual-stack on Windows)",
                v6.join(", ")
            ),
            "use an IPv4-only cluster for Windows nodes, or disable the IPv6 pools",
        );
    }
    let v4: Vec<&IpPool> = f.ip_pools.iter().filter(|p| !p.ipv6).collect();
    if v4.is_empty() {
        return Check::fail(
            ID,
            "there is no IPv4 pool",
            "create an IPv4 IPPool (VXLAN for the vxlan backend)",
        );
    }
    if let Some(c) = cross_subnet(&v4) {
        return c;
    }
    let mut kinds: Vec<&str> = v4.iter().map(|p| encapsulation(p)).collect();
    kinds.dedup();
    if kinds.len() > 1 {
        let list: Vec<String> = v4
            .iter()
            .map(|p| format!("{} ({})", p.name, encapsulation(p)))
            .collect();
        return Check::fail(
            ID,
            format!(
                "IP pools mix encapsulations: {}; Windows needs one type",
                list.join(", ")
            ),
            "give every IPv4 pool the same encapsulation",
        );
    }
    let want = match c.backend {
        Backend::Vxlan => "vxlan",
        Backend::WindowsBgp => "none",
        Backend::None => {
            return Check::pass(
                ID,
                format!(
                    "{} IPv4 pool(s); backend none uses them as they are",
                    v4.len()
                ),
            );
        }
    };
    if kinds[0] == want {
        Check::pass(
            ID,
            format!(
                "{} IPv4 pool(s), encapsulation {want}, matching backend {}",
                v4.len(),
                c.backend
            ),
        )
    } else {
        Check::fail(
            ID,
            format!(
                "the IP pools use encapsulation {} but backend {} needs {want}",
                kinds[0], c.backend
            ),
            "set backend to match the pools (vxlan for VXLAN pools, windows-bgp for unencapsulated pools)",
        )
    }
}

fn vxlan_vni(f: &ClusterFacts, c: &Config, asked: &Asked) -> Check {
    const ID: &str = "vxlan-vni";
    if c.backend != Backend::Vxlan {
        return Check::skip(ID, format!("backend is {}", c.backend));
    }
    let cluster = f.felix.vni();
    let judged = judge::vni_cluster(c.vxlan.vni.get(), &f.felix).filter(|_| asked.vni_explicit);
    match judged {
        None => Check::pass(
            ID,
            format!("VNI {cluster} ({})", judge::vni_source(&f.felix)),
        ),
        Some(finding) => Check::of(ID, super::Verdict::Fail, finding.said),
    }
}

fn vxlan_port(f: &ClusterFacts, c: &Config) -> Check {
    const ID: &str = "vxlan-port";
    if c.backend != Backend::Vxlan {
        return Check::skip(ID, format!("backend is {}", c.backend));
    }
    match f.felix.vxlan_port {
        None | Some(4789) => Check::pass(ID, "VXLAN port 4789"),
        Some(p) => Check::fail(
            ID,
            format!("FelixConfiguration vxlanPort is {p}; Windows supports only 4789"),
            r#"calicoctl patch felixconfiguration default -p '{"spec":{"vxlanPort":4789}}'"#,
        ),
    }
}

fn wireguard(f: &ClusterFacts) -> Check {
    if f.felix.wireguard_enabled == Some(true) {
        Check::fail(
            "wireguard",
            "WireGuard is enabled; Calico does not support it on Windows nodes",
            r#"calicoctl patch felixconfiguration default -p '{"spec":{"wireguardEnabled":false}}'"#,
        )
    } else {
        Check::pass("wireguard", "WireGuard is off")
    }
}

fn datastore(f: &ClusterFacts, c: &Config) -> Check {
    const ID: &str = "datastore";
    let ours = c.datastore.to_string();
    match f.datastore.as_deref() {
        None => Check::skip(ID, "Calico not found on the cluster"),
        Some(d) if d == ours => Check::pass(ID, format!("datastore {d}")),
        Some(d) => Check::fail(
            ID,
            format!("datastore is {ours} in the config but the cluster uses {d}"),
            format!("--set datastore={d} (or remove datastore from the config)"),
        ),
    }
}

fn rbac(f: &ClusterFacts) -> Check {
    const ID: &str = "rbac";
    let Some(permissions) = &f.permissions else {
        return Check::skip(ID, "the identity's rights were not asked by this command");
    };
    let denied: Vec<String> = permissions
        .iter()
        .filter(|p| !p.allowed)
        .map(crate::cluster::facts::Permission::describe)
        .collect();
    if denied.is_empty() {
        Check::pass(
            ID,
            format!(
                "the kubeconfig may make every API call install, reconfigure, uninstall and status make ({} access reviews)",
                permissions.len()
            ),
        )
    } else {
        Check::fail(
            ID,
            format!("the kubeconfig's identity may not: {}", denied.join("; ")),
            format!(
                "grant them with the narrow roles 'calicoctl-win fleet rbac --calico-namespace {}' writes (kubectl apply -f - as an admin), or use an admin kubeconfig",
                f.namespace
            ),
        )
    }
}

fn block_capacity(f: &ClusterFacts, c: &Config) -> Check {
    const ID: &str = "block-capacity";
    let pools = ipam::node_pools(&f.ip_pools, f.node_exists.then_some(&f.node_labels));
    let Some(pool) = pools
        .iter()
        .min_by_key(|p| ipam::pods_per_block(p.block_size))
    else {
        return Check::skip(ID, "no enabled IPv4 pool takes this node");
    };
    let holds = ipam::pods_per_block(pool.block_size);
    let block = format!(
        "a /{} block of pool {} holds {holds} pods ({} addresses minus the {} Windows reserves)",
        pool.block_size,
        pool.name,
        holds + ipam::WINDOWS_RESERVED,
        ipam::WINDOWS_RESERVED
    );
    if !c.windows_use_single_network {
        return Check::pass(
            ID,
            format!(
                "{block}; windows_use_single_network is off, so the node may claim more blocks"
            ),
        );
    }
    let (max, whose) = match f.node_max_pods {
        Some(m) => (
            m,
            format!("kubelet schedules up to {m} (the Node's status.capacity.pods)"),
        ),
        None if !f.node_exists => {
            return Check::warn(
                ID,
                format!(
                    "{block}, the node's only block; node {} is not registered yet, so kubelet's maxPods is unknown (its default is 110)",
                    f.node
                ),
                format!("start kubelet with --max-pods={holds} or less"),
            );
        }
        None => {
            return Check::pass(
                ID,
                format!("{block}; the Node does not report its pod capacity"),
            );
        }
    };
    if holds >= max {
        return Check::pass(ID, format!("{block}, the node's only block; {whose}"));
    }
    Check::fail(
        ID,
        format!("{block}, the node's only block, but {whose}: pods beyond {holds} get no address"),
        format!(
            "before pods exist, give Windows nodes a pool with larger blocks (blockSize cannot change on a pool: create one with blockSize: {} for {} pods and a nodeSelector of kubernetes.io/os == 'windows', and disable {} for them), or lower kubelet's --max-pods to {holds}",
            bigger(max),
            ipam::pods_per_block(bigger(max)),
            pool.name
        ),
    )
}

/// The largest block size (the smallest block) that holds `pods` on Windows.
fn bigger(pods: u64) -> u8 {
    (20..=32)
        .rev()
        .find(|&b| ipam::pods_per_block(b) >= pods)
        .unwrap_or(20)
}
