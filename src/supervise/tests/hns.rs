//! The HNS restart watchdog, and HNS restarted beside Calico's services.

use super::*;

/// CalicoNode's loop answers an HNS restart while it runs.
#[test]
fn calico_node_answers_an_hns_restart_while_it_runs() {
    let host = installed("ws2022", &[]);
    // Where the metrics are counted: the root the registry names, with its install record.
    let root = crate::layout::InstallRoot::new(ROOT);
    host.write_file(&root.record(), b"{}", crate::host::Access::Normal)
        .expect("record");
    host.reg_set(
        crate::layout::CALICO_KEY,
        crate::layout::INSTALL_ROOT_VALUE,
        &crate::host::RegValue::Sz(ROOT.into()),
    )
    .expect("root");
    calico_services_running(&host);
    let before = felix_pid(&host);
    let text = while_running(&host, &settings(Role::Node), |path| {
        wait_for_log(path, "calico-node startup finished", 1);
        restart_hns(&host);
        // Recorded once the restart is done; the body's stop would end one under way.
        wait_for_log(path, "restarted CalicoFelix after the HNS restart", 1);
        for _ in 0..1000 {
            if crate::installed::hns_restart::last(&host).is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    assert_ne!(felix_pid(&host), before, "Felix was not restarted: {text}");
    assert!(
        crate::installed::hns_restart::last(&host).is_some_and(|r| r.restarted == ["CalicoFelix"])
    );
    // Counted in CalicoNode's metrics file.
    use crate::installed::metrics::{HNS_RESTARTS, NODE_FILE, read};
    let counted = read(&host, &root, NODE_FILE);
    assert_eq!(counted.get(HNS_RESTARTS), Some(&1), "{counted:?} {text}");
}

/// The HNS restart watchdog (Azure/AgentBaker hnsremediator.ps1): Felix restarted once per
/// change of HNS's pid, recorded in the registry and the event log; a stopped HNS is none yet;
/// the pid outlives CalicoNode but not the boot.
#[test]
fn an_hns_restart_restarts_felix_once_and_is_recorded() {
    let (host, s, log, path, mut watch) = watching();
    assert_eq!(
        check(&mut watch, &host, &s, &log),
        None,
        "the same process: no restart"
    );
    let before = felix_pid(&host);

    host.service_stop("hns", Duration::from_secs(1))
        .expect("stop");
    assert_eq!(
        check(&mut watch, &host, &s, &log),
        None,
        "HNS stopped: not answered yet"
    );
    host.service_start("hns", Duration::from_secs(1))
        .expect("start");
    let r = check(&mut watch, &host, &s, &log).expect("a restart");
    assert_eq!(r.restarted, ["CalicoFelix"]);
    assert!(r.failed.is_empty(), "{r:?}");
    assert_ne!(felix_pid(&host), before, "Felix was not restarted");
    assert_eq!(crate::installed::hns_restart::last(&host), Some(r.clone()));
    says(&read(&path), "the HNS service restarted");
    assert!(
        host.events()
            .iter()
            .any(|e| e.id == hns_watch::EVENT_HNS_RESTARTED && e.message.contains("CalicoFelix")),
        "{:?}",
        host.events()
    );
    let after = felix_pid(&host);
    assert_eq!(check(&mut watch, &host, &s, &log), None, "once per restart");
    assert_eq!(felix_pid(&host), after);

    // HNS's pid is kept across a CalicoNode restart (a watch of its own); a reboot makes it stale.
    let fresh = || check(&mut hns_watch::HnsWatch::default(), &host, &s, &log);
    assert_eq!(fresh(), None);
    restart_hns(&host);
    assert!(fresh().is_some_and(|r| r.restarted == ["CalicoFelix"]));
    assert_eq!(fresh(), None);
    host.reboot().expect("reboot");
    host.service_start("CalicoFelix", Duration::from_secs(1))
        .expect("start");
    assert_eq!(
        fresh(),
        None,
        "a reboot gives HNS a new process: no HNS restart to answer"
    );
}

/// The fault on CalicoFelix's stop, and what it takes.
type StopFault = fn(&SimHost, &mut Settings);

/// Felix slow to stop, its stop undelivered at first, or taken after it was given up on: the
/// watchdog restarts it all the same, saying a late or undelivered stop once.
#[test]
fn the_hns_watchdog_restarts_a_felix_slow_or_late_to_stop() {
    const FELIX: &str = "CalicoFelix";
    let cases: [(&str, StopFault, Option<&str>, u32); 4] = [
        // Longer than the stop timeout, within the stop timeout and the wait hint.
        (
            "slow to stop",
            |h, s| {
                s.stop_timeout = Duration::from_millis(200);
                let takes = s.stop_timeout + Duration::from_secs(2);
                h.set_stop_takes(FELIX, takes).expect("slow stop");
            },
            None,
            0,
        ),
        // Still StopPending when that wait ends: waited for once more, then started.
        (
            "slower than the wait",
            |h, s| {
                s.stop_timeout = Duration::from_millis(200);
                let takes = s.service_stop_wait() + Duration::from_millis(300);
                h.set_stop_takes(FELIX, takes).expect("slower");
            },
            None,
            0,
        ),
        // A stop the SCM could not deliver (1053) is sent again; the first refusal said once.
        (
            "undelivered twice",
            |h, _| {
                h.set_stop_undelivered(FELIX, Some(2), Duration::ZERO)
                    .expect("fault");
            },
            Some("could not deliver the stop to CalicoFelix"),
            2,
        ),
        // One send of 8 s in the restart's bound of twice 7 s: no second send fits; the stop
        // given up on but taken late leaves the service stopped, and the watchdog starts it.
        (
            "taken late",
            |h, _| {
                h.set_stop_taken_late(FELIX, Duration::from_secs(8))
                    .expect("fault");
            },
            Some("its stop was taken after it was given up on"),
            1,
        ),
    ];
    // Each case waits out its stop in real time (up to 8 s): side by side, as separate tests
    // would run, not one after another.
    std::thread::scope(|scope| {
        for (name, fault, said, undelivered) in cases {
            scope.spawn(move || {
                let (host, mut s, log, path, mut watch) = watching();
                fault(&host, &mut s);
                let before = felix_pid(&host);
                restart_hns(&host);
                let r = check(&mut watch, &host, &s, &log).expect("a restart");
                let text = read(&path);
                assert_eq!(r.restarted, [FELIX], "{name}: {r:?}\n{text}");
                assert!(r.failed.is_empty(), "{name}: {r:?}");
                assert_ne!(felix_pid(&host), before, "{name}: Felix was not restarted");
                assert_eq!(state_of(&host, FELIX), Some(RUNNING), "{name}: {text}");
                if let Some(said) = said {
                    assert_eq!(text.matches(said).count(), 1, "{name}: {text}");
                    assert_eq!(host.stops_undelivered(FELIX), undelivered, "{name}");
                }
            });
        }
    });
}

/// A stop never delivered is given up within twice the stop wait, counting each send's time
/// (sends of 700 ms in 2 s: at most two); said once, Felix left running.
#[test]
fn a_stop_the_scm_never_delivers_is_given_up_within_the_bound_said_once() {
    let host = felix_host();
    let s = settings(Role::Node);
    let (log, path) = log_for(&host, &s);
    let before = felix_pid(&host);
    host.set_stop_undelivered("CalicoFelix", None, Duration::from_millis(700))
        .expect("fault");
    let wait = Duration::from_secs(1);
    let out = hns_watch::restart(&host, "CalicoFelix", wait, &Stop::never(), &log);
    let text = read(&path);
    let sends = host.stops_undelivered("CalicoFelix");
    assert!(
        matches!(&out, Err(SuperviseError::StopGivenUp(e)) if e.os_code() == Some(1053)),
        "{out:?}\n{text}"
    );
    let err = out.unwrap_err().to_string();
    assert!(
        err.contains("could not deliver the stop control")
            && err.contains(&format!(
                "sent {}",
                if sends == 1 {
                    "once".to_owned()
                } else {
                    format!("{sends} times")
                }
            )),
        "{err}"
    );
    assert!(
        (1..=2).contains(&sends),
        "{sends} sends of 700 ms in a bound of 2 s\n{text}"
    );
    assert_eq!(
        text.matches("could not deliver the stop to CalicoFelix")
            .count(),
        1,
        "{text}"
    );
    assert_eq!(felix_pid(&host), before);
}

/// CalicoNode's stop ends the wait for a Felix slow to stop at once, and the new HNS process
/// id is not kept, so the next CalicoNode answers the restart.
#[test]
fn a_stop_during_the_hns_restart_ends_it_and_the_next_start_answers_it() {
    let host = felix_host();
    let mut s = settings(Role::Node);
    s.stop_timeout = Duration::from_secs(3600);
    host.set_stop_takes("CalicoFelix", Duration::from_secs(7200))
        .expect("slow stop");
    let (log, path) = log_for(&host, &s);
    let stop = Stop::new();
    let mut watch = hns_watch::HnsWatch::default();
    assert_eq!(watch.check(&host, &s, &stop, &log), Ok(None));
    restart_hns(&host);
    let requester = {
        let stop = stop.clone();
        let path = path.clone();
        std::thread::spawn(move || {
            wait_for_log(&path, "for CalicoFelix to stop", 1);
            stop.request();
        })
    };
    let out = watch.check(&host, &s, &stop, &log);
    requester.join().expect("join");
    assert_eq!(out, Err(crate::duration::Stopped));
    let text = read(&path);
    says(&text, "stopped waiting for CalicoFelix to stop");
    assert_eq!(
        crate::installed::hns_restart::last(&host),
        None,
        "not recorded"
    );
    // The kept id is still the one before the restart: the next CalicoNode answers it.
    let now = host
        .service_query("hns")
        .expect("query")
        .and_then(|q| q.pid)
        .expect("a pid");
    let kept = host
        .reg_get(crate::layout::CALICO_KEY, crate::layout::HNS_PID_VALUE)
        .expect("read");
    assert!(
        matches!(&kept, Some(RegValue::Sz(t)) if !t.ends_with(&format!(":{now}"))),
        "{kept:?}"
    );
}

/// A recorded failure is a fault only while the service still does not run.
#[test]
fn a_failed_restart_counts_only_while_the_service_is_still_down() {
    let host = felix_host();
    let r = hns_watch::HnsRestart {
        at: 1,
        from_pid: 1,
        to_pid: 2,
        restarted: vec![],
        failed: vec!["CalicoFelix: timed out after 9s waiting for service CalicoFelix".into()],
    };
    assert!(r.still_failing(&host).is_empty(), "Felix runs again");
    host.service_stop("CalicoFelix", Duration::from_secs(1))
        .expect("stop");
    assert_eq!(r.still_failing(&host), [r.failed[0].as_str()]);
}

/// Only a stop given up on (1053 or past its bound) is looked at again for a late stop.
#[test]
fn only_a_stop_given_up_on_is_waited_for_again() {
    use crate::host::HostError;
    let api = |code| HostError::Api {
        op: "stop service CalicoFelix".into(),
        code,
        message: String::new(),
    };
    let timeout = HostError::Timeout {
        what: "CalicoFelix to stop".into(),
        after: Duration::from_secs(14),
    };
    assert!(hns_watch::stop_given_up(&timeout));
    assert!(hns_watch::stop_given_up(&api(
        crate::host::ERROR_SERVICE_REQUEST_TIMEOUT
    )));
    // ERROR_ACCESS_DENIED (5), ERROR_DEPENDENT_SERVICES_RUNNING (1051).
    assert!(!hns_watch::stop_given_up(&api(5)));
    assert!(!hns_watch::stop_given_up(&api(1051)));
}

/// One look of the watchdog, no stop asked.
fn check(
    watch: &mut hns_watch::HnsWatch,
    host: &SimHost,
    s: &Settings,
    log: &Log,
) -> Option<hns_watch::HnsRestart> {
    watch.check(host, s, &Stop::never(), log).expect("no stop")
}

/// CalicoFelix running, CalicoNode's settings and log, and a watchdog past its first look,
/// which only notes HNS.
fn watching() -> (SimHost, Settings, Log, PathBuf, hns_watch::HnsWatch) {
    let host = felix_host();
    let s = settings(Role::Node);
    let (log, path) = log_for(&host, &s);
    let mut watch = hns_watch::HnsWatch::default();
    assert_eq!(check(&mut watch, &host, &s, &log), None, "the first look");
    (host, s, log, path, watch)
}
