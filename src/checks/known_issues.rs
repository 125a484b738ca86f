//! Combinations upstream ships broken, as data: which Calico releases, backends and Windows
//! builds do not work (or degrade), with the upstream source of each fact and the fix, for the
//! `known-issues` check (`--allow-known-issue ID` accepts one). Calico entries were read at the
//! release tags; Windows entries' ranges are the builds their reports name.

use super::Check;
use crate::config::types::Backend;
use crate::release::version::CalicoVersion;

/// How bad an entry is when it applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// The node cannot work.
    Fail,
    /// It works, degraded.
    Warn,
}

/// A release number, `(major, minor, patch)`.
pub type Release = (u32, u32, u32);

/// When an entry applies.
#[derive(Clone, Copy, Debug)]
pub enum When {
    /// Calico releases in these inclusive ranges, with this backend (any when `None`).
    Calico {
        ranges: &'static [(Release, Release)],
        backend: Option<Backend>,
    },
    /// A Windows build whose update revision (UBR) is in this inclusive range, with this
    /// backend (any when `None`).
    Windows {
        build: u32,
        ubr: (u32, u32),
        backend: Option<Backend>,
    },
    /// kubelet's service runs Calico's old `kubelet-service.ps1` from the install root.
    KubeletFromInstallRoot,
}

/// One known breakage.
#[derive(Clone, Copy, Debug)]
pub struct KnownIssue {
    pub id: &'static str,
    /// What breaks, in one sentence.
    pub breaks: &'static str,
    pub when: When,
    pub severity: Severity,
    /// The upstream issue(s) and the fixing commit.
    pub upstream: &'static str,
    /// Where the fact was read: tag, file and commit.
    pub source: &'static str,
    /// What to do: the first good release, the update, or the setting to change.
    pub fix: &'static str,
}

/// Every known breakage. `docs/known-issues.md` lists the same entries.
pub const KNOWN_ISSUES: &[KnownIssue] = &[
    KnownIssue {
        id: "confd-bgp-never-in-sync",
        breaks: "confd never marks its local-BGP-peer watcher in sync on Windows, so it writes no BGP configuration (Get-BgpPeer: BGP is not configured)",
        when: When::Calico {
            // No 3.30 release has the fix: every later 3.30 patch is in until one does.
            ranges: &[((3, 30, 3), (3, 30, 999)), ((3, 31, 0), (3, 31, 4))],
            backend: Some(Backend::WindowsBgp),
        },
        severity: Severity::Fail,
        upstream: "https://github.com/projectcalico/calico/issues/11714, https://github.com/rancher/rke2/issues/9286; fixed by a63cabeb4f (v3.32.0) and 38c14b1299 (v3.31.5)",
        source: "confd/pkg/backends/calico/client.go: v3.30.3 skips NewLocalBGPPeerWatcher on Windows without OnSyncChange(SourceLocalBGPPeerWatcher, true), which 38c14b1299 adds; no v3.30 tag holds a fix (v3.30.7 the latest read)",
        fix: "upgrade the cluster's Calico to v3.31.5 or later in the 3.31 line (calicoctl-win installs the cluster's release; v3.32.0 and v3.32.1 have another windows-bgp breakage), or use the vxlan backend",
    },
    KnownIssue {
        id: "confd-templates-getenv",
        breaks: "the zip's confd templates (blocks.ps1.template, peerings.ps1.template) call getenv, which confd no longer has, so confd renders no BGP configuration",
        when: When::Calico {
            // No 3.32 release has the fix yet: every 3.32 patch is in until one does.
            ranges: &[((3, 32, 0), (3, 32, 999))],
            backend: Some(Backend::WindowsBgp),
        },
        severity: Severity::Fail,
        upstream: "https://github.com/projectcalico/calico/issues/13139; getenv removed by f3dc1ba1c6 (v3.32.0), the templates fixed by 14e684c44f (merged as 147e4533b2), in no release tag yet",
        source: "confd/windows-packaging/templates/{blocks,peerings}.ps1.template at v3.32.0 and v3.32.1 use getenv; confd/pkg/resource/template/template_funcs.go has it at v3.31.6, not at v3.32.0",
        fix: "upgrade the cluster's Calico to v3.31.5 or later in the 3.31 line until a 3.32 release carries 14e684c44f (calicoctl-win installs the cluster's release), or use the vxlan backend",
    },
    KnownIssue {
        id: "ws2022-bgp-2024-updates",
        breaks: "after the February 2024 cumulative update of Windows Server 2022 (20348.2322) the node's own interface becomes unreachable to its BGP peers; reported again on 20348.2582",
        when: When::Windows {
            build: 20348,
            ubr: (2322, 2761),
            backend: Some(Backend::WindowsBgp),
        },
        severity: Severity::Warn,
        upstream: "https://github.com/projectcalico/calico/issues/8529 (20348.1970 and earlier work; 20348.2322 and 20348.2582 break)",
        source: "the reports' builds; https://github.com/microsoft/Windows-Containers/issues/516 says KB5044281 (20348.2762) fixed container networking",
        fix: "install KB5044281 (October 2024, 20348.2762) or a later cumulative update",
    },
    KnownIssue {
        id: "ws2022-kb5040437",
        breaks: "the July 2024 cumulative update of Windows Server 2022 (KB5040437, 20348.2582) breaks container networking with Calico",
        when: When::Windows {
            build: 20348,
            ubr: (2582, 2761),
            backend: None,
        },
        severity: Severity::Warn,
        upstream: "https://github.com/projectcalico/calico/issues/9019, https://github.com/projectcalico/calico/issues/9043, https://github.com/microsoft/Windows-Containers/issues/516",
        source: "the reports' builds; a 2025-10 comment on Windows-Containers#516 says KB5044281 (20348.2762) fixed it",
        fix: "install KB5044281 (October 2024, 20348.2762) or a later cumulative update",
    },
    // Windows Server 2025 (26100): before KB5082063 (26100.32690, April 2026) HNS did not apply
    // an endpoint's ACL policies (microsoft/Windows-Containers#616). The revision is Microsoft's:
    // its CVE records of that Patch Tuesday (CVE-2026-32215, published 2026-04-14, CNA
    // microsoft; CVEProject/cvelistV5 cves/2026/32xxx) give Windows Server 2025 as fixed from
    // 10.0.26100.32690; the KB's number is the update's title (Microsoft's KB page, not read
    // here; KB5091157, 26100.32698 of 2026-04-19, carries it forward). From it they apply under a
    // default-deny posture (sureshbabu-msft on #616, 2026-05-11), which decides no packet Felix
    // programs: its rules end with its own block (policysets.go GetPolicySetRules, v3.25.0 to
    // v3.32.1), and before v3.29.0 the default tier is the only one (endpoint_mgr.go and
    // policy_sorter.go at v3.28.5; tier.go first at v3.29.0). A new pod passes nothing until
    // Felix programs it, as on Linux (the CNI plugin's Block-In ACL, cni-plugin/pkg/dataplane/
    // windows/dataplane_windows.go:212-258, v3.31.7): no warning.
    KnownIssue {
        id: "ws2025-acl-policies",
        breaks: "on Windows Server 2025 before the April 2026 cumulative update (26100.32690) HNS does not apply endpoint ACL policies, and they are how Felix enforces network policy: policies do not apply",
        when: When::Windows {
            build: 26100,
            ubr: (0, 32689),
            backend: None,
        },
        severity: Severity::Warn,
        upstream: "https://github.com/microsoft/Windows-Containers/issues/616 (ACLs apply after KB5082062/KB5082063, 2026-04)",
        source: "the report, and Microsoft's answer on it of 2026-05-11; 26100.32690 is the April 2026 update's build in Microsoft's CVE records of 2026-04-14 (CVE-2026-32215)",
        fix: "install KB5082063 (April 2026, 26100.32690) or a later cumulative update",
    },
    KnownIssue {
        id: "label-change-resets-connections",
        breaks: "every label change reprograms the endpoint's HNS ACLs and resets its TCP connections",
        when: When::Calico {
            ranges: &[((3, 0, 0), (3, 30, 999))],
            backend: None,
        },
        severity: Severity::Warn,
        upstream: "https://github.com/projectcalico/calico/pull/10437 (3508749654, first in v3.31.0); symptom https://github.com/projectcalico/calico/issues/10199",
        source: "git tag --contains 3508749654: v3.31.0 and later",
        fix: "upgrade the cluster's Calico to v3.31.0 or later (calicoctl-win installs the cluster's release)",
    },
    KnownIssue {
        id: "felix-exits-after-pod-termination",
        breaks: "Felix exits after pod terminations (stale endpoints of Hyper-V isolated pods)",
        when: When::Calico {
            ranges: &[((3, 0, 0), (3, 29, 999))],
            backend: None,
        },
        severity: Severity::Warn,
        upstream: "https://github.com/projectcalico/calico/issues/9905, https://github.com/rancher/rke2/issues/7440; fixed by 78687ec198 (#9505, first in v3.30.0)",
        source: "git tag --contains 78687ec198: v3.30.0 and later",
        fix: "upgrade the cluster's Calico to v3.30.0 or later (calicoctl-win installs the cluster's release)",
    },
    KnownIssue {
        id: "kubelet-from-install-root",
        breaks: "kubelet runs <install_root>\\kubernetes\\kubelet-service.ps1, Calico's old install-kube-services.ps1 script, which Calico no longer ships (removed by fb99e4ed82 in v3.29.6, 6508e16603 in v3.30.4 and 9d1147cf55 in v3.31.0)",
        when: When::KubeletFromInstallRoot,
        severity: Severity::Warn,
        upstream: "https://github.com/projectcalico/calico/pull/10893",
        source: "node/windows-packaging/CalicoWindows/kubernetes/ at v3.29.5 and v3.30.3 (last shipped), absent at v3.29.6 and v3.30.4",
        fix: "run kubelet as its own service (the node's join tooling, or nssm/sc.exe with kubelet.exe); calicoctl-win leaves the file alone: uninstall, --purge too, removes only the files it recorded",
    },
];

/// What the check looks at.
pub struct Facts<'a> {
    /// The Calico release installed or to install, when known.
    pub calico: Option<&'a CalicoVersion>,
    pub backend: Backend,
    /// The Windows build and its update revision (`None` when the registry does not hold it:
    /// an unknown UBR is no UBR 0), when known.
    pub windows: Option<(u32, Option<u32>)>,
    /// kubelet's service command line, when it is a service.
    pub kubelet_command_line: Option<&'a str>,
    /// What NSSM runs for kubelet (`Parameters\AppParameters` of its service key): Calico's
    /// install-kube-services.ps1 registered kubelet as `nssm install kubelet powershell` with
    /// the script there, so the command line names only nssm.exe.
    pub kubelet_app_parameters: Option<&'a str>,
    pub install_root: &'a str,
}

/// Whether the release is known and in one of `ranges`.
fn in_ranges(v: Option<&CalicoVersion>, ranges: &[(Release, Release)]) -> bool {
    v.is_some_and(|v| {
        let n = (v.major, v.minor, v.patch);
        ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&n))
    })
}

impl KnownIssue {
    /// Whether the entry applies to `f`.
    pub fn applies(&self, f: &Facts<'_>) -> bool {
        let backend_ok = |b: Option<Backend>| b.is_none_or(|b| b == f.backend);
        match self.when {
            When::Calico { ranges, backend } => backend_ok(backend) && in_ranges(f.calico, ranges),
            // An unknown UBR is no UBR 0: the entry does not apply (`undecided` says so).
            When::Windows {
                build,
                ubr: (lo, hi),
                backend,
            } => {
                backend_ok(backend)
                    && f.windows.is_some_and(|(b, u)| {
                        b == build && u.is_some_and(|u| (lo..=hi).contains(&u))
                    })
            }
            When::KubeletFromInstallRoot => {
                let script = format!(
                    "{}\\kubernetes\\kubelet-service.ps1",
                    f.install_root.trim_end_matches('\\')
                )
                .to_ascii_lowercase();
                [f.kubelet_command_line, f.kubelet_app_parameters]
                    .into_iter()
                    .flatten()
                    .any(|cmd| cmd.to_ascii_lowercase().contains(&script))
            }
        }
    }

    /// Whether the entry is for this Windows build but the update revision is unknown, so
    /// whether it applies cannot be told.
    fn undecided(&self, f: &Facts<'_>) -> bool {
        matches!(self.when, When::Windows { build, .. } if f.windows == Some((build, None)))
    }
}

/// The check's id.
pub const ID: &str = "known-issues";

/// The `known-issues` check: `fail` when an entry that stops the node applies, `warn` when
/// one that degrades it does, `pass` otherwise. Entries in `allowed` are said, never counted.
pub fn check(f: &Facts<'_>, allowed: &[String]) -> Check {
    let found: Vec<&KnownIssue> = KNOWN_ISSUES.iter().filter(|k| k.applies(f)).collect();
    let (accepted, counted): (Vec<&KnownIssue>, Vec<&KnownIssue>) = found
        .into_iter()
        .partition(|k| allowed.iter().any(|a| a == k.id));
    let said = |k: &KnownIssue| format!("{}: {} ({})", k.id, k.breaks, k.upstream);
    let mut message: Vec<String> = counted.iter().map(|k| said(k)).collect();
    message.extend(
        accepted
            .iter()
            .map(|k| format!("{} accepted with --allow-known-issue", k.id)),
    );
    let undecided: Vec<&str> = KNOWN_ISSUES
        .iter()
        .filter(|k| k.undecided(f))
        .map(|k| k.id)
        .collect();
    if counted.is_empty() && !undecided.is_empty() {
        message.push(format!(
            "the Windows update revision (UBR) is unknown, so whether {} applies cannot be told",
            undecided.join(", ")
        ));
        return Check::warn(
            ID,
            message.join("; "),
            "read it with (Get-ItemProperty 'HKLM:\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion').UBR and compare it with docs/known-issues.md",
        );
    }
    if counted.is_empty() {
        let what = match f.calico {
            Some(v) => format!("Calico {v}, backend {}", f.backend),
            None => format!("backend {} (Calico release unknown)", f.backend),
        };
        message.insert(0, format!("no known breakage for {what} on this build"));
        return Check::pass(ID, message.join("; "));
    }
    let remedy = counted
        .iter()
        .map(|k| format!("{}: {}", k.id, k.fix))
        // status judges too, but only these commands take the flag.
        .chain(std::iter::once(format!(
            "or accept one with --allow-known-issue {} (preflight, install, reconfigure)",
            counted[0].id
        )))
        .collect::<Vec<_>>()
        .join("; ");
    if counted.iter().any(|k| k.severity == Severity::Fail) {
        Check::fail(ID, message.join("; "), remedy)
    } else {
        Check::warn(ID, message.join("; "), remedy)
    }
}

/// Refuses ids no entry has, so a typo in `--allow-known-issue` is not silently nothing.
pub fn unknown_ids(allowed: &[String]) -> Vec<String> {
    allowed
        .iter()
        .filter(|a| !KNOWN_ISSUES.iter().any(|k| k.id == a.as_str()))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A vxlan node with nothing known of it.
    fn blank<'a>() -> Facts<'a> {
        Facts {
            calico: None,
            backend: Backend::Vxlan,
            windows: None,
            kubelet_command_line: None,
            kubelet_app_parameters: None,
            install_root: r"C:\CalicoWindows",
        }
    }

    fn verdict(calico: &str, backend: Backend, windows: (u32, u32), allowed: &[&str]) -> Check {
        let v = CalicoVersion::parse(calico).expect("version");
        let f = Facts {
            calico: Some(&v),
            backend,
            windows: Some((windows.0, Some(windows.1))),
            ..blank()
        };
        let allowed: Vec<String> = allowed.iter().map(|s| (*s).to_owned()).collect();
        check(&f, &allowed)
    }

    const GOOD_2022: (u32, u32) = (20348, 2762);

    #[test]
    fn windows_bgp_fails_on_the_releases_whose_confd_writes_no_bgp_config() {
        use super::super::Verdict::{Fail, Pass, Warn};
        // confd/pkg/backends/calico/client.go at each tag (see the entry's source).
        for (release, want) in [
            // v3.30.2 skips nothing yet; it warns for label changes (before v3.31.0).
            ("3.30.2", Warn),
            ("3.30.3", Fail),
            ("3.30.7", Fail),
            ("3.31.0", Fail),
            ("3.31.4", Fail),
            ("3.31.5", Pass),
            ("3.32.0", Fail),
            ("3.32.1", Fail),
            // No release of these lines has the fix (docs/known-issues.md): the next patches
            // are in too, not passed because the range ended at the last tag read.
            ("3.30.8", Fail),
            ("3.32.2", Fail),
        ] {
            let c = verdict(release, Backend::WindowsBgp, GOOD_2022, &[]);
            assert_eq!(c.verdict, want, "{release}: {}", c.message);
            let c = verdict(release, Backend::Vxlan, GOOD_2022, &[]);
            assert_ne!(c.verdict, Fail, "vxlan {release}: {}", c.message);
        }
        // The message's issues/11714 is asserted by tests/lifecycle/install.rs
        // `install_refuses_windows_bgp_on_a_release_whose_confd_writes_no_bgp_config`.
        let c = verdict("3.31.2", Backend::WindowsBgp, GOOD_2022, &[]);
        // The fix is the cluster's Calico: calicoctl-win installs the cluster's release (and
        // warns about a node on another), so "install v3.31.5" on a node would mislead.
        assert!(
            c.remedy
                .as_deref()
                .is_some_and(|r| r.contains("upgrade the cluster's Calico to v3.31.5")),
            "{:?}",
            c.remedy
        );
        assert!(
            KNOWN_ISSUES
                .iter()
                .all(|k| !k.fix.starts_with("install Calico")),
            "a fix that sends the node off the cluster's release"
        );
    }

    #[test]
    fn old_releases_and_reported_builds_warn_with_the_fix() {
        use super::super::Verdict::{Pass, Warn};
        for (release, backend, windows, want) in [
            ("3.29.7", Backend::Vxlan, GOOD_2022, Warn),
            ("3.30.7", Backend::Vxlan, GOOD_2022, Warn),
            ("3.31.0", Backend::Vxlan, GOOD_2022, Pass),
            ("3.31.6", Backend::Vxlan, (20348, 2582), Warn),
            ("3.31.6", Backend::Vxlan, (20348, 2581), Pass),
            ("3.31.6", Backend::Vxlan, (20348, 2762), Pass),
            ("3.31.6", Backend::WindowsBgp, (20348, 2322), Warn),
            ("3.31.6", Backend::Vxlan, (20348, 2322), Pass),
            ("3.31.6", Backend::Vxlan, (26100, 1), Warn),
        ] {
            let c = verdict(release, backend, windows, &[]);
            assert_eq!(c.verdict, want, "{release} {backend:?} {windows:?}");
        }
        let c = verdict("3.31.6", Backend::Vxlan, (20348, 2582), &[]);
        assert!(c.remedy.as_deref().is_some_and(|r| r.contains("KB5044281")));
    }

    /// Network policy by build, update and release: on 26100 before KB5082063 (26100.32690)
    /// policies do not apply; from it a 26100 node is judged as 17763 and 20348 are, whatever
    /// the Felix release (no tier is left out before v3.29.0: the default tier is the only one).
    /// 26100.1742 and 26100.32690 with v3.28.5 and v3.31.7 are asserted through preflight and
    /// status by tests/lifecycle/ws2025.rs.
    #[test]
    fn policy_is_judged_by_the_build_and_update_alike_for_every_felix_release() {
        use super::super::Verdict::Pass;
        for (windows, release, want) in [
            ((17763, 1), "3.28.5", None),
            ((20348, 2762), "3.28.5", None),
            ((26100, 32689), "3.31.6", Some("ws2025-acl-policies")),
            ((26100, 32698), "3.29.0", None),
        ] {
            let c = verdict(release, Backend::Vxlan, windows, &[]);
            let said: Vec<&str> = KNOWN_ISSUES
                .iter()
                .filter(|k| matches!(k.when, When::Windows { .. }) && c.message.contains(k.id))
                .map(|k| k.id)
                .collect();
            assert_eq!(
                said,
                want.into_iter().collect::<Vec<_>>(),
                "{windows:?} {release}: {}",
                c.message
            );
        }
        assert_eq!(
            verdict("3.31.6", Backend::Vxlan, (26100, 32690), &[]).verdict,
            Pass
        );
        let c = verdict("3.31.6", Backend::Vxlan, (26100, 32689), &[]);
        assert!(
            c.remedy.as_deref().is_some_and(|r| r.contains("KB5082063")),
            "{:?}",
            c.remedy
        );
    }

    /// Its pass, and an unknown id refused, are asserted by tests/cluster/preflight.rs
    /// `known_issues_warn_on_server_2025_and_take_allowed_ids`.
    #[test]
    fn an_accepted_entry_is_said_and_not_counted() {
        use super::super::Verdict::Pass;
        let c = verdict(
            "3.31.6",
            Backend::Vxlan,
            (26100, 1),
            &["ws2025-acl-policies"],
        );
        assert_eq!(c.verdict, Pass, "{}", c.message);
        assert!(c.message.contains("accepted"), "{}", c.message);
    }

    #[test]
    fn kubelet_run_from_the_install_root_is_found() {
        let f = Facts {
            kubelet_command_line: Some(
                r#"powershell.exe -ExecutionPolicy Bypass -File C:\CalicoWindows\kubernetes\kubelet-service.ps1"#,
            ),
            install_root: r"C:\CalicoWindows\",
            ..blank()
        };
        let c = check(&f, &[]);
        assert_eq!(c.verdict, super::super::Verdict::Warn, "{}", c.message);
        assert!(c.message.contains("kubelet-from-install-root"));
        // As Calico's install-kube-services.ps1 registered it (v3.29.5
        // node/windows-packaging/CalicoWindows/kubernetes/install-kube-services.ps1:
        // `nssm install kubelet $powerShellPath`, `nssm set kubelet AppParameters
        // $baseDir\kubernetes\kubelet-service.ps1`): the image is nssm.exe, the script in
        // AppParameters.
        let nssm = Facts {
            kubelet_command_line: Some(r"C:\CalicoWindows\nssm\win64\nssm.exe"),
            kubelet_app_parameters: Some(r"C:\CalicoWindows\kubernetes\kubelet-service.ps1"),
            ..f
        };
        assert!(
            check(&nssm, &[])
                .message
                .contains("kubelet-from-install-root")
        );
        let neither = Facts {
            kubelet_app_parameters: None,
            ..nssm
        };
        assert!(
            !check(&neither, &[])
                .message
                .contains("kubelet-from-install-root")
        );
    }

    /// An unknown UBR is not UBR 0: whether an entry for the build applies cannot be told,
    /// which is said (a warning).
    #[test]
    fn an_unknown_update_revision_is_said_not_taken_for_zero() {
        let f = |windows| Facts { windows, ..blank() };
        let c = check(&f(Some((20348, None))), &[]);
        assert_eq!(c.verdict, super::super::Verdict::Warn, "{}", c.message);
        assert!(c.message.contains("UBR) is unknown"), "{}", c.message);
        let c = check(&f(Some((26100, None))), &[]);
        assert!(c.message.contains("ws2025"), "{}", c.message);
        let c = check(&f(Some((20348, Some(2762)))), &[]);
        assert_eq!(c.verdict, super::super::Verdict::Pass, "{}", c.message);
    }

    /// Every entry is listed once, with its upstream source and a fix, in docs/known-issues.md
    /// with the code's fix.
    #[test]
    fn every_entry_names_its_source_and_a_fix_and_docs_lists_it() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/known-issues.md");
        let doc = fs_err::read_to_string(&path).expect("docs/known-issues.md");
        let mut ids = std::collections::BTreeSet::new();
        for k in KNOWN_ISSUES {
            assert!(ids.insert(k.id), "{} twice", k.id);
            assert!(k.upstream.contains("https://github.com/"), "{}", k.id);
            assert!(!k.source.is_empty() && !k.fix.is_empty(), "{}", k.id);
            let row = doc
                .lines()
                .find(|l| l.starts_with(&format!("| `{}` |", k.id)))
                .unwrap_or_else(|| panic!("docs/known-issues.md has no row for {}", k.id));
            assert!(
                row.contains(k.fix),
                "{}: the fix differs from the code's",
                k.id
            );
        }
    }
}
