//! Integration tests, the Windows ring: the whole lifecycle under Wine (a Linux test driving the Windows programs) and the lifecycle test the real-Windows workflow runs, as a Windows program.
//! One test binary per area: each compiles `tests/support/` once.

#[path = "../support/mod.rs"]
mod support;

mod windows_lifecycle;
mod wine_lifecycle;
