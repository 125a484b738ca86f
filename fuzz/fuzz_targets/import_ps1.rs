//! The config.ps1 importer. Property: what it writes loads as a config file: every problem
//! the loader finds is about the value of a setting the import set (kept so that it can be
//! fixed) or a setting those need that config.ps1 did not give (etcd endpoints for the etcdv3
//! datastore), never YAML the importer wrote badly or a key it made up.
#![no_main]

use calicoctl_win::config::{self, Inputs, import_ps1};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let import = import_ps1::import(&import_ps1::decode(data));
    let yaml = import_ps1::to_yaml(&import, "config.ps1");
    let inputs = Inputs {
        file: Some(("calico-windows.yaml".into(), yaml.clone())),
        host: [("node.name", config::Raw::Scalar("fuzz-node".into()))].into(),
        ..Inputs::default()
    };
    let problems = match config::load(&inputs) {
        Ok(_) => return,
        Err(config::ConfigError::Invalid { problems, .. }) => problems,
        Err(e) => panic!("the imported file did not load: {e}\n{yaml}"),
    };
    for p in problems {
        let key = p.key.as_deref().unwrap_or_else(|| panic!("{p}\n{yaml}"));
        assert!(!p.message.starts_with("unknown key"), "{p}\n{yaml}");
        let missing = p.value.is_none();
        assert!(
            missing
                || import.imported.iter().any(|i| i.key == key)
                || key_of_a_whole_section(key, &import),
            "a problem with {key}, which the import did not set: {p}\n{yaml}"
        );
    }
});

/// Problems about a list or section the import set in parts (`extra_env.felix`).
fn key_of_a_whole_section(key: &str, import: &import_ps1::Import) -> bool {
    import
        .imported
        .iter()
        .any(|i| i.key.starts_with(&format!("{key}.")) || key.starts_with(&format!("{}.", i.key)))
}
