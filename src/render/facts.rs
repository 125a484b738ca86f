//! The facts about the host that rendering depends on.

use std::fmt;
use std::str::FromStr;

/// A Windows build number with its update revision (UBR), like `17763.1432`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct OsBuild {
    pub build: u32,
    pub ubr: u32,
}

impl OsBuild {
    /// Windows Server 2022 (LTSC), assumed when the node's own build is not known.
    pub const SERVER_2022: OsBuild = OsBuild {
        build: 20348,
        ubr: 0,
    };

    /// Whether kube-proxy and the CNI can use loopback DSR: Server 2019 from build
    /// 17763.1432, and every release from 1903 (18317) on (Calico's `Get-IsDSRSupported`).
    pub fn supports_dsr(self) -> bool {
        (self.build == 17763 && self.ubr >= 1432) || self.build >= 18317
    }
}

impl FromStr for OsBuild {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "{s:?} is not a Windows build: write BUILD or BUILD.UBR, like 17763.1432 or 20348"
            )
        };
        let (build, ubr) = s.split_once('.').unwrap_or((s, "0"));
        Ok(Self {
            build: build.parse().map_err(|_| bad())?,
            ubr: ubr.parse().map_err(|_| bad())?,
        })
    }
}

impl fmt::Display for OsBuild {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.build, self.ubr)
    }
}

/// Host facts that rendering needs.
#[derive(Clone, Debug)]
pub struct HostFacts {
    pub os_build: OsBuild,
    /// The node is on AKS (an HNS network named `azure`, as Calico's `GetPlatformType` tells).
    pub aks: bool,
    /// The Calico release installed, when known: the built-in CNI template gives what that
    /// release's own template gives (its `cniVersion`).
    pub calico_version: Option<crate::release::version::CalicoVersion>,
    /// The `cniVersion` of the release's own `cni.conf.template`, when it was read (install,
    /// and what the install record kept since): it wins over the table by release.
    pub release_cni_version: Option<String>,
    /// The adapter the External network's vSwitch binds (`host::uplink`), when one is named.
    pub uplink: Option<String>,
    /// The API group the cluster needs Calico's components pinned to, as `apiVersion` says
    /// it (`cluster::calico_api::Locks::pin`), when it needs one.
    pub calico_api_group: Option<&'static str>,
}

impl HostFacts {
    /// The pin, where the release reads it (`CalicoVersion::reads_api_group_pin`; an unknown
    /// release is given it: one that cannot read it ignores an unknown variable and field).
    pub fn api_group_pin(&self) -> Option<&'static str> {
        self.calico_api_group.filter(|_| {
            self.calico_version
                .as_ref()
                .is_none_or(crate::release::version::CalicoVersion::reads_api_group_pin)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dsr_follows_calicos_build_gate() {
        let b = |s: &str| s.parse::<OsBuild>().expect("build");
        // 17763.1000 (dsr-off), 17763.1432 and 20348.169 are tests/golden's.
        assert!(!b("17763.1431").supports_dsr());
        assert!(!b("17134.1").supports_dsr());
        assert!(b("18362").supports_dsr());
        assert!("2022".parse::<OsBuild>().is_ok_and(|o| !o.supports_dsr()));
        assert!("x.1".parse::<OsBuild>().is_err());
    }
}
