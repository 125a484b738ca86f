//! docs/json.md lists each command's JSON document with its keys in order: each document type,
//! serialized with every optional key filled, must print exactly the keys listed (`schema`,
//! which every document has first, aside), and every document listed must be one of these.

use super::change::{Changing, ChecksBlocked};
use super::config_show::{ConfigShow, KubeconfigUsed};
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

/// Each document of docs/json.md: its heading and its `Keys:` line.
fn documented() -> Vec<(String, Vec<String>)> {
    let text = include_str!("../../docs/json.md");
    let mut out = Vec::new();
    let mut heading = None;
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("### ") {
            heading = Some(h.to_owned());
        } else if let Some(list) = line.strip_prefix("Keys: ") {
            let h = heading.take().expect("a Keys: line under a ### heading");
            let keys = list.split(", ").map(|k| k.trim_matches('`').to_owned());
            out.push((h, keys.collect()));
        }
    }
    out
}

fn changing<D>(own: D) -> Changing<D> {
    Changing {
        dry_run: false,
        own,
        actions: Vec::new(),
        changed: false,
        warnings: Some(Vec::new()),
    }
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
        ..Default::default()
    };
    let reconfigure = super::reconfigure::Reconfigure {
        install_root: "",
        change: "none",
        network_changes: &[],
        pods: &null,
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
    let config_show = ConfigShow {
        config_file: None,
        settings: serde_json::Map::new(),
        ip_autodetection: None,
        uplink: &null,
        cluster_kubeconfig: KubeconfigUsed::default(),
        cluster: &null,
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
            })),
        ),
        ("`reconfigure`", keys(&changing(reconfigure))),
        ("`repair`", keys(&changing(repair))),
        ("`checks-blocked`", keys(&ChecksBlocked::default())),
        ("`preflight`", keys(&preflight)),
        ("`config show`", keys(&config_show)),
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
                healthy: true,
                problems: &[],
            }),
        ),
        ("`fleet plan`", keys(&super::fleet::FleetPlan::default())),
        (
            "`fleet diags`",
            keys(&super::fleet_diags::FleetDiags {
                out: String::new(),
                index: &crate::cluster::diags_gather::Index {
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
