//! A stop the service does not answer. The Service Control Manager sends one control at a time
//! and gives up delivering it after a bound of its own (Microsoft, "ControlService function
//! (winsvc.h)", Remarks: up to 30 seconds, `ServicesPipeTimeout`, then
//! ERROR_SERVICE_REQUEST_TIMEOUT; Wine's services.exe, 10 s). Run under Wine in CI; on a real
//! host by the Windows workflow.

use super::WindowsHost;
use crate::host::contract::on_windows::{Defer, SCM, built, remove_service_at_end};
use crate::host::contract::unique;
use crate::host::services::Services;
use crate::host::{HostError, ServiceSpec, StartType};
use std::time::Duration;

/// The stop's own timeout, longer than the SCM's bound: the SCM's answer ends the stop.
const LONGER_THAN_THE_SCM: Duration = Duration::from_secs(120);

#[test]
fn a_stop_the_scm_gives_up_delivering_is_refused_naming_the_service_before_its_own_timeout() {
    // Real Windows only: under Wine the held control left services.exe unable to serve the
    // later service tests of the same run (two `plan::wine_tests` hung after this one passed,
    // in three runs), which no real SCM is documented to do.
    if !crate::host::contract::on_windows::real_host() {
        return;
    }
    let _turn = SCM.lock().unwrap_or_else(|p| p.into_inner());
    let h = WindowsHost::new();
    let name = unique("CwHold");
    let release = std::env::temp_dir().join(format!("{name}.release"));
    let _ = std::fs::remove_file(&release);
    let spec = ServiceSpec {
        name: name.clone(),
        display_name: format!("calicoctl-win stop test {name}"),
        description: "Created and deleted by calicoctl-win's stop test.".into(),
        program: built("examples/contract-test-service.exe")
            .display()
            .to_string(),
        args: vec!["--hold-stop".into(), release.display().to_string()],
        dependencies: Vec::new(),
        start: StartType::Manual,
        recovery: None,
    };
    h.service_create(&spec).expect("create");
    let _removed = remove_service_at_end(&h, &name);
    // Dropped first: the handler is let go before the service is stopped and deleted.
    let _released = Defer(|| {
        let _ = std::fs::write(&release, b"go");
    });
    h.service_start(&name, LONGER_THAN_THE_SCM).expect("start");

    let asked = std::time::Instant::now();
    let err = h
        .service_stop(&name, LONGER_THAN_THE_SCM)
        .expect_err("the handler holds the stop");
    // The SCM's answer ended the stop, not the stop's own timeout.
    assert!(
        asked.elapsed() < LONGER_THAN_THE_SCM,
        "{:?}",
        asked.elapsed()
    );
    assert!(
        matches!(&err, HostError::Refused { what, .. } if what.contains(&name)),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("Service Control Manager gave up delivering the stop control"),
        "{err}"
    );
}
