//! Starting programs and stopping them: gracefully first, then by force.

use super::{HostError, HostResult};
use crate::duration::{Look, Pauses, poll_quietly};
use std::collections::BTreeMap;
use std::io::BufRead as _;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where a child's stdout and stderr go.
#[derive(Clone, Debug)]
pub enum Output {
    Null,
    /// Line by line to a sink (a service log, which rotates between lines).
    Lines(LineSink),
}

/// Receives a child's output one line at a time, from the threads that read its pipes.
#[derive(Clone)]
pub struct LineSink(Arc<WriteLine>);

type WriteLine = dyn Fn(&[u8]) + Send + Sync;

impl LineSink {
    pub fn new(f: impl Fn(&[u8]) + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    pub fn write(&self, line: &[u8]) {
        (self.0)(line)
    }
}

impl std::fmt::Debug for LineSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LineSink")
    }
}

/// Copies a pipe into the sink line by line until it closes; not joined (a grandchild may hold it).
fn forward(
    pipe: impl std::io::Read + Send + 'static,
    sink: LineSink,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut reader = std::io::BufReader::new(pipe);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => sink.write(&line),
            }
        }
    })
}

/// A program to run, with exactly `env`: nothing inherited leaks into a Calico component.
#[derive(Clone, Debug)]
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
    /// Whether it is in the service host's kill-on-close job (Windows only).
    fn in_job(&self) -> bool {
        false
    }
}

/// A real process on this machine (the Windows host, or a test program on SimHost).
pub struct LocalChild {
    child: std::process::Child,
    program: String,
    exited: Option<i32>,
    /// Whether it was put in the service host's kill-on-close job.
    in_job: bool,
    /// The threads copying its output into the log.
    forwarders: Vec<std::thread::JoinHandle<()>>,
}

impl LocalChild {
    /// Starts `spec` with a clean environment, on Windows in its own process group (Ctrl-Break).
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
            Output::Lines(_) => {
                cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
            }
        }
        #[cfg(windows)]
        {
            use std::os::windows::process::CommandExt;
            cmd.creation_flags(super::windows::process::CREATE_NEW_PROCESS_GROUP);
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| HostError::io(format!("start {}", spec.program), e))?;
        // In the service host's kill-on-close job, so a killed host leaves no orphan; a child
        // that cannot be put there runs anyway, and `in_job` says so.
        #[cfg(windows)]
        let in_job =
            super::windows::process::service_job().is_some_and(|j| j.assign(&child).is_ok());
        #[cfg(not(windows))]
        let in_job = false;
        let mut forwarders = Vec::new();
        if let Output::Lines(sink) = &spec.output {
            if let Some(out) = child.stdout.take() {
                forwarders.push(forward(out, sink.clone()));
            }
            if let Some(err) = child.stderr.take() {
                forwarders.push(forward(err, sink.clone()));
            }
        }
        Ok(Self {
            child,
            program: spec.program.clone(),
            exited: None,
            in_job,
            forwarders,
        })
    }

    /// Once it has exited, lets its last output reach the log (bounded: grandchildren).
    fn drain_output(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(1);
        let look = || {
            let busy = self.forwarders.iter().any(|f| !f.is_finished());
            Ok::<_, std::convert::Infallible>(if busy {
                Look::Pending(())
            } else {
                Look::Done(())
            })
        };
        let pauses = Pauses::every(Duration::from_millis(2));
        // Still forwarding at the deadline: the exit is reported all the same.
        poll_quietly(deadline, pauses, look, Ok).unwrap_or_else(|never| match never {});
        self.forwarders.retain(|f| !f.is_finished());
    }

    fn poll(&mut self) -> HostResult<Option<i32>> {
        if self.exited.is_none() {
            let status = self
                .child
                .try_wait()
                .map_err(|e| HostError::io(format!("wait for {}", self.program), e))?;
            // A process killed by a signal has no code; report it as -1.
            self.exited = status.map(|s| s.code().unwrap_or(-1));
            if self.exited.is_some() {
                self.drain_output();
            }
        }
        Ok(self.exited)
    }
}

/// How long a killed program is waited for before its stop is reported failed.
const KILLED_WAIT: Duration = Duration::from_secs(10);

impl Child for LocalChild {
    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn in_job(&self) -> bool {
        self.in_job
    }

    fn wait_timeout(&mut self, timeout: Duration) -> HostResult<Option<i32>> {
        let look = || {
            Ok(match self.poll()? {
                Some(code) => Look::Done(Some(code)),
                None => Look::Pending(()),
            })
        };
        let pauses = Pauses::every(Duration::from_millis(10));
        poll_quietly(Instant::now() + timeout, pauses, look, |()| Ok(None))
    }

    fn stop(&mut self, grace: Duration) -> HostResult<i32> {
        // On Windows a failed look still ends in the kill below: no second agent beside it.
        match self.poll() {
            Ok(Some(code)) => return Ok(code),
            Ok(None) => {
                ask_to_stop(self.child.id());
                if let Ok(Some(code)) = self.wait_timeout(grace) {
                    return Ok(code);
                }
            }
            // On Unix ECHILD means reaped elsewhere: ended, its pid maybe reused, so no signal.
            Err(e) if cfg!(unix) => return Err(e),
            // On Windows the kill goes through the process handle, never a reused pid.
            Err(_) => {}
        }
        // Ignored, or not to be looked at: kill it and wait within a bound (a process stuck
        // in a driver call may never end).
        let _ = self.child.kill();
        match self.wait_timeout(KILLED_WAIT)? {
            Some(code) => Ok(code),
            None => Err(HostError::Timeout {
                what: format!(
                    "{} (pid {}) to end after being killed",
                    self.program,
                    self.child.id()
                ),
                after: KILLED_WAIT,
            }),
        }
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
    /// A fault: every look and stop fails.
    pub unstoppable: bool,
}

impl SimulatedChild {
    fn fault(&self) -> HostResult<()> {
        if self.unstoppable {
            return Err(HostError::refused(
                format!("wait for pid {}", self.pid),
                "the process handle cannot be waited on (simulated)",
            ));
        }
        Ok(())
    }
}

impl Child for SimulatedChild {
    fn pid(&self) -> u32 {
        self.pid
    }

    fn wait_timeout(&mut self, timeout: Duration) -> HostResult<Option<i32>> {
        self.fault()?;
        if self.exited.is_none() {
            std::thread::sleep(timeout);
        }
        Ok(self.exited)
    }

    fn stop(&mut self, _grace: Duration) -> HostResult<i32> {
        self.fault()?;
        Ok(*self.exited.get_or_insert(0))
    }
}

/// Running programs.
pub trait Processes {
    /// Starts a program. The child is stopped (gracefully, then killed) when dropped.
    fn spawn(&self, spec: &ProcessSpec) -> HostResult<Box<dyn Child>>;
    /// The pid of a running process with this image name (`kubelet.exe`), if any.
    fn process_pid(&self, image_name: &str) -> HostResult<Option<u32>>;
    /// Whether process `pid` runs, with its start where the system says one; `None` once it
    /// has ended (`lock::running`).
    fn process_running(&self, pid: u32) -> Option<Option<u64>>;
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

    /// A wait ends at its timeout; a stop asks first, and kills a child that ignores it.
    #[test]
    fn wait_times_out_and_stop_is_graceful_first_then_kills() {
        let mut c = LocalChild::spawn(&sh("trap 'exit 7' TERM; while :; do sleep 0.05; done"))
            .expect("spawn");
        assert_eq!(
            c.wait_timeout(Duration::from_millis(100)).expect("wait"),
            None
        );
        assert_eq!(c.stop(Duration::from_secs(10)).expect("stop"), 7);
        let mut c =
            LocalChild::spawn(&sh("trap '' TERM; while :; do sleep 0.05; done")).expect("spawn");
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(c.stop(Duration::from_millis(200)).expect("stop"), -1);
    }

    #[test]
    fn output_reaches_the_sink_line_by_line_from_both_pipes() {
        let lines = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = lines.clone();
        let mut spec = sh("echo one; echo two >&2; printf 'three'");
        spec.output = Output::Lines(LineSink::new(move |l| {
            seen.lock()
                .expect("lock")
                .push(String::from_utf8_lossy(l).into_owned())
        }));
        let mut c = LocalChild::spawn(&spec).expect("spawn");
        assert_eq!(
            c.wait_timeout(Duration::from_secs(10)).expect("wait"),
            Some(0)
        );
        let deadline = Instant::now() + Duration::from_secs(10);
        while lines.lock().expect("lock").len() < 3 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut got = lines.lock().expect("lock").clone();
        got.sort();
        assert_eq!(got, ["one\n", "three", "two\n"]);
    }
}
