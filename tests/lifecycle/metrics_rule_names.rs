//! A firewall rule's name is no key on Windows: several rules may have one name, and removal
//! is by name. Install makes a metrics or VXLAN rule only where no rule has its name, and
//! uninstall removes one only while it is the one rule of its name as install made it.

use crate::support::Node;
use serde_json::{Value, json};

const OURS: &str = "Calico metrics calicoctl-win TCP 9095";
const ON: [&str; 4] = [
    "--set",
    "metrics.enabled=true",
    "--set",
    "metrics.source_ranges=10.0.0.0/8",
];

fn node() -> Node {
    Node::healthy()
        .created()
        .serving("3.30.2", "calico-node.exe")
        .build()
}

/// Every rule of this name on the simulated host, the first then the others.
fn rules_named(s: &Node, name: &str) -> Vec<Value> {
    let state = s.state();
    let first = state["firewall"][name.to_ascii_lowercase()].clone();
    let more = state["firewall_more"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    std::iter::once(first)
        .filter(|r| r.is_object())
        .chain(more.into_iter().filter(|r| r["name"] == name))
        .collect()
}

/// An administrator's rule of the metrics port's name, open to every address.
fn admins(name: &str, port: u16) -> Value {
    json!({
        "name": name,
        "protocol": "tcp",
        "local_port": port,
        "allow": true,
        "enabled": true,
        "profiles": 2147483647,
        "remote_addresses": ["0.0.0.0/0"],
    })
}

/// An administrator's rule of our metrics rule's name before install: install is refused,
/// naming it, before any change; the rule is as it was. (It was once skipped, leaving the
/// port to the administrator's rule, and the install went on.)
#[test]
fn an_administrators_rule_of_our_name_refuses_install_before_any_change() {
    let s = node();
    let theirs = admins(OURS, 9095);
    s.edit_state(|st| st["firewall"][OURS.to_ascii_lowercase()] = theirs.clone());
    let before = s.state();
    let (code, _, stderr) = s.install(&ON);
    assert_ne!(code, 0, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "'{OURS}' cannot be made: the firewall holds one rule of that name, not as calicoctl-win made it"
        )),
        "{stderr}"
    );
    assert_eq!(rules_named(&s, OURS), [theirs]);
    assert!(
        !s.c_drive("calicowindows/calicoctl-win-install.json")
            .exists()
    );
    assert_eq!(s.state()["firewall"], before["firewall"]);
    assert_eq!(s.state()["services"], before["services"]);
}

/// Two rules of our rule's name at uninstall (an administrator's made beside ours): neither
/// is removed (removal by name could take either), and uninstall says so. (Ours was removed
/// by its name.)
#[test]
fn two_rules_of_our_name_at_uninstall_are_reported_and_none_removed() {
    let s = node();
    let (code, _, stderr) = s.install(&ON);
    assert_eq!(code, 0, "{stderr}");
    let theirs = admins(OURS, 9095);
    s.edit_state(|st| st["firewall_more"] = json!([theirs.clone()]));
    let both = rules_named(&s, OURS);
    assert_eq!(both.len(), 2);
    let (code, doc, stderr) = s.uninstall(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(rules_named(&s, OURS), both);
    assert!(
        stderr.contains(&format!(
            "'{OURS}' is left as it is: the firewall holds 2 rules of that name"
        )),
        "{stderr}"
    );
    assert!(
        doc["warnings"].to_string().contains("Get-NetFirewallRule"),
        "{doc}"
    );
    // Felix's rule, alone and as made, went.
    assert_eq!(
        rules_named(&s, "Calico metrics Felix TCP 9091"),
        Vec::<Value>::new()
    );
}

/// Our rule with its remote addresses changed by an administrator: left, and said.
#[test]
fn our_rule_an_administrator_widened_is_left_and_reported() {
    let s = node();
    let (code, _, stderr) = s.install(&ON);
    assert_eq!(code, 0, "{stderr}");
    s.edit_state(|st| {
        st["firewall"][OURS.to_ascii_lowercase()]["remote_addresses"] =
            json!(["10.0.0.0/8", "192.168.0.0/16"]);
    });
    let edited = rules_named(&s, OURS);
    let (code, _, stderr) = s.uninstall(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(rules_named(&s, OURS), edited);
    assert!(
        stderr.contains(&format!(
            "'{OURS}' is left as it is: the firewall holds one rule of that name, not as calicoctl-win made it"
        )),
        "{stderr}"
    );
}

/// Our rules, alone and as made: uninstall removes them.
#[test]
fn our_rules_alone_and_as_made_are_removed() {
    let s = node();
    let (code, _, stderr) = s.install(&ON);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(rules_named(&s, OURS).len(), 1);
    let (code, _, stderr) = s.uninstall(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("is left as it is"), "{stderr}");
    assert_eq!(rules_named(&s, OURS), Vec::<Value>::new());
    assert_eq!(
        rules_named(&s, "Calico metrics Felix TCP 9091"),
        Vec::<Value>::new()
    );
}

/// A disabled rule of the VXLAN rule's name (an administrator's, or ours turned off): install
/// makes no second rule of that name; it is refused before any change, naming the rule and
/// how to let VXLAN in. (It added a second and was refused by its own add, mid-way.)
#[test]
fn a_disabled_vxlan_rule_of_our_name_refuses_install_before_any_change() {
    let s = node();
    let name = "Calico VXLAN UDP 4789";
    let disabled = json!({
        "name": name,
        "protocol": "udp",
        "local_port": 4789,
        "allow": true,
        "enabled": false,
        "profiles": 2147483647,
    });
    s.edit_state(|st| st["firewall"][name.to_ascii_lowercase()] = disabled.clone());
    let before = s.state();
    let (code, _, stderr) = s.install(&["--skip", "firewall-vxlan"]);
    assert_ne!(code, 0, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "'{name}' cannot be made: the firewall holds one rule of that name, not as calicoctl-win made it, which does not let inbound UDP 4789 in"
        )),
        "{stderr}"
    );
    assert_eq!(rules_named(&s, name), [disabled]);
    assert_eq!(s.state()["services"], before["services"]);
}

/// A rule of the Calico scripts' VXLAN name that lets UDP 4789 in only from some remote ports
/// (VXLAN's source port is a hash of the inner packet, RFC 7348 section 5, so it drops some)
/// or only for a service is no open port: install adds its own rule beside it and leaves it.
/// (Install once took it for open and added none: the firewall dropped VXLAN.)
#[test]
fn a_vxlan_rule_narrowed_by_a_property_install_does_not_set_is_not_open() {
    for (field, value) in [
        ("remote_ports", "50000-50100"),
        ("service_name", "CalicoNode"),
    ] {
        let s = node();
        let name = "Overlay Traffic 4789 UDP";
        let mut narrowed = json!({
            "name": name,
            "description": "",
            "protocol": "udp",
            "local_port": 4789,
            "allow": true,
            "enabled": true,
            "profiles": 2147483647,
        });
        narrowed[field] = json!(value);
        s.edit_state(|st| st["firewall"][name.to_ascii_lowercase()] = narrowed.clone());
        let (code, _, stderr) = s.install(&["--skip", "firewall-vxlan"]);
        assert_eq!(code, 0, "{field}: {stderr}");
        assert_eq!(rules_named(&s, "Calico VXLAN UDP 4789").len(), 1, "{field}");
        assert_eq!(rules_named(&s, name), [narrowed], "{field}");
    }
}

/// An install cut off after adding our metrics rule, then an administrator's rule of its name
/// beside it: uninstall, undoing that install, keeps both rules (removal by name could take
/// either), says so, and goes on. (The refusal failed the undo and kept the journal, so every
/// uninstall ended "cannot undo the interrupted install" for good.)
#[test]
fn an_interrupted_installs_rule_beside_an_administrators_is_kept_and_uninstall_goes_on() {
    let s = node();
    let zip = s.zip().display().to_string();
    let crash = "crash:~add firewall rule Calico metrics Felix";
    let args = [
        &["install", "--release-zip", &zip][..],
        &ON,
        &["--sim-fault", crash],
    ]
    .concat();
    let (code, stderr) = s.run_raw(&args);
    assert_eq!(code, 86, "{stderr}");
    assert_eq!(rules_named(&s, OURS).len(), 1);
    let theirs = admins(OURS, 9095);
    s.edit_state(|st| st["firewall_more"] = json!([theirs.clone()]));
    let both = rules_named(&s, OURS);
    assert_eq!(both.len(), 2);
    let (code, doc, stderr) = s.uninstall(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("did not finish"), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "kept the firewall rule '{OURS}': the firewall holds 2 rules of that name"
        )),
        "{stderr}"
    );
    assert!(
        doc["warnings"]
            .to_string()
            .contains(&format!("Get-NetFirewallRule -DisplayName '{OURS}'")),
        "{doc}"
    );
    assert_eq!(rules_named(&s, OURS), both);
    assert!(
        !s.c_drive("calicowindows/calicoctl-win.journal.json")
            .exists()
    );
}
