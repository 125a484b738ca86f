//! The skeleton the changing commands (install, reconfigure, uninstall, repair, migrate)
//! share, as one value, [`Change`]: the host and its lock, the root, the journal; the plan
//! shown, run and measured; after success, the file stats kept and the node annotated.

use crate::apply::journal::Journal;
use crate::context::Context;
use crate::host::Host;
use crate::host::lock::HostLock;
use crate::k8s_name::NodeName;
use crate::layout::InstallRoot;

/// The document of a command that changes the node (install, uninstall, reconfigure, repair,
/// migrate): whether it was a dry run, the command's own keys, the plan's actions and whether
/// the node changed; after a run, the warnings said (docs/json.md).
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

    /// The document after the plan ran.
    pub fn done(mut self) -> Self {
        self.changed = true;
        self
    }

    /// The document after the plan ran, with the warnings said.
    pub fn ran(self, warnings: Vec<String>) -> Self {
        let warnings = Some(warnings);
        Self {
            warnings,
            ..self.done()
        }
    }
}

/// The document of a changing command that stopped at its checks: each check, the ids that
/// block, and `changed` false.
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
    /// The host lock `Context::open_host_to_change` took (none in a dry run), held until the
    /// change is dropped.
    _lock: Option<HostLock>,
}

impl<'h> Change<'h> {
    /// Begins the change: takes over the host lock and the journal an interrupted run of
    /// `command` left at `journal_path`, after saying that this run continues it; another
    /// command's unfinished journal is refused.
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

    /// Lets the host lock go before the change ends: its run is over, and what follows
    /// (`reconfigure --turn`'s wait for the node's health) reads the host as `status` does,
    /// which takes a held lock for a change under way.
    pub fn let_go(&mut self) {
        self._lock = None;
    }

    /// Whether this change holds the host lock (a real run's does).
    pub fn holds_lock(&self) -> bool {
        self._lock.is_some()
    }

    /// Prints a plan for people, one numbered line per action (a dry run's output).
    pub fn show(&self, ctx: &mut Context, actions: &[crate::apply::Action]) {
        print_steps(ctx, "Plan:", actions);
    }

    /// Runs the plan, each step printed and logged as it starts. A plan that rolls back has a
    /// snapshot of what it touches taken first, and its failure comes back with what the
    /// rollback left, measured (`after_rollback`). `Err` only when the host cannot be read
    /// before.
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

    /// After a run that succeeded (or had nothing to do): the installed files' sizes and
    /// times, which spare `status` hashing them (`plan::file_stat`). Only a warning when they
    /// cannot be kept: status then hashes every file.
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

    /// After a successful install or reconfigure, the node's annotations say what runs on it,
    /// for engines that roll work over the nodes: the Calico release, calicoctl-win's version
    /// and a hash of the rendered configuration (its files' checksums, from the install
    /// record). A node that cannot be annotated is a warning: the node itself is as it should
    /// be.
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

/// A run that failed: the executor's error and, when it rolled back, what the rollback left,
/// measured against the host before the command (`after_rollback`).
pub(crate) struct Failed {
    pub error: crate::apply::ExecError,
    pub left: Option<String>,
}

/// What running a plan gives: the warnings of a run that succeeded, or how it failed.
pub(crate) type Outcome = Result<Vec<String>, Box<Failed>>;

/// The refusal of a run over another command's unfinished journal at `path`: that command
/// runs again to finish it, `then` this one.
pub(crate) fn unfinished(command: &str, path: &str, then: &str) -> anyhow::Error {
    crate::error::UsageError::new(
        format!("an earlier {command} did not finish (its journal is {path})"),
        format!("run 'calicoctl-win {command}' again to finish it{then}"),
    )
    .into()
}
/// Prints steps for people under `title`, one numbered line per action (a dry run's output).
pub(crate) fn print_steps(ctx: &mut Context, title: &str, actions: &[crate::apply::Action]) {
    ctx.printer.text(title);
    for (i, a) in actions.iter().enumerate() {
        ctx.printer
            .text(&format!("  {:>2}. {}", i + 1, a.describe()));
    }
}
/// What a rollback left, measured: the host compared with `before` (taken before the command
/// changed anything), each difference with the command that puts it back; "the node is as it
/// was" only when nothing differs.
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
/// Runs a plan, printing and logging each step as it starts; the warnings of a run that
/// succeeded (a route with nowhere to go) are printed and returned for the JSON document.
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
