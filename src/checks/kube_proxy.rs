//! kube-proxy as a Windows service, checked the way Calico's `kube-proxy-service.ps1` (up to
//! v3.30) configured it: `KUBE_NETWORK` naming Calico's network, on overlay `--source-vip`
//! `Calico_ep`'s address, and DSR where the Windows build has it. No service (a HostProcess
//! DaemonSet's kube-proxy) is a warning.

use super::Check;
use super::known_issues::Release;
use crate::config::Config;
use crate::config::types::Backend;
use crate::duration::{Look, Pauses, Stop, Stopped, Wait, poll_until};
use crate::host::RegValue;
use crate::host::flag;
use crate::host::{
    Host, HostError, InstalledService, LineSink, Output, ProcessSpec, ServiceState,
    split_command_line,
};
use crate::layout::{CALICO_KEY, CALICO_NETWORK, KUBE_PROXY_VERSION_VALUE};
use crate::render::facts::OsBuild;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub const ID: &str = "kube-proxy";
pub use crate::layout::SOURCE_VIP_ENDPOINT;

/// What the host says of kube-proxy.
#[derive(Clone, Debug, Default)]
pub struct KubeProxyFacts {
    /// The `kube-proxy` service, if one is registered.
    pub service: Option<InstalledService>,
    /// `KUBE_NETWORK` from the service's environment (the `Environment` value of its key).
    pub kube_network_env: Option<String>,
    /// Whether Calico's HNS network exists: before it does (before install), kube-proxy has
    /// nothing of Calico's to be checked against.
    pub calico_network: bool,
    /// The address of `Calico_ep` on the Calico network, once calico-node made it.
    pub source_vip_endpoint: Option<String>,
    /// The Windows build, for DSR.
    pub os_build: Option<OsBuild>,
    /// kube-proxy's version (`v1.33.1`): calicoctl-win's own kube-proxy's (`own_version`,
    /// `binary_version`), else the Node's (`status.nodeInfo.kubeProxyVersion`) when read and set.
    pub version: Option<String>,
    /// Whether `version` is the Node's: the kubelet's report, deprecated and left empty where
    /// its `DisableNodeKubeProxyVersion` gate is on (KEP-4004).
    pub node_reported: bool,
}

/// How long `kube-proxy --version` may take.
pub const VERSION_TIMEOUT: Duration = Duration::from_secs(30);

/// How much of `--version`'s answer is kept (`Kubernetes v1.33.2` is 18 bytes).
const VERSION_CAP: usize = 4096;

/// `<exe> --version`'s answer (`Kubernetes v1.33.2`, its first `VERSION_CAP` bytes), within
/// `VERSION_TIMEOUT` and cut by `stop`; `None` when it gave none in time. calicoctl-win's
/// kube-proxy service reads it at each start (`supervise::kube_proxy`) and records it.
pub fn version_answer<E: From<HostError> + From<Stopped>>(
    host: &dyn Host,
    exe: &str,
    stop: &Stop,
    say: &mut dyn FnMut(&str),
) -> Result<Option<String>, E> {
    let output = Arc::new(Mutex::new(String::new()));
    let sink = Arc::clone(&output);
    let spec = ProcessSpec {
        program: exe.to_owned(),
        args: vec!["--version".to_owned()],
        env: Default::default(),
        cwd: None,
        output: Output::Lines(LineSink::new(move |line| {
            if let Ok(mut o) = sink.lock() {
                let room = VERSION_CAP.saturating_sub(o.len());
                o.push_str(&String::from_utf8_lossy(&line[..line.len().min(room)]));
            }
        })),
    };
    let mut child = host.spawn(&spec)?;
    let wait = Wait {
        what: &format!("{exe} --version to answer"),
        timeout: VERSION_TIMEOUT,
        pauses: Pauses::every(Duration::from_millis(100)),
        stop,
        say,
    };
    let answered = poll_until(
        wait,
        || -> Result<Look<bool, ()>, E> {
            Ok(match child.wait_timeout(Duration::ZERO)? {
                Some(_) => Look::Done(true),
                None => Look::Pending(()),
            })
        },
        |()| Ok(false),
    );
    if !matches!(answered, Ok(true)) {
        let _ = child.stop(Duration::from_secs(1));
        return answered.map(|_| None);
    }
    Ok(Some(
        output
            .lock()
            .map(|o| o.trim().to_owned())
            .unwrap_or_default(),
    ))
}

/// The release word (`v1.33.2`) in `--version`'s answer.
fn release_in(answer: &str) -> Option<String> {
    answer
        .split_whitespace()
        .find(|w| release(w).is_some())
        .map(str::to_owned)
}

/// The version calicoctl-win's own kube-proxy service recorded when it last started the
/// binary (`supervise::kube_proxy`); `None` without that service or its record. No process is
/// run: `status --offline` is the fleet DaemonSet's readiness probe.
pub fn own_version(h: &dyn Host, f: &KubeProxyFacts) -> Option<String> {
    if !f.service.as_ref().is_some_and(own_service) {
        return None;
    }
    match h.reg_get(CALICO_KEY, KUBE_PROXY_VERSION_VALUE) {
        Ok(Some(RegValue::Sz(answer))) => release_in(&answer),
        _ => None,
    }
}

/// `kube_proxy.path --version`, which runs elevated: only once `dir-access` passed
/// (`protected`), as install requires of that folder (`installed::protection::system_dirs`).
pub fn binary_version(h: &dyn Host, c: &Config, protected: bool) -> Option<String> {
    let exe = c.kube_proxy.path.as_ref().filter(|_| protected)?;
    let answer =
        version_answer::<anyhow::Error>(h, exe.as_str(), &Stop::new(), &mut |_| {}).ok()??;
    release_in(&answer)
}

/// `Calico_ep`'s address on the Calico network, once calico-node made it.
pub fn source_vip_endpoint(host: &dyn Host) -> crate::host::HostResult<Option<String>> {
    let Some(network) = host
        .hns_networks()?
        .into_iter()
        .find(|n| n.name == CALICO_NETWORK)
    else {
        return Ok(None);
    };
    Ok(host
        .hns_endpoints(&network.id)?
        .into_iter()
        .find(|e| e.name == SOURCE_VIP_ENDPOINT)
        .and_then(|e| e.ip))
}

/// Whether the service runs calicoctl-win's `service run kube-proxy`.
pub(crate) fn own_service(svc: &InstalledService) -> bool {
    let (_, args) = split_command_line(&svc.command_line);
    args.windows(3)
        .any(|w| w == ["service", "run", "kube-proxy"])
}

/// What frees the node of a kube-proxy service calicoctl-win did not register.
pub(crate) const FOREIGN_FIX: &str = "remove that service first (sc.exe delete kube-proxy; for Calico's install-kube-services.ps1, uninstall-kube-services.ps1 -service kube-proxy), or leave kube_proxy.path unset to keep it";

/// A kube-proxy (winkernel) breakage on Windows, by kube-proxy version.
struct Breakage {
    /// What breaks, in one sentence.
    breaks: &'static str,
    /// The Windows build it needs (`None`: any).
    build: Option<u32>,
    /// The kube-proxy releases in it, inclusive `(major, minor, patch)` ranges.
    affected: &'static [(Release, Release)],
    /// The releases that fix it, and the upstream issue and fix.
    fix: &'static str,
}

/// kube-proxy's breakage on Windows Server 2025 and in winkernel, each read in
/// kubernetes/kubernetes's CHANGELOG-1.3x.md (the release notes of the fix and its
/// cherry-picks). Left out: the panic on a load balancer without port mappings
/// (kubernetes#141488), fixed by #141489 in v1.38.0-alpha.1 (CHANGELOG-1.38.md) and
/// cherry-picked to release-1.37 and release-1.36 (#141681, #141707, 2026-09), whose first
/// patch releases with it are not read here: no version range can be judged.
const BREAKAGE: &[Breakage] = &[
    // kubernetes#131466: with HNS 15.4 (Windows Server 2025) ModifyLoadBalancer, which
    // kube-proxy calls from 1.31 (#124092), left the load balancer's old endpoints. Fixed by
    // #131506 (CHANGELOG-1.34.md, v1.34.0-beta.0), #131652 (CHANGELOG-1.32.md, 1.32.6) and
    // #131649 (CHANGELOG-1.33.md, 1.33.2); no 1.31 cherry-pick (asked on #131649, none made).
    Breakage {
        breaks: "on Windows Server 2025 (HNS 15.4) kube-proxy's ModifyLoadBalancer leaves a Service's load balancer on its old endpoints: scaled or replaced pods are not reached through the Service",
        build: Some(26100),
        affected: &[
            ((1, 31, 0), (1, 31, 999)),
            ((1, 32, 0), (1, 32, 5)),
            ((1, 33, 0), (1, 33, 1)),
        ],
        fix: "kube-proxy 1.32.6, 1.33.2, 1.34.0 or later (kubernetes/kubernetes#131466, fixed by #131506)",
    },
    // kubernetes#135144: with one Deployment behind several Services, endpointsMapChange()
    // cleared terminatedEndpoints on each Service's update, so remote endpoints stayed
    // (reported on 1.31 and later). Fixed by #135146 (CHANGELOG-1.35.md, v1.35.0-beta.0),
    // #135172 (1.32.10), #135171 (1.33.6) and #135170 (1.34.2).
    Breakage {
        breaks: "kube-proxy (winkernel) leaves stale remote endpoints when one Deployment backs several Services",
        build: None,
        affected: &[
            ((1, 31, 0), (1, 31, 999)),
            ((1, 32, 0), (1, 32, 9)),
            ((1, 33, 0), (1, 33, 5)),
            ((1, 34, 0), (1, 34, 1)),
        ],
        fix: "kube-proxy 1.32.10, 1.33.6, 1.34.2, 1.35.0 or later (kubernetes/kubernetes#135144, fixed by #135146)",
    },
];

/// `v1.33.1` (a `+build` or `-pre` suffix aside) as `(1, 33, 1)`.
fn release(version: &str) -> Option<Release> {
    let v = version.trim().trim_start_matches('v');
    let v = v.split(['-', '+']).next()?;
    let mut n = v.split('.').map(str::parse::<u32>);
    Some((n.next()?.ok()?, n.next()?.ok()?, n.next()?.ok()?))
}

/// The known breakage of this kube-proxy version on this build, each with its fix.
fn breakage(f: &KubeProxyFacts) -> Vec<Finding> {
    let Some(v) = f.version.as_deref().and_then(release) else {
        return Vec::new();
    };
    BREAKAGE
        .iter()
        .filter(|b| {
            b.build
                .is_none_or(|want| f.os_build.is_some_and(|o| o.build == want))
        })
        .filter(|b| b.affected.iter().any(|(lo, hi)| (*lo..=*hi).contains(&v)))
        .map(|b| {
            let whose = if f.node_reported {
                " (the version the Node reports)"
            } else {
                ""
            };
            (
                format!(
                    "kube-proxy {}{whose}: {}",
                    f.version.as_deref().unwrap_or_default(),
                    b.breaks
                ),
                format!("move kube-proxy to {}", b.fix),
            )
        })
        .collect()
}

/// The kube-proxy check with its known breakage: each said as a warning (a failure stays one).
pub fn check(f: &KubeProxyFacts, c: &Config) -> Check {
    let mut base = check_setup(f, c);
    if c.backend == Backend::None {
        return base;
    }
    if f.version.is_none() {
        base.message.push_str(UNJUDGED);
    }
    let found = breakage(f);
    if found.is_empty() {
        return base;
    }
    let said = (
        base.message.clone(),
        base.remedy.clone().unwrap_or_default(),
    );
    match base.verdict {
        super::Verdict::Fail => verdict(&[said], &found),
        super::Verdict::Warn => verdict(&[], &[vec![said], found].concat()),
        _ => verdict(&[], &found),
    }
}

/// Said beside the verdict when no kube-proxy version is known (none recorded, run or read
/// from a Node, or none was asked: install's checks, `--offline`, an unprotected folder).
const UNJUDGED: &str =
    "; kube-proxy's known issues could not be judged: its version is not known here";

/// A problem found, with what fixes it.
type Finding = (String, String);

/// How kube-proxy is set up: every problem at once, the worst verdict.
fn check_setup(f: &KubeProxyFacts, c: &Config) -> Check {
    if c.backend == Backend::None {
        return Check::skip(ID, "backend none: kube-proxy is configured by the platform");
    }
    if !f.calico_network {
        return Check::skip(
            ID,
            "Calico's HNS network does not exist yet: kube-proxy is checked once Calico is installed",
        );
    }
    let Some(svc) = &f.service else {
        return Check::warn(
            ID,
            "no kube-proxy service: services do not work on this node unless kube-proxy runs another way (the sig-windows-tools HostProcess DaemonSet kube-proxy-windows)",
            "run kube-proxy as the kube-proxy-windows DaemonSet (sigwindowstools/kube-proxy:<version>-calico-hostprocess), or register a kube-proxy service with --network-name=Calico",
        );
    };
    if own_service(svc) {
        return own_role(svc, f, c);
    }
    let (_, args) = split_command_line(&svc.command_line);
    if c.kube_proxy.path.is_some() {
        return Check::fail(
            ID,
            format!(
                "kube_proxy.path asks for calicoctl-win's kube-proxy service, but a kube-proxy service it did not register is on this node ({})",
                svc.command_line
            ),
            FOREIGN_FIX,
        );
    }
    let mut fails = Vec::new();
    let mut warns: Vec<Finding> = not_running(svc, "Start-Service kube-proxy")
        .into_iter()
        .collect();
    fails.extend(network(&args, f));
    if c.backend == Backend::Vxlan {
        match source_vip(&args, f) {
            Ok(found) => fails.extend(found),
            Err(not_yet) => warns.push(not_yet),
        }
    }
    match dsr(&args, f) {
        Some((true, found)) => fails.push(found),
        Some((false, found)) => warns.push(found),
        None => {}
    }
    verdict(&fails, &warns)
}

/// kube-proxy run by calicoctl-win's own service (`supervise::kube_proxy`, which sets its flags):
/// only whether it runs, and on overlay whether the source VIP's endpoint is there.
fn own_role(svc: &InstalledService, f: &KubeProxyFacts, c: &Config) -> Check {
    let fix = "Start-Service kube-proxy, and read calico-kube-proxy.log in the logs directory";
    let mut warns: Vec<Finding> = not_running(svc, fix).into_iter().collect();
    if c.backend == Backend::Vxlan && f.source_vip_endpoint.is_none() {
        warns.push((
            format!(
                "{SOURCE_VIP_ENDPOINT} is not on the Calico network yet: kube-proxy waits for it"
            ),
            "check again once CalicoNode has started (calicoctl-win status)".to_owned(),
        ));
    }
    if warns.is_empty() {
        return Check::pass(
            ID,
            "kube-proxy runs as calicoctl-win's kube-proxy service, on the Calico network with its source VIP and DSR as this build allows",
        );
    }
    verdict(&[], &warns)
}

/// The service's state, when it is not running, with `fix`.
fn not_running(svc: &InstalledService, fix: &str) -> Option<Finding> {
    let state = format!("the kube-proxy service is {:?}", svc.state).to_lowercase();
    (svc.state != ServiceState::Running).then(|| (state, fix.to_owned()))
}

/// The network kube-proxy programs: `--network-name`, else `KUBE_NETWORK`.
fn network(args: &[String], f: &KubeProxyFacts) -> Option<Finding> {
    match flag(args, "network-name").or(f.kube_network_env.as_deref()) {
        Some(n) if n == CALICO_NETWORK => None,
        Some(n) => Some((
            format!("kube-proxy programs the HNS network {n:?}, not Calico's {CALICO_NETWORK:?}"),
            format!("give kube-proxy --network-name={CALICO_NETWORK} (or KUBE_NETWORK={CALICO_NETWORK} in its environment) and restart it"),
        )),
        None => Some((
            "kube-proxy is not told which HNS network to program (no --network-name, no KUBE_NETWORK)".to_owned(),
            format!("give kube-proxy --network-name={CALICO_NETWORK} and restart it"),
        )),
    }
}

/// On overlay, the source VIP must be `Calico_ep`'s address; `Err` (a warning) while calico-node
/// has not made that endpoint yet.
fn source_vip(args: &[String], f: &KubeProxyFacts) -> Result<Option<Finding>, Finding> {
    let vip = flag(args, "source-vip");
    match (&f.source_vip_endpoint, vip) {
        (Some(ep), Some(v)) if v == ep => Ok(None),
        (Some(ep), Some(v)) => Ok(Some((
            format!(
                "kube-proxy's --source-vip is {v}, but {SOURCE_VIP_ENDPOINT} on the Calico network is {ep}"
            ),
            format!("set --source-vip={ep} in kube-proxy's command line and restart it"),
        ))),
        (Some(ep), None) => Ok(Some((
            "kube-proxy has no --source-vip, which overlay networking needs".to_owned(),
            format!(
                "add --source-vip={ep} --feature-gates=WinOverlay=true to kube-proxy's command line and restart it"
            ),
        ))),
        (None, _) => Err((
            format!(
                "{SOURCE_VIP_ENDPOINT} is not on the Calico network yet, so --source-vip cannot be compared"
            ),
            "check again once CalicoNode has started (calicoctl-win status)".to_owned(),
        )),
    }
}

/// DSR on where the build has it, never where it does not: `(true, _)` is a failure.
fn dsr(args: &[String], f: &KubeProxyFacts) -> Option<(bool, Finding)> {
    let on = flag(args, "enable-dsr") == Some("true") || args.iter().any(|a| a == "--enable-dsr");
    match (on, f.os_build.map(OsBuild::supports_dsr)) {
        (true, Some(false)) => Some((true, (
            format!(
                "kube-proxy has --enable-dsr but Windows build {} has no DSR (17763.1432 or 18317 and later)",
                f.os_build.map_or_else(String::new, |b| b.to_string())
            ),
            "remove --enable-dsr=true and WinDSR=true from kube-proxy's command line, or update Windows".to_owned(),
        ))),
        (false, Some(true)) => Some((false, (
            "kube-proxy runs without DSR, which this Windows build supports".to_owned(),
            "add --enable-dsr=true --feature-gates=WinDSR=true to kube-proxy's command line and restart it".to_owned(),
        ))),
        // `--feature-gates=A=true,WinDSR=true`
        (true, _) if !flag(args, "feature-gates").is_some_and(|g| {
            g.split(',').any(|g| g.trim().eq_ignore_ascii_case("WinDSR=true"))
        }) => Some((false, (
            "kube-proxy has --enable-dsr=true without the WinDSR feature gate (off by default before kube-proxy 1.33)".to_owned(),
            "before kube-proxy 1.33, add WinDSR=true to --feature-gates; from 1.33 it is on by default and needs nothing".to_owned(),
        ))),
        _ => None,
    }
}

/// Every failure and warning in one check: failed if any failed, each with its fix.
fn verdict(fails: &[Finding], warns: &[Finding]) -> Check {
    let join = |pick: fn(&Finding) -> &str| {
        let all: Vec<&str> = fails.iter().chain(warns).map(pick).collect();
        all.join("; ")
    };
    let (messages, fixes) = (join(|f| &f.0), join(|f| &f.1));
    if !fails.is_empty() {
        Check::fail(ID, messages, fixes)
    } else if !warns.is_empty() {
        Check::warn(ID, messages, fixes)
    } else {
        Check::pass(
            ID,
            "kube-proxy runs on the Calico network, with its source VIP and DSR as this build allows",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Verdict;
    use crate::host::StartType;

    fn service(command_line: &str) -> InstalledService {
        InstalledService {
            name: "kube-proxy".into(),
            state: ServiceState::Running,
            pid: Some(42),
            since: None,
            display_name: "kube-proxy".into(),
            command_line: command_line.into(),
            start: StartType::Auto,
            dependencies: vec![],
            account: "LocalSystem".into(),
        }
    }

    fn facts(command_line: &str, build: &str) -> KubeProxyFacts {
        KubeProxyFacts {
            service: Some(service(command_line)),
            calico_network: true,
            source_vip_endpoint: Some("10.244.1.2".into()),
            os_build: Some(build.parse().expect("build")),
            ..KubeProxyFacts::default()
        }
    }

    /// A kube-proxy on Calico's network with DSR.
    const GOOD: &str = r"c:\k\kube-proxy.exe --network-name=Calico --source-vip=10.244.1.2 --enable-dsr=true --feature-gates=WinDSR=true";

    /// Each known breakage: a kube-proxy in it is warned with the release to move to, one
    /// at the fixed release (and on a build the entry does not need) is not.
    #[test]
    fn known_kube_proxy_breakage_is_warned_with_its_fix() {
        for (build, version, want) in [
            // ModifyLoadBalancer on HNS 15.4 (kubernetes#131466): Server 2025 only.
            ("26100.32690", "v1.32.5", Some("kube-proxy 1.32.6")),
            ("26100.32690", "v1.33.1", Some("kube-proxy 1.32.6")),
            ("26100.32690", "v1.31.9", Some("kube-proxy 1.32.6")),
            ("26100.32690", "v1.32.10", None),
            ("26100.32690", "v1.33.6", None),
            // Stale remote endpoints (kubernetes#135144): any build.
            ("20348.2762", "v1.34.1", Some("kube-proxy 1.32.10")),
            ("20348.2762", "v1.32.9", Some("kube-proxy 1.32.10")),
            ("20348.2762", "v1.34.2", None),
            ("20348.2762", "v1.35.0", None),
            ("20348.2762", "v1.30.14", None),
        ] {
            let f = KubeProxyFacts {
                version: Some(version.into()),
                ..facts(GOOD, build)
            };
            let c = check(&f, &config("vxlan"));
            let remedy = c.said.remedy.clone().unwrap_or_default();
            match want {
                Some(fix) => {
                    assert_eq!(c.verdict, Verdict::Warn, "{build} {version}: {c:?}");
                    assert!(remedy.contains(fix), "{build} {version}: {remedy}");
                    assert!(c.message.contains(version), "{c:?}");
                }
                None => assert_eq!(c.verdict, Verdict::Pass, "{build} {version}: {c:?}"),
            }
        }
    }

    /// A version from the Node is said to be the Node's report; with no version at all the
    /// check says kube-proxy's known issues could not be judged.
    #[test]
    fn the_nodes_version_is_named_and_no_version_is_said() {
        let reported = KubeProxyFacts {
            version: Some("v1.33.1".into()),
            node_reported: true,
            ..facts(GOOD, "26100.32690")
        };
        let c = check(&reported, &config("vxlan"));
        assert_eq!(c.verdict, Verdict::Warn, "{c:?}");
        assert!(
            c.message
                .contains("kube-proxy v1.33.1 (the version the Node reports):"),
            "{}",
            c.message
        );
        for f in [facts(GOOD, "26100.32690"), KubeProxyFacts::default()] {
            let c = check(&f, &config("vxlan"));
            assert!(
                c.message
                    .contains("kube-proxy's known issues could not be judged"),
                "{c:?}"
            );
        }
    }

    fn config(backend: &str) -> Config {
        crate::config::tests::from_sets(&["node.name=win-1", &format!("backend={backend}")])
    }

    /// calicoctl-win's own kube-proxy service derives its flags at each start: it passes while
    /// it runs and Calico_ep is there, warns while it waits for Calico_ep or is stopped; a
    /// foreign service fails when kube_proxy.path asks for calicoctl-win's own.
    #[test]
    fn the_own_kube_proxy_service_is_judged_by_what_it_derives_its_flags_from() {
        let own = r"C:\CalicoWindows\calicoctl-win.exe service run kube-proxy --install-root C:\CalicoWindows";
        let vx = config("vxlan");
        assert_eq!(check(&facts(own, "20348.1"), &vx).verdict, Verdict::Pass);
        let mut waiting = facts(own, "20348.1");
        waiting.source_vip_endpoint = None;
        let c = check(&waiting, &vx);
        assert_eq!(c.verdict, Verdict::Warn, "{c:?}");
        assert!(
            c.message.contains("kube-proxy waits for it"),
            "{}",
            c.message
        );
        let mut stopped = facts(own, "20348.1");
        if let Some(svc) = stopped.service.as_mut() {
            svc.state = ServiceState::Stopped;
        }
        assert_eq!(check(&stopped, &vx).verdict, Verdict::Warn);

        let wants_own = crate::config::tests::from_sets(&[
            "node.name=win-1",
            r"kube_proxy.path=C:\k\kube-proxy.exe",
        ]);
        let foreign = r"C:\k\kube-proxy.exe --network-name=Calico --source-vip=10.244.1.2";
        let c = check(&facts(foreign, "17763.1000"), &wants_own);
        assert_eq!(c.verdict, Verdict::Fail, "{c:?}");
        assert!(c.message.contains("did not register"), "{}", c.message);
    }

    /// A wrong network name and source VIP, and the script's own healthy line, are asserted by
    /// tests/lifecycle/reconfigure.rs `status_and_preflight_check_the_kube_proxy_service`.
    #[test]
    fn each_misconfiguration_fails_with_its_fix() {
        let vx = config("vxlan");
        let c = check(&facts(GOOD, "17763.1000"), &vx);
        assert_eq!(c.verdict, Verdict::Fail);
        assert!(c.message.contains("has no DSR"), "{}", c.message);

        // KUBE_NETWORK in its environment counts as the network name.
        let mut f = facts(r"C:\k\kube-proxy.exe --source-vip 10.244.1.2", "20348.1");
        f.kube_network_env = Some("Calico".into());
        let c = check(&f, &vx);
        assert_eq!(c.verdict, Verdict::Warn, "DSR off where supported: {c:?}");
        assert!(c.message.contains("without DSR"), "{}", c.message);

        // No network at all, no source VIP on overlay.
        let c = check(&facts(r"C:\k\kube-proxy.exe", "20348.1"), &vx);
        assert_eq!(c.verdict, Verdict::Fail);
        assert!(
            c.message.contains("not told which HNS network"),
            "{}",
            c.message
        );
        assert!(c.message.contains("no --source-vip"), "{}", c.message);
    }

    #[test]
    fn bgp_needs_no_source_vip_and_no_service_is_a_warning() {
        let c = check(
            &facts(
                r"C:\k\kube-proxy.exe --network-name=Calico --enable-dsr=true --feature-gates=WinDSR=true",
                "20348.1",
            ),
            &config("windows-bgp"),
        );
        assert_eq!(c.verdict, Verdict::Pass, "{c:?}");
        let installed = KubeProxyFacts {
            calico_network: true,
            ..KubeProxyFacts::default()
        };
        let c = check(&installed, &config("vxlan"));
        assert_eq!(c.verdict, Verdict::Warn);
        assert!(
            c.said
                .remedy
                .unwrap_or_default()
                .contains("kube-proxy-windows")
        );
        // Before install there is nothing of Calico's to check kube-proxy against.
        let c = check(&KubeProxyFacts::default(), &config("vxlan"));
        assert_eq!(c.verdict, Verdict::Skip);
    }
}
