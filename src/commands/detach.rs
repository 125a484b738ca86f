//! `install --detach`: the install runs as a process outliving its session (the External
//! vSwitch cuts the network, and a dropped WinRM or SSH session ends its processes); it logs to
//! a file and records its exit code and JSON result for whoever started it.

use crate::context::Context;
use crate::error::UsageError;
use crate::host::select::Intent;
use anyhow::Context as _;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::apply::detached::{Files, Recorded, Started, settle};

/// Set for the detached run: where to record its result.
pub const RESULT_ENV: &str = "CALICOCTL_WIN_DETACHED_RESULT";
/// Set for the detached run: the file its standard output (the JSON document) goes to.
pub const OUTPUT_ENV: &str = "CALICOCTL_WIN_DETACHED_OUTPUT";

/// Set for the detached run: the file that says it was started, which it removes when it
/// records its result.
pub const STARTED_ENV: &str = "CALICOCTL_WIN_DETACHED_STARTED";
/// The document of a command started with `--detach`: the detached process, whether it left
/// this session's job, its log and where its result is recorded.
#[derive(serde::Serialize)]
#[cfg_attr(test, derive(Default))]
pub(crate) struct Detached {
    pub detached: bool,
    pub pid: u32,
    pub left_session_job: bool,
    pub log: String,
    pub result: String,
}

/// Starts this command line again, without `--detach`, as a detached process; says where its
/// log and result will be, and returns.
pub fn start(ctx: &mut Context, command: &str) -> anyhow::Result<()> {
    if ctx.options.dry_run {
        return Err(UsageError::new(
            "--detach with --dry-run: a dry run changes nothing and ends at once",
            "leave out --detach to see the plan",
        )
        .into());
    }
    let host = ctx.open_host(Intent::Read)?;
    let Some(dir) = ctx.state_dir(host.as_ref()) else {
        return Err(UsageError::new(
            "--detach: this throw-away simulated host ends with this process",
            "pass --sim-host DIR for a simulated host the detached run can change",
        )
        .into());
    };
    let files = prepare(&dir, command)?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&files.log)
        .with_context(|| format!("cannot open {}", files.log.display()))?;
    let output = std::fs::File::create(&files.output)
        .with_context(|| format!("cannot create {}", files.output.display()))?;
    let exe = std::env::current_exe().context("cannot find calicoctl-win's own executable")?;
    let mut child = std::process::Command::new(exe);
    child
        .args(child_args(std::env::args_os().skip(1), &files.log))
        .env(RESULT_ENV, &files.result)
        .env(OUTPUT_ENV, &files.output)
        .env(STARTED_ENV, &files.started)
        .stdin(std::process::Stdio::null())
        .stdout(output)
        .stderr(log);
    let (child, breakaway) = spawn_detached(&mut child).context("cannot start the detached run")?;
    let started = Started {
        pid: child.id(),
        started: crate::duration::now(),
        log: files.log.clone(),
    };
    crate::files::write_atomic(
        &files.started,
        &serde_json::to_vec_pretty(&started).context("cannot write JSON")?,
    )
    .with_context(|| format!("cannot write {}", files.started.display()))?;
    ctx.printer.text(&format!(
        "{command} runs detached as pid {}; log: {}; its result is recorded in {} when it ends",
        child.id(),
        files.log.display(),
        files.result.display()
    ));
    if !breakaway {
        ctx.printer.warn("this session's job does not allow a process to leave it: ending the session may still end the detached run");
    }
    ctx.printer.json(&Detached {
        detached: true,
        pid: child.id(),
        left_session_job: breakaway,
        log: files.log.display().to_string(),
        result: files.result.display().to_string(),
    });
    Ok(())
}

/// The files of a new detached run; a held host lock is said now (exit 5), not by a child
/// whose result would replace the running one's. An earlier run's result is settled, removed.
fn prepare(dir: &Path, command: &str) -> anyhow::Result<Files> {
    crate::host::lock::make_state_dir(dir)
        .with_context(|| format!("cannot create {}", dir.display()))?;
    if let Some(holder) = crate::host::lock::busy(dir) {
        return Err(crate::host::lock::LockError::Busy {
            holder,
            lock: dir.join(crate::layout::LOCK_FILE),
        }
        .into());
    }
    settle(dir)?;
    let mut files = Files::in_dir(dir, command);
    // A log file the command line names is kept.
    if let Some(log) = log_file_arg(std::env::args_os().skip(1)) {
        files.log = log;
    }
    for stale in [&files.result, &files.output] {
        match fs_err::remove_file(stale) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| {
                    format!("cannot remove {} from an earlier run", stale.display())
                });
            }
            _ => {}
        }
    }
    Ok(files)
}

/// The `--log-file` the command line gives, if any.
fn log_file_arg(args: impl Iterator<Item = OsString>) -> Option<PathBuf> {
    crate::cli::flag_values(args, "--log-file")
        .pop()
        .map(PathBuf::from)
}

/// This command line for the detached run: without `--detach` and any output format, with
/// JSON on standard output (its result) and the log in the log file.
fn child_args(args: impl Iterator<Item = OsString>, log: &Path) -> Vec<OsString> {
    let mut out = Vec::new();
    let mut skip_value = false;
    for a in args {
        if std::mem::take(&mut skip_value) {
            continue;
        }
        let text = a.to_string_lossy();
        match text.as_ref() {
            "--detach" => {}
            "-o" | "--output" | "--output-format" | "--log-file" => skip_value = true,
            t if ["--output=", "--output-format=", "--log-file="]
                .iter()
                .any(|p| t.starts_with(p))
                || (t.starts_with("-o") && !t.starts_with("--")) => {}
            _ => out.push(a),
        }
    }
    out.extend(["-o", "json"].map(OsString::from));
    out.push("--log-file".into());
    out.push(log.as_os_str().to_owned());
    out
}

/// Starts the child in a process group of its own, so that what ends the session's processes
/// does not reach it; on Windows also without a console and outside the session's job when the
/// job allows that (whether it did is the second value).
fn spawn_detached(c: &mut std::process::Command) -> std::io::Result<(std::process::Child, bool)> {
    #[cfg(windows)]
    {
        use std::os::windows::process::CommandExt;
        // CreateProcess flags (processthreadsapi.h).
        const DETACHED_PROCESS: u32 = 0x0000_0008;
        const CREATE_NEW_PROCESS_GROUP: u32 = 0x0000_0200;
        const CREATE_BREAKAWAY_FROM_JOB: u32 = 0x0100_0000;
        const ERROR_ACCESS_DENIED: i32 = 5;
        c.creation_flags(DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP | CREATE_BREAKAWAY_FROM_JOB);
        match c.spawn() {
            // A job without JOB_OBJECT_LIMIT_BREAKAWAY_OK refuses the breakaway (CreateProcess).
            Err(e) if e.raw_os_error() == Some(ERROR_ACCESS_DENIED) => {
                c.creation_flags(DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP);
                c.spawn().map(|child| (child, false))
            }
            r => r.map(|child| (child, true)),
        }
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        c.process_group(0);
        c.spawn().map(|child| (child, true))
    }
}

/// At the end of a detached run: its exit code, when it ended and the JSON document it printed,
/// written atomically to the result file (the document is `null` when it printed none).
pub fn record(
    result: &Path,
    output: Option<&Path>,
    started: Option<&Path>,
    exit: u8,
) -> anyhow::Result<()> {
    let printed = output
        .and_then(|o| fs_err::read(o).ok())
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .unwrap_or(serde_json::Value::Null);
    let doc = Recorded {
        schema: crate::output::SCHEMA,
        exit_code: exit,
        finished: Some(crate::duration::time_text(crate::duration::now())),
        output: printed,
        error: None,
    };
    let text = serde_json::to_vec_pretty(&doc).context("cannot write the result as JSON")?;
    crate::files::write_atomic(result, &text)
        .with_context(|| format!("cannot record the result in {}", result.display()))?;
    if let Some(s) = started {
        let _ = fs_err::remove_file(s);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_detached_command_line_drops_detach_and_the_output_format_and_logs_to_the_file() {
        let args = [
            "-o",
            "text",
            "--config",
            "c.yaml",
            "install",
            "--detach",
            "--output=text",
            "-ojson",
            "--log-file",
            "mine.log",
            "--release-zip",
            "z.zip",
        ]
        .map(OsString::from);
        assert_eq!(
            log_file_arg(args.clone().into_iter()),
            Some(PathBuf::from("mine.log"))
        );
        assert_eq!(log_file_arg([OsString::from("install")].into_iter()), None);
        let out = child_args(args.into_iter(), Path::new("/state/install.log"));
        let out: Vec<String> = out
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            out,
            [
                "--config",
                "c.yaml",
                "install",
                "--release-zip",
                "z.zip",
                "-o",
                "json",
                "--log-file",
                "/state/install.log"
            ]
        );
    }
}

// Through the real CreateProcess (under Wine in CI): the creation flags start a child.
#[cfg(all(test, windows))]
mod windows_tests {
    #[test]
    fn a_detached_child_starts_and_runs_to_its_end() {
        let mut c = std::process::Command::new("cmd.exe");
        c.args(["/c", "exit 7"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let (mut child, _left_job) = super::spawn_detached(&mut c).expect("spawn");
        assert_eq!(child.wait().expect("wait").code(), Some(7));
    }
}
