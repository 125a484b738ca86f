//! `install`: checks, release, credentials, rendered files, services, a running node; every
//! change planned first, journaled while it runs and undone if a step fails.

use super::preflight::{ClusterRead, check_skips, cluster_checks, read_cluster};
use crate::checks::{self, Blocked};
use crate::cli::InstallArgs;
use crate::cluster::{credentials, etcd, facts, node};
use crate::config::types::Datastore;
use crate::config::{Config, Raw};
use crate::context::Context;
use crate::duration::{now, time_text};
use crate::error::UsageError;
use crate::host::{Host, HostKind, InstalledService};
use crate::output::DownloadProgress;
use crate::plan::install::{DesiredFile, Got, Inputs, release_files};
use crate::plan::record::{self, RecordedFile, join};
use crate::plan::{self, Content};
use crate::release::{self, Source, Want};
use crate::render;
use anyhow::Context as _;
use serde_json::json;
use std::collections::BTreeMap;
use std::io::IsTerminal;

/// Services a legacy install registered, by the names it used.
const LEGACY_SERVICES: [&str; 4] = ["CalicoNode", "CalicoFelix", "CalicoConfd", "CalicoUpgrade"];

pub fn run(args: &InstallArgs, ctx: &mut Context) -> anyhow::Result<()> {
    let mut want = super::flags::release_want(&args.release)?;
    check_skips(&args.skip)?;
    let dry_run = ctx.options.dry_run;
    let host = ctx.open_host_to_change("install")?;
    let base = ctx.load_config()?;

    // The legacy NSSM install is replaced only when asked.
    let legacy = legacy_services(host.as_ref())?;
    if !legacy.is_empty() && !args.migrate_legacy {
        return Err(legacy_error(&legacy).into());
    }

    // Checks: host, then cluster; nothing changes when one blocks.
    let node_name = base.config.node.name.to_string();
    let cluster = read_cluster(false, ctx, &node_name);
    let mut etcd_files = None;
    let mut settings = match &cluster {
        ClusterRead::Read(_, f) => f.settings(),
        _ => BTreeMap::new(),
    };
    let mut loaded = if settings.is_empty() {
        base
    } else {
        ctx.load_config_with(settings.clone())?
    };
    // The datastore and etcd's endpoints may come from the cluster, so this is decided on
    // the merged configuration.
    if let ClusterRead::Read(c, _) = &cluster
        && loaded.config.datastore == Datastore::Etcdv3
        && loaded.config.etcd.tls.is_none()
    {
        let files = etcd_credentials(c, &loaded.config)?;
        for (_, name, setting) in etcd::TLS_FILES {
            let path = loaded.config.install_root.join("etcd-tls").join(name);
            settings.insert(setting, Raw::Scalar(path.as_str().to_owned()));
        }
        etcd_files = Some(files);
        loaded = ctx.load_config_with(settings)?;
    }
    let config = &loaded.config;

    // The version: the cluster's unless one was chosen; never older than it unless allowed.
    let cluster_version = match &cluster {
        ClusterRead::Read(_, f) => f.calico_version.clone(),
        _ => None,
    };
    want.follow_cluster(cluster_version.as_deref());
    if let (true, Some(asked), None) = (want.chosen, &want.version, &args.release.release_zip) {
        let what = format!("--calico-version {asked}");
        if let Some(w) = release::against_cluster(
            &what,
            asked,
            cluster_version.as_deref(),
            args.allow_downgrade,
        )? {
            ctx.printer.warn(&w);
        }
    }

    let mut snapshot = checks::host::snapshot(host.as_ref());
    snapshot
        .calico_services
        .retain(|s| !legacy.iter().any(|l| l.name == s.name));
    let mut results = checks::host::evaluate(&snapshot, config);
    results.extend(cluster_checks(&cluster, &loaded));
    checks::accept_skipped(&mut results, &args.skip);
    let blocking = checks::blocking(&results);
    ctx.printer.text(checks::table(&results).trim_end());
    ctx.printer.text("");
    if !blocking.is_empty() && !dry_run {
        ctx.printer
            .json(&json!({"checks": results, "blocking": blocking, "changed": false}));
        return Err(Blocked { ids: blocking }.into());
    }

    // The release: downloaded and extracted on this machine, or (dry run) what would be.
    let root = crate::plan::install::install_root(config);
    let cache_dir = join(&root, "cache");
    let journal_path = join(&root, record::JOURNAL_FILE);
    let mut journal = super::continue_journal(ctx, host.as_ref(), &journal_path, "install")?;
    // Before anything is written under the root, a journal names the directories this run
    // creates: a run killed in its download leaves them owned, to the next install or to
    // uninstall. Until the plan runs, a failure undoes this beginning (`Begun`).
    let cache_dirs = record::missing_parents(host.as_ref(), &join(&cache_dir, "x"))?;
    let mut begun = None;
    if journal.is_none() && !dry_run {
        journal = begin_journal(host.as_ref(), &journal_path, &cache_dir, config)?;
        begun = journal.clone().map(|j| Begun {
            host: host.as_ref(),
            journal: j,
            path: journal_path.clone(),
            timeout: args.service_timeout,
            armed: true,
        });
    }
    let staging = staging_dir(host.as_ref(), &cache_dir, dry_run)?;
    let got = obtain_release(ctx, host.as_ref(), &want, &cache_dir, staging.path())?;
    if let (Some(_), Some(found)) = (&args.release.release_zip, got.version())
        && let Some(w) = release::against_cluster(
            &want.source.show(),
            &found,
            cluster_version.as_deref(),
            args.allow_downgrade,
        )?
    {
        ctx.printer.warn(&w);
    }

    // Credentials, rendered files, CNI plugins, calicoctl-win itself.
    let mut prepare: Vec<String> = Vec::new();
    let mut files = Vec::new();
    files.extend(release_files(config, &got, &want, &mut prepare)?);
    files.push(self_file(host.as_ref(), config)?);
    files.extend(credential_files(
        ctx,
        args,
        host.as_ref(),
        config,
        &cluster,
        etcd_files,
        &mut prepare,
    )?);
    files.extend(plan::desired::rendered_files(
        host.as_ref(),
        config,
        got.version().as_deref(),
    )?);
    let (extra_owned, extra_dirs) = match &got {
        Got::Release {
            cached: Some((path, sha)),
            ..
        } => (
            vec![RecordedFile {
                path: path.clone(),
                sha256: sha.clone(),
                rendered: false,
            }],
            cache_dirs,
        ),
        _ => (Vec::new(), Vec::new()),
    };

    // The plan.
    let previous = record::read(host.as_ref(), &root)?;
    let inputs = Inputs {
        config,
        files,
        extra_owned,
        extra_dirs,
        calico_version: got.version(),
        legacy,
        start: !args.no_start,
        wait_timeout: args.wait_timeout,
        previous,
        journal: journal.as_ref(),
        restart: plan::install::Restart::All,
        expect_vsid: None,
    };
    let actions = plan::install::plan(host.as_ref(), &inputs)?;

    let version = got.version();
    let header = format!(
        "Install Calico {} ({} backend, {} datastore) into {root} on {}",
        version.as_deref().unwrap_or("(version unknown)"),
        config.backend,
        config.datastore,
        host_name(host.as_ref()),
    );
    ctx.printer.text(&header);
    for p in &prepare {
        ctx.printer.text(&format!("  - {p}"));
    }
    if actions.is_empty() {
        ctx.printer
            .text("Nothing to change: the node already matches this install.");
    } else if dry_run {
        super::print_plan(ctx, &actions);
    }
    let taint = args.taint_windows.then(node::windows_taint);
    if let Some(t) = &taint {
        let verb = if dry_run {
            "would taint"
        } else {
            "then taints"
        };
        ctx.printer.text(&format!(
            "  {verb} node {node_name} {}={}:{}",
            t.key,
            t.value.as_deref().unwrap_or_default(),
            t.effect
        ));
    }
    let actions_json = plan::to_json(&actions).context("cannot show the plan as JSON")?;
    let doc = |done: bool| {
        json!({
            "dry_run": dry_run,
            "calico_version": version,
            "install_root": root,
            "checks": results,
            "blocking": blocking,
            "prepare": prepare,
            "actions": actions_json,
            "changed": done && !actions.is_empty(),
        })
    };
    if dry_run {
        if !blocking.is_empty() {
            ctx.printer.warn(&format!(
                "install would stop at the checks: {} (pass --skip ID to accept one)",
                blocking.join(", ")
            ));
        }
        ctx.printer.note("--dry-run: nothing was changed");
        ctx.printer.json(&doc(false));
        return Ok(());
    }

    // Run it.
    let opts = plan::exec::Options {
        command: "install",
        journal_path,
        rollback: true,
        stop_timeout: args.service_timeout,
        start_timeout: args.service_timeout,
        previous: journal,
        routes_before: host
            .routes()
            .context("cannot read the routes before the install")?,
        record: None,
        logs_dir: Some(config.logs.dir.as_str().to_owned()),
        now: now(),
        cluster: None,
    };
    // From here the executor keeps or undoes the journal.
    if let Some(b) = begun.as_mut() {
        b.armed = false;
    }
    let result = super::execute_plan(ctx, host.as_ref(), &actions, opts);
    drop(staging);
    if let Err(e) = result {
        return Err(install_failed(e));
    }
    if let (Some(t), ClusterRead::Read(c, _)) = (&taint, &cluster) {
        let changed = node::ensure_taint(c, &node_name, t)?;
        ctx.printer.text(&format!(
            "node {node_name}: taint os=windows:NoSchedule {}",
            if changed { "added" } else { "already there" }
        ));
    } else if taint.is_some() {
        ctx.printer
            .warn("--taint-windows: no admin kubeconfig, so the node was not tainted");
    }
    if !actions.is_empty() {
        ctx.printer.text(&format!(
            "Installed: {} change(s); uninstall with 'calicoctl-win uninstall'",
            actions.len()
        ));
    }
    ctx.printer.json(&doc(true));
    Ok(())
}

/// Where an install unpacks the release: under the install root's cache (not the temp
/// directory, which a killed run would leave it in), after removing what killed runs left
/// there. A dry run writes nothing under the root and unpacks into the temp directory.
fn staging_dir(
    host: &dyn Host,
    cache_dir: &str,
    dry_run: bool,
) -> anyhow::Result<tempfile::TempDir> {
    if dry_run {
        return tempfile::Builder::new()
            .prefix("calicoctl-win-release-")
            .tempdir()
            .context("cannot create a temporary directory for the release");
    }
    let cache = host.local_path(cache_dir)?;
    std::fs::create_dir_all(&cache).with_context(|| format!("cannot create {cache_dir}"))?;
    remove_stale_staging(&cache)?;
    tempfile::Builder::new()
        .prefix(STAGING_PREFIX)
        .tempdir_in(&cache)
        .with_context(|| format!("cannot create a staging directory in {cache_dir}"))
}

/// How the directories a release is unpacked into start, in the cache.
pub(crate) const STAGING_PREFIX: &str = "staging-";

/// Removes the staging directories killed runs left in `cache` (a local path).
pub(crate) fn remove_stale_staging(cache: &std::path::Path) -> anyhow::Result<()> {
    let entries = match std::fs::read_dir(cache) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("cannot list {}", cache.display())),
    };
    for e in entries {
        let e = e.with_context(|| format!("cannot list {}", cache.display()))?;
        if e.file_name().to_string_lossy().starts_with(STAGING_PREFIX) && e.path().is_dir() {
            std::fs::remove_dir_all(e.path()).with_context(|| {
                format!("cannot remove the staging directory {}", e.path().display())
            })?;
        }
    }
    Ok(())
}

/// Writes the journal of a new install when the root or its cache does not exist yet, naming
/// them; `None` when both exist (nothing is created before the plan runs).
fn begin_journal(
    host: &dyn Host,
    path: &str,
    cache_dir: &str,
    config: &Config,
) -> anyhow::Result<Option<plan::exec::Journal>> {
    let new_dirs = record::vacant_parents(host, &join(cache_dir, "x"))?;
    if new_dirs.is_empty() {
        return Ok(None);
    }
    let journal = plan::exec::Journal {
        command: "install".into(),
        started: now(),
        owned_cache: new_dirs
            .iter()
            .any(|d| d.eq_ignore_ascii_case(cache_dir))
            .then(|| cache_dir.to_owned()),
        new_dirs,
        routes_before: host
            .routes()
            .context("cannot read the routes before the install")?,
        addresses_before: host
            .ipv4_addresses()
            .context("cannot read the addresses before the install")?,
        record: None,
        logs_dir: Some(config.logs.dir.as_str().to_owned()),
        entries: Vec::new(),
    };
    if let Err(e) = journal.save(host, path) {
        for d in journal.new_dirs.iter().rev() {
            let _ = host.remove_empty_dir(d);
        }
        return Err(e.context("install failed before changing anything"));
    }
    Ok(Some(journal))
}

/// An install's journal begun by this run, undone (with the cache it created) if the run
/// stops before its plan runs.
struct Begun<'a> {
    host: &'a dyn Host,
    journal: plan::exec::Journal,
    path: String,
    timeout: std::time::Duration,
    armed: bool,
}

impl Drop for Begun<'_> {
    fn drop(&mut self) {
        // A download that broke off keeps its partial file for the next run to resume, and
        // the journal that owns it with it.
        let resumable = self.journal.owned_cache.as_ref().is_some_and(|c| {
            self.host.local_path(c).is_ok_and(|local| {
                std::fs::read_dir(local).is_ok_and(|mut entries| {
                    entries.any(|e| {
                        e.is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".part"))
                    })
                })
            })
        });
        if self.armed && !resumable {
            let _ = plan::exec::undo_journal(self.host, &self.journal, &self.path, self.timeout);
        }
    }
}

/// The error of a failed run, with what the rollback did.
fn install_failed(e: plan::ExecError) -> anyhow::Error {
    let after = match &e.rollback_failures {
        Some(f) if f.is_empty() => {
            "every step done before it was undone; the node is as it was (an HNS network CalicoNode created while it ran stays)".to_owned()
        }
        Some(f) => format!(
            "undoing the steps done before it failed partly: {}; the journal is kept and the next install continues from it",
            f.join("; ")
        ),
        None => String::new(),
    };
    anyhow::Error::new(e).context(format!("install failed; {after}"))
}

fn host_name(host: &dyn Host) -> String {
    match host.kind() {
        HostKind::Windows => "this node".into(),
        HostKind::Simulated { dir, profile } => format!("the simulated {profile} host in {dir}"),
        HostKind::InMemory { profile } => format!("a throw-away simulated {profile} host"),
    }
}

/// Downloads (or takes) and extracts the release into `staging`. In a dry run a URL is only
/// checked: its download is part of the plan. A zip that fails a check is removed.
pub(crate) fn obtain_release(
    ctx: &mut Context,
    host: &dyn Host,
    want: &Want,
    cache_dir: &str,
    staging: &std::path::Path,
) -> anyhow::Result<Got> {
    let cache_local = host.local_path(cache_dir)?;
    let cached_name = want.source.file_name();
    if ctx.options.dry_run
        && let Source::Url(url) = &want.source
    {
        let cached = cache_local.join(&cached_name);
        let usable = want.sha256.as_ref().is_some_and(|s| {
            cached.is_file() && release::sha256_file(&cached).ok().as_ref() == Some(s)
        });
        if !usable {
            if let Err(e) = release::check_url(want, url) {
                ctx.printer.warn(&format!(
                    "{e}: the install itself would stop here ({})",
                    e.hint().unwrap_or_default()
                ));
            }
            return Ok(Got::Pending {
                url: url.clone(),
                version: want.version.clone(),
            });
        }
    }
    let mut progress = DownloadProgress::new(std::io::stderr().is_terminal(), false);
    let result = (|| -> Result<Got, release::ReleaseError> {
        let (obtained, x) = release::obtain(want, &cache_local, staging, &ctx.env, &mut progress)?;
        if let Some(why) = &obtained.extracted_again {
            ctx.log(&format!("extracted again from the finished zip: {why}"));
        }
        let what = want.source.show();
        let cleanup = |e| {
            if obtained.cached.is_some() {
                let _ = std::fs::remove_file(&obtained.path);
            }
            e
        };
        release::check_version(want, &x, &what).map_err(cleanup)?;
        let cached = obtained
            .cached
            .as_ref()
            .map(|_| (join(cache_dir, &cached_name), obtained.sha256.clone()));
        Ok(Got::Release {
            x,
            sha256: obtained.sha256,
            cached,
        })
    })();
    // A refused release's zip is gone; the cache and root this run created go with the
    // journal it began (`Begun`).
    let got = result?;
    if let Got::Release { x, sha256, .. } = &got {
        ctx.log(&format!(
            "release {} (sha256 {sha256}): Calico {}, {}",
            want.source.show(),
            x.version.as_deref().unwrap_or("of unknown version"),
            x.binary.file_name()
        ));
    }
    Ok(got)
}

/// calicoctl-win itself, which the services run. A simulated host cannot run this machine's
/// executable (its services run in-process), so it gets a stand-in with the version.
fn self_file(host: &dyn Host, c: &Config) -> anyhow::Result<DesiredFile> {
    let content = match host.kind() {
        HostKind::Windows => Content::Local(
            std::env::current_exe().context("cannot find calicoctl-win's own executable")?,
        ),
        _ => Content::Bytes(
            format!(
                "calicoctl-win {} (stand-in on a simulated host)\n",
                env!("CARGO_PKG_VERSION")
            )
            .into_bytes(),
        ),
    };
    DesiredFile::new(
        crate::plan::install::self_path(c),
        "calicoctl-win itself",
        content,
        false,
    )
}

/// The etcd TLS files from Calico's secret, checked (and against etcd when its endpoints
/// are known).
fn etcd_credentials(
    c: &crate::cluster::Cluster,
    config: &Config,
) -> anyhow::Result<etcd::EtcdTlsFiles> {
    let ns = facts::calico_namespace(c)?;
    let files = etcd::files_from_secret(c, &ns, "calico-etcd-secrets")?;
    etcd::check_files(&files)?;
    for e in &config.etcd.endpoints {
        etcd::health(&e.to_string(), &files, std::time::Duration::from_secs(10))?;
    }
    Ok(files)
}

/// calico-node's credentials: the kubeconfig (a valid one on the node is kept), or the etcd
/// files read from the cluster.
fn credential_files(
    ctx: &mut Context,
    args: &InstallArgs,
    host: &dyn Host,
    c: &Config,
    cluster: &ClusterRead,
    etcd_files: Option<etcd::EtcdTlsFiles>,
    prepare: &mut Vec<String>,
) -> anyhow::Result<Vec<DesiredFile>> {
    if c.datastore == Datastore::Etcdv3 {
        let Some(files) = etcd_files else {
            if c.etcd.tls.is_none() && !ctx.options.dry_run {
                prepare.push("etcd without TLS files (etcd.key_file and friends are unset, and no cluster to read calico-etcd-secrets from)".into());
            }
            return Ok(Vec::new());
        };
        let dir = c.install_root.join("etcd-tls");
        let out = etcd::TLS_FILES
            .iter()
            .zip(files.in_order())
            .map(|((_, name, _), bytes)| {
                DesiredFile::new(
                    dir.join(name).as_str().to_owned(),
                    "credentials: etcd TLS from calico-etcd-secrets",
                    Content::Bytes(bytes.to_vec()),
                    true,
                )
            })
            .collect::<Result<_, _>>()?;
        prepare.push("etcd TLS files from the calico-etcd-secrets secret, checked".into());
        return Ok(out);
    }
    let Some(path) = c.kubeconfig.as_ref().map(|p| p.as_str().to_owned()) else {
        return Ok(Vec::new());
    };
    let from = "credentials: calico-node's kubeconfig";
    let kept = host.read_file(&path)?.and_then(|k| {
        crate::cluster::credentials::kubeconfig_outlives(&k, args.token_keep_if_valid_for)
    });
    if kept.is_some() {
        let bytes = host
            .read_file(&path)?
            .with_context(|| format!("{path} disappeared while it was read"))?;
        prepare.push(format!(
            "keeps {path}: its token is valid for more than {}",
            crate::duration::show(args.token_keep_if_valid_for)
        ));
        return Ok(vec![DesiredFile::new(
            path,
            from,
            Content::Bytes(bytes),
            true,
        )?]);
    }
    let ClusterRead::Read(cl, _) = cluster else {
        if ctx.options.dry_run {
            prepare.push(format!(
                "would request a token for calico-node through the TokenRequest API and write {path} (needs the admin kubeconfig: --kubeconfig, $KUBECONFIG, ~/.kube/config or C:\\k\\config)"
            ));
            return Ok(vec![DesiredFile::new(path, from, Content::Pending, true)?]);
        }
        let why = match cluster {
            ClusterRead::Failed(e) => format!("the cluster cannot be read: {e}"),
            _ => "there is no admin kubeconfig".to_owned(),
        };
        return Err(UsageError::new(
            format!("install needs the cluster to get calico-node's kubeconfig ({path}), and {why}"),
            "pass --kubeconfig FILE (or set KUBECONFIG), or write the file first with 'calicoctl-win fetch kubeconfig'",
        )
        .into());
    };
    let ns = facts::calico_namespace(cl)?;
    if ctx.options.dry_run {
        prepare.push(format!(
            "would request a token for {ns}/calico-node lasting {} from {} and write {path}",
            crate::duration::show(args.token_lifetime),
            cl.server
        ));
        return Ok(vec![DesiredFile::new(path, from, Content::Pending, true)?]);
    }
    let issued = credentials::token_request(cl, &ns, "calico-node", args.token_lifetime)?;
    let ca = credentials::ca_for(cl, &ns, &issued)?;
    let text = render::kubeconfig::kubeconfig(&cl.server, &ca, issued.token.expose(), &ns);
    prepare.push(format!(
        "a token for {ns}/calico-node from {}, {}",
        cl.server,
        issued
            .expires
            .map_or("without expiry".to_owned(), |t| format!(
                "valid until {}",
                time_text(t)
            ))
    ));
    Ok(vec![DesiredFile::new(
        path,
        from,
        Content::Bytes(text.into_bytes()),
        true,
    )?])
}

/// The services of a legacy NSSM-based install (or one driven by PowerShell directly).
pub(crate) fn legacy_services(host: &dyn Host) -> anyhow::Result<Vec<InstalledService>> {
    let mut out = Vec::new();
    for name in LEGACY_SERVICES {
        if let Some(s) = host.service_query(name)?
            && checks::host::is_legacy_service(&s)
        {
            out.push(s);
        }
    }
    Ok(out)
}

pub(crate) fn legacy_error(legacy: &[InstalledService]) -> UsageError {
    UsageError::new(
        format!(
            "this node has Calico's legacy NSSM-based install (services {})",
            legacy
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        "pass --migrate-legacy to stop and delete its services before installing (its files in the install root stay), or remove it with its own uninstall-calico.ps1",
    )
}
