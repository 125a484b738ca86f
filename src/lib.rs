//! calicoctl-win: installs, runs and maintains Calico networking on Windows Kubernetes nodes.
//!
//! The binary (`main.rs`) parses the command line and runs a command; everything else lives
//! here, in rooms ranked from the bottom (docs/architecture.md; `tests/structure.rs` fails an
//! import that climbs):
//!
//! - leaves: `error` (exit codes, the `Diagnose` trait), `layout` (every name on the node),
//!   `selector` (Calico's selector language), `redact` (secrets out of text), `duration`,
//!   `files` (capped reads, hashing, output files), `net` (addresses, the proxy);
//! - `release`: the Calico for Windows zip: download, extraction, versions;
//! - `host`: every touch of the Windows node behind the `Host` trait, real (`host::windows`)
//!   or simulated (`host::sim`);
//! - `config`: the typed configuration, its layers and validation; `output`: the printer;
//! - `render`: pure functions from config and facts to file contents;
//! - `cluster`: the Kubernetes API, Calico's facts, credentials, the drain;
//! - `fleet`: the fleet's manifests, roles, status, turns and `fleet diags`;
//! - `installed`: what install leaves on the host (the record, file stats, routes, failures);
//! - `checks`: preflight's verdicts; `context`: what a command gets;
//! - `supervise`: the Windows services' bodies;
//! - `apply`: the engine that runs any plan with a journal, undoes it and measures what a
//!   rollback left;
//! - `plan`: desired state and the plans of install, reconfigure and uninstall; `policy`:
//!   `lint policies` as Felix renders;
//! - `cli` (clap definitions) and `commands` (one recipe per command) on top.

// Outside tests no value is unwrapped: a failure is an error with its context. The few
// values that cannot fail (built-in literals) say why beside the panic that would mark a bug.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod apply;
pub mod checks;
pub mod cli;
pub mod cluster;
pub mod commands;
pub mod config;
pub mod context;
pub mod duration;
pub mod error;
pub mod files;
pub mod fleet;
pub mod health;
// The host implementations use std::fs and name the host's own path in each error
// (`HostError::io`), which fs-err's local paths would not be.
#[allow(clippy::disallowed_methods)]
pub mod host;
pub mod http1;
pub mod installed;
pub mod k8s_name;
pub mod layout;
pub mod net;
pub mod output;
pub mod plan;
pub mod policy;
pub mod redact;
pub mod release;
pub mod render;
pub mod selector;
pub mod supervise;
pub mod verify;
