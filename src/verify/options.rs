//! What a `verify` run is asked to do, and its defaults.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// How long a policy may take to be enforced, and to be lifted.
pub const POLICY_WAIT: Duration = Duration::from_secs(30);
/// How long the pods may take to run once made: at most half the checks' window (run.rs).
pub const PODS_WAIT: Duration = Duration::from_secs(90);
/// How long the probe image may take to pull, outside `--timeout`: agnhost's Windows variant
/// is a few hundred MB, and the kubelet's back-off between failed pulls grows to 300 s
/// (kubernetes/kubernetes `pkg/kubelet/kubelet.go`, `MaxContainerBackOff`), so 10 minutes
/// hold one slow pull and a retry at the longest back-off.
pub const PULL_TIMEOUT: Duration = Duration::from_secs(600);
/// How long a network check keeps dialling until its first success: Felix and kube-proxy
/// program a new endpoint and its Service in seconds, not at once.
pub const SETTLE: Duration = Duration::from_secs(20);
/// How long one `/dial` may take through the proxy: netexec's own HTTP client gives up after
/// 5 s (`createHTTPClient`), so 10 s covers a dial that times out and the proxy's way; its
/// name lookup before the dial is not bounded by netexec (`net.ResolveTCPAddr`).
pub const DIAL_WITHIN: Duration = Duration::from_secs(10);

/// What the run is asked to do.
#[derive(Clone, Debug)]
pub struct Options {
    pub node: String,
    pub image: String,
    pub egress: Option<String>,
    pub timeout: Duration,
    pub keep_on_failure: bool,
    /// The namespace's random suffix.
    pub suffix: String,
    /// A namespace given to run in (made by `fleet rbac --identity verify`), instead of one of
    /// its own: shared.rs.
    pub namespace: Option<String>,
    /// The node under test may be cordoned (the fleet Plan's job: shared.rs).
    pub while_cordoned: bool,
    /// How long a policy may take to be enforced, and to be lifted (`POLICY_WAIT`).
    pub policy_wait: Duration,
    /// How long the pods may take to run (`PODS_WAIT`).
    pub pods_wait: Duration,
    /// How long the image pull may take, outside `timeout` (`PULL_TIMEOUT`).
    pub pull_timeout: Duration,
    /// How long a network check dials until its first success (`SETTLE`).
    pub settle: Duration,
    /// How long one `/dial` through the proxy may take (`DIAL_WITHIN`).
    pub dial_within: Duration,
    /// Set by Ctrl-C or a termination signal: the run stops where it is and cleans up.
    pub interrupted: Arc<AtomicBool>,
}

impl Options {
    /// The defaults for `node`: agnhost, no egress, 120 s, cleaned up always, a random suffix.
    pub fn for_node(node: &str) -> Self {
        Self {
            node: node.to_owned(),
            image: super::image::AGNHOST.to_owned(),
            egress: None,
            timeout: Duration::from_secs(120),
            keep_on_failure: false,
            suffix: suffix(),
            namespace: None,
            while_cordoned: false,
            policy_wait: POLICY_WAIT,
            pods_wait: PODS_WAIT,
            pull_timeout: PULL_TIMEOUT,
            settle: SETTLE,
            dial_within: DIAL_WITHIN,
            interrupted: Default::default(),
        }
    }
}

/// A random suffix for the namespace: no RNG crate, the clock's nanoseconds and the process id
/// in base 36.
pub fn suffix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let mut n = nanos ^ (u128::from(std::process::id()) << 64);
    let mut out = String::new();
    for _ in 0..8 {
        let d = (n % 36) as u32;
        out.push(char::from_digit(d, 36).unwrap_or('0'));
        n /= 36;
    }
    out
}
