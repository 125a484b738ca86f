//! CalicoNode's start-up on SimHost: boot detection, the networks, bounded waits, give-ups.

use super::*;

/// The first start starts a stopped HNS, makes the networks, restores the metadata route on
/// the vSwitch and marks init done.
#[test]
fn the_first_start_creates_the_networks_restores_the_metadata_route_and_marks_init_done() {
    let (host, s, log, path) = node_host("ws2022", &[]);
    assert!(!init_done(&host).expect("read"));
    // HNS stopped: the start-up starts it before making the networks.
    hns_startable(&host);
    host.service_stop("hns", Duration::from_secs(1))
        .expect("stop");

    let phase = node::start_phase(&host, &s, &log).expect("start phase");
    assert_eq!(state_of(&host, "hns"), Some(RUNNING), "{}", read(&path));
    assert!(phase.first_run_since_boot);
    assert!(phase.created_external);
    assert_eq!(phase.platform, Some(platform::Platform::BareMetal));
    assert_eq!(phase.restored_routes, ["169.254.169.254/32 via 10.0.0.1"]);

    let names: Vec<String> = network_ids(&host).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["External", "Calico"]);
    // The vSwitch moved the address to a new interface; the route follows it there.
    let vswitch = vswitch_index(&host);
    let metadata = host
        .routes()
        .expect("routes")
        .into_iter()
        .find(|r| r.destination == Ipv4Addr::new(169, 254, 169, 254))
        .expect("metadata route restored");
    assert_eq!(metadata.interface_index, vswitch);

    let boot = boot_id(&host);
    assert_eq!(marker(&host), Some(RegValue::Sz(boot)));
    assert_eq!(
        host.reg_get(CALICO_KEY, LEGACY_BOOT_VALUE).expect("read"),
        Some(RegValue::Sz("11/21/2025 9:00:00 AM".into()))
    );
    assert!(init_done(&host).expect("read"));
    let text = read(&path);
    says(&text, "first run since boot");
    says(&text, "created HNS network Calico");
    says(&text, "calico-node startup finished");
    says(&text, "the Host Network Service is stopped: starting it");
}

/// A boot whose time the kernel did not give stops init with "unknown boot": no network
/// touched, no marker; an older version's empty marker is no boot.
#[test]
fn an_unknown_boot_stops_init_and_deletes_no_network() {
    let (host, s, log, _) = node_host("ws2022", &[]);
    node::start_phase(&host, &s, &log).expect("first start");
    let before = network_ids(&host);
    let boot = boot_id(&host);

    host.set_boot_known(false, &boot)
        .expect("lose the boot time");
    assert!(!init_done(&host).expect("read"), "no boot is done in none");
    let err = node::start_phase(&host, &s, &log).expect_err("an unknown boot");
    assert!(matches!(err, SuperviseError::UnknownBoot), "{err}");
    assert_eq!(network_ids(&host), before, "no network was touched");
    assert_eq!(marker(&host), Some(RegValue::Sz(boot.clone())));

    // An empty marker is not this boot either, and matches no unknown boot.
    host.reg_set(CALICO_KEY, BOOT_ID_VALUE, &RegValue::Sz(String::new()))
        .expect("empty marker");
    assert!(matches!(
        node::start_phase(&host, &s, &log),
        Err(SuperviseError::UnknownBoot)
    ));
    assert_eq!(network_ids(&host), before);
    host.set_boot_known(true, &boot)
        .expect("the boot time back");
    assert!(
        !init_done(&host).expect("read"),
        "an empty marker is no boot"
    );
}

#[test]
fn a_service_restart_keeps_the_networks_and_a_reboot_recreates_only_calicos() {
    let (host, s, log, _) = node_host("ws2022-flannel", &[]);
    node::start_phase(&host, &s, &log).expect("first start");
    let before = network_ids(&host);

    let again = node::start_phase(&host, &s, &log).expect("restart");
    assert!(!again.first_run_since_boot);
    assert!(again.deleted_networks.is_empty() && !again.created_external);
    assert_eq!(
        network_ids(&host),
        before,
        "a plain restart changes nothing"
    );

    host.reboot().expect("reboot");
    assert!(
        !init_done(&host).expect("read"),
        "the marker is for the old boot"
    );
    let after = node::start_phase(&host, &s, &log).expect("after reboot");
    assert!(after.first_run_since_boot);
    assert_eq!(after.deleted_networks, ["External", "Calico"]);
    let now = network_ids(&host);
    let flannel = |ids: &[(String, String)]| ids.iter().find(|(n, _)| n == "flannel.4096").cloned();
    assert_eq!(
        flannel(&now),
        flannel(&before),
        "another CNI's network is left alone"
    );
    let id = |ids: &[(String, String)], name: &str| {
        ids.iter().find(|(n, _)| n == name).map(|(_, i)| i.clone())
    };
    assert_ne!(id(&now, "External"), id(&before, "External"));
    assert_ne!(id(&now, "Calico"), id(&before, "Calico"));
    assert!(init_done(&host).expect("read"));

    // The upstream behaviour, opted into, deletes every non-NAT network.
    host.reboot().expect("reboot");
    let mut all = settings(Role::Node);
    all.delete_all_non_nat_networks = true;
    let phase = node::start_phase(&host, &all, &log).expect("after reboot");
    assert!(phase.deleted_networks.contains(&"flannel.4096".to_owned()));
}

/// An initialisation that gives up is recorded too, so that install's wait ends with it.
#[test]
fn no_usable_address_is_a_bounded_wait_then_a_clear_error_and_recorded() {
    let (host, s, log, path) = node_host("ws2022", &["node.startup_valid_ip_timeout=1s"]);
    host.set_ipv4_addresses(vec![
        InterfaceAddress {
            interface: "Ethernet".into(),
            index: 4,
            ip: Ipv4Addr::new(169, 254, 10, 20),
            prefix_len: 16,
        },
        InterfaceAddress {
            interface: "Loopback Pseudo-Interface 1".into(),
            index: 1,
            ip: Ipv4Addr::LOCALHOST,
            prefix_len: 8,
        },
    ])
    .expect("addresses");
    let err = node::start_phase(&host, &s, &log).unwrap_err();
    assert!(matches!(err, SuperviseError::NoUsableIp { .. }), "{err}");
    assert!(err.is_timeout());
    let msg = err.to_string();
    assert!(
        msg.contains("after 1s") && msg.contains("169.254.10.20 on Ethernet"),
        "{msg}"
    );
    assert!(
        err.hint()
            .is_some_and(|h| h.contains("startup_valid_ip_timeout"))
    );
    assert!(
        !init_done(&host).expect("read"),
        "no marker after a failed start-up"
    );
    says(&read(&path), "waiting up to 1s for a usable IPv4 address");
    // Recorded with its cause, so that install's wait ends with it.
    let recorded = failure::recorded(&host).expect("read");
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert_eq!(recorded[0].blocks, failure::Blocks::Init);
    assert_eq!(recorded[0].error, crate::error::chain(&err));
}

/// Creating External is retried, said as a wait, and given up after the network timeout.
#[test]
fn creating_external_is_retried_until_it_succeeds_or_the_network_timeout() {
    // Creating External fails once.
    let host = faulted(
        installed("ws2022", &[]),
        FaultKind::Fail,
        "create HNS network External",
    );
    let s = settings(Role::Node);
    let (log, path) = log_for(&host, &s);
    let phase = node::start_phase(&host, &s, &log).expect("start phase");
    assert!(phase.created_external);
    let text = read(&path);
    says(
        &text,
        "could not create the External network: simulated failure injected",
    );
    says(&text, "retrying in 10ms");
    // The retry is a wait as every other: it says what it waits for and how long it took.
    says(&text, "for the External network to be created");
    says(&text, "] info: waited ");

    let (host, s, log, _) = node_host("ws2022", &[]);
    // A document HNS refuses every time: a subnet without a default route.
    host.write_file(
        &format!(r"{ROOT}\external-network.json"),
        br#"{"Name":"External","Type":"Overlay","Ipams":[{"Subnets":[{"IpAddressPrefix":"192.168.255.0/30","Routes":[]}]}]}"#,
        crate::host::Access::Normal,
    )
    .expect("write");
    let err = node::start_phase(&host, &s, &log).unwrap_err();
    assert!(
        matches!(err, SuperviseError::ExternalNetwork { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("needs a 0.0.0.0/0 route"), "{err}");
    assert!(err.is_timeout());
    assert!(!init_done(&host).expect("read"));
}

/// A route the OS refuses (ERROR_ACCESS_DENIED): the service runs on, and the log, the event
/// log and install's record carry the operation, the route and the code.
#[test]
fn a_refused_route_keeps_the_os_error_in_the_log_the_event_log_and_the_record() {
    let host = faulted(
        installed("ws2022", &[]),
        FaultKind::Deny,
        "add route 169.254.169.254",
    );
    let s = settings(Role::Node);
    let (log, path) = log_for(&host, &s);
    let phase = node::start_phase(&host, &s, &log).expect("the service runs on");
    assert!(phase.restored_routes.is_empty(), "{phase:?}");
    let vswitch = vswitch_index(&host);
    let said = format!(
        "could not restore the route 169.254.169.254/32 via 10.0.0.1 that the vSwitch dropped: add route 169.254.169.254/32 via 10.0.0.1 on interface {vswitch}: Access is denied. (os error 5)"
    );
    let text = read(&path);
    says(&text, &said);
    let events = host.events();
    assert!(
        events
            .iter()
            .any(|e| e.level == crate::host::EventLevel::Warning
                && e.id == EVENT_FAILURE
                && e.message == format!("CalicoNode {said}")),
        "{events:?}"
    );
    let recorded = failure::recorded(&host).expect("read");
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert_eq!(
        recorded[0].blocks,
        failure::Blocks::Route("169.254.169.254/32".into())
    );
    assert!(
        recorded[0]
            .error
            .ends_with("Access is denied. (os error 5)")
    );
    // The next start begins with none.
    let host = SimHost::open_or_create(host.state_dir(), None).expect("reopen");
    node::start_phase(&host, &s, &log).expect("restart");
    assert_eq!(failure::recorded(&host).expect("read"), vec![]);
}

#[test]
fn a_management_ip_that_never_appears_is_bounded_and_one_that_comes_late_is_waited_for() {
    let (host, s, log, path) = node_host("ws2022", &[]);
    host.set_management_ip_pending(true).expect("pending");
    let err = node::start_phase(&host, &s, &log).unwrap_err();
    assert!(matches!(err, SuperviseError::ManagementIp { .. }), "{err}");
    says(
        &read(&path),
        "waiting up to 500ms for the vSwitch's management IP",
    );
    assert!(!init_done(&host).expect("read"));

    // The service restarts (SCM recovery); this time the address comes after a while.
    let mut patient = settings(Role::Node);
    patient.network_timeout = Duration::from_secs(30);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            wait_for_log(
                &path,
                "waiting up to 30s for the vSwitch's management IP",
                1,
            );
            host.set_management_ip_pending(false).expect("ready");
        });
        let phase = node::start_phase(&host, &patient, &log).expect("start phase");
        // Still the first run since boot: its half-made External network is made again.
        assert!(phase.first_run_since_boot);
        assert_eq!(phase.deleted_networks, ["External"]);
    });
    assert!(init_done(&host).expect("read"));
}

#[test]
fn on_ec2_the_metadata_route_is_ensured_on_every_start() {
    let host = installed("ws2022", &[]);
    let mut s = settings(Role::Node);
    s.probes.ec2 = serve(|req| {
        Some(if req.starts_with("GET /latest/meta-data/local-hostname") {
            http("200 OK", "", "ip-10-0-0-5")
        } else {
            http("404 Not Found", "", "")
        })
    });
    let (log, path) = log_for(&host, &s);
    node::start_phase(&host, &s, &log).expect("first start");
    // A route removed later is put back by a restart though External exists.
    let dir = host.state_dir().to_owned();
    let state = dir.join("state.json");
    let mut doc: serde_json::Value =
        serde_json::from_str(&fs_err::read_to_string(&state).expect("read")).expect("json");
    doc["routes"]
        .as_array_mut()
        .expect("routes")
        .retain(|r| r["destination"] != "169.254.169.254");
    fs_err::write(&state, doc.to_string()).expect("write");
    let host = SimHost::open_or_create(&dir, None).expect("reopen");
    let phase = node::start_phase(&host, &s, &log).expect("restart");
    assert_eq!(phase.platform, Some(platform::Platform::Ec2));
    assert!(!phase.created_external);
    assert!(
        host.routes()
            .expect("routes")
            .iter()
            .any(|r| r.destination == Ipv4Addr::new(169, 254, 169, 254)
                && r.next_hop.is_unspecified())
    );
    says(&read(&path), "added the metadata route 169.254.169.254/32");
}

#[test]
fn windows_bgp_restarts_remote_access_and_fails_clearly_without_it() {
    let (host, s, log, _) = node_host(
        "ws2022",
        &["backend=windows-bgp", "cni.ipam_type=host-local"],
    );
    let err = node::start_phase(&host, &s, &log).unwrap_err();
    assert!(matches!(err, SuperviseError::RemoteAccess(_)), "{err}");
    assert!(err.hint().is_some_and(|h| h.contains("RemoteAccess")));

    // RemoteAccess registered (`svchost.exe -k netsvcs`), as any service.
    hns_startable(&host);
    let svchost = r"C:\Windows\system32\svchost.exe";
    let args = vec!["-k".into(), "netsvcs".into()];
    let remote_access = crate::host::ServiceSpec {
        name: "RemoteAccess".into(),
        ..service_spec(Role::Node, svchost, args)
    };
    host.service_create(&remote_access).expect("create");
    let (log, path) = log_for(&host, &s);
    node::start_phase(&host, &s, &log).expect("start phase");
    says(&read(&path), "restarting RemoteAccess");
    let ra = state_of(&host, "RemoteAccess");
    assert_eq!(ra, Some(RUNNING));
    let external = external(&host);
    assert_eq!(external.network_type, "L2Bridge");
}

/// The calico-node startup programs started so far.
fn startups(host: &SimHost) -> usize {
    host.started()
        .iter()
        .filter(|c| c.contains("startup"))
        .count()
}

/// A startup an earlier run left running is no failed attempt: the start-up's one bounded wait
/// ends with it, nothing started beside it; the service says so and runs startup once it ended.
#[test]
fn an_earlier_startup_still_running_is_waited_for_not_called_failed() {
    let (host, s, log, path) = node_host("ws2022", &[]);
    host.set_children_linger(Some(Duration::from_secs(3)))
        .expect("fault");
    node::start_phase(&host, &s, &log).expect("first start");
    assert_eq!(startups(&host), 1);
    host.set_children_linger(None).expect("fault off");
    let err = node::start_phase(&host, &s, &log).expect_err("the earlier startup still runs");
    let text = read(&path);
    assert!(
        matches!(err, SuperviseError::EarlierStillRuns { .. }),
        "{err:?}\n{text}"
    );
    assert_eq!(startups(&host), 1, "{text}");
    assert_eq!(
        text.matches("still runs: waiting for it to end").count(),
        1,
        "one bounded wait: {text}"
    );
    assert!(
        err.to_string()
            .contains("no second copy is started beside it until it has ended"),
        "{err}"
    );
    // The first start's log holds one "finished" already.
    let text = while_running(&host, &s, |path| {
        wait_for_log(path, "calico-node startup finished", 2);
    });
    assert_eq!(
        text.matches("calico-node startup finished").count(),
        2,
        "{text}"
    );
    says(&text, "calico-node startup did not run");
    says(&text, "looking again in");
    assert!(!text.contains("calico-node startup failed"), "{text}");
    assert_eq!(startups(&host), 2, "{text}");
}
