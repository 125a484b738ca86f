//! The simulated host's handle: its state behind a lock, its faults, how it is opened,
//! counted and saved.

use super::profiles::{self, DEFAULT_PROFILE};
use super::state::{self, State};
use crate::host::*;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// The exit code of a process stopped by an injected crash.
pub const SIM_CRASH_EXIT: i32 = 86;

/// A fault to inject at one mutating call of this process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    pub kind: FaultKind,
    pub at: At,
}

/// Which mutating call a fault hits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum At {
    /// The Nth, counting from 1.
    Call(u64),
    /// The first whose description contains this text (`add route 169.254.169.254`).
    Op(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// The call fails with `HostError::Injected` and changes nothing.
    Fail,
    /// The call refused with ERROR_ACCESS_DENIED (5), nothing changed; `deny:~TEXT` every match.
    Deny,
    /// The process exits at once (code 86), as if the machine lost power mid-run.
    Crash,
    /// The process waits to be killed mid-write (temporary written, not renamed), first
    /// creating `<host dir>.paused` for the killer.
    Pause,
}

impl std::str::FromStr for Fault {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "{s:?}: write fail:N, deny:N, crash:N or pause:N, N counting mutating calls from 1, or fail:~TEXT (deny:~TEXT ...) for the first call whose description contains TEXT"
            )
        };
        let (kind, n) = s.split_once(':').ok_or_else(bad)?;
        let kind = match kind {
            "fail" => FaultKind::Fail,
            "deny" => FaultKind::Deny,
            "crash" => FaultKind::Crash,
            "pause" => FaultKind::Pause,
            _ => return Err(bad()),
        };
        let at = match n.strip_prefix('~') {
            Some(text) if !text.is_empty() => At::Op(text.to_owned()),
            Some(_) => return Err(bad()),
            None => At::Call(n.parse().ok().filter(|n| *n > 0).ok_or_else(bad)?),
        };
        Ok(Self { kind, at })
    }
}

/// What a calicoctl-win service runs at start-up on the simulated host (wired in by `main`).
pub type StartHook = Arc<dyn Fn(&SimHost, &ServiceStart) -> anyhow::Result<()> + Send + Sync>;

/// A calicoctl-win service being started: its name and its `service run` arguments.
#[derive(Clone, Debug)]
pub struct ServiceStart {
    pub name: String,
    pub args: Vec<String>,
}

/// Why a simulated host could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("there is no simulated host profile {name:?}")]
    UnknownProfile { name: String },
    #[error("{} holds a simulated host with profile {existing}, not {asked}", .dir.display())]
    ProfileMismatch {
        dir: PathBuf,
        existing: String,
        asked: String,
    },
    #[error("{} is not a simulated host state (state.json is unreadable)", .path.display())]
    Corrupt {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error(transparent)]
    Host(#[from] HostError),
}

/// A simulated Windows host.
pub struct SimHost {
    pub(super) dir: PathBuf,
    /// An in-memory host's directory, kept alive; removed on drop.
    pub(super) temp: Option<tempfile::TempDir>,
    pub(super) state: Mutex<State>,
    pub(super) fault: Option<Fault>,
    pub(super) mutations: AtomicU64,
    /// A pause due inside the file write being made (`FaultKind::Pause`).
    pub(super) pause_in_write: std::sync::atomic::AtomicBool,
    /// A fault matched by description (`At::Op`) has hit its call.
    pub(super) fired: std::sync::atomic::AtomicBool,
    pub(super) start_hook: Option<StartHook>,
    /// Run once at the next `open_update`, before it opens (`before_next_open_update`).
    pub(super) before_open: Mutex<Option<OpenHook>>,
}

/// What a test does to the file system at an opening (`SimHost::before_next_open_update`).
pub type OpenHook = Box<dyn FnOnce() + Send>;

impl SimHost {
    /// Opens the host in `dir`, made from `profile` (default `ws2022`) when new; another refused.
    pub fn open_or_create(dir: &Path, profile: Option<&str>) -> Result<Self, SimError> {
        let state_file = dir.join("state.json");
        if state_file.exists() {
            let text = fs_err::read_to_string(&state_file)
                .map_err(|e| HostError::io("read simulated host state", e))?;
            let state: State = serde_json::from_str(&text).map_err(|source| SimError::Corrupt {
                path: state_file.clone(),
                source,
            })?;
            if let Some(asked) = profile.filter(|p| *p != state.profile) {
                return Err(SimError::ProfileMismatch {
                    dir: dir.to_owned(),
                    existing: state.profile,
                    asked: asked.to_owned(),
                });
            }
            return Ok(Self::new(dir.to_owned(), None, state));
        }
        Self::create(dir.to_owned(), None, profile.unwrap_or(DEFAULT_PROFILE))
    }

    /// A throw-away host for read-only commands, removed when dropped.
    pub fn in_memory(profile: &str) -> Result<Self, SimError> {
        let temp = tempfile::Builder::new()
            .prefix("calicoctl-win-sim-")
            .tempdir()
            .map_err(|e| HostError::io("create a temporary directory", e))?;
        Self::create(temp.path().to_owned(), Some(temp), profile)
    }

    pub(super) fn create(
        dir: PathBuf,
        temp: Option<tempfile::TempDir>,
        profile: &str,
    ) -> Result<Self, SimError> {
        let (state, seed) = profiles::build(profile).ok_or_else(|| SimError::UnknownProfile {
            name: profile.to_owned(),
        })?;
        fs_err::create_dir_all(&dir).map_err(|e| HostError::io("create the state directory", e))?;
        let host = Self::new(dir, temp, state);
        for (path, contents) in seed {
            host.put(
                &path,
                crate::files::Contents::Bytes(&contents),
                Access::Normal,
            )?;
        }
        host.save(&host.lock())?;
        Ok(host)
    }

    pub(super) fn new(dir: PathBuf, temp: Option<tempfile::TempDir>, state: State) -> Self {
        Self {
            dir,
            temp,
            state: Mutex::new(state),
            fault: None,
            mutations: AtomicU64::new(0),
            pause_in_write: std::sync::atomic::AtomicBool::new(false),
            fired: std::sync::atomic::AtomicBool::new(false),
            start_hook: None,
            before_open: Mutex::new(None),
        }
    }

    pub fn with_fault(mut self, fault: Option<Fault>) -> Self {
        self.fault = fault;
        self
    }

    pub fn set_start_hook(&mut self, hook: StartHook) {
        self.start_hook = Some(hook);
    }

    /// Has `hook` run once at the next `Files::open_update`, before it opens: a link swapped
    /// between a judgement of the path and its opening.
    pub fn before_next_open_update(&self, hook: OpenHook) {
        *self
            .before_open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(hook);
    }

    /// The directory holding `state.json` and the simulated files.
    pub fn state_dir(&self) -> &Path {
        &self.dir
    }

    pub fn profile(&self) -> String {
        self.lock().profile.clone()
    }

    /// The Application event log's events, in order.
    pub fn events(&self) -> Vec<state::SimEvent> {
        self.read(|s| s.events.clone())
    }

    /// The number of mutating calls made so far by this process.
    pub fn mutations(&self) -> u64 {
        self.mutations.load(Ordering::SeqCst)
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        // Changes apply to a copy first, so a poisoned lock is safe to reuse.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn read<T>(&self, f: impl FnOnce(&State) -> T) -> T {
        f(&self.lock())
    }

    /// One mutating call: counted, the fault injected, then `apply`d.
    pub(super) fn mutate<T>(
        &self,
        op: &str,
        f: impl FnOnce(&mut State) -> HostResult<T>,
    ) -> HostResult<T> {
        self.count(op)?;
        self.apply(f)
    }

    /// `f` applied to a copy of the state, saved on success; not counted.
    pub(super) fn apply<T>(&self, f: impl FnOnce(&mut State) -> HostResult<T>) -> HostResult<T> {
        let mut guard = self.lock();
        let mut next = guard.clone();
        let out = f(&mut next)?;
        self.save(&next)?;
        *guard = next;
        Ok(out)
    }

    /// Stops here for good, after saying where (`FaultKind::Pause`).
    pub(super) fn pause(&self, at: &str) -> ! {
        let marker = format!("{}.paused", self.dir.display());
        let _ = std::fs::write(&marker, at);
        eprintln!("paused {at}: waiting to be killed");
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }

    /// Pauses inside a file write when the pause is due there (`FaultKind::Pause`).
    pub(super) fn pause_if_due_in_write(&self, path: &str) {
        if self.pause_in_write.swap(false, Ordering::SeqCst) {
            self.pause(&format!(
                "in mutating call {} (write {path}, its temporary file written)",
                self.mutations()
            ));
        }
    }

    pub(super) fn count(&self, op: &str) -> HostResult<()> {
        let n = self.mutations.fetch_add(1, Ordering::SeqCst) + 1;
        let Some(fault) = &self.fault else {
            return Ok(());
        };
        let due = match &fault.at {
            At::Call(k) => *k == n,
            // A denial is the node's policy: every matching call is refused, not only the first.
            At::Op(text) if fault.kind == FaultKind::Deny => op.contains(text.as_str()),
            At::Op(text) => op.contains(text.as_str()) && !self.fired.swap(true, Ordering::SeqCst),
        };
        if !due {
            return Ok(());
        }
        match fault.kind {
            FaultKind::Fail => {
                // Said as it fires, so a test walking every call tells a retried call apart.
                eprintln!("simulated host: a failure injected at mutating call {n} ({op})");
                Err(HostError::Injected {
                    n,
                    op: op.to_owned(),
                })
            }
            // ERROR_ACCESS_DENIED in FormatMessage's words, as the Windows host reports it.
            FaultKind::Deny => Err(HostError::Api {
                op: op.to_owned(),
                code: 5,
                message: "Access is denied.".into(),
            }),
            FaultKind::Crash => {
                eprintln!("simulated crash at mutating call {n} ({op})");
                std::process::exit(SIM_CRASH_EXIT)
            }
            FaultKind::Pause => {
                if op.starts_with("write ") {
                    self.pause_in_write.store(true, Ordering::SeqCst);
                } else {
                    self.pause(&format!("before mutating call {n} ({op})"));
                }
                Ok(())
            }
        }
    }

    pub(super) fn save(&self, state: &State) -> HostResult<()> {
        let text = serde_json::to_string_pretty(state)
            .map_err(|e| HostError::refused("save simulated host state", e.to_string()))?;
        crate::files::write_atomic_volatile(&self.dir.join("state.json"), text.as_bytes())
            .map(|_| ())
            .map_err(|e| {
                HostError::io(
                    "save simulated host state",
                    std::io::Error::other(format!("{e:#}")),
                )
            })
    }
}
