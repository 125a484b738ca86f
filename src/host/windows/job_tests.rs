//! The kill-on-close job: closing its last handle ends its processes
//! (JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE).

use super::process::KillOnCloseJob;
use std::time::{Duration, Instant};

/// A child that would run for a minute: `ping` of loopback, as Windows and Wine both have it.
fn long_child() -> std::process::Child {
    std::process::Command::new("cmd.exe")
        .args(["/c", "ping -n 60 127.0.0.1 > nul"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("cmd.exe")
}

#[test]
fn closing_the_job_ends_its_processes_and_a_child_outside_it_lives() {
    let job = KillOnCloseJob::new().expect("job");
    let mut inside = long_child();
    job.assign(&inside).expect("assign");
    let mut outside = long_child();
    drop(job);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if inside.try_wait().expect("wait").is_some() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the job's child outlived the job"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        outside.try_wait().expect("wait").is_none(),
        "a child outside the job was ended too"
    );
    let _ = outside.kill();
    let _ = outside.wait();
}
