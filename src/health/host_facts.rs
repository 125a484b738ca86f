//! The node's own services, routes, files, Felix, kube-proxy and protected directories, each
//! judged by its judge (`health::judge`).

use super::judge;
use super::look::{Desired, Notes};
use super::sections::{DirAccess, KubeProxy, Service};
use crate::config::Config;
use crate::duration::{now, time_text};
use crate::host::{Host, ServiceSpec};
use crate::installed::file_stat::FileDrift;
use crate::installed::record::InstallRecord;
use crate::layout::InstallRoot;
use anyhow::Context as _;

/// The recorded services (each with its record): their state, and how they differ from what
/// the config wants (`desired`; none in the node's own look, which has no config).
pub(super) fn services(
    host: &dyn Host,
    recorded: &[(String, Option<&ServiceSpec>)],
    desired: Option<&Desired>,
    n: &mut Notes,
) -> anyhow::Result<Vec<Service>> {
    let mut services = Vec::new();
    for (name, spec) in recorded {
        let Some(q) = service(host, name, n)? else {
            continue;
        };
        let state = judge::state_word(q.as_ref());
        let pid = q.as_ref().and_then(|s| s.pid);
        let since = q.as_ref().and_then(|s| s.since.map(time_text));
        let config_drift = match desired {
            Some(desired) => drift(desired, name, q.as_ref(), *spec),
            None => Vec::new(),
        };
        if !config_drift.is_empty() {
            n.findings.push(judge::service_drift(name, &config_drift));
        }
        services.push(Service {
            name: name.clone(),
            state,
            pid,
            since,
            drift: config_drift,
        });
    }
    Ok(services)
}

/// How a registered service differs from what the config wants of it.
fn drift(
    desired: &Desired,
    name: &str,
    registered: Option<&crate::host::InstalledService>,
    recorded: Option<&ServiceSpec>,
) -> Vec<String> {
    let wanted = desired.services.iter().find(|w| w.name == name);
    match (registered, wanted) {
        (Some(now), Some(want)) => (desired.service_changes)(now, want, recorded),
        (_, None) => vec!["not wanted by the config".into()],
        (None, _) => Vec::new(),
    }
}

/// A service as the host has it (`None` inside: not registered), judged; `None` when a
/// lenient look could not read it (then that is its finding).
pub(super) fn service(
    host: &dyn Host,
    name: &str,
    n: &mut Notes,
) -> anyhow::Result<Option<Option<crate::host::InstalledService>>> {
    let read = host
        .service_query(name)
        .with_context(|| format!("the service {name} cannot be read"));
    let found = n.unread(read, name)?;
    if let Some(q) = &found {
        n.findings.extend(judge::service(name, q.as_ref()));
    }
    Ok(found)
}

/// The cloud metadata route the node had before the install (CalicoNode restores it after
/// the vSwitch takes it; without it pods and the node lose their cloud's metadata).
pub(super) fn metadata_route(
    host: &dyn Host,
    rec: Option<&InstallRecord>,
    n: &mut Notes,
) -> anyhow::Result<()> {
    let kept: Vec<&crate::host::Route> = rec
        .iter()
        .flat_map(|rec| &rec.routes_before)
        .filter(|route| crate::installed::routes::is_metadata(route))
        .collect();
    if kept.is_empty() {
        return Ok(());
    }
    let read = host.routes().context("cannot read the routes");
    let Some(now) = n.unread(read, "routes")? else {
        return Ok(());
    };
    let gone = kept
        .into_iter()
        .filter(|r| !crate::installed::routes::has_destination(&now, r));
    n.findings.extend(gone.map(judge::route_missing));
    Ok(())
}

/// kube-proxy as preflight's `kube-proxy` check sees it: a misconfiguration (the wrong
/// network, a source VIP that is not `Calico_ep`'s, DSR the build lacks) is a problem; no
/// kube-proxy service (it may run as a HostProcess DaemonSet) or DSR left off is shown only.
pub(super) fn kube_proxy(
    host: &dyn Host,
    config: &Config,
    version: Option<String>,
    n: &mut Notes,
) -> KubeProxy {
    use crate::checks::Verdict;
    use crate::checks::kube_proxy::{KubeProxyFacts, own_version};
    let facts = crate::checks::host::kube_proxy_facts(host);
    let own = own_version(host, &facts);
    let facts = KubeProxyFacts {
        node_reported: own.is_none() && version.is_some(),
        version: own.or(version),
        ..facts
    };
    let check = crate::checks::kube_proxy::check(&facts, config);
    if check.verdict == Verdict::Fail {
        n.findings.push(judge::kube_proxy(check.said.clone()));
    }
    shown(&check)
}

/// A check of preflight's as status shows it.
fn shown(check: &crate::checks::Check) -> KubeProxy {
    KubeProxy {
        verdict: check.verdict,
        message: check.message.clone(),
        remedy: check.remedy.clone(),
    }
}

/// The known-issues table (`checks::known_issues`) for this build and update, the installed
/// release and the config's backend, as preflight judges it: shown beside kube-proxy (what
/// breaks and its fix is the table's; the findings judge what the node does now).
pub(super) fn known_issues(host: &dyn Host, config: &Config, calico: Option<&str>) -> KubeProxy {
    shown(&crate::checks::host::known_issues_on(host, config, calico))
}

/// Felix's own health (`installed::felix_health`): a problem when it is not live or not
/// ready, or silent past its start-up.
pub(super) fn felix_health(
    h: &dyn Host,
    root: &InstallRoot,
    n: &mut Notes,
) -> anyhow::Result<Option<crate::installed::felix_health::FelixHealth>> {
    let read =
        crate::installed::felix_health::read(h, root).context("Felix's health cannot be asked");
    let health = n.unread(read, "Felix")?;
    if let Some(said) = &health {
        n.findings.extend(judge::felix(said, now()));
    }
    Ok(health)
}

/// Drift of the files (`plan::drift`, handed in): installed ones changed or missing, rendered
/// ones the config now renders otherwise.
pub(super) fn file_drift(files: &[FileDrift], n: &mut Notes) {
    use crate::installed::file_stat::FileState;
    for f in files {
        let renders = f.state == FileState::DiffersFromConfig;
        n.findings
            .push(judge::file_drift(f.path.as_str(), f.describe(), renders));
    }
}

/// What runs as SYSTEM must still come from directories only SYSTEM and Administrators can
/// change: each one others may change now is a problem.
pub(super) fn dir_access(h: &dyn Host, config: &Config, n: &mut Notes) -> Vec<DirAccess> {
    crate::installed::protection::weak_dirs(h, config)
        .into_iter()
        .map(|(dir, who)| {
            n.findings.push(judge::dir_access(&dir, &who));
            DirAccess { dir, writers: who }
        })
        .collect()
}
