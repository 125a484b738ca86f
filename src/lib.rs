//! calicoctl-win: installs, runs and maintains Calico networking on Windows Kubernetes nodes.
//!
//! The binary (`main.rs`) parses the command line and runs a command; everything else lives
//! here, in layers: `config` and `render` (pure), `host` (the Windows node, real or simulated),
//! `checks` (preflight verdicts), `commands` (one recipe per command).

// Outside tests no value is unwrapped: a failure is an error with its context. The few
// values that cannot fail (built-in literals) say why beside the panic that would mark a bug.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod checks;
pub mod cli;
pub mod cluster;
pub mod commands;
pub mod config;
pub mod context;
pub mod duration;
pub mod error;
pub mod files;
pub mod host;
pub mod installed;
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
