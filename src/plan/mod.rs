//! Plans: the actions that take the host from what it is to what it should be, shown by
//! `--dry-run` and run by the engine (`apply`): install's, reconfigure's and uninstall's, what
//! install wants (desired) and how the node differs from its record (drift).

pub mod desired;
pub mod drift;
pub mod install;
pub mod metrics_rules;
pub mod migrate;
pub mod operator_readiness;
pub mod reconfigure;
pub mod repair;
pub mod uninstall;

#[cfg(all(test, windows))]
mod wine_tests;
