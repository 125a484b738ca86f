//! CalicoNode's init-done marker (`BootId` under Calico's key): the boot it last finished
//! initialising in, which CalicoFelix and CalicoConfd wait for and install's wait reads. Kept
//! here, with what install leaves and the services report, so that the executor (`apply`)
//! reads it without importing the service bodies (`supervise`).

use crate::host::{Host, HostResult, RegValue};
use crate::layout::{BOOT_ID_VALUE, CALICO_KEY};

/// Whether CalicoNode has finished initialising in the current boot; never while the boot is
/// unknown (an empty identity once matched an empty marker and hid a real reboot).
pub fn init_done(host: &dyn Host) -> HostResult<bool> {
    let Some(boot) = host.system_facts()?.boot_id else {
        return Ok(false);
    };
    Ok(stored_boot(host)?.as_deref() == Some(boot.as_str()))
}

/// The boot CalicoNode last initialised in; an empty value (written by an older version when
/// the boot was unknown) is none.
pub fn stored_boot(host: &dyn Host) -> HostResult<Option<String>> {
    Ok(match host.reg_get(CALICO_KEY, BOOT_ID_VALUE)? {
        Some(RegValue::Sz(s)) if !s.is_empty() => Some(s),
        _ => None,
    })
}
