//! The service control manager: a service's registration and state, and the `Services` trait.

use super::error::HostResult;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How a service starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StartType {
    Auto,
    DelayedAuto,
    Manual,
    Disabled,
}

/// What the service control manager does when a service fails.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recovery {
    /// Restart after these delays, for the first, second, subsequent failures.
    #[serde(with = "crate::duration::text::list")]
    pub restart_after: Vec<Duration>,
    /// The failure count resets after this long without a failure.
    #[serde(with = "crate::duration::text")]
    pub reset_after: Duration,
    /// Also apply the actions when the service stops itself with an error exit code.
    pub on_non_crash_failures: bool,
}

/// A service to register. Services always run as LocalSystem.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceSpec {
    pub name: String,
    pub display_name: String,
    pub description: String,
    /// The program, a Windows path.
    pub program: String,
    pub args: Vec<String>,
    /// Services this one depends on.
    pub dependencies: Vec<String>,
    pub start: StartType,
    pub recovery: Option<Recovery>,
}

impl ServiceSpec {
    /// The command line the SCM stores for the service as windows-service registers it (each
    /// part escaped by its `shell_escape::escape`).
    pub fn command_line(&self) -> String {
        std::iter::once(quote_arg(&self.program))
            .chain(self.args.iter().map(|a| quote_arg(a)))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Whether a stored command line runs this program with these arguments, compared as
    /// CommandLineToArgvW parses it, paths in any case.
    pub fn same_command(&self, stored: &str) -> bool {
        let (program, args) = split_command_line(stored);
        program.eq_ignore_ascii_case(&self.program) && args == self.args
    }
}

/// One argument escaped as windows-service 0.8's `shell_escape.rs` escapes it.
fn quote_arg(a: &str) -> String {
    if !a.is_empty() && !a.contains([' ', '\t', '\n', '\u{b}', '"']) {
        return a.to_owned();
    }
    let mut out = String::with_capacity(a.len() + 2);
    out.push('"');
    let mut slashes = 0usize;
    for c in a.chars() {
        match c {
            '\\' => slashes += 1,
            '"' => {
                out.extend(std::iter::repeat_n('\\', slashes * 2 + 1));
                out.push('"');
                slashes = 0;
            }
            c => {
                out.extend(std::iter::repeat_n('\\', slashes));
                out.push(c);
                slashes = 0;
            }
        }
    }
    out.extend(std::iter::repeat_n('\\', slashes * 2));
    out.push('"');
    out
}

/// Splits a command line into the program and its arguments as CommandLineToArgvW does
/// (checked against it under Wine: `host::windows::cmdline_tests`).
pub fn split_command_line(line: &str) -> (String, Vec<String>) {
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    let mut program = String::new();
    if chars.first() == Some(&'"') {
        i = 1;
        while i < chars.len() && chars[i] != '"' {
            program.push(chars[i]);
            i += 1;
        }
        i += 1;
    } else {
        while i < chars.len() && !matches!(chars[i], ' ' | '\t') {
            program.push(chars[i]);
            i += 1;
        }
    }
    let mut args = Vec::new();
    loop {
        while i < chars.len() && matches!(chars[i], ' ' | '\t') {
            i += 1;
        }
        if i >= chars.len() {
            break;
        }
        let mut arg = String::new();
        let mut quoted = false;
        while i < chars.len() {
            match chars[i] {
                ' ' | '\t' if !quoted => break,
                '\\' => {
                    let run = chars[i..].iter().take_while(|c| **c == '\\').count();
                    i += run;
                    if chars.get(i) == Some(&'"') {
                        arg.extend(std::iter::repeat_n('\\', run / 2));
                        if run % 2 == 1 {
                            arg.push('"');
                            i += 1;
                        }
                    } else {
                        arg.extend(std::iter::repeat_n('\\', run));
                    }
                }
                // Wine's CommandLineToArgvW: a third quote in a row emits one, ends the part.
                '"' if quoted && chars.get(i + 1) == Some(&'"') => {
                    arg.push('"');
                    quoted = false;
                    i += 2;
                }
                '"' => {
                    quoted = !quoted;
                    i += 1;
                }
                c => {
                    arg.push(c);
                    i += 1;
                }
            }
        }
        args.push(arg);
    }
    (program, args)
}

/// The value of `--name=V` or `--name V` in `args` (Go's pflag takes both); given twice, the
/// last (spf13/pflag `string.go`, `stringValue.Set`, overwrites).
pub fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    let long = format!("--{name}");
    args.iter().enumerate().rev().find_map(|(i, a)| {
        if let Some(v) = a.strip_prefix(&format!("{long}=")) {
            Some(v)
        } else if *a == long {
            args.get(i + 1).map(String::as_str)
        } else {
            None
        }
    })
}

/// A service's current state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServiceState {
    Stopped,
    StartPending,
    StopPending,
    Running,
    /// Paused or continuing: not a state the tool puts a service in.
    Other,
}

/// What a stop does on `ERROR_SERVICE_CANNOT_ACCEPT_CTRL` (1061; Microsoft's ControlService):
/// wait for a starting service to run, then stop it; wait for a stopping one to stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterCannotAccept {
    /// Stopped already: done.
    Done,
    /// Still starting or between states: wait a moment, then send the stop again.
    RetryStop,
    /// Stopping: wait until it has stopped.
    WaitStopped,
}

impl AfterCannotAccept {
    pub fn for_state(state: ServiceState) -> Self {
        match state {
            ServiceState::Stopped => Self::Done,
            ServiceState::StopPending => Self::WaitStopped,
            ServiceState::StartPending | ServiceState::Running | ServiceState::Other => {
                Self::RetryStop
            }
        }
    }
}

/// ControlService's ERROR_SERVICE_REQUEST_TIMEOUT: the SCM, busy with another control, could
/// not deliver this one within `ServicesPipeTimeout` (Microsoft, "ControlService", Remarks).
pub const ERROR_SERVICE_REQUEST_TIMEOUT: u32 = 1053;

/// Whether an undelivered stop is sent again: only while the time left holds another send.
pub fn send_stop_again(last_took: Duration, left: Duration) -> bool {
    !left.is_zero() && left >= last_took
}

/// The refusal of a stop the SCM could not deliver, after `sends` sends over `over`.
pub fn stop_undelivered(name: &str, sends: u32, over: Duration) -> super::HostError {
    let times = if sends == 1 {
        "once".to_owned()
    } else {
        format!("{sends} times")
    };
    super::HostError::Api {
        op: format!("stop service {name}"),
        code: ERROR_SERVICE_REQUEST_TIMEOUT,
        message: format!(
            "the Service Control Manager could not deliver the stop control (sent {times} over {}s; each send waits up to ServicesPipeTimeout, 30 s by default, for any service busy with a control)",
            over.as_secs()
        ),
    }
}

/// A registered service: its state and configuration as the SCM reports them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstalledService {
    pub name: String,
    pub state: ServiceState,
    pub pid: Option<u32>,
    /// Unix seconds when the service's process started; `None` when not running or unknown.
    #[serde(default)]
    pub since: Option<i64>,
    pub display_name: String,
    /// The whole command line, program and arguments (the SCM's `ImagePath`).
    pub command_line: String,
    pub start: StartType,
    pub dependencies: Vec<String>,
    pub account: String,
}

impl InstalledService {
    /// The program file name, lower case (`nssm.exe`, `containerd.exe`).
    pub fn program_file_name(&self) -> String {
        file_name(&split_command_line(&self.command_line).0)
    }
}

/// The file name of a program's path, lower case.
pub fn file_name(program: &str) -> String {
    let name = program.rsplit(['\\', '/']).next();
    name.unwrap_or_default().to_ascii_lowercase()
}

/// The service control manager.
pub trait Services {
    /// A service's state and configuration, or `None` when it is not registered.
    fn service_query(&self, name: &str) -> HostResult<Option<InstalledService>>;
    /// Registers a service; fails with `Exists` when the name is taken.
    fn service_create(&self, spec: &ServiceSpec) -> HostResult<()>;
    /// Rewrites the configuration of a registered service.
    fn service_update(&self, spec: &ServiceSpec) -> HostResult<()>;
    /// Starts a service and waits until it runs; starting a running service is not an error.
    fn service_start(&self, name: &str, timeout: Duration) -> HostResult<()>;
    /// Stops a service and waits until it stopped; stopping a stopped service is not an error.
    fn service_stop(&self, name: &str, timeout: Duration) -> HostResult<()>;
    /// Deletes a stopped service; a running one is refused.
    fn service_delete(&self, name: &str) -> HostResult<()>;
}

#[cfg(test)]
mod command_line_tests {
    use super::*;

    fn spec(program: &str, args: &[&str]) -> ServiceSpec {
        ServiceSpec {
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            ..crate::host::contract::service("CalicoNode", program)
        }
    }

    #[test]
    fn arguments_split_as_command_line_to_argv_w_splits_them() {
        // Microsoft's documented examples ("Parsing C++ command-line arguments"), after a program.
        let cases: &[(&str, &[&str])] = &[
            (r#""abc" d e"#, &["abc", "d", "e"]),
            (r#"a\\\b d"e f"g h"#, &[r"a\\\b", "de fg", "h"]),
            (r#"a\\\"b c d"#, &[r#"a\"b"#, "c", "d"]),
            (r#"a\\\\"b c" d e"#, &[r"a\\b c", "d", "e"]),
            (r#"a"b"" c d"#, &[r#"ab""#, "c", "d"]),
        ];
        for (line, want) in cases {
            let (program, args) =
                split_command_line(&format!(r#""C:\Program Files\x.exe" {line}"#));
            assert_eq!(program, r"C:\Program Files\x.exe");
            assert_eq!(args, *want, "{line}");
        }
        // The program is read without escapes, quoted or not.
        assert_eq!(
            split_command_line(r"C:\k\kubelet.exe --v=2").0,
            r"C:\k\kubelet.exe"
        );
    }

    #[test]
    fn the_stored_command_line_is_windows_services_and_compares_by_meaning() {
        let s = spec(
            r"C:\CalicoWindows\calicoctl-win.exe",
            &[
                "service",
                "run",
                "node",
                "--install-root",
                r"C:\CalicoWindows",
            ],
        );
        // windows-service quotes the program only when it needs it.
        assert_eq!(
            s.command_line(),
            r"C:\CalicoWindows\calicoctl-win.exe service run node --install-root C:\CalicoWindows"
        );
        // What an earlier calicoctl-win, or a hand-made registration, stored: the same command.
        assert!(s.same_command(
            r#""C:\CalicoWindows\calicoctl-win.exe" service run node --install-root "C:\CalicoWindows""#
        ));
        assert!(s.same_command(
            r"c:\calicowindows\CALICOCTL-WIN.EXE service run node --install-root C:\CalicoWindows"
        ));
        assert!(!s.same_command(
            r"C:\CalicoWindows\calicoctl-win.exe service run felix --install-root C:\CalicoWindows"
        ));
        // Any argument survives the round trip, spaces, quotes and trailing backslashes too.
        let odd = spec(
            r"C:\Program Files\Calico\calicoctl-win.exe",
            &[
                "",
                "a b",
                r#"say "hi""#,
                r"C:\dir\",
                r#"x\"y"#,
                "tab\there",
                r"\\server\share\",
            ],
        );
        assert!(
            odd.same_command(&odd.command_line()),
            "{}",
            odd.command_line()
        );
        assert_eq!(
            split_command_line(&odd.command_line()).1,
            odd.args,
            "{}",
            odd.command_line()
        );
    }

    /// On 1061 a stop finishes, retries once the service runs, or waits for the stop under way.
    #[test]
    fn a_stop_refused_while_pending_waits_instead_of_failing() {
        for (state, after) in [
            (ServiceState::Stopped, AfterCannotAccept::Done),
            (ServiceState::StopPending, AfterCannotAccept::WaitStopped),
            (ServiceState::StartPending, AfterCannotAccept::RetryStop),
        ] {
            assert_eq!(AfterCannotAccept::for_state(state), after, "{state:?}");
        }
    }
}
