//! The table of every setting: its YAML key, its config.ps1 variable and its built-in default.
//! One table feeds the YAML key check, the environment layer, `config import-ps1` and the docs.

/// The shape of a setting's raw value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Scalar,
    /// A YAML sequence; from the environment or `--set`, a comma-separated list.
    List,
    /// A YAML mapping of names to values (extra environment); only from the file.
    Map,
}

/// A built-in default, as text, or a description of how it is derived.
#[derive(Clone, Copy, Debug)]
pub enum DefaultValue {
    /// Unset unless given.
    Unset,
    Value(&'static str),
    List(&'static [&'static str]),
    /// Computed from other settings or host facts; the text says how.
    Derived(&'static str),
}

/// One setting.
#[derive(Debug)]
pub struct Spec {
    /// Dotted path of the key in `calico-windows.yaml`.
    pub key: &'static str,
    pub kind: Kind,
    /// The config.ps1 variable, which `config import-ps1` maps to this key.
    pub ps1: Option<&'static str>,
    /// Whether the environment variable `ps1` names is read as a layer above the file.
    pub from_env: bool,
    pub default: DefaultValue,
    pub doc: &'static str,
}

const fn s(key: &'static str, ps1: &'static str, default: DefaultValue, doc: &'static str) -> Spec {
    Spec {
        key,
        kind: Kind::Scalar,
        ps1: Some(ps1),
        from_env: true,
        default,
        doc,
    }
}

const fn l(key: &'static str, ps1: &'static str, default: DefaultValue, doc: &'static str) -> Spec {
    Spec {
        kind: Kind::List,
        ..s(key, ps1, default, doc)
    }
}

/// A setting of calicoctl-win's own: no config.ps1 variable.
const fn own(key: &'static str, default: DefaultValue, doc: &'static str) -> Spec {
    Spec {
        key,
        kind: Kind::Scalar,
        ps1: None,
        from_env: false,
        default,
        doc,
    }
}

/// Extra environment for one service: a mapping, only from the file (or `--set KEY.NAME`).
const fn env_map(key: &'static str, doc: &'static str) -> Spec {
    Spec {
        kind: Kind::Map,
        ..own(key, Unset, doc)
    }
}

use DefaultValue::{Derived, List, Unset, Value};

pub static SETTINGS: &[Spec] = &[
    s(
        "backend",
        "CALICO_NETWORKING_BACKEND",
        Value("vxlan"),
        "Networking backend: vxlan, windows-bgp (alias bgp) or none (a third-party CNI; policy only).",
    ),
    s(
        "datastore",
        "CALICO_DATASTORE_TYPE",
        Value("kubernetes"),
        "Calico datastore: kubernetes or etcdv3.",
    ),
    Spec {
        key: "kubeconfig",
        kind: Kind::Scalar,
        ps1: Some("KUBECONFIG"),
        from_env: false,
        default: Derived("<install_root>\\calico-kube-config"),
        doc: "kubeconfig used by calico-node, felix, confd and the CNI plugin. The KUBECONFIG environment variable is deliberately not read: a machine-wide KUBECONFIG for kubectl once broke Calico.",
    },
    l(
        "etcd.endpoints",
        "ETCD_ENDPOINTS",
        Unset,
        "etcd URLs (etcdv3 only), like https://10.0.0.5:2379.",
    ),
    s(
        "etcd.key_file",
        "ETCD_KEY_FILE",
        Unset,
        "etcd client key file (give all three TLS files or none).",
    ),
    s(
        "etcd.cert_file",
        "ETCD_CERT_FILE",
        Unset,
        "etcd client certificate file.",
    ),
    s(
        "etcd.ca_cert_file",
        "ETCD_CA_CERT_FILE",
        Unset,
        "etcd CA certificate file.",
    ),
    l(
        "service_cidrs",
        "K8S_SERVICE_CIDR",
        List(&["10.96.0.0/12"]),
        "Kubernetes service CIDRs: excluded from outbound NAT and routed through the overlay.",
    ),
    l(
        "dns.servers",
        "DNS_NAME_SERVERS",
        List(&["10.96.0.10"]),
        "Cluster DNS server IPs given to pods.",
    ),
    l(
        "dns.search",
        "DNS_SEARCH",
        List(&["svc.cluster.local"]),
        "DNS search domains given to pods.",
    ),
    own(
        "container_runtime",
        Value("containerd"),
        "Container runtime: containerd or docker. Decides the default CNI directories and the route policy type.",
    ),
    s(
        "cni.bin_dir",
        "CNI_BIN_DIR",
        Derived("containerd: C:\\Program Files\\containerd\\cni\\bin; docker: c:\\k\\cni"),
        "Where the CNI plugin binaries go (kubelet/containerd's CNI bin dir).",
    ),
    s(
        "cni.conf_dir",
        "CNI_CONF_DIR",
        Derived("containerd: C:\\Program Files\\containerd\\cni\\conf; docker: c:\\k\\cni\\config"),
        "Where the CNI config file goes (kubelet/containerd's CNI conf dir).",
    ),
    s(
        "cni.conf_filename",
        "CNI_CONF_FILENAME",
        Value("10-calico.conf"),
        "CNI config file name.",
    ),
    s(
        "cni.ipam_type",
        "CNI_IPAM_TYPE",
        Value("calico-ipam"),
        "IPAM plugin: calico-ipam or host-local (BGP only).",
    ),
    own(
        "cni.template",
        Unset,
        "A CNI config template of your own (for example cni.conf.template from the Calico zip); the built-in one when unset.",
    ),
    s(
        "vxlan.vni",
        "VXLAN_VNI",
        Value("4096"),
        "VXLAN VNI; must equal the VNI the cluster's Felix uses: FelixConfiguration vxlanVNI, or Felix's default 4096 when it sets none. At least 4096.",
    ),
    s(
        "vxlan.mac_prefix",
        "VXLAN_MAC_PREFIX",
        Value("0E-2A"),
        "Prefix of pod MAC addresses, xx-xx in hex.",
    ),
    s(
        "vxlan.adapter",
        "VXLAN_ADAPTER",
        Unset,
        "Network adapter the External vSwitch binds; unset: the one holding the node IP (the Node's InternalIP, else kubelet's --node-ip), else the default route's.",
    ),
    s(
        "kube_network",
        "KUBE_NETWORK",
        Value("Calico.*"),
        "Regular expression matching the HNS network(s) that hold pods.",
    ),
    s(
        "node.name",
        "NODENAME",
        Derived("this host's name in lower case"),
        "Node name; must equal kubelet's.",
    ),
    s(
        "node.k8s_node_ref",
        "CALICO_K8S_NODE_REF",
        Derived("node.name"),
        "Kubernetes Node this Calico node belongs to.",
    ),
    s(
        "node.ip",
        "IP",
        Value("autodetect"),
        "Node IPv4 address, or autodetect.",
    ),
    s(
        "node.ip_autodetection_method",
        "IP_AUTODETECTION_METHOD",
        Unset,
        "calico-node IP autodetection method, like interface=Ethernet.*; when unset and node.ip is autodetect, kubernetes-internal-ip (the Node's InternalIP) on the kubernetes datastore, else calico-node's first-found. config show says which.",
    ),
    s(
        "node.startup_valid_ip_timeout",
        "STARTUP_VALID_IP_TIMEOUT",
        Value("90s"),
        "How long CalicoNode waits after a reboot for a usable IPv4 address.",
    ),
    own(
        "node.platform",
        Value("auto"),
        "The cloud, for the metadata route the vSwitch drops: auto (probe the EC2 and GCE metadata services at start-up, as Calico's scripts do), bare-metal, ec2, gce, eks or aks.",
    ),
    own(
        "install_root",
        Value("C:\\CalicoWindows"),
        "Where Calico for Windows is installed: a directory of its own, never a drive root or one Windows ships (the Windows directory, Program Files, ProgramData, Users), whose access list install would replace.",
    ),
    s(
        "logs.dir",
        "CALICO_LOG_DIR",
        Derived("<install_root>\\logs"),
        "Directory for the service logs.",
    ),
    s(
        "logs.felix_file_severity",
        "FELIX_LOGSEVERITYFILE",
        Value("none"),
        "Felix file log level (none: the service host captures felix's output).",
    ),
    s(
        "logs.felix_screen_severity",
        "FELIX_LOGSEVERITYSCREEN",
        Unset,
        "Felix screen log level (FelixConfiguration decides when unset).",
    ),
    s(
        "logs.felix_sys_severity",
        "FELIX_LOGSEVERITYSYS",
        Value("none"),
        "Felix syslog level (no syslog on Windows).",
    ),
    s(
        "logs.bgp_screen_severity",
        "BGP_LOGSEVERITYSCREEN",
        Unset,
        "confd log level (windows-bgp only).",
    ),
    own(
        "windows_use_single_network",
        Value("true"),
        "One HNS network for all pod blocks (true), or one network per IPAM block (false).",
    ),
    env_map(
        "extra_env.node",
        "Extra environment for calico-node (the CalicoNode service).",
    ),
    env_map(
        "extra_env.felix",
        "Extra environment for felix (the CalicoFelix service).",
    ),
    env_map(
        "extra_env.confd",
        "Extra environment for confd (the CalicoConfd service).",
    ),
    own(
        "kube_proxy.path",
        Unset,
        "kube-proxy.exe, run by a kube-proxy service as Calico's kube-proxy-service.ps1 ran it (install --set kube_proxy.path=PATH); unset: no kube-proxy service.",
    ),
    own(
        "kube_proxy.kubeconfig",
        Value("C:\\k\\config"),
        "The kubeconfig the kube-proxy service's kube-proxy connects with.",
    ),
    own(
        "metrics.enabled",
        Value("false"),
        "Serve Prometheus metrics: Felix's endpoint and calicoctl-win's own, each port opened by a firewall rule of its own only to metrics.source_ranges.",
    ),
    own(
        "metrics.port",
        Value("9095"),
        "TCP port of calicoctl-win's own metrics endpoint, served by the CalicoNode service.",
    ),
    own(
        "metrics.felix_port",
        Value("9091"),
        "TCP port of Felix's Prometheus endpoint (Felix's PrometheusMetricsPort).",
    ),
    Spec {
        kind: Kind::List,
        ..own(
            "metrics.source_ranges",
            Unset,
            "IPv4 CIDRs allowed to reach the metrics ports (the addresses scrapes arrive from); required when metrics.enabled is true. A Prometheus pod's scrape arrives from its node's address when its IP pool has natOutgoing (Calico's default): list the nodes' subnet; the pods' range where natOutgoing is off or FelixConfiguration `natOutgoingExclusions` is `IPPoolsAndHostIPs`. A prefix of 0 (0.0.0.0/0) is refused: a firewall rule cannot hold it; list the real ranges.",
        )
    },
    own(
        "metrics.diags",
        Value("false"),
        "Also answer GET /diags on metrics.port with the node's redacted diags zip, for 'fleet diags'; needs metrics.enabled, and metrics.source_ranges must then hold the addresses the pod proxy connects from (the API server's; where it reaches the nodes through the Konnectivity service, its agents': see 'fleet diags'). Each request must carry a token of the ServiceAccount calicoctl-win-diags in metrics.diags_namespace made for this node, which CalicoNode checks with a TokenReview (calico-node's account needs create tokenreviews: 'fleet rbac --identity diags').",
    ),
    own(
        "metrics.diags_namespace",
        Value("system-upgrade"),
        "The namespace of the ServiceAccount calicoctl-win-diags whose tokens GET /diags takes: the fleet DaemonSet's namespace (the --namespace of 'fleet plan' and of 'fleet diags').",
    ),
];

impl Spec {
    /// The built-in default as text for people (`(unset)` when there is none).
    pub fn default_text(&self) -> String {
        match self.default {
            DefaultValue::Unset => "(unset)".into(),
            DefaultValue::Value(v) => v.into(),
            DefaultValue::List(v) => v.join(","),
            DefaultValue::Derived(how) => how.into(),
        }
    }
}

/// The setting with this dotted key.
pub fn find(key: &str) -> Option<&'static Spec> {
    SETTINGS.iter().find(|s| s.key == key)
}

/// Whether some setting lives under this YAML section (`vxlan`, `etcd`, ...).
pub fn is_section(name: &str) -> bool {
    SETTINGS
        .iter()
        .any(|s| s.key.split_once('.').is_some_and(|(sec, _)| sec == name))
}

/// The known key closest to an unknown one, for "did you mean" hints.
pub fn closest(unknown: &str) -> Option<&'static str> {
    SETTINGS
        .iter()
        .map(|s| (strsim::levenshtein(unknown, s.key), s.key))
        .filter(|(d, k)| *d <= 3.max(k.len() / 4))
        .min()
        .map(|(_, k)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_unique_and_at_most_two_levels_deep() {
        let mut keys: Vec<_> = SETTINGS.iter().map(|s| s.key).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), SETTINGS.len());
        assert!(keys.iter().all(|k| k.matches('.').count() <= 1));
        // A near miss suggests the known key.
        assert_eq!(closest("vxlan.vnii"), Some("vxlan.vni"));
        assert_eq!(closest("completely.different.thing"), None);
    }

    /// The settings table of docs/configuration.md, generated from `SETTINGS`.
    fn markdown_table() -> String {
        let mut t = String::from(
            "| YAML key | config.ps1 variable | read from the environment | default | meaning |\n|---|---|---|---|---|\n",
        );
        for s in SETTINGS {
            let ps1 = s.ps1.map_or("—".to_owned(), |v| format!("`{v}`"));
            let env = if s.from_env { "yes" } else { "no" };
            let default = s.default_text().replace('|', "\\|");
            t.push_str(&format!(
                "| `{}` | {ps1} | {env} | `{default}` | {} |\n",
                s.key,
                s.doc.replace('|', "\\|")
            ));
        }
        t
    }

    #[test]
    fn configuration_doc_lists_every_setting() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/configuration.md");
        let doc = fs_err::read_to_string(&path).expect("docs/configuration.md exists");
        let (begin, end) = ("<!-- settings:begin -->\n", "<!-- settings:end -->");
        let start = doc.find(begin).expect("begin marker") + begin.len();
        let stop = doc.find(end).expect("end marker");
        let table = markdown_table();
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            let updated = format!("{}{table}{}", &doc[..start], &doc[stop..]);
            fs_err::write(&path, updated).expect("update doc");
            return;
        }
        assert_eq!(
            &doc[start..stop],
            table,
            "docs/configuration.md is out of date: run UPDATE_GOLDEN=1 cargo test"
        );
    }
}
