//! The executor. Before an action runs, the journal on the host records it with what undoes
//! it (a replaced file is backed up first); after it runs, the journal marks it done. When an
//! action fails, install rolls back every journaled action in reverse; uninstall stops and
//! keeps its record so that running it again finishes the job. A run that was cut off (power
//! loss, a killed process) leaves the journal behind: the next run plans again from what the
//! host is now, and keeps the old entries so that a later rollback still undoes them.

use super::Action;
use super::Content;
use super::record::missing_parents;
use crate::cluster::drain::NodeControl;
use crate::host::{Access, FirewallRule, Host, HostError, RegValue, Route, ServiceSpec};
use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// What undoes one action.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "undo", rename_all = "kebab-case")]
pub enum Undo {
    Nothing,
    RemoveFile {
        path: String,
        /// Directories the write created, outermost first.
        new_dirs: Vec<String>,
    },
    RestoreFile {
        path: String,
        backup: String,
        secret: bool,
    },
    DeleteService {
        name: String,
    },
    RegisterService {
        spec: ServiceSpec,
    },
    RestoreServiceConfig {
        spec: ServiceSpec,
    },
    StartService {
        name: String,
    },
    StopService {
        name: String,
    },
    RestoreRegistryValue {
        key: String,
        name: String,
        previous: Option<RegValue>,
        /// The key and parents the write creates, outermost first.
        new_keys: Vec<String>,
    },
    RemoveFirewallRule {
        name: String,
    },
    AddFirewallRule {
        rule: FirewallRule,
    },
    Uncordon {
        node: String,
    },
}

/// The journal kept on the host while a plan runs.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Journal {
    pub command: String,
    /// Unix seconds when the first run of this plan started.
    pub started: i64,
    /// Directories the journal itself needed, outermost first.
    pub new_dirs: Vec<String>,
    /// The host's routes when the first run started.
    pub routes_before: Vec<Route>,
    /// The IPv4 addresses then (`routes::place`).
    #[serde(default)]
    pub addresses_before: Vec<crate::host::InterfaceAddress>,
    /// Uninstall: the record it works from, so that a run cut off after the record file is
    /// gone can be finished.
    #[serde(default)]
    pub record: Option<super::record::InstallRecord>,
    /// The services' logs directory when the run started (a rollback by a later command,
    /// which may not read the config, still finds it).
    #[serde(default)]
    pub logs_dir: Option<String>,
    /// A download cache this journal's run created: everything in it came from that run (a
    /// partial or refused download, an unpacked release), so undoing the run removes it whole.
    #[serde(default)]
    pub owned_cache: Option<String>,
    pub entries: Vec<Entry>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Entry {
    pub action: String,
    pub undo: Undo,
    pub done: bool,
    /// Once such an action has started, a failure no longer rolls back: the run is finished
    /// by running the command again (deleting an HNS network cannot be undone).
    #[serde(default)]
    pub irreversible: bool,
}

impl Journal {
    /// The journal an interrupted run left, if any.
    pub fn load(host: &dyn Host, path: &str) -> anyhow::Result<Option<Journal>> {
        let Some(bytes) = host.read_file(path)? else {
            return Ok(None);
        };
        serde_json::from_slice(&bytes).map(Some).with_context(|| {
            format!("the journal {path} is not readable; delete it to start afresh")
        })
    }

    /// Writes the journal (atomically, as every host file).
    pub fn save(&self, host: &dyn Host, path: &str) -> anyhow::Result<()> {
        save(host, path, self)
    }

    /// Directories created by the journaled actions, and by the journal.
    pub fn created_dirs(&self) -> Vec<String> {
        let mut dirs = self.new_dirs.clone();
        for e in &self.entries {
            if let Undo::RemoveFile { new_dirs, .. } = &e.undo {
                dirs.extend(new_dirs.iter().cloned());
            }
        }
        dirs
    }
}

/// How to run a plan.
pub struct Options<'a> {
    pub command: &'static str,
    pub journal_path: String,
    /// Roll back on failure (install) or stop and keep what is done (uninstall).
    pub rollback: bool,
    pub stop_timeout: Duration,
    pub start_timeout: Duration,
    /// The journal of an interrupted run, continued by this one.
    pub previous: Option<Journal>,
    pub routes_before: Vec<Route>,
    pub record: Option<super::record::InstallRecord>,
    /// The services' logs directory: a rollback that removes the directory holding it also
    /// removes the logs the started services wrote there.
    pub logs_dir: Option<String>,
    pub now: i64,
    /// The cluster, for plans that cordon, drain or wait for the node.
    pub cluster: Option<&'a dyn NodeControl>,
}

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
    /// The run had passed an irreversible step: nothing was rolled back and the journal is
    /// kept, so that running the command again finishes it.
    pub past_no_return: bool,
}

/// Runs the plan; `report` is called before each action.
pub fn execute(
    host: &dyn Host,
    actions: &[Action],
    opts: Options<'_>,
    report: &mut dyn FnMut(usize, usize, &Action),
) -> Result<Vec<String>, ExecError> {
    let mut warnings = Vec::new();
    let journaled: Vec<&Action> = actions.iter().collect();
    let total = actions.len();
    let mut journal = match opts.previous.clone() {
        Some(j) => j,
        None => Journal {
            command: opts.command.into(),
            started: opts.now,
            new_dirs: Vec::new(),
            routes_before: opts.routes_before.clone(),
            addresses_before: host.ipv4_addresses().unwrap_or_default(),
            record: opts.record.clone(),
            logs_dir: opts.logs_dir.clone(),
            owned_cache: None,
            entries: Vec::new(),
        },
    };
    if !journaled.is_empty() && opts.previous.is_none() {
        journal.new_dirs = missing_parents(host, &opts.journal_path).map_err(|err| ExecError {
            index: 0,
            total,
            action: format!("prepare the journal {}", opts.journal_path),
            source: err.into(),
            rollback_failures: None,
            past_no_return: false,
        })?;
    }

    let mut past_no_return = journal.entries.iter().any(|e| e.irreversible);
    for (i, action) in journaled.iter().enumerate() {
        report(i + 1, total, action);
        let irreversible = matches!(action, Action::DeleteNetwork { .. });
        let committed_before = past_no_return;
        let step = (|| -> anyhow::Result<()> {
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
            save(host, &opts.journal_path, &journal)?;
            // From here the step may have happened, even if it reports a failure.
            past_no_return |= irreversible;
            run(host, action, &opts, &mut warnings)?;
            if let Some(e) = journal.entries.last_mut() {
                e.done = true;
            }
            save(host, &opts.journal_path, &journal)
        })();
        if let Err(source) = step {
            // An irreversible step that failed without taking effect still allows a rollback.
            if irreversible && !committed_before && !took_effect(host, action) {
                past_no_return = false;
            }
            let rollback_failures =
                (opts.rollback && !past_no_return).then(|| rollback(host, &journal, &opts));
            return Err(ExecError {
                index: i + 1,
                total,
                action: action.describe(),
                source,
                rollback_failures,
                past_no_return: opts.rollback && past_no_return,
            });
        }
    }

    // Success: the backups and the journal go.
    let fail = |i: usize, action: String, source: anyhow::Error| ExecError {
        index: i,
        total,
        action,
        source,
        rollback_failures: None,
        past_no_return: false,
    };
    for e in &journal.entries {
        if let Undo::RestoreFile { backup, .. } = &e.undo {
            host.remove_file(backup)
                .map_err(|err| fail(total, format!("remove the backup {backup}"), err.into()))?;
        }
    }
    if !journaled.is_empty() || opts.previous.is_some() {
        host.remove_file(&opts.journal_path).map_err(|err| {
            fail(
                total,
                format!("remove the journal {}", opts.journal_path),
                err.into(),
            )
        })?;
    }
    Ok(warnings)
}

fn save(host: &dyn Host, path: &str, journal: &Journal) -> anyhow::Result<()> {
    let text = serde_json::to_vec_pretty(journal)?;
    host.write_file(path, &text, Access::Normal)
        .with_context(|| format!("cannot write the journal {path}"))?;
    Ok(())
}

fn ignore_not_found(r: Result<(), HostError>) -> Result<(), HostError> {
    match r {
        Err(e) if e.is_not_found() => Ok(()),
        other => other,
    }
}

/// Runs one action.
fn run(
    host: &dyn Host,
    action: &Action,
    opts: &Options<'_>,
    warnings: &mut Vec<String>,
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
        } => {
            let access = if *secret {
                Access::Secret
            } else {
                Access::Normal
            };
            match content {
                Content::Bytes(b) => {
                    host.write_file(path, b, access)?;
                }
                Content::Local(p) => host.copy_in(p, path)?,
                Content::Pending => anyhow::bail!("the contents of {path} are not known yet"),
            }
        }
        Action::RemoveFile { path } => {
            host.remove_file(path)?;
        }
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
        Action::RemoveFirewallRule { name } => {
            host.firewall_remove(name)?;
        }
        Action::DeleteNetwork { id, .. } => ignore_not_found(host.hns_delete_network(id))?,
        Action::RestoreRoutes { routes, addresses } => {
            warnings.extend(restore_routes(host, routes, addresses)?);
        }
        Action::WaitReady {
            networks,
            vsid,
            routes,
            timeout,
        } => wait_ready(host, networks, *vsid, routes, *timeout)?,
        Action::Cordon { node } => cluster(opts)?.set_cordoned(node, true)?,
        Action::Uncordon { node } => cluster(opts)?.set_cordoned(node, false)?,
        Action::Drain { node, options, .. } => cluster(opts)?.drain(node, options)?,
        Action::WaitNodeReady { node, timeout } => cluster(opts)?.wait_ready(node, *timeout)?,
        Action::RemoveDir { path } => {
            host.remove_empty_dir(path)?;
        }
    }
    Ok(())
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

fn cluster<'a>(opts: &Options<'a>) -> anyhow::Result<&'a dyn NodeControl> {
    opts.cluster.ok_or_else(|| {
        anyhow::anyhow!("this step needs the cluster, and no admin kubeconfig was given")
    })
}

/// Adds back the recorded routes that are missing, each on its interface or where that
/// interface's address is now (`routes::place`); returns the routes that have nowhere to go,
/// as warnings (the rest of the run still matters more than one route).
fn restore_routes(
    host: &dyn Host,
    routes: &[Route],
    addresses: &[crate::host::InterfaceAddress],
) -> anyhow::Result<Vec<String>> {
    let now = host.routes()?;
    let here = host.ipv4_addresses()?;
    let mut warnings = Vec::new();
    for r in routes.iter().filter(|r| !now.contains(r)) {
        let what = format!("{}/{} via {}", r.destination, r.prefix_len, r.next_hop);
        let Some(index) = super::routes::place(r, &here, addresses) else {
            warnings.push(format!(
                "the route {what} was not restored: its interface {} is gone and no interface holds its address or next hop now",
                r.interface_index
            ));
            continue;
        };
        let route = Route {
            interface_index: index,
            ..r.clone()
        };
        if now.contains(&route) {
            continue;
        }
        match host.add_route(&route) {
            Err(HostError::Exists { .. }) | Ok(()) => {}
            Err(e) => warnings.push(format!("the route {what} was not restored: {e}")),
        }
    }
    Ok(warnings)
}

/// Waits until CalicoNode's init marker is set for this boot, the networks exist (the
/// Calico network with `vsid` when one is given) and the host has `routes` again.
fn wait_ready(
    host: &dyn Host,
    networks: &[String],
    vsid: Option<u32>,
    routes: &[Route],
    timeout: Duration,
) -> Result<(), HostError> {
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(100);
    loop {
        let init = crate::supervise::init_done(host)?;
        let present = host.hns_networks()?;
        let missing: Vec<String> = networks
            .iter()
            .filter(|n| !present.iter().any(|p| &p.name == *n))
            .cloned()
            .chain(vsid.and_then(|v| {
                let calico = present
                    .iter()
                    .find(|p| p.name == crate::render::hns::CALICO_NETWORK)?;
                (calico.vsid() != Some(v)).then(|| {
                    format!(
                        "Calico with VSID {v} (it has {})",
                        calico.vsid().map_or("none".into(), |x| x.to_string())
                    )
                })
            }))
            .collect();
        let now = if routes.is_empty() {
            Vec::new()
        } else {
            host.routes()?
        };
        let lost: Vec<String> = routes
            .iter()
            .filter(|r| !super::routes::has_destination(&now, r))
            .map(|r| format!("{}/{}", r.destination, r.prefix_len))
            .collect();
        if init && missing.is_empty() && lost.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            let mut what = Vec::new();
            if !init {
                what.push("CalicoNode to finish initialising".to_owned());
            }
            if !missing.is_empty() {
                what.push(format!(
                    "HNS network {}",
                    missing
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            if !lost.is_empty() {
                what.push(format!(
                    "the route to {} that the node had before (CalicoNode restores it; its log says why not)",
                    lost.join(", ")
                ));
            }
            return Err(HostError::Timeout {
                what: what.join(" and "),
                after: timeout,
            });
        }
        std::thread::sleep(pause.min(deadline.saturating_duration_since(Instant::now())));
        pause = (pause * 2).min(Duration::from_secs(2));
    }
}

/// Finds what undoes `action` in the host's current state; backs up a file about to be replaced.
fn prepare_undo(host: &dyn Host, action: &Action, opts: &Options<'_>) -> anyhow::Result<Undo> {
    Ok(match action {
        Action::StopService { name } => match host.service_query(name)? {
            Some(s) if s.state != crate::host::ServiceState::Stopped => {
                Undo::StartService { name: name.clone() }
            }
            _ => Undo::Nothing,
        },
        Action::StartService { name } => Undo::StopService { name: name.clone() },
        Action::DeleteService { restore, .. } => match restore {
            Some(spec) => Undo::RegisterService { spec: spec.clone() },
            None => Undo::Nothing,
        },
        Action::CreateService { spec } => Undo::DeleteService {
            name: spec.name.clone(),
        },
        Action::UpdateService { old, .. } => match old {
            Some(spec) => Undo::RestoreServiceConfig { spec: spec.clone() },
            None => Undo::Nothing,
        },
        Action::WriteFile { path, .. } => match host.file_access(path)? {
            Some(access) => {
                // Streamed: a replaced release binary is never held whole in memory.
                let secret = access == Access::Secret;
                let backup = format!("{path}.calicoctl-win.bak");
                host.copy_file(path, &backup, access)
                    .with_context(|| format!("cannot back up {path}"))?;
                Undo::RestoreFile {
                    path: path.clone(),
                    backup,
                    secret,
                }
            }
            None => Undo::RemoveFile {
                path: path.clone(),
                new_dirs: missing_parents(host, path)?,
            },
        },
        Action::SetRegistryValue { key, name, .. } => Undo::RestoreRegistryValue {
            key: key.clone(),
            name: name.clone(),
            previous: host.reg_get(key, name)?,
            new_keys: missing_keys(host, key)?,
        },
        Action::AddFirewallRule { rule } => Undo::RemoveFirewallRule {
            name: rule.name.clone(),
        },
        Action::RemoveFirewallRule { name } => match host.firewall_rule(name)? {
            Some(rule) => Undo::AddFirewallRule { rule },
            None => Undo::Nothing,
        },
        Action::Cordon { node } => {
            if cluster(opts)?.is_cordoned(node)? {
                Undo::Nothing
            } else {
                Undo::Uncordon { node: node.clone() }
            }
        }
        Action::RemoveFile { .. }
        | Action::RestrictFile { .. }
        | Action::Drain { .. }
        | Action::WaitNodeReady { .. }
        | Action::Uncordon { .. }
        | Action::DeleteRegistryKey { .. }
        | Action::DeleteRegistryValue { .. }
        | Action::DeleteNetwork { .. }
        | Action::RestoreRoutes { .. }
        | Action::WaitReady { .. }
        | Action::RemoveDir { .. } => Undo::Nothing,
    })
}

/// The registry key and those of its parents that do not exist, outermost first (never a
/// root or `HKLM\Software` itself).
pub fn missing_keys(host: &dyn Host, key: &str) -> Result<Vec<String>, HostError> {
    let mut out = Vec::new();
    let mut cur = key.trim_end_matches('\\').to_owned();
    while cur.matches('\\').count() >= 2 && !host.reg_key_exists(&cur)? {
        out.push(cur.clone());
        match cur.rsplit_once('\\') {
            Some((parent, _)) => cur = parent.to_owned(),
            None => break,
        }
    }
    out.reverse();
    Ok(out)
}

/// Undoes every journaled action in reverse, then removes the journal and the directories
/// the run created. Returns the undo steps that failed.
/// Undoes what an interrupted run journaled at `journal_path` (in reverse), then removes the
/// journal and the directories it created: what a failed install does, for a later command.
/// Returns what could not be undone (the journal stays then).
pub fn undo_journal(
    host: &dyn Host,
    journal: &Journal,
    journal_path: &str,
    timeout: Duration,
) -> Vec<String> {
    let opts = Options {
        command: "rollback",
        journal_path: journal_path.to_owned(),
        rollback: true,
        stop_timeout: timeout,
        start_timeout: timeout,
        previous: None,
        routes_before: Vec::new(),
        record: None,
        logs_dir: None,
        now: 0,
        cluster: None,
    };
    rollback(host, journal, &opts)
}

impl Journal {
    /// Whether the run wrote `path` (its install record) before it was cut off: the record
    /// then names everything the run owns.
    pub fn wrote(&self, path: &str) -> bool {
        self.entries.iter().any(|e| {
            e.done
                && match &e.undo {
                    Undo::RemoveFile { path: p, .. } | Undo::RestoreFile { path: p, .. } => {
                        p.eq_ignore_ascii_case(path)
                    }
                    _ => false,
                }
        })
    }
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

fn rollback(host: &dyn Host, journal: &Journal, opts: &Options<'_>) -> Vec<String> {
    let mut failures = Vec::new();
    for e in journal.entries.iter().rev() {
        if let Err(err) = undo(host, &e.undo, opts) {
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
    if failures.is_empty() && !journal.routes_before.is_empty() {
        match restore_routes(host, &journal.routes_before, &journal.addresses_before) {
            Ok(_) => {}
            Err(e) => failures.push(format!("restore the routes: {e:#}")),
        }
    }
    // What the services wrote while they ran under the install root (nodename, the token
    // refresher's sandbox with calico-node's credentials), as uninstall removes it.
    if failures.is_empty() && journal.command == "install" {
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
                failures.extend(remove_service_logs(host, logs));
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

/// Removes what the services write under the install root that holds `journal_path`.
fn remove_runtime_files(host: &dyn Host, journal_path: &str) -> Vec<String> {
    let Some((root, _)) = journal_path.rsplit_once('\\') else {
        return Vec::new();
    };
    let (files, dirs) = crate::supervise::refresher::owned_paths(root);
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

/// Removes `dir` and everything in it (a cache is written beside the host layer, straight to
/// the disk, so it is removed the same way).
fn remove_tree(host: &dyn Host, dir: &str) -> Vec<String> {
    let local = match host.local_path(dir) {
        Ok(l) => l,
        Err(e) => return vec![format!("remove {dir}: {e}")],
    };
    match std::fs::remove_dir_all(&local) {
        Ok(()) => Vec::new(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => vec![format!("remove {dir}: {e}")],
    }
}

/// Removes the services' log files in `dir`; returns what could not be removed.
fn remove_service_logs(host: &dyn Host, dir: &str) -> Vec<String> {
    let paths = match super::record::service_logs(host, dir) {
        Ok(p) => p,
        Err(e) => return vec![format!("list the logs in {dir}: {e:#}")],
    };
    paths
        .into_iter()
        .filter_map(|path| {
            host.remove_file(&path)
                .err()
                .map(|e| format!("remove {path}: {e}"))
        })
        .collect()
}

fn undo(host: &dyn Host, undo: &Undo, opts: &Options<'_>) -> anyhow::Result<()> {
    match undo {
        Undo::Nothing => {}
        Undo::RemoveFile { path, .. } => {
            host.remove_file(path)?;
        }
        Undo::RestoreFile {
            path,
            backup,
            secret,
        } => {
            let access = if *secret {
                Access::Secret
            } else {
                Access::Normal
            };
            if host.copy_file(backup, path, access)? {
                host.remove_file(backup)?;
            }
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
        Undo::RemoveFirewallRule { name } => {
            host.firewall_remove(name)?;
        }
        Undo::AddFirewallRule { rule } => match host.firewall_add(rule) {
            Err(HostError::Exists { .. }) | Ok(()) => {}
            Err(e) => return Err(e.into()),
        },
        Undo::Uncordon { node } => cluster(opts)?.set_cordoned(node, false)?,
    }
    Ok(())
}
