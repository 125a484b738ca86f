//! Integration tests, preflight and the cluster side: checks, credentials, RBAC, fleet rollouts and real API server shapes.
//! One test binary per area: each compiles `tests/support/` once.

#[path = "../support/mod.rs"]
mod support;

mod admission_policies;
mod calico_v3;
mod cluster_preflight;
mod fetch_etcd;
mod fetch_kubeconfig;
mod fleet;
mod fleet_diags;
mod fleet_diags_cli;
mod fleet_diags_node;
mod fleet_diags_redacted;
mod fleet_migrate;
mod fleet_turn;
mod fleet_verify;
mod kubeconfig_files;
mod kubectl_fake_api;
mod narrow_roles;
mod preflight;
mod real_clusters;
mod rights;
mod verify;
mod verify_bounds;
mod verify_builds;
mod verify_events;
mod verify_gates;
mod verify_guards;
mod verify_keeper;
mod verify_lease;
mod verify_peers;
mod verify_rights;
mod verify_runs;
mod verify_sweep;
mod verify_wedged;
