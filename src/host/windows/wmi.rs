//! A `Win32_NetworkAdapterConfiguration` method called through WMI's COM API (Microsoft's
//! "Calling a Provider Method"); what to call is `host::ip_config`'s.

use super::ffi::api;
use crate::host::ip_config::{self, WmiArg, WmiCall};
use crate::host::{HostError, HostResult};
use windows::Win32::System::Com::{
    CLSCTX_INPROC_SERVER, CoCreateInstance, CoSetProxyBlanket, EOAC_NONE, RPC_C_AUTHN_LEVEL_CALL,
    RPC_C_IMP_LEVEL_IMPERSONATE,
};
use windows::Win32::System::Ole::{SafeArrayCreateVector, SafeArrayPutElement};
use windows::Win32::System::Variant::{VARENUM, VARIANT, VT_ARRAY, VT_BSTR};
use windows::Win32::System::Wmi::{
    IWbemClassObject, IWbemLocator, IWbemServices, WBEM_FLAG_FORWARD_ONLY,
    WBEM_FLAG_RETURN_IMMEDIATELY, WBEM_FLAG_RETURN_WBEM_COMPLETE, WBEM_S_TIMEDOUT, WbemLocator,
};
use windows::core::{BSTR, HSTRING, PCWSTR};

/// `RPC_C_AUTHN_WINNT` and `RPC_C_AUTHZ_NONE` (rpcdce.h), the blanket WMI's samples set.
const AUTHN_WINNT: u32 = 10;
const AUTHZ_NONE: u32 = 0;

/// How long the query's first object is waited for (`IEnumWbemClassObject::Next`'s timeout).
const NEXT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// A `string` or `string[]` argument as a VARIANT (`VT_BSTR`, `VT_ARRAY | VT_BSTR`), freed
/// (VariantClear) when it drops.
fn variant(arg: &WmiArg, op: &str) -> HostResult<VARIANT> {
    let items = match arg {
        WmiArg::Text(text) => return Ok(VARIANT::from(text.as_str())),
        WmiArg::List(items) => items,
    };
    // SAFETY: a one-dimensional array of BSTRs, owned by the VARIANT from here on.
    let array = unsafe { SafeArrayCreateVector(VT_BSTR, 0, items.len() as u32) };
    if array.is_null() {
        return Err(HostError::Refused {
            what: op.to_owned(),
            reason: "SafeArrayCreateVector failed".into(),
        });
    }
    let mut v = VARIANT::default();
    // SAFETY: the VARIANT takes the array, which its drop frees with it.
    unsafe {
        let inner = &mut *v.Anonymous.Anonymous;
        inner.vt = VARENUM(VT_ARRAY.0 | VT_BSTR.0);
        inner.Anonymous.parray = array;
    }
    for (i, item) in (0i32..).zip(items) {
        let raw = BSTR::from(item.as_str()).into_raw();
        // SAFETY: `i` is inside the vector; SafeArrayPutElement copies the BSTR.
        let put = unsafe { SafeArrayPutElement(array, &i, raw.cast()) };
        // SAFETY: raw came from into_raw above and is not used again.
        drop(unsafe { BSTR::from_raw(raw) });
        put.map_err(api(op))?;
    }
    Ok(v)
}

/// A property of a WMI object as text (a `VT_BSTR`), or as a number (`VT_I4`, WMI's uint32).
fn property(object: &IWbemClassObject, name: &str, op: &str) -> HostResult<VARIANT> {
    let mut v = VARIANT::default();
    let name = HSTRING::from(name);
    // SAFETY: the object is alive; WMI fills the VARIANT, which its drop clears.
    unsafe { object.Get(PCWSTR(name.as_ptr()), 0, &mut v, None, None) }.map_err(api(op))?;
    Ok(v)
}

fn services(op: &str) -> HostResult<IWbemServices> {
    // SAFETY: creating the documented WMI locator object.
    let locator: IWbemLocator =
        unsafe { CoCreateInstance(&WbemLocator, None, CLSCTX_INPROC_SERVER) }.map_err(api(op))?;
    let none = BSTR::new();
    // SAFETY: a local connection to ROOT\CIMV2, no context; bounded by
    // WBEM_FLAG_CONNECT_USE_MAX_WAIT (2 minutes).
    let services = unsafe {
        locator.ConnectServer(
            &BSTR::from(r"ROOT\CIMV2"),
            &none,
            &none,
            &none,
            windows::Win32::System::Wmi::WBEM_FLAG_CONNECT_USE_MAX_WAIT.0,
            &none,
            None,
        )
    }
    .map_err(api(op))?;
    // SAFETY: the proxy blanket WMI's client samples set on the services proxy.
    unsafe {
        CoSetProxyBlanket(
            &services,
            AUTHN_WINNT,
            AUTHZ_NONE,
            PCWSTR::null(),
            RPC_C_AUTHN_LEVEL_CALL,
            RPC_C_IMP_LEVEL_IMPERSONATE,
            None,
            EOAC_NONE,
        )
    }
    .map_err(api(op))?;
    Ok(services)
}

/// The `__PATH` of interface `index`'s `Win32_NetworkAdapterConfiguration`.
fn instance_path(wmi: &IWbemServices, index: u32, op: &str) -> HostResult<BSTR> {
    let wql = BSTR::from("WQL");
    // SAFETY: a query on the connection above.
    let found = unsafe {
        wmi.ExecQuery(
            &wql,
            &BSTR::from(ip_config::wmi_query(index).as_str()),
            WBEM_FLAG_FORWARD_ONLY | WBEM_FLAG_RETURN_IMMEDIATELY,
            None,
        )
    }
    .map_err(api(op))?;
    let mut first = [None];
    let mut returned = 0u32;
    let bound = NEXT_TIMEOUT.as_millis() as i32;
    // SAFETY: one object asked for, into `first`, waited for at most `bound` ms.
    let hr = unsafe { found.Next(bound, &mut first, &mut returned) };
    // A success code: the query's semisynchronous enumeration had no object in time.
    if hr.0 == WBEM_S_TIMEDOUT.0 {
        return Err(HostError::Timeout {
            what: format!("WMI's {} of interface {index}", ip_config::WMI_CLASS),
            after: NEXT_TIMEOUT,
        });
    }
    hr.ok().map_err(api(op))?;
    let Some(instance) = first[0].take().filter(|_| returned == 1) else {
        return Err(HostError::NotFound {
            what: format!("the {} of interface {index}", ip_config::WMI_CLASS),
        });
    };
    let path = property(&instance, "__PATH", op)?;
    // SAFETY: __PATH is a VT_BSTR property, read before the VARIANT is cleared.
    Ok(unsafe { (*path.Anonymous.Anonymous.Anonymous.bstrVal).clone() })
}

/// Calls `call` on interface `index`'s configuration: its `ReturnValue`.
pub fn call_method(index: u32, call: &WmiCall) -> HostResult<()> {
    let op = format!("{} on interface {index}", call.method);
    let call = call.clone();
    crate::host::bounded::one_at_a_time(&UNDER_WAY, &op, CALL_WITHIN, move || {
        call_now(index, &call)
    })
}

/// A WMI call has not returned (it may still land): none is sent beside it.
static UNDER_WAY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The most a WMI method call is waited for: its connection's 2 minutes and the query's 30 s.
const CALL_WITHIN: std::time::Duration = std::time::Duration::from_secs(180);

/// `call_method` on the calling thread, with no bound of its own.
fn call_now(index: u32, call: &WmiCall) -> HostResult<()> {
    let op = format!("{} on interface {index}", call.method);
    let _com = super::firewall::com_init();
    let wmi = services(&op)?;
    let path = instance_path(&wmi, index, &op)?;
    let mut class = None;
    // SAFETY: the class object, into `class`.
    unsafe {
        wmi.GetObject(
            &BSTR::from(ip_config::WMI_CLASS),
            WBEM_FLAG_RETURN_WBEM_COMPLETE,
            None,
            Some(&mut class),
            None,
        )
    }
    .map_err(api(&op))?;
    let class = class.ok_or_else(|| HostError::NotFound {
        what: ip_config::WMI_CLASS.into(),
    })?;
    let method = HSTRING::from(call.method);
    let mut signature = None;
    // SAFETY: the method's input signature, into `signature`.
    unsafe {
        class.GetMethod(
            PCWSTR(method.as_ptr()),
            0,
            &mut signature,
            std::ptr::null_mut(),
        )
    }
    .map_err(api(&op))?;
    let signature = signature.ok_or_else(|| HostError::NotFound {
        what: format!("{}.{}", ip_config::WMI_CLASS, call.method),
    })?;
    // SAFETY: an instance of the input signature, to put the arguments in.
    let input = unsafe { signature.SpawnInstance(0) }.map_err(api(&op))?;
    for (name, arg) in &call.args {
        let value = variant(arg, &op)?;
        let name = HSTRING::from(*name);
        // SAFETY: the VARIANT is alive for the call; Put copies it.
        unsafe { input.Put(PCWSTR(name.as_ptr()), 0, &value, 0) }.map_err(api(&op))?;
    }
    let mut output = None;
    // SAFETY: the method on the instance's path with the arguments above.
    unsafe {
        wmi.ExecMethod(
            &path,
            &BSTR::from(call.method),
            WBEM_FLAG_RETURN_WBEM_COMPLETE,
            None,
            &input,
            Some(&mut output),
            None,
        )
    }
    .map_err(api(&op))?;
    let output = output.ok_or_else(|| HostError::Refused {
        what: op.clone(),
        reason: "WMI gave no output parameters".into(),
    })?;
    let code = property(&output, "ReturnValue", &op)?;
    // SAFETY: ReturnValue is a uint32, which WMI gives as VT_I4.
    let code = unsafe { code.Anonymous.Anonymous.Anonymous.lVal } as u32;
    ip_config::wmi_result(call.method, code)
        .map_err(|reason| HostError::Refused { what: op, reason })
}
