//! Opt-in metrics on the simulated host: a firewall rule per metrics port, scoped to the
//! configured sources, kept in the install record, changed with the range and removed by
//! uninstall.

use crate::support::Node;
use serde_json::{Value, json};

/// The simulated host's metrics rules: (name, port, remote addresses), by name.
fn metrics_rules(s: &Node) -> Vec<(String, u64, Value)> {
    let state = s.state();
    let mut out: Vec<_> = state["firewall"]
        .as_object()
        .expect("firewall")
        .values()
        .filter(|r| {
            r["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("Calico metrics"))
        })
        .map(|r| {
            (
                r["name"].as_str().unwrap_or_default().to_owned(),
                r["local_port"].as_u64().unwrap_or_default(),
                r["remote_addresses"].clone(),
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn metrics_ports_open_only_to_the_source_range_and_uninstall_closes_them() {
    let s = Node::healthy()
        .created()
        .serving("3.30.2", "calico-node.exe")
        .build();
    let on = [
        "--set",
        "metrics.enabled=true",
        "--set",
        "metrics.source_ranges=10.0.0.0/8",
    ];
    // kubelet's port: refused as bad config, before any change.
    let kubelet = [&on[..], &["--set", "metrics.port=10250"]].concat();
    let (code, _, stderr) = s.install(&kubelet);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("kubelet's port"), "{stderr}");
    assert_eq!(metrics_rules(&s), []);
    assert!(
        !s.c_drive("calicowindows/calicoctl-win-install.json")
            .exists()
    );
    let (code, _, stderr) = s.install(&on);
    assert_eq!(code, 0, "{stderr}");
    let scoped = json!(["10.0.0.0/8"]);
    assert_eq!(
        metrics_rules(&s),
        [
            (
                "Calico metrics Felix TCP 9091".to_owned(),
                9091,
                scoped.clone()
            ),
            (
                "Calico metrics calicoctl-win TCP 9095".to_owned(),
                9095,
                scoped
            ),
        ]
    );
    let record: Value = serde_json::from_slice(
        &fs_err::read(s.c_drive("calicowindows/calicoctl-win-install.json")).expect("record"),
    )
    .expect("record json");
    assert_eq!(record["metrics_rules"].as_array().map(Vec::len), Some(2));
    let env = fs_err::read_to_string(s.c_drive("calicowindows/calico-felix.env")).expect("env");
    assert!(env.contains("FELIX_PROMETHEUSMETRICSPORT=9091"), "{env}");

    // Another range: the rules follow it.
    let wider = [
        "--set",
        "metrics.enabled=true",
        "--set",
        "metrics.source_ranges=10.0.0.0/8,192.168.0.0/16",
    ];
    let (code, _, stderr) = s.install(&wider);
    assert_eq!(code, 0, "{stderr}");
    let both = json!(["10.0.0.0/8", "192.168.0.0/16"]);
    assert!(
        metrics_rules(&s).iter().all(|r| r.2 == both),
        "{:?}",
        metrics_rules(&s)
    );

    // Metrics off: the rules go; on again, they come back; uninstall removes them.
    let (code, _, stderr) = s.install(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(metrics_rules(&s), []);
    let (code, _, stderr) = s.install(&on);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(metrics_rules(&s).len(), 2);
    let (code, _, stderr) = s.uninstall(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(metrics_rules(&s), []);
}

/// Each rule lets in only the program that listens on its port; uninstall removes a rule
/// only as install made it: one an administrator made again under its name stays, and
/// uninstall says so (it removed any rule of the name).
#[test]
fn uninstall_leaves_a_metrics_rule_an_administrator_made_again_and_says_so() {
    let s = Node::healthy()
        .created()
        .serving("3.30.2", "calico-node.exe")
        .build();
    let on = [
        "--set",
        "metrics.enabled=true",
        "--set",
        "metrics.source_ranges=10.0.0.0/8",
    ];
    let (code, _, stderr) = s.install(&on);
    assert_eq!(code, 0, "{stderr}");
    let ours = "calico metrics calicoctl-win tcp 9095";
    let felix = "calico metrics felix tcp 9091";
    let firewall = s.state()["firewall"].clone();
    assert_eq!(
        firewall[ours]["program"], r"C:\CalicoWindows\calicoctl-win.exe",
        "{firewall}"
    );
    assert_eq!(
        firewall[felix]["program"], r"C:\CalicoWindows\calico-node.exe",
        "{firewall}"
    );
    s.edit_state(|st| {
        let rule = &mut st["firewall"][ours];
        rule["remote_addresses"] = json!(["0.0.0.0/0"]);
        rule.as_object_mut().expect("rule").remove("program");
    });
    let (code, doc, stderr) = s.uninstall(&[]);
    assert_eq!(code, 0, "{stderr}");
    let firewall = s.state()["firewall"].clone();
    assert!(firewall[ours].is_object(), "the administrator's rule went");
    assert!(firewall[felix].is_null(), "ours stayed: {firewall}");
    assert!(
        stderr.contains("'Calico metrics calicoctl-win TCP 9095' is left as it is"),
        "{stderr}"
    );
    assert!(
        doc["warnings"].to_string().contains("Get-NetFirewallRule"),
        "{doc}"
    );
}

/// One request to the loopback endpoint: the status line's code and the body.
#[cfg(unix)]
fn ask(port: u16, request: &str) -> Option<(String, String)> {
    use std::io::{Read, Write};
    let mut conn = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    conn.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .ok()?;
    conn.write_all(request.as_bytes()).ok()?;
    let mut raw = String::new();
    conn.read_to_string(&mut raw).ok()?;
    let (head, body) = raw.split_once("\r\n\r\n")?;
    let code = head.split(' ').nth(1)?.to_owned();
    Some((code, body.to_owned()))
}

/// The metric families Prometheus' own Python client (`prometheus_client.parser`, Debian's
/// python3-prometheus-client) reads in `text`: (name, type, [(sample, labels, value)]).
#[cfg(unix)]
fn parsed_by_prometheus_client(text: &str) -> Option<Value> {
    let debian = std::path::Path::new("/usr/bin/python3");
    let python = if debian.is_file() {
        Some(debian.to_path_buf())
    } else {
        crate::support::tool("python3")
    }?;
    let script = "import sys, json\n\
        from prometheus_client.parser import text_string_to_metric_families as parse\n\
        print(json.dumps([[f.name, f.type, [[s.name, s.labels, s.value] for s in f.samples]] for f in parse(sys.stdin.read())]))";
    let out = assert_cmd::Command::new(python)
        .args(["-c", script])
        .write_stdin(text)
        .output()
        .expect("python");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("No module named 'prometheus_client'") {
        assert!(
            std::env::var_os("CALICOCTL_WIN_REQUIRE_TOOLS").is_none(),
            "prometheus_client is required (CALICOCTL_WIN_REQUIRE_TOOLS is set): apt-get install -y python3-prometheus-client"
        );
        eprintln!("skipped: apt-get install -y python3-prometheus-client; CI requires it");
        return None;
    }
    assert!(
        out.status.success(),
        "the parser refused the text: {stderr}\n{text}"
    );
    Some(serde_json::from_slice(&out.stdout).expect("json"))
}

#[cfg(unix)]
#[test]
fn calico_node_serves_its_counters_in_the_text_format_prometheus_parses() {
    use calicoctl_win::host::{Access, Files};
    let dir = tempfile::tempdir().expect("tempdir");
    let host = crate::service_run::installed_host(dir.path());
    // What CalicoNode counted before it restarted, and what a repair run counted.
    let root = r"C:\CalicoWindows";
    for (file, doc) in [
        (
            "calicoctl-win-metrics.json",
            json!({"calicoctl_win_token_renewals_total": 3}),
        ),
        (
            "calicoctl-win-metrics-repair.json",
            json!({"calicoctl_win_repairs_total": 1, "calicoctl_win_repaired_endpoints_total": 2}),
        ),
        (
            "calicoctl-win-metrics-verify.json",
            json!({"calicoctl_win_verify_passed": 1, "calicoctl_win_verify_last_run_timestamp_seconds": 1_700_000_000u64}),
        ),
    ] {
        host.write_file(
            &format!("{root}\\{file}"),
            doc.to_string().as_bytes(),
            Access::Secret,
        )
        .expect("write");
    }
    drop(host);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let port_arg = port.to_string();
    let child = crate::service_run::console_node(
        dir.path(),
        &["--metrics-port".as_ref(), port_arg.as_ref()],
    );
    let get = format!("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    let text = std::sync::Mutex::new(String::new());
    let out =
        crate::service_run::run_until(child, "the metrics endpoint", || match ask(port, &get) {
            Some((code, body)) if code == "200" && body.contains("endpoint_faults") => {
                *text.lock().expect("lock") = body;
                true
            }
            _ => false,
        });
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = text.into_inner().expect("text");
    assert!(
        text.contains("\ncalicoctl_win_token_renewals_total 3\n"),
        "{text}"
    );
    assert!(text.contains("\ncalicoctl_win_verify_passed 1\n"), "{text}");

    let Some(families) = parsed_by_prometheus_client(&text) else {
        return;
    };
    let family = |name: &str| {
        families
            .as_array()
            .and_then(|f| f.iter().find(|f| f[0] == name))
            .cloned()
            .unwrap_or_else(|| panic!("no family {name} in {families}"))
    };
    // The parser names a counter's family without `_total` and its sample with it.
    let renewals = family("calicoctl_win_token_renewals");
    assert_eq!(renewals[1], "counter");
    assert_eq!(
        renewals[2],
        json!([["calicoctl_win_token_renewals_total", {}, 3.0]])
    );
    assert_eq!(family("calicoctl_win_repaired_endpoints")[2][0][2], 2.0);
    assert_eq!(family("calicoctl_win_token_refusals")[2][0][2], 0.0);
    let faults = family("calicoctl_win_endpoint_faults");
    assert_eq!(faults[1], "gauge");
    // Every fault verdict's series from the start, at 0.
    assert!(
        faults[2]
            .as_array()
            .is_some_and(|s| s.len() == 5 && s.iter().all(|s| s[2] == 0.0)),
        "{faults}"
    );
    assert!(faults[2][0][1]["verdict"].is_string(), "{faults}");
    let at = family("calicoctl_win_verify_last_run_timestamp_seconds");
    assert_eq!(at[1], "gauge");
    assert_eq!(at[2][0][2], 1_700_000_000.0);
    let verify = family("calicoctl_win_verify_passed");
    assert_eq!(verify[1], "gauge");
    assert_eq!(verify[2][0][2], 1.0);
}

#[cfg(unix)]
#[test]
fn the_metrics_endpoint_answers_only_get_metrics_and_caps_the_request() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let server = std::thread::spawn(move || {
        for _ in 0..4 {
            let (conn, _) = listener.accept().expect("accept");
            let head_time = std::time::Duration::from_secs(5);
            let metrics = || "x 1\n".to_owned();
            let _ =
                calicoctl_win::supervise::metrics_server::answer(conn, head_time, &metrics, None);
        }
    });
    // With diags off (no source given), /diags is as unknown as any other path.
    for path in ["/secret", "/diags"] {
        let asked = ask(port, &format!("GET {path} HTTP/1.1\r\n\r\n"));
        assert_eq!(asked.map(|a| a.0).as_deref(), Some("404"), "{path}");
    }
    assert_eq!(
        ask(port, "POST /metrics HTTP/1.1\r\n\r\n")
            .map(|a| a.0)
            .as_deref(),
        Some("405")
    );
    let long = format!("GET /metrics HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(20_000));
    assert_eq!(ask(port, &long).map(|a| a.0).as_deref(), Some("431"));
    server.join().expect("server");
}

/// A rule the operator's Felix made for its Prometheus port (a HostProcess Felix with
/// windowsManageFirewallRules Enabled, before `migrate`) lets every address reach the port
/// Felix serves metrics on: status names it with its remedy beside its sections (advice about a
/// leftover, no problem of the node), and no command removes it.
#[test]
fn status_names_a_felix_rule_open_to_every_address_and_keeps_it() {
    let s = Node::healthy()
        .created()
        .serving("3.30.2", "calico-node.exe")
        .build();
    let felix_rule = "Calico Prometheus Ports (calico-managed rule)";
    s.edit_state(|st| {
        st["firewall"][felix_rule.to_ascii_lowercase()] = json!({
            "name": felix_rule, "protocol": "tcp", "local_port": 9091, "allow": true,
            "enabled": true, "profiles": 2147483647u32
        });
    });
    let on = [
        "--set",
        "metrics.enabled=true",
        "--set",
        "metrics.source_ranges=10.0.0.0/8",
    ];
    let (code, _, stderr) = s.install(&on);
    assert_eq!(code, 0, "{stderr}");
    // Said with its remedy beside the sections, no problem: not among the findings.
    let (_, text) = s.run_text(&["status"]);
    assert!(text.contains("[felix-metrics-rule]"), "{text}");
    assert!(
        text.contains(&format!(
            "Remove-NetFirewallRule -DisplayName '{felix_rule}'"
        )),
        "{text}"
    );
    let (_, doc, _) = s.run(&["status"]);
    assert!(
        !doc["findings"].to_string().contains("felix-metrics-rule"),
        "{doc}"
    );
    let (code, _, stderr) = s.uninstall(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        s.state()["firewall"][felix_rule.to_ascii_lowercase()].is_object(),
        "Felix's rule was removed"
    );
}

/// What CalicoNode keeps while its endpoint cannot listen (`MetricsEndpoint`), if anything.
#[cfg(unix)]
fn endpoint_down(dir: &std::path::Path) -> Option<String> {
    use calicoctl_win::host::{RegValue, Registry};
    let host = calicoctl_win::host::sim::SimHost::open_or_create(dir, None).ok()?;
    match host
        .reg_get(
            calicoctl_win::layout::CALICO_KEY,
            calicoctl_win::layout::METRICS_ENDPOINT_VALUE,
        )
        .ok()??
    {
        RegValue::Sz(text) => Some(text),
        _ => None,
    }
}

/// Another program holds the metrics port when CalicoNode starts: CalicoNode says so in its
/// log, keeps it for status, and tries again until the port is free, then serves (it once
/// said it once and never served until restarted).
#[cfg(unix)]
#[test]
fn calico_node_tries_a_held_metrics_port_again_and_says_so_until_it_listens() {
    let dir = tempfile::tempdir().expect("tempdir");
    drop(crate::service_run::installed_host(dir.path()));
    let holder = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = holder.local_addr().expect("addr").port();
    let port_arg = port.to_string();
    let child = crate::service_run::console_node(
        dir.path(),
        &["--metrics-port".as_ref(), port_arg.as_ref()],
    );
    let holder = std::sync::Mutex::new(Some(holder));
    let get = format!("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    let log = dir.path().join("fs/c/calicowindows/logs/calico-node.log");
    let kept = std::sync::Mutex::new(None);
    let out = crate::service_run::run_until(child, "the metrics endpoint", || {
        let mut holder = holder.lock().expect("lock");
        if holder.is_some() {
            // Held: wait for CalicoNode to say so, then let the port go.
            if let Some(text) = endpoint_down(dir.path()) {
                *kept.lock().expect("lock") = Some(text);
                *holder = None;
            }
            return false;
        }
        matches!(ask(port, &get), Some((code, _)) if code == "200")
            && endpoint_down(dir.path()).is_none()
    });
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let kept: Value =
        serde_json::from_str(&kept.into_inner().expect("lock").expect("kept")).expect("json");
    assert_eq!(kept["port"], port, "{kept}");
    let log = fs_err::read_to_string(&log).expect("log");
    assert!(
        log.contains(&format!("cannot listen on TCP port {port}")),
        "{log}"
    );
    assert!(
        log.contains(&format!("listening on TCP port {port}")),
        "{log}"
    );
}

/// A CalicoNode the API server refuses the TokenReview of `GET /diags` keeps it in Calico's
/// registry key; `status` says it with its code and fix beside its sections, as no problem of
/// the node's networking: its exit code, and so the fleet DaemonSet's readiness, stay as they
/// were (and without it, it says nothing).
#[test]
fn status_says_a_refused_diags_review_as_no_problem() {
    let s = Node::healthy()
        .created()
        .serving("3.30.2", "calico-node.exe")
        .build();
    let on = [
        "--set",
        "metrics.enabled=true",
        "--set",
        "metrics.source_ranges=10.0.0.0/8",
        "--set",
        "metrics.diags=true",
    ];
    let (code, _, stderr) = s.install(&on);
    assert_eq!(code, 0, "{stderr}");
    let status = [&on[..], &["status"]].concat();
    let (before, text) = s.run_text(&status);
    assert!(!text.contains("diags-review-refused"), "{text}");
    let kept =
        json!({"error": "tokenreviews.authentication.k8s.io is forbidden", "since": 1_700_000_000});
    s.edit_state(|st| {
        st["registry"][r"hklm\software\tigera\calico"]["diagsreviewrefused"] =
            json!({"type": "REG_SZ", "data": kept.to_string()});
    });
    let (after, text) = s.run_text(&status);
    assert!(
        text.contains("[diags-review-refused]") || text.contains("diags-review-refused"),
        "{text}"
    );
    assert!(text.contains("fleet rbac --identity diags"), "{text}");
    assert_eq!(after, before, "{text}");
    let (_, doc, _) = s.run(&status);
    assert!(
        !doc["findings"].to_string().contains("diags-review-refused"),
        "{doc}"
    );
}

/// With metrics on, an endpoint that has listened two hours with no connection from beyond the
/// node while the fleet's metrics Service exists is said by status, beside its sections and no
/// problem (`metrics-not-scraped`: its rule admits no scraper, as when pods' scrapes arrive
/// masqueraded to their node's address); without the Service, or scraped within the hour, it
/// is not. (Status called such a rule healthy: nothing kept when a scrape last came.)
#[test]
fn status_tells_an_endpoint_no_scraper_reaches_from_a_scraped_one() {
    use calicoctl_win::host::{RegValue, Registry};
    let s = Node::healthy()
        .created()
        .serving("3.30.2", "calico-node.exe")
        .build();
    let on = [
        "--set",
        "metrics.enabled=true",
        "--set",
        "metrics.source_ranges=10.0.0.0/8",
    ];
    let status = [&on[..], &["status"]].concat();
    let (code, _, stderr) = s.install(&on);
    assert_eq!(code, 0, "{stderr}");
    let kept = |last: Option<i64>| {
        let now = calicoctl_win::duration::now();
        let host = calicoctl_win::host::sim::SimHost::open_or_create(&s.sim(), None).expect("sim");
        let text = json!({"listening_since": now - 7200, "last_connection": last.map(|a| now - a)});
        host.reg_set(
            calicoctl_win::layout::CALICO_KEY,
            calicoctl_win::layout::METRICS_SCRAPES_VALUE,
            &RegValue::Sz(text.to_string()),
        )
        .expect("kept");
    };
    let said = || s.run_text(&status).1.contains("[metrics-not-scraped]");
    kept(None);
    assert!(!said(), "no Service: no scraper is known to be meant");
    s.api().put(
        "/api/v1/namespaces/system-upgrade/services/calicoctl-win-metrics",
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "calicoctl-win-metrics", "namespace": "system-upgrade",
                "labels": {"app.kubernetes.io/name": "calicoctl-win"}},
            "spec": {"clusterIP": "None", "ports": [
                {"name": "calicoctl-win", "port": 9095, "protocol": "TCP"},
                {"name": "felix", "port": 9091, "protocol": "TCP"}]}
        }),
    );
    let (_, text) = s.run_text(&status);
    assert!(text.contains("[metrics-not-scraped]"), "{text}");
    assert!(
        text.contains("system-upgrade/calicoctl-win-metrics"),
        "{text}"
    );
    let (_, doc, _) = s.run(&status);
    assert!(
        !doc["findings"].to_string().contains("metrics-not-scraped"),
        "no problem: {doc}"
    );
    kept(Some(600));
    assert!(!said(), "scraped ten minutes ago");
    kept(Some(4000));
    assert!(said(), "last scraped over an hour ago");
}
