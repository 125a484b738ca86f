//! The kube-proxy service (opt-in: `kube_proxy.path`), as Calico's
//! `kubernetes\kube-proxy-service.ps1` (up to v3.30) ran it, every wait bounded: wait for the
//! HNS network `Calico`; read `kube-proxy --version`; DSR where the build has it
//! (`Get-IsDSRSupported`); on Overlay, `--source-vip` from `Calico_ep`; `KUBE_NETWORK=Calico`.
//! Policy lists are not deleted first: kube-proxy does it since 1.14 (`pkg/proxy/winkernel`
//! `NewProxier`).

use super::log::Log;
use super::settings::{Launch, Result, Settings, SuperviseError, environment};
use crate::checks::kube_proxy::{VERSION_TIMEOUT, source_vip_endpoint};
use crate::duration::{Look, Pauses, Stop};
use crate::host::Host;
use crate::layout::SOURCE_VIP_ENDPOINT;
use crate::layout::env::EnvVars;
use crate::layout::{CALICO_KEY, CALICO_NETWORK, KUBE_PROXY_VERSION_VALUE};
use crate::render::facts::OsBuild;
use std::collections::BTreeMap;

/// What kube-proxy is started with, from what the node says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inputs {
    pub node_name: String,
    pub kubeconfig: String,
    /// kube-proxy's version, (major, minor).
    pub version: (u32, u32),
    pub dsr: bool,
    /// `Calico_ep`'s address, on an Overlay network.
    pub source_vip: Option<String>,
}

/// kube-proxy's arguments, as kube-proxy-service.ps1 built them.
pub fn arguments(i: &Inputs) -> Vec<String> {
    let mut args = vec![
        format!("--hostname-override={}", i.node_name),
        "--v=4".to_owned(),
        "--proxy-mode=kernelspace".to_owned(),
        format!("--kubeconfig={}", i.kubeconfig),
    ];
    let mut gates = Vec::new();
    if i.dsr && i.version >= (1, 14) {
        // An unknown gate stops kube-proxy: WinDSR only before 1.33
        // (pkg/features/kube_features.go: 1.33 beta on, 1.34 GA locked).
        if i.version < (1, 33) {
            gates.push("WinDSR=true");
        }
        args.push("--enable-dsr=true".to_owned());
    }
    if let Some(vip) = &i.source_vip {
        args.push(format!("--source-vip={vip}"));
        if i.version < (1, 20) {
            gates.push("WinOverlay=true");
        }
    }
    if !gates.is_empty() {
        args.push(format!("--feature-gates={}", gates.join(",")));
    }
    args
}

/// The version in `kube-proxy --version` (`Kubernetes v1.33.2`), as the script's regex read it.
pub fn parse_version(output: &str) -> Option<(u32, u32)> {
    let at = output.find('v')?;
    output[at..].split_whitespace().find_map(|w| {
        let mut parts = w.strip_prefix('v')?.split('.');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        Some((major, minor))
    })
}

/// The service: the start-up, then kube-proxy until a stop is requested.
pub fn run(host: &dyn Host, s: &Settings, stop: &Stop, log: &Log) -> Result<()> {
    let env = environment(host, s)?;
    let launch = prepare(host, s, &env, stop, log)?;
    super::agent::supervise(host, s, &launch, &env, None, stop, log)
}

/// What starting the service does on a simulated host: the start-up, for real.
pub fn start_phase(host: &dyn Host, s: &Settings, log: &Log) -> Result<Launch> {
    let env = environment(host, s)?;
    prepare(host, s, &env, &Stop::new(), log)
}

/// The waits and the command line of kube-proxy.
fn prepare(
    host: &dyn Host,
    s: &Settings,
    env: &BTreeMap<String, String>,
    stop: &Stop,
    log: &Log,
) -> Result<Launch> {
    let var = |name: &str| env.get(name).cloned().unwrap_or_default();
    let exe = s
        .program
        .clone()
        .unwrap_or_else(|| var(EnvVars::KUBE_PROXY_PATH));
    if exe.is_empty() || (s.program.is_none() && host.file_access(&exe)?.is_none()) {
        return Err(SuperviseError::NoKubeProxy { path: exe });
    }
    let overlay = wait(
        s,
        stop,
        log,
        &format!("the HNS network {CALICO_NETWORK}"),
        || {
            Ok(host
                .hns_networks()?
                .into_iter()
                .find(|n| n.name == CALICO_NETWORK)
                .map(|n| n.network_type.eq_ignore_ascii_case("overlay")))
        },
    )?;
    let version = version(host, &exe, stop, log)?;
    if overlay && version < (1, 14) {
        return Err(SuperviseError::KubeProxyVersion {
            found: format!("v{}.{}", version.0, version.1),
        });
    }
    let source_vip = if overlay {
        Some(wait(
            s,
            stop,
            log,
            &format!("the host endpoint {SOURCE_VIP_ENDPOINT}"),
            || source_vip_endpoint(host),
        )?)
    } else {
        None
    };
    let inputs = Inputs {
        node_name: var(EnvVars::NODENAME),
        kubeconfig: var(EnvVars::KUBE_PROXY_KUBECONFIG),
        version,
        dsr: dsr(host, log)?,
        source_vip,
    };
    let args = arguments(&inputs);
    log.info(&format!(
        "kube-proxy v{}.{} on network {CALICO_NETWORK}: {}",
        version.0,
        version.1,
        args.join(" ")
    ));
    Ok(Launch {
        program: exe,
        args,
        cwd: None,
    })
}

/// Whether HNS does DSR: by HNS's version (hcsshim's `DSRSupported`), else the build's.
fn dsr(host: &dyn Host, log: &Log) -> Result<bool> {
    match host.hns_version() {
        Ok(v) => {
            let on = crate::host::hns::dsr_supported(v);
            log.info(&format!(
                "HNS {}.{} {} Direct Server Return (hcsshim's DSRVersion: 9.3 to 9.x, 10.2 and later)",
                v.0,
                v.1,
                if on { "does" } else { "does not do" }
            ));
            Ok(on)
        }
        Err(e) => {
            let facts = host.system_facts()?;
            let build = OsBuild {
                build: facts.build,
                ubr: facts.ubr.unwrap_or(0),
            };
            let on = build.supports_dsr();
            log.info(&format!(
                "the HNS version cannot be read ({e}): DSR {} by Windows build {}.{} (17763.1432, or 18317 and later)",
                if on { "on" } else { "off" },
                build.build,
                build.ubr
            ));
            Ok(on)
        }
    }
}

/// Polls `found` until it gives a value, for at most `network_timeout`.
fn wait<T>(
    s: &Settings,
    stop: &Stop,
    log: &Log,
    what: &str,
    mut found: impl FnMut() -> crate::host::HostResult<Option<T>>,
) -> Result<T> {
    let wait = (what, s.network_timeout, Pauses::every(s.timing.poll));
    let look = || -> Result<Look<T, ()>> { Ok(found()?.map_or(Look::Pending(()), Look::Done)) };
    log.poll_until(wait, stop, look, |()| {
        Err(SuperviseError::KubeProxyWait {
            what: what.to_owned(),
            after: s.network_timeout,
        })
    })
}

/// `kube-proxy --version`, bounded in time and cut by the service's stop.
fn version(host: &dyn Host, exe: &str, stop: &Stop, log: &Log) -> Result<(u32, u32)> {
    // Forgotten first: a start with no readable answer leaves no earlier binary's record.
    let forgotten = host.reg_delete_value(CALICO_KEY, KUBE_PROXY_VERSION_VALUE);
    log.failed("cannot forget kube-proxy's recorded version", forgotten);
    let say = &mut |l: &str| log.info(l);
    let text = crate::checks::kube_proxy::version_answer::<SuperviseError>(host, exe, stop, say)?
        .ok_or_else(|| SuperviseError::KubeProxyVersion {
        found: format!("no answer to --version within {VERSION_TIMEOUT:?}"),
    })?;
    log.info(&format!("{exe} --version: {text}"));
    let version = parse_version(&text).ok_or_else(|| SuperviseError::KubeProxyVersion {
        found: text.clone(),
    })?;
    // Kept for `status` and `preflight`, which judge kube-proxy's known issues by it.
    let answer = crate::host::RegValue::Sz(text);
    let kept = host.reg_set(CALICO_KEY, KUBE_PROXY_VERSION_VALUE, &answer);
    log.failed("cannot record kube-proxy's version", kept);
    Ok(version)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The service's stop cuts the version's wait; a start whose kube-proxy gives no readable
    /// version leaves no record of an earlier one.
    #[cfg(unix)]
    #[test]
    fn the_version_wait_ends_with_the_stop_and_an_unreadable_one_is_forgotten() {
        use crate::host::Registry as _;
        let dir = tempfile::tempdir().expect("tempdir");
        let log = Log::open(dir.path().join("kp.log"), Default::default(), false);
        let host = crate::host::sim::SimHost::in_memory("ws2022").expect("host");
        let exe = crate::supervise::tests::script(dir.path(), "kube-proxy", "exec sleep 60");
        let stop = Stop::new();
        stop.request();
        let err = version(&host, &exe, &stop, &log).unwrap_err();
        assert!(matches!(err, SuperviseError::Stopped), "{err:?}");

        let body = "echo 'kube-proxy version unknown'";
        let exe = crate::supervise::tests::script(dir.path(), "kube-proxy", body);
        let earlier = crate::host::RegValue::Sz("Kubernetes v1.32.5".into());
        host.reg_set(CALICO_KEY, KUBE_PROXY_VERSION_VALUE, &earlier)
            .expect("record");
        let err = version(&host, &exe, &Stop::new(), &log).unwrap_err();
        assert!(
            matches!(err, SuperviseError::KubeProxyVersion { .. }),
            "{err:?}"
        );
        let kept = host.reg_get(CALICO_KEY, KUBE_PROXY_VERSION_VALUE);
        assert_eq!(kept.expect("read"), None);
    }

    /// DSR by HNS's own version where it answers (hcsshim's `DSRSupported`), else by the build.
    #[test]
    fn dsr_is_chosen_by_the_hns_version_where_hns_answers() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = Log::open(dir.path().join("kp.log"), Default::default(), false);
        let new = crate::host::sim::SimHost::in_memory("ws2022").expect("host");
        assert!(
            dsr(&new, &log).expect("dsr"),
            "no HNS answer: the build decides"
        );
        new.set_hns_version(Some((9, 2))).expect("set");
        assert!(!dsr(&new, &log).expect("dsr"));
        let old = crate::host::sim::SimHost::in_memory("ws2019-unpatched").expect("host");
        assert!(!dsr(&old, &log).expect("dsr"));
        old.set_hns_version(Some((10, 2))).expect("set");
        assert!(dsr(&old, &log).expect("dsr"));
        let text = fs_err::read_to_string(dir.path().join("kp.log")).expect("log");
        assert!(
            text.contains("HNS 9.2 does not do Direct Server Return")
                && text.contains("the HNS version cannot be read"),
            "{text}"
        );
    }

    #[test]
    fn the_arguments_are_the_scripts() {
        let vip = Some("10.244.1.2");
        let (dsr, source) = ("--enable-dsr=true", "--source-vip=10.244.1.2");
        // The version, DSR, the source VIP, and the arguments after the common ones.
        type Case<'a> = ((u32, u32), bool, Option<&'a str>, &'a [&'a str]);
        let cases: [Case; 6] = [
            (
                (1, 32),
                true,
                vip,
                &[dsr, source, "--feature-gates=WinDSR=true"],
            ),
            // From 1.33 WinDSR is on by default: no gate, so a kube-proxy without it starts.
            ((1, 33), true, vip, &[dsr, source]),
            ((1, 34), true, vip, &[dsr, source]),
            ((1, 36), true, vip, &[dsr, source]),
            // Before 1.20 WinOverlay was off by default; without DSR there is no WinDSR.
            (
                (1, 18),
                false,
                vip,
                &[source, "--feature-gates=WinOverlay=true"],
            ),
            // Not overlay (windows-bgp's L2Bridge): no source VIP, no WinOverlay.
            ((1, 33), false, None, &[]),
        ];
        let common = [
            "--hostname-override=win-1",
            "--v=4",
            "--proxy-mode=kernelspace",
            "--kubeconfig=C:\\k\\config",
        ];
        for (version, dsr, vip, more) in cases {
            let inputs = Inputs {
                node_name: "win-1".into(),
                kubeconfig: "C:\\k\\config".into(),
                version,
                dsr,
                source_vip: vip.map(String::from),
            };
            let want = [&common[..], more].concat();
            assert_eq!(arguments(&inputs), want, "{version:?} {dsr} {vip:?}");
        }
    }

    #[test]
    fn the_version_is_read_as_kube_proxy_prints_it() {
        assert_eq!(parse_version("Kubernetes v1.33.2\n"), Some((1, 33)));
        assert_eq!(parse_version("Kubernetes v1.9.11"), Some((1, 9)));
        assert_eq!(parse_version("kube-proxy version unknown"), None);
        assert_eq!(parse_version(""), None);
    }
}
