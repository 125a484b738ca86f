//! The host contract: one suite run against SimHost (`cargo test`) and against the Windows
//! implementation under Wine (`cargo test --target x86_64-pc-windows-gnu`), so that the
//! simulated host behaves like the real one where it matters.

use super::*;
use serde_json::json;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(20);

/// Asserts that a host call fails as `HostError::$kind`.
macro_rules! fails_as {
    ($call:expr, $kind:ident) => {
        match $call {
            Err(HostError::$kind { .. }) => {}
            other => panic!("{}: {:?}", stringify!($call), other.map(|_| ())),
        }
    };
}

pub(crate) fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{prefix}{}x{nanos:08x}", std::process::id())
}

/// A manual service of no arguments, dependencies or recovery, its display name its name.
pub(crate) fn service(name: &str, program: &str) -> ServiceSpec {
    ServiceSpec {
        name: name.into(),
        display_name: name.into(),
        description: String::new(),
        program: program.into(),
        args: Vec::new(),
        dependencies: Vec::new(),
        start: StartType::Manual,
        recovery: None,
    }
}

/// An inbound rule for UDP 4789 on every profile, of any address, with the marker.
pub(crate) fn udp_rule(name: String) -> FirewallRule {
    FirewallRule {
        name,
        description: crate::host::firewall::MARKER.into(),
        protocol: Protocol::Udp,
        direction: crate::host::Direction::In,
        program: None,
        local_port: 4789,
        allow: true,
        enabled: true,
        profiles: crate::host::ALL_PROFILES,
        remote_addresses: Vec::new(),
        unset: Default::default(),
    }
}

/// Values of each type round-trip; keys are case-insensitive; deletes are idempotent.
pub fn registry(h: &dyn Host) {
    let key = format!(r"HKLM\Software\calicoctl-win-contract\{}", unique("k"));
    let sub = format!(r"{key}\Sub");
    assert_eq!(h.reg_get(&key, "Missing").expect("get"), None);
    assert!(!h.reg_key_exists(&key).expect("exists"));
    let values = [
        ("Text", RegValue::Sz("C:\\CalicoWindows".into())),
        // Read back as written, never expanded: the reader expands (EventMessageFile).
        (
            "Expand",
            RegValue::ExpandSz("%SystemRoot%\\System32\\x.dll".into()),
        ),
        ("Count", RegValue::Dword(1432)),
        ("List", RegValue::MultiSz(vec!["A=1".into(), "B=2".into()])),
    ];
    for (name, v) in &values {
        h.reg_set(&sub, name, v).expect("set");
    }
    for (name, v) in &values {
        assert_eq!(h.reg_get(&sub, name).expect("get").as_ref(), Some(v));
    }
    assert!(h.reg_key_exists(&key.to_uppercase()).expect("exists"));
    assert_eq!(
        h.reg_get(&sub.to_lowercase(), "count").expect("get"),
        Some(RegValue::Dword(1432))
    );
    // A value at the cap reads; one character more is refused before it is read.
    let at_cap = "x".repeat(crate::host::registry::MAX_VALUE_BYTES / 2 - 1);
    let long = |text: &str| h.reg_set(&sub, "Long", &RegValue::Sz(text.into()));
    long(&at_cap).expect("set");
    let read = h.reg_get(&sub, "Long").expect("get");
    assert_eq!(read, Some(RegValue::Sz(at_cap.clone())));
    long(&(at_cap + "x")).expect("set");
    let err = h.reg_get(&sub, "Long").unwrap_err().to_string();
    assert!(err.contains("more than the 1048576 read"), "{err}");
    for what in ["delete value", "delete a missing value"] {
        h.reg_delete_value(&sub, "Count").expect(what);
    }
    assert_eq!(h.reg_get(&sub, "Count").expect("get"), None);
    h.reg_delete_key(&key).expect("delete tree");
    assert!(!h.reg_key_exists(&sub).expect("exists"));
    assert!(!h.reg_key_exists(&key).expect("exists"));
    h.reg_delete_key(&key).expect("delete a missing key");
}

/// Create, query, start, refuse to delete while running, stop (twice), delete.
pub fn services(h: &dyn Host, program: &str, args: &[&str], recovery: Option<Recovery>) {
    let name = unique("CwTest");
    let spec = ServiceSpec {
        display_name: "calicoctl-win contract test".into(),
        description: "Created and deleted by calicoctl-win's contract tests.".into(),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        recovery,
        ..service(&name, program)
    };
    let query = |n: &str| h.service_query(n).expect("query").expect("registered");
    assert_eq!(h.service_query(&name).expect("query"), None);
    fails_as!(h.service_start(&name, WAIT), NotFound);
    h.service_create(&spec).expect("create");
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        fails_as!(h.service_create(&spec), Exists);
        let q = query(&name);
        assert_eq!(q.state, ServiceState::Stopped);
        assert_eq!(q.since, None, "a stopped service has no start time");
        assert_eq!(q.display_name, spec.display_name);
        assert_eq!(q.start, StartType::Manual);
        let (prog, got_args) = split_command_line(&q.command_line);
        assert!(prog.eq_ignore_ascii_case(program), "{}", q.command_line);
        assert_eq!(got_args, spec.args);
        assert_eq!(q.account, "LocalSystem");
        assert!(q.dependencies.is_empty(), "{:?}", q.dependencies);

        // A dependent reads back its dependency (Wine's SCM does not report it: the host
        // reads the service key then).
        // A display name is unique too (CreateService's ERROR_DUPLICATE_SERVICE_NAME).
        let twin = ServiceSpec {
            name: format!("{name}Twin"),
            ..spec.clone()
        };
        fails_as!(h.service_create(&twin), Exists);
        assert_eq!(h.service_query(&twin.name).expect("query"), None);
        let dependent = ServiceSpec {
            name: format!("{name}Dep"),
            display_name: format!("{} (dependent)", spec.display_name),
            dependencies: vec![name.clone()],
            ..spec.clone()
        };
        h.service_create(&dependent).expect("create the dependent");
        let deps = query(&dependent.name).dependencies;
        // An update to no dependencies removes them (ChangeServiceConfigW: a NULL list leaves
        // them as they are; an empty one, "\0\0", removes them).
        let independent = ServiceSpec {
            dependencies: Vec::new(),
            ..dependent.clone()
        };
        h.service_update(&independent)
            .expect("update the dependent");
        let deps_after = query(&dependent.name).dependencies;
        h.service_delete(&dependent.name)
            .expect("delete the dependent");
        assert_eq!(deps, std::slice::from_ref(&name));
        assert!(deps_after.is_empty(), "{deps_after:?}");

        // Delayed start reads back (QueryServiceConfigW alone says "automatic"), and an update
        // back to plain automatic start clears it. Wine 8's SCM has no delayed start (it
        // answers ERROR_INVALID_LEVEL): there only the plain one is checked.
        let wine = h.reg_key_exists(r"HKLM\Software\Wine").unwrap_or(false);
        let starts: &[StartType] = if wine {
            &[StartType::Auto]
        } else {
            &[StartType::Auto, StartType::DelayedAuto, StartType::Auto]
        };
        for &start in starts {
            let spec = ServiceSpec {
                start,
                ..spec.clone()
            };
            h.service_update(&spec).expect("update");
            assert_eq!(query(&name).start, start);
        }

        start_service(h, &name).expect("start");
        let q = query(&name);
        assert_eq!(q.state, ServiceState::Running);
        assert!(q.pid.is_some());
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock after 1970")
            .as_secs() as i64;
        let since = q.since.expect("a running service has a start time");
        assert!(
            (now - 120..=now + 5).contains(&since),
            "started at {since}, now {now}"
        );
        h.service_start(&name, WAIT)
            .expect("starting a running service");
        fails_as!(h.service_delete(&name), Refused);
        h.service_stop(&name, WAIT).expect("stop");
        assert_eq!(query(&name).state, ServiceState::Stopped);
        h.service_stop(&name, WAIT)
            .expect("stopping a stopped service");
    }));
    let _ = h.service_stop(&name, WAIT);
    h.service_delete(&name).expect("delete");
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
    assert_eq!(h.service_query(&name).expect("query"), None);
}

/// Starts a service, and under Wine once more on ERROR_INTERNAL_ERROR (1359): Wine 8 gives it
/// when the process died before its loader reported in (wine-8.0
/// dlls/ntdll/unix/process.c, NtCreateUserProcess), before any of its code ran.
fn start_service(h: &dyn Host, name: &str) -> HostResult<()> {
    match h.service_start(name, WAIT) {
        #[cfg(windows)]
        Err(e) if e.os_code() == Some(1359) && on_windows::under_wine() => {
            eprintln!("Wine did not start the process of {name} ({e}); starting it again");
            h.service_start(name, WAIT)
        }
        other => other,
    }
}

/// A schema-2.0 Overlay network document like Calico's External network.
pub fn network(name: &str) -> String {
    json!({"SchemaVersion": {"Major": 2, "Minor": 0}, "Name": name, "Type": "Overlay",
        "Ipams": [{"Type": "Static", "Subnets": [{"IpAddressPrefix": "192.168.255.0/30",
        "Routes": [{"NextHop": "192.168.255.1", "DestinationPrefix": "0.0.0.0/0"}],
        "Policies": [{"Type": "VSID", "Settings": {"IsolationId": 9999}}]}]}]})
    .to_string()
}

/// HNS: a created network is listed with its VSID and management IP; its name cannot be taken
/// twice; its endpoints (`attach`, as the CNI plugin) go one alone or with it; a second
/// deletion is NotFound. Returns the network as created (now deleted).
pub fn hns(h: &dyn Host, name: &str, attach: &dyn Fn(&str, &str, &str)) -> HnsNetwork {
    let n = h.hns_create_network(&network(name)).expect("create");
    assert_eq!(n.name, name);
    assert_eq!(n.vsid(), Some(9999));
    assert!(n.management_ip.is_some(), "{n:?}");
    let listed = h.hns_networks().expect("list");
    assert!(
        listed.iter().any(|l| l.id == n.id && l.name == name),
        "{listed:?}"
    );
    fails_as!(h.hns_create_network(&network(name)), Exists);
    attach(&n.id, "pod1_Calico", "10.244.1.5");
    attach(&n.id, "pod2_Calico", "10.244.1.6");
    let endpoints = || h.hns_endpoints(&n.id).expect("endpoints");
    let eps = endpoints();
    assert_eq!(eps.len(), 2, "{eps:?}");
    let gone = eps
        .iter()
        .find(|e| e.ip.as_deref() == Some("10.244.1.6"))
        .expect("pod2's endpoint");
    h.hns_delete_endpoint(&gone.id)
        .expect("delete the endpoint");
    fails_as!(h.hns_delete_endpoint(&gone.id), NotFound);
    let ips: Vec<_> = endpoints().into_iter().map(|e| e.ip).collect();
    assert_eq!(ips, [Some("10.244.1.5".to_owned())]);
    h.hns_delete_network(&n.id).expect("delete");
    assert!(endpoints().is_empty());
    assert!(!h.hns_networks().expect("list").iter().any(|l| l.id == n.id));
    fails_as!(h.hns_delete_network(&n.id), NotFound);
    n
}

/// A directory tree: listed sorted with which entries are directories, a file hashed and its
/// end read, the tree removed whole (once; a second time says it was not there), and a missing
/// one listed as `None`.
pub fn tree(h: &dyn Host, root: &str) {
    let dir = format!("{root}\\{}", unique("tree"));
    let at = |name: &str| format!("{dir}\\{name}");
    let write = |name: &str, text: &[u8]| h.write_file(&at(name), text, Access::Normal);
    assert_eq!(h.list_dir(&dir).expect("list"), None);
    write("b.txt", b"abc").expect("write");
    write("a\\inner.txt", b"x").expect("write");
    let listed = h.list_dir(&dir).expect("list").expect("there");
    let shape: Vec<(&str, bool)> = listed.iter().map(|e| (e.name.as_str(), e.is_dir)).collect();
    assert_eq!(shape, [("a", true), ("b.txt", false)]);
    let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
    assert_eq!(h.sha256(&at("b.txt")).expect("hash").as_deref(), Some(abc));
    assert_eq!(h.sha256(&at("none")).expect("hash"), None);
    // A tail starts at its first whole line, the whole of a short file, `None` for none.
    let log = "first line\nsecond\nthird\n";
    write("a\\service.log", log.as_bytes()).expect("write");
    let tail = |name: &str, max| h.read_tail(&at(name), max).expect("tail");
    assert_eq!(tail("a\\service.log", 10).as_deref(), Some(&b"third\n"[..]));
    assert_eq!(tail("a\\service.log", 100).as_deref(), Some(log.as_bytes()));
    assert_eq!(tail("none", 10), None);
    let stat = h.stat(&at("b.txt")).expect("stat");
    assert!(stat.is_some_and(|(size, t)| size == 3 && t > 0), "{stat:?}");
    assert_eq!(h.stat(&at("a")).expect("stat"), None);
    assert!(h.remove_tree(&dir).expect("remove"));
    assert!(!h.dir_exists(&dir).expect("exists"));
    assert!(!h.remove_tree(&dir).expect("remove again"));
}

/// Files as streams (the release's download and staging): directories made, read while
/// written, appended, renamed over; a missing file or a directory opens as `None`; the same
/// through `ReleaseDisk`.
pub fn streams(h: &dyn Host, root: &str) {
    use crate::release::Disk;
    use std::io::{Read, Write};
    let dir = format!("{root}\\{}", unique("streams"));
    let part = format!("{dir}\\cache\\r.zip.part");
    let read = |p: &str| {
        let mut text = String::new();
        h.open_read(p)
            .expect("open")
            .expect("there")
            .read_to_string(&mut text)
            .expect("read");
        text
    };
    assert!(h.open_read(&part).expect("open").is_none());
    let mut w = h.open_write(&part, false).expect("create");
    w.write_all(b"first").expect("write");
    w.flush().expect("flush");
    assert_eq!(read(&part), "first", "read while its writer holds it");
    drop(w);
    let mut w = h.open_write(&part, true).expect("append");
    w.write_all(b" second").expect("write");
    drop(w);
    assert_eq!(read(&part), "first second");
    let zip = format!("{dir}\\cache\\r.zip");
    h.write_file(&zip, b"old", Access::Normal).expect("write");
    h.rename(&part, &zip).expect("rename over");
    assert_eq!(read(&zip), "first second");
    assert!(h.open_read(&part).expect("open").is_none());
    // Emptied when opened again without appending.
    drop(h.open_write(&zip, false).expect("truncate"));
    assert_eq!(read(&zip), "");
    let cache = h.open_read(&format!("{dir}\\cache")).expect("open");
    assert!(cache.is_none(), "a directory opens as none");

    let disk = super::ReleaseDisk(h);
    let staged = disk.join(&dir, "staging-1");
    let file = disk.join(&disk.join(&staged, "CalicoWindows"), "calico.exe");
    let mut w = disk.write(&file, false).expect("write");
    w.write_all(b"exe").expect("write");
    drop(w);
    assert!(disk.is_file(&file).expect("is file"));
    // (The simulated host keeps names in lower case; Windows keeps their case. Both find a
    // name in any case.)
    let listed = disk.list(&staged).expect("list").expect("there");
    assert!(
        matches!(&listed[..], [(n, true)] if n.eq_ignore_ascii_case("CalicoWindows")),
        "{listed:?}"
    );
    disk.remove_file(&file).expect("remove");
    disk.remove_file(&file).expect("a missing file is no error");
    disk.remove_tree(&staged).expect("remove tree");
    assert_eq!(disk.list(&staged).expect("list"), None);
    assert!(h.remove_tree(&dir).expect("remove"));
}

/// Firewall rules: a missing rule reads as `None`; an added one reads back as written; a name
/// cannot be added twice; removal says whether there was a rule.
pub fn firewall(h: &dyn Host) {
    let name = unique("Calico contract UDP ");
    assert_eq!(h.firewall_rule(&name).expect("read"), None);
    let rule = udp_rule(name.clone());
    h.firewall_add(&rule).expect("add");
    // Direction, protocol, program, profiles and scope read back as they are.
    type Edit = fn(&mut FirewallRule);
    let odd_rules: [(&str, Edit); 5] = [
        ("outbound", |r| r.direction = crate::host::Direction::Out),
        // No ports: only a TCP or UDP rule has them (INetFwRule::LocalPorts page).
        ("icmp", |r| {
            (r.protocol, r.local_port) = (Protocol::Other(1), 0)
        }),
        ("program", |r| {
            r.protocol = Protocol::Tcp;
            r.program = Some(r"C:\CalicoWindows\calicoctl-win.exe".into());
        }),
        // One of two profiles reads back as such: `opens` needs every profile.
        ("private", |r| r.profiles = 2),
        // Windows keeps an IPv4 subnet as address and mask and gives it back in mask
        // notation, a /32 bare (`FirewallRule::remote_addresses_from` reads them as CIDRs).
        ("scoped", |r| {
            (r.protocol, r.local_port) = (Protocol::Tcp, 9095);
            r.remote_addresses = ["10.0.0.0/8", "192.168.1.0/24", "1.2.3.4/32"]
                .map(Into::into)
                .into();
        }),
    ];
    for (what, edit) in odd_rules {
        let mut odd = udp_rule(unique(&format!("Calico contract {what} ")));
        edit(&mut odd);
        h.firewall_add(&odd).expect("add");
        let read = h.firewall_rule(&odd.name).expect("read");
        assert_eq!(read.as_ref(), Some(&odd), "{what}");
        // An ICMP rule is no UDP rule; the others are not inbound rules on every profile for
        // every program, or not on this port.
        let asked = if what == "icmp" {
            Protocol::Udp
        } else {
            odd.protocol
        };
        assert!(read.is_some_and(|r| !r.opens(asked, 4789)), "{what}");
        assert!(h.firewall_remove(&odd.name).expect("remove"));
    }
    assert_eq!(
        h.firewall_modify_state().expect("modify state"),
        crate::host::FirewallModifyState::Ok
    );
    assert_eq!(h.firewall_rule(&name).expect("read"), Some(rule.clone()));
    fails_as!(h.firewall_add(&rule), Exists);
    // Removal by the name in another case takes the rule the firewall holds (`Remove` is
    // given the name as held: of another spelling it may have no effect).
    assert!(h.firewall_remove(&name.to_uppercase()).expect("remove"));
    assert_eq!(h.firewall_rules(&name).expect("read"), []);
    h.firewall_add(&rule).expect("add again");
    assert!(h.firewall_remove(&name).expect("remove"));
    assert!(!h.firewall_remove(&name).expect("remove again"));
    assert_eq!(h.firewall_rule(&name).expect("read"), None);
}

/// The properties calicoctl-win does not set (`Unset`): a rule that does not set them reads
/// them back as Windows' defaults, and one that sets them (a rule put back as it was read,
/// an administrator's tightening kept) reads back as set, unlike the default rule.
pub fn firewall_unset(h: &dyn Host) {
    let plain = FirewallRule {
        protocol: Protocol::Tcp,
        local_port: 9095,
        remote_addresses: vec!["10.0.0.0/8".into()],
        ..udp_rule(unique("Calico contract unset TCP "))
    };
    h.firewall_add(&plain).expect("add");
    let read = h.firewall_rules(&plain.name).expect("read");
    assert_eq!(read.len(), 1);
    assert_eq!(read[0].unset, crate::host::Unset::default());
    assert!(h.firewall_remove(&plain.name).expect("remove"));
    let tightened = FirewallRule {
        name: unique("Calico contract tightened TCP "),
        unset: crate::host::Unset {
            local_addresses: "10.0.2.15".into(),
            remote_ports: "40000-40100".into(),
            interface_types: "Lan".into(),
            edge_traversal: true,
            grouping: "Monitoring".into(),
            service_name: "CalicoNode".into(),
            ..crate::host::Unset::default()
        },
        ..plain.clone()
    };
    h.firewall_add(&tightened).expect("add");
    let read = h.firewall_rules(&tightened.name).expect("read");
    assert!(crate::host::firewall::only(&read, &tightened), "{read:?}");
    let as_plain = FirewallRule {
        name: tightened.name.clone(),
        ..plain.clone()
    };
    assert!(!crate::host::firewall::only(&read, &as_plain));
    assert!(h.firewall_remove(&tightened.name).expect("remove"));
}

/// Several rules of one name, an administrator's beside ours (`New-NetFirewallRule
/// -DisplayName`): all read back, are not ours alone, removal by name is refused, adding again
/// is `Exists`; `admin_remove` takes them all.
pub fn firewall_duplicates(
    h: &dyn Host,
    admin_add: &dyn Fn(&FirewallRule),
    admin_remove: &dyn Fn(&str),
) {
    let name = unique("Calico contract twice TCP ");
    let ours = FirewallRule {
        protocol: Protocol::Tcp,
        program: Some(r"C:\CalicoWindows\calicoctl-win.exe".into()),
        local_port: 9095,
        remote_addresses: vec!["10.0.0.0/8".into()],
        ..udp_rule(name.clone())
    };
    h.firewall_add(&ours).expect("add");
    let admins = FirewallRule {
        program: None,
        remote_addresses: vec!["192.168.0.0/16".into()],
        ..ours.clone()
    };
    admin_add(&admins);
    let both = h.firewall_rules(&name).expect("read");
    assert_eq!(both, [ours.clone(), admins.clone()]);
    assert!(!crate::host::firewall::only(&both, &ours));
    // Removal by name is refused while two rules have it.
    fails_as!(h.firewall_remove(&name), Refused);
    assert_eq!(h.firewall_rules(&name).expect("read"), both);
    fails_as!(h.firewall_add(&ours), Exists);
    admin_remove(&name);
    assert_eq!(h.firewall_rules(&name).expect("read"), []);
    // An administrator's rule of our name, every property ours but its description: read
    // back with its own description, it is not ours.
    let described = FirewallRule {
        description: "Allow Prometheus".into(),
        ..ours.clone()
    };
    admin_add(&described);
    let read = h.firewall_rules(&name).expect("read");
    assert_eq!(read, [described]);
    assert!(!crate::host::firewall::ours(&read, Some(&ours)));
    assert!(
        !crate::host::firewall::ours(&read, None),
        "alone, without the marker: not an older journal's either"
    );
    admin_remove(&name);
    assert_eq!(h.firewall_rules(&name).expect("read"), []);
}

/// Adapters: every address `ipv4_addresses` lists is on the adapter of its index; a NIC has
/// a MAC written `XX-XX-XX-XX-XX-XX`, a description and a Preferred address.
pub fn adapters(h: &dyn Host) -> Vec<crate::host::Adapter> {
    let adapters = h.adapters().expect("adapters");
    for a in h.ipv4_addresses().expect("addresses") {
        let on = adapters
            .iter()
            .find(|x| x.index == a.index)
            .unwrap_or_else(|| panic!("no adapter of index {}: {adapters:?}", a.index));
        assert_eq!(on.name, a.interface);
        assert!(on.holds(a.ip), "{on:?}");
    }
    let nic = adapters
        .iter()
        .find(|a| a.addresses.iter().any(|x| !x.ip.is_loopback()))
        .unwrap_or_else(|| panic!("no adapter but the loopback: {adapters:?}"));
    let octets: Vec<&str> = nic.mac.split('-').collect();
    assert_eq!(octets.len(), 6, "{nic:?}");
    assert!(
        octets
            .iter()
            .all(|o| o.len() == 2 && u8::from_str_radix(o, 16).is_ok()),
        "{nic:?}"
    );
    assert!(!nic.description.is_empty(), "{nic:?}");
    assert!(nic.stable_address().is_some(), "{nic:?}");
    adapters
}

/// The adapter of this name among `list`.
fn named<'a>(list: &'a [crate::host::Adapter], name: &str) -> &'a crate::host::Adapter {
    let found = list.iter().find(|a| a.name == name);
    found.unwrap_or_else(|| panic!("no adapter {name}: {list:?}"))
}

/// An interface's metric is set and read back; the address an interface holds is `Exists`;
/// an interface no adapter has is `NotFound` for both.
pub fn interface_settings(h: &dyn Host, name: &str) {
    let find = |h: &dyn Host| named(&h.adapters().expect("adapters"), name).clone();
    let a = find(h);
    h.set_interface_metric(a.index, a.metric + 7)
        .expect("set the metric");
    assert_eq!(find(h).metric, a.metric + 7);
    h.set_interface_metric(a.index, a.metric)
        .expect("set it back");
    assert_eq!(find(h).metric, a.metric);
    let ip = a.stable_address().expect("an address");
    fails_as!(h.add_address(a.index, ip.ip, ip.prefix_len), Exists);
    let none = 9999;
    fails_as!(h.set_interface_metric(none, 10), NotFound);
    fails_as!(
        h.add_address(none, std::net::Ipv4Addr::new(192, 0, 2, 1), 24),
        NotFound
    );
}

/// The vSwitch made on a named adapter: its address moves to `vEthernet (<adapter>)`, a
/// vSwitch port with the adapter's MAC; the adapter, its IPv4 unbound, is listed only as an
/// interface, by which the uplink is read back; deleting the network gives it back.
pub fn vswitch_adapter(h: &dyn Host, uplink: &str) {
    let before = h.adapters().expect("adapters");
    let nic = named(&before, uplink);
    let ip = nic.stable_address().expect("an address").ip;
    let mut doc: serde_json::Value = serde_json::from_str(&network("External")).expect("json");
    doc["Policies"] =
        json!([{"Type": "NetAdapterName", "Settings": {"NetworkAdapterName": uplink}}]);
    let n = h.hns_create_network(&doc.to_string()).expect("create");
    assert_eq!(
        n.management_ip.as_deref(),
        Some(ip.to_string().as_str()),
        "{n:?}"
    );
    let after = h.adapters().expect("adapters");
    let vnic = named(&after, &format!("vEthernet ({uplink})"));
    assert!(
        vnic.is_vswitch_port() && vnic.mac == nic.mac && vnic.holds(ip),
        "{vnic:?}"
    );
    // The adapter the vSwitch binds has IPv4 unbound: `GetAdaptersAddresses(AF_INET)` leaves
    // it out ("adapters with IPv4 enabled"), the interface table still lists it, with its MAC,
    // and the uplink is read back through it.
    assert!(!after.iter().any(|a| a.name == uplink), "{after:?}");
    let interfaces = h.ethernet_interfaces().expect("interfaces");
    let bound = named(&interfaces, uplink);
    assert!(
        bound.addresses.is_empty() && bound.mac == nic.mac && bound.index == nic.index,
        "{bound:?}"
    );
    let every = crate::host::uplink::every_adapter(h).expect("every adapter");
    let external = crate::host::hns::HnsNetwork {
        adapter: None,
        ..n.clone()
    };
    assert_eq!(
        crate::host::uplink::uplink_of(vnic, &every, Some(&external)).as_deref(),
        Some(uplink)
    );
    h.hns_delete_network(&n.id).expect("delete");
    let back = h.adapters().expect("adapters");
    assert!(
        back.iter().any(|a| a.name == uplink && a.holds(ip)),
        "{back:?}"
    );
    assert!(!back.iter().any(|a| a.is_vswitch_port()), "{back:?}");
}

/// Routes: an added route is listed; the same route again is `Exists`; a route on an
/// interface no adapter has is `NotFound` (CreateIpForwardEntry2's ERROR_NOT_FOUND).
pub fn routes(h: &dyn Host) {
    let addrs = h.ipv4_addresses().expect("addresses");
    let nic = addrs
        .iter()
        .find(|a| !a.ip.is_loopback())
        .unwrap_or_else(|| panic!("no adapter but the loopback: {addrs:?}"));
    let before = h.routes().expect("routes");
    let taken: Vec<_> = before.iter().map(|r| r.destination).collect();
    let destination = (1..=254u8)
        .map(|n| std::net::Ipv4Addr::new(192, 0, 2, n))
        .find(|d| !taken.contains(d))
        .expect("a free TEST-NET-1 address");
    let route = Route {
        destination,
        prefix_len: 32,
        next_hop: std::net::Ipv4Addr::UNSPECIFIED,
        interface_index: nic.index,
        metric: 256,
    };
    h.add_route(&route).expect("add");
    let after = h.routes().expect("routes");
    assert!(
        after.iter().any(|r| r.destination == destination
            && r.prefix_len == 32
            && r.interface_index == nic.index),
        "{after:?}"
    );
    assert_eq!(after.len(), before.len() + 1, "{after:?}");
    fails_as!(h.add_route(&route), Exists);
    let nowhere = addrs.iter().map(|a| a.index).max().unwrap_or(0) + 1000;
    let nowhere = Route {
        interface_index: nowhere,
        ..route
    };
    fails_as!(h.add_route(&nowhere), NotFound);
}

/// A build, a stable boot identity, 64-bit.
pub fn system(h: &dyn Host) {
    let a = h.system_facts().expect("facts");
    let b = h.system_facts().expect("facts");
    assert!(a.build >= 7601, "build {}", a.build);
    assert!(
        a.boot_id.as_ref().is_some_and(|b| !b.is_empty()),
        "{:?}",
        a.boot_id
    );
    assert_eq!(a.boot_id, b.boot_id, "the boot identity must be stable");
    // The boot as Windows reports it (what Calico's scripts compare), on the local clock: the
    // same as the unmoved boot but for the clock steps since, which are seconds, not years.
    let (Some(unmoved), Some(reported)) = (a.boot_local_seconds, a.boot_local_reported()) else {
        panic!("no local boot time: {a:?}");
    };
    assert!(
        (reported - unmoved).abs() < 366 * 86_400,
        "{reported} against {unmoved}"
    );
    assert!(a.is_64bit);
}

/// Atomic writes that report change, secrets, removal. `acls` is false where the file system
/// keeps no access lists (Wine on a Linux file system ignores them).
pub fn files(h: &dyn Host, root: &str, acls: bool) {
    tree(h, root);
    streams(h, root);
    let dir = format!("{root}\\{}", unique("d"));
    let path = format!("{dir}\\calico-kube-config");
    let read = |p: &str| h.read_file(p).expect("read");
    let write = |text: &[u8], access| h.write_file(&path, text, access).expect("write");
    let secret = |p: &str| {
        if acls {
            assert_eq!(
                h.file_access(p).expect("access"),
                Some(Access::Secret),
                "{p}"
            );
        }
    };
    assert_eq!(read(&path), None);
    assert!(write(b"one", Access::Normal));
    assert!(!write(b"one", Access::Normal), "rewritten unchanged");
    assert!(write(b"two", Access::Secret));
    assert_eq!(read(&path).as_deref(), Some(&b"two"[..]));
    secret(&path);
    if acls {
        // A planted temporary file with a world-writable DACL: the write makes its own
        // (CREATE_NEW; CreateFileW keeps an existing file's security).
        let planted = format!("{dir}\\.calico-kube-config.calicoctl-win.tmp");
        h.write_file(&planted, b"planted", Access::Normal)
            .expect("plant");
        h.set_security(&planted, "D:P(A;;FA;;;WD)(A;;FA;;;SY)(A;;FA;;;BA)")
            .expect("open it to everyone");
        let planted_sddl = h.security(&planted).expect("security").expect("exists");
        assert!(planted_sddl.contains(";;;WD)"), "{planted_sddl}");
        assert!(write(b"three", Access::Normal));
        let sddl = h.security(&path).expect("security").expect("exists");
        assert!(
            !sddl.contains(";;;WD)"),
            "the planted access list carried over: {sddl}"
        );
        assert!(write(b"two", Access::Secret));
    }
    // Written over while a reader of ours has it open (std's POSIX rename); Wine 8
    // refuses it, so only real Windows runs this.
    #[cfg(windows)]
    let wine = on_windows::under_wine();
    #[cfg(not(windows))]
    let wine = false;
    if !wine {
        let reader = h.open_read(&path).expect("open").expect("a file");
        assert!(write(b"four", Access::Secret), "written over a reader");
        drop(reader);
        assert_eq!(read(&path).as_deref(), Some(&b"four"[..]));
        assert!(write(b"two", Access::Secret));
    }
    // A copy on the host (a backup before a replacement), with the access asked for.
    let backup = format!("{path}.calicoctl-win.bak");
    assert!(h.copy_file(&path, &backup, Access::Secret).expect("copy"));
    assert_eq!(read(&backup).as_deref(), Some(&b"two"[..]));
    secret(&backup);
    assert!(h.remove_file(&backup).expect("remove the copy"));
    let copied = h
        .copy_file(&backup, &path, Access::Normal)
        .expect("copy a missing file");
    assert!(!copied, "nothing to copy");
    let after = read(&path);
    assert_eq!(
        after.as_deref(),
        Some(&b"two"[..]),
        "a missing source changes nothing"
    );
    assert!(h.remove_file(&path).expect("remove"));
    assert!(!h.remove_file(&path).expect("remove again"));
    assert!(h.dir_exists(&dir).expect("dir"));
    assert!(h.remove_empty_dir(&dir).expect("rmdir"));
    assert!(!h.dir_exists(&dir).expect("dir"));
}

/// Directories get access lists by meaning: made, Everyone full control (detected), then
/// protected. With `full_acl` (not Wine) it also reads back protected, owned by Administrators.
pub fn security(h: &dyn Host, base: &str, full_acl: bool) {
    let dir = format!(r"{base}\{}", unique("acl"));
    assert_eq!(h.security(&dir).expect("read"), None);
    assert!(h.create_dir(&dir).expect("create"));
    assert!(!h.create_dir(&dir).expect("again"));
    // Set, then read back with who else may write.
    let set = |sddl: &str, what: &str| {
        h.set_security(&dir, sddl).expect(what);
        let sddl = h.security(&dir).expect("read").expect(what);
        let d = acl::parse(&sddl).unwrap_or_else(|e| panic!("{what}: {sddl}: {e}"));
        let writers = acl::writers(&d);
        (d, writers)
    };
    let everyone = |writers: &[String], may: &str| writers.iter().any(|w| w.starts_with(may));
    let open = "O:BAD:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;FA;;;WD)";
    let (_, writers) = set(open, "open to everyone");
    assert!(everyone(&writers, "Everyone may write"), "{writers:?}");
    let (d, writers) = set(acl::PROTECTED_DIR, "protect");
    assert!(!everyone(&writers, "Everyone"), "{writers:?}");
    if full_acl {
        assert!(acl::is_protected(&d), "{d:?}");
        assert!(acl::writers(&d).is_empty(), "{d:?}");
    }
    // What is no reparse point has one list, whether the link's own or the named path's.
    let own = h.link_security(&dir).expect("read itself").expect("there");
    assert_eq!(acl::parse(&own), Ok(d), "{own}");
    assert!(h.remove_empty_dir(&dir).expect("remove"));
    assert_eq!(h.link_security(&dir).expect("gone"), None);
}

#[cfg(test)]
mod on_simhost {
    use super::*;
    use crate::host::sim::SimHost;

    fn host() -> SimHost {
        SimHost::in_memory("ws2022").expect("sim host")
    }

    /// The contracts of one call each, in turn.
    #[test]
    fn registry_routes_system_files_and_security_contracts() {
        registry(&host());
        routes(&host());
        system(&host());
        files(&host(), r"C:\CalicoWindows", true);
        security(&host(), r"C:\CalicoWindows", true);
    }

    #[test]
    fn services_contract() {
        let h = host();
        let program = r"C:\CalicoWindows\calicoctl-win.exe";
        h.write_file(program, b"exe", Access::Normal).expect("seed");
        services(&h, program, &["service", "run", "node"], None);
    }

    #[test]
    fn firewall_contract() {
        let h = host();
        firewall(&h);
        firewall_unset(&h);
        firewall_duplicates(
            &h,
            &|r| h.admin_add_firewall_rule(r).expect("admin add"),
            &|n| h.admin_remove_firewall_rules(n).expect("admin remove"),
        );
    }

    #[test]
    fn adapters_contract() {
        adapters(&host());
        let two = SimHost::in_memory("ws2022-two-nics").expect("host");
        vswitch_adapter(&two, "Ethernet 2");
        vswitch_adapter(&two, "Ethernet");
        interface_settings(&two, "Ethernet 2");
    }

    #[test]
    fn a_service_whose_program_is_missing_does_not_start() {
        let h = host();
        let mut spec = ServiceSpec {
            display_name: "x".into(),
            start: StartType::Auto,
            ..service("CalicoNode", r"C:\CalicoWindows\calicoctl-win.exe")
        };
        h.service_create(&spec).expect("create");
        let err = h.service_start("CalicoNode", WAIT).unwrap_err();
        assert!(err.to_string().contains("cannot find the file"), "{err}");
        spec.start = StartType::Disabled;
        h.service_update(&spec).expect("update");
        fails_as!(h.service_start("CalicoNode", WAIT), Refused);
    }

    #[test]
    fn a_network_name_cannot_be_taken_twice_and_deleting_removes_endpoints() {
        let h = SimHost::in_memory("ws2022-flannel").expect("sim");
        let flannel = h.hns_networks().expect("list");
        assert_eq!(flannel.len(), 1);
        let n = hns(&h, "External", &|id, name, ip| {
            h.add_endpoint(id, name, ip).expect("seed")
        });
        assert_eq!(n.management_ip.as_deref(), Some("10.0.0.5"));
    }

    #[test]
    fn calico_node_startup_creates_the_network_and_reuses_it_without_comparing_the_vni() {
        let h = host();
        let exe = r"C:\CalicoWindows\calico-node.exe";
        h.write_file(exe, b"exe", Access::Normal).expect("seed");
        let startup = |vni: &str| {
            let spec = ProcessSpec {
                program: exe.into(),
                args: vec!["-startup".into()],
                env: [("VXLAN_VNI".to_owned(), vni.to_owned())].into(),
                cwd: None,
                output: Output::Null,
            };
            h.spawn(&spec)
                .expect("spawn")
                .wait_timeout(WAIT)
                .expect("wait")
        };
        assert_eq!(startup("4096"), Some(0));
        let calico = |h: &SimHost| {
            h.hns_networks()
                .expect("list")
                .into_iter()
                .find(|n| n.name == "Calico")
                .expect("Calico network")
        };
        assert_eq!(calico(&h).vsid(), Some(4096));
        assert_eq!(calico(&h).subnets[0].gateway.as_deref(), Some("10.244.1.1"));
        // A new VNI in the environment is silently ignored while the network exists.
        assert_eq!(startup("4097"), Some(0));
        assert_eq!(calico(&h).vsid(), Some(4096));
        h.hns_delete_network(&calico(&h).id).expect("delete");
        assert_eq!(startup("4097"), Some(0));
        assert_eq!(calico(&h).vsid(), Some(4097));
    }
}

#[cfg(all(test, windows))]
pub(crate) mod on_windows {
    //! Run under Wine in CI (`cargo test --target x86_64-pc-windows-gnu`); on a real node they
    //! need an elevated prompt.
    use super::*;
    use crate::host::windows::WindowsHost;

    /// Whether this runs under Wine. `tools/wine/test.sh` sets CALICOCTL_WIN_TEST_UNDER_WINE so
    /// that the Wine-only assertions cannot be skipped there by a failed detection.
    pub(crate) fn under_wine() -> bool {
        let wine = WindowsHost::new()
            .reg_key_exists(r"HKLM\Software\Wine")
            .unwrap_or(false);
        if std::env::var_os("CALICOCTL_WIN_TEST_UNDER_WINE").is_some() {
            assert!(wine, "the Wine runner is set but Wine was not detected");
        }
        wine
    }

    #[test]
    fn registry_contract() {
        registry(&WindowsHost::new());
    }

    /// Through the project's stand-in hnetcfg.dll (tools/wine/hnetcfg): Wine's own answers
    /// E_NOTIMPL for rules. `tools/wine/test.sh` installs it and sets the variable. Two rules
    /// of one name go through `INetFwRules::Add` (the stand-in keeps both, as Windows does).
    #[test]
    fn firewall_contract() {
        let Some(_turn) = firewall_turn() else { return };
        use crate::host::windows::firewall::{add_beside, remove_every};
        let h = WindowsHost::new();
        firewall(&h);
        firewall_unset(&h);
        firewall_duplicates(&h, &|r| add_beside(r).expect("admin add"), &|n| {
            remove_every(n).expect("admin remove")
        });
    }

    /// The firewall's turn where there is a firewall to test: the stand-in's or the host's.
    pub(crate) fn firewall_turn() -> Option<Turn> {
        turn("CALICOCTL_WIN_FW_STANDIN", &FIREWALL_POLICY)
    }

    /// `lock`'s turn where the stand-in `standin` names is installed, or on a real host.
    fn turn(standin: &str, lock: &'static Turns) -> Option<Turn> {
        standins(&[standin], lock).or_else(|| real_host().then(|| take(lock)))
    }

    pub(crate) type Turns = std::sync::Mutex<()>;
    pub(crate) type Turn = std::sync::MutexGuard<'static, ()>;

    /// `lock`'s turn, a panicked holder's too (the tests share no data through it).
    fn take(lock: &'static Turns) -> Turn {
        lock.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `lock`'s turn where every stand-in `vars` name is installed.
    fn standins(vars: &[&str], lock: &'static Turns) -> Option<Turn> {
        vars.iter()
            .all(|v| std::env::var_os(v).is_some())
            .then(|| take(lock))
    }

    /// Whether this is real Windows (`CALICOCTL_WIN_REAL_HOST`, set by the Windows workflow):
    /// the firewall, IP helper and HNS contracts then run against the host's own (the routes
    /// contract deletes the TEST-NET-1 route it adds, and the workflow any a killed run left).
    pub(crate) fn real_host() -> bool {
        std::env::var_os("CALICOCTL_WIN_REAL_HOST").is_some()
    }

    /// The tests that read or change the stand-in's `LocalPolicyModifyState` take turns.
    pub(crate) static FIREWALL_POLICY: Turns = Turns::new(());

    /// `LocalPolicyModifyState` is read through INetFwPolicy2 and its three answers mapped
    /// (icftypes.h: OK 0, GP_OVERRIDE 1, INBOUND_BLOCKED 2; the stand-in's `modify-state.json`).
    #[test]
    fn firewall_contract_a_group_policy_override_is_read() {
        let Some(_turn) = standins(&["CALICOCTL_WIN_FW_STANDIN"], &FIREWALL_POLICY) else {
            return;
        };
        let knob = std::path::Path::new(r"C:\calicoctl-win-firewall\modify-state.json");
        std::fs::create_dir_all(knob.parent().expect("dir")).expect("dir");
        let _gone = Defer(|| {
            let _ = std::fs::remove_file(knob);
        });
        let h = WindowsHost::new();
        for (n, want) in [
            ("1", crate::host::FirewallModifyState::GroupPolicyOverride),
            ("2", crate::host::FirewallModifyState::InboundBlocked),
            ("0", crate::host::FirewallModifyState::Ok),
        ] {
            std::fs::write(knob, n).expect("write");
            assert_eq!(h.firewall_modify_state().expect("read"), want, "{n}");
        }
    }

    /// Through the project's stand-in iphlpapi.dll (tools/wine/iphlpapi), whose adapters and
    /// routes live in the prefix: Wine 8's lacks the functions that add a route, and its
    /// table is the Linux machine's. `tools/wine/test.sh` installs it and sets the variable.
    #[test]
    fn routes_contract() {
        let Some(_turn) = turn("CALICOCTL_WIN_IPHLP_STANDIN", &ROUTES) else {
            return;
        };
        let h = WindowsHost::new();
        let before = test_net(&h.routes().expect("routes"));
        {
            // However the contract ends, the TEST-NET-1 route it added goes (the Host trait
            // removes none).
            let _added = Defer(|| {
                let now = test_net(&h.routes().unwrap_or_default());
                for r in now.iter().filter(|r| !before.contains(r)) {
                    if let Err(e) = crate::host::windows::delete_route(r) {
                        eprintln!("the routes contract's {} is left: {e}", r.describe());
                    }
                }
            });
            routes(&h);
        }
        assert_eq!(
            test_net(&h.routes().expect("routes")),
            before,
            "the route the contract added is left"
        );
    }

    /// The TEST-NET-1 routes (192.0.2.0/24, RFC 5737) among `all`.
    fn test_net(all: &[Route]) -> Vec<Route> {
        all.iter()
            .filter(|r| r.destination.octets()[..3] == [192, 0, 2])
            .cloned()
            .collect()
    }

    /// Through the stand-in: both adapters with their MAC, DNS servers, gateway and DHCP
    /// state as `GetAdaptersAddresses` fills them (tools/wine/netstate.rs).
    #[test]
    fn adapters_contract() {
        let Some(_turn) = turn("CALICOCTL_WIN_IPHLP_STANDIN", &ROUTES) else {
            return;
        };
        let all = adapters(&WindowsHost::new());
        if real_host() {
            return;
        }
        let second = named(&all, "Ethernet 2");
        assert_eq!(second.mac, "00-15-5D-00-03-0F", "{second:?}");
        assert_eq!(second.dns_servers, [std::net::Ipv4Addr::new(10, 0, 3, 3)]);
        assert!(!second.dhcp && second.gateways.is_empty(), "{second:?}");
        assert_eq!(second.metric, 25);
        assert_eq!(second.description, "Microsoft Hyper-V Network Adapter #2");
        let first = all
            .iter()
            .find(|a| a.name.ends_with("Ethernet)") || a.name == "Ethernet")
            .expect("Ethernet");
        assert!(first.dhcp, "{first:?}");
        assert_eq!(
            first.gateways,
            [std::net::Ipv4Addr::new(10, 0, 2, 2)],
            "{first:?}"
        );
        assert_eq!(first.dns_suffix, "cluster.example");
        interface_settings(&WindowsHost::new(), "Ethernet 2");
    }

    /// Through HCN's and the IP helper's stand-ins: the vSwitch's physical adapter has IPv4
    /// unbound and is read back from `GetIfTable2`. Not on a real host.
    #[test]
    fn the_uplink_behind_the_vswitch_is_read_from_the_interface_table() {
        let vars = ["CALICOCTL_WIN_IPHLP_STANDIN", "CALICOCTL_WIN_HCN_STANDIN"];
        let Some(_turn) = standins(&vars, &ROUTES) else {
            return;
        };
        vswitch_adapter(&WindowsHost::new(), "Ethernet 2");
    }

    /// Real Windows only: what WMI's setters make (`SetDNSDomain`, `SetDNSServerSearchOrder`)
    /// is what `GetAdaptersAddresses` reads back on the default route's adapter.
    #[test]
    fn wmi_settings_are_read_back_on_a_real_host() {
        use crate::host::ip_config::AdapterSetting;
        if !real_host() {
            return;
        }
        let _turn = take(&ROUTES);
        let h = WindowsHost::new();
        let adapters = h.adapters().expect("adapters");
        let routes = h.routes().expect("routes");
        let a = crate::host::uplink::default_route_adapter(&adapters, &routes)
            .expect("the default route's adapter")
            .clone();
        let read = || {
            h.adapters()
                .expect("adapters")
                .into_iter()
                .find(|x| x.index == a.index)
                .expect("the adapter")
        };
        eprintln!("before: {a:?}");
        h.configure_adapter(
            a.index,
            &AdapterSetting::DnsSuffix("calicoctl-win.test".into()),
        )
        .expect("SetDNSDomain");
        let set = read();
        let restore = if a.dhcp {
            String::new()
        } else {
            a.dns_suffix.clone()
        };
        h.configure_adapter(a.index, &AdapterSetting::DnsSuffix(restore))
            .expect("SetDNSDomain back");
        eprintln!(
            "suffix set: {:?}; restored: {:?}",
            set.dns_suffix,
            read().dns_suffix
        );
        assert_eq!(set.dns_suffix, "calicoctl-win.test", "{set:?}");
        h.configure_adapter(a.index, &AdapterSetting::DnsServers(a.dns_servers.clone()))
            .expect("SetDNSServerSearchOrder");
        let set = read();
        if a.dhcp {
            h.configure_adapter(a.index, &AdapterSetting::DnsServers(Vec::new()))
                .expect("SetDNSServerSearchOrder cleared");
        }
        eprintln!(
            "servers set: {:?}; after: {:?}",
            set.dns_servers,
            read().dns_servers
        );
        assert_eq!(set.dns_servers, a.dns_servers, "{set:?}");
    }

    /// The route tests change one routing table: they take turns.
    static ROUTES: Turns = Turns::new(());

    /// A route the IP helper refuses (ERROR_ACCESS_DENIED; the stand-in's `refuse_routes`, as
    /// a locked-down node answers) keeps the route and the OS's code in the error.
    #[test]
    fn routes_contract_a_refused_route_keeps_the_os_code() {
        let Some(_turn) = standins(&["CALICOCTL_WIN_IPHLP_STANDIN"], &ROUTES) else {
            return;
        };
        let h = WindowsHost::new();
        let nic = h
            .ipv4_addresses()
            .expect("addresses")
            .into_iter()
            .find(|a| !a.ip.is_loopback())
            .expect("an adapter");
        let route = Route {
            destination: std::net::Ipv4Addr::new(198, 51, 100, 7),
            prefix_len: 32,
            next_hop: std::net::Ipv4Addr::UNSPECIFIED,
            interface_index: nic.index,
            metric: 256,
        };
        // The stand-in keeps its state once a route was added; the refusal goes beside it.
        let harmless = Route {
            destination: std::net::Ipv4Addr::new(198, 51, 100, 8),
            ..route.clone()
        };
        let _ = h.add_route(&harmless);
        let state_path = std::path::Path::new(r"C:\calicoctl-win-net\state.json");
        let mut state: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(state_path).expect("state"))
                .expect("json");
        state["refuse_routes"] = json!(["198.51.100.7/32"]);
        std::fs::write(state_path, state.to_string()).expect("write");
        let err = h.add_route(&route).expect_err("refused");
        state["refuse_routes"] = json!([]);
        std::fs::write(state_path, state.to_string()).expect("write");
        keeps_its_code(&err, &format!("add {}", route.describe()));
        assert_eq!(err.os_code(), Some(5), "{err}");
    }

    /// A firewall rule Windows Firewall refuses (E_ACCESSDENIED; the stand-in's `refuse.json`)
    /// keeps the rule's name and the HRESULT in the error.
    #[test]
    fn firewall_contract_a_refused_rule_keeps_its_hresult() {
        if std::env::var_os("CALICOCTL_WIN_FW_STANDIN").is_none() {
            return;
        }
        let name = unique("Refused rule ");
        let refuse = std::path::Path::new(r"C:\calicoctl-win-firewall\refuse.json");
        std::fs::create_dir_all(refuse.parent().expect("dir")).expect("dir");
        std::fs::write(refuse, json!([name]).to_string()).expect("write");
        let err = WindowsHost::new()
            .firewall_add(&udp_rule(name.clone()))
            .expect_err("refused");
        std::fs::remove_file(refuse).expect("remove");
        keeps_its_code(&err, &format!("add firewall rule {name}"));
        assert_eq!(err.os_code(), Some(0x8007_0005), "{err}");
    }

    /// Runs its closure when dropped: clean-up that happens however a test ends.
    pub(crate) struct Defer<F: FnMut()>(pub(crate) F);

    impl<F: FnMut()> Drop for Defer<F> {
        fn drop(&mut self) {
            (self.0)()
        }
    }

    /// Stops and deletes a test's service however the test ends, so that a failed test leaves
    /// nothing behind for the next: a test service leaked by a failed start once held the
    /// display name "Calico Windows Agent", and the install test that ran next failed on it.
    pub(crate) fn remove_service_at_end<'a>(
        h: &'a WindowsHost,
        name: &'a str,
    ) -> Defer<impl FnMut() + 'a> {
        Defer(move || {
            let _ = h.service_stop(name, WAIT);
            let _ = h.service_delete(name);
        })
    }

    /// A program cargo builds next to the test binaries: `deps/../NAME` or an example.
    pub(crate) fn built(rel: &str) -> std::path::PathBuf {
        let exe = std::env::current_exe().expect("current exe");
        let dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
        let path = dir.join(rel);
        assert!(
            path.is_file(),
            "{} is missing: build it first",
            path.display()
        );
        path
    }

    /// calicoctl-win.exe as a real SCM service, under Wine: `service run felix` waits for the
    /// marker, runs a fake calico-node with the rendered environment, logs it, stops on Stop.
    #[test]
    fn calicoctl_win_runs_as_a_service_with_a_child() {
        use crate::layout::{BOOT_ID_VALUE, CALICO_KEY};
        if !under_wine() {
            return;
        }
        let _turn = take(&SCM);
        let h = WindowsHost::new();
        let root = tempfile::tempdir().expect("tempdir");
        let root_s = root.path().display().to_string();
        std::fs::copy(
            built("examples/fake-calico-node.exe"),
            root.path().join("calico-node.exe"),
        )
        .expect("copy the fake calico-node");
        std::fs::write(
            root.path().join("calico-felix.env"),
            format!("# rendered\r\nCALICO_LOG_DIR={root_s}\\logs\r\nFELIX_VXLANVNI=4097\r\n"),
        )
        .expect("env");
        let boot = h.system_facts().expect("facts").boot_id.expect("boot");
        h.reg_set(CALICO_KEY, BOOT_ID_VALUE, &RegValue::Sz(boot))
            .expect("marker");
        let _marker = Defer(|| {
            let _ = h.reg_delete_key(CALICO_KEY);
        });

        let name = "CalicoctlWinTestFelix";
        let _ = h.service_stop(name, WAIT);
        let _ = h.service_delete(name);
        let remove = remove_service_at_end(&h, name);
        let exe = built("calicoctl-win.exe").display().to_string();
        // The contract builds its own registration (the host ranks below the service bodies,
        // and a test service depends on no CalicoNode, which does not exist here).
        let spec = ServiceSpec {
            // Not Felix's own display name, which the SCM holds unique among services.
            display_name: "calicoctl-win test (felix role)".into(),
            description: "calicoctl-win's host contract suite".into(),
            args: [
                "service",
                "run",
                "felix",
                "--install-root",
                &root_s,
                "--stop-timeout",
                "2s",
            ]
            .map(String::from)
            .to_vec(),
            ..service(name, &exe)
        };
        h.service_create(&spec).expect("create");
        start_service(&h, name).expect("start");
        let log = root.path().join("logs").join("calico-felix.log");
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let mut text = String::new();
        while !text.contains("fake calico-node -felix FELIX_VXLANVNI=4097") {
            assert!(
                std::time::Instant::now() < deadline,
                "the child never wrote to the log: {text}"
            );
            std::thread::sleep(Duration::from_millis(100));
            text = std::fs::read_to_string(&log).unwrap_or_default();
        }
        let q = h.service_query(name).expect("query").expect("registered");
        assert_eq!(q.state, ServiceState::Running);
        assert!(h.process_pid("calico-node.exe").expect("list").is_some());

        h.service_stop(name, WAIT).expect("stop");
        let q = h.service_query(name).expect("query").expect("registered");
        assert_eq!(q.state, ServiceState::Stopped);
        let text = std::fs::read_to_string(&log).expect("log");
        assert!(text.contains("[calicoctl-win] info: stopped"), "{text}");
        assert_eq!(
            h.process_pid("calico-node.exe").expect("list"),
            None,
            "{text}"
        );
        h.service_delete(name).expect("delete");
        assert_eq!(h.service_query(name).expect("query"), None);
        drop(remove);
        h.reg_delete_key(CALICO_KEY).expect("clean up the marker");
    }

    /// What the OS answers reaches the caller: the operation, its object and the code, in the
    /// error's own text (`Display`), whatever wraps or formats it later.
    fn keeps_its_code(err: &HostError, object: &str) {
        let text = err.to_string();
        let code = err
            .os_code()
            .unwrap_or_else(|| panic!("no OS code in {err:?}"));
        assert!(text.contains(object), "{object}: {text}");
        eprintln!("refused: {text}");
        let code_text = format!("({})", crate::host::error::code_text(code));
        assert!(text.ends_with(&code_text), "{code_text}: {text}");
    }

    /// Refusals the real APIs give in the areas Wine implements itself: a file replaced where
    /// a directory stands, a registry value under a key that cannot be made, a service whose
    /// program is not there.
    #[test]
    fn a_refusal_of_files_registry_or_services_keeps_the_os_code() {
        if !under_wine() {
            return;
        }
        let h = WindowsHost::new();
        let dir = tempfile::tempdir().expect("tempdir");
        let taken = dir.path().join("taken");
        std::fs::create_dir(&taken).expect("dir");
        let path = taken.display().to_string();
        let err = h
            .replace_file(&path, b"x", Access::Normal)
            .expect_err("a directory is not replaced by a file");
        keeps_its_code(&err, &path);

        let key = format!(r"HKLM\{}", "x".repeat(300));
        let err = h
            .reg_set(&key, "Value", &RegValue::Dword(1))
            .expect_err("a key name over 255 characters");
        keeps_its_code(&err, "registry value");

        let _turn = take(&SCM);
        let name = unique("CalicoctlWinMissing");
        let spec = service(&name, &dir.path().join("missing.exe").display().to_string());
        h.service_create(&spec).expect("create");
        let err = h.service_start(&name, WAIT).expect_err("no program");
        let _ = h.service_delete(&name);
        keeps_its_code(&err, &format!("start service {name}"));
    }

    /// The tests that start and stop real services take turns: Wine's SCM has lost track of
    /// handles when services came and went at the same moment.
    pub(crate) static SCM: Turns = Turns::new(());

    #[test]
    fn services_contract() {
        let _turn = take(&SCM);
        // Wine's SCM lacks SERVICE_CONFIG_FAILURE_ACTIONS_FLAG (error 124); Windows has it.
        let recovery = Recovery {
            restart_after: vec![Duration::from_secs(10), Duration::from_secs(30)],
            reset_after: Duration::from_secs(86400),
            on_non_crash_failures: !under_wine(),
        };
        services(
            &WindowsHost::new(),
            &built("examples/contract-test-service.exe")
                .display()
                .to_string(),
            &["--role", "contract test"],
            Some(recovery),
        );
    }

    #[test]
    fn system_contract() {
        system(&WindowsHost::new());
        // Windows reads the boot as reported and by its date's time-zone rule itself (the
        // simulated host keeps them unset): both there, at most a DST shift apart.
        let f = WindowsHost::new().system_facts().expect("facts");
        let (Some(reported), Some(dated)) =
            (f.boot_local_seconds_reported, f.boot_local_seconds_dated)
        else {
            panic!("the boot's local readings: {f:?}");
        };
        assert!(
            (reported - dated).abs() <= 2 * 3600,
            "{reported} against {dated}"
        );
    }

    #[test]
    fn files_contract() {
        let dir = tempfile::tempdir().expect("tempdir");
        files(
            &WindowsHost::new(),
            &dir.path().display().to_string(),
            !under_wine(),
        );
    }

    #[test]
    fn security_contract() {
        let dir = tempfile::tempdir().expect("tempdir");
        security(
            &WindowsHost::new(),
            &dir.path().display().to_string(),
            !under_wine(),
        );
    }

    #[test]
    fn the_exe_starts_without_hns_and_reports_it_unavailable() {
        if !under_wine() {
            return;
        }
        let err = WindowsHost::new().hns_networks().unwrap_err();
        assert!(matches!(err, HostError::Unavailable { .. }), "{err}");
        assert!(err.to_string().contains("computenetwork.dll"), "{err}");
    }

    #[test]
    fn kubelet_is_not_running_and_processes_can_be_listed() {
        let h = WindowsHost::new();
        assert_eq!(h.process_pid("kubelet.exe").expect("list"), None);
        let me = std::env::current_exe().expect("exe");
        let name = me.file_name().expect("name").to_string_lossy().into_owned();
        assert_eq!(
            h.process_pid(&name).expect("list"),
            Some(std::process::id())
        );
    }
}
