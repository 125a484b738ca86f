//! Felix's own health, asked as calico-node's probe asks it (projectcalico/calico v3.31.7
//! node/pkg/health/health.go: `GET /liveness` and `/readiness` on Felix's health port, good on
//! 2xx and 3xx). Felix serves them when its environment enables them (`FELIX_HEALTHENABLED`,
//! which install renders, on `FELIX_HEALTHPORT`, 9099 unless the config's extra_env says
//! otherwise); `status` shows the answer and CalicoNode's condition counts it.

use crate::host::{Host, HostResult, ServiceState};
use crate::layout::env::EnvVars;
use crate::layout::{FELIX_HEALTH_PORT, Role};
use serde::Serialize;
use std::time::Duration;

/// How long one question may take.
const TIMEOUT: Duration = Duration::from_secs(2);

/// How long Felix may run before its health endpoint must answer: it serves it as soon as it
/// has read its configuration (felix/daemon/daemon.go, `ServeHTTP` in the config loop).
pub const STARTUP: i64 = 60;

/// The most of an answer's body that is kept.
const MAX_DETAIL: usize = 500;

/// What Felix says of itself.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FelixHealth {
    /// Whether the installed environment enables the endpoint (an install by an earlier
    /// calicoctl-win does not: `reconfigure` renders it).
    pub enabled: bool,
    /// The port asked: `FELIX_HEALTHPORT` of the installed environment, else Felix's default.
    pub port: u16,
    /// Whether CalicoFelix runs, and since when (seconds since 1970).
    pub running_since: Option<i64>,
    /// `None` when nothing answered.
    pub live: Option<bool>,
    pub ready: Option<bool>,
    /// Felix's words when it is not live or not ready.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// Asks Felix on the host whose install root is `root`.
pub fn read(host: &dyn Host, root: &crate::layout::InstallRoot) -> HostResult<FelixHealth> {
    let env = host
        .read_file(&root.env_file(Role::Felix))?
        .map(|bytes| crate::render::env::parse(&String::from_utf8_lossy(&bytes)))
        .unwrap_or_default();
    let value = |name: &str| env.get(name).map(|v| v.trim().to_owned());
    let enabled =
        value(EnvVars::FELIX_HEALTHENABLED).is_some_and(|v| v.eq_ignore_ascii_case("true"));
    // A port the config's extra_env set instead of Felix's default.
    let port = value(EnvVars::FELIX_HEALTHPORT)
        .and_then(|p| p.parse().ok())
        .unwrap_or(FELIX_HEALTH_PORT);
    let running_since = host
        .service_query(Role::Felix.service_name())?
        .filter(|s| s.state == ServiceState::Running)
        // A start time that could not be read counts as just started: no silence is blamed on it.
        .map(|s| s.since.unwrap_or_else(crate::duration::now))
        // Felix is aged by its own last start (CalicoFelix restarts it while the service runs on).
        .map(|service| felix_started(host).map_or(service, |felix| felix.max(service)));
    let mut out = FelixHealth {
        enabled,
        port,
        running_since,
        ..FelixHealth::default()
    };
    if !enabled || running_since.is_none() {
        return Ok(out);
    }
    for (path, slot) in [("/liveness", &mut out.live), ("/readiness", &mut out.ready)] {
        let answer = host.local_http_get(port, path, TIMEOUT)?;
        if let Some(a) = &answer
            && !a.is_good()
            && out.detail.is_none()
        {
            out.detail = Some(a.body.chars().take(MAX_DETAIL).collect());
        }
        *slot = answer.map(|a| a.is_good());
    }
    Ok(out)
}

/// When CalicoFelix last started Felix (`FelixStarted`), if it says.
fn felix_started(host: &dyn Host) -> Option<i64> {
    let text = super::calico_text(host, crate::layout::FELIX_STARTED_VALUE).ok()??;
    text.trim().parse().ok()
}

impl FelixHealth {
    /// What is wrong, if anything, `now` being seconds since 1970.
    pub fn problem(&self, now: i64) -> Option<String> {
        let since = self.running_since.filter(|_| self.enabled)?;
        let detail = self.detail.as_deref().unwrap_or("no detail");
        match (self.live, self.ready) {
            (Some(false), _) => Some(format!("Felix is not live: {detail}")),
            (_, Some(false)) => Some(format!("Felix is not ready: {detail}")),
            (None, _) | (_, None) if now.saturating_sub(since) > STARTUP => Some(format!(
                "Felix's health endpoint (127.0.0.1:{}) does not answer although CalicoFelix has run for more than {STARTUP} s",
                self.port
            )),
            _ => None,
        }
    }

    /// One line for people.
    pub fn describe(&self) -> String {
        if !self.enabled {
            return "Felix health: not enabled by the installed environment ('calicoctl-win reconfigure' enables it)".into();
        }
        if self.running_since.is_none() {
            return "Felix health: CalicoFelix is not running".into();
        }
        let word = |v: Option<bool>, yes: &str, no: &str| match v {
            Some(true) => yes.to_owned(),
            Some(false) => no.to_owned(),
            None => "no answer".to_owned(),
        };
        format!(
            "Felix health: {}, {}",
            word(self.live, "live", "not live"),
            word(self.ready, "ready", "not ready")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Not live is a problem; an endpoint not enabled (an older install) is none. Not ready,
    /// silent past start-up and silent just after it: lifecycle
    /// `status_asks_felix_for_its_health_and_names_a_felix_that_is_not_ready`.
    #[test]
    fn not_live_is_a_problem_and_not_enabled_none() {
        let live = |l| FelixHealth {
            enabled: true,
            port: FELIX_HEALTH_PORT,
            running_since: Some(0),
            live: l,
            ready: Some(true),
            detail: None,
        };
        assert_eq!(live(Some(true)).problem(10_000), None);
        let not_live = live(Some(false)).problem(10_000).unwrap_or_default();
        assert!(not_live.contains("not live"), "{not_live}");
        let off = FelixHealth {
            enabled: false,
            ..live(None)
        };
        assert_eq!(off.problem(10_000), None);
    }
}
