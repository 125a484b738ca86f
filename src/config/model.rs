//! The settings once parsed and validated: `Config` and its parts, what every command reads.

use super::types::*;
use std::path::PathBuf;

/// Calico for Windows settings, parsed and validated.
#[derive(Clone, Debug)]
pub struct Config {
    pub backend: Backend,
    pub datastore: Datastore,
    pub kubeconfig: Option<WinPath>,
    pub etcd: Etcd,
    pub service_cidrs: Vec<Cidr>,
    pub dns: Dns,
    pub container_runtime: ContainerRuntime,
    pub cni: Cni,
    pub vxlan: Vxlan,
    pub kube_network: NetworkPattern,
    pub node: Node,
    pub install_root: WinPath,
    pub logs: Logs,
    pub windows_use_single_network: bool,
    pub extra_env: ExtraEnv,
    pub kube_proxy: KubeProxy,
    pub metrics: Metrics,
}

impl Config {
    /// The install root, trimmed once, with the paths under it.
    pub fn root(&self) -> crate::layout::InstallRoot {
        crate::layout::InstallRoot::new(self.install_root.as_str())
    }

    /// Every setting that names a path on the node, with its key.
    pub fn path_settings(&self) -> Vec<(&'static str, &WinPath)> {
        let mut out = vec![
            ("install_root", &self.install_root),
            ("cni.bin_dir", &self.cni.bin_dir),
            ("cni.conf_dir", &self.cni.conf_dir),
            ("logs.dir", &self.logs.dir),
            ("kube_proxy.kubeconfig", &self.kube_proxy.kubeconfig),
        ];
        if let Some(k) = &self.kubeconfig {
            out.push(("kubeconfig", k));
        }
        if let Some(p) = &self.kube_proxy.path {
            out.push(("kube_proxy.path", p));
        }
        if let Some(t) = &self.etcd.tls {
            out.push(("etcd.key_file", &t.key_file));
            out.push(("etcd.cert_file", &t.cert_file));
            out.push(("etcd.ca_cert_file", &t.ca_cert_file));
        }
        out
    }
}

/// The opt-in kube-proxy service (`install --kube-proxy PATH`).
#[derive(Clone, Debug)]
pub struct KubeProxy {
    /// kube-proxy.exe; unset, there is no kube-proxy service.
    pub path: Option<WinPath>,
    /// The kubeconfig kube-proxy connects with.
    pub kubeconfig: WinPath,
}

/// Opt-in Prometheus metrics: Felix's endpoint and calicoctl-win's own.
#[derive(Clone, Debug)]
pub struct Metrics {
    pub enabled: bool,
    pub port: Port,
    pub felix_port: Port,
    /// The sources allowed to reach both ports.
    pub source_ranges: Vec<Cidr>,
    /// Whether calicoctl-win's endpoint answers `GET /diags` with the node's redacted diags zip.
    pub diags: bool,
    /// The namespace of the ServiceAccount `calicoctl-win-diags` whose tokens `GET /diags`
    /// takes (the fleet DaemonSet's).
    pub diags_namespace: crate::config::types::Namespace,
}

/// etcd datastore settings.
#[derive(Clone, Debug)]
pub struct Etcd {
    pub endpoints: Vec<EtcdEndpoint>,
    pub tls: Option<EtcdTls>,
}

/// The three etcd TLS files, always given together.
#[derive(Clone, Debug)]
pub struct EtcdTls {
    pub key_file: WinPath,
    pub cert_file: WinPath,
    pub ca_cert_file: WinPath,
}

/// DNS given to pods.
#[derive(Clone, Debug)]
pub struct Dns {
    pub servers: Vec<Ip>,
    pub search: Vec<Domain>,
}

/// CNI plugin settings.
#[derive(Clone, Debug)]
pub struct Cni {
    pub bin_dir: WinPath,
    pub conf_dir: WinPath,
    pub conf_filename: Text,
    pub ipam_type: IpamType,
    /// A template file of the user's, on the machine running the tool.
    pub template: Option<PathBuf>,
}

/// VXLAN settings.
#[derive(Clone, Debug)]
pub struct Vxlan {
    pub vni: Vni,
    pub mac_prefix: MacPrefix,
    pub adapter: Option<Text>,
}

/// This node's identity.
#[derive(Clone, Debug)]
pub struct Node {
    pub name: NodeName,
    pub k8s_node_ref: NodeName,
    pub ip: NodeIp,
    pub ip_autodetection_method: Option<Text>,
    pub startup_valid_ip_timeout: Timeout,
    pub platform: PlatformChoice,
}

/// Logging.
#[derive(Clone, Debug)]
pub struct Logs {
    pub dir: WinPath,
    pub felix_file_severity: LogSeverity,
    pub felix_screen_severity: Option<LogSeverity>,
    pub felix_sys_severity: LogSeverity,
    pub bgp_screen_severity: Option<LogSeverity>,
}

/// Extra environment per service, in the order given.
#[derive(Clone, Debug, Default)]
pub struct ExtraEnv {
    pub node: Vec<(String, String)>,
    pub felix: Vec<(String, String)>,
    pub confd: Vec<(String, String)>,
}
