//! INetFwRule2 and INetFwRule3 of the stand-in's rule, and INetFwRule::Interfaces' VARIANT.
//! Microsoft's pages: INetFwRule2::EdgeTraversalOptions is a NET_FW_EDGE_TRAVERSAL_TYPE;
//! INetFwRule3's LocalAppPackageId, LocalUserOwner, LocalUserAuthorizedList,
//! RemoteUserAuthorizedList and RemoteMachineAuthorizedList are BSTRs and SecureFlags a
//! NET_FW_AUTHENTICATE_TYPE, each kept as set and none set on a new rule (their pages give
//! no default; PowerShell's New-NetFirewallRule gives each parameter "Default value: None").
//! INetFwRule::Interfaces: friendly names (its page), kept as set; none is VT_EMPTY (a
//! guess: the page gives no empty form), a list a SAFEARRAY of BSTR VARIANTs, as Microsoft's
//! "Adding a Per Interface Rule" samples set it.

use super::*;
use std::mem::ManuallyDrop;
use windows::Win32::Foundation::E_OUTOFMEMORY;
use windows::Win32::System::Ole::{
    SafeArrayCreateVector, SafeArrayGetElement, SafeArrayGetLBound, SafeArrayGetUBound,
    SafeArrayPutElement,
};
use windows::Win32::System::Variant::{
    VARENUM, VT_ARRAY, VT_BSTR, VT_EMPTY, VT_NULL, VT_VARIANT, VariantClear,
};

impl INetFwRule2_Impl for Rule_Impl {
    fn EdgeTraversalOptions(&self) -> windows::core::Result<i32> {
        Ok(self.get().edge_traversal)
    }
    /// A value of NET_FW_EDGE_TRAVERSAL_TYPE (0 to 3), refused on an outbound rule unless 0
    /// (`edge_traversal_allowed`); another value E_INVALIDARG.
    fn SetEdgeTraversalOptions(&self, loptions: i32) -> windows::core::Result<()> {
        if !(0..=3).contains(&loptions) {
            return Err(E_INVALIDARG.into());
        }
        let on = if loptions == 0 {
            VARIANT_FALSE
        } else {
            VARIANT_TRUE
        };
        edge_traversal_allowed(&self.get(), on)?;
        self.set(|r| r.edge_traversal = loptions)
    }
}

impl INetFwRule3_Impl for Rule_Impl {
    fn LocalAppPackageId(&self) -> windows::core::Result<BSTR> {
        Ok(BSTR::from(self.get().local_app_package_id))
    }
    fn SetLocalAppPackageId(&self, v: &BSTR) -> windows::core::Result<()> {
        self.set(|r| r.local_app_package_id = v.to_string())
    }
    fn LocalUserOwner(&self) -> windows::core::Result<BSTR> {
        Ok(BSTR::from(self.get().local_user_owner))
    }
    fn SetLocalUserOwner(&self, v: &BSTR) -> windows::core::Result<()> {
        self.set(|r| r.local_user_owner = v.to_string())
    }
    fn LocalUserAuthorizedList(&self) -> windows::core::Result<BSTR> {
        Ok(BSTR::from(self.get().local_user_authorized_list))
    }
    fn SetLocalUserAuthorizedList(&self, v: &BSTR) -> windows::core::Result<()> {
        self.set(|r| r.local_user_authorized_list = v.to_string())
    }
    fn RemoteUserAuthorizedList(&self) -> windows::core::Result<BSTR> {
        Ok(BSTR::from(self.get().remote_user_authorized_list))
    }
    fn SetRemoteUserAuthorizedList(&self, v: &BSTR) -> windows::core::Result<()> {
        self.set(|r| r.remote_user_authorized_list = v.to_string())
    }
    fn RemoteMachineAuthorizedList(&self) -> windows::core::Result<BSTR> {
        Ok(BSTR::from(self.get().remote_machine_authorized_list))
    }
    fn SetRemoteMachineAuthorizedList(&self, v: &BSTR) -> windows::core::Result<()> {
        self.set(|r| r.remote_machine_authorized_list = v.to_string())
    }
    fn SecureFlags(&self) -> windows::core::Result<i32> {
        Ok(self.get().secure_flags)
    }
    fn SetSecureFlags(&self, loptions: i32) -> windows::core::Result<()> {
        self.set(|r| r.secure_flags = loptions)
    }
}

/// The rule `Add` is given, its INetFwRule2 and INetFwRule3 properties read where it has
/// those interfaces (a caller's own rule object may not), else left as a new rule has them.
pub fn add_newer(rule: &INetFwRule, fields: &mut Fields) -> windows::core::Result<()> {
    // SAFETY: property reads on the caller's live rule object.
    unsafe {
        if let Ok(r2) = rule.cast::<INetFwRule2>() {
            fields.edge_traversal = r2.EdgeTraversalOptions()?;
        }
        if let Ok(r3) = rule.cast::<INetFwRule3>() {
            fields.local_app_package_id = r3.LocalAppPackageId()?.to_string();
            fields.local_user_owner = r3.LocalUserOwner()?.to_string();
            fields.local_user_authorized_list = r3.LocalUserAuthorizedList()?.to_string();
            fields.remote_user_authorized_list = r3.RemoteUserAuthorizedList()?.to_string();
            fields.remote_machine_authorized_list = r3.RemoteMachineAuthorizedList()?.to_string();
            fields.secure_flags = r3.SecureFlags()?;
        }
    }
    Ok(())
}

/// The names a VARIANT of `put_Interfaces` holds: none for VT_EMPTY or VT_NULL, each BSTR of
/// a SAFEARRAY of VARIANTs or of BSTRs; another type is E_INVALIDARG.
///
/// # Safety
/// `v` is a valid VARIANT.
pub unsafe fn names_in(v: &VARIANT) -> windows::core::Result<Vec<String>> {
    // SAFETY: the union is read as its `vt` says; each element copied out is cleared.
    unsafe {
        let inner = &v.Anonymous.Anonymous;
        if inner.vt == VT_EMPTY || inner.vt == VT_NULL {
            return Ok(Vec::new());
        }
        let array = inner.Anonymous.parray;
        let of_variants = inner.vt == VT_ARRAY | VT_VARIANT;
        if array.is_null() || !(of_variants || inner.vt == VT_ARRAY | VT_BSTR) {
            return Err(E_INVALIDARG.into());
        }
        let mut names = Vec::new();
        for i in SafeArrayGetLBound(array, 1)?..=SafeArrayGetUBound(array, 1)? {
            if of_variants {
                let mut item = VARIANT::default();
                SafeArrayGetElement(array, &i, &mut item as *mut VARIANT as *mut c_void)?;
                let it = &item.Anonymous.Anonymous;
                if it.vt != VT_BSTR {
                    let _ = VariantClear(&mut item);
                    return Err(E_INVALIDARG.into());
                }
                names.push(it.Anonymous.bstrVal.to_string());
                let _ = VariantClear(&mut item);
            } else {
                let mut name = BSTR::new();
                SafeArrayGetElement(array, &i, &mut name as *mut BSTR as *mut c_void)?;
                names.push(name.to_string());
            }
        }
        Ok(names)
    }
}

/// The VARIANT `get_Interfaces` answers, which the caller clears: VT_EMPTY for none.
pub fn interfaces_variant(names: &[String]) -> windows::core::Result<VARIANT> {
    let mut v = VARIANT::default();
    if names.is_empty() {
        return Ok(v);
    }
    // SAFETY: the array is owned by `v` once made; each BSTR VARIANT put is copied in and
    // cleared after.
    unsafe {
        let array = SafeArrayCreateVector(VT_VARIANT, 0, names.len() as u32);
        if array.is_null() {
            return Err(E_OUTOFMEMORY.into());
        }
        let inner = &mut *v.Anonymous.Anonymous;
        inner.vt = VARENUM(VT_ARRAY.0 | VT_VARIANT.0);
        inner.Anonymous.parray = array;
        for (i, name) in (0i32..).zip(names) {
            let mut item = VARIANT::default();
            let it = &mut *item.Anonymous.Anonymous;
            it.vt = VT_BSTR;
            it.Anonymous.bstrVal = ManuallyDrop::new(BSTR::from(name.as_str()));
            let put = SafeArrayPutElement(array, &i, &item as *const VARIANT as *const c_void);
            let _ = VariantClear(&mut item);
            if let Err(e) = put {
                let _ = VariantClear(&mut v);
                return Err(e);
            }
        }
    }
    Ok(v)
}
