//! Facts about the operating system and the trait that reads them.

use super::error::HostResult;
use serde::{Deserialize, Serialize};

impl SystemFacts {
    /// The boot on the local wall clock as Windows reports it now (Calico's scripts' view).
    pub fn boot_local_reported(&self) -> Option<i64> {
        self.boot_local_seconds_reported.or(self.boot_local_seconds)
    }
}

/// Facts about the operating system.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemFacts {
    pub build: u32,
    /// The update build revision; `None` when the registry does not hold it.
    pub ubr: Option<u32>,
    pub product_name: Option<String>,
    pub edition: Option<String>,
    /// `Server`, `Server Core` or `Client`.
    pub installation_type: Option<String>,
    pub is_64bit: bool,
    pub elevated: bool,
    /// Identifies the current boot, the same string in any culture (the boot time in seconds
    /// since the Unix epoch on Windows); `None` when the kernel's answer gave no boot time.
    /// Never empty: an unknown boot is no boot to compare (`supervise::node`).
    pub boot_id: Option<String>,
    /// The boot time on the local wall clock, in seconds since 1970-01-01T00:00 local time,
    /// unmoved by clock steps (`host::boot::boot_instant`).
    #[serde(default)]
    pub boot_local_seconds: Option<i64>,
    /// The boot on the local wall clock as Windows reports it now (`boot::reported_local`),
    /// what Calico's scripts format into `LastBootTime`; `None` on a simulated host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_local_seconds_reported: Option<i64>,
    /// The reported boot by the time zone's rule for the boot's date
    /// (`SystemTimeToTzSpecificLocalTimeEx`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_local_seconds_dated: Option<i64>,
    /// The host's name as `hostname` prints it; kubelet's node name unless it is overridden.
    #[serde(default)]
    pub hostname: Option<String>,
    /// The machine's WinHTTP proxy (`netsh winhttp show proxy`), `None` for direct access.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub winhttp_proxy: Option<SystemProxy>,
    /// The SID of the account this process runs as (`S-1-5-21-...`), when it can be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_sid: Option<String>,
    /// The drives by letter (`C`) and what they are (GetLogicalDrives, GetDriveTypeW); empty
    /// when unknown.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub drives: std::collections::BTreeMap<char, DriveKind>,
}

/// What a drive is, as GetDriveTypeW says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DriveKind {
    Fixed,
    Removable,
    /// A network share mapped to a letter.
    Remote,
    CdRom,
    RamDisk,
    Unknown,
}

impl DriveKind {
    /// As a sentence says it: `a network drive`.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Fixed => "a fixed local drive",
            Self::Removable => "a removable drive",
            Self::Remote => "a network drive",
            Self::CdRom => "a CD-ROM drive",
            Self::RamDisk => "a RAM disk",
            Self::Unknown => "a drive of unknown type",
        }
    }
}

/// A WinHTTP proxy setting as Windows gives it (`WINHTTP_PROXY_INFO`): `proxy` is
/// `host:port` or per-scheme `http=host:port;https=host:port`, `bypass` a `;`-separated list
/// (`<local>`, `*.example.com`, `10.*`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemProxy {
    pub proxy: String,
    #[serde(default)]
    pub bypass: Option<String>,
}

pub trait SystemInfo {
    fn system_facts(&self) -> HostResult<SystemFacts>;
}
