//! What the host itself holds, as the zip's `host/` members: the system, the services, HNS,
//! the network, the firewall rules, the events; and the install record, its journal and the
//! tail of every service log, as they are on disk.

use super::bundle::Bundle;
use crate::host::Host;
use crate::installed::record::{self, InstallRecord};
use crate::layout::InstallRoot;
use serde_json::Value;

/// Services whose registration helps a support case, besides the ones install registered.
const OTHER_SERVICES: &[&str] = &[
    "kubelet",
    "kube-proxy",
    "containerd",
    "docker",
    "RemoteAccess",
    "CalicoNode",
    "CalicoFelix",
    "CalicoConfd",
];

/// What the host itself holds: the system, the services, HNS, the network, the firewall rule.
pub(super) fn sections(h: &dyn Host, rec: Option<&InstallRecord>, b: &mut Bundle) {
    b.section("host/system.json", h.system_facts().map_err(Into::into));
    b.section("host/services.json", services(h, rec));
    b.section("host/hns.json", hns(h));
    b.section(
        "host/hns-policy-lists.json",
        h.hns_policy_lists().map(Value::Array).map_err(Into::into),
    );
    b.section("host/network.json", network(h));
    b.section("host/firewall.json", firewall(h, rec));
    b.section("host/events.json", events(h));
}

/// The events a support engineer reads first, newest first: boots and shutdowns (EventLog
/// 6005, 6006, 6008; User32 1074; Kernel-Power 41), the SCM's events of the Calico services,
/// kube-proxy and HNS (7000, 7009 failed to start; 7023, 7024 ended with an error; 7031, 7034
/// ended unexpectedly; 7036 changed state), the Calico binaries' crashes and hangs
/// (Application Error 1000, WER 1001, Application Hang 1002), and calicoctl-win's own.
fn events(h: &dyn Host) -> anyhow::Result<Events> {
    use crate::host::events::EventQuery;
    const OURS: &[&str] = &[
        "CalicoNode",
        "CalicoFelix",
        "CalicoConfd",
        "kube-proxy",
        "Host Network Service",
        "calicoctl-win",
        "calico-node",
        "calico.exe",
        "calico-felix",
    ];
    let ask = |channel, providers: &[&str], ids: &[u32], max| {
        let q = EventQuery {
            channel,
            providers,
            ids,
        };
        h.read_events(&q, max)
    };
    let about_ours = |list: Vec<crate::host::events::LoggedEvent>, max: usize| {
        list.into_iter()
            .filter(|e| e.mentions(OURS))
            .take(max)
            .collect::<Vec<_>>()
    };
    let boots = ask("System", &[], &[41, 1074, 6005, 6006, 6008], 50)?;
    let scm = ask(
        "System",
        &["Service Control Manager"],
        &[7000, 7009, 7023, 7024, 7031, 7034, 7036],
        2000,
    )?;
    let crashes = ask(
        "Application",
        &[
            "Application Error",
            "Windows Error Reporting",
            "Application Hang",
        ],
        &[1000, 1001, 1002],
        500,
    )?;
    let own = ask("Application", &[crate::layout::EVENT_SOURCE], &[], 200)?;
    Ok(Events {
        boots,
        services: about_ours(scm, 200),
        crashes: about_ours(crashes, 50),
        own,
    })
}

/// The zip's `host/events.json`, each list newest first.
#[derive(serde::Serialize)]
struct Events {
    boots: Vec<crate::host::events::LoggedEvent>,
    services: Vec<crate::host::events::LoggedEvent>,
    crashes: Vec<crate::host::events::LoggedEvent>,
    #[serde(rename = "calicoctl-win")]
    own: Vec<crate::host::events::LoggedEvent>,
}

/// An HNS network with its endpoints (`host/hns.json`).
#[derive(serde::Serialize)]
struct WithEndpoints {
    network: crate::host::HnsNetwork,
    endpoints: Vec<crate::host::HnsEndpoint>,
}

/// The zip's `host/network.json`.
#[derive(serde::Serialize)]
struct Addressing {
    ipv4_addresses: Vec<crate::host::InterfaceAddress>,
    routes: Vec<crate::host::Route>,
}

fn services(h: &dyn Host, rec: Option<&InstallRecord>) -> anyhow::Result<Value> {
    let mut names: Vec<String> = rec
        .map(|r| r.services.iter().map(|s| s.name.clone()).collect())
        .unwrap_or_default();
    for n in OTHER_SERVICES {
        if !names.iter().any(|m| m.eq_ignore_ascii_case(n)) {
            names.push((*n).to_owned());
        }
    }
    let mut out = serde_json::Map::new();
    for name in names {
        let v = match h.service_query(&name)? {
            Some(s) => serde_json::to_value(s)?,
            None => Value::Null,
        };
        out.insert(name, v);
    }
    Ok(Value::Object(out))
}

fn hns(h: &dyn Host) -> anyhow::Result<Vec<WithEndpoints>> {
    let mut networks = Vec::new();
    for network in h.hns_networks()? {
        let endpoints = h.hns_endpoints(&network.id)?;
        networks.push(WithEndpoints { network, endpoints });
    }
    Ok(networks)
}

fn network(h: &dyn Host) -> anyhow::Result<Addressing> {
    Ok(Addressing {
        ipv4_addresses: h.ipv4_addresses()?,
        routes: h.routes()?,
    })
}

fn firewall(h: &dyn Host, rec: Option<&InstallRecord>) -> anyhow::Result<Value> {
    let mut names = vec![
        crate::layout::VXLAN_RULE.to_owned(),
        crate::layout::CALICO_SCRIPT_VXLAN_RULE.to_owned(),
    ];
    if let Some(r) = rec.and_then(|r| r.firewall_rule.as_ref())
        && !names.contains(&r.name)
    {
        names.insert(0, r.name.clone());
    }
    let mut out = serde_json::Map::new();
    for name in names {
        let rule = h.firewall_rule(&name)?;
        out.insert(name, serde_json::to_value(rule)?);
    }
    Ok(Value::Object(out))
}

/// The install record and a journal left by an unfinished command, as they are on disk.
pub(super) fn install_files(h: &dyn Host, root: &InstallRoot, b: &mut Bundle) {
    for name in [crate::layout::RECORD_FILE, crate::layout::JOURNAL_FILE] {
        let path = root.path(name);
        match h.read_file(&path) {
            Ok(Some(bytes)) => b.members.push((format!("install/{name}"), bytes)),
            Ok(None) => {}
            Err(e) => b.problems.push(format!("{path}: {e}")),
        }
    }
}

/// The last `tail` bytes of every service log, from the first whole line.
pub(super) fn logs(h: &dyn Host, dir: &str, tail: u64, b: &mut Bundle) {
    let names = match record::service_logs(h, dir) {
        Ok(n) => n,
        Err(e) => {
            b.problems.push(format!("logs: {e:#}"));
            return;
        }
    };
    for path in names {
        let name = path.rsplit('\\').next().unwrap_or(&path).to_owned();
        match h.read_tail(&path, tail) {
            Ok(Some(bytes)) => {
                b.tails.insert(format!("logs/{name}"));
                b.members.push((format!("logs/{name}"), bytes));
            }
            Ok(None) => b.problems.push(format!("{path}: it is gone")),
            Err(e) => b.problems.push(format!("{path}: {e:#}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::EventLog;
    use crate::host::sim::SimHost;

    /// The bundle of the last `tail` bytes of a felix log holding `log`.
    fn tail_of(log: &str, tail: u64) -> Bundle {
        use crate::host::Files as _;
        let h = SimHost::in_memory("ws2022").expect("host");
        let dir = r"C:\CalicoWindows\logs";
        let path = crate::layout::join(dir, "calico-felix.log");
        h.write_file(&path, log.as_bytes(), crate::host::Access::Normal)
            .expect("log");
        let mut b = Bundle::default();
        logs(&h, dir, tail, &mut b);
        b
    }

    /// A log's tail cut inside a private key (its BEGIN line before the cut) keeps none of
    /// the key's lines once redacted as the zip's members are.
    #[test]
    fn a_log_tail_cut_inside_a_private_key_keeps_none_of_it() {
        let key = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIkeyline1\nAwEHoUQDQkeyline2\n-----END EC PRIVATE KEY-----\n";
        let b = tail_of(
            &format!("{}{key}after the key\n", "felix line\n".repeat(50)),
            80,
        );
        let (_, tail) = &b.members[0];
        let text = String::from_utf8_lossy(tail);
        assert!(
            !text.contains("BEGIN") && text.contains("keyline1"),
            "{text}"
        );
        let out = crate::redact::Redactor::new(&[]).redact(tail);
        let out = String::from_utf8(out).expect("utf8");
        assert!(!out.contains("keyline"), "{out}");
        assert!(out.ends_with("after the key\n"), "{out}");
    }

    /// A log's tail cut inside a private key with neither its BEGIN nor its END in it (a key
    /// longer than the tail, the log's last record) is a tail: its head's key lines go.
    #[test]
    fn a_log_tail_inside_a_private_key_without_its_markers_keeps_none_of_it() {
        let body = format!("MIIEowIBAAKCAQEAtailkeybody{}\n", "x".repeat(37));
        let log = format!(
            "{}-----BEGIN RSA PRIVATE KEY-----\n{}",
            "felix line\n".repeat(50),
            body.repeat(4)
        );
        let b = tail_of(&log, 200);
        let (name, tail) = &b.members[0];
        let text = String::from_utf8_lossy(tail);
        assert!(
            !text.contains("-----") && text.contains("tailkeybody"),
            "{text}"
        );
        assert!(b.tails.contains(name), "{name} is no tail");
        let out = crate::redact::Redactor::new(&[]).redact_tail(tail);
        let out = String::from_utf8(out).expect("utf8");
        assert_eq!(out, "<redacted>\n".repeat(text.lines().count()), "{out}");
    }

    /// The events section on a simulated host: a restart's EventLog 6006 and 6005 in the
    /// System log, calicoctl-win's own in Application, newest first.
    #[test]
    fn the_events_section_has_the_boots_and_our_own_events() {
        let h = SimHost::in_memory("ws2022").expect("host");
        h.report_event(
            crate::layout::EVENT_SOURCE,
            crate::host::EventLevel::Error,
            3,
            "CalicoFelix failed",
        )
        .expect("event");
        h.reboot().expect("reboot");
        let doc = serde_json::to_value(events(&h).expect("events")).expect("json");
        let ids: Vec<u64> = doc["boots"]
            .as_array()
            .expect("boots")
            .iter()
            .filter_map(|e| e["id"].as_u64())
            .collect();
        assert_eq!(ids, [6005, 6006], "{doc}");
        assert_eq!(doc["calicoctl-win"][0]["data"][0], "CalicoFelix failed");
        assert_eq!(doc["calicoctl-win"][0]["level"], 2);
        assert_eq!(doc["services"], serde_json::json!([]));
        // The SCM names a service by its display name in the message and by its key name in
        // the binary data only: found by the key (a display name matched nothing before).
        h.log_scm_event(7031, "Calico Felix", "CalicoFelix")
            .expect("event");
        h.log_scm_event(7036, "Windows Update", "wuauserv")
            .expect("event");
        let doc = serde_json::to_value(events(&h).expect("events")).expect("json");
        let services = doc["services"].as_array().expect("services");
        assert_eq!(services.len(), 1, "{doc}");
        assert_eq!(services[0]["binary"], "CalicoFelix", "{doc}");
    }
}
