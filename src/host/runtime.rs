//! The container runtime on a host, found as Calico's `Get-IsContainerdRunning` and
//! `getContainerdPath` find it: containerd (with its config's CNI directories) or docker.

use super::{Files, HostResult, ServiceState, Services, split_command_line};
use serde::Serialize;

/// What runs containers on this host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RuntimeFacts {
    /// `containerd` or `docker`.
    pub name: &'static str,
    pub running: bool,
    /// The directory of the runtime's program.
    pub install_dir: String,
    /// containerd's config file, when it was found and read.
    pub config_file: Option<String>,
    /// The CNI directories containerd uses (from its config, else Calico's derivation
    /// `<install dir>\cni\bin` and `<install dir>\cni\conf`); `None` for docker.
    pub cni_bin_dir: Option<String>,
    pub cni_conf_dir: Option<String>,
}

/// Finds containerd, else docker; `None` when neither service is registered.
pub fn detect<H: Services + Files + ?Sized>(host: &H) -> HostResult<Option<RuntimeFacts>> {
    if let Some(svc) = host.service_query("containerd")? {
        let (program, args) = split_command_line(&svc.command_line);
        let install_dir = parent(&program);
        let config_file = args
            .iter()
            .position(|a| a == "--config" || a == "-c")
            .and_then(|i| args.get(i + 1).cloned())
            .unwrap_or_else(|| crate::layout::join(&install_dir, "config.toml"));
        let dirs = host
            .read_file(&config_file)?
            .map(|bytes| cni_dirs(&String::from_utf8_lossy(&bytes)));
        let (bin, conf) = dirs.clone().unwrap_or((None, None));
        return Ok(Some(RuntimeFacts {
            name: "containerd",
            running: svc.state == ServiceState::Running,
            cni_bin_dir: Some(bin.unwrap_or_else(|| crate::layout::join(&install_dir, "cni\\bin"))),
            cni_conf_dir: Some(
                conf.unwrap_or_else(|| crate::layout::join(&install_dir, "cni\\conf")),
            ),
            install_dir,
            config_file: dirs.map(|_| config_file),
        }));
    }
    if let Some(svc) = host.service_query("docker")? {
        let (program, _) = split_command_line(&svc.command_line);
        return Ok(Some(RuntimeFacts {
            name: "docker",
            running: svc.state == ServiceState::Running,
            install_dir: parent(&program),
            config_file: None,
            cni_bin_dir: None,
            cni_conf_dir: None,
        }));
    }
    Ok(None)
}

fn parent(program: &str) -> String {
    program
        .rsplit_once(['\\', '/'])
        .map_or(program, |(dir, _)| dir)
        .to_owned()
}

/// The CNI `bin_dir` and `conf_dir` of containerd 1.x's (`io.containerd.grpc.v1.cri`) or 2.x's
/// (`io.containerd.cri.v1.runtime`) CRI plugin config; invalid TOML gives Calico's defaults.
fn cni_dirs(text: &str) -> (Option<String>, Option<String>) {
    let Ok(doc) = text.parse::<toml::Table>() else {
        return (None, None);
    };
    let plugins = doc.get("plugins");
    for plugin in ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime"] {
        let Some(cni) = plugins
            .and_then(|p| p.get(plugin))
            .and_then(|p| p.get("cni"))
        else {
            continue;
        };
        let bin = cni
            .get("bin_dir")
            .and_then(|v| v.as_str())
            .map(str::to_owned)
            .or_else(|| {
                cni.get("bin_dirs")
                    .and_then(|v| v.as_array())
                    .and_then(|a| a.first())
                    .and_then(|v| v.as_str())
                    .map(str::to_owned)
            });
        let conf = cni
            .get("conf_dir")
            .and_then(|v| v.as_str())
            .map(str::to_owned);
        return (bin, conf);
    }
    (None, None)
}

/// Whether two Windows paths name the same directory (case, slashes, trailing separator aside).
pub fn same_dir(a: &str, b: &str) -> bool {
    let norm = |p: &str| {
        p.replace('/', "\\")
            .trim_end_matches('\\')
            .to_ascii_lowercase()
    };
    norm(a) == norm(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_cni_dirs_from_containerd_1_and_2_configs() {
        let v1 = r#"
version = 2
[plugins."io.containerd.grpc.v1.cri".cni]
  bin_dir = "c:/opt/cni/bin"
  conf_dir = "c:/etc/cni/net.d"
"#;
        assert_eq!(
            cni_dirs(v1),
            (
                Some("c:/opt/cni/bin".into()),
                Some("c:/etc/cni/net.d".into())
            )
        );
        let v2 = r#"
version = 3
[plugins."io.containerd.cri.v1.runtime".cni]
  bin_dirs = ['C:\Program Files\containerd\cni\bin']
  conf_dir = 'C:\Program Files\containerd\cni\conf'
"#;
        assert_eq!(
            cni_dirs(v2),
            (
                Some(r"C:\Program Files\containerd\cni\bin".into()),
                Some(r"C:\Program Files\containerd\cni\conf".into())
            )
        );
        assert_eq!(cni_dirs("not [toml"), (None, None));
    }

    #[test]
    fn directories_compare_without_case_or_slash_differences() {
        assert!(same_dir("c:/opt/cni/bin/", r"C:\opt\CNI\bin"));
        assert!(!same_dir(r"C:\opt\cni\bin", r"C:\opt\cni"));
    }
}
