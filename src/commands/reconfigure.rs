//! `reconfigure`: converges an installed node to a changed config, draining it and making the
//! Calico HNS network again for a change HNS cannot make in place.

use super::change::{Change, Changing, ChecksBlocked, Failed};
use super::common::{ClusterRead, read_cluster, with_cluster};
use crate::apply;
use crate::apply::Action;
use crate::cli::{DrainBy, ReconfigureArgs};
use crate::cluster::drain;
use crate::config::types::Backend;
use crate::context::Context;
use crate::error::UsageError;
use crate::installed::record::{self, NetworkSettings};
use crate::k8s_name::NodeName;
use crate::layout::CALICO_NETWORK;
use crate::layout::InstallRoot;
use crate::plan::install::{Inputs, Restart};
use crate::plan::reconfigure::{self, NodeSteps, network_changes};
use anyhow::Context as _;

pub fn run(args: &ReconfigureArgs, ctx: &mut Context) -> anyhow::Result<()> {
    attempt(args, ctx, None).map(drop)
}

/// How a run ended: done, or (`--turn`) it has a change and no turn yet, nothing changed.
pub(super) enum Pass {
    Done,
    NeedsTurn,
}

/// A run within a fleet's turn (`commands::turn`): the stop (Ctrl-C's, the turn's loss), and
/// the wait, the host lock let go, until the node is healthy again.
pub(super) struct Turn<'a> {
    pub stop: crate::duration::Stop,
    pub settle: &'a mut dyn FnMut(&mut Context) -> anyhow::Result<()>,
}

/// One run: checks, plan, change. `turn`: `Some` while a turn is held.
pub(super) fn attempt(
    args: &ReconfigureArgs,
    ctx: &mut Context,
    mut turn: Option<&mut Turn<'_>>,
) -> anyhow::Result<Pass> {
    let host = ctx.open_host_to_change("reconfigure")?;
    let base = ctx.load_config()?;
    let node_name = base.config.node.name.clone();
    let cluster = read_cluster(false, ctx, &node_name, crate::cluster::facts::Rights::Skip)?;
    let loaded = with_cluster(ctx, &cluster, base)?;
    let config = &loaded.config;
    let root = config.root();
    let rec = installed(host.as_ref(), &root, config)?;
    host_checks(ctx, host.as_ref(), config, &rec, &args.allow_known_issue)?;
    let journal_path = root.journal();
    let mut change = Change::begin(ctx, host.as_ref(), "reconfigure", &root, journal_path)?;
    let journal = change.journal.take();

    // Files: the new rendered ones; the release's and the credentials stay as they are.
    // The adapter the External network binds, chosen again.
    let uplink = super::common::uplink(host.as_ref(), config, &cluster, Some(&rec))?;
    let adapter = uplink.adapter.as_deref();
    let rendered = cluster.rendered_files(host.as_ref(), config, rec.release(), adapter)?;
    let kept = reconfigure::kept_files(&rec, &rendered);
    // Networks: what HNS cannot change in place.
    let new_net = NetworkSettings::of(config, uplink.adapter.as_deref());
    let (changes, delete) = network_plan(host.as_ref(), config, &rec, &new_net)?;
    let recreate = !changes.is_empty();

    // The cluster: needed to drain, and to compare the VNI with Felix's.
    let need = Need {
        recreate,
        we_cordoned: reconfigure::cordoned_by(journal.as_ref(), &node_name),
        changes: &changes,
        vni: new_net.vni,
    };
    let node = node_plan(args, config, cluster, &node_name, &need)?;
    let files = (rendered, kept, uplink.adapter.clone());
    let inputs = reconfigure::Inputs {
        install: install_inputs(
            args,
            &loaded,
            (&rec, recreate, new_net.vni),
            files,
            journal.as_ref(),
        ),
        installed_services: rec.services.iter().map(|s| s.name.clone()).collect(),
        delete,
        node: node.steps,
    };
    let actions = reconfigure::plan(host.as_ref(), &inputs)?;
    if let Some(pass) = gate(args, ctx, (turn.as_deref_mut(), &mut change), &actions)? {
        return Ok(pass);
    }
    let shown = Shown {
        root: &root,
        node_name: node_name.as_str(),
        backend: config.backend,
        changes: &changes,
        pods: node.preview,
    };
    let Some(doc) = show(ctx, &shown, &actions)? else {
        // Nothing to change: the file stats kept all the same (a run cut off before it kept
        // them).
        if actions.is_empty() && !ctx.options.dry_run {
            change.keep_file_stats(ctx);
        }
        return Ok(Pass::Done);
    };
    let at = (node.cluster.as_deref(), &node_name);
    execute(args, ctx, &mut change, (&actions, journal), at, turn, doc)
}

/// Runs the plan, then the turn's wait and `--verify` (a CalicoWindowsReady since the start
/// only when CalicoNode was started).
fn execute<D: serde::Serialize>(
    args: &ReconfigureArgs,
    ctx: &mut Context,
    change: &mut Change<'_>,
    (actions, journal): (&[Action], Option<crate::apply::journal::Journal>),
    (cluster, node_name): (Option<&crate::cluster::Cluster>, &NodeName),
    turn: Option<&mut Turn<'_>>,
    doc: Changing<D>,
) -> anyhow::Result<Pass> {
    // Rolled back on failure. Ctrl-C (or a turn's own stop, `commands::turn`) ends the drain's
    // waits and the run before its next step: undone (the cordon too) or journaled.
    let stop = turn.as_ref().map(|t| t.stop.clone()).unwrap_or_else(|| {
        ctx.catch_stop(crate::duration::Stop::new(), super::common::CHANGE_UNCAUGHT)
    });
    let opts = apply::Options {
        stop,
        ..change.options(true, args.service_timeout, journal, cluster)
    };
    if let Err(e) = change.run(ctx, actions, opts)? {
        return Err(failed(*e, node_name));
    }
    change.keep_file_stats(ctx);
    change.annotate(ctx, cluster, node_name);
    ctx.printer
        .text(&format!("Reconfigured: {} step(s).", actions.len()));
    if let Some(t) = turn {
        change.let_go();
        (t.settle)(ctx)?;
    }
    let doc = Changing {
        changed: true,
        ..doc
    };
    let restarted = super::verify_restarted::Restarted::of(&doc);
    let verify = (args.verify.with(), "reconfigured", restarted);
    super::verify::print_verified(ctx, verify, cluster, node_name, doc)?;
    Ok(Pass::Done)
}

/// With `--turn`: a change waits for a turn (`Pass::NeedsTurn`), asked without the host lock;
/// a turn held with nothing left to change is given back once the node is healthy.
fn gate(
    args: &ReconfigureArgs,
    ctx: &mut Context,
    (turn, change): (Option<&mut Turn<'_>>, &mut Change<'_>),
    actions: &[Action],
) -> anyhow::Result<Option<Pass>> {
    let changing = !actions.is_empty() && !ctx.options.dry_run;
    match turn {
        None if changing && args.turn.is_some() => return Ok(Some(Pass::NeedsTurn)),
        Some(t) if !changing => {
            change.let_go();
            (t.settle)(ctx)?;
        }
        _ => {}
    }
    Ok(None)
}

/// The install's inputs: the new files, the release kept, the restart, the new network's VSID.
fn install_inputs<'a>(
    args: &ReconfigureArgs,
    loaded: &'a crate::config::Loaded,
    (rec, recreate, vni): (&record::InstallRecord, bool, u32),
    (files, kept, uplink): (
        Vec<crate::plan::install::DesiredFile>,
        Vec<crate::installed::record::RecordedFile>,
        Option<String>,
    ),
    journal: Option<&'a crate::apply::journal::Journal>,
) -> Inputs<'a> {
    let config = &loaded.config;
    Inputs {
        renewal: None,
        config,
        files,
        extra_owned: kept,
        extra_dirs: Vec::new(),
        calico_version: rec.calico_version.clone(),
        cni_version: rec.cni_version.clone(),
        legacy: Vec::new(),
        start: true,
        wait_timeout: args.wait_timeout,
        previous: Some(rec.clone()),
        journal,
        restart: if recreate {
            Restart::AlreadyStopped
        } else {
            Restart::Affected
        },
        expect_vsid: (config.backend == Backend::Vxlan).then_some(vni),
        config_hash: Some(crate::config::fleet_hash(loaded)),
        install_id: rec.install_id.clone(),
        uplink,
    }
}

/// The install record; refused when none, or when the new backend needs an install's files.
fn installed(
    host: &dyn crate::host::Host,
    root: &InstallRoot,
    config: &crate::config::Config,
) -> anyhow::Result<record::InstallRecord> {
    let Some(rec) = record::read(host, root)? else {
        return Err(UsageError::new(
            format!("Calico is not installed in {root} (there is no install record)"),
            "install it with 'calicoctl-win install', or point install_root at where it is",
        )
        .of_kind(crate::error::Kind::NotInstalled)
        .into());
    };
    if config.backend == Backend::WindowsBgp && rec.backend != Backend::WindowsBgp.to_string() {
        return Err(UsageError::new(
            format!(
                "the backend changes from {} to windows-bgp, which needs confd's files from the Calico release",
                rec.backend
            ),
            "run 'calicoctl-win uninstall', then 'calicoctl-win install' with the new config",
        )
        .into());
    }
    Ok(rec)
}

/// The settings HNS cannot change in place that differ, and the networks deleted to make the
/// Calico network again (none when nothing differs).
fn network_plan(
    host: &dyn crate::host::Host,
    config: &crate::config::Config,
    rec: &record::InstallRecord,
    new_net: &NetworkSettings,
) -> anyhow::Result<(Vec<String>, Vec<crate::host::hns::HnsNetwork>)> {
    let networks = if config.backend == Backend::None && rec.networks.is_empty() {
        Vec::new()
    } else {
        host.hns_networks()
            .context("cannot read the HNS networks to compare them with the config")?
    };
    let calico = networks.iter().find(|n| n.name == CALICO_NETWORK);
    let old = rec
        .network
        .as_ref()
        .map(|o| crate::plan::desired::with_current_uplink(host, o));
    let changes = network_changes(old.as_ref(), new_net, calico);
    let delete = if changes.is_empty() {
        Vec::new()
    } else {
        reconfigure::networks_to_delete(old.as_ref(), new_net, &networks)
    };
    Ok((changes, delete))
}

/// What the plan is shown with.
struct Shown<'a> {
    root: &'a InstallRoot,
    node_name: &'a str,
    backend: Backend,
    changes: &'a [String],
    pods: Option<Pods>,
}

/// Reconfigure's own keys of its document (`change::Changing`); `change` is `none`, `files`
/// or `network`.
#[derive(serde::Serialize)]
pub(crate) struct Reconfigure<'a> {
    pub install_root: &'a str,
    pub change: &'static str,
    pub network_changes: &'a [String],
    /// `null` without a drain of ours.
    pub pods: Option<&'a Pods>,
}

/// The pods a network change's drain evicts, those without a controller (`--force`), and the
/// DaemonSet and mirror pods that stay.
#[derive(serde::Serialize)]
#[cfg_attr(test, derive(Default))]
pub(crate) struct Pods {
    pub evict: Vec<drain::PodRef>,
    pub unmanaged: Vec<drain::PodRef>,
    pub skipped: Vec<drain::PodRef>,
}

/// Shows the plan; the document to print once it ran, or `None` (nothing to do, a dry run)
/// when the run ends here, its document printed.
fn show<'a>(
    ctx: &mut Context,
    shown: &'a Shown<'a>,
    actions: &[Action],
) -> anyhow::Result<Option<Changing<Reconfigure<'a>>>> {
    let dry_run = ctx.options.dry_run;
    ctx.printer.text(&format!(
        "Reconfigure Calico in {} on node {} ({} backend)",
        shown.root, shown.node_name, shown.backend
    ));
    let kind = if !shown.changes.is_empty() {
        ctx.printer.text(&format!(
            "  - network-immutable: {}; the Calico HNS network is made again",
            shown.changes.join("; ")
        ));
        "network"
    } else if actions.is_empty() {
        "none"
    } else {
        "files"
    };
    let own = Reconfigure {
        install_root: shown.root.as_str(),
        change: kind,
        network_changes: shown.changes,
        pods: shown.pods.as_ref(),
    };
    let doc = Changing::plan(dry_run, own, actions);
    if actions.is_empty() {
        ctx.printer
            .text("Nothing to do: the node already matches this config.");
        ctx.printer.json(&doc);
        return Ok(None);
    }
    if dry_run {
        super::change::end_dry_run(ctx, actions, &doc);
        return Ok(None);
    }
    Ok(Some(doc))
}

/// What the node needs from the cluster for this change.
struct Need<'a> {
    /// The Calico network is made again: the node is cordoned and drained around it.
    recreate: bool,
    /// An interrupted run cordoned the node: this one uncordons it.
    we_cordoned: bool,
    changes: &'a [String],
    vni: u32,
}

/// The cluster steps of the plan, the pods a drain would evict, and the cluster they use.
struct NodePlan {
    steps: Option<NodeSteps>,
    preview: Option<Pods>,
    cluster: Option<Box<crate::cluster::Cluster>>,
}

/// Cordon, drain and uncordon around a network recreation (or the uncordon an interrupted
/// run owes), once the cluster agrees with the new VNI and the pods can be evicted.
fn node_plan(
    args: &ReconfigureArgs,
    config: &crate::config::Config,
    cluster: ClusterRead,
    node_name: &NodeName,
    need: &Need<'_>,
) -> anyhow::Result<NodePlan> {
    if !need.recreate && !need.we_cordoned {
        // Not needed for the change; kept to annotate the node with what it runs.
        return Ok(NodePlan {
            steps: None,
            preview: None,
            cluster: match cluster {
                ClusterRead::Read(c, _) => Some(c),
                _ => None,
            },
        });
    }
    if need.recreate && args.drain.is_none() {
        return Err(needs_drain(args, config, &cluster, node_name, need).into());
    }
    let (c, facts) = connected(cluster, node_name)?;
    // A new VNI the cluster's Felix does not use is refused, unless the user says it is meant.
    if let Some(e) = vni_refusal(args, config, &facts, need) {
        return Err(e.into());
    }
    let cordoned = drain::is_cordoned(&c, node_name)?;
    let external = args.drain == Some(DrainBy::External);
    if external && need.recreate && !cordoned {
        return Err(UsageError::new(
            format!(
                "--drain=external: node {node_name} is not cordoned, so it was not drained for the Calico network to be made again"
            ),
            "let the engine cordon and drain the node first (kubectl drain), or pass --drain to have calicoctl-win do it",
        )
        .of_kind(crate::error::Kind::NeedsDrain)
        .into());
    }
    let (drain_action, preview) = if need.recreate && !external {
        let (action, preview) = drain_action(args, &c, node_name)?;
        (Some(action), Some(preview))
    } else {
        (None, None)
    };
    Ok(NodePlan {
        steps: Some(NodeSteps {
            node: node_name.clone(),
            // A node cordoned before (by an engine, by hand) is not ours to uncordon.
            cordon: need.recreate && !cordoned,
            uncordon: (need.recreate && !cordoned) || need.we_cordoned,
            drain: drain_action,
            ready_timeout: args.wait_timeout,
            // DaemonSet pods are recreated by their DaemonSet; their emptyDir is of no use on
            // a pod without a network.
            recreate: args.evict.options(true),
        }),
        preview,
        cluster: Some(c),
    })
}

/// The refusal of a change needing `--drain`, with a VNI refusal at once (a drain would not
/// get past it).
fn needs_drain(
    args: &ReconfigureArgs,
    config: &crate::config::Config,
    cluster: &ClusterRead,
    node_name: &NodeName,
    need: &Need<'_>,
) -> UsageError {
    let drain = UsageError::new(
        format!(
            "this change needs the Calico HNS network made again ({}), which disconnects every pod on node {node_name}",
            need.changes.join("; ")
        ),
        "pass --drain to cordon and drain the node around it (--dry-run shows the pods it would evict)",
    )
    .of_kind(crate::error::Kind::NeedsDrain);
    let vni = cluster
        .facts()
        .and_then(|facts| vni_refusal(args, config, facts, need));
    match vni {
        Some(v) => UsageError {
            message: format!("{}; and {}", v.message, drain.message),
            hint: Some(format!(
                "{}; then {}",
                v.hint.unwrap_or_default(),
                drain.hint.unwrap_or_default()
            )),
            kind: v.kind,
        },
        None => drain,
    }
}

/// The cluster a drain needs, or why it cannot be had.
fn connected(
    cluster: ClusterRead,
    node_name: &NodeName,
) -> anyhow::Result<(
    Box<crate::cluster::Cluster>,
    Box<crate::cluster::facts::ClusterFacts>,
)> {
    match cluster {
        ClusterRead::Read(c, facts) => Ok((c, facts)),
        ClusterRead::Failed(e) => Err(anyhow::Error::new(e).context(format!(
            "draining node {node_name} needs the cluster, which cannot be read"
        ))),
        ClusterRead::Skipped(why) => Err(UsageError::new(
            format!("draining node {node_name} needs the cluster: {why}"),
            "pass the admin kubeconfig with --kubeconfig, or set KUBECONFIG",
        )
        .of_kind(crate::error::Kind::NoAdminKubeconfig)
        .into()),
    }
}

/// The refusal of a new VNI the cluster's Felix does not use, if it is one.
fn vni_refusal(
    args: &ReconfigureArgs,
    config: &crate::config::Config,
    facts: &crate::cluster::facts::ClusterFacts,
    need: &Need<'_>,
) -> Option<UsageError> {
    if config.backend == Backend::Vxlan && need.recreate && !args.allow_vni_mismatch {
        let said = crate::health::judge::vni_cluster(need.vni, &facts.felix)?.said;
        return Some(
            UsageError::new(
                said.message,
                format!(
                    "{}; or pass --allow-vni-mismatch if that is what you mean",
                    said.remedy.unwrap_or_default()
                ),
            )
            .of_kind(crate::error::Kind::VniMismatch),
        );
    }
    None
}

/// The drain step and its pods; refused (nothing changed) when a pod cannot be evicted.
fn drain_action(
    args: &ReconfigureArgs,
    c: &crate::cluster::Cluster,
    node_name: &NodeName,
) -> anyhow::Result<(Action, Pods)> {
    let options = args.evict.options(args.delete_emptydir_data);
    let s = drain::select(&drain::pods_on(c, node_name)?);
    if let Some(refused) = s.refusal(node_name, &options) {
        let hint = refused.hint();
        return Err(
            UsageError::new(format!("{refused}; nothing was changed"), hint)
                .of_kind(crate::error::Kind::DrainRefused)
                .into(),
        );
    }
    let show = |v: &[drain::PodRef]| v.iter().map(ToString::to_string).collect::<Vec<_>>();
    let mut evict = show(&s.evict);
    evict.extend(show(&s.unmanaged));
    let action = Action::Drain {
        node: node_name.clone(),
        evict,
        skipped: show(&s.skipped),
        options,
    };
    let pods = Pods {
        evict: s.evict,
        unmanaged: s.unmanaged,
        skipped: s.skipped,
    };
    Ok((action, pods))
}

/// The error of a failed reconfigure, with what was undone and what a rerun does.
fn failed(f: Failed, node_name: &NodeName) -> anyhow::Error {
    let (e, measured) = (f.error, f.left);
    let after = if e.past_no_return {
        format!(
            "it failed after the Calico network was deleted, so nothing was undone; run 'calicoctl-win reconfigure' again with the same config to finish (node {node_name} stays cordoned until then)"
        )
    } else {
        // Evictions cannot be undone: a drain that stopped says what it evicted.
        let evicted = e
            .source
            .downcast_ref::<drain::DrainError>()
            .and_then(|d| match d {
                drain::DrainError::Timeout { evicted, .. }
                | drain::DrainError::Stopped { evicted, .. } => Some(evicted.len()),
                _ => None,
            });
        match &e.rollback_failures {
            Some(f) if f.is_empty() => {
                let node = match evicted {
                    Some(0) => "the node is uncordoned again; no pod was evicted".to_owned(),
                    Some(n) => format!(
                        "the node is uncordoned again; the {n} evicted pod(s) are not brought back (their controllers start them elsewhere)"
                    ),
                    None => {
                        "everything done before it was undone and the node is uncordoned".to_owned()
                    }
                };
                format!("{node}; {}", measured.unwrap_or_default())
            }
            Some(f) => format!(
                "undoing the steps done before it failed partly: {}; the journal is kept and the next reconfigure continues from it",
                f.join("; ")
            ),
            None => String::new(),
        }
    };
    // What changed after the run made it (a firewall rule beside an administrator's) stays.
    let kept: String = e.rollback_kept.iter().map(|k| format!("; {k}")).collect();
    anyhow::Error::new(e).context(format!("reconfigure failed; {after}{kept}"))
}

/// Install's checks a changed config can fail, before any change (exit 3): a node name
/// kubelet does not use (NODENAME would name another Node), and a known breakage of the
/// installed release with the new settings (windows-bgp where its confd writes no BGP config).
fn host_checks(
    ctx: &mut Context,
    host: &dyn crate::host::Host,
    config: &crate::config::Config,
    rec: &record::InstallRecord,
    allowed: &[String],
) -> anyhow::Result<()> {
    use crate::checks::{Verdict, host as checks};
    super::common::check_known_issue_ids(allowed)?;
    crate::installed::protection::refuse_reparse_points(host, config)?;
    let snapshot = checks::snapshot(host);
    let version = rec.calico_version.as_deref();
    let all = [
        checks::node_name(&snapshot, config),
        checks::known_issues(&snapshot, config, version, allowed),
    ];
    for c in all.iter().filter(|c| c.verdict == Verdict::Warn) {
        ctx.printer.warn(&format!("{}: {}", c.id, c.message));
    }
    let failed: Vec<_> = all
        .into_iter()
        .filter(|c| c.verdict == Verdict::Fail)
        .collect();
    if failed.is_empty() {
        return Ok(());
    }
    ctx.printer.text(crate::checks::table(&failed).trim_end());
    let ids: Vec<&'static str> = failed.iter().map(|c| c.id).collect();
    ctx.printer.json(&ChecksBlocked {
        checks: &failed,
        blocking: &ids,
        changed: false,
    });
    Err(crate::checks::Blocked { ids }.into())
}
