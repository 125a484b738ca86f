//! Calico's selector language (`lint policies`, the IP pools' node selectors): any text parses
//! or is refused without a panic, and a selector's canonical form parses back to itself, as
//! Calico's parser tests require of its `String()` (libcalico-go v3.31.7 parser_test.go).
#![no_main]

use calicoctl_win::selector::parse;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(sel) = parse(text) {
        let canonical = sel.to_string();
        let again = parse(&canonical).unwrap_or_else(|e| panic!("{canonical:?}: {e}"));
        assert_eq!(again.to_string(), canonical, "{text:?}");
    }
});
