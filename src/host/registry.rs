//! The registry: its values and the trait that reads and writes them.

use super::error::{HostError, HostResult};
use serde::{Deserialize, Serialize};

/// A registry value of one of the three types the tool reads and writes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data")]
pub enum RegValue {
    #[serde(rename = "REG_SZ")]
    Sz(String),
    /// A string whose `%VARIABLE%`s its reader expands (`%SystemRoot%\...`).
    #[serde(rename = "REG_EXPAND_SZ")]
    ExpandSz(String),
    #[serde(rename = "REG_DWORD")]
    Dword(u32),
    #[serde(rename = "REG_MULTI_SZ")]
    MultiSz(Vec<String>),
}

/// The longest value read, in bytes as the registry stores it (UTF-16): twice the largest
/// value calicoctl-win writes (the endpoint fault record, ~200 KiB of text), far above the
/// services' `ImagePath` and `Environment` and the machine's `Path` that it reads.
pub const MAX_VALUE_BYTES: usize = 1 << 20;

impl RegValue {
    /// Its size as the registry stores it: UTF-16 with each string's NUL, and a multi-string's
    /// final NUL (RegSetValueExW's `cbData`).
    pub fn stored_len(&self) -> usize {
        let sz = |s: &str| (s.encode_utf16().count() + 1) * 2;
        match self {
            Self::Sz(s) | Self::ExpandSz(s) => sz(s),
            Self::Dword(_) => 4,
            Self::MultiSz(items) => items.iter().map(|s| sz(s)).sum::<usize>() + 2,
        }
    }
}

/// The refusal of a value past `MAX_VALUE_BYTES`.
pub fn too_long(what: String, len: usize) -> HostError {
    let reason = format!("the value is {len} bytes long, more than the {MAX_VALUE_BYTES} read");
    HostError::refused(what, reason)
}

/// The registry. Keys are case-insensitive, as on Windows.
pub trait Registry {
    /// A value, or `None` when the key or the value is missing; a value longer than
    /// `MAX_VALUE_BYTES` is refused before it is read.
    fn reg_get(&self, key: &str, name: &str) -> HostResult<Option<RegValue>>;
    /// Writes a value, creating the key and its parents.
    fn reg_set(&self, key: &str, name: &str, value: &RegValue) -> HostResult<()>;
    /// Deletes a value; a missing value or key is not an error.
    fn reg_delete_value(&self, key: &str, name: &str) -> HostResult<()>;
    fn reg_key_exists(&self, key: &str) -> HostResult<bool>;
    /// Deletes a key with everything under it; a missing key is not an error.
    fn reg_delete_key(&self, key: &str) -> HostResult<()>;
}
