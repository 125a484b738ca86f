//! calicoctl-win's own metrics, kept under the install root (SYSTEM and Administrators only),
//! one file per writing process (CalicoNode, repair, the fleet DaemonSet's `service
//! keep-token`), and served by CalicoNode (`supervise::metrics_server`) in Prometheus' text
//! exposition format 0.0.4 (prometheus/docs `content/docs/instrumenting/exposition_formats.md`).

use crate::host::{Access, Host, HostResult};
use crate::installed::endpoints::Verdict;
use crate::layout::InstallRoot;
use std::collections::BTreeMap;

/// CalicoNode's file.
pub const NODE_FILE: &str = crate::layout::METRICS_FILES[0];
/// repair's file.
pub const REPAIR_FILE: &str = crate::layout::METRICS_FILES[1];
/// The fleet DaemonSet's `service keep-token`'s file: the renewals it made as the renewer of
/// last resort, and its scheduled verify's verdict (`--verify-every`).
pub const VERIFY_FILE: &str = crate::layout::METRICS_FILES[2];

pub const TOKEN_RENEWALS: &str = "calicoctl_win_token_renewals_total";
pub const TOKEN_REFUSALS: &str = "calicoctl_win_token_refusals_total";
pub const HNS_RESTARTS: &str = "calicoctl_win_hns_restarts_answered_total";
pub const REPAIRS: &str = "calicoctl_win_repairs_total";
pub const REPAIRED_ENDPOINTS: &str = "calicoctl_win_repaired_endpoints_total";
pub const ENDPOINT_FAULTS: &str = "calicoctl_win_endpoint_faults";
pub const REFUSED_CONNECTIONS: &str = "calicoctl_win_metrics_connections_refused_total";
pub const VERIFY_PASSED: &str = "calicoctl_win_verify_passed";
pub const VERIFY_TIMESTAMP: &str = "calicoctl_win_verify_last_run_timestamp_seconds";

/// The reasons of `REFUSED_CONNECTIONS` (`supervise::turn_away`): past the cap on all the
/// endpoint's connections, and past the cap on one address's. Each served from the start.
pub const REFUSED_REASONS: [&str; 2] = ["connections-cap", "per-source-cap"];

/// Every metric: its name, type and help, in the order served.
const METRICS: &[(&str, &str, &str)] = &[
    (
        TOKEN_RENEWALS,
        "counter",
        "calico-node tokens renewed: by CalicoNode, and by the fleet DaemonSet's renewer of last resort after the API server refused the token.",
    ),
    (
        TOKEN_REFUSALS,
        "counter",
        "Token renewals the API server refused (the token expired or revoked).",
    ),
    (
        HNS_RESTARTS,
        "counter",
        "HNS restarts CalicoNode answered by restarting Felix and kube-proxy.",
    ),
    (REPAIRS, "counter", "repair runs that removed endpoints."),
    (
        REPAIRED_ENDPOINTS,
        "counter",
        "HNS endpoints repair removed.",
    ),
    (
        REFUSED_CONNECTIONS,
        "counter",
        "Connections CalicoNode's metrics endpoint answered 503 busy and closed, past its caps, by reason.",
    ),
    (
        ENDPOINT_FAULTS,
        "gauge",
        "This host's HNS endpoints at fault at CalicoNode's last look, by verdict.",
    ),
    (
        VERIFY_PASSED,
        "gauge",
        "1 when the last scheduled verify of this node passed every check, 0 when it did not; as of calicoctl_win_verify_last_run_timestamp_seconds.",
    ),
    (
        VERIFY_TIMESTAMP,
        "gauge",
        "When the last scheduled verify of this node ran, in seconds since 1970.",
    ),
];

/// Samples by series: `name` or `name{verdict="..."}`.
pub type Samples = BTreeMap<String, u64>;

/// The most of a metrics file read: the files hold a few dozen series (a few KiB), and a
/// scrape reads them each, so a file grown past this is read as none, not into memory.
pub const MAX_FILE: u64 = 64 * 1024;

/// A file's samples; none when it is missing, unreadable or longer than `MAX_FILE` (metrics
/// never stop the node).
pub fn read(host: &dyn Host, root: &InstallRoot, file: &str) -> Samples {
    use std::io::Read;
    let Ok(Some(f)) = host.open_read(&root.path(file)) else {
        return Samples::default();
    };
    let mut bytes = Vec::new();
    match f.take(MAX_FILE + 1).read_to_end(&mut bytes) {
        Ok(n) if n as u64 <= MAX_FILE => serde_json::from_slice(&bytes).unwrap_or_default(),
        _ => Samples::default(),
    }
}

/// One update of a file at a time in this process. Each file has one writing process, whose
/// threads all update it (CalicoNode's: its metrics endpoint's accept thread, its condition
/// look, its token renewer and its HNS watch): read, changed and written by two at once, one
/// change would be lost, and a counter that goes back reads as a reset to Prometheus.
static UPDATES: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Reads `file`, changes its samples and writes them (atomically) when they changed, one
/// update at a time (`UPDATES`), and only where an install is: its record in the root (a count
/// after uninstall, CalicoNode's last or a repair run beside it, would otherwise make the root
/// again, a directory no record names).
fn update(
    host: &dyn Host,
    root: &InstallRoot,
    file: &str,
    change: impl FnOnce(&mut Samples),
) -> HostResult<()> {
    // A thread that panicked while it held the lock left no half-written file (writes are
    // atomic): the lock is taken on.
    let _one = UPDATES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut s = read(host, root, file);
    let before = s.clone();
    change(&mut s);
    if s == before || host.stat(&root.record())?.is_none() {
        return Ok(());
    }
    let text = serde_json::to_vec(&s).unwrap_or_default();
    host.write_file(&root.path(file), &text, Access::Secret)
        .map(drop)
}

/// Adds `by` to a counter of `file`, written atomically.
pub fn bump(
    host: &dyn Host,
    root: &InstallRoot,
    file: &str,
    name: &str,
    by: u64,
) -> HostResult<()> {
    update(host, root, file, |s| {
        *s.entry(name.to_owned()).or_default() += by;
    })
}

/// Adds `by` to a counter of `file` under the install root the registry names (install's
/// `InstallRoot` value); a failure is only returned: metrics never stop the node.
pub fn count(host: &dyn Host, file: &str, name: &str, by: u64) -> HostResult<()> {
    update_installed(host, file, |s| *s.entry(name.to_owned()).or_default() += by)
}

/// Keeps a scheduled verify's verdict and when it ran, in one write: a verdict is only as
/// current as its time says (a scrape compares it with `time()`).
pub fn record_verify(host: &dyn Host, passed: bool, at: i64) -> HostResult<()> {
    update_installed(host, VERIFY_FILE, |s| {
        s.insert(VERIFY_PASSED.to_owned(), u64::from(passed));
        s.insert(VERIFY_TIMESTAMP.to_owned(), u64::try_from(at).unwrap_or(0));
    })
}

/// `update` under the install root install wrote in the registry (its `InstallRoot` value);
/// nothing when there is none.
fn update_installed(
    host: &dyn Host,
    file: &str,
    change: impl FnOnce(&mut Samples),
) -> HostResult<()> {
    match super::calico_text(host, crate::layout::INSTALL_ROOT_VALUE)? {
        Some(root) => update(host, &InstallRoot::new(&root), file, change),
        None => Ok(()),
    }
}

/// Sets a gauge's series of one label to these values, dropping its other series.
pub fn set_gauge(
    host: &dyn Host,
    root: &InstallRoot,
    file: &str,
    name: &str,
    label: &str,
    values: &BTreeMap<String, u64>,
) -> HostResult<()> {
    update(host, root, file, |s| {
        s.retain(|k, _| k != name && !k.starts_with(&format!("{name}{{")));
        for (v, n) in values {
            s.insert(format!("{name}{{{label}=\"{v}\"}}"), *n);
        }
    })
}

/// Every writer's samples in the text format: a counter no one bumped yet reads 0.
pub fn exposition(host: &dyn Host, root: &InstallRoot) -> String {
    let mut all = read(host, root, NODE_FILE);
    for file in [REPAIR_FILE, VERIFY_FILE] {
        for (k, v) in read(host, root, file) {
            *all.entry(k).or_default() += v;
        }
    }
    // Each fault's series served from the start (0 until one is seen): a series that appears
    // only with its first fault gives `rate` and `absent` nothing to work on.
    for v in Verdict::FAULTS {
        all.entry(format!("{ENDPOINT_FAULTS}{{verdict=\"{}\"}}", v.word()))
            .or_insert(0);
    }
    for r in REFUSED_REASONS {
        all.entry(format!("{REFUSED_CONNECTIONS}{{reason=\"{r}\"}}"))
            .or_insert(0);
    }
    let mut out = String::new();
    for (name, kind, help) in METRICS {
        out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
        let series: Vec<_> = all
            .iter()
            .filter(|(k, _)| *k == name || k.starts_with(&format!("{name}{{")))
            .collect();
        if series.is_empty() && *kind == "counter" {
            out.push_str(&format!("{name} 0\n"));
        }
        for (k, v) in series {
            out.push_str(&format!("{k} {v}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::sim::SimHost;
    use crate::host::{Files, Registry};

    /// A host and its install root named under Calico's key, with its install record when
    /// `record`.
    fn installed(record: bool) -> (SimHost, InstallRoot) {
        let host = SimHost::in_memory("ws2022").expect("sim");
        let root = InstallRoot::new(r"C:\CalicoWindows");
        let named = crate::host::RegValue::Sz(root.to_string());
        host.reg_set(
            crate::layout::CALICO_KEY,
            crate::layout::INSTALL_ROOT_VALUE,
            &named,
        )
        .expect("reg");
        if record {
            let put = host.write_file(&root.record(), b"{}", Access::Normal);
            put.expect("record");
        }
        (host, root)
    }

    #[test]
    fn counters_add_up_across_writers_and_a_gauge_is_replaced() {
        let (host, root) = installed(true);
        bump(&host, &root, NODE_FILE, TOKEN_RENEWALS, 2).expect("bump");
        bump(&host, &root, REPAIR_FILE, REPAIRS, 1).expect("bump");
        let faults = BTreeMap::from([("stuck".to_owned(), 3)]);
        set_gauge(&host, &root, NODE_FILE, ENDPOINT_FAULTS, "verdict", &faults).expect("set");
        let one = BTreeMap::from([("stale".to_owned(), 1)]);
        set_gauge(&host, &root, NODE_FILE, ENDPOINT_FAULTS, "verdict", &one).expect("set");
        let text = exposition(&host, &root);
        for line in [
            "\ncalicoctl_win_token_renewals_total 2\n",
            "\ncalicoctl_win_repairs_total 1\n",
            "\ncalicoctl_win_token_refusals_total 0\n",
            "calicoctl_win_endpoint_faults{verdict=\"stale\"} 1\n",
            // Replaced: the stuck endpoints gone, their series back at 0.
            "calicoctl_win_endpoint_faults{verdict=\"stuck\"} 0\n",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
        assert_eq!(
            host.file_access(&root.path(NODE_FILE)).expect("access"),
            Some(Access::Secret)
        );
    }

    /// After a plain uninstall (the root and its record gone, Calico's key left as it was), a
    /// count by CalicoNode or repair writes nothing: it once made the install root again.
    #[test]
    fn a_count_after_uninstall_makes_no_install_root() {
        let (host, root) = installed(false);
        count(&host, NODE_FILE, TOKEN_RENEWALS, 1).expect("count");
        record_verify(&host, true, 1).expect("verify");
        let faults = BTreeMap::from([("stuck".to_owned(), 1)]);
        set_gauge(&host, &root, NODE_FILE, ENDPOINT_FAULTS, "verdict", &faults).expect("set");
        assert!(!host.dir_exists(root.as_str()).expect("exists"));
    }

    /// Every fault verdict's series is served from the start, at 0, and a verify's verdict
    /// comes with when it ran (a pass from days ago once looked current).
    #[test]
    fn zero_series_are_served_and_a_verify_verdict_carries_its_time() {
        let (host, root) = installed(true);
        let text = exposition(&host, &root);
        for v in Verdict::FAULTS {
            let line = format!(
                "\ncalicoctl_win_endpoint_faults{{verdict=\"{}\"}} 0\n",
                v.word()
            );
            assert!(text.contains(&line), "{line} in {text}");
        }
        assert!(!text.contains("\ncalicoctl_win_verify_passed "), "{text}");
        record_verify(&host, true, 1_700_000_000).expect("verify");
        let text = exposition(&host, &root);
        for line in [
            "\ncalicoctl_win_verify_passed 1\n",
            "\ncalicoctl_win_verify_last_run_timestamp_seconds 1700000000\n",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
    }

    /// Two of CalicoNode's threads updating its file at once (the accept thread counting a
    /// refusal, the renewer a renewal) both count: the second reads what the first wrote. The
    /// first holds its update open until the second's has begun, or a few seconds have passed
    /// (the second then waits for the first's to end, as it must).
    #[test]
    fn updates_at_once_lose_no_count() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let (host, root) = installed(true);
        let (first_in, second_in) = (AtomicBool::new(false), AtomicBool::new(false));
        std::thread::scope(|scope| {
            scope.spawn(|| {
                update(&host, &root, NODE_FILE, |s| {
                    first_in.store(true, Ordering::SeqCst);
                    let until = std::time::Instant::now() + std::time::Duration::from_secs(3);
                    while !second_in.load(Ordering::SeqCst) && std::time::Instant::now() < until {
                        std::thread::sleep(std::time::Duration::from_millis(5));
                    }
                    *s.entry(TOKEN_RENEWALS.to_owned()).or_default() += 1;
                })
                .expect("first");
            });
            while !first_in.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
            update(&host, &root, NODE_FILE, |s| {
                second_in.store(true, Ordering::SeqCst);
                *s.entry(TOKEN_RENEWALS.to_owned()).or_default() += 1;
            })
            .expect("second");
        });
        assert_eq!(read(&host, &root, NODE_FILE).get(TOKEN_RENEWALS), Some(&2));
    }

    /// A file past the cap is read as none, not whole: each scrape reads every file.
    #[test]
    fn a_file_past_the_cap_is_read_as_none() {
        let (host, root) = installed(false);
        let pad = " ".repeat(MAX_FILE as usize);
        let path = root.path(NODE_FILE);
        let small = format!("{{\"{TOKEN_RENEWALS}\": 3}}");
        host.write_file(&path, small.as_bytes(), Access::Secret)
            .expect("write");
        assert_eq!(read(&host, &root, NODE_FILE).get(TOKEN_RENEWALS), Some(&3));
        let big = format!("{{\"{TOKEN_RENEWALS}\": 3{pad}}}");
        host.write_file(&path, big.as_bytes(), Access::Secret)
            .expect("write");
        assert!(read(&host, &root, NODE_FILE).is_empty());
    }
}
