//! Pure rendering: config + host facts -> the contents of every file the install writes.
//! No I/O here: the caller reads the template and writes the results.

pub mod cni;
pub mod env;
mod error;
pub mod facts;
pub mod hns;
pub mod kubeconfig;
pub mod template;

use crate::config::Config;
use crate::config::types::Backend;
use crate::layout::STATIC_RULES_FILE;
pub use error::RenderError;
pub use facts::{HostFacts, OsBuild};

/// What Calico's quickstart writes for policy-only installs on AKS (`SetAKSCalicoStaticRules`
/// in install-calico-windows.ps1, v3.31.0): pods may not reach the Azure wireserver
/// 168.63.129.16 on TCP 80.
pub const AKS_STATIC_RULES: &str = r#"{
    "Provider": "AKS",
    "Rules": [
        {
            "Name": "EndpointPolicy",
            "Rule": {
                "Action": "Block",
                "Direction": "Out",
                "Id": "block-wireserver",
                "Priority": 200,
                "Protocol": 6,
                "RemoteAddresses": "168.63.129.16/32",
                "RemotePorts": "80",
                "RuleType": "Switch",
                "Type": "ACL"
            }
        }
    ],
    "version": "0.1.0"
}
"#;

/// One rendered file: its name within the output and its contents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RenderedFile {
    pub name: String,
    pub contents: String,
}

/// The CNI template to use and the name to show for it.
pub struct CniTemplate<'a> {
    pub name: &'a str,
    pub text: &'a str,
}

/// Renders every file, or fails without producing any.
pub fn render_all(
    c: &Config,
    facts: &HostFacts,
    template: &CniTemplate<'_>,
) -> Result<Vec<RenderedFile>, RenderError> {
    let mut files = Vec::new();
    // With the none backend a third-party CNI owns pod networking: no CNI config, no vSwitch.
    if c.backend != Backend::None {
        files.push(RenderedFile {
            name: c.cni.conf_filename.to_string(),
            contents: cni::render(c, facts, template.text, template.name)?,
        });
    }
    for role in env::roles_for(c) {
        files.push(RenderedFile {
            name: role.env_file().to_owned(),
            contents: env::render(c, role, facts.api_group_pin()),
        });
    }
    if let Some(network) = hns::external_network(c, facts.uplink.as_deref()) {
        files.push(RenderedFile {
            name: crate::layout::EXTERNAL_FILE.into(),
            contents: format!("{network:#}\n"),
        });
    }
    if c.backend == Backend::None && facts.aks {
        files.push(RenderedFile {
            name: STATIC_RULES_FILE.into(),
            contents: AKS_STATIC_RULES.into(),
        });
    }
    if let Some(cni) = files
        .first()
        .filter(|f| files[1..].iter().any(|o| o.name == f.name))
    {
        return Err(RenderError::NameClash(cni.name.clone()));
    }
    Ok(files)
}
