//! The finding's shape: a stable code (`Code`), its subject, one sentence and its remedy
//! (`Said`, the shape preflight's checks share).

use serde::Serialize;

/// `Code` and `Code::ALL` (every code, each once) from one list.
macro_rules! codes {
    ($($code:ident,)*) => {
        /// What a finding is about, by a stable code (JSON `code`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
        #[serde(rename_all = "kebab-case")]
        pub enum Code {
            $($code,)*
        }

        impl Code {
            /// Every code, for the documentation's completeness test.
            pub const ALL: &[Code] = &[$(Code::$code,)*];
        }
    };
}

// Each code's meaning and remedy: docs/findings.md (`docs_findings_lists_every_code_with_its_remedy`
// keeps the two in step).
codes! {
    UnderWay,
    ServiceNotRunning,
    ServiceDrift,
    RouteMissing,
    NetworkMissing,
    EndpointStuck,
    EndpointStale,
    EndpointRemoteStale,
    EndpointOldAddress,
    PodNoEndpoint,
    EndpointUnknown,
    EndpointsUnjudged,
    HnsRestartFailed,
    FileDrift,
    FelixUnhealthy,
    VniHns,
    VniCluster,
    NodeNotReady,
    NodeCordoned,
    ClusterUnreadable,
    IpamCapacity,
    Token,
    KubeProxy,
    DirAccess,
    AdminKubeconfig,
    HostUnreadable,
    AddressMismatch,
    AdapterDrift,
    NotInstalled,
    ApiGroup,
    FelixMetricsRule,
    MetricsEndpointDown,
    MetricsNotScraped,
    EndpointStateUnknown,
    NodeValueMalformed,
    CalicoDegraded,
    ConditionUnknown,
    ConditionMissing,
    CodesUnknown,
    ConfigNotFleets,
    TrafficFails,
    TrafficUnjudged,
    DiagsReviewRefused,
    MetricsPortExcluded,
    TrafficCni,
    TrafficScheduling,
    TrafficImage,
    TrafficOverlay,
    TrafficControlPlane,
    TrafficKubeProxy,
    TrafficDns,
    TrafficPolicy,
    TrafficFirewall,
    TrafficEgress,
    NodeBeingRemoved,
    VerifyLeaseLost,
}

impl Code {
    /// The code's word, as JSON has it.
    pub fn word(self) -> String {
        crate::installed::endpoints::word_of(self)
    }
}

/// A sentence about the node and what fixes it: the one shape preflight's checks
/// (`checks::Check`) and the node's findings share, with one way to show it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Said {
    /// One sentence: what is so, never what to do about it.
    pub message: String,
    /// What fixes it: every finding has one; a check that passed or was skipped has none.
    pub remedy: Option<String>,
}

impl std::fmt::Display for Said {
    /// The sentence, then its fix on a line of its own, indented by the width asked for
    /// (`{:4}`): as status lists its findings and preflight its checks.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)?;
        match &self.remedy {
            Some(r) => write!(f, "\n{:pad$}fix: {r}", "", pad = f.width().unwrap_or(0)),
            None => Ok(()),
        }
    }
}

/// One thing wrong with Calico on this node: its code and subject, its sentence and its fix.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub code: Code,
    /// What it is about: a service, a network, an endpoint, a file, the node, the token.
    pub subject: String,
    #[serde(flatten)]
    pub said: Said,
}

impl Finding {
    /// A finding of `code` about `subject`: its sentence and what fixes it.
    pub fn new(
        code: Code,
        subject: impl Into<String>,
        message: impl Into<String>,
        remedy: impl Into<String>,
    ) -> Self {
        Self {
            code,
            subject: subject.into(),
            said: Said {
                message: message.into(),
                remedy: Some(remedy.into()),
            },
        }
    }

    /// A finding of `code` whose fix is the code's own (`Code::remedy`).
    pub fn fixed(code: Code, subject: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(code, subject, message, code.remedy())
    }
}

impl std::ops::Deref for Finding {
    type Target = Said;
    fn deref(&self) -> &Said {
        &self.said
    }
}

impl std::fmt::Display for Finding {
    /// The sentence with its code in brackets, then its fix (`Said`'s form).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tagged = Said {
            message: format!("{} [{}]", self.message, self.code.word()),
            remedy: self.remedy.clone(),
        };
        std::fmt::Display::fmt(&tagged, f)
    }
}
