//! The registry through windows-registry.

use super::ffi::api;
use crate::host::registry::{MAX_VALUE_BYTES, too_long};
use crate::host::{HostError, HostResult, RegValue};
use windows_registry::{Key, LOCAL_MACHINE, Type, USERS};

/// `HRESULT_FROM_WIN32(ERROR_FILE_NOT_FOUND)`: the key or value does not exist.
const NOT_FOUND: i32 = 0x8007_0002_u32 as i32;

fn root(path: &str) -> HostResult<(&'static Key, &str)> {
    let (root, sub) = path.split_once('\\').unwrap_or((path, ""));
    // Every key calicoctl-win names is a constant under one of these (layout.rs, plan/).
    let key = match root.to_ascii_uppercase().as_str() {
        "HKLM" => LOCAL_MACHINE,
        "HKU" => USERS,
        _ => {
            return Err(HostError::Refused {
                what: format!("registry key {path}"),
                reason: "it must start with HKLM\\ or HKU\\".into(),
            });
        }
    };
    Ok((key, sub))
}

/// `None` for a missing key or value, else the result, an error with `op`.
fn found<T>(r: windows_result::Result<T>, op: impl FnOnce() -> String) -> HostResult<Option<T>> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.code().0 == NOT_FOUND => Ok(None),
        Err(e) => Err(api(op())(e)),
    }
}

pub fn get(path: &str, name: &str) -> HostResult<Option<RegValue>> {
    let (root, sub) = root(path)?;
    let op = || format!("read registry value {path}\\{name}");
    let Some(key) = found(root.open(sub), op)? else {
        return Ok(None);
    };
    // The value's size first (RegQueryValueExW without a buffer), so that a value past the
    // cap is refused before it is read; then read into a buffer of that size, so that a value
    // grown in between fails (ERROR_MORE_DATA) instead of being read whole.
    let wide = windows::core::HSTRING::from(name);
    let name_ptr = windows::core::PCWSTR(wide.as_ptr());
    // SAFETY: `wide` is a NUL-terminated UTF-16 string that outlives both calls.
    let Some((_, len)) = found(unsafe { key.raw_get_info(name_ptr) }, op)? else {
        return Ok(None);
    };
    if len > MAX_VALUE_BYTES {
        return Err(too_long(op(), len));
    }
    let mut buf = vec![0u8; len];
    // SAFETY: as above.
    let (ty, data) = unsafe { key.raw_get_bytes(name_ptr, &mut buf) }.map_err(api(op()))?;
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
    let key = root.create(sub).map_err(api(op()))?;
    match value {
        RegValue::Sz(s) => key.set_string(name, s),
        RegValue::ExpandSz(s) => key.set_expand_string(name, s),
        RegValue::Dword(d) => key.set_u32(name, *d),
        RegValue::MultiSz(items) => key.set_multi_string(name.to_owned(), items),
    }
    .map_err(api(op()))
}

pub fn delete_value(path: &str, name: &str) -> HostResult<()> {
    let (root, sub) = root(path)?;
    let op = || format!("delete registry value {path}\\{name}");
    if let Some(key) = found(root.options().read().write().open(sub), op)? {
        found(key.remove_value(name), op)?;
    }
    Ok(())
}

pub fn key_exists(path: &str) -> HostResult<bool> {
    let (root, sub) = root(path)?;
    Ok(found(root.open(sub), || format!("open registry key {path}"))?.is_some())
}

pub fn delete_key(path: &str) -> HostResult<()> {
    let (root, sub) = root(path)?;
    found(root.remove_tree(sub), || {
        format!("delete registry key {path}")
    })
    .map(drop)
}
