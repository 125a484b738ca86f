//! The rule properties calicoctl-win does not set (`Unset`), through INetFwRule2 and 3.

use crate::host::firewall::{AppContainerScope, EDGE_TRAVERSAL_ALLOW, Unset};
use std::ffi::c_void;
use windows::Win32::Foundation::{E_INVALIDARG, E_NOINTERFACE, E_OUTOFMEMORY, VARIANT_TRUE};
use windows::Win32::NetworkManagement::WindowsFirewall::{INetFwRule, INetFwRule2, INetFwRule3};
use windows::Win32::System::Ole::{
    SafeArrayCreateVector, SafeArrayGetElement, SafeArrayGetLBound, SafeArrayGetUBound,
    SafeArrayPutElement,
};
use windows::Win32::System::Variant::{
    VARENUM, VARIANT, VT_ARRAY, VT_BSTR, VT_EMPTY, VT_NULL, VT_VARIANT,
};
use windows::core::{BSTR, Interface};

/// The rule's `I` (INetFwRule2, INetFwRule3), or `None` on E_NOINTERFACE (older Windows; Wine's
/// hnetcfg.dll, dlls/hnetcfg/policy.c `netfw_rule_QueryInterface`); its properties are then at
/// their defaults. Any other failure is an error.
pub(super) fn optional<I: Interface>(rule: &INetFwRule) -> windows::core::Result<Option<I>> {
    present(rule.cast::<I>())
}

/// An interface asked for: `None` for E_NOINTERFACE alone, any other error kept.
fn present<I>(asked: windows::core::Result<I>) -> windows::core::Result<Option<I>> {
    match asked {
        Ok(i) => Ok(Some(i)),
        Err(e) if e.code() == E_NOINTERFACE => Ok(None),
        Err(e) => Err(e),
    }
}

/// Why the rule object cannot take `u` whole, if it cannot (a property of an interface this
/// Windows lacks); asked before anything is set.
pub(super) fn cannot_set(rule: &INetFwRule, u: &Unset) -> windows::core::Result<Option<String>> {
    let nd = u.not_default();
    let why = |interface: &str, what: &str| {
        format!(
            "the rule has {what}, which only {interface} sets, and this Windows has no {interface} (QueryInterface: E_NOINTERFACE): it cannot be put back whole"
        )
    };
    if nd.edge_traversal
        && u.edge() != EDGE_TRAVERSAL_ALLOW
        && optional::<INetFwRule2>(rule)?.is_none()
    {
        return Ok(Some(why(
            "INetFwRule2",
            "edge traversal deferred to the application or user",
        )));
    }
    if nd.app_container && optional::<INetFwRule3>(rule)?.is_none() {
        return Ok(Some(why(
            "INetFwRule3",
            "an app container, user or IPsec scope",
        )));
    }
    Ok(None)
}

/// The properties as the rule holds them, those of an absent interface at their defaults.
///
/// # Safety
/// `rule` is a live rule object of this thread's COM.
pub(super) unsafe fn read(rule: &INetFwRule) -> windows::core::Result<Unset> {
    // SAFETY: property reads on the live rule object and the interfaces it answers.
    unsafe {
        let edge_traversal_options = match optional::<INetFwRule2>(rule)? {
            Some(r2) => r2.EdgeTraversalOptions()?,
            None => 0,
        };
        let app_container = match optional::<INetFwRule3>(rule)? {
            Some(r3) => AppContainerScope {
                local_app_package_id: r3.LocalAppPackageId()?.to_string(),
                local_user_owner: r3.LocalUserOwner()?.to_string(),
                local_user_authorized_list: r3.LocalUserAuthorizedList()?.to_string(),
                remote_user_authorized_list: r3.RemoteUserAuthorizedList()?.to_string(),
                remote_machine_authorized_list: r3.RemoteMachineAuthorizedList()?.to_string(),
                secure_flags: r3.SecureFlags()?,
            },
            None => AppContainerScope::default(),
        };
        Ok(Unset {
            local_addresses: rule.LocalAddresses()?.to_string(),
            remote_ports: rule.RemotePorts()?.to_string(),
            interface_types: rule.InterfaceTypes()?.to_string(),
            edge_traversal: rule.EdgeTraversal()? != windows::Win32::Foundation::VARIANT_FALSE,
            grouping: rule.Grouping()?.to_string(),
            service_name: rule.ServiceName()?.to_string(),
            interfaces: names_in(&rule.Interfaces()?)?,
            edge_traversal_options,
            app_container,
        })
    }
}

/// The names in `INetFwRule::Interfaces`: VT_EMPTY or VT_NULL for none, else a SAFEARRAY of
/// BSTR VARIANTs (Microsoft's "Adding a Per Interface Rule") or of BSTRs; another type is an
/// error.
///
/// # Safety
/// `v` is a valid VARIANT.
unsafe fn names_in(v: &VARIANT) -> windows::core::Result<Vec<String>> {
    // SAFETY: the union is read as its `vt` says; every element copied out drops (is cleared).
    unsafe {
        let inner = &v.Anonymous.Anonymous;
        if inner.vt == VT_EMPTY || inner.vt == VT_NULL {
            return Ok(Vec::new());
        }
        let array = inner.Anonymous.parray;
        let of_variants = inner.vt == VT_ARRAY | VT_VARIANT;
        if array.is_null() || !(of_variants || inner.vt == VT_ARRAY | VT_BSTR) {
            // The HRESULT alone: `Error::new` calls RoOriginateErrorW, which Wine 8 lacks.
            return Err(E_INVALIDARG.into());
        }
        let mut names = Vec::new();
        for i in SafeArrayGetLBound(array, 1)?..=SafeArrayGetUBound(array, 1)? {
            if of_variants {
                let mut item = VARIANT::default();
                SafeArrayGetElement(array, &i, &mut item as *mut VARIANT as *mut c_void)?;
                let it = &item.Anonymous.Anonymous;
                let name = (it.vt == VT_BSTR).then(|| it.Anonymous.bstrVal.to_string());
                // Another element type is an error: skipped, a narrowed rule would read open.
                names.push(name.ok_or(windows::core::Error::from(E_INVALIDARG))?);
            } else {
                let mut name = BSTR::new();
                SafeArrayGetElement(array, &i, &mut name as *mut BSTR as *mut c_void)?;
                names.push(name.to_string());
            }
        }
        Ok(names)
    }
}

/// Sets on a rule about to be added the properties not at Windows' defaults (an undo), after
/// the protocol (INetFwRule::RemotePorts page) and the direction ([MS-FASP] 2.2.35).
///
/// # Safety
/// `rule` is a live rule object of this thread's COM.
pub(super) unsafe fn set(rule: &INetFwRule, u: &Unset) -> windows::core::Result<()> {
    let nd = u.not_default();
    let bstr = |s: &str| BSTR::from(s);
    // SAFETY: property writes on the live rule object and the interfaces it answers.
    unsafe {
        if nd.local_addresses {
            rule.SetLocalAddresses(&bstr(&u.local_addresses))?;
        }
        if nd.remote_ports {
            rule.SetRemotePorts(&bstr(&u.remote_ports))?;
        }
        if nd.interface_types {
            rule.SetInterfaceTypes(&bstr(&u.interface_types))?;
        }
        if nd.edge_traversal {
            match optional::<INetFwRule2>(rule)? {
                Some(r2) => r2.SetEdgeTraversalOptions(u.edge())?,
                None if u.edge() == EDGE_TRAVERSAL_ALLOW => rule.SetEdgeTraversal(VARIANT_TRUE)?,
                // `cannot_set` refused this before.
                None => return Err(E_NOINTERFACE.into()),
            }
        }
        if nd.grouping {
            rule.SetGrouping(&bstr(&u.grouping))?;
        }
        if nd.service_name {
            rule.SetServiceName(&bstr(&u.service_name))?;
        }
        if nd.interfaces {
            set_interfaces(rule, &u.interfaces)?;
        }
        if nd.app_container {
            let Some(r3) = optional::<INetFwRule3>(rule)? else {
                // `cannot_set` refused this before.
                return Err(E_NOINTERFACE.into());
            };
            set_app_container(&r3, &u.app_container)?;
        }
    }
    Ok(())
}

/// INetFwRule3's properties that are set (not empty, not 0).
///
/// # Safety
/// `r3` is a live rule object of this thread's COM.
unsafe fn set_app_container(r3: &INetFwRule3, a: &AppContainerScope) -> windows::core::Result<()> {
    let set = |text: &str, put: &dyn Fn(&BSTR) -> windows::core::Result<()>| {
        if text.trim().is_empty() {
            Ok(())
        } else {
            put(&BSTR::from(text))
        }
    };
    // SAFETY: property writes on the live rule object.
    unsafe {
        set(&a.local_app_package_id, &|b| r3.SetLocalAppPackageId(b))?;
        set(&a.local_user_owner, &|b| r3.SetLocalUserOwner(b))?;
        set(&a.local_user_authorized_list, &|b| {
            r3.SetLocalUserAuthorizedList(b)
        })?;
        set(&a.remote_user_authorized_list, &|b| {
            r3.SetRemoteUserAuthorizedList(b)
        })?;
        set(&a.remote_machine_authorized_list, &|b| {
            r3.SetRemoteMachineAuthorizedList(b)
        })?;
        if a.secure_flags != 0 {
            r3.SetSecureFlags(a.secure_flags)?;
        }
    }
    Ok(())
}

/// `INetFwRule::put_Interfaces` with the names (blank ones left out) as a SAFEARRAY of
/// VARIANTs, each a BSTR, in a VT_ARRAY | VT_VARIANT VARIANT.
///
/// # Safety
/// `rule` is a live rule object of this thread's COM.
unsafe fn set_interfaces(rule: &INetFwRule, names: &[String]) -> windows::core::Result<()> {
    let names: Vec<&str> = names
        .iter()
        .map(|n| n.trim())
        .filter(|n| !n.is_empty())
        .collect();
    // SAFETY: the array is owned by `v` from its creation and freed by its drop
    // (VariantClear); SafeArrayPutElement copies each item, which drops after.
    unsafe {
        let array = SafeArrayCreateVector(VT_VARIANT, 0, names.len() as u32);
        if array.is_null() {
            return Err(E_OUTOFMEMORY.into());
        }
        let mut v = VARIANT::default();
        let inner = &mut *v.Anonymous.Anonymous;
        inner.vt = VARENUM(VT_ARRAY.0 | VT_VARIANT.0);
        inner.Anonymous.parray = array;
        for (i, name) in (0i32..).zip(&names) {
            let item = VARIANT::from(*name);
            SafeArrayPutElement(array, &i, &item as *const VARIANT as *const c_void)?;
        }
        rule.SetInterfaces(&v)
    }
}

#[cfg(test)]
mod tests {
    /// Only E_NOINTERFACE says an interface is absent; other failures are errors.
    #[test]
    fn only_e_nointerface_is_an_absent_interface() {
        use windows::Win32::Foundation::{E_ACCESSDENIED, E_NOINTERFACE, E_UNEXPECTED};
        assert!(matches!(
            super::present::<()>(Err(E_NOINTERFACE.into())),
            Ok(None)
        ));
        for code in [E_ACCESSDENIED, E_UNEXPECTED] {
            let e = super::present::<()>(Err(code.into())).expect_err("an error");
            assert_eq!(e.code(), code);
        }
        assert!(matches!(super::present(Ok(7)), Ok(Some(7))));
    }
}
