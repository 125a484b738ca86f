//! The config file (calico-windows.yaml) through the whole loader: any bytes give a config or
//! a list of problems, never a panic or a hang.
#![no_main]

use calicoctl_win::config::{self, Inputs};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let inputs = Inputs {
        file: Some(("calico-windows.yaml".into(), text.to_owned())),
        host: [("node.name", config::Raw::Scalar("fuzz-node".into()))].into(),
        ..Inputs::default()
    };
    match config::load(&inputs) {
        Ok(_) => {}
        Err(config::ConfigError::Invalid { problems, .. }) => assert!(!problems.is_empty()),
        Err(e) => panic!("a config text gave neither a config nor problems: {e}"),
    }
});
