//! The typed configuration: defaults, precedence (flag > env > file > host > cluster >
//! default), validation.

mod file;
pub mod host;
pub mod import_ps1;
mod layer;
mod model;
mod problem;
mod resolve;
pub mod spec;
pub mod types;
mod validate;

pub use layer::{Raw, Source, split_list};
pub use model::{Cni, Config, Dns, Etcd, EtcdTls, ExtraEnv, KubeProxy, Logs, Metrics, Node, Vxlan};
pub use problem::Problem;
pub use resolve::Shown;

use layer::{Layer, Sourced};
use resolve::{Resolver, builtin_default};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use types::*;

/// The configuration file looked for when `--config` is not given (on the node only).
pub const DEFAULT_CONFIG_PATH: Option<&str> = if cfg!(windows) {
    Some("C:\\CalicoWindows\\calico-windows.yaml")
} else {
    None
};

/// Everything the effective configuration is computed from.
#[derive(Debug, Default)]
pub struct Inputs {
    /// The config file: its path and its text.
    pub file: Option<(PathBuf, String)>,
    /// The process environment, captured once at start-up.
    pub env: BTreeMap<String, String>,
    /// `--set KEY=VALUE` flags, in order.
    pub sets: Vec<String>,
    /// Values read from the Windows host (`host::HostDefaults`), by setting key.
    pub host: BTreeMap<&'static str, Raw>,
    /// Values read from the cluster, by setting key; they fill what the other inputs leave
    /// unset (flag > env > file > host > cluster > default).
    pub cluster: BTreeMap<&'static str, Raw>,
}

/// The configuration could not be used; nothing was changed.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{}", invalid_summary(.file, .problems))]
    Invalid {
        file: Option<PathBuf>,
        problems: Vec<Problem>,
    },
    #[error("cannot read config file {}", .path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn invalid_summary(file: &Option<PathBuf>, problems: &[Problem]) -> String {
    let n = problems.len();
    let what = format!("{n} problem{}", if n == 1 { "" } else { "s" });
    match file {
        Some(f) => format!("the configuration ({}) has {what}", f.display()),
        None => format!("the configuration has {what}"),
    }
}

/// The effective configuration with the source of every value.
#[derive(Debug)]
pub struct Loaded {
    pub config: Config,
    pub shown: BTreeMap<&'static str, Shown>,
    pub file: Option<PathBuf>,
}

/// Reads the config file at `path`, or returns `None` text when no file is used.
pub fn read_file(path: Option<&Path>) -> Result<Option<(PathBuf, String)>, ConfigError> {
    let path = match path {
        Some(p) => p.to_path_buf(),
        None => match DEFAULT_CONFIG_PATH.map(PathBuf::from) {
            Some(p) if p.exists() => p,
            _ => return Ok(None),
        },
    };
    crate::files::read_text_capped(&path, crate::files::SMALL_FILE_CAP)
        .map(|text| Some((path.clone(), text)))
        .map_err(|source| ConfigError::Read { path, source })
}

/// A config file's text loaded alone, a placeholder standing in for the node name.
fn load_file(path: PathBuf, text: &str) -> Result<Loaded, ConfigError> {
    load(&Inputs {
        file: Some((path, text.to_owned())),
        host: BTreeMap::from([("node.name", Raw::Scalar("node-name-from-the-host".into()))]),
        ..Inputs::default()
    })
}

/// What keeps a config file's own settings from loading, a placeholder standing in for the
/// node name; a file that is no YAML at all is the error.
pub fn problems_of_file(path: PathBuf, text: &str) -> Result<Vec<Problem>, ConfigError> {
    match load_file(path, text) {
        Ok(_) => Ok(Vec::new()),
        Err(ConfigError::Invalid { problems, .. }) => Ok(problems),
        Err(e) => Err(e),
    }
}

/// Settings that name one node, which a config shared by a fleet must not hold: a node's
/// name (and the Kubernetes Node it belongs to) and a fixed address.
const PER_NODE: &[&str] = &["node.name", "node.k8s_node_ref", "node.ip"];

/// The metrics settings of a fleet's config file (one already checked).
pub fn metrics_of_file(text: &str) -> Result<Metrics, ConfigError> {
    Ok(load_file(PathBuf::from("calico-windows.yaml"), text)?
        .config
        .metrics)
}

/// `metrics.diags_namespace`'s default: the fleet DaemonSet's (`fleet plan`, `fleet diags`).
pub const DIAGS_NAMESPACE: &str = "system-upgrade";

/// `metrics.port`'s built-in default: the port of a node whose config is not at hand.
pub fn default_metrics_port() -> u16 {
    builtin_default::<types::Port>("metrics.port").0
}

/// The per-node settings a config file's text sets (a fixed `node.ip`, not `autodetect`),
/// each with its line: what `config import-ps1` of one node's config.ps1 writes.
pub fn per_node_settings(path: PathBuf, text: &str) -> Result<Vec<String>, ConfigError> {
    let loaded = load_file(path, text)?;
    Ok(PER_NODE
        .iter()
        .filter_map(|key| {
            let shown = loaded.shown.get(key)?;
            let layer::Source::File(line) = shown.source else {
                return None;
            };
            if *key == "node.ip" && shown.value == "autodetect" {
                return None;
            }
            Some(format!("{key} (line {line}: {})", shown.value))
        })
        .collect())
}

/// The hash of the fleet-wide configuration (`sha256:` hex): every effective setting but the
/// per-node ones (`PER_NODE`) and those read from this host, so two nodes given one config
/// file get the same hash. Install and reconfigure annotate the Node with it (`fleet status`).
pub fn fleet_hash(loaded: &Loaded) -> ConfigHash {
    let listing: String = loaded
        .shown
        .iter()
        .filter(|(key, shown)| !PER_NODE.contains(key) && shown.source != layer::Source::Host)
        .map(|(key, shown)| format!("{key}={}\n", shown.value))
        .collect();
    ConfigHash(format!(
        "sha256:{}",
        crate::files::sha256_hex(listing.as_bytes())
    ))
}

/// A hash of the fleet-wide configuration (`fleet_hash`), as kept in the install record and
/// written in the Node's `calicoctl-win/config-hash` annotation.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct ConfigHash(pub String);

impl ConfigHash {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Computes the effective configuration from its inputs, reporting every problem at once.
pub fn load(inputs: &Inputs) -> Result<Loaded, ConfigError> {
    let file_path = inputs.file.as_ref().map(|(p, _)| p.clone());
    let invalid = |problems| ConfigError::Invalid {
        file: file_path.clone(),
        problems,
    };

    let mut problems = Vec::new();
    let flags = flag_layer(&inputs.sets, &mut problems);
    let env = env_layer(&inputs.env);
    let file = match &inputs.file {
        Some((_, text)) => {
            let (layer, p) = file::parse(text);
            problems.extend(p);
            layer
        }
        None => Layer::new(),
    };
    // Key and syntax problems do not stop the value checks: every problem is reported at once.
    let sourced = |values: &BTreeMap<&'static str, Raw>, source: Source| -> Layer {
        values
            .iter()
            .map(|(k, raw)| {
                (
                    *k,
                    Sourced {
                        raw: raw.clone(),
                        source: source.clone(),
                    },
                )
            })
            .collect()
    };
    let mut host = sourced(&inputs.host, Source::Host);
    // The host's CNI directories are containerd's: they do not count when a higher layer
    // chose another runtime (docker's directories are then derived from that choice).
    let chosen_runtime = [&flags, &env, &file]
        .iter()
        .find_map(|l| l.get("container_runtime"))
        .map(|s| s.raw.display());
    if chosen_runtime.is_some_and(|r| !r.eq_ignore_ascii_case("containerd")) {
        host.remove("cni.bin_dir");
        host.remove("cni.conf_dir");
    }
    let cluster = sourced(&inputs.cluster, Source::Cluster);
    let mut r = Resolver::new(vec![flags, env, file, host, cluster]);
    r.problems = problems;
    let config = build(&mut r);
    validate::cross_check(&config, &mut r);
    if r.problems.is_empty() {
        Ok(Loaded {
            config,
            shown: r.shown,
            file: file_path,
        })
    } else {
        Err(invalid(r.problems))
    }
}

fn build(r: &mut Resolver) -> Config {
    let install_root = r.req::<WinPath>("install_root");
    let container_runtime = r.req::<ContainerRuntime>("container_runtime");
    if r.source("node.name").is_none() {
        r.problems.push(Problem::new(
            "node.name",
            None,
            Some(Source::Default),
            "neither kubelet's --hostname-override nor the host's name could be read; set node.name to kubelet's node name",
        ));
    }
    // A stand-in while the other settings are checked: the problem is recorded, so it never
    // leaves `load`.
    let node_name = r.one::<NodeName>("node.name", || literal("unset-node-name"));
    let etcd_tls = (
        r.opt::<WinPath>("etcd.key_file"),
        r.opt::<WinPath>("etcd.cert_file"),
        r.opt::<WinPath>("etcd.ca_cert_file"),
    );
    Config {
        backend: r.req("backend"),
        datastore: r.req("datastore"),
        kubeconfig: r.opt_or("kubeconfig", || install_root.join("calico-kube-config")),
        etcd: Etcd {
            endpoints: r.list("etcd.endpoints"),
            tls: match etcd_tls {
                (Some(key_file), Some(cert_file), Some(ca_cert_file)) => Some(EtcdTls {
                    key_file,
                    cert_file,
                    ca_cert_file,
                }),
                _ => None,
            },
        },
        service_cidrs: r.list("service_cidrs"),
        dns: Dns {
            servers: r.list("dns.servers"),
            search: r.list("dns.search"),
        },
        container_runtime,
        cni: cni(r, container_runtime),
        vxlan: Vxlan {
            vni: r.req("vxlan.vni"),
            mac_prefix: r.req("vxlan.mac_prefix"),
            adapter: r.opt("vxlan.adapter"),
        },
        kube_network: r.req("kube_network"),
        node: node(r, node_name),
        logs: logs(r, &install_root),
        install_root,
        windows_use_single_network: r.req("windows_use_single_network"),
        kube_proxy: KubeProxy {
            path: r.opt("kube_proxy.path"),
            kubeconfig: r.req("kube_proxy.kubeconfig"),
        },
        metrics: Metrics {
            enabled: r.req("metrics.enabled"),
            port: r.req("metrics.port"),
            felix_port: r.req("metrics.felix_port"),
            source_ranges: r.list("metrics.source_ranges"),
            diags: r.req("metrics.diags"),
            diags_namespace: r.req("metrics.diags_namespace"),
        },
        extra_env: ExtraEnv {
            node: r.map("extra_env.node"),
            felix: r.map("extra_env.felix"),
            confd: r.map("extra_env.confd"),
        },
    }
}

/// The CNI settings, whose directories default to where the container runtime looks.
fn cni(r: &mut Resolver, runtime: ContainerRuntime) -> Cni {
    let (bin_default, conf_default) = match runtime {
        ContainerRuntime::Containerd => (
            "C:\\Program Files\\containerd\\cni\\bin",
            "C:\\Program Files\\containerd\\cni\\conf",
        ),
        ContainerRuntime::Docker => ("c:\\k\\cni", "c:\\k\\cni\\config"),
    };
    Cni {
        bin_dir: r.one("cni.bin_dir", || literal(bin_default)),
        conf_dir: r.one("cni.conf_dir", || literal(conf_default)),
        conf_filename: r.req("cni.conf_filename"),
        ipam_type: r.req("cni.ipam_type"),
        template: r
            .opt::<Text>("cni.template")
            .map(|t| PathBuf::from(t.as_str())),
    }
}

/// The node's settings, its name resolved already.
fn node(r: &mut Resolver, name: NodeName) -> Node {
    Node {
        k8s_node_ref: r.one("node.k8s_node_ref", || name.clone()),
        name,
        ip: r.req("node.ip"),
        ip_autodetection_method: r.opt("node.ip_autodetection_method"),
        startup_valid_ip_timeout: r.req("node.startup_valid_ip_timeout"),
        platform: r.req("node.platform"),
    }
}

/// The log settings; the directory defaults to `logs` under the install root.
fn logs(r: &mut Resolver, install_root: &WinPath) -> Logs {
    Logs {
        dir: r.one("logs.dir", || install_root.join("logs")),
        felix_file_severity: r.req("logs.felix_file_severity"),
        felix_screen_severity: r.opt("logs.felix_screen_severity"),
        felix_sys_severity: r.req("logs.felix_sys_severity"),
        bgp_screen_severity: r.opt("logs.bgp_screen_severity"),
    }
}

/// A literal of this file (an absolute drive path, a DNS-1123 label), which parses.
fn literal<T: Setting>(text: &str) -> T {
    T::parse(text).unwrap_or_else(|e| panic!("built-in {text} does not parse: {e}"))
}

fn flag_layer(sets: &[String], problems: &mut Vec<Problem>) -> Layer {
    let mut layer = Layer::new();
    for set in sets {
        let Some((key, value)) = set.split_once('=') else {
            problems.push(Problem {
                key: None,
                value: Some(set.clone()),
                source: Some(Source::Flag),
                message: "--set takes KEY=VALUE, like --set vxlan.vni=4097".into(),
            });
            continue;
        };
        let key = key.trim();
        if let Some(spec) = spec::find(key) {
            let raw = match spec.kind {
                spec::Kind::Map => {
                    problems.push(Problem::new(
                        key,
                        Some(value.into()),
                        Some(Source::Flag),
                        format!("set one variable at a time: --set {key}.NAME=VALUE"),
                    ));
                    continue;
                }
                kind => Raw::from_text(kind, value),
            };
            layer.insert(
                spec.key,
                Sourced {
                    raw,
                    source: Source::Flag,
                },
            );
            continue;
        }
        // `extra_env.felix.NAME=VALUE` adds one variable to a map setting.
        let map_key = key.rsplit_once('.').and_then(|(m, name)| {
            spec::find(m)
                .filter(|s| s.kind == spec::Kind::Map)
                .map(|s| (s.key, name))
        });
        match map_key {
            Some((m, name)) => {
                let entry = layer.entry(m).or_insert(Sourced {
                    raw: Raw::Map(Vec::new()),
                    source: Source::Flag,
                });
                if let Raw::Map(vars) = &mut entry.raw {
                    vars.push((name.to_owned(), value.to_owned()));
                }
            }
            None => problems.push(Problem::unknown_key(key, Some(value.into()), Source::Flag)),
        }
    }
    layer
}

fn env_layer(env: &BTreeMap<String, String>) -> Layer {
    spec::SETTINGS
        .iter()
        .filter(|s| s.from_env)
        .filter_map(|s| {
            let name = s.ps1?;
            let value = env.get(name).filter(|v| !v.trim().is_empty())?;
            Some((
                s.key,
                Sourced {
                    raw: Raw::from_text(s.kind, value),
                    source: Source::Env(name),
                },
            ))
        })
        .collect()
}

impl crate::error::Diagnose for ConfigError {
    fn diagnose(&self) -> Option<crate::error::Diagnosis> {
        let hint = match self {
            Self::Invalid { file: Some(f), .. } => format!(
                "fix these settings in {} or override them with --set KEY=VALUE; 'calicoctl-win config show' lists every setting and its source",
                f.display()
            ),
            Self::Invalid { file: None, .. } => "override settings with --set KEY=VALUE, or write them in a file passed with --config; docs/configuration.md lists every key".into(),
            Self::Read { source, .. } => read_hint(source),
        };
        let kind = match self {
            Self::Invalid { .. } => crate::error::Kind::InvalidConfig,
            Self::Read { .. } => crate::error::Kind::ConfigUnreadable,
        };
        crate::error::Diagnosis::new(crate::error::Exit::Usage, kind, hint)
    }
}

/// What to do about a config file that cannot be read, by why: missing, not UTF-8 (PowerShell
/// 5's `>` and `Out-File` write UTF-16), too large or not a file, or refused.
fn read_hint(e: &std::io::Error) -> String {
    let text = e.to_string();
    match e.kind() {
        std::io::ErrorKind::NotFound => "pass an existing file with --config, or leave --config out to use the built-in defaults".into(),
        std::io::ErrorKind::InvalidData => "save it as UTF-8 (in Windows PowerShell 5: Set-Content -Encoding utf8, or Out-File -Encoding utf8; '>' writes UTF-16)".into(),
        std::io::ErrorKind::InvalidInput if text.contains("larger than") => "a config is a few KB: pass the calico-windows.yaml itself with --config, not another file".into(),
        std::io::ErrorKind::InvalidInput => "pass a regular file with --config, not a directory, pipe or device".into(),
        std::io::ErrorKind::PermissionDenied => "run from an elevated PowerShell, or give Administrators read access to the file".into(),
        _ => "check the file and its access list, then pass it with --config".into(),
    }
}

/// The configuration problems an error carries in its chain, if any.
pub fn problems_in(error: &anyhow::Error) -> &[Problem] {
    error
        .chain()
        .find_map(|c| match c.downcast_ref::<ConfigError>() {
            Some(ConfigError::Invalid { problems, .. }) => Some(problems.as_slice()),
            _ => None,
        })
        .unwrap_or(&[])
}

#[cfg(test)]
pub(crate) mod tests;
