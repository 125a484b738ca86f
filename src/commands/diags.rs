//! `diags`: one zip for a support case. What `config show`, `status` and `preflight` answer
//! (their JSON documents, run here as they run alone), the service registrations, the HNS
//! networks and their endpoints, addresses and routes, the VXLAN firewall rule, the install
//! record and journal, the tail of every service log and the versions of what runs the node.
//! Every member passes through [`crate::redact`] before it is written: no token or key leaves
//! the node in it. Nothing on the host changes; the zip is written atomically.

use crate::cli::{DiagsArgs, PreflightArgs, ShowArgs, StatusArgs};
use crate::context::Context;
use crate::host::Host;
use crate::host::select::Intent;
use crate::installed::record::{self, InstallRecord};
use crate::layout::InstallRoot;
use crate::output::{Format, Printer};
use crate::redact::Redactor;
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

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

/// The install root when the configuration cannot be read.
const DEFAULT_ROOT: &str = r"C:\CalicoWindows";

/// The members of the zip, in the order written: name and contents.
#[derive(Default)]
struct Bundle {
    members: Vec<(String, Vec<u8>)>,
    /// What could not be collected, each with why.
    problems: Vec<String>,
}

impl Bundle {
    fn json(&mut self, name: &str, v: &impl serde::Serialize) {
        self.members.push((name.to_owned(), pretty(v)));
    }

    /// A section's value, or its error kept as a problem and written in its place.
    fn section(&mut self, name: &str, v: anyhow::Result<impl serde::Serialize>) {
        match v {
            Ok(v) => self.json(name, &v),
            Err(e) => {
                let error = format!("{e:#}");
                self.problems.push(format!("{name}: {error}"));
                self.json(name, &NotCollected { error });
            }
        }
    }
}

/// A member as indented JSON.
fn pretty(v: &impl serde::Serialize) -> Vec<u8> {
    let text =
        serde_json::to_string_pretty(v).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    text.into_bytes()
}

/// A section that could not be collected, in its place in the zip.
#[derive(serde::Serialize)]
struct NotCollected {
    error: String,
}

/// `diags`' document: the zip written, the files in it and what could not be collected.
#[derive(serde::Serialize)]
#[cfg_attr(test, derive(Default))]
pub(crate) struct Diags<'a> {
    pub path: String,
    pub files: &'a [&'a str],
    pub problems: &'a [String],
}

/// The zip's `diags.json`: what made it, the root, its files and what could not be collected.
#[derive(serde::Serialize)]
struct Index<'a> {
    tool: &'static str,
    install_root: &'a str,
    files: Vec<&'a str>,
    problems: &'a [String],
    redacted: &'static str,
}

/// A command as it ran alone with `-o json`: its exit code, its document (its stdout as text
/// when that is not JSON) and what it said on stderr.
#[derive(serde::Serialize)]
struct Ran {
    exit_code: i32,
    document: Value,
    stderr: String,
}

/// The zip's `versions.json`: what runs the node.
#[derive(serde::Serialize)]
struct Versions {
    calicoctl_win: Build,
    os_build: String,
    calico: Option<String>,
    calicoctl_win_that_installed: Option<String>,
    /// The Node's `nodeInfo`, or why it was not read.
    node_info: NodeInfo,
}

/// This calicoctl-win's build.
#[derive(serde::Serialize)]
struct Build {
    version: &'static str,
    commit: &'static str,
    build_date: &'static str,
}

/// What the node reports of the software running it, or why it was not read.
#[derive(serde::Serialize)]
#[serde(untagged)]
enum NodeInfo {
    Read(Box<k8s_openapi::api::core::v1::NodeSystemInfo>),
    Not(String),
}

pub fn run(args: &DiagsArgs, ctx: &mut Context) -> anyhow::Result<()> {
    let host = ctx.open_host(Intent::Read)?;
    let config = ctx.load_config().map(|l| l.config);
    let node = config.as_ref().ok().map(|c| c.node.name.to_string());
    let out = args
        .out_file
        .clone()
        .unwrap_or_else(|| default_name(node.as_deref()));
    let root = config.as_ref().map_or_else(
        |_| InstallRoot::new(DEFAULT_ROOT),
        crate::config::Config::root,
    );
    let mut b = Bundle::default();
    if let Err(e) = &config {
        b.problems.push(format!("configuration: {e:#}"));
    }
    let rec = record::read(host.as_ref(), &root);
    let rec = match rec {
        Ok(r) => r,
        Err(e) => {
            b.problems.push(format!("install record: {e}"));
            None
        }
    };
    let h = host.as_ref();

    commands(args, ctx, &mut b);
    host_sections(h, rec.as_ref(), &mut b);
    install_files(h, &root, &mut b);
    if let Some(rec) = &rec {
        logs(h, &rec.logs_dir, args.log_tail_bytes, &mut b);
    }
    let versions = versions(h, rec.as_ref(), ctx, node.as_deref(), args.offline);
    b.section("versions.json", versions);
    let index = Index {
        tool: "calicoctl-win diags",
        install_root: root.as_str(),
        files: b.members.iter().map(|(n, _)| n.as_str()).collect(),
        problems: &b.problems,
        redacted: "tokens, keys and passwords are replaced by <redacted>",
    };
    let index = pretty(&index);
    b.members.push(("diags.json".to_owned(), index));

    let redactor = record::redactor(h, rec.as_ref());
    write_zip(&out, &b, &redactor)?;
    let files: Vec<&str> = b.members.iter().map(|(n, _)| n.as_str()).collect();
    ctx.printer.text(&format!(
        "Wrote {} ({} files; tokens and keys redacted).",
        out.display(),
        files.len()
    ));
    // The problems go out beside the zip too: redacted as its members are.
    let problems: Vec<String> = b
        .problems
        .iter()
        .map(|p| String::from_utf8_lossy(&redactor.redact(p.as_bytes())).into_owned())
        .collect();
    for p in &problems {
        ctx.printer.warn(&format!("not collected: {p}"));
    }
    // A configuration that cannot be read is still an error of the input (exit 2), given once
    // the zip, which shows the node without it, is written.
    if let Err(e) = config {
        return Err(anyhow::Error::from(e).context(format!(
            "{} was written without the configuration, which cannot be read",
            out.display()
        )));
    }
    ctx.printer.json(&Diags {
        path: out.display().to_string(),
        files: &files,
        problems: &problems,
    });
    Ok(())
}

/// `calicoctl-win-diags-<node>-<UTC time>.zip` in the current directory.
fn default_name(node: Option<&str>) -> PathBuf {
    let node: String = node
        .unwrap_or("node")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    // 2026-11-23T04:05:06Z -> 20261123T040506Z
    let time: String = crate::duration::time_text(crate::duration::now())
        .chars()
        .filter(|c| !matches!(c, '-' | ':'))
        .collect();
    PathBuf::from(format!("calicoctl-win-diags-{node}-{time}.zip"))
}

/// A buffer a `Printer` writes into, read back once the command ran.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(|p| p.into_inner())).into_owned()
    }
}

/// Runs `command` as it runs alone with `-o json`: its document, its exit code and what it
/// said on stderr.
fn captured(ctx: &mut Context, command: impl FnOnce(&mut Context) -> anyhow::Result<()>) -> Ran {
    let (out, err) = (Captured::default(), Captured::default());
    let printer = Printer::new(
        Format::Json,
        Box::new(out.clone()),
        Box::new(err.clone()),
        false,
        0,
    );
    let mine = std::mem::replace(&mut ctx.printer, printer);
    let code = match command(ctx) {
        Ok(()) => 0,
        Err(e) => {
            let e = super::known_errors::failure(e);
            ctx.printer.error(&e);
            e.exit as i32
        }
    };
    ctx.printer = mine;
    let text = out.text();
    let document = serde_json::from_str::<Value>(&text).unwrap_or(Value::String(text));
    let stderr = err.text();
    Ran {
        exit_code: code,
        document,
        stderr,
    }
}

fn commands(args: &DiagsArgs, ctx: &mut Context, b: &mut Bundle) {
    let offline = args.offline;
    let show = captured(ctx, |c| super::config_show::run(&ShowArgs { offline }, c));
    b.json("config-show.json", &show);
    let status = captured(ctx, |c| {
        super::status::run(
            &StatusArgs {
                offline,
                verify: false,
                grace: crate::installed::endpoints::DEFAULT_GRACE,
            },
            c,
        )
    });
    b.json("status.json", &status);
    let preflight = PreflightArgs {
        skip: Vec::new(),
        allow_known_issue: Vec::new(),
        offline,
        fix: false,
    };
    let checks = captured(ctx, |c| super::preflight::run(&preflight, c));
    b.json("preflight.json", &checks);
}

/// What the host itself holds: the system, the services, HNS, the network, the firewall rule.
fn host_sections(h: &dyn Host, rec: Option<&InstallRecord>, b: &mut Bundle) {
    b.section("host/system.json", system(h));
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

/// The events a support engineer reads first, newest first: the System log's boots and
/// shutdowns (EventLog 6005 started, 6006 stopped, 6008 an unexpected shutdown; User32 1074 a
/// shutdown someone started; Kernel-Power 41 a restart without a clean shutdown), the Service
/// Control Manager's events of the Calico services, kube-proxy and HNS (7000 and 7009 failed
/// to start, 7023 and 7024 ended with an error, 7031 and 7034 ended unexpectedly, 7036 changed
/// state), the crashes and hangs of the Calico binaries (Application Error 1000, Windows Error
/// Reporting 1001, Application Hang 1002), and calicoctl-win's own events.
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

fn system(h: &dyn Host) -> anyhow::Result<Value> {
    Ok(serde_json::to_value(h.system_facts()?)?)
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
    let ipv4_addresses = h.ipv4_addresses()?;
    let routes = h.routes()?;
    Ok(Addressing {
        ipv4_addresses,
        routes,
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
fn install_files(h: &dyn Host, root: &InstallRoot, b: &mut Bundle) {
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
fn logs(h: &dyn Host, dir: &str, tail: u64, b: &mut Bundle) {
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
            Ok(Some(bytes)) => b.members.push((format!("logs/{name}"), bytes)),
            Ok(None) => b.problems.push(format!("{path}: it is gone")),
            Err(e) => b.problems.push(format!("{path}: {e:#}")),
        }
    }
}

/// The versions of what runs the node: the OS build, calicoctl-win, the Calico release in the
/// record, and kubelet and kube-proxy as the node reports them to the cluster.
fn versions(
    h: &dyn Host,
    rec: Option<&InstallRecord>,
    ctx: &mut Context,
    node: Option<&str>,
    offline: bool,
) -> anyhow::Result<Versions> {
    let facts = h.system_facts()?;
    let not = |why: &str| NodeInfo::Not(format!("not read: {why}"));
    let node_info = if offline {
        not("--offline")
    } else {
        let read = match (node, ctx.connect_cluster()) {
            (Some(node), Ok(Some(c))) => crate::cluster::node::info(&c, node)
                .map(|i| {
                    i.map_or_else(
                        || NodeInfo::Not(format!("node {node} not found")),
                        |i| NodeInfo::Read(Box::new(i)),
                    )
                })
                .map_err(anyhow::Error::from),
            (_, Ok(None)) => Ok(not("no admin kubeconfig")),
            (None, _) => Ok(not("the configuration names no node")),
            (_, Err(e)) => Err(e.into()),
        };
        read.unwrap_or_else(|e| not(&format!("{e:#}")))
    };
    let v = Versions {
        calicoctl_win: Build {
            version: env!("CARGO_PKG_VERSION"),
            commit: env!("CALICOCTL_WIN_COMMIT"),
            build_date: env!("CALICOCTL_WIN_BUILD_DATE"),
        },
        os_build: match facts.ubr {
            Some(ubr) => format!("{}.{ubr}", facts.build),
            None => facts.build.to_string(),
        },
        calico: rec.and_then(|r| r.calico_version.clone()),
        calicoctl_win_that_installed: rec.map(|r| r.tool_version.clone()),
        node_info,
    };
    Ok(v)
}

/// Writes the members, redacted, into a zip beside `out`, then renames it into place.
fn write_zip(out: &Path, b: &Bundle, redactor: &Redactor) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "diags.zip".into());
    let tmp = out.with_file_name(format!(".{name}.calicoctl-win.tmp"));
    let write = || -> anyhow::Result<()> {
        let file = std::fs::File::create(&tmp)?;
        let mut zip = zip::ZipWriter::new(file);
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        for (member, bytes) in &b.members {
            zip.start_file(member.as_str(), options)?;
            zip.write_all(&redactor.redact(bytes))?;
        }
        zip.finish()?.sync_all()?;
        fs_err::rename(&tmp, out)?;
        Ok(())
    };
    write()
        .inspect_err(|_| {
            let _ = fs_err::remove_file(&tmp);
        })
        .with_context(|| format!("cannot write {}", out.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::EventLog;
    use crate::host::sim::SimHost;

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
