//! A run of a command started with `--detach` (`commands::detach`), as its files in the state
//! directory say it: started, and its result (written here for one that died without it).

use anyhow::Context as _;

use std::path::{Path, PathBuf};

/// How a file saying a detached run was started ends.
pub(crate) const STARTED_SUFFIX: &str = ".detached.json";
/// How long a detached run may take to take the host lock after it was started; past it, a
/// run that holds no lock and recorded no result has died.
const LOCK_GRACE_SECS: i64 = 60;

/// The files of a detached run of `command`, in calicoctl-win's state directory.
pub(crate) struct Files {
    pub log: PathBuf,
    pub output: PathBuf,
    pub result: PathBuf,
    pub started: PathBuf,
}

impl Files {
    pub fn in_dir(dir: &Path, command: &str) -> Self {
        Self {
            log: dir.join(format!("{command}.log")),
            output: dir.join(format!("{command}.out.json")),
            result: dir.join(format!("{command}.result.json")),
            started: dir.join(format!("{command}{STARTED_SUFFIX}")),
        }
    }
}

/// What the starting command writes about a detached run. Where its result goes is not
/// among it: that is derived from the file's own name in the state directory, so a file
/// someone else put there cannot make this process write elsewhere.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Started {
    pub pid: u32,
    /// Unix seconds.
    pub started: i64,
    /// Shown in the result, never opened.
    pub log: PathBuf,
}

/// The most a started file holds: a pid, a time and a path.
const STARTED_CAP: u64 = 64 * 1024;

/// The result file of a detached run: its exit code, when it ended, and the JSON document it
/// printed; for a run that ended without recording it (killed), `finished` and `output` are
/// `null` and `error` says so.
#[derive(serde::Serialize)]
#[cfg_attr(test, derive(Default))]
pub(crate) struct Recorded<'a> {
    pub schema: u32,
    pub exit_code: u8,
    pub finished: Option<String>,
    /// The command's own document, as it printed it.
    pub output: serde_json::Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<&'a str>,
}

/// A detached run started, holding no host lock and with no result, has died: its result is
/// written now (exit code 1 and what happened); the line to report. Nobody holds the lock.
pub fn settle(dir: &Path) -> anyhow::Result<Option<String>> {
    let Ok(entries) = fs_err::read_dir(dir) else {
        return Ok(None);
    };
    let mut said = None;
    for e in entries.flatten() {
        let path = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(command) = name.strip_suffix(STARTED_SUFFIX) else {
            continue;
        };
        let result = Files::in_dir(dir, command).result;
        let Some(run) = crate::files::read_capped(&path, STARTED_CAP)
            .ok()
            .and_then(|b| serde_json::from_slice::<Started>(&b).ok())
        else {
            continue;
        };
        if result.exists() {
            let _ = fs_err::remove_file(&path);
            continue;
        }
        if crate::duration::now() - run.started < LOCK_GRACE_SECS {
            continue;
        }
        let line = format!(
            "the detached run (pid {}, started {}) ended without recording its result: it was killed or its machine restarted; its log is {}",
            run.pid,
            crate::duration::time_text(run.started),
            run.log.display()
        );
        let doc = Recorded {
            schema: crate::output::SCHEMA,
            exit_code: 1,
            finished: None,
            output: serde_json::Value::Null,
            error: Some(&line),
        };
        let text = serde_json::to_vec_pretty(&doc).context("cannot write the result as JSON")?;
        crate::files::write_atomic(&result, &text)
            .with_context(|| format!("cannot record the result in {}", result.display()))?;
        let _ = fs_err::remove_file(&path);
        said = Some(line);
    }
    Ok(said)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A started file someone else put in the state directory can name no other place to
    /// write: the result of a run that died goes beside it, by its name.
    #[test]
    fn a_dead_runs_result_is_written_only_where_its_name_says() {
        let dir = tempfile::tempdir().expect("tempdir");
        let elsewhere = tempfile::tempdir().expect("tempdir");
        let target = elsewhere.path().join("overwritten");
        let planted = serde_json::json!({"pid": 1, "started": 0, "log": "x.log", "result": target});
        fs_err::write(
            dir.path().join(format!("install{STARTED_SUFFIX}")),
            planted.to_string(),
        )
        .expect("write");
        let said = settle(dir.path())
            .expect("settle")
            .expect("a run that died");
        assert!(
            said.contains("ended without recording its result"),
            "{said}"
        );
        assert!(!target.exists());
        let result: serde_json::Value = serde_json::from_slice(
            &fs_err::read(dir.path().join("install.result.json")).expect("result"),
        )
        .expect("json");
        assert_eq!(result["exit_code"], 1);
        assert!(!dir.path().join(format!("install{STARTED_SUFFIX}")).exists());
    }
}
