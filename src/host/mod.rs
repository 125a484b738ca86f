//! Everything calicoctl-win touches on a Windows node, as small traits with two
//! implementations: the real host (`windows/`) and SimHost (`sim/`). `Host` is their sum.
//! Paths are Windows paths; registry keys are written with their root (`HKLM\...`).

pub mod acl;
pub mod boot;
pub mod bounded;
pub mod error;
pub mod events;
pub mod files;
pub mod firewall;
pub mod hns;
pub mod http_probe;
pub mod ip_config;
pub mod listen;
pub mod lock;
pub mod network;
pub mod process;
pub mod registry;
pub mod runtime;
pub mod select;
pub mod services;
pub mod sharing;
pub mod sim;
pub mod stop;
pub mod system;
pub mod uplink;
#[cfg(windows)]
pub mod windows;

#[cfg(test)]
pub(crate) mod contract;

pub use error::{HostError, HostResult};
pub use events::{EventLevel, EventLog};
pub(crate) use files::open_to_write;
pub use files::{Access, DirEntry, Files, OpenedFile, READ_CAP, read_capped, same_final_path};
pub use firewall::{
    ALL_PROFILES, AppContainerScope, Direction, Firewall, FirewallModifyState, FirewallRule,
    Protocol, Unset,
};
pub use hns::{Hns, HnsEndpoint, HnsNetwork};
pub use network::{
    Adapter, AdapterAddress, InterfaceAddress, Network, Route, VSWITCH_ADAPTER_DESCRIPTION,
    with_growing_buffer,
};
pub use process::{Child, LineSink, Output, ProcessSpec, Processes};
pub use registry::{RegValue, Registry};
pub use services::{
    AfterCannotAccept, ERROR_SERVICE_REQUEST_TIMEOUT, InstalledService, Recovery, ServiceSpec,
    ServiceState, Services, StartType, flag, split_command_line,
};
pub use system::{DriveKind, SystemFacts, SystemInfo, SystemProxy};

use serde::Serialize;

/// Which implementation a host is, for output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum HostKind {
    Windows,
    /// A simulated host in a state directory.
    Simulated {
        dir: String,
        profile: String,
    },
    /// A throw-away simulated host, for read-only commands off Windows.
    InMemory {
        profile: String,
    },
}

/// A Windows node: everything above.
pub trait Host:
    Registry + Services + Hns + Files + Network + SystemInfo + Processes + Firewall + EventLog + Sync
{
    fn kind(&self) -> HostKind;
    /// Listens on TCP `port` of every address (loopback on a simulated host), held alone:
    /// SO_EXCLUSIVEADDRUSE on Windows (Microsoft's "Using SO_REUSEADDR and SO_EXCLUSIVEADDRUSE").
    fn listen_tcp(&self, port: u16) -> Result<std::net::TcpListener, listen::ListenError>;
}

/// The node's file system as the release's download and extraction see it, through `Files`
/// (so the simulated host's faults and the contract reach it).
pub struct ReleaseDisk<'a>(pub &'a dyn Host);

/// A host call's outcome as `Disk` answers it.
fn io<T>(r: HostResult<T>) -> std::io::Result<T> {
    r.map_err(std::io::Error::other)
}

impl crate::release::Disk for ReleaseDisk<'_> {
    fn join(&self, dir: &str, name: &str) -> String {
        crate::layout::join(dir, name)
    }
    fn open(&self, path: &str) -> std::io::Result<Option<std::fs::File>> {
        io(self.0.open_read(path))
    }
    fn write(&self, path: &str, append: bool) -> std::io::Result<std::fs::File> {
        io(self.0.open_write(path, append))
    }
    fn rename(&self, from: &str, to: &str) -> std::io::Result<()> {
        io(self.0.rename(from, to))
    }
    fn remove_file(&self, path: &str) -> std::io::Result<()> {
        io(self.0.remove_file(path)).map(drop)
    }
    fn create_dir(&self, path: &str) -> std::io::Result<()> {
        io(self.0.create_dir(path)).map(drop)
    }
    fn list(&self, dir: &str) -> std::io::Result<Option<Vec<(String, bool)>>> {
        let entries = io(self.0.list_dir(dir))?;
        Ok(entries.map(|es| es.into_iter().map(|e| (e.name, e.is_dir)).collect()))
    }
    fn remove_tree(&self, path: &str) -> std::io::Result<()> {
        io(self.0.remove_tree(path)).map(drop)
    }
    fn on_node(&self) -> bool {
        true
    }
}
