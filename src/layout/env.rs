//! The environment keys the services' files carry (`<root>\calico-node.env`, ...): each one
//! named once, with what it means and who reads it, as uv lists its variables in
//! `crates/uv-static/src/env_vars.rs`. `render::env` writes them, the services read them back,
//! and docs/configuration.md lists them (checked by `tests/cli/docs.rs`).

/// `EnvVars`' keys, each its own name, and `ALL` (every key, in the order
/// docs/configuration.md lists them), from one list.
macro_rules! keys {
    ($($(#[$doc:meta])* $key:ident,)*) => {
        /// The keys of the services' environment files.
        pub struct EnvVars;

        impl EnvVars {
            $($(#[$doc])* pub const $key: &'static str = stringify!($key);)*
        }

        /// Every key above, in the order docs/configuration.md lists them.
        pub const ALL: &[&str] = &[$(EnvVars::$key,)*];
    };
}

keys! {
    /// The HNS network name pattern Felix programs (`Calico.*`); kube-proxy's network name.
    KUBE_NETWORK,
    /// `vxlan`, `windows-bgp` or `none`: which services run and what CalicoNode makes.
    CALICO_NETWORKING_BACKEND,
    /// The cluster's service CIDRs, comma-separated (the CNI config's routes).
    K8S_SERVICE_CIDR,
    /// The pods' DNS servers, comma-separated.
    DNS_NAME_SERVERS,
    /// The pods' DNS search list, comma-separated.
    DNS_SEARCH,
    /// `kubernetes` or `etcdv3`.
    CALICO_DATASTORE_TYPE,
    /// The API group libcalico-go reads Calico's resources in, instead of discovering it
    /// (v3.32.0 `libcalico-go/lib/apiconfig/apiconfig.go`, `envconfig:"CALICO_API_GROUP"`).
    CALICO_API_GROUP,
    /// calico-node's kubeconfig (its token renewed by CalicoNode).
    KUBECONFIG,
    /// The etcd endpoints, comma-separated (etcdv3 only).
    ETCD_ENDPOINTS,
    /// The etcd client key, certificate and CA (etcdv3 with TLS).
    ETCD_KEY_FILE,
    ETCD_CERT_FILE,
    ETCD_CA_CERT_FILE,
    /// Where the CNI plugins and the CNI config are.
    CNI_BIN_DIR,
    CNI_CONF_DIR,
    CNI_CONF_FILENAME,
    /// `calico-ipam` or `host-local`.
    CNI_IPAM_TYPE,
    /// The VXLAN VNI the Calico network is made with.
    VXLAN_VNI,
    VXLAN_MAC_PREFIX,
    /// The adapter the External network binds, when one is named.
    VXLAN_ADAPTER,
    /// The node's name in Calico, and the Kubernetes Node it refers to.
    NODENAME,
    CALICO_K8S_NODE_REF,
    /// Seconds CalicoNode waits after a reboot for a usable IPv4 address.
    STARTUP_VALID_IP_TIMEOUT,
    /// `autodetect` or the node's address, and how calico-node finds it.
    IP,
    IP_AUTODETECTION_METHOD,
    /// Where the services write their logs.
    CALICO_LOG_DIR,
    /// Felix's log levels.
    FELIX_LOGSEVERITYFILE,
    FELIX_LOGSEVERITYSYS,
    FELIX_LOGSEVERITYSCREEN,
    /// confd's log level (windows-bgp).
    BGP_LOGSEVERITYSCREEN,
    /// `true` with host-local IPAM: the CNI config takes the node's pod CIDR.
    USE_POD_CIDR,
    /// calico-node's file naming the node (CalicoNode only).
    CALICO_NODENAME_FILE,
    /// Felix's own settings (CalicoFelix only): its host name, no metadata address, its VNI
    /// and its health endpoint on the loopback, which status and CalicoNode ask.
    FELIX_FELIXHOSTNAME,
    FELIX_METADATAADDR,
    FELIX_VXLANVNI,
    FELIX_HEALTHENABLED,
    FELIX_HEALTHHOST,
    FELIX_HEALTHPORT,
    /// Felix's Prometheus endpoint, with metrics.enabled only (CalicoFelix only).
    FELIX_PROMETHEUSMETRICSENABLED,
    FELIX_PROMETHEUSMETRICSPORT,
    /// kube-proxy's binary and kubeconfig (the kube-proxy service only).
    KUBE_PROXY_PATH,
    KUBE_PROXY_KUBECONFIG,
}
