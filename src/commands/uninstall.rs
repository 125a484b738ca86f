//! `uninstall`: removes what install created, read from its install record.

use super::change::{Change, Changing};
use super::common::DEFAULT_ROOT;
use crate::apply;
use crate::apply::Options;
use crate::apply::journal::Journal;
use crate::cli::UninstallArgs;
use crate::context::Context;
use crate::installed::legacy::{legacy_error, legacy_services};
use crate::installed::record;
use crate::k8s_name::NodeName;
use crate::layout::InstallRoot;
use crate::plan::uninstall;
use anyhow::Context as _;

/// Uninstall's own keys of its document (`change::Changing`).
#[derive(serde::Serialize)]
pub(crate) struct Uninstall<'a> {
    pub install_root: &'a str,
    /// Absent when nothing is installed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub purge: Option<bool>,
    /// The renewal grant's objects this run leaves (no admin kubeconfig, one that may not,
    /// `--skip-cluster`): their only record once the journal or record is gone.
    pub cluster_left: Vec<ClusterLeft>,
}

/// A cluster object uninstall leaves, and the command that deletes it.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub(crate) struct ClusterLeft {
    pub kind: &'static str,
    pub namespace: String,
    pub name: String,
    pub delete: String,
}

impl ClusterLeft {
    fn of_made(m: &crate::cluster::making::Making) -> Vec<Self> {
        (m.objects().into_iter())
            .map(|(kind, delete)| Self {
                kind,
                namespace: m.namespace.clone(),
                name: m.name.clone(),
                delete,
            })
            .collect()
    }

    fn of_grant(g: &crate::cluster::renewal::Grant) -> Vec<Self> {
        let m = crate::cluster::making::Making {
            role: true,
            binding: true,
            ..crate::cluster::making::Making::of(g)
        };
        Self::of_made(&m)
    }
}

/// Why the cluster is not contacted: `--skip-cluster`, or no admin kubeconfig.
const SKIPPED: &str = "--skip-cluster: the cluster is not contacted";
const NO_KUBECONFIG: &str = "there is no admin kubeconfig";

pub fn run(args: &UninstallArgs, ctx: &mut Context) -> anyhow::Result<()> {
    let host = ctx.open_host_to_change("uninstall")?;
    let root = install_root(args, ctx, host.as_ref());
    let dry_run = ctx.options.dry_run;
    let mut left = undo_interrupted_install(ctx, host.as_ref(), &root, args)?;
    let journal_path = root.uninstall_journal();
    let mut change = Change::begin(ctx, host.as_ref(), "uninstall", &root, journal_path)?;
    let Some(rec) = installed(ctx, host.as_ref(), &root, change.journal.as_ref())? else {
        return nothing_installed(ctx, host.as_ref(), &root, left);
    };
    let grant = rec.renewal.clone().filter(|_| args.purge);
    let ran_as = ran_as(host.as_ref(), &root);
    let ours = Ours {
        id: rec.install_id.as_deref(),
        hash: rec.config_hash.as_ref(),
    };
    let at = (ran_as, ours);
    let cluster = cluster_part(ctx, grant.as_ref(), at, args.skip_cluster);
    left.extend(cluster.left.iter().cloned());
    let actions = uninstall::plan(
        host.as_ref(),
        &rec,
        &uninstall::Options {
            purge: args.purge,
            remove_logs: args.remove_logs,
            cluster_steps: cluster.steps.clone(),
        },
    )?;
    say_if_running_from_root(ctx, host.as_ref(), &rec);
    let kept_rules = uninstall::changed_rules(host.as_ref(), &rec, args.purge)?;
    for w in &kept_rules {
        ctx.printer.warn(w);
    }
    ctx.printer.text(&format!(
        "Uninstall Calico {} from {root}{}",
        rec.calico_version.as_deref().unwrap_or("(version unknown)"),
        if args.purge { ", purging" } else { "" }
    ));
    let own = Uninstall {
        install_root: root.as_str(),
        purge: Some(args.purge),
        cluster_left: left,
    };
    let mut doc = Changing::plan(dry_run, own, &actions);
    let mut warnings = cluster.warnings;
    warnings.extend(kept_rules);
    if dry_run {
        super::change::print_steps(ctx, "Plan:", &actions);
        if !warnings.is_empty() {
            doc.warnings = Some(warnings);
        }
        if !args.purge {
            ctx.printer.text(
                "HNS networks, the registry key and the firewall rule stay (--purge removes them).",
            );
        }
        ctx.printer.note("--dry-run: nothing was changed");
        ctx.printer.json(&doc);
        return Ok(());
    }
    let cache_dir = root.cache();
    super::install::remove_stale_staging(host.as_ref(), &cache_dir)?;
    warnings.extend(execute(
        ctx,
        &mut change,
        args,
        rec,
        &actions,
        cluster.cluster.as_ref(),
    )?);
    if !args.purge {
        ctx.printer.text(
            "Uninstalled. HNS networks Calico created stay until the node is drained; 'uninstall --purge' removes them.",
        );
    } else {
        ctx.printer.text("Uninstalled and purged.");
    }
    ctx.printer.json(&doc.ran(warnings));
    Ok(())
}

/// Where the install record is: `--install-root`, else the config's (a broken config only
/// warns: the default root), else the root install recorded in Calico's registry key.
fn install_root(
    args: &UninstallArgs,
    ctx: &mut Context,
    host: &dyn crate::host::Host,
) -> InstallRoot {
    if let Some(r) = &args.install_root {
        return InstallRoot::new(r);
    }
    let configured = match ctx.load_config() {
        Ok(l) => l.config.root(),
        Err(e) => {
            ctx.printer.warn(&format!(
                "the config cannot be read ({e}); looking for the install record where install recorded its root, else in {DEFAULT_ROOT} (--install-root DIR for another)"
            ));
            InstallRoot::new(DEFAULT_ROOT)
        }
    };
    let has_install = |root: &InstallRoot| {
        matches!(record::read(host, root), Ok(Some(_)))
            || host
                .file_access(&root.uninstall_journal())
                .is_ok_and(|a| a.is_some())
    };
    if has_install(&configured) {
        return configured;
    }
    let (key, value) = (crate::layout::CALICO_KEY, crate::layout::INSTALL_ROOT_VALUE);
    let recorded = match host.reg_get(key, value) {
        Ok(Some(crate::host::RegValue::Sz(root))) if !root.is_empty() => {
            Some(InstallRoot::new(&root))
        }
        _ => None,
    };
    match recorded {
        Some(recorded)
            if !recorded.as_str().eq_ignore_ascii_case(configured.as_str())
                && has_install(&recorded) =>
        {
            ctx.printer.note(&format!(
                "no install in {configured}; install recorded its root {recorded} in {key}\\{value}: uninstalling that"
            ));
            recorded
        }
        _ => configured,
    }
}

/// The install to remove: its record, or the one an unfinished uninstall's journal kept.
fn installed(
    ctx: &mut Context,
    host: &dyn crate::host::Host,
    root: &InstallRoot,
    journal: Option<&Journal>,
) -> anyhow::Result<Option<record::InstallRecord>> {
    Ok(match (record::read(host, root)?, journal) {
        (Some(r), _) => Some(r),
        (None, Some(j)) => {
            ctx.printer.note(&format!(
                "an uninstall started at {} did not finish: this run finishes it",
                crate::duration::time_text(j.started)
            ));
            j.record.clone()
        }
        (None, None) => None,
    })
}

/// No install record: a legacy install is refused (not ours), a vacant root a killed run left
/// is removed, else nothing to do.
fn nothing_installed(
    ctx: &mut Context,
    host: &dyn crate::host::Host,
    root: &InstallRoot,
    cluster_left: Vec<ClusterLeft>,
) -> anyhow::Result<()> {
    let dry_run = ctx.options.dry_run;
    let legacy = legacy_services(host)?;
    if !legacy.is_empty() {
        let e = legacy_error(&legacy);
        return Err(crate::error::UsageError::new(
            format!(
                "{}, which calicoctl-win did not install and does not remove",
                e.message
            ),
            "remove it with its own uninstall-calico.ps1, or replace it with 'calicoctl-win install --migrate-legacy'",
        )
        .into());
    }
    let vacant = host.is_vacant(root.as_str()).unwrap_or(false);
    if vacant && !dry_run {
        host.remove_vacant(root.as_str())?;
        ctx.printer.text(&format!(
            "Nothing to uninstall: there is no install record in {root}; removed that directory, which held only what a killed run left"
        ));
    } else {
        ctx.printer.text(&format!(
            "Nothing to uninstall: there is no install record in {root}"
        ));
    }
    let own = Uninstall {
        install_root: root.as_str(),
        purge: None,
        cluster_left,
    };
    ctx.printer.json(&Changing::plan(dry_run, own, &[]));
    Ok(())
}

/// The cluster's part of uninstall, decided before any change. When the cluster answers, the
/// renewal grant (`--purge`), the node's annotations and `CalicoWindowsReady` (False,
/// `NotInstalled`: `fleet status` once showed an uninstalled node healthy) are journaled
/// steps of the plan, finished by a rerun. When it does not (no admin kubeconfig, the cluster
/// gone), they are said with the commands that do them, and the node is uninstalled still.
struct ClusterPart {
    cluster: Option<crate::cluster::Cluster>,
    steps: Vec<apply::Action>,
    warnings: Vec<String>,
    /// The grant's objects left, when the cluster is not reached.
    left: Vec<ClusterLeft>,
}

fn cluster_part(
    ctx: &mut Context,
    grant: Option<&crate::cluster::renewal::Grant>,
    (ran_as, ours): (Option<NodeName>, Ours<'_>),
    skip_cluster: bool,
) -> ClusterPart {
    let node = node_to_forget(ctx, ran_as);
    let connected = match skip_cluster {
        true => Err(SKIPPED.to_owned()),
        false => ctx.connect_cluster().map_err(|e| e.to_string()),
    };
    let reached = match connected {
        Ok(Some(c)) => match &node {
            // One read: the cluster answers, and whether the node is there.
            Some(n) => crate::cluster::node::exists(&c, n)
                .map_err(|e| e.to_string())
                .and_then(|there| refused_right(&c, grant, n, there).map(|()| (c, there))),
            None => Ok((c, false)),
        },
        Ok(None) => Err(NO_KUBECONFIG.to_owned()),
        Err(e) => Err(e),
    };
    let mut part = ClusterPart {
        cluster: None,
        steps: Vec::new(),
        warnings: Vec::new(),
        left: Vec::new(),
    };
    match reached {
        Ok((c, node_there)) => {
            reached_steps(
                ctx,
                &mut part,
                (&c, node_there),
                (node.as_ref(), grant, ours),
            );
            part.cluster = Some(c);
        }
        Err(why) => {
            let no_kubeconfig = why == NO_KUBECONFIG;
            if let Some(g) = grant {
                let w = format!(
                    "the Role and RoleBinding {} that let this node renew calico-node's token stay ({why}): '{}' removes them",
                    g.name,
                    g.delete_command()
                );
                ctx.printer.warn(&w);
                part.warnings.push(w);
                part.left = ClusterLeft::of_grant(g);
            }
            let keeps = |n: &NodeName, why: &str| {
                format!(
                    "{n} keeps its calicoctl-win annotations and CalicoWindowsReady condition ({why}): 'kubectl annotate node {n} calicoctl-win/version- calicoctl-win/calico-version- calicoctl-win/config-hash- calicoctl-win/install-id- calicoctl-win/finding-codes-' removes the annotations (its CalicoWindowsReady condition keeps its last value)"
                )
            };
            match &node {
                // Without a kubeconfig (a node-only uninstall): said, not warned.
                Some(n) if no_kubeconfig => ctx
                    .printer
                    .text(&format!("Node {}.", keeps(n, "no kubeconfig"))),
                Some(n) => {
                    let w = format!("node {}", keeps(n, &why));
                    ctx.printer.warn(&w);
                    part.warnings.push(w);
                }
                None => part.warnings.push(unnamed_node(ctx)),
            }
        }
    }
    part
}

/// The cluster's steps: the grant removed and the node forgotten, unless another install's.
fn reached_steps(
    ctx: &mut Context,
    part: &mut ClusterPart,
    (c, node_there): (&crate::cluster::Cluster, bool),
    (node, grant, ours): (
        Option<&NodeName>,
        Option<&crate::cluster::renewal::Grant>,
        Ours<'_>,
    ),
) {
    use crate::cluster::node::Left;
    // A node re-provisioned under this name keeps its annotations, condition and grant (the
    // grant, adopted by the next install on that name, `renewal::ensure`, is told by the
    // Node's install id too).
    let foreign = node
        .filter(|_| node_there)
        .and_then(|n| another_install(c, n, ours));
    part.steps
        .extend(
            grant
                .filter(|_| foreign.is_none())
                .map(|g| apply::Action::RemoveRenewalGrant {
                    namespace: g.namespace.clone(),
                    name: g.name.clone(),
                    uids: g.uids.clone(),
                    uids_kept: g.uids_kept,
                }),
        );
    match node {
        Some(n) if node_there => match foreign {
            None => part.steps.push(apply::Action::ForgetNode {
                node: n.clone(),
                left: Left::Uninstalled,
            }),
            Some(w) => {
                ctx.printer.warn(&w);
                part.warnings.push(w);
            }
        },
        Some(n) => ctx.printer.note(&format!(
            "node {n} is not in the cluster: it has nothing to forget"
        )),
        None => part.warnings.push(unnamed_node(ctx)),
    }
}

/// Why node `n` is not this install's to forget: its install-id annotation is another's than
/// `ours`; without ids on both (older versions), its config-hash annotation is another
/// config's (a record without a hash takes the node as named). A node with neither is ours.
fn another_install(c: &crate::cluster::Cluster, n: &NodeName, ours: Ours<'_>) -> Option<String> {
    use crate::cluster::node::{ANNOTATION_CONFIG_HASH, ANNOTATION_INSTALL_ID};
    let mut theirs = crate::cluster::node::annotations(c, n).ok()?;
    let ((what, key), theirs, ours) = match (theirs.remove(ANNOTATION_INSTALL_ID), ours.id) {
        (Some(t), Some(o)) => (("id", ANNOTATION_INSTALL_ID), t, o),
        // This (older) record has no id, and only one that keeps an id writes it: another's.
        (Some(t), None) => (("id", ANNOTATION_INSTALL_ID), t, "none"),
        _ => (
            ("config", ANNOTATION_CONFIG_HASH),
            theirs.remove(ANNOTATION_CONFIG_HASH)?,
            ours.hash?.as_str(),
        ),
    };
    (theirs != ours).then(|| {
        format!(
            "node {n} carries another install's {what} ({key} {theirs}, this install's {ours}): uninstall leaves its annotations, its condition and its token-renewal grant as they are"
        )
    })
}

/// What tells this install's Node: the record's install id and config hash.
#[derive(Clone, Copy)]
struct Ours<'a> {
    id: Option<&'a str>,
    hash: Option<&'a crate::config::ConfigHash>,
}

/// The node to forget: the one this host's Calico ran as (`ran_as`, said when the config
/// names another), else the config's.
fn node_to_forget(ctx: &mut Context, ran_as: Option<NodeName>) -> Option<NodeName> {
    let configured = ctx.load_config().ok().map(|l| l.config.node.name.clone());
    match (ran_as, configured) {
        (Some(ran), Some(named)) if ran != named => {
            ctx.printer.note(&format!(
                "the config names node {named}, but this host's Calico ran as node {ran} (calico-node's nodename file): uninstall forgets {ran} and leaves {named} as it is"
            ));
            Some(ran)
        }
        (Some(ran), _) => Some(ran),
        (None, named) => named,
    }
}

/// The node this host's Calico ran as: a valid name in calico-node's `nodename` file
/// (`CALICO_NODENAME_FILE`, projectcalico/calico node/pkg/lifecycle/startup/startup.go,
/// `utils.WriteNodeConfig`), read with the host's cap.
fn ran_as(host: &dyn crate::host::Host, root: &InstallRoot) -> Option<NodeName> {
    let bytes = host.read_file(&root.path("nodename")).ok()??;
    NodeName::parse(std::str::from_utf8(&bytes).ok()?.trim()).ok()
}

/// Whether this kubeconfig may take the cluster's steps, asked first: one that may not (like
/// kubelet's `C:\k\config`) would stop every rerun there, so it counts as no answer. `Err`
/// names the right missing.
fn refused_right(
    c: &crate::cluster::Cluster,
    grant: Option<&crate::cluster::renewal::Grant>,
    node: &NodeName,
    node_there: bool,
) -> Result<(), String> {
    use crate::cluster::facts::{Permission, can_i};
    let right =
        |verb: &str, group: &str, resource: &str, name: &str, ns: Option<&str>| Permission {
            verb: verb.into(),
            group: group.into(),
            resource: resource.into(),
            name: Some(name.into()),
            namespace: ns.map(str::to_owned),
            allowed: false,
        };
    let rbac = "rbac.authorization.k8s.io";
    let mut wanted = Vec::new();
    if let Some(g) = grant {
        for kind in ["rolebindings", "roles"] {
            // Read first: only a grant that is calicoctl-win's is deleted.
            wanted.push(right("get", rbac, kind, &g.name, Some(&g.namespace)));
            wanted.push(right("delete", rbac, kind, &g.name, Some(&g.namespace)));
        }
    }
    if node_there {
        for resource in ["nodes", "nodes/status"] {
            wanted.push(right("patch", "", resource, node.as_str(), None));
        }
    }
    for p in &wanted {
        if !can_i(c, p).map_err(|e| e.to_string())? {
            return Err(format!(
                "the kubeconfig may not {} {} {}",
                p.verb,
                p.resource,
                p.name.as_deref().unwrap_or_default()
            ));
        }
    }
    Ok(())
}

fn unnamed_node(ctx: &mut Context) -> String {
    let w = "the node's name cannot be read from the config: its calicoctl-win annotations and CalicoWindowsReady condition stay".to_owned();
    ctx.printer.warn(&w);
    w
}

/// Runs the plan, journaled and not rolled back (a rerun finishes it); the warnings.
fn execute(
    ctx: &mut Context,
    change: &mut Change,
    args: &UninstallArgs,
    rec: record::InstallRecord,
    actions: &[apply::Action],
    cluster: Option<&crate::cluster::Cluster>,
) -> anyhow::Result<Vec<String>> {
    let journal = change.journal.take();
    let opts = Options {
        record: Some(rec),
        ..change.options(false, args.service_timeout, journal, cluster)
    };
    change.run(ctx, actions, opts)?.map_err(|failed| {
        let e = failed.error;
        let done = e.index - 1;
        anyhow::Error::new(e).context(format!(
            "uninstall stopped after {done} step(s); the install record is kept, so running uninstall again finishes it"
        ))
    })
}

/// A cut-off install's journal is seen to first, so that nothing it wrote outlives the
/// uninstall; another command's journal is refused (that command finishes it).
fn undo_interrupted_install(
    ctx: &mut Context,
    host: &dyn crate::host::Host,
    root: &InstallRoot,
    args: &UninstallArgs,
) -> anyhow::Result<Vec<ClusterLeft>> {
    let timeout = args.service_timeout;
    let path = root.journal();
    let Some(journal) = Journal::load(host, &path)? else {
        return Ok(Vec::new());
    };
    if journal.command != "install" {
        return Err(super::change::unfinished(
            &journal.command,
            &path,
            ", then uninstall",
        ));
    }
    let started = crate::duration::time_text(journal.started);
    // Once the run wrote its record, that names all it owns: only the journal goes.
    let record_path = root.record();
    let covered = journal.wrote(&record_path);
    let what = if covered {
        "its record covers what it did, so its journal is dropped"
    } else {
        "its steps are undone"
    };
    if ctx.options.dry_run {
        ctx.printer.note(&format!(
            "an install started at {started} did not finish: uninstall would first see to it ({what})"
        ));
        // The real run leaves all it made of the grant when it does not reach the cluster.
        let made = journal.grant.as_ref().filter(|m| m.makes_any() && !covered);
        let unreached =
            |ctx: &mut Context| args.skip_cluster || matches!(ctx.connect_cluster(), Ok(None));
        return Ok(match made {
            Some(m) if unreached(ctx) => ClusterLeft::of_made(m),
            _ => Vec::new(),
        });
    }
    ctx.printer.note(&format!(
        "an install started at {started} did not finish: {what} first"
    ));
    if covered {
        apply::undo::discard_journal(host, &journal, &path)?;
        return Ok(Vec::new());
    }
    let mut left = Vec::new();
    if let Some(m) = journal.grant.as_ref().filter(|m| m.makes_any()) {
        let stays = undo_interrupted_grant(ctx, m, args.skip_cluster).with_context(|| {
            format!("cannot undo the interrupted install; its journal {path} is kept, so running uninstall again retries")
        })?;
        if stays {
            left = ClusterLeft::of_made(m);
        }
    }
    let rolled = apply::undo::undo_journal_in(host, &journal, &path, timeout, None);
    // What changed since (a rule beside an administrator's) stays, said, not failing uninstall.
    for w in &rolled.kept {
        ctx.printer.warn(w);
    }
    let failures = rolled.failures;
    if !failures.is_empty() {
        anyhow::bail!(
            "cannot undo the interrupted install ({}); its journal {path} is kept, so running uninstall again retries",
            failures.join("; ")
        );
    }
    Ok(left)
}

/// An interrupted install's renewal grant deleted, as its rollback would; an unreachable or
/// refusing cluster is an error (the journal kept for a retry), no admin kubeconfig or
/// `--skip-cluster` a warning, each naming the command that deletes it. Whether it stays.
fn undo_interrupted_grant(
    ctx: &mut Context,
    m: &crate::cluster::making::Making,
    skip_cluster: bool,
) -> anyhow::Result<bool> {
    let stays = |ctx: &mut Context, why: &dyn std::fmt::Display| {
        ctx.printer.warn(&format!(
            "what the interrupted install made of the Role and RoleBinding {} stays in the cluster ({why}); '{}' removes it",
            m.name,
            m.delete_command()
        ));
        Ok(true)
    };
    if skip_cluster {
        return stays(ctx, &SKIPPED);
    }
    let removed = match ctx.connect_cluster() {
        Ok(Some(c)) => {
            // Said first: it may wait for a create that got no answer.
            m.wait_note().inspect(|n| ctx.printer.note(n));
            match crate::cluster::making::remove_made(&c, m) {
                // No admin's kubeconfig (kubelet's, a pod's): no rerun changes it, so said.
                Err(
                    e @ crate::cluster::ClusterError::Api {
                        code: 401 | 403, ..
                    },
                ) => return stays(ctx, &e),
                done => done.map_err(|e| e.to_string()),
            }
        }
        // Not held hostage to a cluster it was not given.
        Ok(None) => return stays(ctx, &NO_KUBECONFIG),
        Err(e) => Err(e.to_string()),
    };
    match removed {
        Ok(left) => {
            left.iter().for_each(|l| ctx.printer.warn(l));
            Ok(false)
        }
        Err(why) => anyhow::bail!(
            "what it made of the Role and RoleBinding {} stays ({why}); '{}' removes it",
            m.name,
            m.delete_command()
        ),
    }
}

/// Windows cannot delete a running program's image: one run from the install root is moved
/// aside and deleted at the next reboot, said first.
fn say_if_running_from_root(
    ctx: &mut Context,
    host: &dyn crate::host::Host,
    rec: &record::InstallRecord,
) {
    if host.kind() != crate::host::HostKind::Windows {
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let exe = exe.display().to_string();
    if rec.files.iter().any(|f| f.path.eq_ignore_ascii_case(&exe)) {
        ctx.printer.note(&format!(
            "{exe} is running this uninstall: Windows keeps a running program's file, so it is moved aside and deleted at the next reboot (with the install root, if empty then)"
        ));
    }
}
