//! `install`: checks, release, credentials, rendered files, services, a running node; every
//! change planned first, journaled while it runs and undone if a step fails.

mod beginning;
mod document;
mod grant;
mod prepare;

use super::change::{Change, Changing, ChecksBlocked, Failed};
use crate::k8s_name::NodeName;
pub(crate) use beginning::remove_stale_staging;
use beginning::{Begun, begin_journal, stage};
pub(crate) use document::{FromOperator, Install};
use grant::{Journaling, grant_then_hand_over, refuse_earlier_grant};
use prepare::{Credentials, credentials, merged_config};

use super::common::{ClusterRead, check_skips, cluster_checks, read_cluster};
use crate::apply;
use crate::checks::{self, Blocked};
use crate::cli::InstallArgs;
use crate::cluster::renewal::{self, Grant};
use crate::cluster::{etcd, node};
use crate::context::Context;
use crate::host::{Host, HostKind};
use crate::installed::legacy::{legacy_error, legacy_services};
use crate::installed::record::{self, RecordedFile};
use crate::layout::join;
use crate::plan::install::{DesiredFile, Got, Inputs, release_files};
use crate::plan::{self};
use crate::release::{self};
use anyhow::Context as _;

pub fn run(args: &InstallArgs, ctx: &mut Context) -> anyhow::Result<()> {
    run_within(args, ctx, None)
}

/// What a command installing within its own change (`migrate from-operator`) adds, so that
/// every check of both runs before either changes anything.
pub(crate) struct Within<'a> {
    /// The cluster as install's plan will find it (the caller's label), for the checks.
    pub facts: &'a dyn Fn(&mut crate::cluster::facts::ClusterFacts),
    /// The command's own keys added to install's JSON document.
    pub doc: Option<FromOperator>,
    /// Runs after the checks and staging, before install's plan (not in a dry run).
    pub before: &'a mut Step<'a, ()>,
    /// Runs after install's plan succeeded; its warnings go into the document.
    pub after: &'a mut Step<'a, Vec<String>>,
}

/// A step of the enclosing command's, run on install's host.
pub(crate) type Step<'a, T> = dyn FnMut(&mut Context, &dyn Host) -> anyhow::Result<T> + 'a;

/// `install`, within another command's change when `within` says how.
pub(crate) fn run_within(
    args: &InstallArgs,
    ctx: &mut Context,
    mut within: Option<Within>,
) -> anyhow::Result<()> {
    let mut want = super::flags::release_want(&args.release)?;
    check_skips(&args.skip)?;
    if args.detach {
        return super::detach::start(ctx, "install");
    }
    let host = ctx.open_host_to_change("install")?;
    let base = ctx.load_config()?;

    // The legacy NSSM install is replaced only when asked.
    let legacy = legacy_services(host.as_ref())?;
    if !legacy.is_empty() && !args.migrate_legacy {
        return Err(legacy_error(&legacy).into());
    }

    // Checks: host, then cluster; nothing changes when one blocks.
    let node_name = base.config.node.name.clone();
    let mut cluster = read_cluster(false, ctx, &node_name, crate::cluster::facts::Rights::Ask)?;
    if let (Some(w), ClusterRead::Read(_, f)) = (&within, &mut cluster) {
        (w.facts)(f);
    }
    let (loaded, etcd_files) = merged_config(ctx, &cluster, base)?;
    let config = &loaded.config;

    // The cluster's version unless one was chosen: an older one refused unless allowed.
    let cluster_version = cluster.facts().and_then(|f| f.calico_version.clone());
    want.follow_cluster(cluster_version.as_deref());
    if let (true, Some(asked), None) = (want.chosen, &want.version, &args.release.release_zip) {
        let (what, of_cluster) = (
            format!("--calico-version {asked}"),
            cluster_version.as_deref(),
        );
        if let Some(w) = release::against_cluster(&what, asked, of_cluster, args.allow_downgrade)? {
            ctx.printer.warn(&w);
        }
    }

    let version = want.version.clone().or_else(|| cluster_version.clone());
    let (results, blocking) = run_checks(
        ctx,
        host.as_ref(),
        args,
        (&legacy, version.as_deref()),
        &cluster,
        &loaded,
    )?;
    let root = config.root();
    let previous = record::read(host.as_ref(), &root)?;
    let install_id = record::install_id(previous.as_ref())?;
    let journal_path = root.journal();
    let uplink = super::common::uplink(host.as_ref(), config, &cluster, previous.as_ref())?;
    let change = Change::begin(ctx, host.as_ref(), "install", &root, journal_path)?;
    refuse_network_changes(host.as_ref(), previous.as_ref(), config, &uplink)?;
    let checked = Checked {
        config_hash: crate::config::fleet_hash(&loaded),
        install_id,
        want,
        legacy,
        cluster,
        cluster_version,
        etcd_files,
        results,
        blocking,
        node_name,
        previous,
        change,
        uplink,
    };
    install(ctx, args, config, checked, within.as_mut())
}

/// What the checks found and what is installed: what the plan is made from.
struct Checked<'h> {
    /// The hash of the fleet-wide configuration (`config::fleet_hash`).
    config_hash: crate::config::ConfigHash,
    /// The install's id: the previous record's, else a new one (`record::install_id`).
    install_id: String,
    want: release::Want,
    legacy: Vec<crate::host::InstalledService>,
    cluster: ClusterRead,
    cluster_version: Option<String>,
    etcd_files: Option<etcd::EtcdTlsFiles>,
    results: Vec<checks::Check>,
    blocking: Vec<&'static str>,
    node_name: NodeName,
    previous: Option<record::InstallRecord>,
    /// The host, the root and the journal of an interrupted run, continued.
    change: Change<'h>,
    /// The adapter the External network binds, and why.
    uplink: crate::host::uplink::Choice,
}

/// The release, the files and the plan after the checks passed: shown, then run (or, in a dry
/// run, only shown).
fn install(
    ctx: &mut Context,
    args: &InstallArgs,
    config: &crate::config::Config,
    mut c: Checked,
    mut within: Option<&mut Within>,
) -> anyhow::Result<()> {
    let host = c.change.host;
    let dry_run = ctx.options.dry_run;
    let cache_dir = c.change.root.cache();
    let cache_dirs = host.missing_parents(&join(&cache_dir, "x"))?;
    let early = before_any_change(ctx, args, config, &mut c)?;
    let (mut journal, mut begun) = begin(host, args, config, &mut c, &cache_dir, dry_run)?;
    let (staging, got) = stage(ctx, host, &c.want, &cache_dir, &mut begun)?;
    let mut credentials = staged(ctx, args, config, &mut c, (&got, early, journal.as_ref()))?;

    let mut prepare: Vec<String> = Vec::new();
    let files = desired_files(host, config, &c, (&got, &mut credentials), &mut prepare)?;
    let (extra_owned, extra_dirs) = cache_owned(&got, cache_dirs);
    let renewal = credentials.renewal.take();

    // The plan, from the journal as it is now (the grant's objects are journaled in it later).
    let seen = journal.clone();
    let mut inputs = Inputs {
        config,
        files,
        extra_owned,
        extra_dirs,
        calico_version: got.version(),
        cni_version: got.chosen_cni_version(operator_cni_version(&c.cluster)),
        legacy: std::mem::take(&mut c.legacy),
        start: !args.no_start,
        wait_timeout: args.wait_timeout,
        renewal: with_earlier_uids(renewal.clone(), c.previous.as_ref()),
        previous: c.previous.take(),
        journal: seen.as_ref(),
        restart: plan::install::Restart::All,
        expect_vsid: None,
        config_hash: Some(c.config_hash.clone()),
        install_id: Some(c.install_id.clone()),
        uplink: c.uplink.adapter.clone(),
    };
    let actions = plan::install::plan(host, &inputs)?;
    let version = got.version();
    let taint = args.taint_windows.then(node::windows_taint);
    let shown = Shown {
        version: version.as_deref(),
        config,
        prepare: &prepare,
        actions: &actions,
        taint: taint.as_ref(),
        checked: &c,
    };
    let extra = within.as_mut().and_then(|w| w.doc.take());
    let refused = credentials.refused.take();
    let Some(doc) = present(ctx, &c.change, &shown, extra, refused)? else {
        return Ok(());
    };
    let run = grant_then_hand_over(
        ctx,
        (host, &c.cluster, &c.node_name),
        (&mut inputs, &actions),
        within.as_deref_mut(),
        Journaling {
            journal: &mut journal,
            begun: &mut begun,
            path: &c.change.journal_path,
            timeout: args.service_timeout,
        },
    )?;
    // A rollback deletes the grant's objects it made (journaled); past the point of no return
    // the journal and the grant stay for a rerun.
    let result = execute(ctx, (&c.change, &c.cluster), args, config, &run, journal);
    if let Err(e) = staging.remove() {
        ctx.printer.warn(&format!("{e:#}"));
    }
    result?;
    let at = (&c.change, &c.cluster, &c.node_name);
    finish(ctx, at, taint.as_ref(), (actions.len(), args), doc, within)
}

/// The grant with the uids an earlier install recorded (`making::ensure` keeps those objects),
/// so the record stays unchanged. (In `Inputs` before `previous` is taken: fields run in order.)
fn with_earlier_uids(g: Option<Grant>, previous: Option<&record::InstallRecord>) -> Option<Grant> {
    let mut g = g?;
    if let Some(e) = previous.and_then(|p| p.renewal.as_ref())
        && (&g.namespace, &g.name) == (&e.namespace, &e.name)
    {
        g.uids = e.uids.clone();
        g.uids_kept = e.uids_kept;
    }
    Some(g)
}

/// The plan with the grant's `uids` in its record when it records others (`planned`): only
/// the record's write is planned again; a host changed since the plan (another action) is
/// refused before any change.
fn record_uids(
    host: &dyn Host,
    inputs: &mut Inputs,
    actions: &mut Vec<apply::Action>,
    (planned, uids): (Option<renewal::GrantUids>, renewal::GrantUids),
) -> anyhow::Result<()> {
    let Some(g) = inputs
        .renewal
        .as_mut()
        .filter(|g| planned.as_ref() != Some(&uids) || !g.uids_kept)
    else {
        return Ok(());
    };
    g.uids = uids;
    g.uids_kept = true;
    let record = inputs.config.root().record();
    let is_record =
        |a: &apply::Action| matches!(a, apply::Action::WriteFile { path, .. } if *path == record);
    // `Debug` shows every field but a file's bytes, which its sha256 stands for.
    let others = |p: &[apply::Action]| -> Vec<String> {
        p.iter()
            .filter(|a| !is_record(a))
            .map(|a| format!("{a:?}"))
            .collect()
    };
    let mut again = plan::install::plan(host, inputs)?;
    if others(&again) != others(actions) {
        anyhow::bail!(
            "the host changed while the install was being prepared (the plan shown is no longer the one to run); nothing of it changed: run install again"
        );
    }
    let mut run: Vec<apply::Action> = actions.drain(..).filter(|a| !is_record(a)).collect();
    if let Some(at) = again.iter().position(is_record) {
        run.insert(at, again.swap_remove(at));
    }
    *actions = run;
    Ok(())
}

/// The enclosing command's steps before install's (a failure undoes install's `Begun`); then
/// the executor keeps or undoes the journal.
fn hand_over(
    ctx: &mut Context,
    host: &dyn Host,
    within: Option<&mut Within>,
    begun: &mut Option<Begun>,
) -> anyhow::Result<()> {
    if let Some(w) = within {
        (w.before)(ctx, host)?;
    }
    if let Some(b) = begun.as_mut() {
        b.armed = false;
    }
    Ok(())
}

/// After a successful run: the node tainted (when asked) and annotated, the result printed.
fn finish(
    ctx: &mut Context,
    (change, cluster, node_name): (&Change, &ClusterRead, &NodeName),
    taint: Option<&k8s_openapi::api::core::v1::Taint>,
    (changes, args): (usize, &InstallArgs),
    mut doc: Changing<Install>,
    within: Option<&mut Within>,
) -> anyhow::Result<()> {
    // `--taint-windows`: the node tainted (once), or a warning without a cluster to do it with.
    if let (Some(t), ClusterRead::Read(c, _)) = (taint, cluster) {
        let changed = node::ensure_taint(c, node_name, t)?;
        ctx.printer.text(&format!(
            "node {node_name}: taint os=windows:NoSchedule {}",
            if changed { "added" } else { "already there" }
        ));
    } else if taint.is_some() {
        ctx.printer
            .warn("--taint-windows: no admin kubeconfig, so the node was not tainted");
    }
    if let Some(c) = cluster.cluster() {
        change.annotate(ctx, Some(c), node_name);
    }
    if let Some(w) = within {
        let warnings = (w.after)(ctx, change.host)?;
        doc = doc.ran(warnings);
    }
    if changes > 0 {
        ctx.printer.text(&format!(
            "Installed: {changes} change(s); uninstall with 'calicoctl-win uninstall'"
        ));
    }
    doc.changed |= changes > 0;
    let c = cluster.cluster();
    let restarted = super::verify_restarted::Restarted::of(&doc);
    let verify = (args.verify.with(), "installed", restarted);
    super::verify::print_verified(ctx, verify, c, node_name, doc)
}

/// The journal this run goes on with: an interrupted run's, or for a fresh install (no dry
/// run, no record) a new one naming the directories it creates, written first, so a run
/// killed in its download leaves them owned; until the plan runs a failure undoes it
/// (`Begun`). On an installed node nothing is claimed, so a refused run changes nothing.
fn begin<'a>(
    host: &'a dyn Host,
    args: &InstallArgs,
    config: &crate::config::Config,
    c: &mut Checked,
    cache_dir: &str,
    dry_run: bool,
) -> anyhow::Result<(Option<apply::journal::Journal>, Option<Begun<'a>>)> {
    if c.change.journal.is_some() || dry_run || c.previous.is_some() {
        return Ok((c.change.journal.take(), None));
    }
    let path = &c.change.journal_path;
    let journal = begin_journal(host, path, cache_dir, config)?;
    let begun = Begun::armed(host, journal.clone(), path, args.service_timeout);
    Ok((journal, begun))
}

/// A zip given on the command line whose version is not the cluster's: a warning (returned),
/// or (older, without `--allow-downgrade`) a refusal.
fn given_release_against_cluster(
    args: &InstallArgs,
    want: &release::Want,
    got: &Got,
    cluster_version: Option<&str>,
) -> anyhow::Result<Option<String>> {
    let (Some(_), Some(found)) = (&args.release.release_zip, got.version()) else {
        return Ok(None);
    };
    let what = want.source.show();
    Ok(release::against_cluster(
        &what,
        &found,
        cluster_version,
        args.allow_downgrade,
    )?)
}

/// What can refuse a real run before its first change, in the dry run's order: plain HTTP,
/// the release (`look`), calicoctl-win's file and the credentials; the download's checksum
/// (a `SHA256SUMS` beside it when none given) before the credentials if the cluster was read.
fn before_any_change(
    ctx: &mut Context,
    args: &InstallArgs,
    config: &crate::config::Config,
    c: &mut Checked,
) -> anyhow::Result<Option<Credentials>> {
    if ctx.options.dry_run {
        return Ok(None);
    }
    release::refuse_plain_http(&c.want)?;
    // The release as the dry run sees it, judged as the staged one is (again later): a refused
    // release or a file that cannot be made refuses with nothing staged and no journal begun.
    let (host, cache) = (c.change.host, c.change.root.cache());
    let (_staging, got) = beginning::look(ctx, host, &c.want, (&cache, c.change.holds_lock()))?;
    given_release_against_cluster(args, &c.want, &got, c.cluster_version.as_deref())?;
    release_and_rendered(host, config, c, &got, &mut Vec::new())?;
    // Without the cluster its refusal comes first, as in the dry run (which only warns of
    // the checksum).
    let read = matches!(c.cluster, ClusterRead::Read(..));
    if read {
        release::check_download(&mut c.want, &ctx.env)?;
    }
    let made = credentials_of(ctx, args, config, c)?;
    // A cut-off run's grant this run can neither make nor remove refuses it (dry run: `staged`).
    let journal = c.change.journal.as_ref();
    let g = with_earlier_uids(made.renewal.clone(), c.previous.as_ref());
    refuse_earlier_grant(journal, g.as_ref(), &c.cluster)?;
    if !read {
        release::check_download(&mut c.want, &ctx.env)?;
    }
    Ok(Some(made))
}

/// After staging: the release judged again, and a dry run's credentials made (a real run's
/// were, `before_any_change`).
fn staged(
    ctx: &mut Context,
    args: &InstallArgs,
    config: &crate::config::Config,
    c: &mut Checked,
    (got, early, journal): (&Got, Option<Credentials>, Option<&apply::journal::Journal>),
) -> anyhow::Result<Credentials> {
    let cluster_version = c.cluster_version.as_deref();
    if let Some(w) = given_release_against_cluster(args, &c.want, got, cluster_version)? {
        ctx.printer.warn(&w);
    }
    match early {
        Some(made) => Ok(made),
        None => {
            let made = credentials_of(ctx, args, config, c)?;
            let g = with_earlier_uids(made.renewal.clone(), c.previous.as_ref());
            refuse_earlier_grant(journal, g.as_ref(), &c.cluster)?;
            Ok(made)
        }
    }
}

/// The cached zip and the cache directories this run made, which the install owns too.
fn cache_owned(got: &Got, cache_dirs: Vec<String>) -> (Vec<RecordedFile>, Vec<String>) {
    match got {
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
    }
}

/// The end of a dry run: it exits as the real run would (3 at the checks, or its refusal).
fn end_dry_run(
    ctx: &mut Context,
    blocking: &[&'static str],
    doc: &Changing<Install>,
    refused: Option<anyhow::Error>,
) -> anyhow::Result<()> {
    if !blocking.is_empty() {
        ctx.printer.warn(&format!(
            "install would stop at the checks: {} (pass --skip ID to accept one)",
            blocking.join(", ")
        ));
    }
    ctx.printer.note("--dry-run: nothing was changed");
    if !blocking.is_empty() {
        ctx.printer.json(doc);
        return Err(Blocked {
            ids: blocking.to_vec(),
        }
        .into());
    }
    let Some(refused) = refused else {
        ctx.printer.json(doc);
        return Ok(());
    };
    // The refusal in the document too: stdout alone says why the dry run exits so.
    let e = crate::commands::known_errors::failure(refused);
    ctx.printer.json_refused(doc, &e);
    Err(e.error)
}

/// Runs the plan, journaled, rolled back on failure.
fn execute(
    ctx: &mut Context,
    (change, cluster): (&Change, &ClusterRead),
    args: &InstallArgs,
    config: &crate::config::Config,
    actions: &[apply::Action],
    journal: Option<apply::journal::Journal>,
) -> anyhow::Result<()> {
    let opts = apply::Options {
        routes_before: change
            .host
            .routes()
            .context("cannot read the routes before the install")?,
        logs_dir: Some(config.logs.dir.as_str().to_owned()),
        // For the rollback only: it deletes what the run made of the grant.
        ..change.options(true, args.service_timeout, journal, cluster.cluster())
    };
    // The executor has shown its warnings; they are not the result.
    match change.run(ctx, actions, opts)? {
        Ok(_warnings) => {
            change.keep_file_stats(ctx);
            Ok(())
        }
        // What the rollback did and what still differs.
        Err(failed) => {
            let Failed { error: e, left } = *failed;
            let measured = left.unwrap_or_default();
            let after = match &e.rollback_failures {
                Some(f) if f.is_empty() => {
                    format!("every step done before it was undone; {measured}")
                }
                Some(f) => format!(
                    "undoing the steps done before it failed partly: {}; the journal is kept and the next install continues from it; {measured}",
                    f.join("; ")
                ),
                None => String::new(),
            };
            let logs = e.kept_logs.as_ref().map_or(String::new(), |d| {
                format!("; the services' logs, which say why, were moved to {d}")
            });
            // What changed since the run made it (a rule beside an administrator's) stays.
            let kept: String = e.rollback_kept.iter().map(|k| format!("; {k}")).collect();
            Err(anyhow::Error::new(e).context(format!("install failed; {after}{kept}{logs}")))
        }
    }
}

/// The checks, host then cluster, shown as a table; a blocking failure stops a real run
/// (exit 3) with nothing changed.
fn run_checks(
    ctx: &mut Context,
    host: &dyn Host,
    args: &InstallArgs,
    (legacy, version): (&[crate::host::InstalledService], Option<&str>),
    cluster: &ClusterRead,
    loaded: &crate::config::Loaded,
) -> anyhow::Result<(Vec<checks::Check>, Vec<&'static str>)> {
    super::common::check_known_issue_ids(&args.allow_known_issue)?;
    let mut snapshot = checks::host::snapshot(host);
    snapshot
        .calico_services
        .retain(|s| !legacy.iter().any(|l| l.name == s.name));
    let mut results = checks::host::evaluate(&snapshot, &loaded.config);
    // Install protects them itself, so a finding is said, not blocking; but a junction on the
    // way is refused (protecting it would protect where it points).
    let mut access = checks::host::dir_access(host, &loaded.config);
    if access.verdict == checks::Verdict::Fail
        && crate::installed::protection::reparse_points(host, &loaded.config).is_empty()
    {
        access.verdict = checks::Verdict::Warn;
        access.remedy =
            Some("install gives each the protected access list before it writes there".into());
    }
    results.push(access);
    results.extend(super::common::adapter_checks(
        host,
        &snapshot,
        cluster,
        &loaded.config,
    ));
    results.extend(cluster_checks(cluster, loaded, version));
    results.push(checks::host::known_issues(
        &snapshot,
        &loaded.config,
        version,
        &args.allow_known_issue,
    ));
    checks::accept_skipped(&mut results, &args.skip);
    let blocking = checks::blocking(&results);
    ctx.printer.text(checks::table(&results).trim_end());
    ctx.printer.text("");
    if !blocking.is_empty() && !ctx.options.dry_run {
        ctx.printer.json(&ChecksBlocked {
            checks: &results,
            blocking: &blocking,
            changed: false,
        });
        return Err(Blocked { ids: blocking }.into());
    }
    if !ctx.options.dry_run {
        // Even with dir-access skipped: writing through a junction writes where its maker chose.
        crate::installed::protection::refuse_reparse_points(host, &loaded.config)?;
    }
    Ok((results, blocking))
}

/// What the plan shows before it runs.
struct Shown<'a> {
    version: Option<&'a str>,
    config: &'a crate::config::Config,
    prepare: &'a [String],
    actions: &'a [apply::Action],
    taint: Option<&'a k8s_openapi::api::core::v1::Taint>,
    /// The root, the node, the checks and the adapter chosen.
    checked: &'a Checked<'a>,
}

/// Shows the plan; the document to print once it ran, or `None` when a dry run ends here.
fn present<'a>(
    ctx: &mut Context,
    change: &Change,
    p: &Shown<'a>,
    from_operator: Option<FromOperator>,
    refused: Option<anyhow::Error>,
) -> anyhow::Result<Option<Changing<Install<'a>>>> {
    let dry_run = ctx.options.dry_run;
    let on = match change.host.kind() {
        HostKind::Windows => "this node".into(),
        HostKind::Simulated { dir, profile } => format!("the simulated {profile} host in {dir}"),
        HostKind::InMemory { profile } => format!("a throw-away simulated {profile} host"),
    };
    ctx.printer.text(&format!(
        "Install Calico {} ({} backend, {} datastore) into {} on {on}",
        p.version.unwrap_or("(version unknown)"),
        p.config.backend,
        p.config.datastore,
        p.checked.change.root,
    ));
    for line in p.prepare {
        ctx.printer.text(&format!("  - {line}"));
    }
    if p.actions.is_empty() {
        ctx.printer
            .text("Nothing to change: the node already matches this install.");
    } else if dry_run {
        super::change::print_steps(ctx, "Plan:", p.actions);
    }
    if let Some(t) = p.taint {
        let verb = if dry_run {
            "would taint"
        } else {
            "then taints"
        };
        ctx.printer.text(&format!(
            "  {verb} node {} {}={}:{}",
            p.checked.node_name,
            t.key,
            t.value.as_deref().unwrap_or_default(),
            t.effect
        ));
    }
    let own = Install {
        calico_version: p.version,
        install_root: p.checked.change.root.as_str(),
        checks: &p.checked.results,
        blocking: &p.checked.blocking,
        prepare: p.prepare,
        uplink: &p.checked.uplink,
        from_operator,
    };
    let doc = Changing::plan(dry_run, own, p.actions);
    if dry_run {
        end_dry_run(ctx, &p.checked.blocking, &doc, refused)?;
        return Ok(None);
    }
    Ok(Some(doc))
}

/// Every file install puts on the node (release, calicoctl-win, credentials, rendered);
/// `prepare` says how they and the grant were obtained.
fn desired_files(
    host: &dyn Host,
    config: &crate::config::Config,
    c: &Checked,
    (got, credentials): (&Got, &mut Credentials),
    prepare: &mut Vec<String>,
) -> anyhow::Result<Vec<DesiredFile>> {
    let (mut files, rendered) = release_and_rendered(host, config, c, got, prepare)?;
    files.append(&mut credentials.files);
    prepare.append(&mut credentials.prepare);
    files.extend(rendered);
    prepare.push(c.uplink.describe());
    prepare.append(&mut credentials.renewal_prepare);
    Ok(files)
}

/// calicoctl-win itself, calico-node's credentials and the grant ([`credentials`]).
fn credentials_of(
    ctx: &mut Context,
    args: &InstallArgs,
    config: &crate::config::Config,
    c: &mut Checked,
) -> anyhow::Result<Credentials> {
    let etcd_files = c.etcd_files.take();
    let at = (&c.cluster, &c.node_name);
    credentials(ctx, args, (c.change.host, config), at, etcd_files)
}

/// The release's files and the files rendered for the release `got`.
fn release_and_rendered(
    host: &dyn Host,
    config: &crate::config::Config,
    c: &Checked,
    got: &Got,
    prepare: &mut Vec<String>,
) -> anyhow::Result<(Vec<DesiredFile>, Vec<DesiredFile>)> {
    let files = release_files(host, config, got, &c.want, prepare)?;
    let (version, cni) = (
        got.version(),
        got.chosen_cni_version(operator_cni_version(&c.cluster)),
    );
    let release = (version.as_deref(), cni.as_deref());
    let rendered =
        (c.cluster).rendered_files(host, config, release, c.uplink.adapter.as_deref())?;
    Ok((files, rendered))
}

/// The `cniVersion` of the operator's Windows CNI config, where the cluster has an
/// Installation.
fn operator_cni_version(cluster: &ClusterRead) -> Option<&str> {
    cluster
        .facts()?
        .installation
        .as_ref()
        .map(|i| i.cni_version())
}

/// Refuses a network setting HNS cannot change in place (VNI, MAC prefix, adapter, backend)
/// while the Calico network exists: CalicoNode would silently reuse the old network.
fn refuse_network_changes(
    host: &dyn Host,
    previous: Option<&record::InstallRecord>,
    config: &crate::config::Config,
    uplink: &crate::host::uplink::Choice,
) -> anyhow::Result<()> {
    let Some(old) = previous.and_then(|p| p.network.as_ref()) else {
        return Ok(());
    };
    let old = plan::desired::with_current_uplink(host, old);
    let changes = crate::plan::reconfigure::network_changes(
        Some(&old),
        &record::NetworkSettings::of(config, uplink.adapter.as_deref()),
        None,
    );
    if changes.is_empty() {
        return Ok(());
    }
    let exists = match host.hns_networks() {
        Ok(networks) => networks
            .iter()
            .any(|n| n.name == crate::layout::CALICO_NETWORK),
        Err(crate::host::HostError::Unavailable { .. }) => false,
        Err(e) => return Err(e.into()),
    };
    if !exists {
        return Ok(());
    }
    Err(crate::error::UsageError::new(
        format!(
            "the node is installed with other network settings ({}), which the existing Calico HNS network keeps: install cannot change them",
            changes.join("; ")
        ),
        "run 'calicoctl-win reconfigure --drain' with this config: it drains the node and makes the network again",
    )
    .of_kind(crate::error::Kind::NeedsDrain)
    .into())
}
