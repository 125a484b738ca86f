use super::*;
use crate::host::HnsNetwork;

pub(in crate::plan) fn network(name: &str, vsid: Option<u32>) -> HnsNetwork {
    HnsNetwork {
        id: format!("id-{name}"),
        name: name.into(),
        network_type: "Overlay".into(),
        subnets: vec![crate::host::hns::HnsSubnet {
            prefix: "10.244.1.0/26".into(),
            gateway: None,
            vsid,
        }],
        management_ip: None,
        dr_mac: None,
        adapter: None,
    }
}

struct Case {
    /// The boot as Windows reports it, where a clock step moved it, and by its date's rule.
    reported: Option<i64>,
    dated: Option<i64>,
    cni: CniDirs,
    installation: Option<Installation>,
    networks: Vec<HnsNetwork>,
    culture: Result<Culture, String>,
}

impl Case {
    fn healthy() -> Self {
        Self {
            reported: None,
            dated: None,
            // The operator's defaults for a cluster of no named provider.
            cni: CniDirs {
                bin: r"c:/opt/cni/bin/".into(),
                conf: r"C:\etc\CNI\net.d".into(),
            },
            installation: Some(Installation::default()),
            networks: vec![network("External", None), network("Calico", Some(4096))],
            culture: Ok(Culture::known("de-DE").expect("de-DE")),
        }
    }

    fn facts(&self) -> Facts<'_> {
        static WIN_1: std::sync::LazyLock<crate::k8s_name::NodeName> =
            std::sync::LazyLock::new(|| "win-1".into());
        Facts {
            node: &WIN_1,
            installation: self.installation.as_ref(),
            cluster_vni: 4096,
            networks: &self.networks,
            culture: &self.culture,
            boot_local_seconds: Some(1_245_073_530),
            boot_local_reported: self.reported,
            boot_local_dated: self.dated,
            kube_proxy_service: false,
            cni: &self.cni,
        }
    }
}

/// containerd's own CNI directories.
fn containerd() -> CniDirs {
    CniDirs {
        bin: r"C:\Program Files\containerd\cni\bin".into(),
        conf: r"C:\Program Files\containerd\cni\conf".into(),
    }
}

fn codes(r: &[Refusal]) -> Vec<&'static str> {
    r.iter().map(|r| r.code).collect()
}

/// Each refusal on its own input, and none on a healthy node: the marker in SYSTEM's culture.
#[test]
fn each_refusal_has_its_cause() {
    let ok = Case::healthy();
    assert_eq!(to_operator_refusals(&ok.facts()), vec![]);
    assert_eq!(
        ok.facts().operator_marker().as_deref(),
        Ok("15.06.2009 13:45:30")
    );

    // A Calico network of another VSID, a kube-proxy service and SYSTEM's date format
    // unknown: tests/lifecycle/migrate.rs `refusals_change_nothing`.
    let mut c = Case::healthy();
    c.culture = Ok(Culture {
        short_date: "dd-MMM-yyyy".into(),
        ..Culture::known("en-US").expect("en-US")
    });
    assert_eq!(codes(&to_operator_refusals(&c.facts())), ["boot-marker"]);

    let mut c = Case::healthy();
    c.installation = None;
    assert_eq!(
        codes(&to_operator_refusals(&c.facts())),
        ["no-installation"]
    );
}

/// The operator's CNI directories (its Installation's `windowsNodes`, else its provider's
/// defaults) against calicoctl-win's: where they differ, each way is refused with the fix of
/// that way, and a `windowsNodes` that names calicoctl-win's (in any case and slashes) passes.
/// With Windows off, to-operator is not refused: it writes containerd's directories with
/// `windowsDataplane` (the operator refuses `windowsNodes` while Windows is off).
#[test]
fn cni_dirs_that_are_not_the_same_are_refused_each_way_with_its_fix() {
    let mut c = Case::healthy();
    c.cni = containerd();
    assert_eq!(to_operator_refusals(&c.facts()), vec![]);
    c.installation = Some(Installation {
        windows_dataplane: Some("HNS".into()),
        ..Installation::default()
    });
    let to = to_operator_refusals(&c.facts());
    assert_eq!(codes(&to), ["cni-dirs"]);
    assert!(
        to[0]
            .message
            .contains(r"windowsNodes.cniConfigDir is C:\etc\cni\net.d"),
        "{}",
        to[0].message
    );
    assert!(
        to[0].fix.contains(r#"{"spec":{"windowsNodes":{"cniBinDir":"C:/Program Files/containerd/cni/bin","cniConfigDir":"C:/Program Files/containerd/cni/conf"}}}"#),
        "{}",
        to[0].fix
    );
    let from = from_operator_refusals(&c.facts(), None);
    assert_eq!(codes(&from), ["cni-dirs"]);
    assert!(
        from[0].fix.contains(
            r#"--set cni.bin_dir="C:\opt\cni\bin" --set cni.conf_dir="C:\etc\cni\net.d""#
        ),
        "{}",
        from[0].fix
    );

    // AKS's defaults: only the one that differs is named.
    c.cni.bin = r"C:\k\azurecni\bin".into();
    c.installation = Some(Installation {
        provider: Some("AKS".into()),
        windows_dataplane: Some("HNS".into()),
        ..Installation::default()
    });
    let to = to_operator_refusals(&c.facts());
    assert!(
        to[0]
            .fix
            .contains(r#"{"cniConfigDir":"C:/Program Files/containerd/cni/conf"}"#),
        "{}",
        to[0].fix
    );

    // The Installation names calicoctl-win's directories.
    c.installation = Some(Installation {
        cni_bin_dir: Some("/k/azurecni/bin".into()),
        cni_config_dir: Some("C:/Program Files/containerd/cni/conf/".into()),
        ..Installation::default()
    });
    assert_eq!(to_operator_refusals(&c.facts()), vec![]);
    assert_eq!(from_operator_refusals(&c.facts(), None), vec![]);
}

/// From the operator: its marker must say this boot in SYSTEM's culture, or its networks are
/// an earlier boot's; one in another culture is another boot too (the operator's own script
/// would delete the networks on it).
#[test]
fn from_operator_needs_the_operator_initialised_in_this_boot() {
    let ok = Case::healthy();
    let f = ok.facts();
    assert_eq!(
        from_operator_refusals(&f, Some("15.06.2009 13:45:30")),
        vec![]
    );
    assert_eq!(
        codes(&from_operator_refusals(&f, Some("6/15/2009 1:45:30 PM"))),
        ["not-initialised"]
    );
    assert_eq!(from_operator_refusals(&f, None), vec![]);
}

/// The operator is kept off every node of ours before it is switched on for Windows; its
/// DaemonSet is waited for before the node is cordoned (marked first, so that the mark never
/// outlives a cordon it did not make), and the node's label goes only after its host is handed
/// over; the grant and the node's annotations go last, journaled with the rest.
#[test]
fn to_operator_orders_the_cluster_around_the_host() {
    let inst = Installation::default();
    let wait = Duration::from_secs(600);
    let cni = containerd();
    let before = to_operator_before(
        &inst,
        &["win-1".into(), "win-2".into()],
        (&"win-1".into(), &cni),
        false,
        wait,
    );
    let kinds: Vec<String> = before.iter().map(Action::describe).collect();
    assert!(kinds[0].contains("affinity"), "{kinds:?}");
    assert!(kinds[1].contains("label node win-1"), "{kinds:?}");
    assert!(kinds[2].contains("label node win-2"), "{kinds:?}");
    assert!(kinds[3].contains("windowsDataplane: HNS"), "{kinds:?}");
    assert!(
        matches!(before[4], Action::WaitOperatorDaemonSet { .. }),
        "{kinds:?}"
    );
    assert!(
        matches!(before[5], Action::MarkCordoned { on: true, .. }),
        "{kinds:?}"
    );
    assert_eq!(kinds[6], "cordon node win-1");
    // The dataplane's patch says how to put it back: as it was (unset).
    let Action::PatchInstallation { restore, .. } = &before[3] else {
        panic!("{kinds:?}");
    };
    assert_eq!(
        restore.as_ref().map(ToString::to_string).as_deref(),
        Some(r#"{"spec":{"calicoNetwork":{"windowsDataplane":null},"windowsNodes":null}}"#)
    );
    // Already on Windows, affinity written, nodes labelled, cordoned: only the DaemonSet's
    // wait.
    let done = Installation {
        windows_dataplane: Some("HNS".into()),
        affinity: inst.excluding_affinity(),
        ..Installation::default()
    };
    let again = to_operator_before(&done, &[], (&"win-1".into(), &cni), true, wait);
    assert!(
        matches!(again[..], [Action::WaitOperatorDaemonSet { .. }]),
        "{again:?}"
    );
    let grant =
        crate::cluster::renewal::Grant::for_node("calico-system", &"win-1".into(), "calico-node");
    let after = to_operator_after(&"win-1".into(), wait, true, Some(&grant));
    let said: Vec<String> = after.iter().map(Action::describe).collect();
    let begins = [
        "remove label",
        "wait up to",
        "uncordon node",
        "remove annotation",
        "delete Role",
        "remove node",
    ];
    assert_eq!(said.len(), begins.len(), "{said:?}");
    for (step, begins) in said.iter().zip(begins) {
        assert!(step.starts_with(begins), "{said:?}");
    }
    assert!(said[1].ends_with("running and ready"), "{said:?}");
    assert_eq!(
        to_operator_after(&"win-1".into(), Duration::from_secs(1), false, None).len(),
        3
    );
}

/// A handover keeps containerd's CNI directories and those above them (containerd watches the
/// one it made at start only), and removes the other empty directories of the install.
#[test]
fn the_handover_keeps_the_cni_directories() {
    let cni = CniDirs {
        bin: r"C:\Program Files\containerd\cni\bin".into(),
        conf: r"C:/Program Files/containerd/cni/conf/".into(),
    };
    let dirs = [
        r"C:\Program Files\containerd\cni\bin",
        r"C:\Program Files\containerd\cni\conf",
        r"C:\Program Files\containerd\cni",
        r"C:\Program Files\containerd\cni-other",
        r"C:\CalicoWindows",
    ];
    let kept = keeping_cni_dirs(
        dirs.iter()
            .map(|d| Action::RemoveDir {
                path: (*d).to_owned(),
            })
            .collect(),
        &cni,
    );
    let left: Vec<String> = kept
        .iter()
        .map(|a| match a {
            Action::RemoveDir { path } => path.clone(),
            _ => String::new(),
        })
        .collect();
    assert_eq!(
        left,
        [
            r"C:\Program Files\containerd\cni-other",
            r"C:\CalicoWindows"
        ]
    );
}

/// A boot before a daylight-saving change reads an hour apart by its date's rule and by today's
/// bias: the handover is refused (which one the operator's script formats is not certain), and
/// the operator's marker in either reading is this boot on the way back.
#[test]
fn a_dst_change_since_the_boot_refuses_the_handover() {
    let mut c = Case::healthy();
    c.reported = Some(1_245_073_530);
    c.dated = Some(1_245_073_530 + 3600);
    let r = to_operator_refusals(&c.facts());
    assert_eq!(codes(&r), ["boot-marker-dst"]);
    assert!(
        r[0].message.contains("15.06.2009 14:45:30")
            && r[0].message.contains("15.06.2009 13:45:30"),
        "{}",
        r[0].message
    );
    for stored in ["15.06.2009 14:45:30", "15.06.2009 13:45:30"] {
        assert_eq!(from_operator_refusals(&c.facts(), Some(stored)), vec![]);
    }
    c.dated = c.reported;
    assert_eq!(to_operator_refusals(&c.facts()), vec![]);
}

/// The addressing CalicoNode kept from before the vSwitch goes with the install: uninstall's
/// plan (which `to-operator` runs too) and `from-operator`'s drop it.
#[test]
fn uninstall_and_migrate_drop_the_addressing_kept_from_before_the_vswitch() {
    use crate::host::Registry;
    use crate::layout::ADDRESSING_VALUE;
    let host = crate::host::sim::SimHost::in_memory("ws2022").expect("host");
    let drop = |plan: &[Action]| {
        plan.iter().any(|a| {
            matches!(a, Action::DeleteRegistryValue { key, name }
                if key == CALICO_KEY && name == ADDRESSING_VALUE)
        })
    };
    let rec = crate::installed::record::InstallRecord {
        install_root: r"C:\CalicoWindows".into(),
        logs_dir: r"C:\CalicoWindows\logs".into(),
        ..Default::default()
    };
    let options = crate::plan::uninstall::Options {
        purge: false,
        remove_logs: false,
        cluster_steps: Vec::new(),
    };
    let steps = || FromOperator {
        labelled: true,
        cordoned: true,
        timeout: Duration::from_secs(1),
        boot_id: None,
        cni_conf_dir: r"C:\etc\cni\net.d",
    };
    let inst = Installation::default();
    let uninstall = crate::plan::uninstall::plan(&host, &rec, &options).expect("plan");
    assert!(!drop(&uninstall), "nothing kept, nothing dropped");
    host.reg_set(CALICO_KEY, ADDRESSING_VALUE, &RegValue::Sz("{}".into()))
        .expect("set");
    let uninstall = crate::plan::uninstall::plan(&host, &rec, &options).expect("plan");
    assert!(drop(&uninstall), "{uninstall:?}");
    let from = from_operator_before(&host, &inst, &"win-1".into(), steps()).expect("plan");
    assert!(drop(&from), "{from:?}");
}
