//! The environment keys the services' files carry (`<root>\calico-node.env`, ...): each one
//! named once, with what it means and who reads it, as uv lists its variables in
//! `crates/uv-static/src/env_vars.rs`. `render::env` writes them, the services read them back,
//! and docs/configuration.md lists them (checked by `tests/cli/docs.rs`).

/// The keys of the services' environment files.
pub struct EnvVars;

impl EnvVars {
    /// The HNS network name pattern Felix programs (`Calico.*`); kube-proxy's network name.
    pub const KUBE_NETWORK: &'static str = "KUBE_NETWORK";
    /// `vxlan`, `windows-bgp` or `none`: which services run and what CalicoNode makes.
    pub const CALICO_NETWORKING_BACKEND: &'static str = "CALICO_NETWORKING_BACKEND";
    /// The cluster's service CIDRs, comma-separated (the CNI config's routes).
    pub const K8S_SERVICE_CIDR: &'static str = "K8S_SERVICE_CIDR";
    /// The pods' DNS servers, comma-separated.
    pub const DNS_NAME_SERVERS: &'static str = "DNS_NAME_SERVERS";
    /// The pods' DNS search list, comma-separated.
    pub const DNS_SEARCH: &'static str = "DNS_SEARCH";
    /// `kubernetes` or `etcdv3`.
    pub const CALICO_DATASTORE_TYPE: &'static str = "CALICO_DATASTORE_TYPE";
    /// The API group libcalico-go reads Calico's resources in, instead of discovering it
    /// (v3.32.0 `libcalico-go/lib/apiconfig/apiconfig.go`, `envconfig:"CALICO_API_GROUP"`).
    pub const CALICO_API_GROUP: &'static str = "CALICO_API_GROUP";
    /// calico-node's kubeconfig (its token renewed by CalicoNode).
    pub const KUBECONFIG: &'static str = "KUBECONFIG";
    /// The etcd endpoints, comma-separated (etcdv3 only).
    pub const ETCD_ENDPOINTS: &'static str = "ETCD_ENDPOINTS";
    /// The etcd client key, certificate and CA (etcdv3 with TLS).
    pub const ETCD_KEY_FILE: &'static str = "ETCD_KEY_FILE";
    pub const ETCD_CERT_FILE: &'static str = "ETCD_CERT_FILE";
    pub const ETCD_CA_CERT_FILE: &'static str = "ETCD_CA_CERT_FILE";
    /// Where the CNI plugins and the CNI config are.
    pub const CNI_BIN_DIR: &'static str = "CNI_BIN_DIR";
    pub const CNI_CONF_DIR: &'static str = "CNI_CONF_DIR";
    pub const CNI_CONF_FILENAME: &'static str = "CNI_CONF_FILENAME";
    /// `calico-ipam` or `host-local`.
    pub const CNI_IPAM_TYPE: &'static str = "CNI_IPAM_TYPE";
    /// The VXLAN VNI the Calico network is made with.
    pub const VXLAN_VNI: &'static str = "VXLAN_VNI";
    pub const VXLAN_MAC_PREFIX: &'static str = "VXLAN_MAC_PREFIX";
    /// The adapter the External network binds, when one is named.
    pub const VXLAN_ADAPTER: &'static str = "VXLAN_ADAPTER";
    /// The node's name in Calico, and the Kubernetes Node it refers to.
    pub const NODENAME: &'static str = "NODENAME";
    pub const CALICO_K8S_NODE_REF: &'static str = "CALICO_K8S_NODE_REF";
    /// Seconds CalicoNode waits after a reboot for a usable IPv4 address.
    pub const STARTUP_VALID_IP_TIMEOUT: &'static str = "STARTUP_VALID_IP_TIMEOUT";
    /// `autodetect` or the node's address, and how calico-node finds it.
    pub const IP: &'static str = "IP";
    pub const IP_AUTODETECTION_METHOD: &'static str = "IP_AUTODETECTION_METHOD";
    /// Where the services write their logs.
    pub const CALICO_LOG_DIR: &'static str = "CALICO_LOG_DIR";
    /// Felix's log levels.
    pub const FELIX_LOGSEVERITYFILE: &'static str = "FELIX_LOGSEVERITYFILE";
    pub const FELIX_LOGSEVERITYSYS: &'static str = "FELIX_LOGSEVERITYSYS";
    pub const FELIX_LOGSEVERITYSCREEN: &'static str = "FELIX_LOGSEVERITYSCREEN";
    /// confd's log level (windows-bgp).
    pub const BGP_LOGSEVERITYSCREEN: &'static str = "BGP_LOGSEVERITYSCREEN";
    /// `true` with host-local IPAM: the CNI config takes the node's pod CIDR.
    pub const USE_POD_CIDR: &'static str = "USE_POD_CIDR";
    /// calico-node's file naming the node (CalicoNode only).
    pub const CALICO_NODENAME_FILE: &'static str = "CALICO_NODENAME_FILE";
    /// Felix's own settings (CalicoFelix only): its host name, no metadata address, its VNI
    /// and its health endpoint on the loopback, which status and CalicoNode ask.
    pub const FELIX_FELIXHOSTNAME: &'static str = "FELIX_FELIXHOSTNAME";
    pub const FELIX_METADATAADDR: &'static str = "FELIX_METADATAADDR";
    pub const FELIX_VXLANVNI: &'static str = "FELIX_VXLANVNI";
    pub const FELIX_HEALTHENABLED: &'static str = "FELIX_HEALTHENABLED";
    pub const FELIX_HEALTHHOST: &'static str = "FELIX_HEALTHHOST";
    pub const FELIX_HEALTHPORT: &'static str = "FELIX_HEALTHPORT";
    /// Felix's Prometheus endpoint, with metrics.enabled only (CalicoFelix only).
    pub const FELIX_PROMETHEUSMETRICSENABLED: &'static str = "FELIX_PROMETHEUSMETRICSENABLED";
    pub const FELIX_PROMETHEUSMETRICSPORT: &'static str = "FELIX_PROMETHEUSMETRICSPORT";
    /// kube-proxy's binary and kubeconfig (the kube-proxy service only).
    pub const KUBE_PROXY_PATH: &'static str = "KUBE_PROXY_PATH";
    pub const KUBE_PROXY_KUBECONFIG: &'static str = "KUBE_PROXY_KUBECONFIG";
}

/// Every key above, in the order docs/configuration.md lists them.
pub const ALL: &[&str] = &[
    EnvVars::KUBE_NETWORK,
    EnvVars::CALICO_NETWORKING_BACKEND,
    EnvVars::K8S_SERVICE_CIDR,
    EnvVars::DNS_NAME_SERVERS,
    EnvVars::DNS_SEARCH,
    EnvVars::CALICO_DATASTORE_TYPE,
    EnvVars::CALICO_API_GROUP,
    EnvVars::KUBECONFIG,
    EnvVars::ETCD_ENDPOINTS,
    EnvVars::ETCD_KEY_FILE,
    EnvVars::ETCD_CERT_FILE,
    EnvVars::ETCD_CA_CERT_FILE,
    EnvVars::CNI_BIN_DIR,
    EnvVars::CNI_CONF_DIR,
    EnvVars::CNI_CONF_FILENAME,
    EnvVars::CNI_IPAM_TYPE,
    EnvVars::VXLAN_VNI,
    EnvVars::VXLAN_MAC_PREFIX,
    EnvVars::VXLAN_ADAPTER,
    EnvVars::NODENAME,
    EnvVars::CALICO_K8S_NODE_REF,
    EnvVars::STARTUP_VALID_IP_TIMEOUT,
    EnvVars::IP,
    EnvVars::IP_AUTODETECTION_METHOD,
    EnvVars::CALICO_LOG_DIR,
    EnvVars::FELIX_LOGSEVERITYFILE,
    EnvVars::FELIX_LOGSEVERITYSYS,
    EnvVars::FELIX_LOGSEVERITYSCREEN,
    EnvVars::BGP_LOGSEVERITYSCREEN,
    EnvVars::USE_POD_CIDR,
    EnvVars::CALICO_NODENAME_FILE,
    EnvVars::FELIX_FELIXHOSTNAME,
    EnvVars::FELIX_METADATAADDR,
    EnvVars::FELIX_VXLANVNI,
    EnvVars::FELIX_HEALTHENABLED,
    EnvVars::FELIX_HEALTHHOST,
    EnvVars::FELIX_HEALTHPORT,
    EnvVars::FELIX_PROMETHEUSMETRICSENABLED,
    EnvVars::FELIX_PROMETHEUSMETRICSPORT,
    EnvVars::KUBE_PROXY_PATH,
    EnvVars::KUBE_PROXY_KUBECONFIG,
];
