//! Install's desired state (files with their checksums, services, registry value, firewall
//! rule, install record) and its diff against the host: the ordered actions.

pub use super::desired::{DesiredFile, Got, RENDERED, release_files};
use crate::apply::{Action, Content};
use crate::config::Config;
use crate::config::types::{Backend, PlatformChoice};
use crate::host::{
    FirewallRule, Host, InstalledService, Protocol, RegValue, ServiceSpec, ServiceState,
    split_command_line,
};
use crate::installed::file_stat::host_sha256;
use crate::installed::record::{self, InstallRecord, RecordedFile};
use crate::layout::{
    CALICO_KEY, CALICO_SCRIPT_VXLAN_RULE, EVENT_SOURCE_KEY, INSTALL_ROOT_VALUE, InstallRoot, Role,
    VXLAN_RULE, join,
};
use crate::supervise;
use anyhow::Context as _;
use std::time::Duration;

/// Everything the install plan is made from.
pub struct Inputs<'a> {
    pub config: &'a Config,
    /// Every file but the install record.
    pub files: Vec<DesiredFile>,
    /// Files install owns that it does not write through the plan (the cached zip).
    pub extra_owned: Vec<RecordedFile>,
    /// Directories this run created before the plan (the download cache's).
    pub extra_dirs: Vec<String>,
    pub calico_version: Option<String>,
    /// The `cniVersion` of the release's own CNI template, kept in the record.
    pub cni_version: Option<String>,
    /// Services of a legacy NSSM install to remove first (`--migrate-legacy`).
    pub legacy: Vec<InstalledService>,
    pub start: bool,
    pub wait_timeout: Duration,
    pub previous: Option<InstallRecord>,
    /// The journal of an interrupted run, whose directories and routes still count.
    pub journal: Option<&'a crate::apply::journal::Journal>,
    /// Which running services stop while files change.
    pub restart: Restart,
    /// The VSID the Calico network must have before the node counts as ready.
    pub expect_vsid: Option<u32>,
    /// The node's grant to renew its token; `None` keeps the previous record's.
    pub renewal: Option<crate::cluster::renewal::Grant>,
    /// The hash of the fleet-wide configuration (`config::fleet_hash`), kept in the record.
    pub config_hash: Option<crate::config::ConfigHash>,
    /// The install's id (`record::install_id`), kept in the record.
    pub install_id: Option<String>,
    /// The adapter the External network binds (`desired::choose_uplink`), as recorded.
    pub uplink: Option<String>,
}

/// Which running services a change stops and starts again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Restart {
    /// Every running service, when anything changes (install).
    All,
    /// Only those whose environment file or registration changes, and CalicoNode's
    /// dependents when it is one of them (reconfigure, files only).
    Affected,
    /// The services are stopped by steps before this plan (reconfigure with a new network):
    /// every service starts at the end.
    AlreadyStopped,
}

/// The service registrations; the Calico version, when known, decides how the services
/// start its binary.
pub fn services(c: &Config, calico_version: Option<&str>) -> Vec<ServiceSpec> {
    let root = c.root();
    let version = calico_version.and_then(|v| crate::release::CalicoVersion::parse(v).ok());
    crate::render::env::roles_for(c)
        .into_iter()
        .map(|role| {
            let mut args = vec![
                "service".into(),
                "run".into(),
                supervise::role_name(role).into(),
                "--install-root".into(),
                root.to_string(),
            ];
            if let Some(v) = &version {
                args.extend(["--calico-version".into(), v.to_string()]);
            }
            if role == Role::Node && c.node.platform != PlatformChoice::Auto {
                args.extend(["--platform".into(), c.node.platform.to_string()]);
            }
            if role == Role::Node && c.metrics.enabled {
                args.extend(["--metrics-port".into(), c.metrics.port.0.to_string()]);
                if c.metrics.diags {
                    args.push("--diags".into());
                    let ns = &c.metrics.diags_namespace.0;
                    if ns != crate::config::DIAGS_NAMESPACE {
                        args.extend(["--diags-namespace".into(), ns.clone()]);
                    }
                }
            }
            supervise::service_spec(role, &root.self_exe(), args)
        })
        .collect()
}

/// The firewall rule for VXLAN, unless the backend needs none.
pub fn vxlan_rule(c: &Config) -> Option<FirewallRule> {
    (c.backend == Backend::Vxlan).then(|| {
        super::metrics_rules::inbound(VXLAN_RULE.into(), Protocol::Udp, 4789, None, Vec::new())
    })
}

/// The networks Calico creates with this backend.
pub fn networks(c: &Config) -> Vec<String> {
    match c.backend {
        Backend::None => Vec::new(),
        _ => vec!["External".into(), "Calico".into()],
    }
}

/// A legacy service, as a registration that puts it back on rollback.
pub fn legacy_spec(s: &InstalledService) -> ServiceSpec {
    let (program, args) = split_command_line(&s.command_line);
    ServiceSpec {
        name: s.name.clone(),
        display_name: s.display_name.clone(),
        description: String::new(),
        program,
        args,
        dependencies: s.dependencies.clone(),
        start: s.start,
        recovery: None,
    }
}

fn list(v: &[String]) -> String {
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// What differs between a registered service and the registration install wants.
pub(crate) fn service_changes(
    now: &InstalledService,
    want: &ServiceSpec,
    recorded: Option<&ServiceSpec>,
) -> Vec<String> {
    let mut out = Vec::new();
    if !want.same_command(&now.command_line) {
        out.push("command line".to_owned());
    }
    if now.display_name != want.display_name {
        out.push("display name".into());
    }
    if now.start != want.start {
        out.push("start type".into());
    }
    let lower = |v: &[String]| {
        let mut v: Vec<String> = v.iter().map(|s| s.to_ascii_lowercase()).collect();
        v.sort();
        v
    };
    if lower(&now.dependencies) != lower(&want.dependencies) {
        out.push(format!(
            "dependencies ({} registered, {} wanted)",
            list(&now.dependencies),
            list(&want.dependencies)
        ));
    }
    // The SCM does not report the description and recovery actions; the record knows them.
    if out.is_empty() && recorded.is_some_and(|r| r != want) {
        out.push("description or recovery".into());
    }
    out
}

/// The services whose environment file (or, for CalicoNode, the External network it makes)
/// is written, or whose registration changes; with CalicoNode, its dependents too.
fn affected_services(c: &Config, writes: &[Action], service_actions: &[Action]) -> Vec<String> {
    let written = |name: &str| {
        let path = c.install_root.join(name);
        writes.iter().any(|w| {
            matches!(w, Action::WriteFile { path: p, .. } if p.eq_ignore_ascii_case(path.as_str()))
        })
    };
    let affected = |role: Role| {
        let name = Role::service_name(role);
        written(role.env_file())
            || (role == Role::Node && written(crate::layout::EXTERNAL_FILE))
            || service_actions
                .iter()
                .any(|a| matches!(a, Action::UpdateService { spec, .. } if spec.name == name))
    };
    let node = affected(Role::Node);
    crate::render::env::roles_for(c)
        .into_iter()
        .filter(|&role| node || affected(role))
        .map(|role| Role::service_name(role).to_owned())
        .collect()
}

/// The plan; its last file action writes the install record.
pub fn plan(host: &dyn Host, i: &Inputs<'_>) -> anyhow::Result<Vec<Action>> {
    let c = i.config;
    let root = c.root();
    // 0. The directories whose files run as SYSTEM are protected before anything is written.
    let protect = protections(host, i)?;
    let mut actions: Vec<Action> = protect
        .iter()
        .map(|(path, writers, _)| Action::ProtectDir {
            path: path.clone(),
            writers: writers.clone(),
        })
        .collect();
    // 1. The legacy NSSM install goes first (its services have our services' names).
    actions.extend(legacy_removal(i));
    // 2. Files whose contents or access differ, and files no longer wanted.
    let writes = file_writes(host, i)?;
    let removals = file_removals(host, i)?;
    // 3. Services to register or reconfigure, and ours that are no longer wanted.
    let wanted = services(c, i.calico_version.as_deref());
    let svc = service_changes_of(host, i, &wanted)?;
    let routes = KeptRoutes::read(host, i)?;
    // Running services stop before their files or registration change, and start again after.
    // Restricting a file's access again changes nothing a service reads.
    let changing = writes
        .iter()
        .any(|w| !matches!(w, Action::RestrictFile { .. }))
        || !removals.is_empty()
        || !svc.actions.is_empty()
        || !svc.retired.is_empty();
    let stopped = if changing {
        stops(
            i,
            &wanted,
            &affected_services(c, &writes, &svc.actions),
            &svc.running,
        )
    } else {
        Vec::new()
    };
    actions.extend(
        stopped
            .iter()
            .map(|name| Action::StopService { name: name.clone() }),
    );
    actions.extend(svc.retired);
    actions.extend(writes);
    actions.extend(removals);
    actions.extend(svc.actions);
    // 4. The registry key and the firewall rule.
    let new_keys = crate::apply::journal::missing_keys(host, CALICO_KEY)?;
    let new_event_keys = crate::apply::journal::missing_keys(host, EVENT_SOURCE_KEY)?;
    let (host_actions, firewall_owned, metrics_rules) = registry_and_firewall(host, i, &root)?;
    actions.extend(host_actions);
    // 5. The record: what this install owns, merged with what earlier runs created.
    let owned = Owned {
        dirs: owned_dirs(host, i, &root, &protect)?,
        keys_created: keys_created(i, CALICO_KEY, |r| &r.registry_keys_created, new_keys),
        event_source_keys_created: keys_created(
            i,
            EVENT_SOURCE_KEY,
            |r| &r.event_source_keys_created,
            new_event_keys,
        ),
        firewall_rule: firewall_owned,
        metrics_rules,
    };
    let protected = protected_before(i, &protect);
    actions.extend(record_write(
        host, i, &root, &wanted, owned, &routes, protected,
    )?);
    // 6. Start what is stopped (or was stopped above), in order, and wait for the node.
    if i.start || !stopped.is_empty() {
        actions.extend(start_and_wait(host, i, &wanted, &svc.up, &stopped, routes)?);
    }
    Ok(actions)
}

type Protection = (String, Vec<String>, Option<String>);

/// The directories this install made: recorded, or created by an interrupted run (its journal).
fn made_dirs(i: &Inputs<'_>) -> Vec<String> {
    let mut dirs: Vec<String> = i.previous.iter().flat_map(|p| p.dirs.clone()).collect();
    dirs.extend(i.journal.map(|j| j.created_dirs()).unwrap_or_default());
    dirs
}

fn protections(host: &dyn Host, i: &Inputs<'_>) -> anyhow::Result<Vec<Protection>> {
    let own = made_dirs(i);
    let c = i.config;
    let dirs = crate::installed::protection::protected_dirs(c);
    let under_another = |d: &str| {
        let lower = d.to_ascii_lowercase();
        dirs.iter()
            .any(|o| lower.starts_with(&format!("{}\\", o.to_ascii_lowercase())))
    };
    let mut out = Vec::new();
    for d in &dirs {
        let Some((sddl, now, writers)) = access_of(host, d)? else {
            if !under_another(d) {
                out.push((d.clone(), Vec::new(), None));
            }
            continue;
        };
        // The root and what install made are its own and get the protected list; another
        // existing directory (containerd's) is changed only when someone else may change it.
        let ours = d.eq_ignore_ascii_case(dirs[0].as_str())
            || own.iter().any(|o| o.eq_ignore_ascii_case(d));
        let weak = if ours {
            !crate::host::acl::is_protected(&now)
        } else {
            !writers.is_empty()
        };
        if weak {
            out.push((d.clone(), writers, Some(sddl)));
        }
    }
    Ok(out)
}

/// Stops and deletes the legacy services; dependents (felix, confd, the upgrade service)
/// stop before CalicoNode.
fn legacy_removal(i: &Inputs<'_>) -> Vec<Action> {
    let stops = i
        .legacy
        .iter()
        .rev()
        .filter(|s| s.state != ServiceState::Stopped)
        .map(|s| Action::StopService {
            name: s.name.clone(),
        });
    let deletes = i.legacy.iter().rev().map(|s| Action::DeleteService {
        name: s.name.clone(),
        restore: Some(legacy_spec(s)),
    });
    stops.chain(deletes).collect()
}

/// The security of `path` (as read and parsed), and who other than SYSTEM, Administrators and
/// this elevated administrator may change it (its owner, an access list entry); `None` when
/// there is nothing at `path`.
fn access_of(
    host: &dyn Host,
    path: &str,
) -> anyhow::Result<Option<(String, crate::host::acl::Descriptor, Vec<String>)>> {
    let Some(sddl) = host.security(path)? else {
        return Ok(None);
    };
    let now = crate::host::acl::parse(&sddl)
        .map_err(|why| anyhow::anyhow!("cannot read the access list of {path} ({sddl}): {why}"))?;
    let admin = crate::installed::protection::elevated_user(host);
    let writers = crate::host::acl::writers_but(&now, admin.as_deref());
    Ok(Some((sddl, now, writers)))
}

/// The files whose contents, access or owner differ from what install writes.
fn file_writes(host: &dyn Host, i: &Inputs<'_>) -> anyhow::Result<Vec<Action>> {
    let mut writes = Vec::new();
    for f in &i.files {
        let now = host_sha256(host, &f.path)?;
        let access_now = host.file_access(&f.path)?;
        let want_access = crate::host::Access::secret_if(f.secret);
        let same_bytes = now.is_some() && now == f.sha256;
        // A file others may change is written anew: Windows keeps an existing file's security
        // when it is opened again.
        let foreign = match same_bytes {
            true => access_of(host, &f.path)?.map(|a| a.2).unwrap_or_default(),
            false => Vec::new(),
        };
        if same_bytes && access_now == Some(want_access) && foreign.is_empty() {
            continue;
        }
        writes.push(if same_bytes && f.secret && foreign.is_empty() {
            // Only the access list drifted: restricting it again needs no restart.
            Action::RestrictFile {
                path: f.path.clone(),
            }
        } else {
            Action::WriteFile {
                path: f.path.clone(),
                from: f.from.clone(),
                sha256: f.sha256.clone(),
                secret: f.secret,
                replaces: now.is_some(),
                foreign,
                content: f.content.clone(),
            }
        });
    }
    Ok(writes)
}

/// Files an earlier install wrote that this one does not (confd's after leaving windows-bgp).
fn file_removals(host: &dyn Host, i: &Inputs<'_>) -> anyhow::Result<Vec<Action>> {
    let mut removals = Vec::new();
    for old in i.previous.iter().flat_map(|p| &p.files) {
        let kept = i
            .files
            .iter()
            .any(|f| f.path.eq_ignore_ascii_case(&old.path))
            || i.extra_owned
                .iter()
                .any(|f| f.path.eq_ignore_ascii_case(&old.path));
        if !kept && host.file_access(&old.path)?.is_some() {
            removals.push(Action::RemoveFile {
                path: old.path.clone(),
            });
        }
    }
    Ok(removals)
}

/// What the services need, and what they are now.
#[derive(Default)]
struct ServicePlan {
    /// Registrations to create or update.
    actions: Vec<Action>,
    /// Ours that are no longer wanted: stopped and deleted.
    retired: Vec<Action>,
    /// Wanted services not stopped now.
    running: Vec<String>,
    /// Wanted services that have reached Running (one left start-pending is started again,
    /// which waits for it within the timeout).
    up: Vec<String>,
}

/// A kube-proxy service someone else registered (Calico's install-kube-services.ps1, a join
/// script) is not taken over: uninstall would then remove what calicoctl-win did not create.
fn refuse_foreign_kube_proxy(spec: &ServiceSpec, now: &InstalledService) -> anyhow::Result<()> {
    use crate::checks::kube_proxy::{FOREIGN_FIX, own_service};
    if spec.name != Role::service_name(Role::KubeProxy) || own_service(now) {
        return Ok(());
    }
    let said = format!(
        "a {} service that calicoctl-win did not register is on this node ({})",
        spec.name, now.command_line
    );
    Err(crate::error::UsageError::new(said, FOREIGN_FIX).into())
}

fn service_changes_of(
    host: &dyn Host,
    i: &Inputs<'_>,
    wanted: &[ServiceSpec],
) -> anyhow::Result<ServicePlan> {
    let legacy: Vec<String> = i
        .legacy
        .iter()
        .map(|s| s.name.to_ascii_lowercase())
        .collect();
    let mut p = ServicePlan::default();
    for spec in wanted {
        let now = host.service_query(&spec.name)?;
        let Some(now) = now.filter(|_| !legacy.contains(&spec.name.to_ascii_lowercase())) else {
            p.actions.push(Action::CreateService { spec: spec.clone() });
            continue;
        };
        refuse_foreign_kube_proxy(spec, &now)?;
        if now.state != ServiceState::Stopped {
            p.running.push(spec.name.clone());
        }
        if now.state == ServiceState::Running {
            p.up.push(spec.name.clone());
        }
        let recorded = i
            .previous
            .as_ref()
            .and_then(|r| r.services.iter().find(|s| s.name == spec.name));
        let changes = service_changes(&now, spec, recorded);
        if !changes.is_empty() {
            p.actions.push(Action::UpdateService {
                spec: spec.clone(),
                changes,
                old: recorded.cloned(),
            });
        }
    }
    if i.restart == Restart::AlreadyStopped {
        p.running.clear();
        p.up.clear();
    }
    for old in i.previous.iter().flat_map(|r| r.services.iter().rev()) {
        if wanted.iter().any(|w| w.name == old.name) {
            continue;
        }
        if let Some(now) = host.service_query(&old.name)? {
            if now.state != ServiceState::Stopped {
                p.retired.push(Action::StopService {
                    name: old.name.clone(),
                });
            }
            p.retired.push(Action::DeleteService {
                name: old.name.clone(),
                restore: Some(old.clone()),
            });
        }
    }
    Ok(p)
}

/// The running services to stop before a change, dependents first.
fn stops(
    i: &Inputs<'_>,
    wanted: &[ServiceSpec],
    affected: &[String],
    running: &[String],
) -> Vec<String> {
    wanted
        .iter()
        .rev()
        .filter(|spec| {
            let restarts = i.restart == Restart::All || affected.contains(&spec.name);
            restarts && running.contains(&spec.name)
        })
        .map(|spec| spec.name.clone())
        .collect()
}

/// The routes before the first install, and the cloud metadata route among them that must be
/// back: CalicoNode restores it after making the vSwitch; one lost later is restored by the
/// plan.
struct KeptRoutes {
    before: Vec<crate::host::Route>,
    addresses_before: Vec<crate::host::InterfaceAddress>,
    must_have: Vec<crate::host::Route>,
    lost: bool,
}

impl KeptRoutes {
    fn read(host: &dyn Host, i: &Inputs<'_>) -> anyhow::Result<Self> {
        let (before, addresses_before) = match (&i.previous, i.journal) {
            (Some(p), _) => (p.routes_before.clone(), p.addresses_before.clone()),
            (None, Some(j)) => (j.routes_before.clone(), j.addresses_before.clone()),
            (None, None) => (host.routes()?, host.ipv4_addresses()?),
        };
        let must_have: Vec<crate::host::Route> = before
            .iter()
            .filter(|r| crate::installed::routes::is_metadata(r))
            .cloned()
            .collect();
        let now = if must_have.is_empty() {
            Vec::new()
        } else {
            host.routes()?
        };
        let lost = !must_have
            .iter()
            .all(|r| crate::installed::routes::has_destination(&now, r));
        Ok(Self {
            before,
            addresses_before,
            must_have,
            lost,
        })
    }
}

/// The registry value and the firewall rules to set; the VXLAN rule and the metrics rules this
/// install owns.
fn registry_and_firewall(
    host: &dyn Host,
    i: &Inputs<'_>,
    root: &InstallRoot,
) -> anyhow::Result<(Vec<Action>, Option<FirewallRule>, Vec<FirewallRule>)> {
    let c = i.config;
    let mut actions = Vec::new();
    let reg_value = RegValue::Sz(root.to_string());
    if host.reg_get(CALICO_KEY, INSTALL_ROOT_VALUE)? != Some(reg_value.clone()) {
        actions.push(Action::SetRegistryValue {
            key: CALICO_KEY.into(),
            name: INSTALL_ROOT_VALUE.into(),
            value: reg_value,
        });
    }
    for (name, value) in event_source_values() {
        if host.reg_get(EVENT_SOURCE_KEY, name)? != Some(value.clone()) {
            actions.push(Action::SetRegistryValue {
                key: EVENT_SOURCE_KEY.into(),
                name: name.into(),
                value,
            });
        }
    }
    let mut firewall_owned = i.previous.as_ref().and_then(|p| p.firewall_rule.clone());
    if let Some(rule) = vxlan_rule(c) {
        let mut present = false;
        for name in [VXLAN_RULE, CALICO_SCRIPT_VXLAN_RULE] {
            present |= host
                .firewall_rules(name)?
                .iter()
                .any(|r| r.opens(Protocol::Udp, rule.local_port));
        }
        let taken = host.firewall_rules(VXLAN_RULE)?;
        // A rule of its name that does not let VXLAN in: another beside it would be one of
        // two of a name, which removal by name could not tell apart.
        if !present && !taken.is_empty() {
            anyhow::bail!(
                "the firewall rule '{VXLAN_RULE}' cannot be made: the firewall holds {}, which does not let inbound UDP {} in on every profile from any remote port, left as it is (install makes no second rule of that name); remove it (Remove-NetFirewallRule -DisplayName '{VXLAN_RULE}'; install makes it again, open) or let it in (Set-NetFirewallRule -DisplayName '{VXLAN_RULE}' -Enabled True -Action Allow -Profile Any -LocalAddress Any -RemotePort Any -InterfaceType Any -Service Any, when no interface list, app container, user, remote machine or IPsec requirement narrows it)",
                crate::host::firewall::held(&taken),
                rule.local_port
            );
        }
        if !present {
            actions.push(Action::AddFirewallRule { rule: rule.clone() });
            firewall_owned = Some(rule);
        }
    }
    for e in i.journal.iter().flat_map(|j| &j.entries) {
        if let crate::apply::journal::Undo::RemoveFirewallRule { name, .. } = &e.undo
            && let Some(rule) = vxlan_rule(c).filter(|r| r.name.eq_ignore_ascii_case(name))
        {
            firewall_owned = Some(rule);
        }
    }
    let previous = i.previous.as_ref().map_or(&[][..], |p| &p.metrics_rules);
    let felix = super::metrics_rules::felix_exe(host, c, &i.files)?;
    let metrics = super::metrics_rules::plan(host, c, &felix, previous, i.journal, &mut actions)?;
    Ok((actions, firewall_owned, metrics))
}

/// The Application event log source the service bodies write under, registered as .NET's
/// EventLog.CreateEventSource does (EventLogMessages.dll; `TypesSupported` 7).
fn event_source_values() -> [(&'static str, RegValue); 2] {
    [
        (
            "EventMessageFile",
            // REG_EXPAND_SZ with %SystemRoot%, as Windows' own sources write it: Windows is not
            // always on C: (Microsoft's "Event Sources" page: EventMessageFile is REG_EXPAND_SZ).
            RegValue::ExpandSz(
                r"%SystemRoot%\Microsoft.NET\Framework64\v4.0.30319\EventLogMessages.dll".into(),
            ),
        ),
        ("TypesSupported", RegValue::Dword(7)),
    ]
}

/// What the record says this install owns beyond its files and services.
struct Owned {
    dirs: Vec<String>,
    keys_created: Vec<String>,
    event_source_keys_created: Vec<String>,
    firewall_rule: Option<FirewallRule>,
    metrics_rules: Vec<FirewallRule>,
}

/// The directories this install owns: recorded earlier, created by an interrupted run, given,
/// or created now for its files or to be protected; parents first.
fn owned_dirs(
    host: &dyn Host,
    i: &Inputs<'_>,
    root: &InstallRoot,
    protect: &[Protection],
) -> anyhow::Result<Vec<String>> {
    let mut dirs = made_dirs(i);
    dirs.extend(i.extra_dirs.iter().cloned());
    let record_path = root.record();
    for path in i
        .files
        .iter()
        .map(|f| f.path.as_str())
        .chain([record_path.as_str()])
    {
        dirs.extend(host.missing_parents(path)?);
    }
    for (path, _, before) in protect {
        if before.is_none() {
            dirs.extend(host.missing_parents(path)?);
            dirs.push(path.clone());
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    dirs.retain(|d| seen.insert(d.to_ascii_lowercase()));
    dirs.sort_by_key(|d| d.matches('\\').count());
    Ok(dirs)
}

/// The registry keys under `key` created by this install: recorded earlier (`recorded`), by
/// an interrupted run (its journal), or now.
fn keys_created(
    i: &Inputs<'_>,
    key: &str,
    recorded: impl Fn(&InstallRecord) -> &Vec<String>,
    new_now: Vec<String>,
) -> Vec<String> {
    let recorded = i
        .previous
        .as_ref()
        .map(|p| recorded(p).clone())
        .unwrap_or_default();
    if !recorded.is_empty() {
        return recorded;
    }
    i.journal
        .iter()
        .flat_map(|j| &j.entries)
        .find_map(|e| match &e.undo {
            crate::apply::journal::Undo::RestoreRegistryValue {
                key: written,
                new_keys,
                ..
            } if !new_keys.is_empty() && written.eq_ignore_ascii_case(key) => {
                Some(new_keys.clone())
            }
            _ => None,
        })
        .unwrap_or(new_now)
}

/// The directories protected over an existing access list, with the list they had first:
/// recorded by an earlier install, by an interrupted run (its journal), or now.
fn protected_before(i: &Inputs<'_>, now: &[Protection]) -> Vec<record::ProtectedDir> {
    let mut out: Vec<record::ProtectedDir> = i
        .previous
        .as_ref()
        .map(|p| p.protected.clone())
        .unwrap_or_default();
    let journaled = i
        .journal
        .iter()
        .flat_map(|j| &j.entries)
        .filter_map(|e| match &e.undo {
            crate::apply::journal::Undo::RestoreSecurity { path, sddl } => {
                Some((path.clone(), sddl.clone()))
            }
            _ => None,
        });
    // A directory this install or an interrupted run made is its own, whatever it has now.
    let made = made_dirs(i);
    let current = now
        .iter()
        .filter(|(path, _, _)| !made.iter().any(|d| d.eq_ignore_ascii_case(path)))
        .filter_map(|(path, _, sddl)| sddl.clone().map(|s| (path.clone(), s)));
    for (path, previous) in journaled.chain(current) {
        if !out.iter().any(|p| p.path.eq_ignore_ascii_case(&path)) {
            out.push(record::ProtectedDir { path, previous });
        }
    }
    out
}

/// Writing the install record, unless it is already as it would be written.
fn record_write(
    host: &dyn Host,
    i: &Inputs<'_>,
    root: &InstallRoot,
    wanted: &[ServiceSpec],
    owned: Owned,
    routes: &KeptRoutes,
    protected: Vec<record::ProtectedDir>,
) -> anyhow::Result<Option<Action>> {
    let c = i.config;
    let mut files: Vec<RecordedFile> = i
        .files
        .iter()
        .map(|f| RecordedFile {
            path: f.path.clone(),
            sha256: f.sha256.clone().unwrap_or_default(),
            rendered: f.from == RENDERED,
        })
        .collect();
    files.extend(i.extra_owned.iter().cloned());
    let record = InstallRecord {
        format: record::FORMAT,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        calico_version: i.calico_version.clone(),
        cni_version: i.cni_version.clone(),
        install_root: root.to_string(),
        logs_dir: c.logs.dir.as_str().to_owned(),
        backend: c.backend.to_string(),
        files,
        dirs: owned.dirs,
        services: wanted.to_vec(),
        registry_key: CALICO_KEY.into(),
        registry_keys_created: owned.keys_created,
        event_source_keys_created: owned.event_source_keys_created,
        firewall_rule: owned.firewall_rule,
        metrics_rules: owned.metrics_rules,
        routes_before: routes.before.clone(),
        addresses_before: routes.addresses_before.clone(),
        networks: networks(c),
        config_hash: i.config_hash.clone(),
        install_id: i.install_id.clone(),
        network: Some(record::NetworkSettings::of(c, i.uplink.as_deref())),
        protected,
        renewal: i
            .renewal
            .clone()
            .or_else(|| i.previous.as_ref().and_then(|p| p.renewal.clone())),
    };
    let bytes = record
        .to_bytes()
        .context("cannot serialise the install record")?;
    let record_path = root.record();
    if host.read_file(&record_path)?.as_deref() == Some(bytes.as_slice()) {
        return Ok(None);
    }
    Ok(Some(Action::WriteFile {
        path: record_path,
        from: "install record".into(),
        sha256: Some(crate::files::sha256_hex(&bytes)),
        secret: false,
        replaces: i.previous.is_some(),
        foreign: Vec::new(),
        content: Content::Bytes(bytes),
    }))
}

/// Starts what is stopped (or was stopped by the plan), in order, restores a lost metadata
/// route, and waits for the node unless it is ready already.
fn start_and_wait(
    host: &dyn Host,
    i: &Inputs<'_>,
    wanted: &[ServiceSpec],
    up: &[String],
    stopped: &[String],
    routes: KeptRoutes,
) -> anyhow::Result<Vec<Action>> {
    let c = i.config;
    let mut actions = Vec::new();
    for spec in wanted {
        let was_stopped = stopped.contains(&spec.name);
        let running_now = up.contains(&spec.name) && !was_stopped;
        if was_stopped || (i.start && !running_now) {
            actions.push(Action::StartService {
                name: spec.name.clone(),
            });
        }
    }
    let started = !actions.is_empty();
    let ready = crate::installed::boot_marker::init_done(host)? && !routes.lost && {
        let present = host.hns_networks()?;
        networks(c)
            .iter()
            .all(|n| present.iter().any(|p| &p.name == n))
            && i.expect_vsid.is_none_or(|v| {
                present
                    .iter()
                    .any(|p| p.name == crate::layout::CALICO_NETWORK && p.vsid() == Some(v))
            })
    };
    if routes.lost {
        actions.push(Action::RestoreRoutes {
            routes: routes.must_have.clone(),
            addresses: routes.addresses_before,
        });
    }
    if started || !ready {
        actions.push(Action::WaitReady {
            networks: networks(c),
            vsid: i.expect_vsid,
            routes: routes.must_have,
            cni_config: (c.backend != crate::config::types::Backend::None)
                .then(|| join(c.cni.conf_dir.as_str(), c.cni.conf_filename.as_str())),
            timeout: i.wait_timeout,
        });
    }
    Ok(actions)
}
