//! `status`: the services, the HNS networks, drift between the config and the host, the node
//! and the kubeconfig's token; exit 1 with the reasons when anything is degraded.

use super::common::{ClusterRead, Degraded, read_cluster_knowing, with_cluster};
use crate::cli::StatusArgs;
use crate::cluster::drain;
use crate::cluster::token_check;
use crate::config::Config;
use crate::context::Context;
use crate::duration::{now, time_text};
use crate::host::select::Intent;
use crate::host::{HnsNetwork, Host};
use crate::installed::endpoints;
use crate::installed::file_stat::FileStats;
use crate::installed::health::{self, Code, Finding, NEW_TOKEN};
use crate::installed::record;
use crate::installed::record::InstallRecord;
use crate::layout::CALICO_NETWORK;
use crate::layout::EXTERNAL_NETWORK;
use crate::layout::InstallRoot;
use crate::plan::drift;
use anyhow::Context as _;
use serde_json::json;

/// A token closer to its expiry than this is a problem worth reporting.
const TOKEN_WARN_SECS: i64 = 7 * 24 * 3600;

pub fn run(args: &StatusArgs, ctx: &mut Context) -> anyhow::Result<()> {
    let host = ctx.open_host(Intent::Read)?;
    let base = ctx.load_config()?;
    let node_name = base.config.node.name.to_string();
    let (asked, cluster) = look(args, ctx, host.as_ref(), &base.config, &node_name)?;
    let loaded = with_cluster(ctx, &cluster, base)?;
    let config = &loaded.config;
    let root = config.root();
    let mut r = Report::default();
    let under_way = under_way(ctx, host.as_ref(), &root, &mut r)?;
    let Some(rec) = record::read(host.as_ref(), &root)? else {
        return not_installed(ctx, &root, r, under_way);
    };
    r.text.push(format!(
        "Calico {} in {root} ({} backend), node {node_name}",
        rec.calico_version.as_deref().unwrap_or("(version unknown)"),
        rec.backend
    ));
    let h = host.as_ref();
    let services = services(h, config, &rec, &mut r)?;
    metadata_route(h, &rec, &mut r)?;
    let (networks, endpoints, hns_restart) = hns(h, &rec, &cluster, &node_name, args, &mut r)?;
    let files = file_drift(h, config, (&rec, &cluster), &root, args.verify, &mut r)?;
    let felix = felix_health(h, &root, &mut r)?;
    let vni = vni(config, &networks, &cluster, &mut r);
    let address = address(h, &networks, &cluster, &node_name, &mut r);
    let addressing = addressing(h, &mut r);
    let node = node(&cluster, &node_name, &mut r)?;
    let ipam = ipam(&cluster, config, &node_name, &mut r)?;
    let token = token(h, config, &cluster, asked.as_ref(), &mut r);
    let kube_proxy = kube_proxy(h, config, &mut r);
    let access = dir_access(h, config, &mut r);
    let admins = admin_kubeconfigs(ctx, h, &cluster, &mut r);
    let migration = datastore_migration(h, (&rec, &root), &cluster, &mut r);

    let problems = r.problems();
    let healthy = problems.is_empty();
    print_text(ctx, &r, healthy);
    ctx.printer.json(&json!({
        "installed": true,
        "install_root": root.as_str(),
        "calico_version": rec.calico_version,
        "backend": rec.backend,
        "services": services,
        "networks": networks,
        "endpoints": endpoints,
        "hns_restart": hns_restart,
        "felix_health": felix,
        "vni": vni,
        "address": address,
        "addressing": addressing,
        "drift": files,
        "node": node,
        "ipam": ipam,
        "token": token,
        "kube_proxy": kube_proxy,
        "dir_access": access,
        "admin_kubeconfigs": admins,
        "under_way": under_way,
        "calico_api": migration,
        "healthy": healthy,
        "problems": problems,
        "findings": r.findings,
    }));
    if healthy {
        Ok(())
    } else {
        Err(Degraded(problems).into())
    }
}

/// This node's own findings from its host, judged as `status` judges them (its services,
/// Felix's health, kube-proxy): what `verify` joins to its report when run on the node it
/// verifies. None when it is not installed here or cannot be read.
pub fn host_findings(ctx: &mut Context) -> Vec<Finding> {
    let judged = (|| -> anyhow::Result<Vec<Finding>> {
        let host = ctx.open_host(Intent::Read)?;
        let config = ctx.load_config()?.config;
        let root = config.root();
        let Some(rec) = record::read(host.as_ref(), &root)? else {
            return Ok(Vec::new());
        };
        let mut r = Report::default();
        services(host.as_ref(), &config, &rec, &mut r)?;
        felix_health(host.as_ref(), &root, &mut r)?;
        kube_proxy(host.as_ref(), &config, &mut r);
        Ok(r.findings)
    })();
    judged.unwrap_or_default()
}

/// The API server asked whether it takes calico-node's token, offline too (the fleet
/// DaemonSet's readiness), and the cluster read with the admin kubeconfig (not offline): the
/// Node the token's request read is the one this look judges, read once, and so are the
/// node's pods.
fn look(
    args: &StatusArgs,
    ctx: &mut Context,
    host: &dyn Host,
    config: &Config,
    node_name: &str,
) -> anyhow::Result<(Option<token_check::Answer>, ClusterRead)> {
    let mut asked = ask_token(ctx, host, config, node_name);
    let known = match &mut asked {
        Some(token_check::Answer::Accepted(node)) => node.take().map(|n| *n),
        _ => None,
    };
    let cluster = if args.offline {
        ClusterRead::Skipped("skipped with --offline")
    } else {
        read_cluster_knowing(ctx, node_name, crate::cluster::facts::Rights::Look, known)?
    };
    if let ClusterRead::Read(c, _) = &cluster {
        c.keep_one_look();
    }
    Ok((asked, cluster))
}

/// The group Calico's resources are read through, and a datastore migration under way (said
/// as its phase, not as a problem: Calico's components pause and keep the data plane, by the
/// sentence preflight's `datastore-migration` says); a migration that cannot be read, said.
/// The group this node's components read, judged against the locks (`installed::api_group`).
fn datastore_migration(
    h: &dyn Host,
    (rec, root): (&InstallRecord, &InstallRoot),
    cluster: &ClusterRead,
    r: &mut Report,
) -> serde_json::Value {
    let ClusterRead::Read(_, f) = cluster else {
        return serde_json::Value::Null;
    };
    let pin = crate::installed::api_group::pinned(h, root);
    let release = rec
        .calico_version
        .as_deref()
        .and_then(|v| crate::release::version::CalicoVersion::parse(v).ok());
    let components = crate::installed::api_group::read_by_components(&f.calico_locks, pin);
    if let Some(finding) =
        crate::installed::api_group::judge(&f.calico_locks, pin, release.as_ref())
    {
        r.findings.push(finding);
    }
    let state = f.datastore_state();
    if let Some(s) = &state {
        r.text.push(s.sentence.clone());
    }
    if let Some(why) = &f.datastore_migration_unreadable {
        r.text.push(format!(
            "cannot read the cluster's DatastoreMigrations: {why}"
        ));
    }
    json!({
        "group": f.calico_api,
        "datastore_ready": f.datastore_ready,
        "locks": f.calico_locks,
        "components_read": components,
        "components_pinned": pin,
        "migration": f.datastore_migration,
        "migration_under_way": state.is_some_and(|s| s.under_way),
        "migration_unreadable": f.datastore_migration_unreadable,
    })
}

/// Where kubeconfigs are left on a node: the node-join scripts' `C:\k\config`, the file
/// `$KUBECONFIG` names, and where the provisioning examples put the installer's.
const KUBECONFIG_PLACES: &[&str] = &[r"C:\k\config", r"C:\calicoctl-win\installer.kubeconfig"];

/// Each kubeconfig in the usual places on the node whose identity may do anything in the
/// cluster (an access review of `*` on `*`), when status reads the cluster: a node should keep
/// no such credential.
fn admin_kubeconfigs(
    ctx: &Context,
    h: &dyn Host,
    cluster: &ClusterRead,
    r: &mut Report,
) -> Vec<String> {
    if !matches!(cluster, ClusterRead::Read(..)) {
        return Vec::new();
    }
    let mut places: Vec<String> = KUBECONFIG_PLACES.iter().map(|p| (*p).to_owned()).collect();
    if let Some(k) = ctx.env.get("KUBECONFIG").filter(|k| !k.is_empty()) {
        places.push(k.clone());
    }
    let mut found = Vec::new();
    for path in places {
        let Ok(Some(bytes)) = h.read_file(&path) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        let admin =
            crate::cluster::Cluster::connect_text(&path, &text, &ctx.env, false).and_then(|c| {
                crate::cluster::facts::can_i(&c, &crate::cluster::facts::Permission::anything())
            });
        if let Ok(true) = admin {
            r.problem(Code::AdminKubeconfig, path.as_str(), format!(
                "{path} holds a kubeconfig whose identity may do anything in the cluster (cluster-admin): a node should keep none; remove it (install needs only the installer's short-lived kubeconfig, 'calicoctl-win fetch installer-kubeconfig')"
            ));
            found.push(path);
        }
    }
    found
}

/// No install record: what is under way, or that Calico is not installed.
fn not_installed(
    ctx: &mut Context,
    root: &InstallRoot,
    r: Report,
    under_way: serde_json::Value,
) -> anyhow::Result<()> {
    for line in &r.text {
        ctx.printer.text(line);
    }
    let mut r = r;
    if r.findings.is_empty() {
        ctx.printer.text(&format!(
            "Calico is not installed in {root} (no install record)."
        ));
        r.findings.push(
            Finding::new(
                Code::NotInstalled,
                root.as_str(),
                format!("not installed in {root}"),
            )
            .with_remedy("calicoctl-win install"),
        );
    } else {
        for p in r.problems() {
            ctx.printer.text(&format!("  - {p}"));
        }
    }
    let problems = r.problems();
    // The same keys as an installed node's document: `findings` is always there.
    ctx.printer.json(
        &json!({"installed": false, "install_root": root.as_str(), "healthy": false,
        "under_way": under_way, "problems": problems, "findings": r.findings}),
    );
    Err(Degraded(problems).into())
}

/// A command changing the node now (who holds the host lock), or one that was cut off (its
/// journal is still in the install root and nobody holds the lock), with the command that
/// finishes or undoes it; and a detached run that ended without its result, whose result is
/// written now.
fn under_way(
    ctx: &mut Context,
    host: &dyn Host,
    root: &InstallRoot,
    r: &mut Report,
) -> anyhow::Result<serde_json::Value> {
    let busy = ctx
        .state_dir(host)
        .and_then(|dir| crate::host::lock::busy(&dir));
    if let Some(holder) = busy {
        let who = holder.map_or_else(|| "a command".to_owned(), |h| h.to_string());
        r.problem(
            Code::UnderWay,
            "node",
            format!("{who} is changing this node now: run status again when it has finished"),
        );
        return Ok(json!({"running": who}));
    }
    if let Some(dir) = ctx.state_dir(host)
        && let Some(died) = super::detach::settle(&dir)?
    {
        r.problem(Code::UnderWay, "detached run", died);
    }
    let mut cut_off = Vec::new();
    for path in root.journals() {
        if let Some(j) = crate::apply::journal::Journal::load(host, &path)? {
            cut_off.push(interrupted(&j, r));
        }
    }
    Ok(match cut_off.len() {
        0 => json!(null),
        1 => cut_off.remove(0),
        _ => json!(cut_off),
    })
}

/// A run cut off, said with the command that finishes or undoes it.
fn interrupted(j: &crate::apply::journal::Journal, r: &mut Report) -> serde_json::Value {
    let done = j.entries.iter().filter(|e| e.done).count();
    // Only what the commands do: uninstall refuses another command's unfinished journal, a
    // repair's steps (deleted endpoints, evicted pods) cannot be undone, and a migration goes
    // on from where it stopped (to-operator's cluster steps before the host are undone by it
    // when they fail).
    let again = if j.command == "uninstall"
        || j.command == "repair"
        || j.command.starts_with("migrate")
    {
        format!("'calicoctl-win {}' finishes it", j.command)
    } else {
        format!(
            "'calicoctl-win {}' with the same inputs finishes it, 'calicoctl-win uninstall' undoes it",
            j.command
        )
    };
    // The journal holds the steps begun, not the whole plan: say what was done and where it
    // stopped, never a count of the plan it does not know.
    let stopped_at = j
        .entries
        .iter()
        .find(|e| !e.done)
        .or(j.entries.last())
        .map_or(String::new(), |e| format!(" (at: {})", e.action));
    r.problem(
        Code::UnderWay,
        j.command.as_str(),
        format!(
            "{} was cut off after {done} finished step(s){stopped_at}, started {}: {again}",
            j.command,
            time_text(j.started)
        ),
    );
    json!({"interrupted": j.command, "steps_done": done, "steps": j.entries.len()})
}

/// What runs as SYSTEM must still come from directories only SYSTEM and Administrators can
/// change: each one others may change now is a problem.
fn dir_access(h: &dyn Host, config: &Config, r: &mut Report) -> Vec<serde_json::Value> {
    crate::installed::protection::weak_dirs(h, config)
        .into_iter()
        .map(|(dir, who)| {
            r.findings.push(health::dir_access(&dir, &who));
            json!({"dir": dir, "writers": who})
        })
        .collect()
}

/// What status shows, section by section, and what it found wrong (`installed::health`).
#[derive(Default)]
struct Report {
    text: Vec<String>,
    findings: Vec<Finding>,
}

impl Report {
    /// A finding of `code` about `subject`, in one sentence.
    fn problem(&mut self, code: Code, subject: &str, message: String) {
        self.findings.push(Finding::new(code, subject, message));
    }

    /// The findings' sentences (JSON `problems`, what scripts read).
    fn problems(&self) -> Vec<String> {
        self.findings.iter().map(|f| f.message.clone()).collect()
    }
}

/// The recorded services: their state, and how they differ from the config.
fn services(
    host: &dyn Host,
    config: &Config,
    rec: &InstallRecord,
    r: &mut Report,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let wanted = crate::plan::install::services(config, rec.calico_version.as_deref());
    let mut services = Vec::new();
    r.text.push("Services:".into());
    for spec in &rec.services {
        let q = host.service_query(&spec.name)?;
        let (state, pid, since) = match &q {
            Some(s) => (
                format!("{:?}", s.state).to_ascii_lowercase(),
                s.pid,
                s.since.map(time_text),
            ),
            None => ("not registered".into(), None, None),
        };
        r.findings.extend(health::service(&spec.name, q.as_ref()));
        let config_drift = match (&q, wanted.iter().find(|w| w.name == spec.name)) {
            (Some(now), Some(want)) => crate::plan::install::service_changes(now, want, Some(spec)),
            (_, None) => vec!["not wanted by the config".into()],
            (None, _) => Vec::new(),
        };
        if !config_drift.is_empty() {
            r.problem(
                Code::ServiceDrift,
                spec.name.as_str(),
                format!(
                    "service {} differs from the config: {}",
                    spec.name,
                    config_drift.join(", ")
                ),
            );
        }
        let detail = match (pid, &since) {
            (Some(p), Some(t)) => format!(" (pid {p}, since {t})"),
            (Some(p), None) => format!(" (pid {p})"),
            _ => String::new(),
        };
        r.text.push(format!("  {:<12} {state}{detail}", spec.name));
        services.push(
            json!({"name": spec.name, "state": state, "pid": pid, "since": since,
            "drift": config_drift}),
        );
    }
    Ok(services)
}

/// The cloud metadata route the node had before the install (CalicoNode restores it after
/// the vSwitch takes it; without it pods and the node lose their cloud's metadata).
fn metadata_route(host: &dyn Host, rec: &InstallRecord, r: &mut Report) -> anyhow::Result<()> {
    let kept: Vec<&crate::host::Route> = rec
        .routes_before
        .iter()
        .filter(|route| crate::installed::routes::is_metadata(route))
        .collect();
    if kept.is_empty() {
        return Ok(());
    }
    let now = host.routes().context("cannot read the routes")?;
    for route in kept {
        if !crate::installed::routes::has_destination(&now, route) {
            r.findings.push(health::route_missing(route));
        }
    }
    Ok(())
}

/// kube-proxy as preflight's `kube-proxy` check sees it: a misconfiguration (the wrong
/// network, a source VIP that is not `Calico_ep`'s, DSR the build lacks) is a problem; no
/// kube-proxy service (it may run as a HostProcess DaemonSet) or DSR left off is shown only.
fn kube_proxy(host: &dyn Host, config: &Config, r: &mut Report) -> serde_json::Value {
    use crate::checks::Verdict;
    let facts = crate::checks::host::kube_proxy_facts(host);
    let check = crate::checks::kube_proxy::check(&facts, config);
    r.text.push(format!("kube-proxy: {}", check.message));
    if check.verdict == Verdict::Fail {
        r.problem(
            Code::KubeProxy,
            "kube-proxy",
            format!(
                "kube-proxy: {} (fix: {})",
                check.message,
                check.remedy.as_deref().unwrap_or("")
            ),
        );
    }
    json!({"verdict": check.verdict, "message": check.message, "remedy": check.remedy})
}

/// Calico's HNS networks, with the pods' endpoints on each (how many a network recreation
/// would cut off).
/// Felix's own health (`installed::felix_health`): a line, and a problem when it is not live
/// or not ready, or silent past its start-up.
fn felix_health(
    h: &dyn Host,
    root: &InstallRoot,
    r: &mut Report,
) -> anyhow::Result<crate::installed::felix_health::FelixHealth> {
    let health =
        crate::installed::felix_health::read(h, root).context("cannot ask Felix for its health")?;
    r.text.push(health.describe());
    r.findings.extend(health::felix(&health, now()));
    Ok(health)
}

/// Drift of the files: installed ones changed or missing, rendered ones the config now renders
/// otherwise.
fn file_drift(
    h: &dyn Host,
    config: &Config,
    (rec, cluster): (&InstallRecord, &ClusterRead),
    root: &InstallRoot,
    verify: bool,
    r: &mut Report,
) -> anyhow::Result<Vec<drift::FileDrift>> {
    // The External network as the install chose its adapter (re-choosing needs the cluster,
    // and a different choice is reconfigure's to make, which says so).
    let uplink = rec.network.as_ref().and_then(|n| n.adapter.as_deref());
    let pin = cluster.api_group_pin(h, root);
    let rendered = crate::plan::desired::rendered_files(h, config, rec.release(), uplink, pin)?;
    let stats = (!verify).then(|| FileStats::read(h, root));
    // calico-node's token file changes with every renewal: expected, not drift.
    let token_file = config
        .kubeconfig
        .as_ref()
        .map(|k| crate::render::kubeconfig::token_path(k.as_str()));
    let files = drift::files(h, rec, &rendered, stats.as_ref(), token_file.as_deref())?;
    for f in &files {
        r.problem(Code::FileDrift, f.path.as_str(), f.describe());
    }
    Ok(files)
}

/// HNS as the services left it: the networks, their endpoints judged, the last HNS restart.
fn hns(
    h: &dyn Host,
    rec: &InstallRecord,
    cluster: &ClusterRead,
    node_name: &str,
    args: &StatusArgs,
    r: &mut Report,
) -> anyhow::Result<(
    Vec<HnsNetwork>,
    Vec<endpoints::Judged>,
    Option<crate::installed::hns_restart::HnsRestart>,
)> {
    let networks = networks(h, rec, r)?;
    let judged = endpoints(h, cluster, node_name, args.grace, r)?;
    Ok((networks, judged, hns_restart(h, r)))
}

fn networks(
    host: &dyn Host,
    rec: &InstallRecord,
    r: &mut Report,
) -> anyhow::Result<Vec<HnsNetwork>> {
    let networks: Vec<HnsNetwork> = if rec.networks.is_empty() {
        Vec::new()
    } else {
        host.hns_networks()
            .context("cannot read the HNS networks")?
            .into_iter()
            .filter(|n| n.name == CALICO_NETWORK || n.name == EXTERNAL_NETWORK)
            .collect()
    };
    let mut summaries = std::collections::BTreeMap::new();
    for n in &networks {
        let list = host
            .hns_endpoints(&n.id)
            .with_context(|| format!("cannot read the endpoints of HNS network {}", n.name))?;
        summaries.insert(n.name.clone(), endpoint_summary(&list));
    }
    let count = |name: &str| summaries.get(name).cloned().unwrap_or_default();
    r.text.push("HNS networks:".into());
    for name in &rec.networks {
        let Some(n) = networks.iter().find(|n| &n.name == name) else {
            r.findings.push(health::network_missing(name));
            r.text.push(format!("  {name:<12} missing"));
            continue;
        };
        r.text.push(format!(
            "  {:<12} {} {} subnets {} VSID {} management IP {}, {}",
            n.name,
            n.id,
            n.network_type,
            n.subnets
                .iter()
                .map(|s| s.prefix.as_str())
                .collect::<Vec<_>>()
                .join(","),
            n.vsid().map_or("-".into(), |v| v.to_string()),
            n.management_ip.as_deref().unwrap_or("-"),
            count(&n.name)
        ));
    }
    Ok(networks)
}

/// Whether a cluster read in `e`'s chain timed out.
fn is_cluster_timeout(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        matches!(
            c.downcast_ref::<crate::cluster::ClusterError>(),
            Some(crate::cluster::ClusterError::Timeout { .. })
        )
    })
}

/// The Calico network's endpoints judged against the pods (with the cluster), by the one survey
/// `repair` makes too: each fault seen for longer than the grace period is a problem, named
/// with its pod and why; a suspect one is shown.
fn endpoints(
    h: &dyn Host,
    cluster: &ClusterRead,
    node_name: &str,
    grace: std::time::Duration,
    r: &mut Report,
) -> anyhow::Result<Vec<endpoints::Judged>> {
    let c = match cluster {
        ClusterRead::Read(c, _) => Some(c.as_ref()),
        _ => None,
    };
    let how = endpoints::Survey {
        cluster: c,
        node: node_name,
        grace,
        remote: endpoints::Remote::Ask,
        ageing: endpoints::Ageing::Read,
    };
    // A read that fails (the pods, the EndpointSlices) is a problem in the report, not its end.
    let judged = match endpoints::survey_calico(h, &how) {
        Ok(judged) => judged.unwrap_or_default(),
        // A wait that ran out is the command's end, as everywhere: cluster-timeout, exit 4.
        Err(e) if is_cluster_timeout(&e) => return Err(e),
        Err(e) => {
            r.problem(
                Code::EndpointsUnjudged,
                "endpoints",
                format!("the HNS endpoints cannot be judged: {e:#}"),
            );
            Vec::new()
        }
    };
    for j in &judged {
        if let Some(f) = health::endpoint(j) {
            r.findings.push(f);
        } else if j.verdict == endpoints::Verdict::Suspect {
            r.text.push(format!("  {}", j.sentence()));
        }
    }
    let unknown = judged
        .iter()
        .filter(|j| j.is_pod_endpoint() && j.state.is_none())
        .count();
    if unknown > 0 {
        r.text.push(format!(
            "  the state of {unknown} endpoint(s) cannot be read (HNS v1 GET /endpoints/ did not give it): a stuck endpoint cannot be told from an attached one, and none is called stuck"
        ));
    }
    Ok(judged)
}

/// The last HNS restart CalicoNode answered (`supervise::hns_watch`): shown; a service it could
/// not restart then is a problem.
fn hns_restart(h: &dyn Host, r: &mut Report) -> Option<crate::installed::hns_restart::HnsRestart> {
    let last = crate::installed::hns_restart::last(h)?;
    r.text.push(format!(
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
    r.findings.extend(health::hns_restart(
        &last.still_failing(h),
        &time_text(last.at),
    ));
    Some(last)
}

/// The VXLAN VNI in the config, in HNS and in the cluster, and how they disagree.
fn vni(
    config: &Config,
    networks: &[HnsNetwork],
    cluster: &ClusterRead,
    r: &mut Report,
) -> serde_json::Value {
    let hns_vni = networks
        .iter()
        .find(|n| n.name == CALICO_NETWORK)
        .and_then(HnsNetwork::vsid);
    let felix = match cluster {
        ClusterRead::Read(_, f) => Some(&f.felix),
        _ => None,
    };
    let cluster_vni = felix.map(crate::cluster::facts::Felix::vni);
    let config_vni = config.vxlan.vni.get();
    if config.backend == crate::config::types::Backend::Vxlan {
        r.findings.extend(health::vni(config_vni, hns_vni, felix));
    }
    let show = |v: Option<u32>| v.map_or("-".into(), |v| v.to_string());
    r.text.push(format!(
        "VXLAN VNI: config {config_vni}, HNS {}, cluster {}",
        show(hns_vni),
        show(cluster_vni)
    ));
    json!({"config": config_vni, "hns": hns_vni, "cluster": cluster_vni})
}

/// The report for people: each section's line, then healthy, or each finding with its code
/// and its fix.
fn print_text(ctx: &mut Context, r: &Report, healthy: bool) {
    for line in &r.text {
        ctx.printer.text(line);
    }
    ctx.printer
        .text(if healthy { "Healthy." } else { "Degraded:" });
    super::common::print_findings(ctx, "  - ", &r.findings);
}

/// The vSwitch's host adapter against its adapter's addressing before the vSwitch
/// (`health::addressing`): what CalicoNode kept for the External network there is now, the
/// findings (lost when the vSwitch was made and not back), and what changed since (an
/// administrator's: shown, never a finding, never put back).
fn addressing(h: &dyn crate::host::Host, r: &mut Report) -> serde_json::Value {
    use crate::installed::addressing as kept_addressing;
    let networks = h.hns_networks().unwrap_or_default();
    let Some(before) = kept_addressing::current(h, &networks) else {
        return serde_json::Value::Null;
    };
    let adapters = match h.adapters() {
        Ok(adapters) => adapters,
        Err(e) => {
            r.problem(
                Code::HostUnreadable,
                "network adapters",
                format!("the network adapters cannot be read: {e}"),
            );
            return json!({"before_vswitch": before});
        }
    };
    r.findings.extend(health::addressing(&before, &adapters));
    let Some(now) = before.host_adapter(&adapters) else {
        return json!({"before_vswitch": before});
    };
    let said = |v: Vec<kept_addressing::Drift>| -> Vec<String> {
        v.iter().map(|d| d.describe(&before, now)).collect()
    };
    let lost = said(kept_addressing::as_left(&before, now));
    let since = said(kept_addressing::changed_since(&before, now));
    if !since.is_empty() {
        r.text.push(format!(
            "Addressing: changed since the vSwitch was made (kept as it is): {}",
            since.join("; ")
        ));
    }
    json!({"before_vswitch": before, "lost_when_made": lost, "changed_since": since})
}

/// The node's address in each layer that must agree (`health::node_address`): the Node's
/// InternalIP, the Calico Node's BGP address, the management IP of Calico's HNS networks.
fn address(
    h: &dyn Host,
    networks: &[HnsNetwork],
    cluster: &ClusterRead,
    node_name: &str,
    r: &mut Report,
) -> serde_json::Value {
    let ours = health::management_ips(networks);
    let (internal, bgp) = match cluster {
        ClusterRead::Read(_, f) => (f.node_internal_ip, f.node_bgp_ipv4),
        _ => (None, None),
    };
    let adapters = h.adapters().ok();
    r.findings.extend(health::node_address(
        node_name,
        (internal, bgp),
        &ours,
        adapters.as_deref(),
    ));
    let shown = |ip: Option<std::net::Ipv4Addr>| ip.map_or("-".to_owned(), |ip| ip.to_string());
    r.text.push(format!(
        "Address: InternalIP {}, BGP {}, {}",
        shown(internal),
        shown(bgp),
        ours.iter()
            .map(|(n, ip)| format!("{n} {}", shown(*ip)))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let nets: serde_json::Map<String, serde_json::Value> = ours
        .iter()
        .map(|(n, ip)| ((*n).to_owned(), json!(ip)))
        .collect();
    json!({"internal_ip": internal, "bgp": bgp, "networks": nets})
}

/// The node in the cluster: Ready, cordoned, its pods.
fn node(
    cluster: &ClusterRead,
    node_name: &str,
    r: &mut Report,
) -> anyhow::Result<serde_json::Value> {
    let (c, f) = match cluster {
        ClusterRead::Read(c, f) => (c, f),
        ClusterRead::Skipped(why) => {
            r.text.push(format!("Node {node_name}: not read ({why})"));
            return Ok(json!(null));
        }
        ClusterRead::Failed(e) => {
            r.problem(
                Code::ClusterUnreadable,
                "cluster",
                format!("the cluster cannot be read: {e}"),
            );
            return Ok(json!(null));
        }
    };
    // The Node as this look read it, once (`facts::gather`).
    let (ready, cordoned) = match f.node_object.as_ref() {
        Some(n) => (
            drain::not_ready(n).map_or(Ok(()), Err),
            drain::unschedulable(n),
        ),
        None => (
            Err(format!("there is no Node named {node_name} in the cluster")),
            false,
        ),
    };
    // The pods not read is a problem of the report, not its end.
    let pods: Vec<String> = match drain::pods_on(c, node_name) {
        Ok(list) => list
            .iter()
            .map(|p| {
                format!(
                    "{}/{}",
                    p.metadata.namespace.as_deref().unwrap_or_default(),
                    p.metadata.name.as_deref().unwrap_or_default()
                )
            })
            .collect(),
        Err(e @ crate::cluster::ClusterError::Timeout { .. }) => return Err(e.into()),
        Err(e) => {
            r.problem(
                Code::ClusterUnreadable,
                node_name,
                format!("the pods on node {node_name} cannot be read: {e}"),
            );
            Vec::new()
        }
    };
    r.findings
        .extend(health::node_state(node_name, &ready, cordoned));
    r.text.push(format!(
        "Node {node_name}: {}{}, {} pod(s)",
        if ready.is_ok() { "Ready" } else { "not Ready" },
        if cordoned { ", cordoned" } else { "" },
        pods.len()
    ));
    Ok(json!({"name": node_name, "ready": ready.is_ok(), "cordoned": cordoned, "pods": pods}))
}

/// The node's IPAM blocks: the pod addresses in use of what they hold, against kubelet's
/// maxPods (`null` without the cluster).
fn ipam(
    cluster: &ClusterRead,
    config: &Config,
    node_name: &str,
    r: &mut Report,
) -> anyhow::Result<serde_json::Value> {
    use crate::cluster::ipam;
    let ClusterRead::Read(c, facts) = cluster else {
        return Ok(json!(null));
    };
    let blocks = ipam::node_blocks(c, node_name)?;
    let capacity: u64 = blocks.iter().map(|b| b.capacity).sum();
    let pods: u64 = blocks.iter().map(|b| b.pods).sum();
    let max_pods = facts.node_max_pods;
    let cidrs: Vec<&str> = blocks.iter().map(|b| b.cidr.as_str()).collect();
    r.text.push(match cidrs.as_slice() {
        [] => "IPAM: no block yet (the first pod claims one)".to_owned(),
        _ => format!(
            "IPAM: {pods} of {capacity} pod addresses used in {} ({} reserved for Windows){}",
            cidrs.join(", "),
            ipam::WINDOWS_RESERVED,
            max_pods
                .map(|m| format!("; kubelet schedules up to {m}"))
                .unwrap_or_default()
        ),
    });
    if config.windows_use_single_network && !blocks.is_empty() {
        r.findings
            .extend(health::ipam_capacity(node_name, max_pods, capacity, pods));
    }
    Ok(json!({"blocks": blocks, "pods": pods, "capacity": capacity, "max_pods": max_pods}))
}

/// calico-node's token: present, whether the API server takes it now (`asked`, with
/// calico-node's own kubeconfig), and how long it stays valid by the API server's clock.
/// Whatever is wrong with it is a problem among the others, never the end of the report.
fn token(
    host: &dyn Host,
    config: &Config,
    cluster: &ClusterRead,
    asked: Option<&token_check::Answer>,
    r: &mut Report,
) -> serde_json::Value {
    use crate::installed::token_records as renew;
    let path = match config.kubeconfig.as_ref().map(|p| p.as_str().to_owned()) {
        Some(path) if config.datastore == crate::config::types::Datastore::Kubernetes => path,
        _ => return json!(null),
    };
    let token = match node_token(host, &path, r) {
        Ok(token) => token,
        Err(doc) => return doc,
    };
    if let Some(why) = token.unusable() {
        r.findings.push(health::token_unusable(&path, &why));
        return json!({"path": path, "present": true, "usable": false, "error": why});
    }
    // A token that is no JWT has the expiry its TokenRequest answer gave, when CalicoNode
    // renewed it; a record also says the clock difference with the API server.
    let record = renew::issued(host, &token).unwrap_or_else(|e| {
        r.problem(
            Code::Token,
            "token",
            format!("cannot read the renewal record: {e}"),
        );
        None
    });
    let clock = Clock::of(record.as_ref());
    let expiry = token.expiry().or(record.as_ref().map(|rec| rec.expires));
    let refused_now = match asked {
        Some(token_check::Answer::Refused(_)) => {
            let cause = cause_of_refusal(&token, clock, cluster);
            r.findings
                .push(health::token_refused_now(&path, cause.as_ref()));
            true
        }
        _ => false,
    };
    let taken = matches!(asked, Some(token_check::Answer::Accepted(_)));
    // The API server just took it: not expired, whatever this node's clock says.
    let taken_past_expiry = taken && expiry.is_some_and(|e| e <= clock.server_now);
    if !(refused_now || taken_past_expiry) {
        let overdue = overdue(&token, record.as_ref());
        r.findings.extend(health::token_expiry(
            &path,
            expiry,
            overdue,
            clock.server_now,
        ));
    }
    let refused = refused_renewal(host, (&token, expiry), clock, cluster, refused_now, r);
    token_text(&token, expiry, record.as_ref(), asked, clock, r);
    json!({"path": path, "present": true, "usable": !refused_now,
        "api_server": asked.map(|a| json!({"answer": a.word(), "error": match a {
            token_check::Answer::Refused(e) | token_check::Answer::Unknown(e) => Some(e),
            token_check::Answer::Accepted(_) => None,
        }})),
        "expires": expiry.map(time_text),
        "bound_to_node": token.bound_node(),
        "clock_skew_seconds": record.and_then(|rec| rec.skew),
        "renewal_failed": refused.map(|f| json!({"at": time_text(f.at), "error": f.error,
            "needs_new_token": f.needs_new_token(clock.server_now)}))})
}

/// Now, by this node's clock and by the API server's (the node's minus the difference the
/// record of the token's issue measured; the node's when none was measured).
#[derive(Clone, Copy)]
struct Clock {
    node_now: i64,
    server_now: i64,
    skew: Option<i64>,
}

impl Clock {
    fn of(record: Option<&crate::installed::token_records::IssuedRecord>) -> Self {
        let skew = record.and_then(|rec| rec.skew);
        let node_now = now();
        Self {
            node_now,
            server_now: node_now.saturating_sub(skew.unwrap_or(0)),
            skew,
        }
    }
}

/// How little life left means renewals have failed for a while: CalicoNode renews at two
/// thirds of the token's life, so less than a quarter left.
fn overdue(
    token: &crate::cluster::credentials::Token,
    record: Option<&crate::installed::token_records::IssuedRecord>,
) -> i64 {
    match (token.issued_at().zip(token.expiry()), record) {
        (Some((iat, exp)), _) => (exp - iat) / 4,
        (None, Some(rec)) => rec.lifetime / 4,
        (None, None) => TOKEN_WARN_SECS,
    }
}

/// The token's lines: its expiry, the clock difference, the API server's answer, its Node.
fn token_text(
    token: &crate::cluster::credentials::Token,
    expiry: Option<i64>,
    record: Option<&crate::installed::token_records::IssuedRecord>,
    asked: Option<&token_check::Answer>,
    clock: Clock,
    r: &mut Report,
) {
    let skew = record.and_then(crate::installed::token_records::IssuedRecord::skew_to_say);
    r.text.push(format!(
        "Token: {}{}",
        match expiry {
            Some(t) => format!("valid until {} (the API server's clock)", time_text(t)),
            None if !token.is_jwt() =>
                "not a JWT: its expiry is known once CalicoNode renews it".into(),
            None => "does not expire".into(),
        },
        skew.map_or(String::new(), |s| format!(
            " (this node's clock is {}s {} the API server's)",
            s.unsigned_abs(),
            if s > 0 { "ahead of" } else { "behind" }
        ))
    ));
    let past = expiry.is_some_and(|e| e <= clock.node_now);
    r.text.push(match asked {
        Some(token_check::Answer::Accepted(_)) if past && clock.skew.is_none() => "Token: the API server takes it (asked with calico-node's kubeconfig), though it has expired by this node's clock: this node's clock is ahead of the API server's".into(),
        Some(token_check::Answer::Accepted(_)) => "Token: the API server takes it (asked with calico-node's kubeconfig)".into(),
        Some(token_check::Answer::Refused(_)) => "Token: the API server refuses it (401, asked with calico-node's kubeconfig)".into(),
        Some(token_check::Answer::Unknown(e)) => format!("Token: whether the API server takes it is not known: {e}"),
        None => "Token: the API server was not asked".into(),
    });
    if token.is_jwt() {
        r.text.push(match token.bound_node() {
            Some(n) => format!("Token: bound to Node {n}: deleting the Node revokes it"),
            None => crate::cluster::credentials::unbound_sentence(),
        });
    }
}

/// Why the API server refuses the token (`cluster::refusal`): told from the cluster when it
/// was read with an admin kubeconfig, else from the token alone (its expiry).
fn cause_of_refusal(
    token: &crate::cluster::credentials::Token,
    clock: Clock,
    cluster: &ClusterRead,
) -> Option<crate::cluster::refusal::Cause> {
    use crate::cluster::refusal;
    let said = match (cluster, token.service_account()) {
        (ClusterRead::Read(c, _), Some((ns, name))) => refusal::read_now(c, token, (&ns, &name)),
        _ => refusal::Now::default(),
    };
    refusal::cause(
        token,
        clock.node_now,
        &refusal::Now {
            clock_skew: clock.skew,
            ..said
        },
    )
}

/// Whether the API server takes calico-node's token now (`cluster::token_check`), asked with
/// the kubeconfig install wrote for calico-node; `None` where there is none to ask with.
fn ask_token(
    ctx: &Context,
    host: &dyn Host,
    config: &Config,
    node_name: &str,
) -> Option<token_check::Answer> {
    let path = config.kubeconfig.as_ref()?.as_str().to_owned();
    let text = String::from_utf8_lossy(&host.read_file(&path).ok()??).into_owned();
    let token = crate::cluster::credentials::node_token_in(host, &text).ok()??;
    if token.unusable().is_some() {
        return None;
    }
    Some(token_check::ask(
        (&path, &text),
        &token,
        &ctx.env,
        node_name,
    ))
}

/// calico-node's token as its kubeconfig at `path` names it; what status reports instead
/// (the problem said) when there is none to judge.
fn node_token(
    host: &dyn Host,
    path: &str,
    r: &mut Report,
) -> Result<crate::cluster::credentials::Token, serde_json::Value> {
    use crate::cluster::credentials;
    let kubeconfig = match host.read_file(path) {
        Ok(Some(k)) => k,
        Ok(None) => {
            r.problem(
                Code::Token,
                path,
                format!("calico-node's kubeconfig {path} is missing"),
            );
            return Err(json!({"path": path, "present": false}));
        }
        Err(e) => {
            r.problem(
                Code::Token,
                "calico-node's token",
                format!("calico-node's kubeconfig: {e}"),
            );
            return Err(json!({"path": path, "present": false, "error": e.to_string()}));
        }
    };
    match credentials::node_token_in(host, &String::from_utf8_lossy(&kubeconfig)) {
        Ok(Some(token)) => Ok(token),
        Ok(None) => {
            r.problem(Code::Token, "calico-node's token", format!(
                "calico-node's kubeconfig {path} holds no token, or the token file it names is missing or empty; {}",
                NEW_TOKEN
            ));
            Err(json!({"path": path, "present": false}))
        }
        Err(e) => {
            r.problem(
                Code::Token,
                "calico-node's token",
                format!("{e}; {}", e.hint()),
            );
            Err(json!({"path": path, "present": false, "error": e.to_string()}))
        }
    }
}

/// The last failed renewal of this token (a record of another token says nothing of this
/// one), said as a problem with what to do when only a new token helps; a 401's cause told
/// (`cluster::refusal`). A refusal the API server has just repeated (`refused_now`) is said
/// once, by that answer.
fn refused_renewal(
    host: &dyn Host,
    (token, expiry): (&crate::cluster::credentials::Token, Option<i64>),
    clock: Clock,
    cluster: &ClusterRead,
    refused_now: bool,
    r: &mut Report,
) -> Option<crate::installed::token_records::Refused> {
    let refused = crate::installed::token_records::refused(host)
        .unwrap_or_else(|e| {
            r.problem(
                Code::Token,
                "token",
                format!("cannot read the failed renewal's record: {e}"),
            );
            None
        })
        .filter(|f| f.is_of(token));
    if let Some(f) = &refused
        && !(refused_now && f.unauthorized)
    {
        let cause = if f.unauthorized {
            cause_of_refusal(token, clock, cluster)
        } else {
            None
        };
        r.findings.push(health::token_refused(
            f,
            expiry,
            clock.server_now,
            cause.as_ref(),
        ));
    }
    refused
}

/// How many endpoints a network has, how many are other hosts', and their states.
fn endpoint_summary(list: &[crate::host::HnsEndpoint]) -> String {
    let mut states: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for e in list {
        if let Some(s) = e.state {
            *states.entry(crate::host::hns::state_name(s)).or_default() += 1;
        }
    }
    let remote = list.iter().filter(|e| e.remote).count();
    let mut out = format!("{} endpoint(s)", list.len());
    if remote > 0 {
        out.push_str(&format!(", {remote} remote"));
    }
    if !states.is_empty() {
        let s: Vec<String> = states.iter().map(|(k, n)| format!("{k} {n}")).collect();
        out.push_str(&format!(" (states: {})", s.join(", ")));
    }
    out
}
