//! Which host a command works on: the real Windows host, a simulated host in a directory
//! (`--sim-host DIR`), or, off Windows, a throw-away simulated host for read-only commands.

use super::Host;
#[cfg(not(windows))]
use super::sim::DEFAULT_PROFILE;
use super::sim::{Fault, PROFILES, SimError, SimHost};
use crate::error::UsageError;
use std::path::PathBuf;

/// The host flags.
#[derive(Clone, Debug, Default)]
pub struct HostChoice {
    pub sim_dir: Option<PathBuf>,
    pub sim_profile: Option<String>,
    pub sim_fault: Option<Fault>,
    /// `--sim-pace`: verify's waits (`verify::options::Options::paced`) and CalicoNode's look
    /// at the node (`commands::service::run`) divided by this.
    pub sim_pace: Option<u32>,
}

/// Whether the command may change the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Intent {
    /// Reads only (also every `--dry-run`).
    Read,
    Change,
}

/// The opened host, still concrete, so a simulated host gets its start hook before use.
pub enum Opened {
    Sim(Box<SimHost>),
    #[cfg(windows)]
    Windows(super::windows::WindowsHost),
}

impl Opened {
    pub fn as_sim_mut(&mut self) -> Option<&mut SimHost> {
        match self {
            Opened::Sim(h) => Some(h),
            #[cfg(windows)]
            Opened::Windows(_) => None,
        }
    }

    pub fn into_host(self) -> Box<dyn Host> {
        match self {
            Opened::Sim(h) => h,
            #[cfg(windows)]
            Opened::Windows(h) => Box::new(h),
        }
    }
}

/// Opens the host the flags choose.
pub fn open(choice: &HostChoice, intent: Intent) -> anyhow::Result<Opened> {
    if let Some(dir) = &choice.sim_dir {
        let host = SimHost::open_or_create(dir, choice.sim_profile.as_deref())
            .map_err(sim_error)?
            .with_fault(choice.sim_fault.clone());
        return Ok(Opened::Sim(Box::new(host)));
    }
    if choice.sim_fault.is_some() {
        return Err(
            UsageError::new("--sim-fault needs a simulated host", "add --sim-host DIR").into(),
        );
    }
    #[cfg(windows)]
    {
        if choice.sim_profile.is_some() {
            return Err(UsageError::new(
                "--sim-profile needs --sim-host DIR on Windows",
                "add --sim-host DIR to work on a simulated host, or drop --sim-profile to use this machine",
            )
            .into());
        }
        let _ = intent;
        Ok(Opened::Windows(super::windows::WindowsHost::new()))
    }
    #[cfg(not(windows))]
    match intent {
        Intent::Read => {
            let profile = choice.sim_profile.as_deref().unwrap_or(DEFAULT_PROFILE);
            Ok(Opened::Sim(Box::new(
                SimHost::in_memory(profile).map_err(sim_error)?,
            )))
        }
        Intent::Change => Err(UsageError::new(
            "this command changes a Windows host, and this machine is not Windows",
            "run it on the Windows node; to rehearse here, add --sim-host DIR (and --sim-profile NAME for a new DIR), or --dry-run to see the plan",
        )
        .into()),
    }
}

fn sim_error(e: SimError) -> anyhow::Error {
    let names = PROFILES
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(", ");
    match e {
        SimError::UnknownProfile { .. } => {
            UsageError::new(e.to_string(), format!("profiles: {names}")).into()
        }
        SimError::ProfileMismatch { .. } => UsageError::new(
            e.to_string(),
            "drop --sim-profile to use the existing host, or pass a new --sim-host DIR",
        )
        .into(),
        SimError::Corrupt { .. } => UsageError::new(
            format!("{e}"),
            "pass an empty or new directory to --sim-host to create a simulated host",
        )
        .into(),
        SimError::Host(h) => anyhow::Error::new(h).context("cannot open the simulated host"),
    }
}

#[cfg(all(test, not(windows)))]
mod tests {
    use super::*;

    /// (Reading gets a throw-away host: tests/cluster `off_windows_without_sim_host_...`.)
    #[test]
    fn off_windows_changing_is_refused() {
        let err = open(&HostChoice::default(), Intent::Change)
            .err()
            .expect("refused");
        let usage = err.downcast_ref::<UsageError>().expect("usage error");
        assert!(
            usage
                .hint
                .as_deref()
                .is_some_and(|h| h.contains("--sim-host"))
        );
    }
}
