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
    // The value's size first (RegQueryValueExW without a buffer), so that a value past the
    // cap is refused before it is read; then read into a buffer of that size, so that a value
    // grown in between fails (ERROR_MORE_DATA) instead of being read whole.
    let wide = windows::core::HSTRING::from(name);
    let name_ptr = windows::core::PCWSTR(wide.as_ptr());
    // SAFETY: `wide` is a NUL-terminated UTF-16 string that outlives both calls.
    let len = match unsafe { key.raw_get_info(name_ptr) } {
        Ok((_, len)) => len,
        Err(e) if is_missing(&e) => return Ok(None),
        Err(e) => return Err(api(op(), e)),
    };
    if len > MAX_VALUE_BYTES {
        return Err(too_long(op(), len));
    }
    let mut buf = vec![0u8; len];
    // SAFETY: as above.
    let (ty, data) = unsafe { key.raw_get_bytes(name_ptr, &mut buf) }.map_err(|e| api(op(), e))?;
    let units: Vec<u16> = data
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    // A string's data ends in its NUL (RegSetValueExW's remarks); a multi-string's items end
    // at the first empty one.
    let text = || {
        String::from_utf16_lossy(&units)
            .trim_end_matches('\0')
            .to_owned()
    };
    let value = match (ty, <[u8; 4]>::try_from(data)) {
        (Type::String, _) => RegValue::Sz(text()),
        (Type::ExpandString, _) => RegValue::ExpandSz(text()),
        (Type::U32, Ok(bytes)) => RegValue::Dword(u32::from_le_bytes(bytes)),
        (Type::MultiString, _) => RegValue::MultiSz(
            String::from_utf16_lossy(&units)
                .split('\0')
                .take_while(|s| !s.is_empty())
                .map(String::from)
                .collect(),
        ),
        (other, _) => {
            return Err(HostError::Refused {
                what: op(),
                reason: format!("unexpected value type {other:?} ({len} bytes)"),
            });
        }
    };
    Ok(Some(value))
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
