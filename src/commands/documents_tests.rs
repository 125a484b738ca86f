//! docs/json.md lists each command's JSON document with its keys in order (`Keys of `field`:`
//! for a field's objects): each type, every optional key filled, prints exactly those keys
//! (`schema` aside), and every document listed is one of these.

use super::change::{Changing, ChecksBlocked};
use super::config_show::{ClusterShown, ConfigShow, KubeconfigUsed, Setting, Settings, Uplink};
use super::fetched::{
    EtcdCerts, InstallerKubeconfig, Kubeconfig, ReleaseFetched, ReleasePlan, TokenFrom,
};
use super::install::{FromOperator, Install};
use super::preflight::{HostRead, Preflight};
use super::render::Rendered;
use serde::Serialize;
use serde_json::Value;
use std::path::Path;

/// The keys a document prints, in order, without `schema`.
fn keys(doc: &impl Serialize) -> Vec<String> {
    match serde_json::to_value(doc).expect("a document serializes") {
        Value::Object(map) => map.keys().filter(|k| *k != "schema").cloned().collect(),
        other => panic!("a document is an object, not {other}"),
    }
}

/// Each document of docs/json.md: its heading and its `Keys:` line; and each field's objects
/// (`Keys of `field`:`), as the heading and the field.
fn documented() -> Vec<(String, Vec<String>)> {
    let text = include_str!("../../docs/json.md");
    let mut out = Vec::new();
    let (mut heading, mut last) = (None, String::new());
    let list = |l: &str| {
        l.split(", ")
            .map(|k| k.trim_matches('`').to_owned())
            .collect()
    };
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("### ") {
            heading = Some(h.to_owned());
        } else if let Some(keys) = line.strip_prefix("Keys: ") {
            last = heading.take().expect("a Keys: line under a ### heading");
            out.push((last.clone(), list(keys)));
        } else if let Some(rest) = line.strip_prefix("Keys of ") {
            let (field, keys) = rest.split_once(": ").expect("Keys of `field`: keys");
            assert!(
                !last.is_empty(),
                "a Keys of line under a document's Keys: line"
            );
            out.push((format!("{last} {field}"), list(keys)));
        }
    }
    out
}

/// A changing command's document with every key (`warnings` too).
fn changing<D>(own: D) -> Changing<D> {
    Changing::plan(false, own, &[]).ran(Vec::new())
}

fn install(from_operator: Option<FromOperator>, uplink: &crate::host::uplink::Choice) -> Value {
    let own = Install {
        calico_version: None,
        install_root: "",
        checks: &[],
        blocking: &[],
        prepare: &[],
        uplink,
        from_operator,
    };
    serde_json::to_value(changing(own)).expect("serializes")
}

/// Every document type, by its heading in docs/json.md, with its optional keys filled.
fn typed() -> Vec<(&'static str, Vec<String>)> {
    let uplink = crate::host::uplink::Choice {
        adapter: None,
        why: String::new(),
    };
    let null = Value::Null;
    let error = crate::output::ErrorDocument {
        error: crate::output::ErrorBody {
            kind: crate::error::Kind::Failed,
            message: String::new(),
            causes: Vec::new(),
            problems: &[],
            hint: None,
        },
        exit_code: 1,
    };
    let migrate = super::migrate::Migrate {
        boot_marker: Some(""),
        already: true,
        ..Default::default()
    };
    let repair = super::repair::Repair {
        remaining: Some(&[]),
        findings: Some(&[]),
        interrupted: true,
        ..Default::default()
    };
    let pods = super::reconfigure::Pods::default();
    let reconfigure = super::reconfigure::Reconfigure {
        install_root: "",
        change: "none",
        network_changes: &[],
        pods: Some(&pods),
    };
    let preflight = Preflight {
        checks: &[],
        host: HostRead {
            kind: crate::host::HostKind::Windows,
            system: None,
            container_runtime: None,
            hns_networks: None,
        },
        cluster: None,
        fixes: None,
        blocking: &[],
    };
    let cluster = ClusterShown {
        read: true,
        server: Some(String::new()),
        reason: Some(String::new()),
    };
    let chosen = Uplink::Chosen(uplink.clone());
    let config_show = ConfigShow {
        config_file: None,
        settings: Settings::default(),
        ip_autodetection: None,
        uplink: &chosen,
        cluster_kubeconfig: KubeconfigUsed::default(),
        cluster: &cluster,
    };
    let shown = crate::config::Shown {
        value: null.clone(),
        source: crate::config::Source::Default,
    };
    let setting = Setting {
        shown: &shown,
        default: String::new(),
        description: "",
    };
    let no_uplink = Uplink::NoneChosen {
        adapter: None,
        error: String::new(),
        remedy: Some(String::new()),
    };
    let lint = crate::policy::Report {
        schema: 2,
        calico_version: String::new(),
        windows_endpoints: 0,
        policies: Vec::new(),
        endpoints: Vec::new(),
        findings: Vec::new(),
    };
    let findings = std::collections::BTreeMap::new();
    let from = || Some(TokenFrom::default());
    vec![
        ("`error`", keys(&error)),
        (
            "`version`",
            keys(&crate::output::VersionDocument::default()),
        ),
        ("`install`", keys(&install(None, &uplink))),
        (
            "`migrate from-operator`",
            keys(&install(Some(FromOperator::default()), &uplink)),
        ),
        ("`migrate to-operator`", keys(&changing(migrate))),
        (
            "`uninstall`",
            keys(&changing(super::uninstall::Uninstall {
                install_root: "",
                purge: Some(false),
                cluster_left: Vec::new(),
            })),
        ),
        (
            "`uninstall` `cluster_left`",
            keys(&super::uninstall::ClusterLeft::default()),
        ),
        ("`reconfigure`", keys(&changing(reconfigure))),
        ("`reconfigure` `pods`", keys(&pods)),
        ("`repair`", keys(&changing(repair))),
        ("`checks-blocked`", keys(&ChecksBlocked::default())),
        ("`preflight`", keys(&preflight)),
        ("`config show`", keys(&config_show)),
        ("`config show` `settings`", keys(&setting)),
        ("`config show` `uplink`", keys(&chosen)),
        ("`config show` `uplink`, none chosen", keys(&no_uplink)),
        ("`config show` `cluster`", keys(&cluster)),
        (
            "`config import-ps1`",
            keys(&super::import_ps1::Imported::default()),
        ),
        (
            "`render`",
            keys(&Rendered {
                files: &[],
                uplink: &uplink,
            }),
        ),
        ("`diags`", keys(&super::diags::Diags::default())),
        ("`lint policies`", keys(&lint)),
        (
            "`fleet status`",
            keys(&super::fleet_status::FleetStatus {
                nodes: &[],
                findings: &findings,
                config_hash: None,
                verify_every: None,
                turns: &[],
                healthy: true,
                problems: &[],
            }),
        ),
        ("`fleet plan`", keys(&super::fleet::FleetPlan::default())),
        (
            "`fleet diags`",
            keys(&super::fleet_diags::FleetDiags {
                out: String::new(),
                index: &crate::fleet::diags::Index {
                    nodes: Vec::new(),
                    gathered: 0,
                    failed: 0,
                    run_timed_out: false,
                },
            }),
        ),
        (
            "`fetch kubeconfig`",
            keys(&Kubeconfig {
                refreshed: Some(true),
                from: from(),
                expires: Some(None),
                ..Default::default()
            }),
        ),
        (
            "`fetch kubeconfig --dry-run`",
            keys(&Kubeconfig {
                dry_run: Some(true),
                from: from(),
                ..Default::default()
            }),
        ),
        (
            "`fetch kubeconfig`, still valid",
            keys(&Kubeconfig {
                refreshed: Some(false),
                expires: Some(None),
                ..Default::default()
            }),
        ),
        (
            "`fetch installer-kubeconfig`",
            keys(&InstallerKubeconfig::default()),
        ),
        ("`fetch etcd-certs`", keys(&EtcdCerts::default())),
        (
            "`fetch release`",
            keys(&ReleaseFetched {
                zip: "",
                sha256: "",
                downloaded: false,
                version: None,
                binary: &crate::release::Binary::Calico,
                extracted: Path::new(""),
            }),
        ),
        (
            "`fetch release --dry-run`",
            keys(&ReleasePlan {
                dry_run: true,
                source: String::new(),
                output_dir: Path::new(""),
            }),
        ),
        ("`completions`", keys(&super::Completions::default())),
        (
            "`service keep-token`",
            keys(&super::keep_token::KeepToken {
                replaced: true,
                said: Some(""),
            }),
        ),
        ("`--detach`", keys(&super::detach::Detached::default())),
        (
            "`--detach`'s result",
            keys(&crate::apply::detached::Recorded {
                error: Some(""),
                ..Default::default()
            }),
        ),
        (
            "`verify`",
            keys(&super::verify::Verified {
                schema: crate::output::VERIFY_SCHEMA,
                passed: true,
                nodes: Vec::new(),
            }),
        ),
    ]
}

#[test]
fn every_document_prints_the_keys_docs_json_md_lists() {
    let docs = documented();
    let typed = typed();
    for (name, keys) in &typed {
        let listed = docs.iter().find(|(h, _)| h == name).map(|(_, k)| k);
        assert_eq!(
            listed,
            Some(keys),
            "docs/json.md's {name}: the keys listed differ from the type's"
        );
    }
    let unknown: Vec<&String> = docs
        .iter()
        .map(|(h, _)| h)
        .filter(|h| !typed.iter().any(|(n, _)| n == h))
        .collect();
    assert!(
        unknown.is_empty(),
        "docs/json.md lists documents no type prints: {unknown:?}"
    );
}

/// `--verify` puts verify's report last in install's and reconfigure's documents, after the
/// command's own keys (docs/json.md, the changing commands).
#[test]
fn verify_puts_its_report_last() {
    let report = crate::verify::run::Report::default();
    let own = super::uninstall::Uninstall {
        install_root: "",
        purge: None,
        cluster_left: Vec::new(),
    };
    let doc = changing(own);
    let mut want = keys(&doc);
    want.push("verify".into());
    let verified = super::common::WithVerify {
        schema: crate::output::VERIFY_SCHEMA,
        doc,
        verify: report,
    };
    assert_eq!(keys(&verified), want);
}
