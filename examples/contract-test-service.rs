//! A test fixture, not a product binary: a minimal Windows service for the host contract
//! tests (under Wine and on real Windows) and the lifecycle tests' stand-in containerd. It
//! reports Running and stops when asked. With `--hold-stop FILE`, its control handler does not
//! return from a stop until FILE exists, and the service then stops: a service that does not
//! answer the Service Control Manager. On other systems it does nothing.

#[cfg(windows)]
mod service {
    use std::sync::mpsc;
    use std::time::Duration;
    use windows_service::service::{
        ServiceControl, ServiceControlAccept, ServiceExitCode, ServiceState, ServiceStatus,
        ServiceType,
    };
    use windows_service::service_control_handler::{self, ServiceControlHandlerResult};
    use windows_service::{define_windows_service, service_dispatcher};

    define_windows_service!(ffi_service_main, service_main);

    pub fn run() -> windows_service::Result<()> {
        // The name is ignored for a service that runs in its own process.
        service_dispatcher::start("CalicoctlWinContractTest", ffi_service_main)
    }

    fn status(state: ServiceState) -> ServiceStatus {
        ServiceStatus {
            service_type: ServiceType::OWN_PROCESS,
            current_state: state,
            controls_accepted: if state == ServiceState::Running {
                ServiceControlAccept::STOP
            } else {
                ServiceControlAccept::empty()
            },
            exit_code: ServiceExitCode::Win32(0),
            checkpoint: 0,
            wait_hint: Duration::from_secs(5),
            process_id: None,
        }
    }

    /// A line in `<exe>.log` beside the program: what the service did, for a test that fails.
    fn note(line: &str) {
        use std::io::Write;
        if let Ok(exe) = std::env::current_exe()
            && let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(exe.with_extension("log"))
        {
            let _ = writeln!(f, "{line}");
        }
    }

    fn service_main(_args: Vec<std::ffi::OsString>) {
        note("started");
        let (tx, rx) = mpsc::channel();
        let args: Vec<String> = std::env::args().collect();
        let hold = args
            .iter()
            .position(|a| a == "--hold-stop")
            .and_then(|i| args.get(i + 1))
            .map(std::path::PathBuf::from);
        let handler = move |control| match control {
            ServiceControl::Stop => {
                if let Some(file) = &hold {
                    note("holding the stop");
                    // Bounded so that a test that fails leaves no service behind for long.
                    for _ in 0..1200 {
                        if file.exists() {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(100));
                    }
                    note("released");
                }
                let _ = tx.send(());
                ServiceControlHandlerResult::NoError
            }
            ServiceControl::Interrogate => ServiceControlHandlerResult::NoError,
            other => {
                note(&format!("control {other:?}"));
                ServiceControlHandlerResult::NotImplemented
            }
        };
        let Ok(handle) = service_control_handler::register("CalicoctlWinContractTest", handler)
        else {
            return;
        };
        let _ = handle.set_service_status(status(ServiceState::Running));
        let why = rx.recv_timeout(Duration::from_secs(1800));
        note(&format!("stopping: {why:?}"));
        let _ = handle.set_service_status(status(ServiceState::Stopped));
    }
}

fn main() {
    #[cfg(windows)]
    if let Err(e) = service::run() {
        eprintln!("not started by the service control manager: {e}");
        std::process::exit(1);
    }
}
