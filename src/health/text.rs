//! The report for people, rendered from its typed sections: each section's line, then healthy,
//! or each finding with its code and its fix (the findings' one form, `health::judge::Said`).

use super::report::{InstalledReport, NodeReport, NotInstalledReport};
use super::sections::{Address, Answered, Ipam, NodeState, Service, Token, TokenShown};
use crate::cluster::credentials::unbound_sentence;
use crate::duration::time_text;
use crate::health::judge::Code;
use crate::host::HnsNetwork;
use crate::installed::endpoints::Verdict;

/// The lines status prints, in order.
pub fn lines(report: &NodeReport) -> Vec<String> {
    match report {
        NodeReport::NotInstalled(r) => not_installed(r),
        NodeReport::Installed(r) => {
            let mut out = sections(r);
            out.push(if r.healthy { "Healthy." } else { "Degraded:" }.to_owned());
            out.extend(r.findings.iter().map(|f| format!("  - {f:4}")));
            out
        }
    }
}

/// That Calico is not installed, or what is under way instead: each finding with its code and
/// its fix.
fn not_installed(r: &NotInstalledReport) -> Vec<String> {
    if r.findings.iter().any(|f| f.code == Code::NotInstalled) {
        return vec![format!(
            "Calico is not installed in {} (no install record).",
            r.install_root
        )];
    }
    r.findings.iter().map(|f| format!("  - {f:4}")).collect()
}

/// Each section's lines, in the order the survey gathers them.
fn sections(r: &InstalledReport) -> Vec<String> {
    let mut out = vec![format!(
        "Calico {} in {} ({} backend), node {}",
        r.calico_version.as_deref().unwrap_or("(version unknown)"),
        r.install_root,
        r.backend.as_deref().unwrap_or("unknown"),
        r.shown.node
    )];
    out.push("Services:".into());
    out.extend(r.services.iter().map(service));
    out.push("HNS networks:".into());
    out.extend(r.shown.recorded_networks.iter().map(|name| {
        let endpoints = r.shown.network_endpoints.iter().find(|(n, _)| n == name);
        match r.networks.iter().find(|net| &net.name == name) {
            Some(net) => network(net, endpoints.map_or("", |(_, said)| said.as_str())),
            None => format!("  {name:<12} missing"),
        }
    }));
    // A suspect endpoint: shown, not a finding.
    let suspect = r.endpoints.iter().filter(|j| j.verdict == Verdict::Suspect);
    out.extend(suspect.map(|j| format!("  {}", j.sentence())));
    out.extend(r.shown.endpoint_states.iter().map(|f| format!("  {f:4}")));
    if let Some(last) = &r.hns_restart {
        out.push(format!(
            "HNS restarted at {} (process {} -> {}); CalicoNode restarted {}",
            time_text(last.at),
            last.from_pid,
            last.to_pid,
            if last.restarted.is_empty() {
                "nothing".to_owned()
            } else {
                last.restarted.join(", ")
            }
        ));
    }
    out.extend(r.felix_health.as_ref().map(|f| f.describe()));
    let show = |v: Option<u32>| v.map_or("-".into(), |v| v.to_string());
    out.extend(r.vni.as_ref().map(|vni| {
        format!(
            "VXLAN VNI: config {}, HNS {}, cluster {}",
            vni.config,
            show(vni.hns),
            show(vni.cluster)
        )
    }));
    out.push(address(&r.address));
    let since = r.addressing.as_ref().and_then(|a| a.changed_since.as_ref());
    if let Some(since) = since.filter(|s| !s.is_empty()) {
        out.push(format!(
            "Addressing: changed since the vSwitch was made (kept as it is): {}",
            since.join("; ")
        ));
    }
    out.extend(the_cluster(r));
    out
}

/// The Node, the IPAM blocks, the token, kube-proxy and the datastore migration.
fn the_cluster(r: &InstalledReport) -> Vec<String> {
    let mut out = Vec::new();
    match (&r.node, &r.shown.node_not_read) {
        (Some(node), _) => out.push(node_line(node)),
        (None, Some(why)) => out.push(format!("Node {}: not read ({why})", r.shown.node)),
        (None, None) => {}
    }
    out.extend(r.ipam.as_ref().map(ipam));
    if let (Some(section), Some(shown)) = (&r.token, &r.shown.token) {
        out.extend(token(section, shown));
    }
    out.extend(
        r.kube_proxy
            .as_ref()
            .map(|k| format!("kube-proxy: {}", k.message)),
    );
    // The fix of each is preflight's and status -o json's.
    out.extend(
        r.known_issues
            .as_ref()
            .map(|k| format!("known issues: {}", k.message)),
    );
    out.extend(r.shown.datastore.clone());
    for f in [
        &r.shown.diags_review,
        &r.shown.felix_rule,
        &r.shown.metrics_unscraped,
        &r.shown.datastore_unreadable,
    ]
    .into_iter()
    .flatten()
    {
        out.push(format!("{f:2}"));
    }
    out
}

fn service(s: &Service) -> String {
    let detail = match (s.pid, &s.since) {
        (Some(p), Some(t)) => format!(" (pid {p}, since {t})"),
        (Some(p), None) => format!(" (pid {p})"),
        _ => String::new(),
    };
    format!("  {:<12} {}{detail}", s.name, s.state)
}

/// A network of the install's, with its endpoints said (`endpoints`).
fn network(net: &HnsNetwork, endpoints: &str) -> String {
    format!(
        "  {:<12} {} {} subnets {} VSID {} management IP {}, {endpoints}",
        net.name,
        net.id,
        net.network_type,
        net.subnets
            .iter()
            .map(|s| s.prefix.as_str())
            .collect::<Vec<_>>()
            .join(","),
        net.vsid().map_or("-".into(), |v| v.to_string()),
        net.management_ip.as_deref().unwrap_or("-"),
    )
}

fn address(a: &Address) -> String {
    let shown = |ip: Option<std::net::Ipv4Addr>| ip.map_or("-".to_owned(), |ip| ip.to_string());
    format!(
        "Address: InternalIP {}, BGP {}, {}",
        shown(a.internal_ip),
        shown(a.bgp),
        a.networks
            .iter()
            .map(|(name, ip)| format!("{name} {}", shown(*ip)))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

fn node_line(node: &NodeState) -> String {
    format!(
        "Node {}: {}{}, {} pod(s)",
        node.name,
        if node.ready { "Ready" } else { "not Ready" },
        if node.cordoned { ", cordoned" } else { "" },
        node.pods.len()
    )
}

fn ipam(i: &Ipam) -> String {
    let cidrs: Vec<&str> = i.blocks.iter().map(|b| b.cidr.as_str()).collect();
    match cidrs.as_slice() {
        [] => "IPAM: no block yet (the first pod claims one)".to_owned(),
        _ => format!(
            "IPAM: {} of {} pod addresses used in {} ({} reserved for Windows){}",
            i.pods,
            i.capacity,
            cidrs.join(", "),
            crate::cluster::ipam::WINDOWS_RESERVED,
            i.max_pods
                .map(|m| format!("; kubelet schedules up to {m}"))
                .unwrap_or_default()
        ),
    }
}

/// The token's lines: its expiry, the clock difference, the API server's answer, its Node.
fn token(section: &Token, shown: &TokenShown) -> Vec<String> {
    let expiry = match shown.expiry {
        Some(t) => format!("valid until {} (the API server's clock)", time_text(t)),
        None if !shown.jwt => "not a JWT: its expiry is known once CalicoNode renews it".into(),
        None => "does not expire".into(),
    };
    let skew = shown.skew_to_say.map_or(String::new(), |s| {
        format!(
            " (this node's clock is {}s {} the API server's)",
            s.unsigned_abs(),
            if s > 0 { "ahead of" } else { "behind" }
        )
    });
    let mut out = vec![format!("Token: {expiry}{skew}")];
    let asked = section.judged.as_ref().and_then(|j| j.api_server.as_ref());
    out.push(match asked.map(|a| (a.answer, a.error.as_deref())) {
        Some((Answered::Accepted, _)) if shown.past_unmeasured => "Token: the API server takes it (asked with calico-node's kubeconfig), though it has expired by this node's clock: this node's clock is ahead of the API server's".into(),
        Some((Answered::Accepted, _)) => "Token: the API server takes it (asked with calico-node's kubeconfig)".into(),
        Some((Answered::Refused, _)) => "Token: the API server refuses it (401, asked with calico-node's kubeconfig)".into(),
        Some((_, e)) => format!("Token: whether the API server takes it is not known: {}", e.unwrap_or_default()),
        None => "Token: the API server was not asked".into(),
    });
    if shown.jwt {
        let bound = section
            .judged
            .as_ref()
            .and_then(|j| j.bound_to_node.as_ref());
        out.push(match bound {
            Some(n) => format!("Token: bound to Node {n}: deleting the Node revokes it"),
            None => unbound_sentence(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::judge::cut_off;

    /// What is under way on a node with no install record is said as every finding is: its
    /// sentence with its code, and its fix.
    #[test]
    fn under_way_on_a_node_not_installed_carries_its_code_and_fix() {
        let f = cut_off("install", 3, " (at: x)", "then");
        let report = NodeReport::NotInstalled(NotInstalledReport {
            installed: false,
            install_root: "C:\\CalicoWindows".into(),
            healthy: false,
            under_way: None,
            problems: vec![f.message.clone()],
            findings: vec![f.clone()],
        });
        let said = lines(&report).join("\n");
        assert!(said.contains("[under-way]"), "{said}");
        let fix = f.remedy.as_deref().expect("a fix");
        assert!(said.contains(&format!("    fix: {fix}")), "{said}");
    }
}
