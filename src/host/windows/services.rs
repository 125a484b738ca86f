//! The service control manager through windows-service.

use crate::duration::{Look, Pauses, poll_quietly};
use crate::host::services::{send_stop_again, stop_undelivered};
use crate::host::{
    HostError, HostResult, InstalledService, RegValue, ServiceSpec, ServiceState, StartType,
};
use std::ffi::OsString;
use std::time::{Duration, Instant};
use windows_service::service::{
    Service, ServiceAccess, ServiceAction, ServiceActionType, ServiceDependency,
    ServiceErrorControl, ServiceFailureActions, ServiceFailureResetPeriod, ServiceInfo,
    ServiceStartType, ServiceState as WinState, ServiceType,
};
use windows_service::service_manager::{ServiceManager, ServiceManagerAccess};
use windows_sys::Win32::Foundation::{
    ERROR_DEPENDENT_SERVICES_RUNNING, ERROR_DUPLICATE_SERVICE_NAME, ERROR_INVALID_HANDLE,
    ERROR_INVALID_LEVEL, ERROR_SERVICE_ALREADY_RUNNING, ERROR_SERVICE_CANNOT_ACCEPT_CTRL,
    ERROR_SERVICE_DOES_NOT_EXIST, ERROR_SERVICE_EXISTS, ERROR_SERVICE_NOT_ACTIVE,
    ERROR_SERVICE_REQUEST_TIMEOUT,
};

fn os_code(e: &windows_service::Error) -> Option<u32> {
    match e {
        windows_service::Error::Winapi(io) => io.raw_os_error().map(|c| c as u32),
        _ => None,
    }
}

fn api(op: String, e: windows_service::Error) -> HostError {
    match e {
        // The OS's text and code, as `io::Error` prints them: `Access is denied. (os error 5)`.
        windows_service::Error::Winapi(io) => HostError::io(op, io),
        other => HostError::Refused {
            what: op,
            reason: other.to_string(),
        },
    }
}

fn manager(access: ServiceManagerAccess) -> HostResult<ServiceManager> {
    ServiceManager::local_computer(None::<&str>, access)
        .map_err(|e| api("connect to the service control manager".into(), e))
}

/// Opens a service; `None` when it does not exist.
fn open(name: &str, access: ServiceAccess) -> HostResult<Option<Service>> {
    match manager(ServiceManagerAccess::CONNECT)?.open_service(name, access) {
        Ok(s) => Ok(Some(s)),
        Err(e) if os_code(&e) == Some(ERROR_SERVICE_DOES_NOT_EXIST) => Ok(None),
        Err(e) => Err(api(format!("open service {name}"), e)),
    }
}

fn open_existing(name: &str, access: ServiceAccess) -> HostResult<Service> {
    open(name, access)?.ok_or_else(|| HostError::NotFound {
        what: format!("service {name}"),
    })
}

fn state(s: WinState) -> ServiceState {
    match s {
        WinState::Stopped => ServiceState::Stopped,
        WinState::StartPending => ServiceState::StartPending,
        WinState::StopPending => ServiceState::StopPending,
        WinState::Running => ServiceState::Running,
        _ => ServiceState::Other,
    }
}

fn info(spec: &ServiceSpec) -> ServiceInfo {
    ServiceInfo {
        name: OsString::from(&spec.name),
        display_name: OsString::from(&spec.display_name),
        service_type: ServiceType::OWN_PROCESS,
        start_type: match spec.start {
            StartType::Auto | StartType::DelayedAuto => ServiceStartType::AutoStart,
            StartType::Manual => ServiceStartType::OnDemand,
            StartType::Disabled => ServiceStartType::Disabled,
        },
        error_control: ServiceErrorControl::Normal,
        executable_path: spec.program.clone().into(),
        launch_arguments: spec.args.iter().map(OsString::from).collect(),
        dependencies: spec
            .dependencies
            .iter()
            .map(|d| ServiceDependency::Service(OsString::from(d)))
            .collect(),
        // None is LocalSystem.
        account_name: None,
        account_password: None,
    }
}

/// The settings `ServiceInfo` does not carry: description, delayed start, recovery.
fn configure_extras(svc: &Service, spec: &ServiceSpec) -> HostResult<()> {
    let op = |what: &str| format!("set the {what} of service {}", spec.name);
    svc.set_description(&spec.description)
        .map_err(|e| api(op("description"), e))?;
    // Set both ways: ChangeServiceConfigW alone leaves a delayed start as it was.
    if matches!(spec.start, StartType::Auto | StartType::DelayedAuto) {
        match svc.set_delayed_auto_start(spec.start == StartType::DelayedAuto) {
            Ok(()) => {}
            // Wine's SCM lacks SERVICE_CONFIG_DELAYED_AUTO_START_INFO.
            Err(e)
                if os_code(&e) == Some(ERROR_INVALID_LEVEL)
                    && super::ffi::is_wine()
                    && spec.start == StartType::Auto => {}
            Err(e) => return Err(api(op("delayed start"), e)),
        }
    }
    if let Some(r) = &spec.recovery {
        let actions = r
            .restart_after
            .iter()
            .map(|d| ServiceAction {
                action_type: ServiceActionType::Restart,
                delay: *d,
            })
            .collect();
        svc.update_failure_actions(ServiceFailureActions {
            reset_period: ServiceFailureResetPeriod::After(r.reset_after),
            reboot_msg: None,
            command: None,
            actions: Some(actions),
        })
        .map_err(|e| api(op("recovery actions"), e))?;
        if r.on_non_crash_failures {
            match svc.set_failure_actions_on_non_crash_failures(true) {
                Ok(()) => {}
                // Wine's SCM lacks SERVICE_CONFIG_FAILURE_ACTIONS_FLAG.
                Err(e) if os_code(&e) == Some(ERROR_INVALID_LEVEL) && super::ffi::is_wine() => {}
                Err(e) => return Err(api(op("failure actions flag"), e)),
            }
        }
    }
    Ok(())
}

pub fn query(name: &str) -> HostResult<Option<InstalledService>> {
    let Some(svc) = open(
        name,
        ServiceAccess::QUERY_STATUS | ServiceAccess::QUERY_CONFIG,
    )?
    else {
        return Ok(None);
    };
    let op = || format!("query service {name}");
    let status = svc.query_status().map_err(|e| api(op(), e))?;
    let config = svc.query_config().map_err(|e| api(op(), e))?;
    Ok(Some(InstalledService {
        name: name.to_owned(),
        state: state(status.current_state),
        pid: status.process_id,
        // A process that ends between the two questions has no start time to report.
        since: match status.process_id {
            Some(pid) => super::process::started_at(pid).ok().flatten(),
            None => None,
        },
        display_name: config.display_name.to_string_lossy().into_owned(),
        command_line: config.executable_path.to_string_lossy().into_owned(),
        start: match config.start_type {
            ServiceStartType::AutoStart if delayed_auto_start(&svc) => StartType::DelayedAuto,
            ServiceStartType::AutoStart => StartType::Auto,
            ServiceStartType::Disabled => StartType::Disabled,
            _ => StartType::Manual,
        },
        dependencies: dependencies(name, &config.dependencies)?,
        account: match config.account_name {
            None => "LocalSystem".into(),
            Some(a) => a.to_string_lossy().into_owned(),
        },
    }))
}

/// Whether an automatic service starts delayed (SERVICE_CONFIG_DELAYED_AUTO_START_INFO).
fn delayed_auto_start(svc: &Service) -> bool {
    use windows_sys::Win32::System::Services::{
        QueryServiceConfig2W, SERVICE_CONFIG_DELAYED_AUTO_START_INFO,
        SERVICE_DELAYED_AUTO_START_INFO,
    };
    let mut info = SERVICE_DELAYED_AUTO_START_INFO {
        fDelayedAutostart: 0,
    };
    let mut needed = 0u32;
    // SAFETY: the buffer is the struct of the level asked for, with its size.
    let ok = unsafe {
        QueryServiceConfig2W(
            svc.raw_handle(),
            SERVICE_CONFIG_DELAYED_AUTO_START_INFO,
            (&mut info as *mut SERVICE_DELAYED_AUTO_START_INFO).cast(),
            std::mem::size_of::<SERVICE_DELAYED_AUTO_START_INFO>() as u32,
            &mut needed,
        )
    };
    ok != 0 && info.fDelayedAutostart != 0
}

/// The services a service depends on; when QueryServiceConfigW reports none (Wine leaves them
/// out: programs/services/rpc.c), the service key's `DependOnService`.
fn dependencies(name: &str, reported: &[ServiceDependency]) -> HostResult<Vec<String>> {
    if !reported.is_empty() {
        return Ok(reported
            .iter()
            .map(|d| match d {
                ServiceDependency::Service(s) | ServiceDependency::Group(s) => {
                    s.to_string_lossy().into_owned()
                }
            })
            .collect());
    }
    let key = format!(r"HKLM\SYSTEM\CurrentControlSet\Services\{name}");
    Ok(match super::registry::get(&key, "DependOnService")? {
        Some(RegValue::MultiSz(v)) => v.into_iter().filter(|s| !s.is_empty()).collect(),
        _ => Vec::new(),
    })
}

const CONFIGURE: ServiceAccess = ServiceAccess::QUERY_CONFIG
    .union(ServiceAccess::CHANGE_CONFIG)
    .union(ServiceAccess::START)
    .union(ServiceAccess::QUERY_STATUS);

pub fn create(spec: &ServiceSpec) -> HostResult<()> {
    let scm = manager(ServiceManagerAccess::CONNECT | ServiceManagerAccess::CREATE_SERVICE)?;
    let svc = match scm.create_service(&info(spec), CONFIGURE) {
        Ok(s) => s,
        Err(e) if os_code(&e) == Some(ERROR_SERVICE_EXISTS) => {
            return Err(HostError::Exists {
                what: format!("service {}", spec.name),
            });
        }
        // CreateService: "The display name already exists ...".
        Err(e) if os_code(&e) == Some(ERROR_DUPLICATE_SERVICE_NAME) => {
            return Err(HostError::Exists {
                what: format!("a service named or displayed as {:?}", spec.display_name),
            });
        }
        Err(e) => return Err(api(format!("create service {}", spec.name), e)),
    };
    configure_extras(&svc, spec)
}

pub fn update(spec: &ServiceSpec) -> HostResult<()> {
    let svc = open_existing(&spec.name, CONFIGURE)?;
    svc.change_config(&info(spec))
        .map_err(|e| api(format!("configure service {}", spec.name), e))?;
    if spec.dependencies.is_empty() {
        clear_dependencies(&svc, &spec.name)?;
    }
    configure_extras(&svc, spec)
}

/// Removes every dependency with an empty double-NUL list (ChangeServiceConfigW keeps them
/// for the NULL that windows-service passes).
fn clear_dependencies(svc: &Service, name: &str) -> HostResult<()> {
    use windows_sys::Win32::System::Services::{ChangeServiceConfigW, SERVICE_NO_CHANGE};
    let empty: [u16; 2] = [0, 0];
    // SAFETY: the handle is the open service's; every other setting is SERVICE_NO_CHANGE or
    // NULL (unchanged), and `empty` outlives the call.
    let ok = unsafe {
        ChangeServiceConfigW(
            svc.raw_handle(),
            SERVICE_NO_CHANGE,
            SERVICE_NO_CHANGE,
            SERVICE_NO_CHANGE,
            std::ptr::null(),
            std::ptr::null(),
            std::ptr::null_mut(),
            empty.as_ptr(),
            std::ptr::null(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    if ok == 0 {
        return Err(HostError::io(
            format!("remove the dependencies of service {name}"),
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}

/// Polls the service until it reaches `want` (fails if it stops on the way to running).
fn wait_for(svc: &Service, name: &str, want: WinState, timeout: Duration) -> HostResult<()> {
    let mut fresh: Option<Service> = None;
    // Pending with the error to give at the deadline instead of the timeout, if any.
    let look = || -> HostResult<Look<(), Option<HostError>>> {
        let status = match fresh.as_ref().unwrap_or(svc).query_status() {
            Ok(s) => s,
            // Wine's SCM has answered ERROR_INVALID_HANDLE for a valid handle: a new one reads.
            Err(e) if os_code(&e) == Some(ERROR_INVALID_HANDLE) => {
                let failed = api(format!("query service {name}"), e);
                fresh = Some(open_existing(name, ServiceAccess::QUERY_STATUS)?);
                return Ok(Look::Pending(Some(failed)));
            }
            Err(e) => return Err(api(format!("query service {name}"), e)),
        };
        if status.current_state == want {
            return Ok(Look::Done(()));
        }
        if want == WinState::Running && status.current_state == WinState::Stopped {
            return Err(HostError::Refused {
                what: format!("start service {name}"),
                reason: format!(
                    "it stopped during start-up (exit code {:?})",
                    status.exit_code
                ),
            });
        }
        Ok(Look::Pending(None))
    };
    let pauses = Pauses::every(Duration::from_millis(100));
    poll_quietly(Instant::now() + timeout, pauses, look, |failed| {
        Err(failed.unwrap_or_else(|| HostError::Timeout {
            what: format!("service {name} to reach {want:?}"),
            after: timeout,
        }))
    })
}

pub fn start(name: &str, timeout: Duration) -> HostResult<()> {
    let svc = open_existing(name, ServiceAccess::START | ServiceAccess::QUERY_STATUS)?;
    match svc.start::<&str>(&[]) {
        Err(e) if os_code(&e) != Some(ERROR_SERVICE_ALREADY_RUNNING) => {
            return Err(api(format!("start service {name}"), e));
        }
        _ => {}
    }
    wait_for(&svc, name, WinState::Running, timeout)
}

pub fn stop(name: &str, timeout: Duration) -> HostResult<()> {
    use crate::host::AfterCannotAccept;
    let svc = open_existing(name, ServiceAccess::STOP | ServiceAccess::QUERY_STATUS)?;
    let started = Instant::now();
    let deadline = started + timeout;
    let mut undelivered = 0_u32;
    // Done: whether the stop was asked for; pending: the error to give at the deadline.
    let look = || -> HostResult<Look<bool, Option<HostError>>> {
        let sent = Instant::now();
        match svc.stop() {
            Err(e) if os_code(&e) == Some(ERROR_SERVICE_NOT_ACTIVE) => Ok(Look::Done(false)),
            Err(e) if os_code(&e) == Some(ERROR_DEPENDENT_SERVICES_RUNNING) => {
                Err(HostError::Refused {
                    what: format!("stop service {name}"),
                    reason: "a service that depends on it is running".into(),
                })
            }
            Err(e) if os_code(&e) == Some(ERROR_SERVICE_CANNOT_ACCEPT_CTRL) => {
                let status = svc
                    .query_status()
                    .map_err(|e| api(format!("query service {name}"), e))?;
                Ok(
                    match AfterCannotAccept::for_state(state(status.current_state)) {
                        AfterCannotAccept::Done => Look::Done(false),
                        AfterCannotAccept::WaitStopped => Look::Done(true),
                        AfterCannotAccept::RetryStop => Look::Pending(None),
                    },
                )
            }
            // ERROR_SERVICE_REQUEST_TIMEOUT: the SCM could not deliver the stop; sent again
            // while the time left holds another send (`send_stop_again`), else refused.
            Err(e) if os_code(&e) == Some(ERROR_SERVICE_REQUEST_TIMEOUT) => {
                undelivered += 1;
                let refused = stop_undelivered(name, undelivered, started.elapsed());
                let left = deadline.saturating_duration_since(Instant::now());
                if send_stop_again(sent.elapsed(), left) {
                    Ok(Look::Pending(Some(refused)))
                } else {
                    Err(refused)
                }
            }
            Err(e) => Err(api(format!("stop service {name}"), e)),
            Ok(_) => Ok(Look::Done(true)),
        }
    };
    let pauses = Pauses::every(Duration::from_millis(250));
    let asked = poll_quietly(deadline, pauses, look, |refused| {
        Err(refused.unwrap_or_else(|| HostError::Timeout {
            what: format!("service {name} to accept a stop (it was starting)"),
            after: timeout,
        }))
    })?;
    if !asked {
        return Ok(());
    }
    wait_for(
        &svc,
        name,
        WinState::Stopped,
        deadline.saturating_duration_since(Instant::now()),
    )
}

pub fn delete(name: &str) -> HostResult<()> {
    {
        let svc = open_existing(name, ServiceAccess::DELETE | ServiceAccess::QUERY_STATUS)?;
        let status = svc
            .query_status()
            .map_err(|e| api(format!("query service {name}"), e))?;
        if status.current_state != WinState::Stopped {
            return Err(HostError::Refused {
                what: format!("delete service {name}"),
                reason: "the service is running; stop it first".into(),
            });
        }
        svc.delete()
            .map_err(|e| api(format!("delete service {name}"), e))?;
        // The handle closes here: the SCM removes a service only when no handle is open.
    }
    let wait = Duration::from_secs(10);
    poll_quietly(
        Instant::now() + wait,
        Pauses::every(Duration::from_millis(100)),
        || {
            Ok(match open(name, ServiceAccess::QUERY_STATUS)? {
                Some(_) => Look::Pending(()),
                None => Look::Done(()),
            })
        },
        |()| {
            Err(HostError::Timeout {
                what: format!("service {name} to be removed (a handle to it is still open)"),
                after: wait,
            })
        },
    )
}
