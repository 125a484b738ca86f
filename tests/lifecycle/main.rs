//! Integration tests, install, reconfigure, uninstall, the services and the token on the simulated node: what a node goes through, with the fake API server on loopback.
//! One test binary per area: each compiles `tests/support/` once.

#[path = "../support/mod.rs"]
mod support;

mod api_group;
mod documents;
mod download_checks;
mod drain_namespace;
mod endpoint_kinds;
mod grant_foreign;
mod grant_journal;
mod grant_nonce;
mod grant_replan;
mod host_defaults;
mod hostile;
mod install;
mod install_etcd;
mod install_id;
mod logs;
mod metrics;
mod metrics_diags;
mod metrics_rule_names;
mod migrate;
mod migrate_operator_namespace;
mod migrate_stranded;
mod migrate_walk;
mod network_identity;
mod node_health;
mod packaging;
mod reconfigure;
mod releases;
mod repair_ends;
mod service_run;
mod token_renewal;
mod token_trouble;
mod ws2025;
