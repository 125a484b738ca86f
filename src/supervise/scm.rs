//! The Windows service dispatcher glue: states, Stop and Shutdown to the stop request, no logic.

use super::Stop;
use std::sync::Mutex;
use std::time::Duration;
use windows_service::service::{
    ServiceControl, ServiceControlAccept, ServiceExitCode, ServiceState, ServiceStatus, ServiceType,
};
use windows_service::service_control_handler::{self, ServiceControlHandlerResult};
use windows_service::{define_windows_service, service_dispatcher};

/// The body the dispatcher's thread runs: gets the stop request, returns the exit code.
pub type Body = Box<dyn FnOnce(&Stop) -> u32 + Send>;

/// The body handed from `run` to `service_main` (the dispatcher calls a plain function).
static BODY: Mutex<Option<(String, Duration, Body)>> = Mutex::new(None);

define_windows_service!(ffi_service_main, service_main);

/// Runs `body` as the service `name` until it returns; OS error 1063 outside the SCM.
pub fn run(name: &str, stop_wait_hint: Duration, body: Body) -> windows_service::Result<()> {
    *BODY.lock().unwrap_or_else(|p| p.into_inner()) = Some((name.to_owned(), stop_wait_hint, body));
    service_dispatcher::start(name, ffi_service_main)
}

/// A status with a checkpoint: a pending state advances it at least once per wait hint, or
/// the SCM may take the service for hung (Microsoft's SERVICE_STATUS page, `dwCheckPoint`).
fn status_at(
    state: ServiceState,
    exit: u32,
    wait_hint: Duration,
    checkpoint: u32,
) -> ServiceStatus {
    ServiceStatus {
        service_type: ServiceType::OWN_PROCESS,
        current_state: state,
        controls_accepted: if state == ServiceState::Running {
            ServiceControlAccept::STOP | ServiceControlAccept::SHUTDOWN
        } else {
            ServiceControlAccept::empty()
        },
        exit_code: if exit == 0 {
            ServiceExitCode::Win32(0)
        } else {
            ServiceExitCode::ServiceSpecific(exit)
        },
        checkpoint,
        wait_hint,
        process_id: None,
    }
}

fn service_main(_args: Vec<std::ffi::OsString>) {
    let Some((name, hint, body)) = BODY.lock().unwrap_or_else(|p| p.into_inner()).take() else {
        return;
    };
    let stop = Stop::new();
    let requested = stop.clone();
    let handler = move |control| match control {
        ServiceControl::Stop => {
            requested.request();
            ServiceControlHandlerResult::NoError
        }
        ServiceControl::Shutdown => {
            requested.request_shutdown();
            ServiceControlHandlerResult::NoError
        }
        ServiceControl::Interrogate => ServiceControlHandlerResult::NoError,
        _ => ServiceControlHandlerResult::NotImplemented,
    };
    let Ok(handle) = service_control_handler::register(&name, handler) else {
        return;
    };
    // A console of its own, so that a child started in a new process group can be sent
    // Ctrl-Break: the graceful stop before the kill.
    // SAFETY: no arguments; failing (a console already exists) changes nothing.
    unsafe { windows_sys::Win32::System::Console::AllocConsole() };
    let _ = handle.set_service_status(status_at(ServiceState::Running, 0, Duration::ZERO, 0));
    let watcher = stop.clone();
    let ended = Stop::new();
    let body_ended = ended.clone();
    let reporter = std::thread::spawn(move || {
        // StopPending at once, its checkpoint advanced every half wait hint while the child stops.
        while !watcher.wait(Duration::from_secs(3600)) {}
        let every = (hint / 2).max(Duration::from_millis(500));
        let mut checkpoint = 1;
        loop {
            let _ = handle.set_service_status(status_at(
                ServiceState::StopPending,
                0,
                hint,
                checkpoint,
            ));
            if body_ended.wait(every) {
                break;
            }
            checkpoint = checkpoint.saturating_add(1);
        }
        handle
    });
    let code = body(&stop);
    stop.request();
    ended.request();
    if let Ok(handle) = reporter.join() {
        let _ =
            handle.set_service_status(status_at(ServiceState::Stopped, code, Duration::ZERO, 0));
    }
}
