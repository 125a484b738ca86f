//! The registry: its values and the trait that reads and writes them.

use super::error::HostResult;
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

/// The registry. Keys are case-insensitive, as on Windows.
pub trait Registry {
    /// A value, or `None` when the key or the value is missing.
    fn reg_get(&self, key: &str, name: &str) -> HostResult<Option<RegValue>>;
    /// Writes a value, creating the key and its parents.
    fn reg_set(&self, key: &str, name: &str, value: &RegValue) -> HostResult<()>;
    /// Deletes a value; a missing value or key is not an error.
    fn reg_delete_value(&self, key: &str, name: &str) -> HostResult<()>;
    fn reg_key_exists(&self, key: &str) -> HostResult<bool>;
    /// Deletes a key with everything under it; a missing key is not an error.
    fn reg_delete_key(&self, key: &str) -> HostResult<()>;
}
