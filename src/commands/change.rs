//! What the changing commands (install, reconfigure, uninstall, repair, migrate) share:
//! [`Change`], the host, its lock, the root and the journal; the plan shown, run, measured.

use crate::apply::journal::Journal;
use crate::context::Context;
use crate::host::Host;
use crate::host::lock::HostLock;
use crate::k8s_name::NodeName;
use crate::layout::InstallRoot;

/// The document of a command that changes the node (docs/json.md).
#[derive(serde::Serialize)]
pub(crate) struct Changing<D> {
    pub dry_run: bool,
    #[serde(flatten)]
    pub own: D,
    /// One object per action: its fields, `index` and `description`.
    pub actions: Vec<crate::apply::Shown>,
    pub changed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<String>>,
}

impl<D> Changing<D> {
    /// Whether the plan starts the service `name` (a start, or the start after a stop).
    pub fn starts(&self, name: &str) -> bool {
        self.actions.iter().any(
            |s| matches!(&s.action, crate::apply::Action::StartService { name: n } if n == name),
        )
    }

    /// The document of a plan not run yet (`changed` false).
    pub fn plan(dry_run: bool, own: D, actions: &[crate::apply::Action]) -> Self {
        Self {
            dry_run,
            own,
            actions: crate::apply::shown(actions),
            changed: false,
            warnings: None,
        }
    }

    /// The document after the plan ran, with the warnings said.
    pub fn ran(self, warnings: Vec<String>) -> Self {
        let (changed, warnings) = (true, Some(warnings));
        Self {
            changed,
            warnings,
            ..self
        }
    }
}

/// The document of a changing command that stopped at its checks.
#[derive(serde::Serialize)]
#[cfg_attr(test, derive(Default))]
pub(crate) struct ChecksBlocked<'a> {
    pub checks: &'a [crate::checks::Check],
    pub blocking: &'a [&'static str],
    pub changed: bool,
}

/// One run of a changing command on this host.
pub(crate) struct Change<'h> {
    pub host: &'h dyn Host,
    /// `install`, `reconfigure`, `uninstall`: the journal's command and the messages' word.
    pub command: &'static str,
    pub root: InstallRoot,
    pub journal_path: String,
    /// The journal an interrupted run of this command left, continued by this one.
    pub journal: Option<Journal>,
    /// The host lock (none in a dry run), held until the change is dropped.
    _lock: Option<HostLock>,
}

impl<'h> Change<'h> {
    /// Takes over the host lock and the journal an interrupted run of `command` left (said);
    /// another command's is refused.
    pub fn begin(
        ctx: &mut Context,
        host: &'h dyn Host,
        command: &'static str,
        root: &InstallRoot,
        journal_path: String,
    ) -> anyhow::Result<Self> {
        let journal = Journal::load(host, &journal_path)?;
        if let Some(j) = &journal {
            if j.command != command {
                return Err(unfinished(&j.command, &journal_path, " first"));
            }
            ctx.printer.note(&format!(
                "an earlier {command} started at {} did not finish ({} step(s) journaled): this run continues it",
                crate::duration::time_text(j.started),
                j.entries.len()
            ));
        }
        Ok(Self {
            host,
            command,
            root: root.clone(),
            journal_path,
            journal,
            _lock: ctx.take_lock(),
        })
    }

    /// Lets the host lock go once the run is over: `reconfigure --turn`'s health wait reads
    /// as `status`, which takes a held lock for a change under way.
    pub fn let_go(&mut self) {
        self._lock = None;
    }

    /// Whether this change holds the host lock (a real run's does).
    pub fn holds_lock(&self) -> bool {
        self._lock.is_some()
    }

    /// How this change's plan runs: journaled at its journal, as its command.
    pub fn options<'a>(
        &self,
        rollback: bool,
        service_timeout: std::time::Duration,
        journal: Option<Journal>,
        cluster: Option<&'a crate::cluster::Cluster>,
    ) -> crate::apply::Options<'a> {
        let path = self.journal_path.clone();
        crate::apply::Options::for_change(
            self.command,
            path,
            rollback,
            service_timeout,
            journal,
            cluster,
        )
    }

    /// Runs the plan, each step printed and logged. A plan that rolls back is snapshotted first
    /// and its failure says what the rollback left (`after_rollback`). `Err`: unreadable host.
    pub fn run(
        &self,
        ctx: &mut Context,
        actions: &[crate::apply::Action],
        opts: crate::apply::Options,
    ) -> anyhow::Result<Outcome> {
        if !opts.rollback {
            return Ok(execute_plan(ctx, self.host, actions, opts)
                .map_err(|error| Box::new(Failed { error, left: None })));
        }
        let (host, command) = (self.host, self.command);
        let scope = crate::apply::snapshot::Scope::of_plan(actions);
        let before =
            anyhow::Context::with_context(crate::apply::snapshot::take(host, &scope), || {
                format!("cannot read the host before the {command}")
            })?;
        Ok(execute_plan(ctx, host, actions, opts).map_err(|e| {
            let measured = e
                .rollback_failures
                .is_some()
                .then(|| after_rollback(host, &scope, &before, command));
            Box::new(Failed {
                error: e,
                left: measured,
            })
        }))
    }

    /// After success: the installed files' sizes and times, which spare `status` hashing them
    /// (`plan::file_stat`); a warning when they cannot be kept.
    pub fn keep_file_stats(&self, ctx: &mut Context) {
        let kept = crate::installed::record::read(self.host, &self.root)
            .map_err(anyhow::Error::from)
            .and_then(|rec| match rec {
                Some(rec) => crate::installed::file_stat::FileStats::write(self.host, &rec),
                None => Ok(()),
            });
        if let Err(e) = kept {
            let w = format!(
                "cannot keep the installed files' sizes and times (status hashes every file instead): {e:#}"
            );
            ctx.printer.warn(&w);
            ctx.log(&format!("warning: {w}"));
        }
    }

    /// After a successful install or reconfigure, the node's annotations say what runs on it
    /// (`record::annotations_for`), for rollout engines; a failure is a warning.
    pub fn annotate(
        &self,
        ctx: &mut Context,
        cluster: Option<&crate::cluster::Cluster>,
        node: &NodeName,
    ) {
        let Some(c) = cluster else {
            ctx.log("no cluster: the node is not annotated");
            return;
        };
        let rec = match crate::installed::record::read(self.host, &self.root) {
            Ok(Some(r)) => r,
            Ok(None) => return,
            Err(e) => {
                ctx.printer.warn(&format!("node {node} not annotated: {e}"));
                return;
            }
        };
        let annotations = crate::installed::record::annotations_for(&rec);
        if let Err(e) = crate::cluster::node::annotate(c, node, &annotations) {
            ctx.printer.warn(&format!(
                "node {node} not annotated with the installed Calico version and config hash: {e}"
            ));
        }
    }
}

/// A run that failed: the executor's error and what a rollback left (`after_rollback`).
pub(crate) struct Failed {
    pub error: crate::apply::ExecError,
    pub left: Option<String>,
}

/// What running a plan gives: the warnings of a run that succeeded, or how it failed.
pub(crate) type Outcome = Result<Vec<String>, Box<Failed>>;

/// The refusal of a run over another command's unfinished journal at `path`.
pub(crate) fn unfinished(command: &str, path: &str, then: &str) -> anyhow::Error {
    crate::error::UsageError::new(
        format!("an earlier {command} did not finish (its journal is {path})"),
        format!("run 'calicoctl-win {command}' again to finish it{then}"),
    )
    .into()
}
/// A dry run's end: its plan, that nothing was changed, its document.
pub(crate) fn end_dry_run(
    ctx: &mut Context,
    actions: &[crate::apply::Action],
    doc: &impl serde::Serialize,
) {
    print_steps(ctx, "Plan:", actions);
    ctx.printer.note("--dry-run: nothing was changed");
    ctx.printer.json(doc);
}

/// Prints steps for people under `title`, one numbered line per action (a dry run's output).
pub(crate) fn print_steps(ctx: &mut Context, title: &str, actions: &[crate::apply::Action]) {
    ctx.printer.text(title);
    for (i, a) in actions.iter().enumerate() {
        ctx.printer
            .text(&format!("  {:>2}. {}", i + 1, a.describe()));
    }
}
/// What a rollback left: the host compared with `before`, each difference with the command
/// that puts it back.
fn after_rollback(
    host: &dyn crate::host::Host,
    scope: &crate::apply::snapshot::Scope,
    before: &crate::apply::snapshot::Snapshot,
    command: &str,
) -> String {
    let now = match crate::apply::snapshot::take(host, scope) {
        Ok(now) => now,
        Err(e) => return format!("the node could not be compared with before the {command}: {e}"),
    };
    let left = crate::apply::snapshot::differences(before, &now);
    if left.is_empty() {
        return format!(
            "the node is as it was (its services, files, registry values, HNS networks, addresses, routes and firewall rules compared with before the {command})"
        );
    }
    let lines: Vec<String> = left.iter().map(|d| format!("\n  - {d}")).collect();
    format!(
        "the node differs from before the {command} in {} way(s), each with the command that puts it back:{}",
        left.len(),
        lines.concat()
    )
}
/// Runs a plan, printing and logging each step; a success's warnings (a route with nowhere to
/// go) are printed and returned.
fn execute_plan(
    ctx: &mut Context,
    host: &dyn crate::host::Host,
    actions: &[crate::apply::Action],
    opts: crate::apply::Options,
) -> Result<Vec<String>, crate::apply::ExecError> {
    let warnings = crate::apply::execute(host, actions, opts, &mut |p| match p {
        crate::apply::Progress::Step(i, n, a) => {
            let line = format!("[{i}/{n}] {}", a.describe());
            ctx.printer.text(&line);
            ctx.log(&line);
        }
        // A wait's lines (what it waits for, that it still does): the log, and -v.
        crate::apply::Progress::Said(line) => ctx.log(line),
    })?;
    for w in &warnings {
        ctx.printer.warn(w);
        ctx.log(&format!("warning: {w}"));
    }
    Ok(warnings)
}
