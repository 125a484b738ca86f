//! Starting programs and stopping them: gracefully first, then by force.

use super::{HostError, HostResult};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Where a child's stdout and stderr go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    Null,
    /// Appended to a file on this machine (a service log).
    AppendTo(PathBuf),
}

/// A program to run. The environment is exactly `env`: nothing is inherited, so a
/// machine-wide variable cannot leak into a Calico component.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessSpec {
    pub program: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub cwd: Option<String>,
    pub output: Output,
}

/// A started program.
pub trait Child: Send {
    fn pid(&self) -> u32;
    /// Waits up to `timeout`; the exit code once the program has ended, else `None`.
    fn wait_timeout(&mut self, timeout: Duration) -> HostResult<Option<i32>>;
    /// Asks the program to stop, waits up to `grace`, then kills it; returns its exit code.
    fn stop(&mut self, grace: Duration) -> HostResult<i32>;
}

/// A real process on this machine (the Windows host, or a test program on SimHost).
pub struct LocalChild {
    child: std::process::Child,
    program: String,
    exited: Option<i32>,
}

impl LocalChild {
    /// Starts `spec` with a clean environment. On Windows the child gets its own process group
    /// so that a Ctrl-Break can stop it gracefully.
    pub fn spawn(spec: &ProcessSpec) -> HostResult<Self> {
        let mut cmd = std::process::Command::new(&spec.program);
        cmd.args(&spec.args).env_clear().envs(&spec.env);
        // Windows needs SystemRoot for Winsock and most DLLs to load.
        #[cfg(windows)]
        if !spec.env.contains_key("SystemRoot")
            && let Some(root) = std::env::var_os("SystemRoot")
        {
            cmd.env("SystemRoot", root);
        }
        if let Some(cwd) = &spec.cwd {
            cmd.current_dir(cwd);
        }
        cmd.stdin(Stdio::null());
        match &spec.output {
            Output::Null => {
                cmd.stdout(Stdio::null()).stderr(Stdio::null());
            }
            Output::AppendTo(path) => {
                let open = || {
                    fs_err::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(path)
                        .map_err(|e| HostError::io(format!("open log {}", path.display()), e))
                };
                cmd.stdout(open()?.into_parts().0)
                    .stderr(open()?.into_parts().0);
            }
        }
        #[cfg(windows)]
        {
            use std::os::windows::process::CommandExt;
            cmd.creation_flags(super::windows::process::CREATE_NEW_PROCESS_GROUP);
        }
        let child = cmd
            .spawn()
            .map_err(|e| HostError::io(format!("start {}", spec.program), e))?;
        Ok(Self {
            child,
            program: spec.program.clone(),
            exited: None,
        })
    }

    fn poll(&mut self) -> HostResult<Option<i32>> {
        if self.exited.is_none() {
            let status = self
                .child
                .try_wait()
                .map_err(|e| HostError::io(format!("wait for {}", self.program), e))?;
            // A process killed by a signal has no code; report it as -1.
            self.exited = status.map(|s| s.code().unwrap_or(-1));
        }
        Ok(self.exited)
    }
}

impl Child for LocalChild {
    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn wait_timeout(&mut self, timeout: Duration) -> HostResult<Option<i32>> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(code) = self.poll()? {
                return Ok(Some(code));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(10).min(timeout));
        }
    }

    fn stop(&mut self, grace: Duration) -> HostResult<i32> {
        if let Some(code) = self.poll()? {
            return Ok(code);
        }
        ask_to_stop(self.child.id());
        if let Some(code) = self.wait_timeout(grace)? {
            return Ok(code);
        }
        // The program ignored the request: kill it (TerminateProcess / SIGKILL).
        let _ = self.child.kill();
        let status = self
            .child
            .wait()
            .map_err(|e| HostError::io(format!("wait for {}", self.program), e))?;
        let code = status.code().unwrap_or(-1);
        self.exited = Some(code);
        Ok(code)
    }
}

impl Drop for LocalChild {
    fn drop(&mut self) {
        // No stray processes: a child outlives its handle only if it already ended.
        let _ = self.stop(Duration::from_secs(2));
    }
}

#[cfg(unix)]
fn ask_to_stop(pid: u32) {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    if let Ok(pid) = i32::try_from(pid) {
        let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
    }
}

#[cfg(windows)]
fn ask_to_stop(pid: u32) {
    super::windows::process::ctrl_break(pid);
}

/// A program the simulated host only pretends to run (felix, confd): it runs until stopped.
pub struct SimulatedChild {
    pub pid: u32,
    pub exited: Option<i32>,
}

impl Child for SimulatedChild {
    fn pid(&self) -> u32 {
        self.pid
    }

    fn wait_timeout(&mut self, timeout: Duration) -> HostResult<Option<i32>> {
        if self.exited.is_none() {
            std::thread::sleep(timeout);
        }
        Ok(self.exited)
    }

    fn stop(&mut self, _grace: Duration) -> HostResult<i32> {
        Ok(*self.exited.get_or_insert(0))
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn sh(script: &str) -> ProcessSpec {
        ProcessSpec {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            env: BTreeMap::from([("ONLY".into(), "this".into())]),
            cwd: None,
            output: Output::Null,
        }
    }

    #[test]
    fn a_child_sees_only_the_given_environment() {
        let mut c =
            LocalChild::spawn(&sh("test \"$ONLY\" = this && test -z \"$HOME\"")).expect("spawn");
        assert_eq!(
            c.wait_timeout(Duration::from_secs(10)).expect("wait"),
            Some(0)
        );
    }

    #[test]
    fn wait_times_out_and_stop_is_graceful_first() {
        let mut c = LocalChild::spawn(&sh("trap 'exit 7' TERM; while :; do sleep 0.05; done"))
            .expect("spawn");
        assert_eq!(
            c.wait_timeout(Duration::from_millis(100)).expect("wait"),
            None
        );
        assert_eq!(c.stop(Duration::from_secs(10)).expect("stop"), 7);
    }

    #[test]
    fn a_child_that_ignores_the_request_is_killed() {
        let mut c =
            LocalChild::spawn(&sh("trap '' TERM; while :; do sleep 0.05; done")).expect("spawn");
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(c.stop(Duration::from_millis(200)).expect("stop"), -1);
    }
}
