//! Calico's legacy install, driven by its PowerShell scripts under NSSM (or PowerShell
//! directly): its services found by the names the scripts register, which install migrates
//! and uninstall refuses to touch.

use crate::host::{Host, InstalledService};

/// Whether a Calico service is run by Calico's scripts (NSSM, or PowerShell directly) rather
/// than by calicoctl-win.
pub fn is_legacy_service(s: &InstalledService) -> bool {
    matches!(
        s.program_file_name().as_str(),
        "nssm.exe" | "powershell.exe" | "pwsh.exe"
    )
}

/// Services a legacy install registered, by the names it used.
const LEGACY_SERVICES: [&str; 4] = ["CalicoNode", "CalicoFelix", "CalicoConfd", "CalicoUpgrade"];

/// The services of a legacy NSSM-based install (or one driven by PowerShell directly).
pub fn legacy_services(host: &dyn Host) -> anyhow::Result<Vec<InstalledService>> {
    let mut out = Vec::new();
    for name in LEGACY_SERVICES {
        if let Some(s) = host.service_query(name)?
            && is_legacy_service(&s)
        {
            out.push(s);
        }
    }
    Ok(out)
}

pub fn legacy_error(legacy: &[InstalledService]) -> crate::error::UsageError {
    crate::error::UsageError::new(
        format!(
            "this node has Calico's legacy NSSM-based install (services {})",
            legacy
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        "pass --migrate-legacy to stop and delete its services before installing (its files in the install root stay), or remove it with its own uninstall-calico.ps1",
    )
    .of_kind(crate::error::Kind::LegacyInstall)
}
