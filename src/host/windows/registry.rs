//! The registry through windows-registry.

use crate::host::registry::{MAX_VALUE_BYTES, too_long};
use crate::host::{HostError, HostResult, RegValue};
use windows_registry::{CURRENT_USER, Key, LOCAL_MACHINE, Type, USERS};

/// `HRESULT_FROM_WIN32(ERROR_FILE_NOT_FOUND)`: the key or value does not exist.
const NOT_FOUND: i32 = 0x8007_0002_u32 as i32;

fn root(path: &str) -> HostResult<(&'static Key, &str)> {
    let (root, sub) = path.split_once('\\').unwrap_or((path, ""));
    let key = match root.to_ascii_uppercase().as_str() {
        "HKLM" | "HKEY_LOCAL_MACHINE" => LOCAL_MACHINE,
        "HKCU" | "HKEY_CURRENT_USER" => CURRENT_USER,
        "HKU" | "HKEY_USERS" => USERS,
        _ => {
            return Err(HostError::Refused {
                what: format!("registry key {path}"),
                reason: "it must start with HKLM\\, HKCU\\ or HKU\\".into(),
            });
        }
    };
    Ok((key, sub))
}

fn api(op: String, e: windows_result::Error) -> HostError {
    HostError::Api {
        op,
        code: e.code().0 as u32,
        message: e.message(),
    }
}

fn is_missing(e: &windows_result::Error) -> bool {
    e.code().0 == NOT_FOUND
}

pub fn get(path: &str, name: &str) -> HostResult<Option<RegValue>> {
    let (root, sub) = root(path)?;
    let op = || format!("read registry value {path}\\{name}");
    let key = match root.open(sub) {
        Ok(k) => k,
        Err(e) if is_missing(&e) => return Ok(None),
        Err(e) => return Err(api(op(), e)),
    };
    // The value's type and size first (RegQueryValueExW without a buffer), so that a value
    // past the cap is refused before it is read.
    let wide = windows::core::HSTRING::from(name);
    // SAFETY: `wide` is a NUL-terminated UTF-16 string that outlives the call.
    let (ty, len) = match unsafe { key.raw_get_info(windows::core::PCWSTR(wide.as_ptr())) } {
        Ok(info) => info,
        Err(e) if is_missing(&e) => return Ok(None),
        Err(e) => return Err(api(op(), e)),
    };
    if len > MAX_VALUE_BYTES {
        return Err(too_long(op(), len));
    }
    let value = match ty {
        Type::String => key.get_string(name).map(RegValue::Sz),
        Type::ExpandString => key.get_string(name).map(RegValue::ExpandSz),
        Type::U32 => key.get_u32(name).map(RegValue::Dword),
        // An empty string ends a REG_MULTI_SZ; some readers return the terminators as items.
        Type::MultiString => key
            .get_multi_string(name)
            .map(|v| RegValue::MultiSz(v.into_iter().take_while(|s| !s.is_empty()).collect())),
        other => {
            return Err(HostError::Refused {
                what: op(),
                reason: format!("unexpected value type {other:?}"),
            });
        }
    };
    value.map(Some).map_err(|e| api(op(), e))
}

pub fn set(path: &str, name: &str, value: &RegValue) -> HostResult<()> {
    let (root, sub) = root(path)?;
    let op = || format!("write registry value {path}\\{name}");
    let key = root.create(sub).map_err(|e| api(op(), e))?;
    match value {
        RegValue::Sz(s) => key.set_string(name, s),
        RegValue::ExpandSz(s) => key.set_expand_string(name, s),
        RegValue::Dword(d) => key.set_u32(name, *d),
        RegValue::MultiSz(items) => key.set_multi_string(name.to_owned(), items),
    }
    .map_err(|e| api(op(), e))
}

pub fn delete_value(path: &str, name: &str) -> HostResult<()> {
    let (root, sub) = root(path)?;
    let op = || format!("delete registry value {path}\\{name}");
    let key = match root.options().read().write().open(sub) {
        Ok(k) => k,
        Err(e) if is_missing(&e) => return Ok(()),
        Err(e) => return Err(api(op(), e)),
    };
    match key.remove_value(name) {
        Err(e) if !is_missing(&e) => Err(api(op(), e)),
        _ => Ok(()),
    }
}

pub fn key_exists(path: &str) -> HostResult<bool> {
    let (root, sub) = root(path)?;
    match root.open(sub) {
        Ok(_) => Ok(true),
        Err(e) if is_missing(&e) => Ok(false),
        Err(e) => Err(api(format!("open registry key {path}"), e)),
    }
}

pub fn delete_key(path: &str) -> HostResult<()> {
    let (root, sub) = root(path)?;
    match root.remove_tree(sub) {
        Err(e) if !is_missing(&e) => Err(api(format!("delete registry key {path}"), e)),
        _ => Ok(()),
    }
}
