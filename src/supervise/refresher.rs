//! The token refresher CalicoNode keeps running from Calico v3.28 on: node-service.ps1
//! restarts it after every successful calico-node startup (`Restart-TokenRefresher`) and
//! starts it again whenever it is gone (`Ensure-TokenRefresher`, every loop).
//!
//! What it reads and writes (`node/pkg/cni/token_watch.go` and `libcalico-go/lib/winutils`
//! at v3.31.0 and release-v3.33):
//! - `KUBECONFIG`: calico-node's kubeconfig, for the API server, its CA and the credentials
//!   that request tokens;
//! - `/var/run/secrets/kubernetes.io/serviceaccount/namespace`: the namespace of the service
//!   account; a missing file is fatal (why Calico stopped running it outside HostProcess
//!   containers in 2024-07, commit 4821bf2338: "Failed to read service account namespace file");
//! - `CALICO_CNI_SERVICE_ACCOUNT` (default `calico-cni-plugin`) and `CNI_TOKEN_REFRESH_INTERVAL`;
//! - it writes `/host/etc/cni/net.d/calico-kubeconfig`: the CNI plugin's kubeconfig with a
//!   token of that service account (24 h, renewed at a quarter of its remaining life).
//!
//! Both paths go through `winutils.GetHostPath`, which prefixes `CONTAINER_SANDBOX_MOUNT_POINT`
//! when it is set; outside a container they would land at the root of the drive (`C:\var`,
//! `C:\host`). So the refresher runs with `CONTAINER_SANDBOX_MOUNT_POINT=<root>\token-refresher`
//! (nothing else in `monitor-token` reads that variable: its client comes from `KUBECONFIG`
//! through `BuildConfigFromFlags`), the namespace file is written there from calico-node's
//! kubeconfig, the kubeconfig it refreshes is seeded there with calico-node's until its first
//! refresh, and the CNI config names that file. Uninstall removes the directory.

use super::{Backoff, Launch, Log, Result, Settings};
use crate::host::{Access, Child, Host, Output, ProcessSpec};
use crate::render::kubeconfig::{
    REFRESHED_KUBECONFIG, REFRESHER_DIR, REFRESHER_NAMESPACE, namespace_of,
};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// What Calico's components and the services write under the install root while they run,
/// as host paths: calico-node's `nodename` (`CALICO_NODENAME_FILE`) and the refresher's
/// sandbox files; then the sandbox's directories, deepest first. Install records none of
/// them, and uninstall removes them with the recorded files.
pub fn owned_paths(root: &str) -> (Vec<String>, Vec<String>) {
    let root = root.trim_end_matches('\\');
    let base = format!("{root}\\{REFRESHER_DIR}");
    let files = std::iter::once(format!("{root}\\nodename"))
        .chain(
            [REFRESHER_NAMESPACE, REFRESHED_KUBECONFIG]
                .iter()
                .map(|f| format!("{base}\\{f}")),
        )
        .collect();
    let mut dirs = Vec::new();
    for f in [REFRESHER_NAMESPACE, REFRESHED_KUBECONFIG] {
        let mut parts: Vec<&str> = f.split('\\').collect();
        parts.pop();
        while !parts.is_empty() {
            let d = format!("{base}\\{}", parts.join("\\"));
            if !dirs.contains(&d) {
                dirs.push(d);
            }
            parts.pop();
        }
    }
    dirs.sort_by_key(|d: &String| std::cmp::Reverse(d.matches('\\').count()));
    dirs.push(base);
    (files, dirs)
}

/// The refresher while CalicoNode runs: started after a successful startup, started again
/// with a doubling delay when it exits, stopped with the service.
pub struct Refresher {
    launch: Launch,
    env: BTreeMap<String, String>,
    child: Option<Box<dyn Child>>,
    started: Instant,
    backoff: Backoff,
    /// When it may start again after it exited; `None` before the first start.
    due: Option<Instant>,
}

impl Refresher {
    /// Prepares the sandbox (namespace file, seeded kubeconfig); `None`, with the reason in
    /// the log, when the refresher cannot work on this node.
    pub(super) fn prepare(
        host: &dyn Host,
        s: &Settings,
        launch: Launch,
        node_env: &BTreeMap<String, String>,
        log: &Log,
    ) -> Result<Option<Self>> {
        let kubeconfig = node_env.get("KUBECONFIG").filter(|k| !k.is_empty());
        let datastore = node_env.get("CALICO_DATASTORE_TYPE").map(String::as_str);
        let (Some(kubeconfig), Some("kubernetes") | None) = (kubeconfig, datastore) else {
            log.info("the datastore is etcd: the CNI plugin's kubeconfig needs no token refresher");
            return Ok(None);
        };
        let Some(text) = host.read_file(kubeconfig)? else {
            log.warn(&format!(
                "calico-node's kubeconfig {kubeconfig} is missing: the token refresher does not run"
            ));
            return Ok(None);
        };
        let text = String::from_utf8_lossy(&text);
        let Some(namespace) = namespace_of(&text) else {
            log.warn(&format!(
                "{kubeconfig} names no namespace in its current context, so the token refresher cannot know the calico-cni-plugin service account's; it does not run (write the kubeconfig with 'calicoctl-win fetch kubeconfig')"
            ));
            return Ok(None);
        };
        let sandbox = s.path(REFRESHER_DIR);
        let ns_file = format!("{sandbox}\\{REFRESHER_NAMESPACE}");
        if host.read_file(&ns_file)?.as_deref() != Some(namespace.as_bytes()) {
            host.replace_file(&ns_file, namespace.as_bytes(), Access::Normal)?;
        }
        // The CNI config names the refreshed kubeconfig: until the first refresh, it holds
        // calico-node's credentials, so pods get networking from the start.
        let cni_kubeconfig = format!("{sandbox}\\{REFRESHED_KUBECONFIG}");
        if host.file_access(&cni_kubeconfig)?.is_none() {
            host.replace_file(&cni_kubeconfig, text.as_bytes(), Access::Secret)?;
            log.info(&format!(
                "seeded {cni_kubeconfig} with calico-node's kubeconfig until the refresher renews it"
            ));
        }
        let mut env = node_env.clone();
        env.insert("CONTAINER_SANDBOX_MOUNT_POINT".into(), sandbox);
        Ok(Some(Self {
            launch,
            env,
            child: None,
            started: Instant::now(),
            backoff: Backoff::new(&s.timing),
            due: None,
        }))
    }

    /// Starts it afresh: after each successful calico-node startup.
    pub fn restart(&mut self, host: &dyn Host, s: &Settings, log: &Log) {
        self.stop(s, log);
        self.backoff.reset();
        self.start(host, log, s);
    }

    /// Starts it again when it has exited and its delay has passed.
    pub fn keep(&mut self, host: &dyn Host, s: &Settings, log: &Log) {
        if let Some(child) = &mut self.child {
            match child.wait_timeout(Duration::ZERO) {
                Ok(None) => return,
                Ok(Some(code)) => {
                    if self.started.elapsed() > s.timing.backoff_max {
                        self.backoff.reset();
                    }
                    let d = self.backoff.next();
                    log.warn(&format!(
                        "the token refresher (pid {}) exited with code {code}; starting it again in {d:?}",
                        child.pid()
                    ));
                    self.due = Some(Instant::now() + d);
                }
                Err(e) => log.warn(&format!("cannot wait for the token refresher: {e}")),
            }
            self.child = None;
        }
        if self.due.is_some_and(|t| Instant::now() >= t) {
            self.start(host, log, s);
        }
    }

    fn start(&mut self, host: &dyn Host, log: &Log, s: &Settings) {
        let spec = ProcessSpec {
            program: self.launch.program.clone(),
            args: self.launch.args.clone(),
            env: self.env.clone(),
            cwd: self.launch.cwd.clone(),
            output: Output::Lines(log.sink()),
        };
        self.started = Instant::now();
        match host.spawn(&spec) {
            Ok(child) => {
                log.info(&format!(
                    "started the token refresher {} {} (pid {})",
                    spec.program,
                    spec.args.join(" "),
                    child.pid()
                ));
                self.child = Some(child);
                self.due = None;
            }
            Err(e) => {
                let d = self.backoff.next();
                log.warn(&format!(
                    "cannot start the token refresher: {e}; trying again in {d:?}"
                ));
                self.due = Some(Instant::now() + d.max(s.timing.poll));
            }
        }
    }

    /// Stops it gracefully, then kills it after the stop timeout.
    pub fn stop(&mut self, s: &Settings, log: &Log) {
        if let Some(mut child) = self.child.take() {
            let pid = child.pid();
            match child.stop(s.stop_timeout) {
                Ok(code) => log.info(&format!(
                    "token refresher (pid {pid}) ended with exit code {code}"
                )),
                Err(e) => log.warn(&format!("cannot stop the token refresher (pid {pid}): {e}")),
            }
        }
    }

    /// The pid of the running refresher.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.pid())
    }
}
