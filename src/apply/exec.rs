//! The executor: the journal on the host records each action with its undo before it runs and
//! marks it done after. On failure install rolls back in reverse; uninstall stops and keeps its
//! record. A run cut off leaves the journal: the next plans again and keeps the old entries.

use super::journal::{Entry, Journal, Undo};
use super::ready::{restore_routes, wait_ready};
use super::undo::{ignore_not_found, prepare_undo, remove_rule, rollback};
use super::{Action, Content, Options};
use crate::cluster::drain::Watch;
use crate::host::{Access, Host};
use crate::k8s_name::NodeName;
use anyhow::Context as _;

/// A failed run.
#[derive(Debug, thiserror::Error)]
#[error("step {index} of {total} failed: {action}")]
pub struct ExecError {
    pub index: usize,
    pub total: usize,
    pub action: String,
    #[source]
    pub source: anyhow::Error,
    /// `Some` when a rollback ran: the undo steps that failed (empty when all went well).
    pub rollback_failures: Option<Vec<String>>,
    /// What the rollback left as it is because it changed after the run made it.
    pub rollback_kept: Box<[String]>,
    /// The run had passed an irreversible step: nothing was rolled back and the journal is
    /// kept, so that running the command again finishes it.
    pub past_no_return: bool,
    /// Where the rollback moved the services' logs, out of a logs directory the run made.
    pub kept_logs: Option<String>,
}

impl ExecError {
    /// A failure at step `index` with nothing rolled back.
    fn plain(index: usize, total: usize, action: String, source: anyhow::Error) -> Self {
        Self {
            index,
            total,
            action,
            source,
            rollback_failures: None,
            rollback_kept: Box::default(),
            past_no_return: false,
            kept_logs: None,
        }
    }
}

/// What a run tells as it goes: a step begins (its number, of how many), or a step's wait
/// says how it goes.
pub enum Progress<'a> {
    Step(usize, usize, &'a Action),
    Said(&'a str),
}

/// What the run says of a stop it does not honour.
const UNSTOPPABLE: &str = "a stop was requested past the point of no return: the run finishes its steps instead of leaving the node half-changed";

/// The stop a step heeds: the run's, or past the point of no return none (said once): stopping
/// there would leave the node half-changed, when finishing is what a rerun would do.
fn step_stop<'a>(
    past_no_return: bool,
    (stop, unstoppable): (&'a crate::duration::Stop, &'a crate::duration::Stop),
    said: &mut bool,
    report: &mut dyn FnMut(Progress<'_>),
) -> &'a crate::duration::Stop {
    if !past_no_return {
        return stop;
    }
    if stop.requested() && !std::mem::replace(said, true) {
        report(Progress::Said(UNSTOPPABLE));
    }
    unstoppable
}

/// A step that cannot be undone: past it, the run is finished rather than rolled back.
fn is_irreversible(action: &Action) -> bool {
    matches!(
        action,
        Action::DeleteNetwork { .. }
            | Action::DeleteEndpoint { .. }
            | Action::EvictPods { .. }
            | Action::RecreateDaemonSetPods { .. }
    )
}

/// Runs the plan; `report` is called before each action and with its waits' lines. A stop
/// before the point of no return fails the step it cuts, as a timeout would, and the run is
/// undone; past it the run finishes.
pub fn execute(
    host: &dyn Host,
    actions: &[Action],
    opts: Options<'_>,
    report: &mut dyn FnMut(Progress<'_>),
) -> Result<Vec<String>, ExecError> {
    let mut warnings = Vec::new();
    let total = actions.len();
    let mut journal = start_journal(host, &opts, total)?;

    let mut past_no_return = journal.entries.iter().any(|e| e.irreversible);
    // Past the point of no return a stop is not honoured (`step_stop`).
    let (unstoppable, mut said) = (crate::duration::Stop::new(), false);
    for (i, action) in actions.iter().enumerate() {
        let stops = (&opts.stop, &unstoppable);
        let stop = step_stop(past_no_return, stops, &mut said, report);
        report(Progress::Step(i + 1, total, action));
        let irreversible = is_irreversible(action);
        let committed_before = past_no_return;
        let step = (|| -> anyhow::Result<()> {
            if stop.requested() {
                anyhow::bail!("stopped before it began (Ctrl-C or a termination signal)");
            }
            let undo = if opts.rollback {
                prepare_undo(host, action, &opts)?
            } else {
                Undo::Nothing
            };
            journal.entries.push(Entry {
                action: action.describe(),
                undo,
                done: false,
                irreversible,
            });
            journal.save(host, &opts.journal_path)?;
            // From here the step may have happened, even if it reports a failure.
            past_no_return |= irreversible;
            let mut watch = Watch {
                stop,
                say: &mut |line| report(Progress::Said(line)),
            };
            let later = &actions[i + 1..];
            run(host, action, later, &opts, &mut warnings, &mut watch)?;
            if let Some(e) = journal.entries.last_mut() {
                e.done = true;
            }
            journal.save(host, &opts.journal_path)
        })();
        if let Err(source) = step {
            // An irreversible step that failed without taking effect still allows a rollback.
            if irreversible && !committed_before && !took_effect(host, action) {
                past_no_return = false;
            }
            let rolled =
                (opts.rollback && !past_no_return).then(|| rollback(host, &journal, &opts));
            let kept_logs = rolled.as_ref().and_then(|r| r.kept_logs.clone());
            let rollback_kept = rolled
                .as_ref()
                .map(|r| r.kept.clone().into())
                .unwrap_or_default();
            return Err(ExecError {
                index: i + 1,
                total,
                action: action.describe(),
                source,
                rollback_failures: rolled.map(|r| r.failures),
                rollback_kept,
                past_no_return: opts.rollback && past_no_return,
                kept_logs,
            });
        }
    }

    // Success: the backups and the journal go.
    clean_up(host, &journal, &opts, total)?;
    Ok(warnings)
}

/// The journal the run writes its steps to: the interrupted run's it continues, or a new one
/// naming the directories its own path creates.
fn start_journal(host: &dyn Host, opts: &Options<'_>, total: usize) -> Result<Journal, ExecError> {
    if let Some(j) = &opts.previous {
        return Ok(j.clone());
    }
    let mut journal = Journal {
        command: opts.command.into(),
        started: opts.now,
        new_dirs: Vec::new(),
        routes_before: opts.routes_before.clone(),
        addresses_before: host.ipv4_addresses().unwrap_or_default(),
        record: opts.record.clone(),
        logs_dir: opts.logs_dir.clone(),
        owned_cache: None,
        grant: None,
        entries: Vec::new(),
    };
    if total > 0 {
        journal.new_dirs = host.missing_parents(&opts.journal_path).map_err(|err| {
            let action = format!("prepare the journal {}", opts.journal_path);
            ExecError::plain(0, total, action, err.into())
        })?;
    }
    Ok(journal)
}

/// After success: the backups the steps made and the journal are removed.
fn clean_up(
    host: &dyn Host,
    journal: &Journal,
    opts: &Options<'_>,
    total: usize,
) -> Result<(), ExecError> {
    let fail = |action, source| ExecError::plain(total, total, action, source);
    for e in &journal.entries {
        if let Undo::RestoreFile { backup, .. } = &e.undo {
            host.remove_file(backup)
                .map_err(|err| fail(format!("remove the backup {backup}"), err.into()))?;
        }
    }
    if total > 0 || opts.previous.is_some() {
        host.remove_file(&opts.journal_path).map_err(|err| {
            fail(
                format!("remove the journal {}", opts.journal_path),
                err.into(),
            )
        })?;
    }
    Ok(())
}

/// Runs one action; `later`, the plan's actions after it.
fn run(
    host: &dyn Host,
    action: &Action,
    later: &[Action],
    opts: &Options<'_>,
    warnings: &mut Vec<String>,
    watch: &mut Watch<'_>,
) -> anyhow::Result<()> {
    match action {
        Action::StopService { name } => host.service_stop(name, opts.stop_timeout)?,
        Action::StartService { name } => host.service_start(name, opts.start_timeout)?,
        Action::DeleteService { name, .. } => ignore_not_found(host.service_delete(name))?,
        Action::CreateService { spec } => host.service_create(spec)?,
        Action::UpdateService { spec, .. } => host.service_update(spec)?,
        Action::WriteFile {
            path,
            content,
            secret,
            ..
        } => write_checked(host, path, content, Access::secret_if(*secret))?,
        Action::RemoveFile { path } => _ = host.remove_file(path)?,
        Action::RestrictFile { path } => {
            let bytes = host
                .read_file(path)?
                .with_context(|| format!("{path} disappeared before its access was restricted"))?;
            host.write_file(path, &bytes, Access::Secret)?;
        }
        Action::SetRegistryValue { key, name, value } => host.reg_set(key, name, value)?,
        Action::DeleteRegistryKey { key } => host.reg_delete_key(key)?,
        Action::DeleteRegistryValue { key, name } => host.reg_delete_value(key, name)?,
        Action::AddFirewallRule { rule } => host.firewall_add(rule)?,
        Action::RemoveFirewallRule { name, made } => {
            warnings.extend(remove_rule(host, name, made.as_ref(), later)?);
        }
        Action::DeleteNetwork { id, .. } => ignore_not_found(host.hns_delete_network(id))?,
        Action::RestoreRoutes { routes, addresses } => {
            warnings.extend(restore_routes(host, routes, addresses)?);
        }
        Action::WaitReady {
            networks,
            vsid,
            routes,
            cni_config,
            timeout,
        } => wait_ready(
            host,
            networks,
            *vsid,
            routes,
            cni_config.as_deref(),
            *timeout,
            opts.now,
        )?,
        Action::RecreateDaemonSetPods { node, options } => {
            warnings.extend(recreate_daemonset_pods(opts, node, options, watch)?);
        }
        Action::DeleteEndpoint {
            id,
            name,
            namespace,
            ..
        } => warnings.extend(delete_endpoint(host, opts, id, name, namespace.as_deref())?),
        Action::RemoveDir { path } => _ = host.remove_empty_dir(path)?,
        Action::ProtectDir { path, .. } => protect_dir(host, path)?,
        Action::RestoreSecurity { path, sddl } => super::undo::restore_security(host, path, sddl)?,
        Action::RemoveRenewalGrant {
            namespace,
            name,
            uids,
            uids_kept,
        } => warnings.extend(
            opts.cluster()?
                .remove_grant(namespace, name, (uids, *uids_kept))?,
        ),
        // The rest change or wait for the cluster.
        _ => cluster_step(action, opts, watch)?,
    }
    Ok(())
}

/// A step that changes or waits for the cluster, not the host.
fn cluster_step(action: &Action, opts: &Options<'_>, watch: &mut Watch<'_>) -> anyhow::Result<()> {
    let c = opts.cluster()?;
    match action {
        Action::Cordon { node } => c.set_cordoned(node, true),
        Action::Uncordon { node } => c.set_cordoned(node, false),
        Action::PatchInstallation { name, patch, .. } => c.patch_installation(name, patch),
        Action::SetNodeLabel { node, value } => c.set_label(node, value.as_deref()),
        Action::WaitOperatorPod {
            node,
            want,
            timeout,
        } => c.wait_operator_pod(node, *want, *timeout),
        Action::ClearNetworkUnavailable { node } => c.clear_network_unavailable(node),
        Action::MarkCordoned { node, on } => c.mark_cordoned(node, *on),
        Action::WaitOperatorDaemonSet { node, timeout } => {
            c.wait_operator_daemonset(node, *timeout)
        }
        Action::ForgetNode { node, left } => c.forget_node(node, *left),
        Action::EvictPods {
            node,
            pods,
            options,
        } => c.evict(node, pods, options, watch),
        Action::Drain { node, options, .. } => c.drain(node, options, watch),
        Action::WaitNodeReady { node, timeout } => c.wait_ready(node, *timeout, watch),
        other => anyhow::bail!("{} is not a step in the cluster", other.describe()),
    }
}

/// Gives `path` the protected access list. A junction on the way is refused here too: one
/// made after the checks would take the access list, and later the files, elsewhere.
fn protect_dir(host: &dyn Host, path: &str) -> anyhow::Result<()> {
    refuse_link_on_the_way(host, path, &format!("protect {path}"))?;
    host.create_dir(path)?;
    host.set_security(path, crate::host::acl::PROTECTED_DIR)?;
    Ok(())
}

/// Writes a file, the way to it checked at the write, not only by the checks before the plan:
/// a junction made since would send the file, run as SYSTEM, wherever its maker chose.
fn write_checked(
    host: &dyn Host,
    path: &str,
    content: &super::Content,
    access: Access,
) -> anyhow::Result<()> {
    let dir = path.rsplit_once('\\').map_or(path, |(d, _)| d);
    refuse_link_on_the_way(host, dir, &format!("write {path}"))?;
    write_content(host, path, content, access)
}

/// Deletes an HNS endpoint after a new look (`Options::recheck`) finds it still at fault,
/// taking it out of the namespace it is in first; a warning when it is kept.
fn delete_endpoint(
    host: &dyn Host,
    opts: &Options<'_>,
    id: &str,
    name: &str,
    namespace: Option<&str>,
) -> anyhow::Result<Option<String>> {
    if let Some(why) = opts.recheck.map(|check| check(id)).transpose()?.flatten() {
        return Ok(Some(format!("kept HNS endpoint {name} ({id}): {why}")));
    }
    if let Some(ns) = namespace {
        ignore_not_found(host.hns_remove_namespace_endpoint(ns, id))?;
    }
    ignore_not_found(host.hns_delete_endpoint(id))?;
    Ok(None)
}

/// The node's DaemonSet pods with a pod network evicted; a line saying which.
fn recreate_daemonset_pods(
    opts: &Options<'_>,
    node: &NodeName,
    options: &crate::cluster::drain::DrainOptions,
    watch: &mut Watch<'_>,
) -> anyhow::Result<Option<String>> {
    let pods = opts
        .cluster()?
        .recreate_daemonset_pods(node, options, watch)?;
    Ok((!pods.is_empty()).then(|| {
        format!(
            "evicted DaemonSet pod(s) {} so that they are made again on the new network",
            pods.join(", ")
        )
    }))
}

/// Refuses `what` when a directory on the way to `dir` (itself included) is a junction or
/// another reparse point; one whose kind cannot be read counts as one.
fn refuse_link_on_the_way(host: &dyn Host, dir: &str, what: &str) -> anyhow::Result<()> {
    match crate::installed::protection::link_on_the_way(host, dir) {
        None => Ok(()),
        Some(link) => Err(crate::host::HostError::Refused {
            what: what.to_owned(),
            reason: format!("{link} is a junction or another reparse point"),
        }
        .into()),
    }
}

/// Whether a failed irreversible action changed the host anyway; when that cannot be told,
/// it counts as done.
fn took_effect(host: &dyn Host, action: &Action) -> bool {
    match action {
        Action::DeleteNetwork { id, .. } => host.hns_networks().map_or(true, |nets| {
            !nets.iter().any(|n| n.id.eq_ignore_ascii_case(id))
        }),
        _ => true,
    }
}

/// Puts a file's contents at `path`, always anew (a temporary renamed over it): the plan also
/// writes files of the right bytes whose owner or access list is someone else's.
fn write_content(
    host: &dyn Host,
    path: &str,
    content: &Content,
    access: Access,
) -> anyhow::Result<()> {
    match content {
        Content::Bytes(b) => host.replace_file(path, b, access)?,
        Content::Local(p) => host.copy_in(p, path)?,
        Content::OnNode(p) => anyhow::ensure!(
            host.copy_file(p, path, access)?,
            "{p} disappeared before it was copied to {path}"
        ),
        Content::Pending => anyhow::bail!("the contents of {path} are not known yet"),
    }
    Ok(())
}
