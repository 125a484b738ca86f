//! The services' environment files: any text parses, and what it gives renders back to the
//! same values (names and values survive a write and a read).
#![no_main]

use calicoctl_win::supervise::parse_env;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let env = parse_env(text);
    let again: String = env.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    assert_eq!(parse_env(&again), env, "{text:?}");
});
