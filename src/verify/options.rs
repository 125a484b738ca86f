//! What a `verify` run is asked to do, and its defaults.

use crate::duration::Stop;
use crate::k8s_name::NodeName;
use std::time::Duration;

/// How long a run's Lease holds without a renewal: the longest a killed run blocks the next.
pub const LEASE: Duration = Duration::from_secs(60);
/// How often a live run renews its lease: four renewals a lease, so that one or two refused
/// or slow calls do not lose it.
pub const RENEW: Duration = Duration::from_secs(15);
/// How many renewals in a row may fail before the lease would run out before the next: the
/// lease holds `LEASE / RENEW` renewals, the last of which would be too late.
pub const REFUSALS_BEFORE_LOST: u32 = (LEASE.as_secs() / RENEW.as_secs()) as u32 - 1;
const _: () = assert!(REFUSALS_BEFORE_LOST >= 1);
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
/// The longest `--timeout` accepted.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// The longest `--pull-timeout` accepted.
pub const MAX_PULL_TIMEOUT: Duration = Duration::from_secs(15 * 60);
/// What a run may take beyond `--timeout` and its pull: the calls in flight at its deadline.
const BEYOND: Duration = Duration::from_secs(5 * 60);
/// A run's objects without a Lease older than this are a killed run's, and the next run
/// deletes them: no live run lasts as long, since `--timeout` and `--pull-timeout` are capped.
pub const LEFTOVER_AGE: Duration =
    Duration::from_secs(MAX_TIMEOUT.as_secs() + MAX_PULL_TIMEOUT.as_secs() + BEYOND.as_secs());
const _: () = assert!(PULL_TIMEOUT.as_secs() <= MAX_PULL_TIMEOUT.as_secs());
/// The longest the sweep waits for a Terminating leftover to go once it deleted the pods
/// that held it (the namespace controller's resync is 5 minutes, which no run waits out).
pub const GONE_WAIT: Duration = Duration::from_secs(5);
/// The cluster DNS domain the probes' names are asked in when none is given: kubelet's
/// default `clusterDomain`.
pub const CLUSTER_DOMAIN: &str = "cluster.local";

/// `--timeout`: a duration of at most `MAX_TIMEOUT`.
pub fn timeout_flag(s: &str) -> Result<Duration, String> {
    capped(s, MAX_TIMEOUT)
}

/// `--pull-timeout`: a duration of at most `MAX_PULL_TIMEOUT`.
pub fn pull_timeout_flag(s: &str) -> Result<Duration, String> {
    capped(s, MAX_PULL_TIMEOUT)
}

fn capped(s: &str, most: Duration) -> Result<Duration, String> {
    let d = crate::duration::parse(s)?;
    if d > most {
        return Err(format!(
            "{s} is longer than {}m, the most a run may take: a run's leftovers are deleted by the next run once {}m old",
            most.as_secs() / 60,
            LEFTOVER_AGE.as_secs() / 60
        ));
    }
    if d.is_zero() {
        return Err(format!("{s} is no time at all"));
    }
    Ok(d)
}

/// `--image` (and the fleet's `--verify-image`, which lands on a `cmd.exe` command line): an
/// image reference's characters only (letters, digits, `.`, `_`, `-`, `/`, `:`, `@`), at most
/// 255, so that nothing in it is read by a shell.
pub fn image_flag(s: &str) -> Result<String, String> {
    let ok = !s.is_empty()
        && s.len() <= 255
        && !s.starts_with(['-', '/', ':', '@'])
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-/:@".contains(&b));
    if ok {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "{s:.80} is not an image reference like registry.example/agnhost:2.52"
        ))
    }
}

/// `--egress`: `HOST:PORT`, the host an IPv4 address or a DNS name (at most 253
/// characters, labels of letters, digits and hyphens), the port 1 to 65535.
pub fn egress_flag(s: &str) -> Result<String, String> {
    let bad = || format!("{s:.80} is not HOST:PORT (an IPv4 address or a DNS name, then a port)");
    let (host, port) = s.rsplit_once(':').ok_or_else(bad)?;
    let port_ok = port.len() <= 5
        && port.bytes().all(|b| b.is_ascii_digit())
        && port.parse::<u16>().is_ok_and(|p| p > 0);
    let name_ok = dns_name(host, |b| b.is_ascii_alphanumeric());
    let ip_ok = host.parse::<std::net::Ipv4Addr>().is_ok();
    // A name of digits and dots alone is an address that did not parse.
    let all_digits = host.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    if port_ok && (ip_ok || (name_ok && !all_digits)) {
        Ok(s.to_owned())
    } else {
        Err(bad())
    }
}

/// `--cluster-domain`: a DNS domain (at most 253 characters, lower-case labels).
pub fn domain_flag(s: &str) -> Result<String, String> {
    if dns_name(s, |b| b.is_ascii_lowercase() || b.is_ascii_digit()) {
        Ok(s.to_owned())
    } else {
        Err(format!("{s:.80} is not a DNS domain like cluster.local"))
    }
}

/// A DNS name: at most 253 characters, labels of at most 63 of `letter` and inner hyphens.
fn dns_name(s: &str, letter: fn(&u8) -> bool) -> bool {
    s.len() <= 253
        && s.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes().all(|b| b == b'-' || letter(&b))
        })
}

/// What the run is asked to do.
#[derive(Clone, Debug)]
pub struct Options {
    pub node: NodeName,
    pub image: String,
    pub egress: Option<String>,
    /// The cluster's DNS domain (kubelet's `clusterDomain`): the names dialled end in it.
    pub cluster_domain: String,
    /// Wait, within `timeout`, for the node to be Ready and its Calico services too (its
    /// `CalicoWindowsReady` condition): `install --verify`, `reconfigure --verify`.
    pub wait_ready: bool,
    /// The wait takes `CalicoWindowsReady` only from a heartbeat after this second (unix
    /// seconds, the node's clock): the command's start (`ready::written_since`).
    pub calico_since: Option<i64>,
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
    /// How often the run's Lease is renewed: `RENEW`, four times a lease; shorter only in tests.
    pub renew: Duration,
    /// Requested by Ctrl-C or a termination signal: the run stops where it is and cleans up.
    /// Every wait of the run watches it (`duration::poll_until`).
    pub stop: Stop,
    /// What the run's waits say (`duration::poll_until`), for the command to show (`-v`).
    pub said: Said,
}

/// The lines a run's waits say, kept in order (at most `Said::MOST`) for the command to show
/// once the run is over.
#[derive(Clone, Debug, Default)]
pub struct Said(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl Said {
    const MOST: usize = 400;

    pub fn say(&self, line: &str) {
        let mut l = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if l.len() < Self::MOST {
            l.push(line.to_owned());
        }
    }

    /// The lines said so far, taken.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Options {
    /// The defaults for `node`: agnhost, no egress, 120 s, cleaned up always, a random suffix.
    pub fn for_node(node: &NodeName) -> Self {
        Self {
            node: node.clone(),
            image: super::image::AGNHOST.to_owned(),
            egress: None,
            cluster_domain: CLUSTER_DOMAIN.to_owned(),
            wait_ready: false,
            calico_since: None,
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
            renew: RENEW,
            stop: Stop::new(),
            said: Said::default(),
        }
    }

    /// The waits `by` times shorter (`--sim-pace`, for tests against a scripted API server,
    /// whose dataplane is programmed at once): the settle, policy, pods and dial windows.
    pub fn paced(self, by: Option<u32>) -> Self {
        let by = by.unwrap_or(1);
        Self {
            policy_wait: self.policy_wait / by,
            pods_wait: self.pods_wait / by,
            settle: self.settle / by,
            dial_within: self.dial_within / by,
            ..self
        }
    }

    /// The run's names (`objects::Names`): its id the random suffix.
    pub fn names(&self) -> super::objects::Names {
        super::objects::Names::new(&self.suffix, self.namespace.is_some())
    }
}

/// A random suffix for the run's names: 8 base-36 characters from the operating system's
/// random bytes.
pub fn suffix() -> String {
    let mut bytes = [0u8; 8];
    // Without random bytes (none of the systems this runs on), the suffix is still made.
    let _ = getrandom::fill(&mut bytes);
    bytes
        .iter()
        .map(|b| char::from_digit(u32::from(*b) % 36, 36).unwrap_or('0'))
        .collect()
}
