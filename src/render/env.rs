//! The environment of each Calico service, as config.ps1 plus the service scripts set it.

use crate::config::Config;
use crate::config::types::{Backend, Datastore, IpamType, NodeIp};
use crate::layout::Role;
use crate::layout::env::EnvVars;
use std::collections::BTreeMap;

/// The roles a configuration runs, in start order: confd only for windows-bgp, kube-proxy
/// when it is configured and there are Calico networks for it.
pub fn roles_for(c: &Config) -> Vec<Role> {
    let mut roles = vec![Role::Node, Role::Felix];
    if c.backend == Backend::WindowsBgp {
        roles.push(Role::Confd);
    }
    if c.kube_proxy.path.is_some() && c.backend != Backend::None {
        roles.push(Role::KubeProxy);
    }
    roles
}

/// The variables every service sees: what config.ps1 sets (each service script dot-sources it).
fn common(c: &Config) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    let mut set = |k: &'static str, v: String| {
        env.insert(k.to_owned(), v);
    };
    set(EnvVars::KUBE_NETWORK, c.kube_network.to_string());
    set(EnvVars::CALICO_NETWORKING_BACKEND, c.backend.to_string());
    set(EnvVars::K8S_SERVICE_CIDR, joined(&c.service_cidrs));
    set(EnvVars::DNS_NAME_SERVERS, joined(&c.dns.servers));
    set(EnvVars::DNS_SEARCH, joined(&c.dns.search));
    set(EnvVars::CALICO_DATASTORE_TYPE, c.datastore.to_string());
    if let Some(k) = &c.kubeconfig {
        set(EnvVars::KUBECONFIG, k.to_string());
    }
    if !c.etcd.endpoints.is_empty() {
        set(EnvVars::ETCD_ENDPOINTS, joined(&c.etcd.endpoints));
    }
    if let Some(tls) = &c.etcd.tls {
        set(EnvVars::ETCD_KEY_FILE, tls.key_file.to_string());
        set(EnvVars::ETCD_CERT_FILE, tls.cert_file.to_string());
        set(EnvVars::ETCD_CA_CERT_FILE, tls.ca_cert_file.to_string());
    }
    set(EnvVars::CNI_BIN_DIR, c.cni.bin_dir.to_string());
    set(EnvVars::CNI_CONF_DIR, c.cni.conf_dir.to_string());
    set(EnvVars::CNI_CONF_FILENAME, c.cni.conf_filename.to_string());
    set(EnvVars::CNI_IPAM_TYPE, c.cni.ipam_type.to_string());
    set(EnvVars::VXLAN_VNI, c.vxlan.vni.to_string());
    set(EnvVars::VXLAN_MAC_PREFIX, c.vxlan.mac_prefix.to_string());
    if let Some(a) = &c.vxlan.adapter {
        set(EnvVars::VXLAN_ADAPTER, a.to_string());
    }
    set(EnvVars::NODENAME, c.node.name.to_string());
    set(
        EnvVars::CALICO_K8S_NODE_REF,
        c.node.k8s_node_ref.to_string(),
    );
    set(
        EnvVars::STARTUP_VALID_IP_TIMEOUT,
        c.node.startup_valid_ip_timeout.as_secs().to_string(),
    );
    set(
        EnvVars::IP,
        match c.node.ip {
            NodeIp::Autodetect => "autodetect".to_owned(),
            fixed @ NodeIp::Fixed(..) => fixed.to_string(),
        },
    );
    if let Some((m, _)) = autodetection_method(c) {
        set(EnvVars::IP_AUTODETECTION_METHOD, m);
    }
    set(EnvVars::CALICO_LOG_DIR, c.logs.dir.to_string());
    set(
        EnvVars::FELIX_LOGSEVERITYFILE,
        c.logs.felix_file_severity.to_string(),
    );
    set(
        EnvVars::FELIX_LOGSEVERITYSYS,
        c.logs.felix_sys_severity.to_string(),
    );
    if let Some(s) = &c.logs.felix_screen_severity {
        set(EnvVars::FELIX_LOGSEVERITYSCREEN, s.to_string());
    }
    if let Some(s) = &c.logs.bgp_screen_severity {
        set(EnvVars::BGP_LOGSEVERITYSCREEN, s.to_string());
    }
    set(
        EnvVars::USE_POD_CIDR,
        (c.cni.ipam_type == IpamType::HostLocal).to_string(),
    );
    env
}

/// calico-node's own default when `IP_AUTODETECTION_METHOD` is unset: the first address of
/// the first interface it enumerates (`first-found`, projectcalico/calico v3.31.0
/// `node/pkg/lifecycle/startup/autodetection/autodetection_methods.go`), which on a node with
/// two NICs may be the wrong one (rancher/rke2#3388).
pub const KUBERNETES_INTERNAL_IP: &str = "kubernetes-internal-ip";

/// How calico-node finds this node's address, and why: the configured method; else, with
/// `node.ip` autodetect on the Kubernetes datastore, `kubernetes-internal-ip` (the Node's
/// InternalIP, which cannot pick another NIC); else none (first-found, or the fixed `node.ip`).
pub fn autodetection_method(c: &Config) -> Option<(String, &'static str)> {
    if let Some(m) = &c.node.ip_autodetection_method {
        return Some((m.to_string(), "node.ip_autodetection_method"));
    }
    let reads_node = c.datastore == Datastore::Kubernetes && c.kubeconfig.is_some();
    (c.node.ip == NodeIp::Autodetect && reads_node).then(|| {
        (
            KUBERNETES_INTERNAL_IP.to_owned(),
            "node.ip is autodetect and node.ip_autodetection_method unset: the Node's InternalIP, never another NIC (calico-node's own default, first-found, takes the first interface it lists)",
        )
    })
}

/// Items as Calico's scripts pass lists: comma-separated.
pub(super) fn joined<T: ToString>(items: &[T]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// The full environment of one service: common variables, the ones its script derives, the
/// API group pin (`HostFacts::api_group_pin`), and the user's extra variables, which win.
pub fn environment(c: &Config, role: Role, api_group: Option<&str>) -> BTreeMap<String, String> {
    let mut env = common(c);
    if let Some(g) = api_group.filter(|_| role != Role::KubeProxy) {
        env.insert(EnvVars::CALICO_API_GROUP.into(), g.to_owned());
    }
    let extra = match role {
        Role::Node => {
            env.insert(
                EnvVars::CALICO_NODENAME_FILE.into(),
                c.install_root.join("nodename").to_string(),
            );
            &c.extra_env.node
        }
        Role::Felix => {
            env.insert(EnvVars::FELIX_FELIXHOSTNAME.into(), c.node.name.to_string());
            env.insert(EnvVars::FELIX_METADATAADDR.into(), "none".into());
            env.insert(EnvVars::FELIX_VXLANVNI.into(), c.vxlan.vni.to_string());
            // Felix's health endpoint on the loopback, which status and CalicoNode ask.
            env.insert(EnvVars::FELIX_HEALTHENABLED.into(), "true".into());
            env.insert(
                EnvVars::FELIX_HEALTHHOST.into(),
                crate::layout::FELIX_HEALTH_HOST.into(),
            );
            env.insert(
                EnvVars::FELIX_HEALTHPORT.into(),
                crate::layout::FELIX_HEALTH_PORT.to_string(),
            );
            // Felix's Prometheus endpoint with `metrics.enabled` only; off, nothing, as Calico's
            // scripts render none (v3.32.1 CalicoWindows config.ps1, felix/felix-service.ps1;
            // the environment outranks the datastore: felix/config config_params.go
            // SourcesInDescendingOrder). On, Felix serves it on Windows as elsewhere
            // (felix/daemon/daemon.go ServePrometheusMetricsHTTP; driver_windows.go
            // ConfigurePrometheusMetrics) on the port our rule opens to metrics.source_ranges;
            // extra_env may not set these two then (config::validate).
            if c.metrics.enabled {
                env.insert(
                    EnvVars::FELIX_PROMETHEUSMETRICSENABLED.into(),
                    "true".into(),
                );
                env.insert(
                    EnvVars::FELIX_PROMETHEUSMETRICSPORT.into(),
                    c.metrics.felix_port.0.to_string(),
                );
            }
            &c.extra_env.felix
        }
        Role::Confd => &c.extra_env.confd,
        Role::KubeProxy => {
            // What kube-proxy-service.ps1 set: the literal network name (KUBE_NETWORK may be a
            // pattern for felix, kube-proxy takes a name), and its own inputs.
            env.insert(
                EnvVars::KUBE_NETWORK.into(),
                crate::layout::CALICO_NETWORK.into(),
            );
            if let Some(p) = &c.kube_proxy.path {
                env.insert(EnvVars::KUBE_PROXY_PATH.into(), p.to_string());
            }
            env.insert(
                EnvVars::KUBE_PROXY_KUBECONFIG.into(),
                c.kube_proxy.kubeconfig.to_string(),
            );
            return env;
        }
    };
    env.extend(extra.iter().cloned());
    env
}

/// The environment file: a header comment, then `NAME=VALUE` lines sorted by name.
pub fn render(c: &Config, role: Role, api_group: Option<&str>) -> String {
    let mut out = String::from(
        "# Environment of this Calico service, rendered by calicoctl-win. Do not edit: change calico-windows.yaml.\n",
    );
    out.extend(
        environment(c, role, api_group)
            .into_iter()
            .map(|(k, v)| format!("{k}={v}\n")),
    );
    out
}

/// An environment file's `NAME=VALUE` lines, as `render` writes them and the services read
/// them; blank lines and `#` comments are skipped.
pub fn parse(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.to_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::config::tests::from_sets as config;

    /// Every key a service's file carries is one `layout::env` names (so docs/configuration.md,
    /// which lists them, is complete): the settings that add a key only when set are all set,
    /// for each role. A key written here by hand and not listed fails.
    #[test]
    fn every_key_the_files_carry_is_listed_once() {
        let c = config(&[
            "node.name=win-1",
            "datastore=etcdv3",
            "etcd.endpoints=https://10.0.0.5:2379",
            r"etcd.key_file=C:\e\key.pem",
            r"etcd.cert_file=C:\e\cert.pem",
            r"etcd.ca_cert_file=C:\e\ca.pem",
            r"kubeconfig=C:\k\calico.kubeconfig",
            "vxlan.adapter=Ethernet 2",
            "node.ip_autodetection_method=interface=Ethernet.*",
            "logs.felix_screen_severity=info",
            "logs.bgp_screen_severity=info",
            r"kube_proxy.path=C:\k\kube-proxy.exe",
            "metrics.enabled=true",
            "metrics.source_ranges=10.0.0.0/8",
        ]);
        let mut seen = std::collections::BTreeSet::new();
        for role in [Role::Node, Role::Felix, Role::Confd, Role::KubeProxy] {
            for key in environment(&c, role, Some("projectcalico.org/v3")).into_keys() {
                assert!(
                    crate::layout::env::ALL.contains(&key.as_str()),
                    "{key} ({role:?}) is not in layout::env::ALL"
                );
                seen.insert(key);
            }
        }
        let unused: Vec<&&str> = crate::layout::env::ALL
            .iter()
            .filter(|k| !seen.contains(**k))
            .collect();
        assert!(unused.is_empty(), "listed but never written: {unused:?}");
        let mut once = crate::layout::env::ALL.to_vec();
        once.sort_unstable();
        once.dedup();
        assert_eq!(once.len(), crate::layout::env::ALL.len());
    }

    /// A node.ip_autodetection_method given is kept over `kubernetes-internal-ip`. Without one,
    /// the goldens of tests/cli golden.rs prove the rest: `kubernetes-internal-ip` with
    /// `node.ip` autodetect and a kubeconfig (vxlan_kubernetes_containerd), none for a fixed
    /// address (windows_bgp) or without the Kubernetes datastore (etcdv3_with_tls: calico-node
    /// could not read the Node, `AutoDetectCIDR`'s "Cannot use method 'kubernetes-internal-ip'
    /// when not running on a Kubernetes cluster").
    #[test]
    fn a_given_autodetection_method_is_kept() {
        let c = config(&[
            "node.name=win-1",
            r"kubeconfig=C:\k\calico.kubeconfig",
            "node.ip_autodetection_method=interface=Ethernet 2",
        ]);
        let env = environment(&c, Role::Node, None);
        assert_eq!(
            env[EnvVars::IP_AUTODETECTION_METHOD],
            "interface=Ethernet 2"
        );
    }
}
