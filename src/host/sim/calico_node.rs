//! SimHost playing calico-node: what `calico-node.exe -startup` does to HNS. Like the real
//! `SetupVxlanNetwork`, it reuses an existing `Calico` network without comparing its VSID:
//! the silent VNI change `reconfigure` solves.

use super::handle::SimHost;
use crate::host::{Files, Hns, HostResult, ProcessSpec};
use crate::layout::SOURCE_VIP_ENDPOINT;
use crate::release::CalicoVersion;
use serde_json::json;
use std::fmt::Write as _;

/// Which calico-node component a command line runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Component {
    Startup,
    MonitorToken,
    /// Felix, confd or none named: runs until stopped.
    Runs,
}

/// What a Calico binary does with a command line: a component, or its parser's refusal.
pub type Parsed = Result<Component, (i32, String)>;

/// Reads the component from `calico-node.exe -startup|-felix|-confd|-monitor-token` or
/// `calico.exe component ...`; `None` for other programs. Flags a `release` lacks are refused
/// as Go's `flag` (exit 2) and cobra (exit 1) do (`-complete-startup` from v3.31,
/// `-monitor-token` from v3.28).
pub fn component(spec: &ProcessSpec, release: Option<&CalicoVersion>) -> Option<Parsed> {
    match crate::host::services::file_name(&spec.program).as_str() {
        "calico-node.exe" => Some(calico_node_flags(&spec.args, release)),
        "calico.exe" if spec.args.first().is_some_and(|a| a == "component") => {
            Some(calico_subcommands(&spec.args[1..]))
        }
        _ => None,
    }
}

fn calico_node_flags(args: &[String], release: Option<&CalicoVersion>) -> Parsed {
    let at_least = |major, minor| release.is_none_or(|v| *v >= CalicoVersion::new(major, minor, 0));
    let mut component = Component::Runs;
    for a in args {
        let name = a.trim_start_matches('-');
        let name = name.split_once('=').map_or(name, |(n, _)| n);
        let known = match name {
            "startup" | "felix" | "confd" | "confd-confdir" => true,
            "monitor-token" => at_least(3, 28),
            "complete-startup" => at_least(3, 31),
            _ => false,
        };
        if !a.starts_with('-') || !known {
            return Err((2, format!("flag provided but not defined: {a}")));
        }
        component = match (component, name) {
            (Component::Runs, "startup") => Component::Startup,
            (Component::Runs, "monitor-token") => Component::MonitorToken,
            (c, _) => c,
        };
    }
    Ok(component)
}

fn calico_subcommands(args: &[String]) -> Parsed {
    let words: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let flags: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| a.starts_with("--"))
        .map(|a| a.split_once('=').map_or(a, |(n, _)| n))
        .collect();
    let (component, allowed): (Component, &[&str]) = match words.as_slice() {
        ["node", "startup"] => (Component::Startup, &["--complete-startup"]),
        ["node", "monitor-token"] => (Component::MonitorToken, &[]),
        ["felix"] => (Component::Runs, &[]),
        ["confd"] => (Component::Runs, &["--confdir"]),
        _ => {
            return Err((
                1,
                format!(
                    "Error: unknown command \"{}\" for \"calico component\"",
                    words.join(" ")
                ),
            ));
        }
    };
    match flags.iter().find(|f| !allowed.contains(f)) {
        Some(f) => Err((1, format!("Error: unknown flag: {f}"))),
        None => Ok(component),
    }
}

/// The token refresher (token_watch.go): reads the namespace file, writes the CNI plugin's
/// kubeconfig; `Some(exit code)` when it ends at once.
pub fn monitor_token(host: &SimHost, spec: &ProcessSpec) -> HostResult<(Option<i32>, String)> {
    let base = spec
        .env
        .get("CONTAINER_SANDBOX_MOUNT_POINT")
        .map_or_else(|| "C:".to_owned(), |s| s.trim_end_matches('\\').to_owned());
    let ns_path = crate::layout::join(&base, crate::layout::REFRESHER_NAMESPACE);
    let Some(namespace) = host.read_file(&ns_path)? else {
        return Ok((
            Some(1),
            format!(
                "[FATAL] cni-config-monitor/token_watch.go 59: Failed to read service account namespace file error=open {ns_path}: The system cannot find the path specified.\n"
            ),
        ));
    };
    let server = spec
        .env
        .get("KUBECONFIG")
        .and_then(|k| host.read_file(k).ok().flatten())
        .and_then(|t| {
            let doc: serde_json::Value =
                serde_saphyr::from_str(&String::from_utf8_lossy(&t)).ok()?;
            doc["clusters"][0]["cluster"]["server"]
                .as_str()
                .map(str::to_owned)
        });
    let Some(server) = server else {
        return Ok((
            Some(1),
            "[FATAL] Failed to create in cluster client set\n".into(),
        ));
    };
    let n = host.read(|s| s.settings.next_id);
    let out = crate::layout::join(&base, crate::layout::REFRESHED_KUBECONFIG);
    let text = format!(
        "# Kubeconfig file for Calico CNI plugin. Installed by calico/node.\napiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n    server: {server}\nusers:\n- name: calico\n  user:\n    token: sim-cni-token-{n}\n"
    );
    host.replace_file(&out, text.as_bytes(), crate::host::Access::Secret)?;
    Ok((
        None,
        format!(
            "Update of CNI kubeconfig triggered based on elapsed time. (service account calico-cni-plugin in {})\nWrote updated CNI kubeconfig file. path={out}\n",
            String::from_utf8_lossy(&namespace).trim()
        ),
    ))
}

/// Runs the simulated startup; returns the exit code and what it did, for the child's log.
pub fn startup(host: &SimHost, spec: &ProcessSpec) -> HostResult<(i32, String)> {
    let block = host.read(|s| s.settings.pod_block.clone());
    let (code, mut log) = startup_on(host, &spec.env, &block)?;
    if code == 0 {
        source_vip_endpoint(host, &block, &mut log)?;
    }
    Ok((code, log))
}

/// The host endpoint `Calico_ep` (block .2), kube-proxy's source VIP: remote on Overlay
/// (projectcalico/calico v3.32.1 `cni-plugin/pkg/dataplane/windows/dataplane_windows.go`,
/// `createAndAttachVxlanHostEP`), attached to the host on L2Bridge (`CreateAndAttachHostEP`).
fn source_vip_endpoint(host: &SimHost, block: &str, log: &mut String) -> HostResult<()> {
    let Some(calico) = host
        .hns_networks()?
        .into_iter()
        .find(|n| n.name == "Calico")
    else {
        return Ok(());
    };
    let want = std::net::Ipv4Addr::from(u32::from(gateway_of(block)) + 1).to_string();
    let have = host.hns_endpoints(&calico.id)?;
    if have
        .iter()
        .any(|e| e.name == SOURCE_VIP_ENDPOINT && e.ip.as_deref() == Some(want.as_str()))
    {
        return Ok(());
    }
    let remote = calico.network_type == "Overlay";
    host.push_endpoint(&calico.id, SOURCE_VIP_ENDPOINT, &want, remote)?;
    let _ = writeln!(
        log,
        "created host endpoint Calico_ep ({want}) on HNS network Calico"
    );
    Ok(())
}

/// calico-node startup's HNS part on any host (also the Wine ring's fake calico-node.exe).
pub fn startup_on(
    host: &dyn Hns,
    env: &std::collections::BTreeMap<String, String>,
    block: &str,
) -> HostResult<(i32, String)> {
    let mut log = String::new();
    // calicoctl-win writes only vxlan (the default), windows-bgp or none, and a VNI of at
    // least 4096 (`config::types::Backend`, `Vni::MIN`).
    let network_type = match env.get("CALICO_NETWORKING_BACKEND").map(String::as_str) {
        Some("windows-bgp") => "L2Bridge",
        Some("none") => {
            let _ = writeln!(log, "backend none: no network to create");
            return Ok((0, log));
        }
        _ => "Overlay",
    };
    let vni: u32 = env
        .get("VXLAN_VNI")
        .and_then(|v| v.parse().ok())
        .unwrap_or(4096);
    let networks = match host.hns_networks() {
        Ok(n) => n,
        Err(e) => {
            let _ = writeln!(log, "cannot reach HNS: {e}");
            return Ok((1, log));
        }
    };
    let gateway = gateway_of(block).to_string();
    if let Some(existing) = networks.iter().find(|n| n.name == "Calico") {
        let matches = existing.network_type == network_type
            && existing
                .subnets
                .iter()
                .any(|s| s.prefix == block && s.gateway.as_deref() == Some(gateway.as_str()));
        if matches {
            // The VSID is deliberately not compared: calico-node does not compare it either.
            let _ = writeln!(log, "reusing HNS network Calico ({})", existing.id);
            return Ok((0, log));
        }
        host.hns_delete_network(&existing.id)?;
        let _ = writeln!(log, "deleted stale HNS network Calico ({})", existing.id);
    }
    let mut subnet = json!({
        "IpAddressPrefix": block,
        "Routes": [{"NextHop": gateway, "DestinationPrefix": "0.0.0.0/0"}],
    });
    if network_type == "Overlay" {
        subnet["Policies"] = json!([{"Type": "VSID", "Settings": {"IsolationId": vni}}]);
    }
    let doc = json!({
        "SchemaVersion": {"Major": 2, "Minor": 0},
        "Name": "Calico",
        "Type": network_type,
        "Ipams": [{"Type": "Static", "Subnets": [subnet]}],
        "Policies": [{"Type": "HostRoute", "Settings": {}}],
    });
    let created = host.hns_create_network(&doc.to_string())?;
    let _ = writeln!(
        log,
        "created HNS network Calico ({}), {network_type}, VSID {}",
        created.id,
        created.vsid().map_or("none".into(), |v| v.to_string())
    );
    Ok((0, log))
}

/// The block's first host address (`10.244.1.0/26` → `10.244.1.1`); the profiles' block is
/// always an IPv4 CIDR.
fn gateway_of(block: &str) -> std::net::Ipv4Addr {
    let base = block.split('/').next().unwrap_or(block);
    let ip: std::net::Ipv4Addr = base.parse().unwrap_or(std::net::Ipv4Addr::UNSPECIFIED);
    std::net::Ipv4Addr::from(u32::from(ip) + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::Output;

    fn spec(program: &str, args: &[&str]) -> ProcessSpec {
        ProcessSpec {
            program: program.into(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: Default::default(),
            cwd: None,
            output: Output::Null,
        }
    }

    fn v(s: &str) -> CalicoVersion {
        CalicoVersion::parse(s).expect("version")
    }

    /// Go's flag package refuses with exit 2 naming the flag; cobra with exit 1.
    #[test]
    fn each_simulated_binary_refuses_the_flags_its_release_lacks() {
        use Component::{MonitorToken, Runs, Startup};
        let node = r"C:\CalicoWindows\calico-node.exe";
        let calico = r"C:\CalicoWindows\calico.exe";
        let complete = &["-startup", "-complete-startup"][..];
        for (program, args, release, want) in [
            (node, complete, Some("3.30.2"), Err(2)),
            (node, complete, Some("3.31.0"), Ok(Startup)),
            (node, &["-monitor-token"], Some("3.27.3"), Err(2)),
            (node, &["-monitor-token"], Some("3.28.0"), Ok(MonitorToken)),
            // calico.exe (cobra): its subcommands, and nothing else.
            (
                calico,
                &["component", "node", "startup", "--complete-startup"],
                None,
                Ok(Startup),
            ),
            (
                calico,
                &["component", "node", "monitor-token"],
                None,
                Ok(MonitorToken),
            ),
            (calico, &["component", "felix"], None, Ok(Runs)),
            (
                calico,
                &["component", "confd", r"--confdir=C:\x"],
                None,
                Ok(Runs),
            ),
            (calico, &["component", "node", "-startup"], None, Err(1)),
            (
                calico,
                &["component", "felix", "--complete-startup"],
                None,
                Err(1),
            ),
        ] {
            let got = component(&spec(program, args), release.map(v).as_ref());
            let got = got.map(|p| p.map_err(|(code, _)| code));
            assert_eq!(got, Some(want), "{args:?} {release:?}");
        }
        let said = component(&spec(node, complete), Some(&v("3.30.2")));
        let flag = "flag provided but not defined: -complete-startup";
        assert_eq!(said, Some(Err((2, flag.into()))));
        assert_eq!(component(&spec(r"C:\k\kubelet.exe", &[]), None), None);
    }
}
