//! `logs`: the services' logs (and calicoctl-win's own) as one stream each, redacted as
//! `diags` redacts (`installed::logs`); `--follow` keeps reading, `--position` keeps where.

use super::common::DEFAULT_ROOT;
use crate::cli::{LogRole, LogsArgs};
use crate::context::Context;
use crate::error::UsageError;
use crate::host::select::Intent;
use crate::installed::logs::{LogSet, Position, Reader, Start};
use crate::installed::record;
use crate::layout::{InstallRoot, KEPT_LOGS_DIR, Role};
use anyhow::Context as _;
use std::io::{Read, Write};

/// How often a follower looks: a line shows within this (and the time to read it).
const POLL: std::time::Duration = std::time::Duration::from_secs(1);
/// How many polls between two readings of the secret files (a renewed token is new).
const SECRETS_EVERY: u32 = 60;
/// The most a position file holds.
const POSITION_CAP: u64 = 4096;
/// Where a follower starts without --tail or --since, a screenful as `kubectl logs -f`.
const FOLLOW_TAIL: u64 = 100;

/// The role's name on the command line and its log's files.
fn log_set(role: LogRole, logs_dir: &str) -> (&'static str, LogSet) {
    let service = match role {
        LogRole::Node => Role::Node,
        LogRole::Felix => Role::Felix,
        LogRole::Confd => Role::Confd,
        LogRole::KubeProxy => Role::KubeProxy,
        // A detached install's log (`commands/detach.rs`), in the state directory.
        LogRole::CalicoctlWin => {
            let set = LogSet {
                dir: KEPT_LOGS_DIR.into(),
                stem: "install".into(),
            };
            return (crate::layout::OWN_LOG_ROLE, set);
        }
    };
    let set = LogSet {
        dir: logs_dir.to_owned(),
        stem: format!("calico-{}", service.name()),
    };
    (service.name(), set)
}

pub fn run(args: &LogsArgs, ctx: &mut Context) -> anyhow::Result<()> {
    if ctx.printer.format == crate::output::Format::Json {
        return Err(UsageError::new(
            "logs writes the logs' lines, not a JSON document",
            "leave out -o json",
        )
        .into());
    }
    if args.position.is_some() && args.roles.len() != 1 {
        return Err(UsageError::new(
            "--position keeps one log's position",
            "name one role, like 'logs felix --follow --position FILE'",
        )
        .into());
    }
    let host = ctx.open_host(Intent::Read)?;
    let h = host.as_ref();
    let config = ctx.load_config().ok().map(|l| l.config);
    let root = config.as_ref().map_or_else(
        || InstallRoot::new(DEFAULT_ROOT),
        crate::config::Config::root,
    );
    // A record that cannot be read still leaves the logs to read (the config's directory).
    let rec = record::read(h, &root).unwrap_or_else(|e| {
        ctx.printer.warn(&format!("{e}"));
        None
    });
    let logs_dir = match (&rec, &config) {
        (Some(r), _) => r.logs_dir.clone(),
        (None, Some(c)) => c.logs.dir.as_str().to_owned(),
        (None, None) => root.path("logs"),
    };
    let start = match (args.since, args.tail) {
        (Some(d), _) => Start::Since(crate::duration::now() - i64::try_from(d.as_secs())?),
        (None, Some(n)) => Start::Tail(n),
        (None, None) if args.follow => Start::Tail(FOLLOW_TAIL),
        (None, None) => Start::Tail(u64::MAX),
    };
    let mut readers = Vec::new();
    let every = <LogRole as clap::ValueEnum>::value_variants();
    for role in if args.roles.is_empty() {
        every
    } else {
        &args.roles
    } {
        let (name, set) = log_set(*role, &logs_dir);
        if set.files(h)?.is_empty() {
            // Without roles named, only the logs there are.
            if args.roles.is_empty() {
                continue;
            }
            ctx.printer.note(&if args.follow {
                format!(
                    "no {name} log in {} yet: following it when it comes",
                    set.dir
                )
            } else {
                format!("no {name} log in {}", set.dir)
            });
        }
        readers.push((name, Reader::new(h, set, record::redactor(h, rec.as_ref()))));
    }
    if readers.is_empty() {
        ctx.printer.note(&format!(
            "no service logs in {logs_dir}: is Calico installed here?"
        ));
        return Ok(());
    }
    if !args.follow {
        return read_all(ctx, readers, start);
    }
    follow(ctx, h, &root, rec, readers, start, args.position.as_deref())
}

/// Writes each log to its end; a closed output ends the command quietly.
fn read_all(
    ctx: &mut Context,
    mut readers: Vec<(&'static str, Reader)>,
    start: Start,
) -> anyhow::Result<()> {
    let prefix = readers.len() > 1;
    for (name, r) in &mut readers {
        let mut out = Prefixed::new(std::io::stdout().lock(), prefix.then_some(*name));
        let read = r.read(start, &mut out);
        said(ctx, r);
        match read {
            Err(_) if out.closed() => return Ok(()),
            r => r?,
        }
    }
    Ok(())
}

/// Follows the logs until the stop signal or the process's end: every `POLL`, what was
/// written since.
fn follow(
    ctx: &mut Context,
    h: &dyn crate::host::Host,
    root: &InstallRoot,
    rec: Option<record::InstallRecord>,
    mut readers: Vec<(&'static str, Reader)>,
    start: Start,
    position: Option<&str>,
) -> anyhow::Result<()> {
    let prefix = readers.len() > 1;
    let first = readers.first_mut().map(|(_, r)| r);
    let kept = std::cell::RefCell::new(position.and_then(|p| keep_position(ctx, h, p, first)));
    let mut save = |p: &Position| {
        if let Some(k) = kept.borrow_mut().as_mut() {
            k.keep(p);
        }
    };
    // The stop signal ends the follower at its next pause (its position kept after every read).
    let stop = ctx.catch_stop(
        crate::duration::Stop::new(),
        "the process ends where it is; the position kept after the last read holds",
    );
    let mut polls = 0u32;
    // The last error each reader met, said once until it changes.
    let mut failing = vec![String::new(); readers.len()];
    loop {
        polls = polls.wrapping_add(1);
        if polls.is_multiple_of(SECRETS_EVERY) {
            let rec = record::read(h, root).ok().flatten().or(rec.clone());
            for (_, r) in &mut readers {
                r.redactor = record::redactor(h, rec.as_ref());
            }
        }
        for ((name, r), last) in readers.iter_mut().zip(&mut failing) {
            let mut out = Prefixed::new(std::io::stdout().lock(), prefix.then_some(*name));
            let polled = r.poll(start, &mut out, &mut save);
            if let Some(e) = kept.borrow_mut().as_mut().and_then(|k| k.unsaid()) {
                ctx.printer.warn(&e);
            }
            said(ctx, r);
            match polled {
                // What cannot be written out ends the follower; a log unreadable now (a
                // rotation, a file held) is retried: an ended pod's follower stalls a rollout.
                Err(_) if out.closed() => return Ok(()),
                Err(e) if out.failed.is_some() => return Err(e.into()),
                Err(e) => {
                    let text = format!("cannot read the {name} log now ({e}): trying again");
                    if *last != text {
                        ctx.printer.warn(&text);
                        *last = text;
                    }
                }
                Ok(()) => last.clear(),
            }
        }
        // What was kept in this round reaches the disk (a power loss repeats at most it).
        if let Some(k) = kept.borrow_mut().as_mut() {
            k.flush();
        }
        // Not a wait for something (`poll_until`): the follower's period, which the stop cuts.
        if stop.wait(POLL) {
            ctx.printer
                .note("stopped following the logs: a stop was requested");
            return Ok(());
        }
    }
}

/// Where the first reader's position is kept (`logs_position::Kept`), read from it first;
/// nowhere when the path goes through someone else's link (said, nothing read or written).
fn keep_position<'h>(
    ctx: &mut Context,
    h: &'h dyn crate::host::Host,
    file: &str,
    first: Option<&mut Reader>,
) -> Option<super::logs_position::Kept<'h>> {
    let admin = crate::installed::protection::elevated_user(h);
    if let Some(why) = super::logs_position::refused(h, file, admin.as_deref()) {
        ctx.printer
            .warn(&format!("{why}: following without a kept position"));
        return None;
    }
    if let Some(r) = first {
        r.position = load_position(ctx, h, file, admin.as_deref());
    }
    Some(super::logs_position::Kept::new(h, file, admin))
}

/// The gaps a reader found, said on stderr.
fn said(ctx: &mut Context, r: &mut Reader) {
    for gap in r.gaps.drain(..) {
        ctx.printer.warn(&gap);
    }
}

/// The position kept in `file`: none when absent, unreadable, or others may change it (said:
/// its record would choose what is shown).
fn load_position(
    ctx: &mut Context,
    h: &dyn crate::host::Host,
    file: &str,
    admin: Option<&str>,
) -> Option<Position> {
    let others = super::logs_position::writers(h, file, admin);
    if !others.is_empty() {
        ctx.printer.warn(&format!(
            "{file} may be changed by {}: its position is not trusted, starting as without a position (it is made anew, SYSTEM and Administrators only)",
            others.join("; ")
        ));
        return None;
    }
    let read = read_position(h, file)
        .and_then(|b| b.map(|b| super::logs_position::parse(&b)).transpose())
        .with_context(|| format!("cannot read {file}"));
    read.inspect_err(|e| {
        ctx.printer
            .warn(&format!("{e:#}: starting as without a position"))
    })
    .ok()
    .flatten()
}

/// The position file's bytes, at most `POSITION_CAP`; `None` without a file.
fn read_position(h: &dyn crate::host::Host, file: &str) -> anyhow::Result<Option<Vec<u8>>> {
    let Some(f) = h.open_read(file)? else {
        return Ok(None);
    };
    let mut out = Vec::new();
    f.take(POSITION_CAP + 1).read_to_end(&mut out)?;
    if out.len() as u64 > POSITION_CAP {
        anyhow::bail!("it is larger than {POSITION_CAP} bytes, more than a position ever holds");
    }
    Ok(Some(out))
}

/// Lines written with `[role] ` before each, when several logs are shown.
struct Prefixed<W: Write> {
    out: W,
    prefix: Option<&'static str>,
    at_start: bool,
    /// How writing to `out` failed (the reader's errors are its own).
    failed: Option<std::io::ErrorKind>,
}

impl<W: Write> Prefixed<W> {
    fn new(out: W, prefix: Option<&'static str>) -> Self {
        Self {
            out,
            prefix,
            at_start: true,
            failed: None,
        }
    }

    /// Whether the output's reader went away (`| head`): it had what it wanted.
    fn closed(&self) -> bool {
        self.failed == Some(std::io::ErrorKind::BrokenPipe)
    }

    fn lines(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let Some(p) = self.prefix else {
            return self.out.write(buf);
        };
        for line in buf.split_inclusive(|b| *b == b'\n') {
            if self.at_start {
                write!(self.out, "[{p}] ")?;
            }
            self.out.write_all(line)?;
            self.at_start = line.ends_with(b"\n");
        }
        Ok(buf.len())
    }
}

impl<W: Write> Write for Prefixed<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let r = self.lines(buf);
        if let Err(e) = &r {
            self.failed = Some(e.kind());
        }
        r
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let r = self.out.flush();
        if let Err(e) = &r {
            self.failed = Some(e.kind());
        }
        r
    }
}
