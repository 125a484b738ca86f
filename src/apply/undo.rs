//! Undoing a plan: what undoes each action (prepared before it runs: a replaced file is
//! backed up first), the rollback of a failed install in reverse, and a journal left by an
//! interrupted run, undone or discarded by a later command.

use super::journal::{Journal, Undo, missing_keys};
use super::ready::restore_routes;
use super::{Action, Options};
use crate::host::{Access, Host, HostError};
use crate::layout::KEPT_LOGS_DIR;
use anyhow::Context as _;
use std::time::Duration;

/// Finds what undoes `action` in the host's current state; backs up a file about to be replaced.
pub(super) fn prepare_undo(
    host: &dyn Host,
    action: &Action,
    opts: &Options<'_>,
) -> anyhow::Result<Undo> {
    Ok(match action {
        Action::StopService { name } => match host.service_query(name)? {
            Some(s) if s.state != crate::host::ServiceState::Stopped => {
                Undo::StartService { name: name.clone() }
            }
            _ => Undo::Nothing,
        },
        Action::StartService { name } => Undo::StopService { name: name.clone() },
        Action::DeleteService {
            restore: Some(spec),
            ..
        } => Undo::RegisterService { spec: spec.clone() },
        Action::CreateService { spec } => Undo::DeleteService {
            name: spec.name.clone(),
        },
        Action::UpdateService {
            old: Some(spec), ..
        } => Undo::RestoreServiceConfig { spec: spec.clone() },
        Action::WriteFile { path, .. } => undo_write(host, path)?,
        Action::SetRegistryValue { key, name, .. } => Undo::RestoreRegistryValue {
            key: key.clone(),
            name: name.clone(),
            previous: host.reg_get(key, name)?,
            new_keys: missing_keys(host, key)?,
        },
        Action::AddFirewallRule { rule } => Undo::RemoveFirewallRule {
            name: rule.name.clone(),
            rule: Some(rule.clone()),
        },
        // Put back only what the run removes: the rule as made, alone under its name.
        Action::RemoveFirewallRule { name, made } => {
            let now = host.firewall_rules(name)?;
            match now.as_slice() {
                [rule] if crate::host::firewall::ours(&now, made.as_ref()) => {
                    Undo::AddFirewallRule { rule: rule.clone() }
                }
                _ => Undo::Nothing,
            }
        }
        Action::ProtectDir { path, .. } => undo_protection(host, path)?,
        Action::Cordon { .. } | Action::PatchInstallation { .. } | Action::MarkCordoned { .. } => {
            undo_in_cluster(action, opts)?
        }
        // The rest is undone by nothing: removals of what the run made, waits, irreversible
        // steps. Named one by one, so that a new action cannot go without an undo unseen.
        Action::DeleteService { restore: None, .. }
        | Action::UpdateService { old: None, .. }
        | Action::RemoveFile { .. }
        | Action::RestrictFile { .. }
        | Action::Drain { .. }
        | Action::WaitNodeReady { .. }
        | Action::Uncordon { .. }
        | Action::SetNodeLabel { .. }
        | Action::WaitOperatorPod { .. }
        | Action::ClearNetworkUnavailable { .. }
        | Action::WaitOperatorDaemonSet { .. }
        | Action::RemoveRenewalGrant { .. }
        | Action::ForgetNode { .. }
        | Action::EvictPods { .. }
        | Action::RecreateDaemonSetPods { .. }
        | Action::DeleteEndpoint { .. }
        | Action::DeleteRegistryKey { .. }
        | Action::DeleteRegistryValue { .. }
        | Action::DeleteNetwork { .. }
        | Action::RestoreRoutes { .. }
        | Action::WaitReady { .. }
        | Action::RemoveDir { .. }
        | Action::RestoreSecurity { .. } => Undo::Nothing,
    })
}

/// What undoes a step in the cluster: a cordon this plan made (a node cordoned before stays
/// so), an Installation patch that says how to put it back, `migrate`'s cordon mark.
fn undo_in_cluster(action: &Action, opts: &Options<'_>) -> anyhow::Result<Undo> {
    Ok(match action {
        Action::Cordon { node } if !opts.cluster()?.is_cordoned(node)? => {
            Undo::Uncordon { node: node.clone() }
        }
        Action::PatchInstallation {
            name,
            patch: applied,
            restore: Some(patch),
            ..
        } => Undo::PatchInstallation {
            name: name.clone(),
            patch: patch.clone(),
            applied: Some(applied.clone()),
        },
        Action::MarkCordoned { node, on: true } => Undo::UnmarkCordoned { node: node.clone() },
        _ => Undo::Nothing,
    })
}

/// What undoes a file's write: the file as it was (backed up now, streamed: a replaced
/// release binary is never held whole in memory), or no file and the directories made.
fn undo_write(host: &dyn Host, path: &str) -> anyhow::Result<Undo> {
    Ok(match host.file_access(path)? {
        Some(access) => {
            let secret = access == Access::Secret;
            let backup = format!("{path}.calicoctl-win.bak");
            host.copy_file(path, &backup, access)
                .with_context(|| format!("cannot back up {path}"))?;
            Undo::RestoreFile {
                path: path.to_owned(),
                backup,
                secret,
            }
        }
        None => Undo::RemoveFile {
            path: path.to_owned(),
            new_dirs: host.missing_parents(path)?,
        },
    })
}

/// What undoes protecting `path`: its access list put back, or the directories made removed.
fn undo_protection(host: &dyn Host, path: &str) -> anyhow::Result<Undo> {
    Ok(match host.security(path)? {
        Some(sddl) => Undo::RestoreSecurity {
            path: path.to_owned(),
            sddl,
        },
        None => {
            let mut new_dirs = host.missing_parents(path)?;
            new_dirs.push(path.to_owned());
            Undo::RemoveDirs { new_dirs }
        }
    })
}

/// Gives a directory that is still there the access list it had.
pub(super) fn restore_security(host: &dyn Host, path: &str, sddl: &str) -> anyhow::Result<()> {
    if host.dir_exists(path)? {
        host.set_security(path, sddl)?;
    }
    Ok(())
}

/// Undoes what an interrupted run journaled at `journal_path` (in reverse), then removes the
/// journal and the directories it created: what a failed install does, for a later command.
/// Returns what could not be undone (the journal stays then).
pub fn undo_journal(
    host: &dyn Host,
    journal: &Journal,
    journal_path: &str,
    timeout: Duration,
) -> Vec<String> {
    undo_journal_in(host, journal, journal_path, timeout, None).failures
}

/// `undo_journal` of a journal whose steps include the cluster's (`cluster` undoes them).
pub fn undo_journal_in(
    host: &dyn Host,
    journal: &Journal,
    journal_path: &str,
    timeout: Duration,
    cluster: Option<&crate::cluster::Cluster>,
) -> Rolled {
    let opts = Options::for_change(
        "rollback",
        journal_path.to_owned(),
        true,
        timeout,
        None,
        cluster,
    );
    rollback(host, journal, &opts)
}

/// Drops an interrupted run's journal without undoing it, for a command that removes what the
/// run did by other means (uninstall, by the record the run wrote): its backups, the cache it
/// created and the journal itself go.
pub fn discard_journal(
    host: &dyn Host,
    journal: &Journal,
    journal_path: &str,
) -> anyhow::Result<()> {
    for e in &journal.entries {
        if let Undo::RestoreFile { backup, .. } = &e.undo {
            host.remove_file(backup)
                .with_context(|| format!("cannot remove the backup {backup}"))?;
        }
    }
    if let Some(cache) = &journal.owned_cache
        && let Some(failure) = remove_tree(host, cache).into_iter().next()
    {
        anyhow::bail!("cannot {failure}");
    }
    host.remove_file(journal_path)
        .with_context(|| format!("cannot remove the journal {journal_path}"))?;
    Ok(())
}

/// What a rollback did not manage, and where it kept the services' logs.
#[derive(Default)]
pub struct Rolled {
    pub failures: Vec<String>,
    /// What was left as it is because it changed after the run made it (an operator
    /// Installation field an administrator set since, a firewall rule of the run's name
    /// beside it): said, never reverted.
    pub kept: Vec<String>,
    /// The directory the services' logs were moved to, out of a logs directory the run made.
    pub kept_logs: Option<String>,
}

pub(super) fn rollback(host: &dyn Host, journal: &Journal, opts: &Options<'_>) -> Rolled {
    let mut rolled = Rolled::default();
    rolled.failures = undo_all(host, journal, opts, &mut rolled);
    rolled
}

fn undo_all(
    host: &dyn Host,
    journal: &Journal,
    opts: &Options<'_>,
    rolled: &mut Rolled,
) -> Vec<String> {
    let kept = &mut rolled.kept;
    let mut failures = Vec::new();
    for e in journal.entries.iter().rev() {
        if let Err(err) = undo(host, &e.undo, opts, kept) {
            failures.push(format!(
                "undo '{}': {}",
                e.action,
                crate::error::chain(err.as_ref())
            ));
        }
    }
    // The routes a vSwitch took while the run went (CalicoNode may have made it and then
    // failed to restore them, and the network stays): back on the interfaces that hold their
    // addresses now. A route with nowhere to go cannot be put back by a retry either.
    if failures.is_empty()
        && !journal.routes_before.is_empty()
        && let Err(e) = restore_routes(host, &journal.routes_before, &journal.addresses_before)
    {
        failures.push(format!("restore the routes: {e:#}"));
    }
    // What the services wrote while they ran under the install root (nodename, the token
    // refresher's sandbox with calico-node's credentials), as uninstall removes it, when this
    // run made the root: on a node installed before, those files belong to the services that
    // run on after the rollback (removing them cut calico-node's CNI kubeconfig).
    if failures.is_empty() && journal.command == "install" && made_root(journal, &opts.journal_path)
    {
        failures.extend(remove_runtime_files(host, &opts.journal_path));
    }
    if failures.is_empty() {
        // The cache before the journal: a run killed in between leaves the journal to retry.
        if let Some(cache) = &journal.owned_cache {
            failures.extend(remove_tree(host, cache));
        }
        if !failures.is_empty() {
            return failures;
        }
        // The grant an install made, while the journal still names it: a run killed before
        // the delete is confirmed leaves the journal, to the next install or uninstall.
        if let Err(f) = remove_grant(journal, opts, kept) {
            failures.push(f);
            return failures;
        }
        if let Err(err) = host.remove_file(&opts.journal_path) {
            failures.push(format!("remove the journal: {err}"));
        }
        let mut dirs = journal.created_dirs();
        if let Some(logs) = opts.logs_dir.as_ref().or(journal.logs_dir.as_ref()) {
            let lower = logs.to_ascii_lowercase();
            let created = dirs.iter().any(|d| {
                let d = d.to_ascii_lowercase();
                lower == d || lower.starts_with(&format!("{d}\\"))
            });
            if created {
                match keep_service_logs(host, logs, &journal.command) {
                    Ok(logs) => rolled.kept_logs = logs,
                    Err(f) => failures.extend(f),
                }
                dirs.push(logs.clone());
            }
        }
        dirs.sort_by_key(|d| std::cmp::Reverse(d.len()));
        dirs.dedup();
        for d in dirs {
            if let Err(err) = host.remove_empty_dir(&d) {
                failures.push(format!("remove {d}: {err}"));
            }
        }
    }
    failures
}

/// What an install's own rollback undoes in the cluster: the renewal grant the run made,
/// journaled before it. A failure keeps the journal, naming it.
fn remove_grant(
    journal: &Journal,
    opts: &Options<'_>,
    kept: &mut Vec<String>,
) -> Result<(), String> {
    let Some(m) = (journal.grant.as_ref()).filter(|m| opts.command == "install" && m.makes_any())
    else {
        return Ok(());
    };
    match opts.cluster().and_then(|c| c.remove_made_grant(m)) {
        Ok(left) => {
            kept.extend(left);
            Ok(())
        }
        Err(e) => Err(format!(
            "remove what the install made of the Role and RoleBinding {} ({e:#}; '{}' removes it): the journal keeps it, and the next install or uninstall removes it",
            m.name,
            m.delete_command()
        )),
    }
}

/// Whether the journaled run created the install root that holds `journal_path`.
fn made_root(journal: &Journal, journal_path: &str) -> bool {
    journal_path.rsplit_once('\\').is_some_and(|(root, _)| {
        journal
            .created_dirs()
            .iter()
            .any(|d| d.eq_ignore_ascii_case(root))
    })
}

/// Removes what the services write under the install root that holds `journal_path`.
fn remove_runtime_files(host: &dyn Host, journal_path: &str) -> Vec<String> {
    let Some((root, _)) = journal_path.rsplit_once('\\') else {
        return Vec::new();
    };
    let (files, dirs) = crate::layout::InstallRoot::new(root).owned_paths();
    let mut failures: Vec<String> = files
        .iter()
        .filter_map(|f| {
            host.remove_file(f)
                .err()
                .map(|e| format!("remove {f}: {e}"))
        })
        .collect();
    for d in dirs {
        if let Err(e) = host.remove_empty_dir(&d) {
            failures.push(format!("remove {d}: {e}"));
        }
    }
    failures
}

/// Removes `dir` and everything in it; what could not be removed, in words.
fn remove_tree(host: &dyn Host, dir: &str) -> Vec<String> {
    match host.remove_tree(dir) {
        Ok(_) => Vec::new(),
        Err(e) => vec![format!("remove {dir}: {e}")],
    }
}

/// Moves the services' logs out of `dir`, which the undone run made, into a folder under
/// `KEPT_LOGS_DIR`: they say why the run failed. The folder, if any; what could not be moved.
fn keep_service_logs(
    host: &dyn Host,
    dir: &str,
    command: &str,
) -> Result<Option<String>, Vec<String>> {
    let paths = crate::installed::record::service_logs(host, dir)
        .map_err(|e| vec![format!("list the logs in {dir}: {e:#}")])?;
    if paths.is_empty() {
        return Ok(None);
    }
    let stamp = jiff::Timestamp::now()
        .strftime("%Y%m%dT%H%M%SZ")
        .to_string();
    let kept = crate::layout::join(KEPT_LOGS_DIR, &format!("failed-{command}-{stamp}"));
    let mut failures = Vec::new();
    for path in paths {
        let name = path.rsplit('\\').next().unwrap_or(&path);
        let to = crate::layout::join(&kept, name);
        let moved = host
            .copy_file(&path, &to, crate::host::Access::Normal)
            .and_then(|_| host.remove_file(&path));
        if let Err(e) = moved {
            failures.push(format!("move {path} to {to}: {e}"));
        }
    }
    if failures.is_empty() {
        Ok(Some(kept))
    } else {
        Err(failures)
    }
}

fn undo(
    host: &dyn Host,
    undo: &Undo,
    opts: &Options<'_>,
    kept: &mut Vec<String>,
) -> anyhow::Result<()> {
    match undo {
        Undo::Nothing => {}
        Undo::RemoveFile { path, .. } => {
            host.remove_file(path)?;
            remove_withheld(host, path)?;
        }
        Undo::RestoreFile {
            path,
            backup,
            secret,
        } => {
            let access = Access::secret_if(*secret);
            if host.copy_file(backup, path, access)? {
                host.remove_file(backup)?;
            }
            remove_withheld(host, path)?;
        }
        Undo::DeleteService { name } => {
            if host.service_query(name)?.is_some() {
                host.service_stop(name, opts.stop_timeout)?;
                ignore_not_found(host.service_delete(name))?;
            }
        }
        Undo::RegisterService { spec } => match host.service_create(spec) {
            Err(HostError::Exists { .. }) | Ok(()) => {}
            Err(e) => return Err(e.into()),
        },
        Undo::RestoreServiceConfig { spec } => host.service_update(spec)?,
        Undo::StartService { name } => host.service_start(name, opts.start_timeout)?,
        Undo::StopService { name } => {
            if host.service_query(name)?.is_some() {
                host.service_stop(name, opts.stop_timeout)?;
            }
        }
        Undo::RestoreRegistryValue {
            key,
            name,
            previous,
            new_keys,
        } => match (previous, new_keys.first()) {
            (Some(v), _) => host.reg_set(key, name, v)?,
            (None, Some(outermost)) => host.reg_delete_key(outermost)?,
            (None, None) => host.reg_delete_value(key, name)?,
        },
        Undo::RemoveFirewallRule { name, rule } => {
            kept.extend(remove_rule(host, name, rule.as_ref(), &[])?);
        }
        Undo::AddFirewallRule { rule } => match host.firewall_add(rule) {
            Err(HostError::Exists { .. }) | Ok(()) => {}
            Err(e) => return Err(e.into()),
        },
        Undo::Uncordon { node } => opts.cluster()?.set_cordoned(node, false)?,
        Undo::PatchInstallation {
            name,
            patch,
            applied: None,
        } => opts.cluster()?.patch_installation(name, patch)?,
        Undo::PatchInstallation {
            name,
            patch,
            applied: Some(applied),
        } => {
            // Never revert a field an administrator changed after our patch; say it was kept.
            let changed = opts.cluster()?.restore_installation(name, applied, patch)?;
            kept.extend(changed.map(|field| format!("the operator's Installation {name} was left as it is: its {field} changed after this run patched it")));
        }
        Undo::UnmarkCordoned { node } => opts.cluster()?.mark_cordoned(node, false)?,
        // The directories go with the rest the run created, once they are empty.
        Undo::RemoveDirs { .. } => {}
        Undo::RestoreSecurity { path, sddl } => restore_security(host, path, sddl)?,
    }
    Ok(())
}

/// A missing object counts as removed.
pub(super) fn ignore_not_found(r: Result<(), HostError>) -> Result<(), HostError> {
    match r {
        Err(e) if e.is_not_found() => Ok(()),
        other => other,
    }
}

/// The copy of `path` that a CalicoNode this run started may have withheld (the CNI config,
/// until calico-node startup finished): undone with the file, so a rolled-back install leaves
/// none behind.
fn remove_withheld(host: &dyn Host, path: &str) -> Result<(), crate::host::HostError> {
    host.remove_file(&format!("{path}{}", crate::layout::WITHHELD_SUFFIX))?;
    Ok(())
}

/// Removes the rule of `name` while it is `made` alone under it (`firewall::ours`): one an
/// administrator changed since the plan stays, said (a warning, not a failure: an undo would
/// retry for ever); when the plan adds a rule of that name later (`later`), the kept rule fails
/// the step before anything changed, and the run is undone.
pub(super) fn remove_rule(
    host: &dyn Host,
    name: &str,
    made: Option<&crate::host::FirewallRule>,
    later: &[Action],
) -> anyhow::Result<Option<String>> {
    use crate::host::firewall;
    let now = host.firewall_rules(name)?;
    if firewall::ours(&now, made) {
        host.firewall_remove(name)?;
        return Ok(None);
    }
    if now.is_empty() {
        return Ok(None);
    }
    let re_added = later.iter().any(|a| match a {
        Action::AddFirewallRule { rule } => rule.name.eq_ignore_ascii_case(name),
        _ => false,
    });
    anyhow::ensure!(
        !re_added,
        "the firewall rule '{name}' changed since the plan: the firewall holds {} now (an administrator's rule of that name, or ours changed since), left as it is; the rule the config wants under that name cannot be made beside it (removal is by name): remove or rename it (Get-NetFirewallRule -DisplayName '{name}') and run again",
        firewall::held(&now)
    );
    Ok(Some(firewall::kept(name, &now)))
}
