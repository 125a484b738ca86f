//! What can leave the metrics ports other than the config says: a firewall rule Felix made for
//! its Prometheus port, open to every address, CalicoNode's endpoint not listening, and its
//! rule admitting no scraper.

use super::judge::{Code, Finding};
use crate::host::listen::ListenRefusal;
use crate::host::{FirewallRule, Host, HostResult, Protocol};
use crate::installed::{calico_json, keep_or_forget};
use crate::layout::{DIAGS_REVIEW_VALUE, METRICS_ENDPOINT_VALUE, METRICS_SCRAPES_VALUE};
use serde::{Deserialize, Serialize};

/// CalicoNode's metrics endpoint, not listening: kept in Calico's registry key
/// (`MetricsEndpoint`, JSON) from its first refused try until it listens, for status.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndpointDown {
    pub port: u16,
    /// Why the last try failed, as the system said it.
    pub error: String,
    /// When the first try failed, in seconds since 1970.
    pub since: i64,
    /// Why, as the bind's error told it (a record without it: not told).
    #[serde(default = "not_told")]
    pub refusal: ListenRefusal,
}

fn not_told() -> ListenRefusal {
    ListenRefusal::Other
}

/// What CalicoNode keeps of its endpoint, if it is down (a value that does not read is none).
pub fn endpoint_down(host: &dyn Host) -> Option<EndpointDown> {
    calico_json(host, METRICS_ENDPOINT_VALUE).ok().flatten()
}

/// Keeps that the endpoint is down, or forgets it (written only when it changes).
pub fn keep_endpoint_down(host: &dyn Host, down: Option<&EndpointDown>) -> HostResult<()> {
    if endpoint_down(host).as_ref() == down {
        return Ok(());
    }
    keep_or_forget(host, METRICS_ENDPOINT_VALUE, down)
}

/// CalicoNode's endpoint is down: which port, since when, why; a port another program holds
/// (named by its pid, address and family when the host could tell) and one in an excluded
/// range each with its own remedy.
pub fn endpoint(d: &EndpointDown) -> Finding {
    let port = d.port;
    let since = crate::duration::time_text(d.since);
    let cannot = format!(
        "CalicoNode cannot listen on TCP port {port} (metrics.port) since {since}: {}",
        d.error
    );
    let again = "it tries again, waiting up to a minute between tries";
    if d.refusal == ListenRefusal::Excluded {
        return Finding::fixed(
            Code::MetricsPortExcluded,
            "metrics",
            format!(
                "{cannot}; no program listens on it, and Windows keeps it from every program (an excluded port range, as Hyper-V and WinNAT reserve); {again}"
            ),
        );
    }
    let (holder, remedy) = match (&d.refusal, d.refusal.holder()) {
        (ListenRefusal::Held { pid: Some(pid), .. }, Some(holder)) => (
            format!("; {holder}"),
            format!(
                "stop process {pid}, which listens on port {port} ('Get-Process -Id {pid}' names it), or set another metrics.port and run 'calicoctl-win reconfigure'"
            ),
        ),
        _ => (
            String::new(),
            format!(
                "stop the program that listens on port {port} ('Get-NetTCPConnection -LocalPort {port} -State Listen' names its OwningProcess), or set another metrics.port and run 'calicoctl-win reconfigure'"
            ),
        ),
    };
    let said = format!("{cannot}{holder}; {again}");
    Finding::new(Code::MetricsEndpointDown, "metrics", said, remedy)
}

/// CalicoNode's endpoint, listening: since when, and when a connection from beyond the node
/// last came through its firewall rule (`MetricsScrapes`, JSON, in Calico's registry key),
/// for status to tell a rule that admits no scraper from one that does.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scrapes {
    /// When the endpoint last began to listen, in seconds since 1970.
    pub listening_since: i64,
    /// When the last connection from another address than the loopback's was accepted.
    pub last_connection: Option<i64>,
}

/// How long a connection's time may be kept unwritten: a scrape every 15 s (Prometheus'
/// default scrape_interval is 1m; 15 s is the common setting) writes once a minute.
const SCRAPE_WRITE_EVERY: i64 = 60;

/// What CalicoNode keeps of its endpoint's connections (a value that does not read is none).
pub fn scrapes(host: &dyn Host) -> Option<Scrapes> {
    calico_json(host, METRICS_SCRAPES_VALUE).ok().flatten()
}

/// The endpoint listens from `now`: kept, with the last connection an earlier run saw.
pub fn keep_listening(host: &dyn Host, now: i64) -> HostResult<()> {
    let last_connection = scrapes(host).and_then(|s| s.last_connection);
    let listening = Scrapes {
        listening_since: now,
        last_connection,
    };
    crate::installed::keep_json(host, METRICS_SCRAPES_VALUE, &listening)
}

/// The endpoint accepted a connection from `peer` at `now`: kept when it came from beyond the
/// node and the time kept is a minute old or more.
pub fn keep_connection(host: &dyn Host, peer: std::net::IpAddr, now: i64) -> HostResult<()> {
    if peer.is_loopback() {
        return Ok(());
    }
    let kept = scrapes(host);
    if kept
        .as_ref()
        .and_then(|s| s.last_connection)
        .is_some_and(|t| now - t < SCRAPE_WRITE_EVERY)
    {
        return Ok(());
    }
    let scraped = Scrapes {
        listening_since: kept.map_or(now, |s| s.listening_since),
        last_connection: Some(now),
    };
    crate::installed::keep_json(host, METRICS_SCRAPES_VALUE, &scraped)
}

/// How long an endpoint may listen with no connection before status says its rule admits no
/// scraper: an hour, many scrape intervals.
pub const UNSCRAPED_AFTER: i64 = 3600;

/// The endpoint has listened for `UNSCRAPED_AFTER` with no connection in that time, while a
/// Service for a Prometheus to scrape the nodes through (`service`, `NS/NAME`) exists: the rule
/// admits no scraper. A pod's scrape arrives from its node's address where its pool has
/// natOutgoing (calico v3.32.1 felix/rules/nat.go `makeNATOutgoingRuleIPTables`).
pub fn unscraped(s: &Scrapes, now: i64, port: u16, service: &str) -> Option<Finding> {
    let quiet_since = s.last_connection.unwrap_or(s.listening_since);
    if now - s.listening_since < UNSCRAPED_AFTER || now - quiet_since < UNSCRAPED_AFTER {
        return None;
    }
    let last = s.last_connection.map_or_else(
        || {
            format!(
                "since it began to listen at {}",
                crate::duration::time_text(s.listening_since)
            )
        },
        |t| format!("since {}", crate::duration::time_text(t)),
    );
    Some(Finding::fixed(
        Code::MetricsNotScraped,
        "metrics",
        format!(
            "no scraper has reached CalicoNode's metrics endpoint (TCP port {port}) {last}, while the Service {service} is there to scrape it through: its firewall rule admits metrics.source_ranges only, and a scrape from a pod comes from its node's address where the pod's IP pool has natOutgoing"
        ),
    ))
}

/// The API server refused CalicoNode the TokenReview of a `GET /diags` (403): kept in Calico's
/// registry key (`DiagsReviewRefused`, JSON) from the first refusal until a review is answered;
/// meanwhile every `GET /diags` is refused (never served without its token reviewed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiagsReviewRefused {
    /// The API server's refusal, as it said it.
    pub error: String,
    /// When it first refused, in seconds since 1970.
    pub since: i64,
}

/// What CalicoNode keeps of a refused review, if any (a value that does not read is none).
pub fn diags_review_refused(host: &dyn Host) -> Option<DiagsReviewRefused> {
    calico_json(host, DIAGS_REVIEW_VALUE).ok().flatten()
}

/// Keeps that reviews are refused, or forgets it (written only when it changes; `since` kept
/// from the first refusal).
pub fn keep_diags_review_refused(host: &dyn Host, error: Option<&str>) -> HostResult<()> {
    let kept = diags_review_refused(host);
    let refused = error.map(|e| DiagsReviewRefused {
        error: e.chars().take(1000).collect(),
        since: kept.as_ref().map_or_else(crate::duration::now, |k| k.since),
    });
    if refused.as_ref().map(|r| &r.error) == kept.as_ref().map(|k| &k.error) {
        return Ok(());
    }
    keep_or_forget(host, DIAGS_REVIEW_VALUE, refused.as_ref())
}

/// CalicoNode may not review the tokens of `GET /diags`: since when, and what the server said.
pub fn diags_review(d: &DiagsReviewRefused) -> Finding {
    Finding::fixed(
        Code::DiagsReviewRefused,
        "metrics",
        format!(
            "CalicoNode refuses every GET /diags (metrics.diags) since {}: the API server refused it the TokenReview of their tokens: {}",
            crate::duration::time_text(d.since),
            d.error
        ),
    )
}

/// The rule Felix makes for its Prometheus port, inbound TCP from any address (calico v3.32.1
/// libcalico-go/lib/winutils/winutils.go `MaybeConfigureWindowsFirewallRules`), only inside a
/// HostProcess container: one the operator's Felix left before `migrate` stays for good.
pub const FELIX_RULE: &str = "Calico Prometheus Ports (calico-managed rule)";

/// Felix's rule, when it lets every address reach its port: named, never removed (not ours);
/// the remedy removes it by its exact name.
pub fn felix_rule(rule: Option<&FirewallRule>) -> Option<Finding> {
    let r = rule.filter(|r| {
        r.name == FELIX_RULE
            && r.opens(Protocol::Tcp, r.local_port)
            && r.remote_addresses.is_empty()
    })?;
    Some(Finding::new(
        Code::FelixMetricsRule,
        "firewall",
        format!(
            "the firewall rule '{FELIX_RULE}' lets every address reach TCP port {}: a Felix in a HostProcess container (the operator's) made it with windowsManageFirewallRules Enabled, and no Felix calicoctl-win runs removes it",
            r.local_port
        ),
        format!(
            "if no HostProcess Felix runs on this node any more: Remove-NetFirewallRule -DisplayName '{FELIX_RULE}' (calicoctl-win's own rules open the metrics ports to metrics.source_ranges only)"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn felix_made(port: u16) -> FirewallRule {
        FirewallRule {
            name: FELIX_RULE.into(),
            description: crate::host::firewall::MARKER.into(),
            protocol: Protocol::Tcp,
            direction: crate::host::Direction::In,
            program: None,
            local_port: port,
            allow: true,
            enabled: true,
            profiles: crate::host::ALL_PROFILES,
            remote_addresses: Vec::new(),
            unset: Default::default(),
        }
    }

    /// Felix's rule open to every address is named with its remedy (tests/lifecycle
    /// `status_names_a_felix_rule_open_to_every_address_and_keeps_it`); scoped by an
    /// administrator, disabled, or another rule: nothing to say.
    #[test]
    fn felix_s_rule_open_to_every_address_is_named_and_no_other() {
        assert!(felix_rule(Some(&felix_made(9091))).is_some());
        let scoped = FirewallRule {
            remote_addresses: vec!["10.0.0.0/8".into()],
            ..felix_made(9091)
        };
        let disabled = FirewallRule {
            enabled: false,
            ..felix_made(9091)
        };
        let other = FirewallRule {
            name: "Calico Prometheus Ports".into(),
            ..felix_made(9091)
        };
        for r in [scoped, disabled, other] {
            assert_eq!(felix_rule(Some(&r)), None, "{r:?}");
        }
        assert_eq!(felix_rule(None), None);
    }

    /// The endpoint's listening and its connections from beyond the node are kept (the
    /// loopback's never, a connection within a minute of the last kept not written again);
    /// status says the rule admits no scraper only past an hour of listening with none in
    /// that hour, naming the Service (nothing was kept: a rule that admitted no scraper and
    /// one that did looked alike).
    #[test]
    fn an_endpoint_no_scraper_reached_in_an_hour_is_told_from_a_scraped_one() {
        let host = crate::host::sim::SimHost::in_memory("ws2022").expect("sim");
        let t0 = 1_700_000_000;
        keep_listening(&host, t0).expect("keep");
        keep_connection(&host, [127, 0, 0, 1].into(), t0 + 10).expect("keep");
        let kept = scrapes(&host).expect("kept");
        assert_eq!(kept.last_connection, None, "the loopback is no scraper");
        keep_connection(&host, [10, 0, 0, 7].into(), t0 + 20).expect("keep");
        keep_connection(&host, [10, 0, 0, 7].into(), t0 + 50).expect("keep");
        assert_eq!(
            scrapes(&host).expect("kept").last_connection,
            Some(t0 + 20),
            "written at most once a minute"
        );
        keep_connection(&host, [10, 0, 0, 7].into(), t0 + 90).expect("keep");
        let kept = scrapes(&host).expect("kept");
        assert_eq!(
            (kept.listening_since, kept.last_connection),
            (t0, Some(t0 + 90))
        );
        // A restart keeps the last connection, listening anew.
        keep_listening(&host, t0 + 100).expect("keep");
        let kept = scrapes(&host).expect("kept");
        assert_eq!(
            (kept.listening_since, kept.last_connection),
            (t0 + 100, Some(t0 + 90))
        );
        let svc = "system-upgrade/calicoctl-win-metrics";
        // Listening less than an hour: nothing to say (never scraped, scraped within the hour
        // and an hour ago: tests/lifecycle
        // `status_tells_an_endpoint_no_scraper_reaches_from_a_scraped_one`).
        assert_eq!(unscraped(&kept, t0 + 100 + 3599, 9095, svc), None);
        let found = unscraped(&kept, t0 + 100 + 3600, 9095, svc).expect("a finding");
        assert_eq!(found.code, Code::MetricsNotScraped);
        for said in ["TCP port 9095", svc, "natOutgoing"] {
            assert!(found.message.contains(said), "{said}: {found}");
        }
    }

    /// A refused review is kept from its first time, the last error said. (Kept and forgotten
    /// once a review is answered: supervise
    /// `a_request_without_a_token_for_this_node_is_401_before_the_bundles_slot`; said by status:
    /// tests/lifecycle `status_says_a_refused_diags_review_as_no_problem`.)
    #[test]
    fn a_refused_diags_review_is_kept_from_its_first_time() {
        let host = crate::host::sim::SimHost::in_memory("ws2022").expect("sim");
        keep_diags_review_refused(&host, Some("403 forbidden")).expect("keep");
        let first = diags_review_refused(&host).expect("kept");
        keep_diags_review_refused(&host, Some("403 still forbidden")).expect("keep");
        let kept = diags_review_refused(&host).expect("kept");
        assert_eq!(
            (kept.since, kept.error.as_str()),
            (first.since, "403 still forbidden")
        );
    }

    /// A port a listener holds names its pid and says to stop it; a port in an excluded range
    /// (no listener: WSAEACCES) says so and gives the code's remedy, never "stop the program
    /// that listens" (there is none); a record kept before the refusal was, by its words.
    /// (Kept while down, forgotten once listening: lifecycle
    /// `calico_node_tries_a_held_metrics_port_again_and_says_so_until_it_listens`.)
    #[test]
    fn a_held_port_names_its_process_and_an_excluded_one_its_ranges() {
        let down = |refusal| EndpointDown {
            port: 9095,
            error: "bind TCP port 9095: denied (os error 10013)".into(),
            since: 1_700_000_000,
            refusal,
        };
        let held = |at: Option<&str>| ListenRefusal::Held {
            pid: Some(4242),
            at: at.map(|a| a.parse().expect("addr")),
        };
        let old = || -> EndpointDown {
            serde_json::from_str(r#"{"port":9095,"error":"in use","since":1}"#).expect("old")
        };
        let (busy, ex) = (Code::MetricsEndpointDown, Code::MetricsPortExcluded);
        let (pid, stop) = ("process 4242 listens on it", "stop process 4242");
        // A dual-stack listener on IPv6's every address: by its address and family.
        let (v6, v6_said) = (
            held(Some("[::]:9095")),
            format!("{pid} at [::]:9095 (IPv6)"),
        );
        for (found, code, said, fix) in [
            (down(held(None)), busy, pid, stop),
            (down(v6), busy, &v6_said, stop),
            (
                down(ListenRefusal::Excluded),
                ex,
                "no program listens on it",
                ex.remedy(),
            ),
            (old(), busy, "in use", "-LocalPort 9095"),
        ]
        .map(|(d, code, said, fix)| (endpoint(&d), code, said, fix))
        {
            let remedy = found.remedy.as_deref().unwrap_or_default();
            assert_eq!(found.code, code, "{found}");
            assert!(found.message.contains(said), "{said}: {found}");
            assert!(remedy.contains(fix), "{found}");
        }
        let fix = endpoint(&down(ListenRefusal::Excluded)).said.remedy;
        assert_eq!(fix.as_deref(), Some(ex.remedy()));
        let fix = fix.unwrap_or_default();
        assert!(fix.contains("excludedportrange") && !fix.contains("stop the program"));
        let kept = endpoint(&old());
        let remedy = kept.remedy.as_deref().unwrap_or_default();
        assert!(kept.message.contains("since") && remedy.contains("metrics.port"));
    }
}
