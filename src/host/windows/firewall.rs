//! Windows Firewall rules through INetFwPolicy2; a name is the one the firewall shows.

use super::ffi::api;
use crate::host::{Direction, FirewallModifyState, FirewallRule, HostError, HostResult, Protocol};
use windows::Win32::Foundation::{VARIANT_FALSE, VARIANT_TRUE};
use windows::Win32::NetworkManagement::WindowsFirewall::{
    INetFwPolicy2, INetFwRule, NET_FW_ACTION_ALLOW, NET_FW_ACTION_BLOCK,
    NET_FW_MODIFY_STATE_GP_OVERRIDE, NET_FW_MODIFY_STATE_INBOUND_BLOCKED, NET_FW_RULE_DIR_IN,
    NET_FW_RULE_DIR_OUT, NetFwPolicy2, NetFwRule,
};
use windows::Win32::System::Com::{
    CLSCTX_INPROC_SERVER, COINIT_MULTITHREADED, CoCreateInstance, CoInitializeEx, CoUninitialize,
};
use windows::core::BSTR;

/// The firewall policy object and this thread's COM initialisation, undone on drop: each
/// successful CoInitializeEx balanced by CoUninitialize; RPC_E_CHANGED_MODE counts none.
/// The policy is released first (fields drop in order).
struct Policy {
    policy: INetFwPolicy2,
    _com: ComInit,
}

pub(super) struct ComInit(bool);

/// This thread's COM initialisation (multithreaded), balanced by the value's drop.
pub(super) fn com_init() -> ComInit {
    // SAFETY: COM initialisation for this thread, balanced by ComInit's drop.
    let hr = unsafe { CoInitializeEx(None, COINIT_MULTITHREADED) };
    ComInit(hr.is_ok())
}

impl Drop for ComInit {
    fn drop(&mut self) {
        if self.0 {
            // SAFETY: balances the successful CoInitializeEx of this thread in `policy`.
            unsafe { CoUninitialize() };
        }
    }
}

fn policy() -> HostResult<Policy> {
    let com = com_init();
    // SAFETY: creating the documented firewall policy object.
    let policy = unsafe { CoCreateInstance(&NetFwPolicy2, None, CLSCTX_INPROC_SERVER) }
        .map_err(api("open the Windows Firewall policy"))?;
    Ok(Policy { policy, _com: com })
}

/// Every rule of this name (any case), through `INetFwRules::get__NewEnum`: `Item` gives one
/// rule of a name, and Windows keeps several side by side.
pub fn rules(name: &str) -> HostResult<Vec<FirewallRule>> {
    use windows::Win32::System::Com::IDispatch;
    use windows::Win32::System::Ole::IEnumVARIANT;
    use windows::Win32::System::Variant::{VARIANT, VT_DISPATCH};
    use windows::core::Interface;
    let fw = policy()?;
    // SAFETY: COM calls on interfaces obtained here; each VARIANT the enumerator fills is
    // read while alive (its IDispatch cloned, so AddRef'd), cleared by its drop.
    let read_all = || unsafe {
        let items: IEnumVARIANT = fw.policy.Rules()?._NewEnum()?.cast()?;
        let mut out = Vec::new();
        loop {
            let mut v = [VARIANT::default()];
            let mut fetched = 0u32;
            items.Next(&mut v, &mut fetched).ok()?;
            if fetched == 0 {
                return Ok(out);
            }
            let inner = &v[0].Anonymous.Anonymous;
            let dispatch: Option<IDispatch> = if inner.vt == VT_DISPATCH {
                (*inner.Anonymous.pdispVal).clone()
            } else {
                None
            };
            let Some(rule) = dispatch.and_then(|d| d.cast::<INetFwRule>().ok()) else {
                continue;
            };
            if rule.Name()?.to_string().eq_ignore_ascii_case(name) {
                out.push(read(&rule)?);
            }
        }
    };
    read_all().map_err(api(format!("read firewall rule {name}")))
}

/// A rule as it says itself: every property calicoctl-win sets and every unset one that
/// narrows it (`firewall_unset::read`). IcmpTypesAndCodes (ICMP only) is not read.
///
/// # Safety
/// `rule` is a live rule object of this thread's COM.
unsafe fn read(rule: &INetFwRule) -> windows::core::Result<FirewallRule> {
    // SAFETY: property reads on the live rule object.
    unsafe {
        let protocol = Protocol::from_number(rule.Protocol()?);
        let direction = if rule.Direction()? == NET_FW_RULE_DIR_OUT {
            Direction::Out
        } else {
            Direction::In
        };
        let program = rule.ApplicationName()?.to_string();
        let ports = rule.LocalPorts()?.to_string();
        Ok(FirewallRule {
            name: rule.Name()?.to_string(),
            description: rule.Description()?.to_string(),
            protocol,
            direction,
            program: (!program.is_empty()).then_some(program),
            local_port: ports.trim().parse().unwrap_or(0),
            allow: rule.Action()? == NET_FW_ACTION_ALLOW,
            enabled: rule.Enabled()? != VARIANT_FALSE,
            profiles: rule.Profiles()? as u32,
            remote_addresses: FirewallRule::remote_addresses_from(
                &rule.RemoteAddresses()?.to_string(),
            ),
            unset: super::firewall_unset::read(rule)?,
        })
    }
}

pub fn add(r: &FirewallRule) -> HostResult<()> {
    if !rules(&r.name)?.is_empty() {
        return Err(HostError::Exists {
            what: format!("firewall rule {}", r.name),
        });
    }
    add_beside(r)
}

/// `INetFwRules::Add` itself, beside any rule of its name (tests: an administrator's).
pub(crate) fn add_beside(r: &FirewallRule) -> HostResult<()> {
    let op = || format!("add firewall rule {}", r.name);
    // SAFETY: COM calls on freshly created objects; BSTRs are owned by this frame.
    unsafe {
        // COM first: the rule object is made after it and dropped before it.
        let fw = policy()?;
        let rule: INetFwRule =
            CoCreateInstance(&NetFwRule, None, CLSCTX_INPROC_SERVER).map_err(api(op()))?;
        if let Some(why) = super::firewall_unset::cannot_set(&rule, &r.unset).map_err(api(op()))? {
            return Err(HostError::Api {
                op: op(),
                code: windows::Win32::Foundation::E_NOINTERFACE.0 as u32,
                message: why,
            });
        }
        let set = || -> windows::core::Result<()> {
            rule.SetName(&BSTR::from(r.name.as_str()))?;
            rule.SetDescription(&BSTR::from(r.description.as_str()))?;
            rule.SetProtocol(r.protocol.number())?;
            if matches!(r.protocol, Protocol::Tcp | Protocol::Udp) {
                // Only TCP or UDP rules have ports, set after the protocol (its page).
                rule.SetLocalPorts(&BSTR::from(r.local_port.to_string()))?;
            }
            rule.SetDirection(match r.direction {
                Direction::In => NET_FW_RULE_DIR_IN,
                Direction::Out => NET_FW_RULE_DIR_OUT,
            })?;
            if let Some(program) = &r.program {
                // The rule then lets in only this program's traffic.
                rule.SetApplicationName(&BSTR::from(program.as_str()))?;
            }
            rule.SetAction(if r.allow {
                NET_FW_ACTION_ALLOW
            } else {
                NET_FW_ACTION_BLOCK
            })?;
            rule.SetProfiles(r.profiles as i32)?;
            rule.SetRemoteAddresses(&BSTR::from(r.remote_addresses_text()))?;
            super::firewall_unset::set(&rule, &r.unset)?;
            rule.SetEnabled(if r.enabled {
                VARIANT_TRUE
            } else {
                VARIANT_FALSE
            })?;
            fw.policy.Rules()?.Add(&rule)
        };
        set().map_err(api(op()))
    }
}

/// Removes the one rule of this name (any case), given as the firewall holds it; refused while
/// several have it. A rule still there after is an error.
pub fn remove(name: &str) -> HostResult<bool> {
    let held = match rules(name)?.as_slice() {
        [] => return Ok(false),
        [one] => one.name.clone(),
        more => return Err(crate::host::firewall::several(name, more.len())),
    };
    remove_named(&held)?;
    if !rules(name)?.is_empty() {
        return Err(HostError::Refused {
            what: format!("remove firewall rule {held}"),
            reason: "INetFwRules::Remove succeeded but the rule is still there".into(),
        });
    }
    Ok(true)
}

/// `INetFwRules::Remove` of `name`, once.
fn remove_named(name: &str) -> HostResult<()> {
    let fw = policy()?;
    // SAFETY: COM calls on the policy's rule collection.
    unsafe {
        fw.policy
            .Rules()
            .and_then(|all| all.Remove(&BSTR::from(name)))
    }
    .map_err(api(format!("remove firewall rule {name}")))
}

/// Whether a local rule takes effect in the profiles in effect now
/// (`INetFwPolicy2::LocalPolicyModifyState`: "Determines whether adding or modifying firewall
/// rules ... will take effect in the current profile", Microsoft's reference).
pub fn modify_state() -> HostResult<FirewallModifyState> {
    // SAFETY: a COM call on the policy object, which lives for this frame.
    let state = unsafe {
        let fw = policy()?;
        fw.policy
            .LocalPolicyModifyState()
            .map_err(api("read whether local firewall rules take effect"))?
    };
    Ok(match state {
        NET_FW_MODIFY_STATE_GP_OVERRIDE => FirewallModifyState::GroupPolicyOverride,
        NET_FW_MODIFY_STATE_INBOUND_BLOCKED => FirewallModifyState::InboundBlocked,
        _ => FirewallModifyState::Ok,
    })
}

/// Tests: the properties calicoctl-win does not set, as a rule object made by
/// `CoCreateInstance(NetFwRule)` and given only a name and TCP holds them, not added to the
/// firewall (nothing on the host changes).
#[cfg(test)]
pub(crate) fn of_a_fresh_rule() -> HostResult<crate::host::Unset> {
    let _com = com_init();
    // SAFETY: a fresh rule object of this thread's COM, dropped before `_com`.
    let read = || unsafe {
        let rule: INetFwRule = CoCreateInstance(&NetFwRule, None, CLSCTX_INPROC_SERVER)?;
        rule.SetName(&BSTR::from("calicoctl-win fresh rule"))?;
        rule.SetProtocol(6)?;
        super::firewall_unset::read(&rule)
    };
    read().map_err(api("read a fresh firewall rule object"))
}

/// Tests: every rule of this name gone, as an administrator's `Remove-NetFirewallRule
/// -DisplayName` would do, by `INetFwRules::Remove` until none is left (which of several one
/// call takes, Microsoft's page does not say).
#[cfg(test)]
pub(crate) fn remove_every(name: &str) -> HostResult<()> {
    for _ in 0..16 {
        if rules(name)?.is_empty() {
            return Ok(());
        }
        remove_named(name)?;
    }
    Ok(())
}
