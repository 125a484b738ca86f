//! A stop the service does not answer: the SCM gives up after `ServicesPipeTimeout`
//! (ERROR_SERVICE_REQUEST_TIMEOUT; Wine's services.exe after 10 s).

use super::WindowsHost;
use crate::host::contract::on_windows::{Defer, SCM, built, remove_service_at_end};
use crate::host::contract::{service, unique};
use crate::host::services::Services;
use crate::host::{HostError, ServiceSpec};
use std::time::Duration;

/// The start's timeout, longer than the SCM's bound.
const LONGER_THAN_THE_SCM: Duration = Duration::from_secs(120);
/// The stop's timeout: between one send's bound (30 s) and two.
const ONE_SEND: Duration = Duration::from_secs(45);

#[test]
fn a_stop_the_scm_could_not_deliver_is_refused_with_1053_naming_the_service_when_no_time_is_left() {
    // Real Windows only: under Wine the held control hung later service tests.
    if !crate::host::contract::on_windows::real_host() {
        return;
    }
    let _turn = SCM.lock().unwrap_or_else(|p| p.into_inner());
    let h = WindowsHost::new();
    let name = unique("CwHold");
    let release = std::env::temp_dir().join(format!("{name}.release"));
    let _ = std::fs::remove_file(&release);
    let program = built("examples/contract-test-service.exe");
    let spec = ServiceSpec {
        display_name: format!("calicoctl-win stop test {name}"),
        description: "Created and deleted by calicoctl-win's stop test.".into(),
        args: vec!["--hold-stop".into(), release.display().to_string()],
        ..service(&name, &program.display().to_string())
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
        .service_stop(&name, ONE_SEND)
        .expect_err("the handler holds the stop");
    // The SCM's answer ended the stop, not the stop's own timeout.
    assert!(asked.elapsed() < ONE_SEND, "{:?}", asked.elapsed());
    assert!(
        matches!(&err, HostError::Api { op, code: 1053, .. } if op.contains(&name)),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("Service Control Manager could not deliver the stop control (sent once"),
        "{err}"
    );
}
