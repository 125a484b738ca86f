//! HNS documents as HCN returns them, and network specs as HCN is given them: any JSON reads
//! as a network, an endpoint or nothing, and a spec is accepted or refused, never a panic.
#![no_main]

use calicoctl_win::host::hns;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(doc) = serde_json::from_str::<serde_json::Value>(text) {
        let _ = hns::parse_network(&doc);
        let _ = hns::parse_endpoint(&doc);
        let _ = hns::validate_spec(&doc);
    }
    let _ = hns::checked_spec(text);
});
