//! Integration tests, the command line as users and scripts meet it: arguments, configs, bounded input, output files, golden renders, lint and the docs' claims.
//! One test binary per area: each compiles `tests/support/` once.

#[path = "../support/mod.rs"]
mod support;

mod bad_configs;
mod bounded_input;
mod calico_selector;
mod cli;
mod docs;
mod golden;
mod import_ps1;
mod lint;
mod out_file;
