//! `migrate to-operator` and `from-operator`: this node handed to the operator's HostProcess
//! install or taken back, its HNS networks and endpoints kept (`plan::migrate` says why).

use super::change::{Change, Changing};
use crate::apply::{self, Options};
use crate::cli::{MigrateArgs, MigrateFromArgs};
use crate::cluster::Cluster;
use crate::cluster::operator::{self, Installation};
use crate::context::Context;
use crate::host::Host;
use crate::installed::{boot_marker, record};
use crate::k8s_name::NodeName;
use crate::layout::InstallRoot;
use crate::plan::migrate::{self, Facts, Refused};
use anyhow::Context as _;

/// to-operator's own keys of its document (`change::Changing`).
#[derive(serde::Serialize)]
#[cfg_attr(test, derive(Default))]
pub(crate) struct Migrate<'a> {
    pub node: &'a str,
    /// `to-operator` or `from-operator`.
    pub direction: &'static str,
    /// The marker the operator's pod reads to keep the node's HNS networks (to-operator).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boot_marker: Option<&'a str>,
    /// The node has moved already: nothing was planned.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub already: bool,
}

const TO: &str = "migrate to-operator";
const FROM: &str = "migrate from-operator";

/// What both directions read first: the node, the cluster, the host's networks and culture.
struct Read {
    node: NodeName,
    root: InstallRoot,
    cluster: Cluster,
    facts: crate::cluster::facts::ClusterFacts,
    networks: Vec<crate::host::HnsNetwork>,
    culture: Result<boot_marker::Culture, String>,
    system: crate::host::SystemFacts,
    /// calicoctl-win's CNI directories, from its config.
    cni: operator::CniDirs,
    /// Whether node.name is the name kubelet registers the node as (install's check).
    node_name: crate::checks::Check,
    /// The config's service CIDRs (for the fix of an Installation without them).
    service_cidrs: Vec<String>,
}

impl Read {
    fn take(ctx: &mut Context, host: &dyn Host) -> anyhow::Result<Self> {
        let loaded = ctx.load_config()?;
        let node = loaded.config.node.name.clone();
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
        let node_name =
            crate::checks::host::node_name(&crate::checks::host::snapshot(host), &loaded.config);
        Ok(Self {
            node,
            root,
            cni,
            cluster,
            facts,
            networks,
            culture: boot_marker::system_culture(host)?,
            system: host.system_facts()?,
            node_name,
            service_cidrs: loaded
                .config
                .service_cidrs
                .iter()
                .map(ToString::to_string)
                .collect(),
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

    /// Whether to uncordon at the end: this run cordons it, or an earlier one did (annotated).
    fn uncordon(&self, cordoned: bool) -> anyhow::Result<bool> {
        Ok(!cordoned || operator::cordoned_by_migrate(&self.cluster, &self.node)?)
    }

    /// node.name not kubelet's: a migration would move another node (install's check).
    fn node_name_refusal(&self) -> Option<migrate::Refusal> {
        (self.node_name.verdict == crate::checks::Verdict::Fail).then(|| migrate::Refusal {
            code: "node-name",
            message: self.node_name.message.clone(),
            fix: self.node_name.remedy.clone().unwrap_or_default(),
        })
    }
}

fn refuse(direction: &'static str, reasons: Vec<migrate::Refusal>) -> anyhow::Result<()> {
    if reasons.is_empty() {
        Ok(())
    } else {
        Err(Refused { direction, reasons }.into())
    }
}

/// Refuses another command's journal in the install root (a migration over it would plan from
/// a node halfway through it), but `ours` and `except` (from-operator continues its install).
fn refuse_unfinished(
    host: &dyn Host,
    root: &InstallRoot,
    (ours, except): (&str, &str),
) -> anyhow::Result<()> {
    for path in root.journals() {
        if let Some(j) = crate::apply::journal::Journal::load(host, &path)?
            && j.command != ours
            && j.command != except
        {
            return Err(super::change::unfinished(
                &j.command,
                &path,
                " first, then migrate",
            ));
        }
    }
    Ok(())
}

/// Why the operator could not take this node (`plan::operator_readiness`), and node.name.
fn operator_refusals(read: &Read, host: &dyn Host) -> anyhow::Result<Vec<migrate::Refusal>> {
    use crate::plan::operator_readiness as ready;
    let mut out: Vec<migrate::Refusal> = read.node_name_refusal().into_iter().collect();
    let Some(inst) = read.facts.installation.as_ref() else {
        return Ok(out);
    };
    out.extend(degraded_refusal(read)?);
    let namespace = match crate::cluster::operator_namespace::locate(&read.cluster)? {
        Ok(ns) => ns,
        Err(why) => {
            out.push(migrate::Refusal {
                code: "operator-not-found",
                message: format!("cannot tell where the operator runs: {why}"),
                fix: "install the operator as Calico's manifest or Helm chart does (its Deployment labelled k8s-app=tigera-operator, one in the cluster, OPERATOR_NAMESPACE a value or fieldRef metadata.namespace): 'kubectl get deploy -A -l k8s-app=tigera-operator'".into(),
            });
            return Ok(out);
        }
    };
    let endpoint = match operator::services_endpoint(&read.cluster, &namespace) {
        // The migrate account's Role is in another namespace: the operator's verdict is unknown.
        Err(crate::cluster::ClusterError::Api { code: 403, .. }) => {
            let map = operator::SERVICES_ENDPOINT;
            out.push(migrate::Refusal {
                code: "operator-settings-forbidden",
                message: format!(
                    "the identity may not get configmaps {map} in namespace {namespace}, where the operator reads its settings, so whether it would accept a Windows node cannot be told"
                ),
                fix: format!(
                    "apply the roles 'calicoctl-win fleet plan --migrate to-operator --operator-namespace {namespace}' writes (a Role in {namespace} that may get configmaps {map}), or use an admin kubeconfig"
                ),
            });
            return Ok(out);
        }
        found => found?,
    };
    out.extend(ready::windows_config(
        inst,
        (&namespace, endpoint),
        &read.facts.server,
        &read.service_cidrs,
    ));
    let addresses = host
        .ipv4_addresses()
        .context("cannot list the host's IPv4 addresses")?;
    out.extend(ready::autodetection(
        inst,
        read.facts.node_internal_ip,
        &addresses,
    ));
    Ok(out)
}

/// A TigeraStatus Degraded: the operator would not act on what migrate changes.
fn degraded_refusal(read: &Read) -> anyhow::Result<Option<migrate::Refusal>> {
    Ok(operator::degraded_status(&read.cluster)?.map(|why| migrate::Refusal {
        code: "operator-degraded",
        message: format!(
            "the operator does not render its Installation now ({why}), so it would not act on what migrate changes"
        ),
        fix: "see 'kubectl get tigerastatus -o yaml' and the operator's log ('kubectl logs deploy/tigera-operator' in its namespace: 'kubectl get deploy -A -l k8s-app=tigera-operator'), and migrate once TigeraStatus is Available".into(),
    }))
}

/// A refusal of a run continuing an earlier one's (`begun`, its journal): this one changed
/// nothing more.
fn refuse_begun(
    direction: &'static str,
    reasons: Vec<migrate::Refusal>,
    begun: Option<&str>,
) -> anyhow::Result<()> {
    let refused = refuse(direction, reasons);
    match begun {
        Some(journal) => refused.with_context(|| {
            format!(
                "an earlier migrate {direction} changed the node already (its journal is {journal}); this run changed nothing more: fix what it says and run it again to finish"
            )
        }),
        None => refused,
    }
}

pub fn to_operator(args: &MigrateArgs, ctx: &mut Context) -> anyhow::Result<()> {
    let host = ctx.open_host_to_change("migrate")?;
    let host = host.as_ref();
    let read = Read::take(ctx, host)?;
    refuse_unfinished(host, &read.root, (TO, TO))?;
    let mut change = Change::begin(ctx, host, TO, &read.root, read.root.migrate_journal())?;
    let before_path = read.root.migrate_cluster_journal();
    // An interrupted run's cluster steps are continued (and undone if they fail).
    let before_journal = crate::apply::journal::Journal::load(host, &before_path)?;
    if let Some(j) = &before_journal {
        ctx.printer.note(&format!(
            "an earlier migrate to-operator stopped in its cluster steps ({} journaled): this run continues them",
            j.entries.len()
        ));
    }
    // The record, or the one an interrupted run's journal kept (its host part removed it).
    let journal_rec = change.journal.as_ref().and_then(|j| j.record.clone());
    let Some(rec) = record::read(host, &read.root)?.or(journal_rec) else {
        return already_the_operators(ctx, &read);
    };
    let facts = read.facts(host.service_query("kube-proxy")?.is_some());
    let begun = change
        .journal
        .is_some()
        .then_some(change.journal_path.as_str());
    let earlier = (
        begun,
        before_journal.as_ref().map(|j| (j, before_path.as_str())),
    );
    refuse_to_operator(host, &read, &facts, earlier, args)?;
    let marker = facts.operator_marker().map_err(anyhow::Error::msg)?;
    let cordoned = read.cordoned()?;
    let uncordon = read.uncordon(cordoned)?;
    // Finishing a run that reached the node: the cluster steps before it are done.
    let before = if change.journal.is_some() {
        Vec::new()
    } else {
        to_operator_before(&read, cordoned, args)?
    };
    let actions = to_operator_plan(host, &read, &rec, &marker, args, uncordon)?;
    ctx.printer.text(&format!(
        "Hand node {} to the operator's {} DaemonSet, keeping its HNS networks ({}) and every endpoint",
        read.node,
        operator::DAEMONSET,
        read.networks.iter().map(|n| n.name.as_str()).collect::<Vec<_>>().join(", ")
    ));
    let all: Vec<apply::Action> = before.iter().chain(&actions).cloned().collect();
    let own = Migrate {
        node: read.node.as_str(),
        direction: "to-operator",
        boot_marker: Some(&marker),
        already: false,
    };
    let doc = Changing::plan(ctx.options.dry_run, own, &all);
    if ctx.options.dry_run {
        super::change::end_dry_run(ctx, &all, &doc);
        return Ok(());
    }
    let timeout = args.service_timeout;
    run_cluster_first(
        ctx,
        &change,
        &read,
        &before,
        (before_path, before_journal),
        timeout,
    )?;
    let journal = change.journal.take();
    let warnings = run_hand_over(ctx, &change, &read, (rec, journal), &actions, timeout)?;
    ctx.printer.text(&format!(
        "Node {} runs Calico from the operator's {} pod now.",
        read.node,
        operator::DAEMONSET
    ));
    ctx.printer.json(&doc.ran(warnings));
    Ok(())
}

/// `to-operator`'s cluster steps before the host, undone if one fails (the Installation back
/// before the node is touched).
fn run_cluster_first(
    ctx: &mut Context,
    change: &Change,
    read: &Read,
    before: &[apply::Action],
    (path, journal): (String, Option<crate::apply::journal::Journal>),
    timeout: std::time::Duration,
) -> anyhow::Result<()> {
    let opts = Options::for_change(TO, path, true, timeout, journal, Some(&read.cluster));
    change.run(ctx, before, opts)?.map_err(|failed| {
        let e = failed.error;
        let undone = match &e.rollback_failures {
            Some(f) if f.is_empty() && e.rollback_kept.is_empty() => "its cluster steps were undone: the Installation's windowsDataplane (and the windowsNodes it set) as they were, the node uncordoned and unmarked; the labels and the DaemonSet's affinity, which only keep the operator off calicoctl-win's nodes, stay".to_owned(),
            Some(f) if f.is_empty() => format!("its cluster steps were undone but one: {}; the node uncordoned and unmarked", e.rollback_kept.join("; ")),
            Some(f) => format!("undoing its cluster steps failed partly: {}; running it again finishes them", f.join("; ")),
            None => "running it again goes on from there".to_owned(),
        };
        anyhow::Error::new(e).context(format!(
            "migrate to-operator stopped before it touched node {}: nothing on the node was changed, and {undone}",
            read.node
        ))
    })?;
    Ok(())
}

/// `to-operator`'s host part and the cluster steps after it, journaled with the record and
/// never undone: the next run finishes one that stops, whose error says what is left.
fn run_hand_over(
    ctx: &mut Context,
    change: &Change,
    read: &Read,
    (rec, journal): (
        record::InstallRecord,
        Option<crate::apply::journal::Journal>,
    ),
    actions: &[apply::Action],
    timeout: std::time::Duration,
) -> anyhow::Result<Vec<String>> {
    let host_steps = actions
        .iter()
        .position(|a| matches!(a, apply::Action::SetNodeLabel { value: None, .. }))
        .unwrap_or(actions.len());
    let opts = Options {
        record: Some(rec),
        ..change.options(false, timeout, journal, Some(&read.cluster))
    };
    change.run(ctx, actions, opts)?.map_err(|failed| {
        let e = failed.error;
        let done = e.index.saturating_sub(1);
        let left = actions[done..]
            .iter()
            .map(apply::Action::describe)
            .collect::<Vec<_>>()
            .join("; ");
        let said = if done > host_steps {
            format!(
                "node {} is the operator's now (calicoctl-win's services and files are gone and its label is off); left to do: {left}; running it again finishes them",
                read.node
            )
        } else {
            format!(
                "migrate to-operator stopped after {done} step(s) on node {}; running it again finishes it",
                read.node
            )
        };
        anyhow::Error::new(e).context(said)
    })
}

/// Why `to-operator` must not run, before any change. The operator's readiness is judged only
/// before the first change (`begun`: it is on already); a refusal undoes an earlier run's
/// cluster steps before the host first.
fn refuse_to_operator(
    host: &dyn Host,
    read: &Read,
    facts: &Facts<'_>,
    (begun, cluster_steps): (
        Option<&str>,
        Option<(&crate::apply::journal::Journal, &str)>,
    ),
    args: &MigrateArgs,
) -> anyhow::Result<()> {
    let mut reasons = migrate::to_operator_refusals(facts);
    if begun.is_none() {
        reasons.extend(operator_refusals(read, host)?);
    }
    if !reasons.is_empty()
        && let Some((j, path)) = cluster_steps
    {
        let left = undo_cluster_steps(host, j, path, &read.cluster, args);
        return refuse("to-operator", reasons).with_context(|| left);
    }
    refuse_begun("to-operator", reasons, begun)
}

/// Undoes an interrupted run's cluster steps before the host; what it says of them.
fn undo_cluster_steps(
    host: &dyn Host,
    journal: &crate::apply::journal::Journal,
    path: &str,
    cluster: &Cluster,
    args: &MigrateArgs,
) -> String {
    let rolled = crate::apply::undo::undo_journal_in(
        host,
        journal,
        path,
        args.service_timeout,
        Some(cluster),
    );
    let failed = rolled.failures;
    if failed.is_empty() {
        let but = match rolled.kept.join("; ") {
            kept if kept.is_empty() => kept,
            kept => format!(" but one: {kept}"),
        };
        format!(
            "the cluster steps an earlier run made before the node (journal {path}) were undone{but}; nothing on the node was changed"
        )
    } else {
        format!(
            "undoing the cluster steps an earlier run made (journal {path}) failed partly: {}; running migrate to-operator again goes on with them",
            failed.join("; ")
        )
    }
}

/// Nothing of calicoctl-win's to hand over: done when the operator's pod runs there (moved
/// earlier), else not installed.
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
        false,
        "to-operator",
        &format!("runs Calico from the operator's pod already ({state}): nothing to hand over"),
    );
    Ok(())
}

/// `to-operator`'s cluster steps before the host (`plan::migrate::to_operator_before`).
fn to_operator_before(
    read: &Read,
    cordoned: bool,
    args: &MigrateArgs,
) -> anyhow::Result<Vec<apply::Action>> {
    let mut label = crate::cluster::node::unlabelled_nodes_of_ours(&read.cluster)?;
    let this_labelled = read
        .facts
        .node_labels
        .get(operator::LABEL)
        .map(String::as_str)
        == Some(operator::LABEL_VALUE);
    if !this_labelled && !label.contains(&read.node) {
        label.push(read.node.clone());
    }
    Ok(migrate::to_operator_before(
        &read.installation(),
        &label,
        (&read.node, &read.cni),
        cordoned,
        args.pod_timeout,
    ))
}

/// The rest of `to-operator`: uninstall without `--purge` (networks and endpoints stay), the
/// boot marker as the operator reads it, then `plan::migrate::to_operator_after`.
fn to_operator_plan(
    host: &dyn Host,
    read: &Read,
    rec: &record::InstallRecord,
    marker: &str,
    args: &MigrateArgs,
    uncordon: bool,
) -> anyhow::Result<Vec<apply::Action>> {
    let mut actions = migrate::keeping_cni_dirs(
        crate::plan::uninstall::plan(
            host,
            rec,
            &crate::plan::uninstall::Options {
                purge: false,
                remove_logs: false,
                cluster_steps: Vec::new(),
            },
        )?,
        &read.cni,
    );
    actions.extend(migrate::marker_for_operator(
        host,
        marker,
        read.system.boot_id.as_deref(),
    )?);
    actions.extend(migrate::to_operator_after(
        &read.node,
        args.pod_timeout,
        uncordon,
        rec.renewal.as_ref(),
    ));
    Ok(actions)
}

pub fn from_operator(args: &MigrateFromArgs, ctx: &mut Context) -> anyhow::Result<()> {
    let Some(taken) = plan_from_operator(args, ctx)? else {
        return Ok(());
    };
    let node = taken.node.clone();
    let dry_run = ctx.options.dry_run;
    let doc = super::install::FromOperator {
        node: node.to_string(),
        direction: "from-operator",
        migrate_actions: apply::shown(&taken.before),
        migrate_actions_after: apply::shown(&taken.after),
    };
    let cluster = taken.cluster;
    let root = taken.root;
    let (before, after) = (taken.before, taken.after);
    let journal = taken.journal_path;
    let timeout = args.install.service_timeout;
    // How far the run got: migrate's steps before install done, install done.
    let stage = std::cell::Cell::new(0u8);
    let mut run_before = |ctx: &mut Context, host: &dyn Host| -> anyhow::Result<()> {
        let ran = run_steps(ctx, host, (&cluster, &root), &before, &journal, timeout);
        if ran.is_ok() {
            stage.set(1);
        }
        ran.map_err(|e| {
            e.context(format!(
                "migrate from-operator stopped before install; calicoctl-win changed nothing of install's yet: running it again continues, or give node {node} back to the operator with 'kubectl label node {node} {}-' and 'kubectl uncordon {node}' if it cordoned it",
                operator::LABEL
            ))
        })
    };
    let mut run_after = |ctx: &mut Context, host: &dyn Host| -> anyhow::Result<Vec<String>> {
        stage.set(2);
        run_steps(ctx, host, (&cluster, &root), &after, &journal, timeout).map_err(|e| {
            e.context("calicoctl-win runs Calico on this node now, but the steps after install did not finish: running migrate from-operator again finishes them")
        })?;
        ctx.printer.text(
            "Calico runs from calicoctl-win's services now; the operator's DaemonSet keeps off this node.",
        );
        Ok(Vec::new())
    };
    let as_labelled = |f: &mut crate::cluster::facts::ClusterFacts| migrate::as_handed_back(f);
    let within = super::install::Within {
        facts: &as_labelled,
        doc: Some(doc),
        before: &mut run_before,
        after: &mut run_after,
    };
    let installed = super::install::run_within(&args.install, ctx, Some(within));
    let Err(e) = installed else {
        return Ok(());
    };
    if dry_run {
        return Err(e);
    }
    let back = GiveBack {
        node: &node,
        root: &root,
        cluster: &cluster,
        journal: &journal,
        uncordon: taken.uncordon,
    };
    Err(after_failure(ctx, e, &back, stage.get() == 1, args))
}

/// The error of a from-operator whose install failed; after the node `left` the operator, an
/// install undone wholly gives it back rather than leave it without Calico.
fn after_failure(
    ctx: &mut Context,
    e: anyhow::Error,
    back: &GiveBack<'_>,
    left: bool,
    args: &MigrateFromArgs,
) -> anyhow::Error {
    let (node, label) = (back.node, operator::LABEL);
    if !left {
        return e.context(format!(
            "migrate from-operator did not finish on node {node}: fix what it says and run it again (it goes on from where it stopped); while it has not, the operator's DaemonSet keeps off the node (label {label}=true)"
        ));
    }
    match give_back(ctx, back, args) {
        Ok(Some(said)) => e.context(said),
        Ok(None) => e.context(format!(
            "migrate from-operator did not finish on node {node}: its install stopped with its journal kept; run migrate from-operator again to finish it (the operator's DaemonSet keeps off the node meanwhile: label {label}=true)"
        )),
        Err(g) => e.context(format!(
            "install failed and was undone, and giving node {node} back to the operator failed too ({g:#}): run migrate from-operator again, or 'kubectl label node {node} {label}-', 'kubectl uncordon {node}' and 'kubectl annotate node {node} {}-'",
            operator::CORDONED_ANNOTATION
        )),
    }
}

/// What giving a node back to the operator needs.
struct GiveBack<'a> {
    node: &'a NodeName,
    root: &'a InstallRoot,
    cluster: &'a Cluster,
    journal: &'a str,
    uncordon: bool,
}

/// After an install that failed and undid itself: `plan::migrate::back_to_operator`,
/// journaled. `None` when install left its journal (the next run finishes it).
fn give_back(
    ctx: &mut Context,
    back: &GiveBack<'_>,
    args: &MigrateFromArgs,
) -> anyhow::Result<Option<String>> {
    let host = ctx.open_host_to_change("migrate")?;
    let host = host.as_ref();
    if crate::apply::journal::Journal::load(host, &back.root.journal())?.is_some() {
        return Ok(None);
    }
    let steps = migrate::back_to_operator(back.node, args.pod_timeout, back.uncordon);
    ctx.printer
        .text("install failed and was undone: the node goes back to the operator");
    run_steps(
        ctx,
        host,
        (back.cluster, back.root),
        &steps,
        back.journal,
        args.install.service_timeout,
    )?;
    Ok(Some(format!(
        "install failed and was undone; node {} is the operator's again (its {} pod is ready{}): fix what install says and run migrate from-operator again",
        back.node,
        operator::DAEMONSET,
        if back.uncordon {
            ", the node uncordoned"
        } else {
            ""
        }
    )))
}

/// Runs `steps` journaled at `journal` (a rerun continues them), not undone.
fn run_steps(
    ctx: &mut Context,
    host: &dyn Host,
    (cluster, root): (&Cluster, &InstallRoot),
    steps: &[apply::Action],
    journal: &str,
    timeout: std::time::Duration,
) -> anyhow::Result<()> {
    let mut change = Change::begin(ctx, host, FROM, root, journal.to_owned())?;
    let journal = change.journal.take();
    let opts = change.options(false, timeout, journal, Some(cluster));
    change
        .run(ctx, steps, opts)?
        .map_err(|failed| anyhow::Error::new(failed.error))?;
    Ok(())
}

/// What `from-operator` does around install, planned before anything changes.
struct FromPlan {
    node: NodeName,
    /// Whether to uncordon the node at the end (this migration cordoned it).
    uncordon: bool,
    root: InstallRoot,
    cluster: Cluster,
    before: Vec<apply::Action>,
    after: Vec<apply::Action>,
    journal_path: String,
}

/// Why `from-operator` must not run, before any change. Past the first change (a journal, or
/// our label with the operator's pod gone) an old boot marker only means CalicoNode makes the
/// networks anew, as after a boot: no refusal.
fn refuse_from_operator(
    host: &dyn Host,
    read: &Read,
    facts: &Facts<'_>,
    stored: Option<&str>,
    journal_path: &str,
) -> anyhow::Result<()> {
    let mut reasons = migrate::from_operator_refusals(facts, stored);
    reasons.extend(read.node_name_refusal());
    let journal = crate::apply::journal::Journal::load(host, journal_path)?;
    let begun = journal.is_some()
        || (read.installation().keeps_off(&read.facts.node_labels)
            && operator::pod_on(&read.cluster, &read.node)? == operator::PodState::Gone);
    if begun {
        reasons.retain(|r| r.code != "not-initialised");
    }
    if read.installation().excluding_affinity().is_some() {
        reasons.extend(degraded_refusal(read)?);
    }
    refuse_begun(
        "from-operator",
        reasons,
        journal.is_some().then_some(journal_path),
    )
}

/// `from-operator` before install: refused, or the steps around it planned and shown; `None`
/// when moved already.
fn plan_from_operator(
    args: &MigrateFromArgs,
    ctx: &mut Context,
) -> anyhow::Result<Option<FromPlan>> {
    let host = ctx.open_host_to_change("migrate")?;
    let host = host.as_ref();
    let read = Read::take(ctx, host)?;
    let loaded = ctx.load_config()?;
    let journal_path = read.root.migrate_journal();
    refuse_unfinished(host, &read.root, (FROM, "install"))?;
    if moved_already(host, &read, loaded.config.cni.conf_dir.as_str())? {
        let annotated = annotate_if_missing(ctx, host, &read)?;
        moved(
            ctx,
            &read,
            annotated,
            "from-operator",
            "runs Calico from calicoctl-win's services already and the operator's DaemonSet keeps off it: nothing to take",
        );
        return Ok(None);
    }
    let stored = boot_marker::stored_legacy(host)?;
    let facts = read.facts(false);
    refuse_from_operator(host, &read, &facts, stored.as_deref(), &journal_path)?;
    let boot = stored
        .as_deref()
        .is_some_and(|s| facts.is_this_boot(s))
        .then(|| read.system.boot_id.clone())
        .flatten();
    let cordoned = read.cordoned()?;
    let uncordon = read.uncordon(cordoned)?;
    let inst = read.installation();
    let before = migrate::from_operator_before(
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
    let mut after = vec![apply::Action::ClearNetworkUnavailable {
        node: read.node.clone(),
    }];
    if uncordon {
        after.extend(migrate::uncordon(&read.node));
    }
    ctx.printer.text(&format!(
        "Take node {} from the operator's {} DaemonSet, keeping its HNS networks and every endpoint, then install",
        read.node,
        operator::DAEMONSET
    ));
    if ctx.options.dry_run {
        super::change::print_steps(ctx, "Before install:", &before);
        super::change::print_steps(ctx, "After install:", &after);
        ctx.printer.text("Install, as planned below:");
    }
    // The lock stays held for install within this command, unless detached: its own
    // process takes it.
    if args.install.detach {
        drop(ctx.take_lock());
    }
    Ok(Some(FromPlan {
        node: read.node.clone(),
        uncordon,
        root: read.root.clone(),
        cluster: read.cluster,
        before,
        after,
        journal_path,
    }))
}

/// The node's annotations (`fleet status` tells calicoctl-win's nodes by them), written when
/// install's failed to; a refusal fails the run, for the next to retry. Whether it wrote.
fn annotate_if_missing(ctx: &mut Context, host: &dyn Host, read: &Read) -> anyhow::Result<bool> {
    let Some(rec) = record::read(host, &read.root)? else {
        return Ok(false);
    };
    let want = record::annotations_for(&rec);
    let have = crate::cluster::node::annotations(&read.cluster, &read.node)?;
    if want.iter().all(|(k, v)| have.get(k) == Some(v)) {
        return Ok(false);
    }
    if ctx.options.dry_run {
        ctx.printer.text(&format!(
            "would annotate node {} with the installed Calico version and config hash",
            read.node
        ));
        return Ok(false);
    }
    crate::cluster::node::annotate(&read.cluster, &read.node, &want).with_context(|| {
        format!(
            "node {} runs Calico from calicoctl-win's services, but its annotations could not be written: run migrate from-operator again",
            read.node
        )
    })?;
    ctx.printer.text(&format!(
        "annotated node {} with the installed Calico version and config hash",
        read.node
    ));
    Ok(true)
}

/// Says that the node has moved already; `changed` when this run wrote its annotations.
fn moved(ctx: &mut Context, read: &Read, changed: bool, direction: &'static str, what: &str) {
    ctx.printer.text(&format!("Node {} {what}.", read.node));
    let own = Migrate {
        node: read.node.as_str(),
        direction,
        boot_marker: None,
        already: true,
    };
    let doc = Changing::plan(ctx.options.dry_run, own, &[]);
    ctx.printer.json(&Changing { changed, ..doc });
}

/// Whether `from-operator` has nothing left: installed, the operator kept off (its pod and
/// CNI files gone), no journal and no migration's cordon left to undo.
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
    for path in [read.root.journal(), read.root.migrate_journal()] {
        if crate::apply::journal::Journal::load(host, &path)?.is_some() {
            return Ok(false);
        }
    }
    Ok(
        operator::pod_on(&read.cluster, &read.node)? == operator::PodState::Gone
            && !operator::cordoned_by_migrate(&read.cluster, &read.node)?
            && !operator::network_unavailable(&read.cluster, &read.node)?,
    )
}
