//! `migrate to-operator` and `migrate from-operator`: this node handed to the operator's
//! HostProcess install or taken back from it, its HNS networks and pods' endpoints kept
//! (`plan::migrate` says what each step is and why).

use super::change::Change;
use crate::apply::{self, Options};
use crate::cli::{MigrateArgs, MigrateFromArgs};
use crate::cluster::Cluster;
use crate::cluster::operator::{self, Installation};
use crate::context::Context;
use crate::host::Host;
use crate::installed::{boot_marker, record};
use crate::layout::InstallRoot;
use crate::plan::migrate::{self, Facts, Refused};
use anyhow::Context as _;
use serde_json::json;

const TO: &str = "migrate to-operator";
const FROM: &str = "migrate from-operator";

/// What both directions read first: the node, the cluster, the host's networks and culture.
struct Read {
    node: String,
    root: InstallRoot,
    cluster: Cluster,
    facts: crate::cluster::facts::ClusterFacts,
    networks: Vec<crate::host::HnsNetwork>,
    culture: Result<boot_marker::Culture, String>,
    system: crate::host::SystemFacts,
    /// calicoctl-win's CNI directories, from its config.
    cni: operator::CniDirs,
}

impl Read {
    fn take(ctx: &mut Context, host: &dyn Host) -> anyhow::Result<Self> {
        let loaded = ctx.load_config()?;
        let node = loaded.config.node.name.to_string();
        let root = loaded.config.root();
        let cluster = ctx.require_cluster()?;
        let facts =
            crate::cluster::facts::gather(&cluster, &node, crate::cluster::facts::Rights::Skip)?;
        let networks = host
            .hns_networks()
            .context("cannot list the HNS networks")?;
        let cni = operator::CniDirs {
            bin: loaded.config.cni.bin_dir.as_str().to_owned(),
            conf: loaded.config.cni.conf_dir.as_str().to_owned(),
        };
        Ok(Self {
            node,
            root,
            cni,
            cluster,
            facts,
            networks,
            culture: boot_marker::system_culture(host)?,
            system: host.system_facts()?,
        })
    }

    fn facts<'a>(&'a self, kube_proxy_service: bool) -> Facts<'a> {
        Facts {
            node: &self.node,
            installation: self.facts.installation.as_ref(),
            cluster_vni: self.facts.felix.vni(),
            networks: &self.networks,
            culture: &self.culture,
            boot_local_seconds: self.system.boot_local_seconds,
            boot_local_reported: self.system.boot_local_reported(),
            boot_local_dated: self.system.boot_local_seconds_dated,
            kube_proxy_service,
            cni: &self.cni,
        }
    }

    fn installation(&self) -> Installation {
        self.facts.installation.clone().unwrap_or_default()
    }

    fn cordoned(&self) -> anyhow::Result<bool> {
        Ok(crate::cluster::drain::is_cordoned(
            &self.cluster,
            &self.node,
        )?)
    }
}

fn refuse(direction: &'static str, reasons: Vec<migrate::Refusal>) -> anyhow::Result<()> {
    if reasons.is_empty() {
        Ok(())
    } else {
        Err(Refused { direction, reasons }.into())
    }
}

pub fn to_operator(args: &MigrateArgs, ctx: &mut Context) -> anyhow::Result<()> {
    let host = ctx.open_host_to_change("migrate")?;
    let host = host.as_ref();
    let read = Read::take(ctx, host)?;
    let mut change = Change::begin(ctx, host, TO, &read.root, read.root.migrate_journal())?;
    let Some(rec) = installed(host, &read.root, change.journal.as_ref())? else {
        return already_the_operators(ctx, &read);
    };
    let facts = read.facts(host.service_query("kube-proxy")?.is_some());
    refuse("to-operator", migrate::to_operator_refusals(&facts))?;
    let marker = facts.operator_marker().map_err(anyhow::Error::msg)?;
    // Whether this migration cordoned the node, said on the node so that the run that
    // finishes it (after an operator pod that came late) uncordons it too.
    let cordoned = read.cordoned()?;
    let uncordon = !cordoned || operator::cordoned_by_migrate(&read.cluster, &read.node)?;
    let actions = to_operator_plan(host, &read, &rec, &marker, args, (cordoned, uncordon))?;
    ctx.printer.text(&format!(
        "Hand node {} to the operator's {} DaemonSet, keeping its HNS networks ({}) and every endpoint",
        read.node,
        operator::DAEMONSET,
        read.networks.iter().map(|n| n.name.as_str()).collect::<Vec<_>>().join(", ")
    ));
    let mut doc = json!({
        "dry_run": ctx.options.dry_run,
        "node": read.node,
        "direction": "to-operator",
        "boot_marker": marker,
        "actions": apply::to_json(&actions).context("cannot show the plan as JSON")?,
        "changed": false,
    });
    if ctx.options.dry_run {
        change.show(ctx, &actions);
        ctx.printer.note("--dry-run: nothing was changed");
        ctx.printer.json(&doc);
        return Ok(());
    }
    if !cordoned {
        operator::mark_cordoned(&read.cluster, &read.node, true)?;
    }
    let opts = Options {
        record: Some(rec.clone()),
        ..Options::for_change(
            TO,
            change.journal_path.clone(),
            false,
            args.service_timeout,
            change.journal.take(),
            Some(&read.cluster),
        )
    };
    let mut warnings = change.run(ctx, &actions, opts)?.map_err(|failed| {
        let e = failed.error;
        let done = e.index - 1;
        anyhow::Error::new(e).context(format!(
            "migrate to-operator stopped after {done} step(s); running it again finishes it"
        ))
    })?;
    if uncordon {
        operator::mark_cordoned(&read.cluster, &read.node, false)?;
    }
    if let Some(g) = &rec.renewal {
        warnings.extend(super::uninstall::remove_grant(ctx, g));
    }
    warnings.extend(super::uninstall::forget_node(
        ctx,
        crate::cluster::node::Left::HandedToOperator,
    ));
    ctx.printer.text(&format!(
        "Node {} runs Calico from the operator's {} pod now.",
        read.node,
        operator::DAEMONSET
    ));
    doc["changed"] = json!(true);
    doc["warnings"] = json!(warnings);
    ctx.printer.json(&doc);
    Ok(())
}

/// What is handed over: the install record, or the one an interrupted run's journal kept
/// (its host part removed the record); `None` when there is neither.
fn installed(
    host: &dyn Host,
    root: &InstallRoot,
    journal: Option<&crate::apply::journal::Journal>,
) -> anyhow::Result<Option<record::InstallRecord>> {
    Ok(record::read(host, root)?.or_else(|| journal.and_then(|j| j.record.clone())))
}

/// A node with nothing of calicoctl-win's to hand over: done when the operator's pod runs
/// there (a node moved earlier, or by a rollout that reaches it again), else not installed.
fn already_the_operators(ctx: &mut Context, read: &Read) -> anyhow::Result<()> {
    let state = operator::pod_on(&read.cluster, &read.node)?;
    if !matches!(state, operator::PodState::Ready(_)) {
        return Err(crate::error::UsageError::new(
            format!(
                "calicoctl-win has not installed Calico in {} and the operator does not run Calico on node {} ({state}): there is nothing to hand over",
                read.root, read.node
            ),
            "install with calicoctl-win first, or let the operator's DaemonSet take a node nothing runs Calico on",
        )
        .of_kind(crate::error::Kind::NotInstalled)
        .into());
    }
    moved(
        ctx,
        read,
        "to-operator",
        &format!("runs Calico from the operator's pod already ({state}): nothing to hand over"),
    );
    Ok(())
}

/// The whole of `to-operator`: the operator kept off calicoctl-win's other nodes and switched
/// on for Windows, this node cordoned; calicoctl-win's services and files gone (as uninstall
/// without `--purge`: networks, endpoints and Calico's registry key stay) and the boot marker
/// written as the operator reads it; the label off, the operator's pod waited for, the node
/// uncordoned when this migration cordoned it.
fn to_operator_plan(
    host: &dyn Host,
    read: &Read,
    rec: &record::InstallRecord,
    marker: &str,
    args: &MigrateArgs,
    (cordoned, uncordon): (bool, bool),
) -> anyhow::Result<Vec<apply::Action>> {
    let mut label = crate::cluster::node::unlabelled_nodes_of_ours(&read.cluster)?;
    let this_labelled = read
        .facts
        .node_labels
        .get(operator::LABEL)
        .map(String::as_str)
        == Some(operator::LABEL_VALUE);
    // A run that finishes an earlier one (the host handed over, its record gone, its label
    // off) must not label the node again: that would take the operator's pod off it.
    let handed_over = record::read(host, &read.root)?.is_none();
    if handed_over {
        label.retain(|n| n != &read.node);
    } else if !this_labelled && !label.contains(&read.node) {
        label.push(read.node.clone());
    }
    let inst = read.installation();
    let mut actions = migrate::to_operator_before(&inst, &label, &read.node, cordoned);
    actions.extend(migrate::keeping_cni_dirs(
        crate::plan::uninstall::plan(
            host,
            rec,
            &crate::plan::uninstall::Options {
                purge: false,
                remove_logs: false,
            },
        )?,
        &read.cni,
    ));
    actions.extend(migrate::marker_for_operator(host, marker)?);
    actions.extend(migrate::to_operator_after(
        &read.node,
        args.pod_timeout,
        uncordon,
    ));
    Ok(actions)
}

pub fn from_operator(args: &MigrateFromArgs, ctx: &mut Context) -> anyhow::Result<()> {
    let Some((read, uncordon)) = take_from_operator(args, ctx)? else {
        return Ok(());
    };
    // Install takes the host lock again: the one above went with its change.
    let node = read.node.as_str();
    super::install::run(&args.install, ctx).with_context(|| {
        format!(
            "node {node} is out of the operator's DaemonSet (label {}={}) and its pods keep their networks, but calicoctl-win's install did not finish: fix what it says and run 'calicoctl-win migrate from-operator' again (it goes on from here), or give the node back to the operator with 'kubectl label node {node} {}-'{}",
            operator::LABEL,
            operator::LABEL_VALUE,
            operator::LABEL,
            if uncordon { " and 'kubectl uncordon NODE'" } else { "" }.replace("NODE", node)
        )
    })?;
    if ctx.options.dry_run {
        return Ok(());
    }
    ctx.printer.text(
        &apply::Action::ClearNetworkUnavailable {
            node: node.to_owned(),
        }
        .describe(),
    );
    operator::clear_network_unavailable(&read.cluster, node)?;
    if uncordon {
        ctx.printer.text(&format!("uncordon node {node}"));
        crate::cluster::drain::set_cordoned(&read.cluster, node, false)?;
        operator::mark_cordoned(&read.cluster, node, false)?;
    }
    ctx.printer.text(&format!(
        "Node {node} runs Calico from calicoctl-win's services now; the operator's DaemonSet keeps off it."
    ));
    Ok(())
}

/// `from-operator` before install: refused or planned, then shown (a dry run) or run under
/// the host lock, which goes with the change; what was read and whether to uncordon the node
/// at the end (this run cordoned it, or an earlier one did and said so on the node); `None`
/// when the node has moved already.
fn take_from_operator(
    args: &MigrateFromArgs,
    ctx: &mut Context,
) -> anyhow::Result<Option<(Read, bool)>> {
    let host = ctx.open_host_to_change("migrate")?;
    let host = host.as_ref();
    let read = Read::take(ctx, host)?;
    let loaded = ctx.load_config()?;
    if moved_already(host, &read, loaded.config.cni.conf_dir.as_str())? {
        moved(
            ctx,
            &read,
            "from-operator",
            "runs Calico from calicoctl-win's services already and the operator's DaemonSet keeps off it: nothing to take",
        );
        return Ok(None);
    }
    let stored = boot_marker::stored_legacy(host)?;
    let facts = read.facts(false);
    refuse(
        "from-operator",
        migrate::from_operator_refusals(&facts, stored.as_deref()),
    )?;
    let boot = stored
        .as_deref()
        .is_some_and(|s| facts.is_this_boot(s))
        .then(|| read.system.boot_id.clone())
        .flatten();
    let cordoned = read.cordoned()?;
    let uncordon = !cordoned || operator::cordoned_by_migrate(&read.cluster, &read.node)?;
    let inst = read.installation();
    let actions = migrate::from_operator_before(
        host,
        &inst,
        &read.node,
        migrate::FromOperator {
            labelled: inst.keeps_off(&read.facts.node_labels),
            cordoned,
            timeout: args.pod_timeout,
            boot_id: boot.as_deref(),
            cni_conf_dir: loaded.config.cni.conf_dir.as_str(),
        },
    )?;
    ctx.printer.text(&format!(
        "Take node {} from the operator's {} DaemonSet, keeping its HNS networks and every endpoint, then install",
        read.node,
        operator::DAEMONSET
    ));
    let mut change = Change::begin(ctx, host, FROM, &read.root, read.root.journal())?;
    if ctx.options.dry_run {
        change.show(ctx, &actions);
        ctx.printer.text("then install, as planned below:");
        return Ok(Some((read, uncordon)));
    }
    if !cordoned {
        operator::mark_cordoned(&read.cluster, &read.node, true)?;
    }
    let opts = Options::for_change(
        FROM,
        change.journal_path.clone(),
        false,
        args.install.service_timeout,
        change.journal.take(),
        Some(&read.cluster),
    );
    change.run(ctx, &actions, opts)?.map_err(|failed| {
        anyhow::Error::new(failed.error)
            .context("migrate from-operator stopped before install; running it again continues")
    })?;
    Ok(Some((read, uncordon)))
}

/// Says that the node has moved already and nothing was changed (`"already": true`).
fn moved(ctx: &mut Context, read: &Read, direction: &str, what: &str) {
    ctx.printer.text(&format!("Node {} {what}.", read.node));
    ctx.printer.json(&json!({
        "dry_run": ctx.options.dry_run,
        "node": read.node,
        "direction": direction,
        "already": true,
        "actions": [],
        "changed": false,
    }));
}

/// Whether a `from-operator` has nothing left to do: calicoctl-win installed, the
/// operator's DaemonSet kept off the node and its pod gone, its CNI files gone, and no
/// cordon of a migration left to undo (a run that stopped before its end is finished).
fn moved_already(host: &dyn Host, read: &Read, cni_conf_dir: &str) -> anyhow::Result<bool> {
    if record::read(host, &read.root)?.is_none()
        || !read.installation().keeps_off(&read.facts.node_labels)
    {
        return Ok(false);
    }
    for name in migrate::OPERATOR_CNI_FILES {
        if host
            .file_access(&crate::layout::join(cni_conf_dir, name))?
            .is_some()
        {
            return Ok(false);
        }
    }
    Ok(
        operator::pod_on(&read.cluster, &read.node)? == operator::PodState::Gone
            && !operator::cordoned_by_migrate(&read.cluster, &read.node)?,
    )
}
