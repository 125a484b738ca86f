//! The simulated service control manager.

use super::handle::{ServiceStart, SimHost};
use super::state::SimService;
use crate::duration::{Look, Pauses, poll_quietly};
use crate::host::services::{send_stop_again, stop_undelivered};
use crate::host::{
    Files, HostError, HostResult, InstalledService, ServiceSpec, ServiceState, Services, StartType,
    split_command_line,
};
use std::time::{Duration, Instant};

fn not_found(name: &str) -> HostError {
    HostError::not_found(format!("service {name}"))
}

impl SimHost {
    /// Sends the stop as `windows::services::stop` does, undelivered sends sent again in time.
    fn send_stop(&self, name: &str, key: &str, timeout: Duration) -> HostResult<()> {
        let started = Instant::now();
        let mut sends = 0_u32;
        let look = || -> HostResult<Look<(), HostError>> {
            let sent = Instant::now();
            let refused = self.world(|s| {
                let u = s.settings.stop_undelivered.get_mut(key)?;
                if u.first.is_some_and(|n| u.refused >= n) {
                    return None;
                }
                u.refused += 1;
                let (takes, late) = (Duration::from_millis(u.takes_ms), u.taken_late);
                if late && let Some(svc) = s.services.get_mut(key) {
                    svc.state = ServiceState::Stopped;
                    svc.pid = None;
                }
                Some(takes)
            })?;
            let Some(takes) = refused else {
                return Ok(Look::Done(()));
            };
            // The send blocks for its time: the one loop's wait to a deadline, looking at nothing.
            poll_quietly(
                sent + takes,
                Pauses::every(takes),
                || Ok::<_, HostError>(Look::Pending(())),
                |()| Ok(()),
            )?;
            sends += 1;
            let refused = stop_undelivered(name, sends, started.elapsed());
            let left = (started + timeout).saturating_duration_since(Instant::now());
            if send_stop_again(sent.elapsed(), left) {
                Ok(Look::Pending(refused))
            } else {
                Err(refused)
            }
        };
        let pauses = Pauses::every(Duration::from_millis(250));
        poll_quietly(started + timeout, pauses, look, Err)
    }
}

impl SimService {
    fn from_spec(spec: &ServiceSpec, state: ServiceState) -> Self {
        Self {
            name: spec.name.clone(),
            display_name: spec.display_name.clone(),
            description: spec.description.clone(),
            command_line: spec.command_line(),
            start: spec.start,
            dependencies: spec.dependencies.clone(),
            recovery: spec.recovery.clone(),
            state,
            pid: None,
            since: None,
            stop_takes_ms: None,
            stopped_at_ms: None,
        }
    }
}

/// What starting a service runs: `calicoctl-win.exe service run ROLE` runs the role's start-up.
pub(super) fn own_service_args(command_line: &str) -> Option<Vec<String>> {
    let (program, args) = split_command_line(command_line);
    let file = crate::host::services::file_name(&program);
    let ours = file == "calicoctl-win.exe" || file == "calicoctl-win";
    (ours && args.first().map(String::as_str) == Some("service")).then_some(args)
}

impl Services for SimHost {
    fn service_query(&self, name: &str) -> HostResult<Option<InstalledService>> {
        let Some(mut svc) = self.read(|s| s.services.get(&name.to_ascii_lowercase()).cloned())
        else {
            return Ok(None);
        };
        svc.settle();
        Ok(Some(InstalledService {
            name: svc.name,
            state: svc.state,
            pid: svc.pid,
            since: svc.since,
            display_name: svc.display_name,
            command_line: svc.command_line,
            start: svc.start,
            dependencies: svc.dependencies,
            account: "LocalSystem".into(),
        }))
    }

    fn service_create(&self, spec: &ServiceSpec) -> HostResult<()> {
        self.mutate(&format!("create service {}", spec.name), |s| {
            let key = spec.name.to_ascii_lowercase();
            if s.services.contains_key(&key) {
                return Err(HostError::exists(format!("service {}", spec.name)));
            }
            // As CreateService: a display name is unique among names and display names.
            let shown = spec.display_name.to_ascii_lowercase();
            if s.services
                .iter()
                .any(|(name, svc)| *name == shown || svc.display_name.eq_ignore_ascii_case(&shown))
            {
                return Err(HostError::exists(format!(
                    "a service named or displayed as {:?}",
                    spec.display_name
                )));
            }
            s.services
                .insert(key, SimService::from_spec(spec, ServiceState::Stopped));
            Ok(())
        })
    }

    fn service_update(&self, spec: &ServiceSpec) -> HostResult<()> {
        self.mutate(&format!("configure service {}", spec.name), |s| {
            let svc = s
                .services
                .get_mut(&spec.name.to_ascii_lowercase())
                .ok_or_else(|| not_found(&spec.name))?;
            let (state, pid, since) = (svc.state, svc.pid, svc.since);
            *svc = SimService::from_spec(spec, state);
            svc.pid = pid;
            svc.since = since;
            Ok(())
        })
    }

    // The simulated start is immediate, so the timeout only passes on to the dependencies.
    #[allow(clippy::only_used_in_recursion)]
    fn service_start(&self, name: &str, timeout: Duration) -> HostResult<()> {
        let Some(mut svc) = self.read(|s| s.services.get(&name.to_ascii_lowercase()).cloned())
        else {
            return Err(not_found(name));
        };
        svc.settle();
        if svc.state == ServiceState::Running {
            return Ok(());
        }
        if svc.state == ServiceState::StopPending {
            // StartService on a service still stopping: ERROR_SERVICE_ALREADY_RUNNING (1056).
            return Err(HostError::Api {
                op: format!("start service {name}"),
                code: 1056,
                message: "an instance of the service is already running (it is still stopping)"
                    .into(),
            });
        }
        if svc.start == StartType::Disabled {
            return Err(HostError::refused(
                format!("start service {name}"),
                "the service is disabled",
            ));
        }
        // Dependencies start first; dependents never do (Microsoft,
        // ServiceInstaller.ServicesDependedOn; "Automatically Starting Services").
        for dep in &svc.dependencies {
            self.service_start(dep, timeout)?;
        }
        let (program, _) = split_command_line(&svc.command_line);
        if super::files::is_windows_path(&program) && self.file_access(&program)?.is_none() {
            return Err(HostError::Api {
                op: format!("start service {name}"),
                code: 2,
                message: format!("the system cannot find the file specified ({program})"),
            });
        }
        let key = name.to_ascii_lowercase();
        self.mutate(&format!("start service {name}"), |s| {
            let pid = s.settings.next_pid();
            let svc = s.services.get_mut(&key).ok_or_else(|| not_found(name))?;
            svc.state = ServiceState::StartPending;
            svc.pid = Some(pid);
            svc.since = Some(super::state::unix_now_ms() / 1000);
            Ok(())
        })?;
        let started = match (&self.start_hook, own_service_args(&svc.command_line)) {
            (Some(hook), Some(args)) => hook(
                self,
                &ServiceStart {
                    name: svc.name.clone(),
                    args,
                },
            ),
            _ => Ok(()),
        };
        self.world(|s| {
            if let Some(s) = s.services.get_mut(&key) {
                match &started {
                    Ok(()) => s.state = ServiceState::Running,
                    Err(_) => s.stop_now(),
                }
            }
        })?;
        started.map_err(|e| {
            HostError::refused(
                format!("start service {name}"),
                format!("it stopped during start-up: {e:#}"),
            )
        })
    }

    fn service_stop(&self, name: &str, timeout: Duration) -> HostResult<()> {
        let key = name.to_ascii_lowercase();
        self.send_stop(name, &key, timeout)?;
        let pending = self.mutate(&format!("stop service {name}"), |s| {
            // ERROR_DEPENDENT_SERVICES_RUNNING (Microsoft, "Stopping a Service").
            let running_dependent = s.services.values().find(|d| {
                d.state != ServiceState::Stopped
                    && d.dependencies.iter().any(|x| x.eq_ignore_ascii_case(name))
            });
            if let Some(d) = running_dependent {
                return Err(HostError::refused(
                    format!("stop service {name}"),
                    format!("{} depends on it and is running", d.name),
                ));
            }
            let svc = s.services.get_mut(&key).ok_or_else(|| not_found(name))?;
            svc.settle();
            if svc.state == ServiceState::Stopped {
                return Ok(false);
            }
            // A body slower to stop than the caller waits: StopPending past the caller's wait.
            let now = super::state::unix_now_ms();
            let at = match (svc.state, svc.stop_takes_ms) {
                (ServiceState::StopPending, _) => svc.stopped_at_ms.unwrap_or(now),
                (_, Some(ms)) => now + i64::try_from(ms).unwrap_or(i64::MAX / 2),
                (_, None) => now,
            };
            if at - now > i64::try_from(timeout.as_millis()).unwrap_or(i64::MAX) {
                svc.state = ServiceState::StopPending;
                svc.stopped_at_ms = Some(at);
                return Ok(true);
            }
            svc.stop_now();
            Ok(false)
        })?;
        if !pending {
            return Ok(());
        }
        // The caller's wait, as `windows::services::wait_for`: a look every 100 ms.
        let look = || -> HostResult<Look<(), ()>> {
            let g = self.lock();
            let stopped = g.services.get(&key).is_none_or(|s| {
                s.state == ServiceState::Stopped
                    || s.stopped_at_ms
                        .is_some_and(|t| super::state::unix_now_ms() >= t)
            });
            Ok(if stopped {
                Look::Done(())
            } else {
                Look::Pending(())
            })
        };
        let pauses = Pauses::every(Duration::from_millis(100));
        poll_quietly(Instant::now() + timeout, pauses, look, |()| {
            Err(HostError::Timeout {
                what: format!("service {name} to reach Stopped"),
                after: timeout,
            })
        })
    }

    fn service_delete(&self, name: &str) -> HostResult<()> {
        self.mutate(&format!("delete service {name}"), |s| {
            let key = name.to_ascii_lowercase();
            let svc = s.services.get(&key).ok_or_else(|| not_found(name))?;
            if svc.state != ServiceState::Stopped {
                return Err(HostError::refused(
                    format!("delete service {name}"),
                    "the service is running; stop it first",
                ));
            }
            s.services.remove(&key);
            Ok(())
        })
    }
}
