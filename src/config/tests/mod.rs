use super::*;

/// The config these `--set`s alone give (for the tests of the modules that build one).
pub(crate) fn from_sets(sets: &[&str]) -> Config {
    load(&Inputs {
        sets: sets.iter().map(|s| (*s).to_owned()).collect(),
        ..Inputs::default()
    })
    .expect("config")
    .config
}

fn inputs(yaml: Option<&str>, env: &[(&str, &str)], sets: &[&str]) -> Inputs {
    Inputs {
        file: yaml.map(|y| (PathBuf::from("calico-windows.yaml"), y.to_owned())),
        env: env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        sets: sets.iter().map(|s| (*s).to_owned()).collect(),
        host: host_named("WIN-NODE-1"),
        cluster: Default::default(),
    }
}

/// The host layer of a host of this name.
fn host_named(hostname: &str) -> std::collections::BTreeMap<&'static str, Raw> {
    host::HostDefaults {
        hostname: Some(hostname.into()),
        ..Default::default()
    }
    .layer()
}

/// The config these `--set`s give over the defaults.
fn with_sets(sets: &[&str]) -> Config {
    load(&inputs(None, &[], sets)).expect("valid").config
}

/// The problems these `--set`s give over the defaults.
fn set_problems(sets: &[&str]) -> Vec<Problem> {
    problems(&inputs(None, &[], sets))
}

fn felix_env(c: &Config) -> std::collections::BTreeMap<String, String> {
    crate::render::env::environment(c, crate::layout::Role::Felix, None)
}

fn problems(i: &Inputs) -> Vec<Problem> {
    match load(i) {
        Err(ConfigError::Invalid { problems, .. }) => problems,
        other => panic!("expected problems, got {other:?}"),
    }
}

/// Every setting is read and shown from the default (node.name from the host). The defaults'
/// values (the quickstart's: vxlan, kubernetes, VNI 4096, 0E-2A, 10.96.0.0/12, 10.96.0.10,
/// the kubeconfig under the install root) are tests/cli golden.rs `dsr_off_on_unpatched_2019`'s
/// calico-node.env, whose config sets node.name only. containerd's CNI directory is asserted
/// here: the goldens' simulated host names the same directory in its containerd config, so
/// there it comes from the host, not from the default.
#[test]
fn built_in_defaults_follow_the_quickstart() {
    let l = load(&inputs(None, &[], &[])).expect("defaults are valid");
    assert_eq!(
        l.config.cni.bin_dir.as_str(),
        "C:\\Program Files\\containerd\\cni\\bin"
    );
    assert!(l.shown.iter().all(|(k, s)| s.source
        == if *k == "node.name" {
            Source::Host
        } else {
            Source::Default
        }));
    assert_eq!(
        l.shown.len(),
        spec::SETTINGS.len(),
        "every setting is read and shown"
    );
    // Every built-in default parses: `builtin_default` relies on this.
    for s in spec::SETTINGS {
        if let spec::DefaultValue::Value(v) = s.default {
            assert!(!l.shown[s.key].value.is_null(), "{} = {v}", s.key);
        }
    }
}

/// Every problem is reported at once, each with its key, line and value.
#[test]
fn every_problem_is_reported_at_once() {
    let yaml = "backend: vxlan\nvxlan:\n  vni: 100\n  mac_prefix: zz\nservice_cidrs: ['<your service cidr>']\n";
    let p = problems(&inputs(Some(yaml), &[], &["cni.ipam_type=host-local"]));
    let keys: Vec<_> = p.iter().filter_map(|p| p.key.as_deref()).collect();
    assert!(keys.contains(&"vxlan.vni"), "{p:?}");
    assert!(keys.contains(&"vxlan.mac_prefix"), "{p:?}");
    assert!(keys.contains(&"service_cidrs"), "{p:?}");
    assert!(keys.contains(&"cni.ipam_type"), "{p:?}");
    let vni = p
        .iter()
        .find(|p| p.key.as_deref() == Some("vxlan.vni"))
        .expect("vni problem");
    assert_eq!(vni.source, Some(Source::File(3)));
    assert_eq!(vni.value.as_deref(), Some("100"));
    // An unknown key is named with its line and a suggestion.
    let p = problems(&inputs(
        Some("backend: vxlan\nvxlan:\n  vnii: 4096\n"),
        &[],
        &[],
    ));
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].key.as_deref(), Some("vxlan.vnii"));
    assert_eq!(p[0].source, Some(Source::File(3)));
    assert!(p[0].message.contains("vxlan.vni"), "{}", p[0].message);
}

/// An invalid host name without node.name is a problem of the host's.
#[test]
fn host_values_come_below_the_file_and_above_the_cluster() {
    let mut i = inputs(None, &[], &[]);
    i.host = host_named("WIN_NODE");
    let p = problems(&i);
    assert_eq!(p[0].key.as_deref(), Some("node.name"));
    assert_eq!(p[0].source, Some(Source::Host));
    i.sets.push("node.name=win-node".into());
    assert!(load(&i).is_ok());
    // Host values come below the file and above the cluster; kubelet's override wins over the
    // host's name, lower-cased.
    let mut i = inputs(Some("cni:\n  bin_dir: D:\\cni\\bin\n"), &[], &[]);
    i.host = host::HostDefaults {
        hostname: Some("WIN-NODE-1".into()),
        kubelet: Some(r"C:\k\kubelet.exe --hostname-override=Win-Node-7".into()),
        runtime: None,
    }
    .layer();
    i.host
        .insert("cni.bin_dir", Raw::Scalar(r"C:\host\bin".into()));
    i.host
        .insert("cni.conf_dir", Raw::Scalar(r"C:\host\conf".into()));
    i.cluster
        .insert("cni.conf_dir", Raw::Scalar(r"C:\cluster\conf".into()));
    let l = load(&i).expect("loads");
    assert_eq!(l.config.node.name.to_string(), "win-node-7");
    assert_eq!(l.shown["node.name"].source, Source::Host);
    assert_eq!(l.config.cni.bin_dir.as_str(), r"D:\cni\bin");
    assert_eq!(l.config.cni.conf_dir.as_str(), r"C:\host\conf");
    assert_eq!(l.shown["cni.conf_dir"].source.to_string(), "host");
}

/// Precedence: a flag beats the environment, which beats the file (the file over the default,
/// the environment over the file: tests/cli `config_show_names_flag_env_and_file_line_sources`);
/// cluster values fill only what flags, environment and file leave unset.
#[test]
fn flag_beats_env_beats_file_and_cluster_values_fill_the_rest() {
    let i = inputs(
        Some("vxlan:\n  vni: 4097\n"),
        &[("VXLAN_VNI", "4098")],
        &["vxlan.vni=4099"],
    );
    let l = load(&i).expect("valid");
    assert_eq!(l.config.vxlan.vni.get(), 4099);
    assert_eq!(l.shown["vxlan.vni"].source, Source::Flag);
    let mut i = inputs(
        Some("vxlan:\n  vni: 4100\n"),
        &[("K8S_SERVICE_CIDR", "10.0.0.0/16")],
        &[],
    );
    i.cluster = [
        ("vxlan.vni", Raw::Scalar("4097".into())),
        ("service_cidrs", Raw::List(vec!["10.96.0.0/12".into()])),
        ("dns.servers", Raw::List(vec!["10.96.0.11".into()])),
        ("backend", Raw::Scalar("windows-bgp".into())),
    ]
    .into_iter()
    .collect();
    let loaded = load(&i).expect("valid");
    let src = |k: &str| loaded.shown[k].source.to_string();
    assert_eq!(loaded.config.vxlan.vni.to_string(), "4100");
    assert_eq!(src("vxlan.vni"), "file:2");
    assert_eq!(src("service_cidrs"), "env K8S_SERVICE_CIDR");
    assert_eq!(
        loaded.shown["dns.servers"].value,
        serde_json::json!(["10.96.0.11"])
    );
    assert_eq!(src("dns.servers"), "cluster");
    assert_eq!(src("backend"), "cluster");
    assert_eq!(src("datastore"), "default");
    // A bad value from the cluster is a problem that names the cluster.
    let mut i = inputs(None, &[], &[]);
    i.cluster = [("vxlan.vni", Raw::Scalar("99999999".into()))]
        .into_iter()
        .collect();
    let p = problems(&i);
    assert_eq!((p.len(), p[0].source.clone()), (1, Some(Source::Cluster)));
}

#[test]
fn node_ip_takes_an_address_alone_or_with_its_prefix_as_calico_node_does() {
    for (raw, shown) in [
        ("autodetect", "autodetect"),
        ("10.0.0.5", "10.0.0.5"),
        ("10.0.0.5/24", "10.0.0.5/24"),
    ] {
        let l = load(&inputs(None, &[], &[&format!("node.ip={raw}")])).expect(raw);
        assert_eq!(l.config.node.ip.to_string(), shown);
    }
    for bad in [
        "10.0.0.5/33",
        "10.0.0.5/",
        "10.0.0.5/+8",
        "10.0.0/24",
        "127.0.0.1",
        "0.0.0.0/0",
    ] {
        let p = set_problems(&[&format!("node.ip={bad}")]);
        assert_eq!(p[0].key.as_deref(), Some("node.ip"), "{bad}");
    }
}

/// kube-proxy runs on Calico's network, which the none backend does not make: asking for the
/// kube-proxy service there is a problem, not silently nothing.
#[test]
fn the_kube_proxy_service_needs_a_calico_network() {
    let path = r"kube_proxy.path=C:\k\kube-proxy.exe";
    let p = set_problems(&["backend=none", path]);
    let kp = p
        .iter()
        .find(|p| p.key.as_deref() == Some("kube_proxy.path"))
        .unwrap_or_else(|| panic!("no kube_proxy.path problem: {p:?}"));
    assert!(kp.message.contains("none backend"), "{kp:?}");
    assert!(load(&inputs(None, &[], &[path])).is_ok());
}

/// Two nodes given one config file get one hash (their names come from their hosts); a
/// fleet-wide setting that differs, from the file or the cluster, gives another; the node's own
/// settings in a flag do not count.
#[test]
fn two_nodes_from_one_config_share_the_fleet_hash() {
    let yaml = "vxlan:\n  vni: 4097\n";
    let node = |hostname: &str, sets: &[&str]| {
        let mut i = inputs(Some(yaml), &[], sets);
        i.host = host_named(hostname);
        fleet_hash(&load(&i).expect("loads")).0
    };
    let a = node("WIN-A", &[]);
    assert!(a.starts_with("sha256:") && a.len() == 71, "{a}");
    assert_eq!(a, node("WIN-B", &[]), "one config, two nodes");
    assert_eq!(
        a,
        node("WIN-C", &["node.ip=10.0.0.9"]),
        "a node's own address"
    );
    assert_ne!(
        a,
        node("WIN-A", &["vxlan.vni=4098"]),
        "a fleet-wide setting"
    );
    let mut from_cluster = inputs(Some(yaml), &[], &[]);
    from_cluster
        .cluster
        .insert("service_cidrs", Raw::Scalar("10.96.0.0/16".into()));
    assert_ne!(a, fleet_hash(&load(&from_cluster).expect("loads")).0);
}

/// A config file that exists but cannot be used is not told to "pass an existing file": the
/// hint follows why (not UTF-8, too large).
#[test]
fn an_unusable_config_file_gets_the_hint_for_its_fault() {
    use crate::error::Diagnose;
    let dir = tempfile::tempdir().expect("dir");
    let hint_for = |name: &str, bytes: &[u8]| {
        let path = dir.path().join(name);
        fs_err::write(&path, bytes).expect("write");
        let err = read_file(Some(&path)).expect_err("unreadable");
        err.diagnose().and_then(|d| d.hint).unwrap_or_default()
    };
    let utf16 = hint_for("utf16.yaml", b"\xff\xfeb\0a\0");
    assert!(
        utf16.contains("UTF-8") && !utf16.contains("existing"),
        "{utf16}"
    );
    let big = hint_for(
        "big.yaml",
        &vec![b'#'; (crate::files::SMALL_FILE_CAP + 1) as usize],
    );
    assert!(big.contains("a config is a few KB"), "{big}");
    let missing = read_file(Some(&dir.path().join("nope.yaml"))).expect_err("missing");
    let hint = missing.diagnose().and_then(|d| d.hint).unwrap_or_default();
    assert!(hint.contains("pass an existing file"), "{hint}");
}

/// One rule for both sources: blanks around a value are no part of it, from `--set` as from
/// the environment, and a list's items are comma-separated, a blank after a comma allowed (as
/// a user writes it by hand). A float-looking MAC prefix in the file keeps its text.
#[test]
fn a_value_with_blanks_around_it_is_read_alike_from_set_and_environment() {
    let by_set = load(&inputs(None, &[], &["vxlan.vni= 4097 "])).expect("valid");
    let env = [
        ("VXLAN_VNI", " 4097 "),
        ("K8S_SERVICE_CIDR", "10.96.0.0/12, 10.100.0.0/16"),
    ];
    let by_env = load(&inputs(None, &env, &[])).expect("valid");
    assert_eq!(by_set.config.vxlan.vni.get(), 4097);
    assert_eq!(by_env.config.vxlan.vni.get(), 4097);
    assert_eq!(by_env.config.service_cidrs.len(), 2);
    let by_set = load(&inputs(None, &[], &["vxlan.mac_prefix=\t0e-2b"])).expect("valid");
    assert_eq!(by_set.config.vxlan.mac_prefix.to_string(), "0E-2B");
    let l = load(&inputs(Some("vxlan:\n  mac_prefix: 0E-20\n"), &[], &[])).expect("valid");
    assert_eq!(l.config.vxlan.mac_prefix.to_string(), "0E-20");
}

/// With metrics on: a source range is needed, IPv4 (calicoctl-win's endpoint listens on 0.0.0.0
/// only) and not of prefix 0 (Windows takes no remote subnet of mask 0.0.0.0, MS-FASP
/// FW_IPV4_SUBNET); a metrics port may not be the other, nor one of the node's own (kubelet's,
/// kube-proxy's, Felix's health, BGP); an extra_env may not turn Felix's Prometheus off or
/// move it from the port its rule opens. All refused before any change. The rendering off and
/// on is tests/lifecycle's `metrics_enabled_turns_felix_prometheus_on_in_its_environment`.
#[test]
fn metrics_settings_that_cannot_work_are_refused() {
    let (on, ranges) = ("metrics.enabled=true", "metrics.source_ranges=10.0.0.0/8");
    let keys = |p: &[Problem]| -> Vec<String> { p.iter().filter_map(|p| p.key.clone()).collect() };
    assert_eq!(keys(&set_problems(&[on])), ["metrics.source_ranges"]);
    let p = set_problems(&[on, "metrics.source_ranges=10.0.0.1/8", "metrics.port=9091"]);
    assert_eq!(keys(&p), ["metrics.source_ranges", "metrics.port"]);
    // Each over `on` and `ranges` (a later --set of a key replaces the earlier).
    for (set, key, says) in [
        ("metrics.port=10250", "metrics.port", "kubelet's port"),
        ("metrics.port=10249", "metrics.port", "kube-proxy's metrics"),
        ("metrics.felix_port=10256", "metrics.felix_port", "healthz"),
        ("metrics.felix_port=10248", "metrics.felix_port", "healthz"),
        ("metrics.port=9099", "metrics.port", "Felix's health"),
        ("metrics.felix_port=179", "metrics.felix_port", "BGP"),
        ("metrics.port=9091", "metrics.port", "felix_port too"),
        (
            "metrics.source_ranges=10.0.0.0/8,fd00::/64",
            "metrics.source_ranges",
            "fd00::/64",
        ),
        (
            "metrics.source_ranges=0.0.0.0/0",
            "metrics.source_ranges",
            "real ranges",
        ),
        (
            "extra_env.felix.FELIX_PROMETHEUSMETRICSENABLED=false",
            "extra_env.felix",
            "set by calicoctl-win",
        ),
        (
            "extra_env.felix.felix_prometheusmetricsport=false",
            "extra_env.felix",
            "set by calicoctl-win",
        ),
    ] {
        let p = set_problems(&[on, ranges, set]);
        assert_eq!(p.len(), 1, "{set}: {p:?}");
        assert_eq!(keys(&p), [key], "{set}: {p:?}");
        assert!(p[0].message.contains(says), "{set}: {p:?}");
    }
    for ok in [
        "metrics.port=9200",
        "metrics.source_ranges=0.0.0.0/1,128.0.0.0/1",
    ] {
        assert!(load(&inputs(None, &[], &[on, ranges, ok])).is_ok(), "{ok}");
    }
    let c = with_sets(&[on, ranges]);
    assert!(!felix_env(&c).contains_key("FELIX_WINDOWSMANAGEFIREWALLRULES"));
}

/// With metrics off (the default) Felix's Prometheus variables are the administrator's, as in
/// Calico's config.ps1: an extra_env `FELIX_PROMETHEUSMETRICSENABLED=true` (Calico's
/// FelixConfiguration field, set the config.ps1 way) is rendered as given, not overridden
/// `false` (it was refused, and the rendered `false` outranked a FelixConfiguration too), and
/// so is `FELIX_WINDOWSMANAGEFIREWALLRULES`.
#[test]
fn with_metrics_off_felix_prometheus_in_extra_env_is_rendered_as_given() {
    let c = with_sets(&[
        "extra_env.felix.FELIX_PROMETHEUSMETRICSENABLED=true",
        "extra_env.felix.FELIX_PROMETHEUSMETRICSPORT=9191",
        "extra_env.felix.FELIX_WINDOWSMANAGEFIREWALLRULES=Enabled",
    ]);
    let env = felix_env(&c);
    assert_eq!(env["FELIX_PROMETHEUSMETRICSENABLED"], "true");
    assert_eq!(env["FELIX_PROMETHEUSMETRICSPORT"], "9191");
    assert_eq!(env["FELIX_WINDOWSMANAGEFIREWALLRULES"], "Enabled");
}

/// kubelet's `--hostname-override` in both of pflag's forms; given twice, the last counts (as
/// pflag sets it), and an empty last one leaves kubelet's own host name.
#[test]
fn the_last_hostname_override_counts() {
    use crate::config::host::hostname_override;
    for (line, want) in [
        (r"C:\k\kubelet.exe --hostname-override=win-a", Some("win-a")),
        (
            r"C:\k\kubelet.exe --hostname-override win-a --v=2",
            Some("win-a"),
        ),
        (
            r"C:\k\kubelet.exe --hostname-override=win-a --hostname-override=win-b",
            Some("win-b"),
        ),
        (
            r"C:\k\kubelet.exe --hostname-override= --hostname-override=win-b",
            Some("win-b"),
        ),
        (
            r"C:\k\kubelet.exe --hostname-override=win-a --hostname-override=",
            None,
        ),
        (r"C:\k\kubelet.exe --v=2", None),
    ] {
        assert_eq!(hostname_override(line).as_deref(), want, "{line}");
    }
}
