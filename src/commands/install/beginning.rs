//! Install's beginning that loses nothing: the journal written first, the staging directory
//! in the root's cache (a killed run's removed by the next), the release obtained into it.

use crate::apply;
use crate::config::Config;
use crate::context::Context;
use crate::duration::now;
use crate::host::{Host, ReleaseDisk};
use crate::layout::{PARTIAL_SUFFIX, STAGING_PREFIX, join};
use crate::output::DownloadProgress;
use crate::plan::install::Got;
use crate::release::{self, Local, Place, ReadOnly, Source, Want};
use anyhow::Context as _;
use std::io::IsTerminal;

/// Where an install unpacks the release.
pub(super) enum Staging<'h> {
    /// A dry run's, in the temporary directory; a real run's look's in the state directory.
    Local {
        /// Removed when dropped.
        _dir: tempfile::TempDir,
        path: String,
    },
    /// In the root's cache (removed when dropped, or by the next run after a kill).
    OnNode(ReleaseDisk<'h>, String),
}

impl Staging<'_> {
    /// The staging directory on its disk.
    pub fn place(&self) -> Place<'_> {
        match self {
            Self::Local { path, .. } => Place::new(&Local, path),
            Self::OnNode(disk, dir) => Place::new(disk, dir),
        }
    }

    /// Removes the directory on the node now, or says why not.
    pub fn remove(mut self) -> anyhow::Result<()> {
        let Self::OnNode(disk, dir) = &mut self else {
            return Ok(());
        };
        let dir = std::mem::take(dir);
        disk.0.remove_tree(&dir).map(drop).with_context(|| {
            format!("cannot remove the staging directory {dir} (the next install or uninstall removes it)")
        })
    }
}

impl Drop for Staging<'_> {
    fn drop(&mut self) {
        if let Self::OnNode(disk, dir) = self
            && !dir.is_empty()
        {
            let _ = disk.0.remove_tree(dir);
        }
    }
}

/// The staging directory, made after removing what killed runs left in the cache.
fn staging_dir<'h>(
    host: &'h dyn Host,
    cache_dir: &str,
    dry_run: bool,
) -> anyhow::Result<Staging<'h>> {
    if dry_run {
        let dir = tempfile::Builder::new()
            .prefix("calicoctl-win-release-")
            .tempdir()
            .context("cannot create a temporary directory for the release")?;
        let path = Local::name(dir.path())?;
        return Ok(Staging::Local { _dir: dir, path });
    }
    host.create_dir(cache_dir)
        .with_context(|| format!("cannot create {cache_dir}"))?;
    shield_cache(host, cache_dir)?;
    remove_stale_staging(host, cache_dir)?;
    // The host lock is held: no other run makes one at the same time.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir = join(
        cache_dir,
        &format!("{STAGING_PREFIX}{}-{nanos}", std::process::id()),
    );
    let made = host
        .create_dir(&dir)
        .with_context(|| format!("cannot create a staging directory in {cache_dir}"))?;
    anyhow::ensure!(made, "the staging directory {dir} exists already");
    Ok(Staging::OnNode(ReleaseDisk(host), dir))
}

/// The cache is protected when others may still change its root (the plan protects a root
/// that was there only as its first step), so nobody swaps a staged binary before then.
fn shield_cache(host: &dyn Host, cache_dir: &str) -> anyhow::Result<()> {
    let Some((root, _)) = cache_dir.rsplit_once('\\') else {
        return Ok(());
    };
    let weak = match host.security(root)? {
        None => false,
        Some(sddl) => crate::host::acl::parse(&sddl).map_or(true, |d| {
            !crate::host::acl::writers_but(
                &d,
                crate::installed::protection::elevated_user(host).as_deref(),
            )
            .is_empty()
        }),
    };
    if weak {
        host.set_security(cache_dir, crate::host::acl::PROTECTED_DIR)
            .with_context(|| {
                format!("cannot protect {cache_dir} before staging the release in it")
            })?;
    }
    Ok(())
}

/// Removes the staging directories killed runs left in `cache` (a local path).
pub(crate) fn remove_stale_staging(host: &dyn Host, cache_dir: &str) -> anyhow::Result<()> {
    let entries = host.list_dir(cache_dir)?.unwrap_or_default();
    for e in entries
        .iter()
        .filter(|e| e.is_dir && e.name.starts_with(STAGING_PREFIX))
    {
        let path = join(cache_dir, &e.name);
        let removed = host
            .remove_tree(&path)
            .with_context(|| format!("cannot remove the staging directory {path}"))?;
        anyhow::ensure!(
            removed,
            "the staging directory {path} was listed but could not be found to remove"
        );
    }
    Ok(())
}

/// Writes the journal of a new install when the root or its cache does not exist yet, naming
/// them; `None` when both exist (nothing is created before the plan runs).
pub(super) fn begin_journal(
    host: &dyn Host,
    path: &str,
    cache_dir: &str,
    config: &Config,
) -> anyhow::Result<Option<apply::journal::Journal>> {
    let new_dirs = host.vacant_parents(&join(cache_dir, "x"))?;
    if new_dirs.is_empty() {
        return Ok(None);
    }
    let mut journal = fresh_journal(host, config, new_dirs)?;
    journal.owned_cache = journal
        .new_dirs
        .iter()
        .any(|d| d.eq_ignore_ascii_case(cache_dir))
        .then(|| cache_dir.to_owned());
    // A root made now is protected before the release is staged in it.
    let root = path.rsplit_once('\\').map_or(path, |(r, _)| r);
    let made_root = journal
        .new_dirs
        .iter()
        .any(|d| d.eq_ignore_ascii_case(root));
    let protected = if made_root {
        host.create_dir(root)
            .and_then(|_| host.set_security(root, crate::host::acl::PROTECTED_DIR))
            .with_context(|| format!("cannot protect the new install root {root}"))
    } else {
        Ok(())
    };
    if let Err(e) = protected.and_then(|()| journal.save(host, path)) {
        for d in journal.new_dirs.iter().rev() {
            let _ = host.remove_empty_dir(d);
        }
        return Err(e.context("install failed before changing anything"));
    }
    Ok(Some(journal))
}

/// A new install journal naming `new_dirs`, with the host's routes and addresses now.
pub(super) fn fresh_journal(
    host: &dyn Host,
    config: &Config,
    new_dirs: Vec<String>,
) -> anyhow::Result<apply::journal::Journal> {
    Ok(apply::journal::Journal {
        command: "install".into(),
        started: now(),
        new_dirs,
        routes_before: host
            .routes()
            .context("cannot read the routes before the install")?,
        addresses_before: host
            .ipv4_addresses()
            .context("cannot read the addresses before the install")?,
        record: None,
        logs_dir: Some(config.logs.dir.as_str().to_owned()),
        owned_cache: None,
        grant: None,
        entries: Vec::new(),
    })
}

/// An install's journal begun by this run, undone (with the cache it created) if the run
/// stops before its plan runs.
pub(super) struct Begun<'a> {
    pub host: &'a dyn Host,
    pub journal: apply::journal::Journal,
    pub path: String,
    pub timeout: std::time::Duration,
    pub armed: bool,
}

impl<'a> Begun<'a> {
    /// Undoes the beginning `journal` records if the run stops before its plan runs.
    pub fn armed(
        host: &'a dyn Host,
        journal: Option<apply::journal::Journal>,
        path: &str,
        timeout: std::time::Duration,
    ) -> Option<Self> {
        journal.map(|journal| Self {
            host,
            journal,
            path: path.to_owned(),
            timeout,
            armed: true,
        })
    }

    /// A broken-off download keeps its partial file, and its journal, for the next run.
    fn resumable(&self) -> bool {
        self.journal.owned_cache.as_ref().is_some_and(|c| {
            self.host.list_dir(c).is_ok_and(|entries| {
                entries
                    .unwrap_or_default()
                    .iter()
                    .any(|e| !e.is_dir && e.name.ends_with(PARTIAL_SUFFIX))
            })
        })
    }

    /// The run stopped before its plan: what it began is undone, `e` saying what is left.
    pub fn stop(mut self, e: anyhow::Error) -> anyhow::Error {
        self.armed = false;
        if self.resumable() {
            return e.context(
                "install failed before its plan ran; the partial download stays in the cache for the next run to resume",
            );
        }
        let left = apply::undo::undo_journal(self.host, &self.journal, &self.path, self.timeout);
        if left.is_empty() {
            e.context("install failed before changing anything")
        } else {
            e.context(format!(
                "install failed before its plan ran, and what it began is not all undone ({}); 'calicoctl-win uninstall' undoes it",
                left.join("; ")
            ))
        }
    }
}

impl Drop for Begun<'_> {
    fn drop(&mut self) {
        if self.armed && !self.resumable() {
            let _ = apply::undo::undo_journal(self.host, &self.journal, &self.path, self.timeout);
        }
    }
}

/// The release staged and obtained; a failure undoes what the run began (`begun`).
pub(super) fn stage<'h>(
    ctx: &mut Context,
    host: &'h dyn Host,
    want: &Want,
    cache_dir: &str,
    begun: &mut Option<Begun<'_>>,
) -> anyhow::Result<(Staging<'h>, Got)> {
    let staged = staging_dir(host, cache_dir, ctx.options.dry_run).and_then(|staging| {
        let got = obtain_release(ctx, host, want, cache_dir, staging.place())?;
        Ok((staging, got))
    });
    match (staged, begun.take()) {
        (Ok(staged), b) => {
            *begun = b;
            Ok(staged)
        }
        (Err(e), Some(b)) => Err(b.stop(e)),
        (Err(e), None) => Err(e),
    }
}

/// The release as a dry run sees it, for a real run to judge before any change: a given zip
/// extracted locally (`look_dir` when `locked`), a download pending; the node is untouched.
pub(super) fn look<'h>(
    ctx: &mut Context,
    host: &'h dyn Host,
    want: &Want,
    (cache_dir, locked): (&str, bool),
) -> anyhow::Result<(Option<Staging<'h>>, Got)> {
    if let Source::Url(url) = &want.source {
        let version = want.version.clone();
        return Ok((
            None,
            Got::Pending {
                url: url.clone(),
                version,
            },
        ));
    }
    let held = locked.then(|| ctx.state_dir(host)).flatten();
    let staging = match held {
        Some(state) => look_dir(ctx, &state)?,
        None => staging_dir(host, cache_dir, true)?,
    };
    let got = obtain_release(ctx, host, want, cache_dir, staging.place())?;
    Ok((Some(staging), got))
}

/// A real run's look extracts into the state directory (SYSTEM and Administrators only,
/// `host::lock::make_state_dir`), not `C:\Windows\Temp`, where every user may add files. A
/// killed look's leftovers (dead with its host lock) are removed first; a link is said, left.
fn look_dir(ctx: &mut Context, state: &std::path::Path) -> anyhow::Result<Staging<'static>> {
    use crate::layout::LOOK_PREFIX;
    for e in fs_err::read_dir(state).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with(LOOK_PREFIX) {
            continue;
        }
        // Not followed: a link's file type is a link's, never a directory's.
        let removed = match e.file_type() {
            Ok(t) if t.is_dir() => fs_err::remove_dir_all(e.path()).map_err(|e| e.to_string()),
            _ => Err("it is not a directory of calicoctl-win's own".into()),
        };
        if let Err(why) = removed {
            ctx.printer.warn(&format!(
                "{} is left as it is, from a release look that was cut off: {why}; remove it by hand",
                e.path().display()
            ));
        }
    }
    let dir = tempfile::Builder::new()
        .prefix(LOOK_PREFIX)
        .tempdir_in(state)
        .with_context(|| {
            format!(
                "cannot create a directory for the release in {}",
                state.display()
            )
        })?;
    let path = Local::name(dir.path())?;
    Ok(Staging::Local { _dir: dir, path })
}

/// Downloads (or takes) and extracts the release into `staging` (a dry run only checks a
/// URL). A zip that fails a check is removed.
fn obtain_release(
    ctx: &mut Context,
    host: &dyn Host,
    want: &Want,
    cache_dir: &str,
    staging: Place<'_>,
) -> anyhow::Result<Got> {
    let dry_run = ctx.options.dry_run;
    // A dry run may use a cached zip and changes nothing: not even a refused zip is removed.
    let node_disk = ReleaseDisk(host);
    let read_only = ReadOnly(&node_disk);
    let cache_disk: &dyn release::Disk = if dry_run { &read_only } else { &node_disk };
    let cache = Place::new(cache_disk, cache_dir);
    let cached_name = want.source.file_name();
    // Plain HTTP is refused as the real run refuses it, before anything.
    if dry_run {
        release::refuse_plain_http(want)?;
    }
    if dry_run && let Source::Url(url) = &want.source {
        let cached = cache.join(&cached_name);
        let usable = want
            .sha256
            .as_ref()
            .is_some_and(|s| host.sha256(&cached).ok().flatten().as_ref() == Some(s));
        if !usable {
            if let Err(e) = release::check_url(want, url) {
                ctx.printer.warn(&format!(
                    "{e}: the install itself looks for a SHA256SUMS beside the zip (this dry run makes no connection) and stops here, before any change, when none names it; pass --sha256 HEX from the release page, or --insecure-skip-checksum to trust the download as it is"
                ));
            }
            return Ok(Got::Pending {
                url: url.clone(),
                version: want.version.clone(),
            });
        }
    }
    let mut progress =
        DownloadProgress::new(std::io::stderr().is_terminal(), ctx.printer.is_quiet());
    let result = (|| -> Result<Got, release::ReleaseError> {
        let (obtained, x) = release::obtain(want, cache, staging, &ctx.env, &mut progress)?;
        if let Some(why) = &obtained.extracted_again {
            ctx.log(&format!("extracted again from the finished zip: {why}"));
        }
        let what = want.source.show();
        let cleanup = |e| {
            if let Some(cached) = obtained.cached.as_ref().filter(|_| !dry_run) {
                let _ = host.remove_file(cached);
            }
            e
        };
        release::check_version(want, &x, &what).map_err(cleanup)?;
        let cached = obtained
            .cached
            .as_ref()
            .map(|_| (cache.join(&cached_name), obtained.sha256.clone()));
        Ok(Got::Release {
            x,
            sha256: obtained.sha256,
            cached,
        })
    })();
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
