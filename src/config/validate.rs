//! Checks that involve more than one setting.

use super::model::Config;
use super::problem::Problem;
use super::resolve::Resolver;
use super::types::*;

/// Environment variables the tool derives from settings: extra_env may not set them.
const MANAGED_ENV: &[(&str, &str)] = &[
    ("FELIX_FELIXHOSTNAME", "node.name"),
    ("FELIX_VXLANVNI", "vxlan.vni"),
    ("FELIX_METADATAADDR", "(always none on Windows)"),
    ("USE_POD_CIDR", "cni.ipam_type"),
    ("CALICO_NODENAME_FILE", "install_root"),
];

/// Felix's Prometheus variables, derived from settings with `metrics.enabled` only (its
/// firewall rule opens metrics.felix_port): with metrics off the tool renders neither, and
/// extra_env sets them as config.ps1 would (`render::env::felix_metrics`).
const METRICS_ENV: &[(&str, &str)] = &[
    ("FELIX_PROMETHEUSMETRICSENABLED", "metrics.enabled"),
    ("FELIX_PROMETHEUSMETRICSPORT", "metrics.felix_port"),
];

/// The node's own listening TCP ports, which a metrics port may not take: Kubernetes' defaults
/// (kubernetes pkg/cluster/ports/ports.go), Felix's health port (calico v3.32.1
/// felix/config/config_params.go HealthPort) and BGP's (RFC 4271 section 8.2.1).
const NODE_PORTS: &[(u16, &str)] = &[
    (179, "BGP's"),
    (crate::layout::FELIX_HEALTH_PORT, "Felix's health port"),
    (10248, "kubelet's healthz port"),
    (10249, "kube-proxy's metrics port"),
    (10250, "kubelet's port"),
    (10256, "kube-proxy's healthz port"),
];

/// Adds a problem for every rule that involves more than one setting and is broken.
pub fn cross_check(c: &Config, r: &mut Resolver) {
    backend_and_datastore(c, r);
    partial_tls(r);
    lists_and_names(c, r);
    install_root_of_its_own(c, r);
    metrics(c, r);
    // `metrics.diags` is served on the metrics endpoint: without it there is none.
    if c.metrics.diags && !c.metrics.enabled {
        refuse(r, &["metrics.diags", "metrics.enabled"], Some("true".into()),
            "metrics.diags is served on calicoctl-win's metrics endpoint: set metrics.enabled too (and metrics.source_ranges to the addresses the pod proxy connects from: the API server's, or the Konnectivity agents')".into());
    }
}

/// Metrics on need a source range to open their ports to, and two ports of their own.
fn metrics(c: &Config, r: &mut Resolver) {
    let m = &c.metrics;
    if !m.enabled || !involved_ok(r, &["metrics.enabled"]) {
        return;
    }
    if m.source_ranges.is_empty() {
        refuse(r, &["metrics.source_ranges"], None,
            "metrics.enabled needs the CIDRs scrapes arrive from (their ports are opened to nobody else), like 10.0.0.0/16: a Prometheus pod's scrape arrives from its node's address where its IP pool has natOutgoing (Calico's default), so list the nodes' subnet".into());
    }
    // calicoctl-win's endpoint listens on IPv4's every address (0.0.0.0), not IPv6's: an IPv6
    // source could reach Felix's port and never this one. Refused, not half served.
    if let Some(v6) = m.source_ranges.iter().find(|c| !c.is_ipv4()) {
        refuse(
            r,
            &["metrics.source_ranges"],
            Some(v6.to_string()),
            format!(
                "{v6} is an IPv6 range: the metrics endpoints listen on IPv4 (0.0.0.0) only; give the scrapers' IPv4 ranges"
            ),
        );
    }
    // A prefix of 0 is every address, and no subnet the firewall takes: MS-FASP's
    // FW_IPV4_SUBNET says a mask of 0x00000000 is invalid, so Windows would refuse the rule
    // mid-run or keep it in another form ('*') that never reads back as made.
    if let Some(all) = m.source_ranges.iter().find(|c| c.prefix() == 0) {
        refuse(
            r,
            &["metrics.source_ranges"],
            Some(all.to_string()),
            format!(
                "{all} is every address, which a firewall rule's remote addresses cannot hold (a subnet mask of 0.0.0.0 is invalid): list the scrapers' real ranges, like 10.0.0.0/8"
            ),
        );
    }
    let port = m.port.0;
    if m.port == m.felix_port {
        refuse(
            r,
            &["metrics.port", "metrics.felix_port"],
            Some(port.to_string()),
            format!(
                "port {port} is metrics.felix_port too: calicoctl-win and Felix serve on two different ports"
            ),
        );
    }
    for (key, port) in [
        ("metrics.port", port),
        ("metrics.felix_port", m.felix_port.0),
    ] {
        if let Some((_, whose)) = NODE_PORTS.iter().find(|(p, _)| *p == port) {
            refuse(
                r,
                &[key],
                Some(port.to_string()),
                format!("port {port} is {whose} on the node: choose another"),
            );
        }
    }
}

/// Directories Windows ships with an access list of its own (owner TrustedInstaller or
/// SYSTEM, ALL APPLICATION PACKAGES, CREATOR OWNER): install protects its root, which would
/// replace that list. The whole Windows directory, and these exactly, on any drive.
const SYSTEM_DIRS: &[&str] = &[
    "program files",
    "program files (x86)",
    "programdata",
    "users",
];

/// Why `path` cannot be an install root: a drive root, or a directory Windows ships.
pub fn system_directory(path: &str) -> Option<&'static str> {
    let lower = path.trim_end_matches(['\\', '/']).to_ascii_lowercase();
    let rest = lower
        .get(2..)
        .filter(|_| lower.as_bytes().get(1) == Some(&b':'))?;
    let rest = rest.trim_start_matches(['\\', '/']);
    if rest.is_empty() {
        return Some("a drive's root");
    }
    let first = rest.split(['\\', '/']).next().unwrap_or_default();
    if first == "windows" {
        return Some("Windows' own directory");
    }
    (SYSTEM_DIRS.contains(&rest)).then_some("a directory Windows ships with its own access list")
}

/// The install root is a directory of Calico's own: never a drive root or a system directory,
/// whose access list install would replace.
fn install_root_of_its_own(c: &Config, r: &mut Resolver) {
    let root = c.install_root.as_str();
    if let Some(what) = system_directory(root) {
        refuse(
            r,
            &["install_root"],
            Some(root.to_owned()),
            format!(
                "{root} is {what}: install gives its root an access list of its own (SYSTEM and Administrators only), which would replace Windows' list; use a directory of Calico's own, like C:\\CalicoWindows or C:\\Program Files\\Calico"
            ),
        );
    }
}

/// Whether none of `keys` failed on its own (a setting that failed is not checked again).
fn involved_ok(r: &Resolver, keys: &[&str]) -> bool {
    keys.iter().all(|k| !r.failed.contains(k))
}

/// A problem of `involved[0]`, with where its value came from, unless one of `involved`
/// failed on its own.
fn refuse(r: &mut Resolver, involved: &[&'static str], value: Option<String>, message: String) {
    if involved_ok(r, involved) {
        add(r, involved[0], value, message);
    }
}

/// A problem of `key`, with where its value came from.
fn add(r: &mut Resolver, key: &'static str, value: Option<String>, message: String) {
    let source = r.source(key);
    r.problems.push(Problem::new(key, value, source, message));
}

/// The IPAM the backend needs, what the datastore needs, kube-proxy's network.
fn backend_and_datastore(c: &Config, r: &mut Resolver) {
    if let Some(path) = &c.kube_proxy.path
        && c.backend == Backend::None
    {
        refuse(r, &["kube_proxy.path", "backend"], Some(path.to_string()),
            "the none backend makes no Calico network for kube-proxy to run on (the platform runs it): leave kube_proxy.path unset".into());
    }
    if c.backend == Backend::Vxlan && c.cni.ipam_type == IpamType::HostLocal {
        refuse(
            r,
            &["cni.ipam_type", "backend"],
            Some("host-local".into()),
            "Calico VXLAN requires calico-ipam; host-local works only with windows-bgp".into(),
        );
    }
    if c.datastore == Datastore::Etcdv3 && c.etcd.endpoints.is_empty() {
        refuse(
            r,
            &["etcd.endpoints", "datastore"],
            None,
            "the etcdv3 datastore needs at least one etcd endpoint".into(),
        );
    }
    if c.datastore == Datastore::Kubernetes && c.kubeconfig.is_none() {
        refuse(r, &["kubeconfig", "datastore"], Some(String::new()),
            "the kubernetes datastore needs a kubeconfig path (calico-node, felix and the CNI plugin read it)".into());
    }
}

/// The etcd TLS files: all three or none.
fn partial_tls(r: &mut Resolver) {
    let tls_keys = ["etcd.key_file", "etcd.cert_file", "etcd.ca_cert_file"];
    let given: Vec<&str> = tls_keys
        .iter()
        .copied()
        .filter(|k| r.shown.get(k).is_some_and(|s| !s.value.is_null()))
        .collect();
    if !given.is_empty() && given.len() < tls_keys.len() && involved_ok(r, &tls_keys) {
        for missing in tls_keys.iter().copied().filter(|k| !given.contains(k)) {
            add(
                r,
                missing,
                None,
                format!(
                    "etcd TLS is partly configured ({} given): give all three TLS files or none",
                    given.join(", ")
                ),
            );
        }
    }
}

/// The lists that need an entry, the CNI file's name, the extra environment's names.
fn lists_and_names(c: &Config, r: &mut Resolver) {
    for (key, empty, what) in [
        (
            "service_cidrs",
            c.service_cidrs.is_empty(),
            "Kubernetes service CIDR, like 10.96.0.0/12",
        ),
        (
            "dns.servers",
            c.dns.servers.is_empty(),
            "DNS server IP, like 10.96.0.10",
        ),
    ] {
        if empty {
            refuse(r, &[key], None, format!("give at least one {what}"));
        }
    }
    let name = c.cni.conf_filename.as_str();
    let ext_ok = [".conf", ".conflist", ".json"]
        .iter()
        .any(|e| name.len() > e.len() && name.ends_with(e));
    if !ext_ok || name.contains(['\\', '/', ':']) {
        refuse(
            r,
            &["cni.conf_filename"],
            Some(name.into()),
            "allowed: a file name (no directory) ending in .conf, .conflist or .json".into(),
        );
    }
    for (key, vars) in [
        ("extra_env.node", &c.extra_env.node),
        ("extra_env.felix", &c.extra_env.felix),
        ("extra_env.confd", &c.extra_env.confd),
    ] {
        for (name, value) in vars {
            if let Some(problem) = env_var_problem(name, value, c.metrics.enabled) {
                add(r, key, Some(format!("{name}={value}")), problem);
            }
        }
    }
}

fn env_var_problem(name: &str, value: &str, metrics_on: bool) -> Option<String> {
    if !super::import_ps1::is_var_name(name) {
        return Some(
            "allowed: variable names of letters, digits and '_', not starting with a digit".into(),
        );
    }
    if value.contains(['\n', '\r', '\0']) {
        return Some("allowed: values on a single line".into());
    }
    let upper = name.to_ascii_uppercase();
    if let Some((_, key)) = METRICS_ENV.iter().find(|(n, _)| metrics_on && *n == upper) {
        return Some(format!(
            "{name} is set by calicoctl-win from {key} while metrics.enabled is true; remove it from extra_env"
        ));
    }
    let settings = super::spec::SETTINGS
        .iter()
        .filter_map(|s| Some((s.ps1?, s.key)));
    let mut managed = MANAGED_ENV.iter().copied().chain(settings);
    let (_, key) = managed.find(|(n, _)| *n == upper)?;
    Some(format!(
        "{name} is set by calicoctl-win from {key}; change that setting instead"
    ))
}

#[cfg(test)]
mod install_root_tests {
    use super::system_directory;

    /// C:\, C:\Program Files and C:\Windows\System32 through the command: tests/bad-configs
    /// 49 to 51.
    #[test]
    fn a_drive_root_or_a_system_directory_is_no_install_root() {
        for bad in [
            "C:",
            "d:/",
            "c:\\program files (x86)\\",
            "C:\\Windows",
            "C:\\ProgramData",
            "C:\\Users",
        ] {
            assert!(system_directory(bad).is_some(), "{bad}");
        }
        for good in [
            "C:\\CalicoWindows",
            "C:\\Program Files\\Calico",
            "D:\\calico",
            "C:\\ProgramData\\Calico",
            "C:\\WindowsCalico",
        ] {
            assert_eq!(system_directory(good), None, "{good}");
        }
    }
}
