use super::*;

#[test]
fn remote_addresses_compare_in_prefix_mask_or_bare_notation() {
    for (a, b) in [
        ("10.0.0.0/8", "10.0.0.0/255.0.0.0"),
        ("1.2.3.4", "1.2.3.4/32"),
        ("1.2.3.4/255.255.255.255", "1.2.3.4/32"),
        ("10.0.0.2/8", "10.0.0.0/8"),
        ("fd00::1", "fd00:0::1/128"),
    ] {
        assert_eq!(normal_address(a), normal_address(b), "{a} {b}");
    }
    for kept in ["10.0.0.1-10.0.0.9", "LocalSubnet", "10.0.0.0/255.0.255.0"] {
        assert_eq!(normal_address(kept), kept);
    }
    assert_ne!(normal_address("10.0.0.0/8"), normal_address("10.0.0.0/16"));
    let rule = FirewallRule {
        remote_addresses: vec!["10.0.0.0/8".into(), "1.2.3.4/32".into()],
        ..open()
    };
    let read_back = FirewallRule {
        remote_addresses: FirewallRule::remote_addresses_from(
            "1.2.3.4/255.255.255.255,10.0.0.0/255.0.0.0",
        ),
        ..rule.clone()
    };
    assert!(rule.same(&read_back));
    let wider = FirewallRule {
        remote_addresses: vec!["10.0.0.0/8".into()],
        ..rule.clone()
    };
    assert!(!rule.same(&wider));
    assert!(!rule.same(&FirewallRule {
        local_port: 9092,
        ..rule.clone()
    }));
}

/// Without a copy of the rule (an older journal), only a rule carrying the marker is ours.
#[test]
fn a_rule_without_the_marker_is_not_an_older_journals() {
    let rule = open();
    assert!(ours(std::slice::from_ref(&rule), None));
    let admins = FirewallRule {
        description: "Allow Prometheus".into(),
        ..rule.clone()
    };
    assert!(!ours(&[admins], None));
    assert!(!ours(&[rule.clone(), rule], None));
}

/// A metrics rule as calicoctl-win makes it.
fn made() -> FirewallRule {
    FirewallRule {
        protocol: Protocol::Tcp,
        program: Some(r"C:\CalicoWindows\calico-node.exe".into()),
        local_port: 9091,
        remote_addresses: vec!["10.0.0.0/8".into()],
        ..crate::host::contract::udp_rule("Calico metrics Felix TCP 9091".into())
    }
}

/// `made` for every program and address.
fn open() -> FirewallRule {
    FirewallRule {
        program: None,
        remote_addresses: Vec::new(),
        ..made()
    }
}

/// A rule an administrator changed through a property calicoctl-win does not set (through
/// INetFwRule, 2 or 3) is not ours, and kept; one narrowed opens nothing (remote ports:
/// VXLAN's source port is a hash, RFC 7348 section 5); edge traversal, a group, `Lan` don't.
/// Windows' defaults in another spelling are the defaults.
#[test]
fn a_rule_changed_in_a_property_we_do_not_set_is_not_ours_and_a_narrowed_one_opens_nothing() {
    let open = open();
    assert!(open.opens(Protocol::Tcp, 9091));
    type Edit = fn(&mut Unset);
    let edits: [(Edit, bool); 19] = [
        (|u| u.local_addresses = "10.0.2.15".into(), true),
        (|u| u.local_addresses = "LocalSubnet".into(), true),
        (|u| u.remote_ports = "40000-40100".into(), true),
        (|u| u.interface_types = "Lan".into(), false),
        (|u| u.interface_types = "lan, Wireless".into(), false),
        (|u| u.interface_types = "Wireless,RemoteAccess".into(), true),
        (|u| u.edge_traversal = true, false),
        (|u| u.grouping = "Monitoring".into(), false),
        (|u| u.service_name = "CalicoNode".into(), true),
        (|u| u.service_name = "*".into(), true),
        (|u| u.interfaces = vec!["Ethernet 2".into()], true),
        (|u| u.edge_traversal_options = 2, false),
        (|u| u.edge_traversal_options = 3, false),
        (
            |u| u.app_container.local_app_package_id = "S-1-15-2-1".into(),
            true,
        ),
        (
            |u| u.app_container.local_user_owner = "S-1-5-21-1-2-3-500".into(),
            true,
        ),
        (
            |u| u.app_container.local_user_authorized_list = "O:LSD:(A;;CC;;;S-1-5-18)".into(),
            true,
        ),
        (
            |u| u.app_container.remote_user_authorized_list = "O:LSD:(A;;CC;;;S-1-5-11)".into(),
            true,
        ),
        (
            |u| u.app_container.remote_machine_authorized_list = "O:LSD:(A;;CC;;;S-1-5-11)".into(),
            true,
        ),
        (|u| u.app_container.secure_flags = 1, true),
    ];
    for (edit, narrows) in edits {
        let mut changed = open.clone();
        edit(&mut changed.unset);
        assert!(!open.same(&changed), "{:?}", changed.unset);
        assert!(!ours(std::slice::from_ref(&changed), Some(&open)));
        let opens = changed.opens(Protocol::Tcp, 9091);
        assert_eq!(opens, !narrows, "{:?}", changed.unset);
    }
    let spelled = FirewallRule {
        unset: Unset {
            interface_types: "ALL".into(),
            local_addresses: " * ".into(),
            remote_ports: " * ".into(),
            ..Unset::default()
        },
        ..open.clone()
    };
    assert!(open.same(&spelled) && spelled.opens(Protocol::Tcp, 9091));
    // Edge traversal allowed through either property is one value.
    let flag = FirewallRule {
        unset: Unset {
            edge_traversal: true,
            ..Unset::default()
        },
        ..open.clone()
    };
    let option = FirewallRule {
        unset: Unset {
            edge_traversal: true,
            edge_traversal_options: crate::host::firewall::EDGE_TRAVERSAL_ALLOW,
            ..Unset::default()
        },
        ..open.clone()
    };
    assert!(flag.same(&option));
    assert!(!open.same(&flag));
}

/// A rule read back as Windows gives it is the rule made: `0.0.0.0/0` as `*`, its name in
/// another case (the firewall reads rules by name in any case). Any address is not a narrower
/// range; another name is another rule.
#[test]
fn a_rule_read_back_in_windows_spelling_is_the_rule_made() {
    let rule = |edit: fn(&mut FirewallRule)| {
        let mut r = made();
        edit(&mut r);
        r
    };
    let from_any = rule(|r| r.remote_addresses = vec!["0.0.0.0/0".into()]);
    let star = rule(|r| r.remote_addresses = FirewallRule::remote_addresses_from("*"));
    let lower = rule(|r| r.name = "calico metrics felix tcp 9091".into());
    let other = rule(|r| r.name = "Calico metrics Felix TCP 9092".into());
    for (made, read, same) in [
        (&from_any, &star, true),
        (&made(), &lower, true),
        (&made(), &star, false),
        (&made(), &other, false),
    ] {
        assert_eq!(made.same(read), same, "{made:?} {read:?}");
        assert_eq!(ours(std::slice::from_ref(read), Some(made)), same);
    }
}

/// A rule as the previous version's record kept it reads with Windows' defaults, and is
/// written without them; a property set is kept.
#[test]
fn a_rule_of_an_older_record_reads_with_the_defaults() {
    let old = serde_json::json!({
        "name": "Calico metrics Felix TCP 9091",
        "protocol": "tcp",
        "program": r"C:\CalicoWindows\calico-node.exe",
        "local_port": 9091,
        "allow": true,
        "enabled": true,
        "profiles": ALL_PROFILES,
        "remote_addresses": ["10.0.0.0/8"],
    });
    let read: FirewallRule = serde_json::from_value(old.clone()).expect("old-shaped rule");
    assert_eq!(read, made());
    assert_eq!(serde_json::to_value(made()).expect("json"), old);
    // Set properties are kept, and read back.
    let narrowed = FirewallRule {
        unset: narrowed_every_way(),
        ..made()
    };
    let json = serde_json::to_value(&narrowed).expect("json");
    assert_eq!(json["interfaces"], serde_json::json!(["Ethernet"]));
    assert_eq!(json["edge_traversal_options"], 3);
    assert!(json["remote_machine_authorized_list"].is_string(), "{json}");
    let back: FirewallRule = serde_json::from_value(json).expect("back");
    assert_eq!(back, narrowed);
}

/// A read-back default in another spelling (`""`, ` * `, `all`) is not set on a rule put back.
#[test]
fn a_default_in_another_spelling_is_not_set_on_a_rule_put_back() {
    let spelled = Unset {
        local_addresses: " * ".into(),
        remote_ports: String::new(),
        interface_types: "all".into(),
        interfaces: vec![" ".into()],
        app_container: AppContainerScope {
            local_user_owner: " ".into(),
            ..AppContainerScope::default()
        },
        ..Unset::default()
    };
    assert_eq!(spelled.not_default(), NotDefault::default());
    // Every field away from its default.
    let every = format!("{:?}", narrowed_every_way().not_default());
    assert!(!every.contains("false"), "{every}");
}

/// Every property of `Unset` away from its default.
fn narrowed_every_way() -> Unset {
    Unset {
        local_addresses: "10.0.2.15".into(),
        remote_ports: "40000".into(),
        interface_types: "Lan".into(),
        edge_traversal: true,
        grouping: "Monitoring".into(),
        service_name: "CalicoNode".into(),
        interfaces: vec!["Ethernet".into()],
        edge_traversal_options: 3,
        app_container: AppContainerScope {
            remote_machine_authorized_list: "O:LSD:(A;;CC;;;S-1-5-21-1-2-3-1105)".into(),
            ..AppContainerScope::default()
        },
    }
}
