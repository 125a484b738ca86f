//! calicoctl-win: installs, runs and maintains Calico networking on Windows Kubernetes nodes.
//!
//! The binary (`main.rs`) parses the command line and runs a command; everything else lives
//! here, in rooms ranked from the bottom: docs/architecture.md maps them, and
//! `tests/structure.rs` fails an import that climbs.

// Outside tests no value is unwrapped: a failure is an error with its context.
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
