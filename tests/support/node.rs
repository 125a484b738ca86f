//! The one harness the integration tests build a Windows node with: a simulated host kept in a
//! temp dir, the admin kubeconfig of a fake API server, and on demand a release zip (served
//! over HTTPS or read from disk), a host profile, a kubelet name, and Calico installed.

use super::fake_api::FakeApi;
use super::release::{ReleaseServer, release_zip, sha256};
use super::{cmd, json};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A simulated node with an admin kubeconfig for a fake API server.
pub struct Node {
    pub dir: tempfile::TempDir,
    pub admin: PathBuf,
    /// The node name runs are given (`--set node.name=`); `None` when the host's kubelet
    /// names it, as on a real node.
    name: Option<String>,
    release: Option<Release>,
    /// The fake API server, when the node was built with its own (`Node::healthy`).
    api: Option<FakeApi>,
}

/// The fake API server a node is built on: the test's, or the node's own.
enum Api<'a> {
    Borrowed(&'a FakeApi),
    Owned(FakeApi),
}

/// A release zip on disk, and the HTTPS server that serves it when one was asked for.
pub struct Release {
    pub zip: PathBuf,
    pub served: Option<Served>,
}

/// Where the release is served: its URL, the server's CA certificate file, the server.
pub struct Served {
    pub url: String,
    pub ca: PathBuf,
    pub server: ReleaseServer,
}

/// How to build a `Node` (`Node::on(&api)...build()`).
pub struct NodeBuilder<'a> {
    api: Api<'a>,
    profile: Option<String>,
    kubelet: Option<String>,
    created: bool,
    release: Option<(String, String, bool)>,
    installed: bool,
}

impl<'a> NodeBuilder<'a> {
    /// The fake API server, to set it up before the node is built.
    pub fn api(&self) -> &FakeApi {
        match &self.api {
            Api::Borrowed(a) => a,
            Api::Owned(a) => a,
        }
    }

    /// The simulated host is created now from this profile (`--sim-profile`).
    pub fn profile(mut self, profile: &str) -> Self {
        self.profile = Some(profile.to_owned());
        self
    }

    /// The simulated host is created now (else on the node's first run), so that its
    /// initial state can be read.
    pub fn created(mut self) -> Self {
        self.created = true;
        self
    }

    /// The host's kubelet runs as node `name` (its `--hostname-override`), and runs name no
    /// node, so the name comes from the host as on a real one.
    pub fn kubelet(mut self, name: &str) -> Self {
        self.kubelet = Some(name.to_owned());
        self
    }

    /// A release zip of Calico `version` whose binary is `binary`, on disk.
    pub fn release(mut self, version: &str, binary: &str) -> Self {
        self.release = Some((version.to_owned(), binary.to_owned(), false));
        self
    }

    /// Like `release`, also served over HTTPS by a local server with its own CA.
    pub fn serving(mut self, version: &str, binary: &str) -> Self {
        self.release = Some((version.to_owned(), binary.to_owned(), true));
        self
    }

    /// Calico installed from the release zip (3.30.2's `calico-node.exe` unless one was
    /// given); the install must succeed.
    pub fn installed(mut self) -> Self {
        self.installed = true;
        self
    }

    pub fn build(self) -> Node {
        let dir = tempfile::tempdir().expect("tempdir");
        let admin = self.api().kubeconfig(dir.path(), None);
        let mut node = Node {
            dir,
            admin,
            name: self.kubelet.is_none().then(|| "win-1".to_owned()),
            release: None,
            api: None,
        };
        if self.created || self.profile.is_some() || self.kubelet.is_some() {
            node.create(self.profile.as_deref());
        }
        if let Some(name) = &self.kubelet {
            node.edit_state(|state| {
                let kubelet = &mut state["services"]["kubelet"]["command_line"];
                let line = kubelet.as_str().expect("kubelet").replace("win-1", name);
                *kubelet = Value::from(line);
            });
        }
        let release = self.release.or(self
            .installed
            .then(|| ("3.30.2".into(), "calico-node.exe".into(), false)));
        if let Some((version, binary, serve)) = release {
            node.release = Some(node.make_release(&version, &binary, serve));
        }
        if self.installed {
            let (code, _, err) = node.install_local(&[]);
            assert_eq!(code, 0, "install: {err}");
        }
        if let Api::Owned(api) = self.api {
            node.api = Some(api);
        }
        node
    }
}

impl Node {
    /// A node on `api` named win-1, its host made on its first run.
    pub fn new(api: &FakeApi) -> Self {
        Self::on(api).build()
    }

    /// A builder for a node on `api`.
    pub fn on(api: &FakeApi) -> NodeBuilder<'_> {
        Self::builder(Api::Borrowed(api))
    }

    /// A node on `FakeApi::calico()`, with 3.30.2's release zip on disk (its path as text).
    pub fn on_calico_with_zip() -> (FakeApi, Self, String) {
        let api = FakeApi::calico();
        let node = Self::new(&api);
        let zip = release_zip(node.dir.path(), "3.30.2", "calico-node.exe");
        let zip = zip.display().to_string();
        (api, node, zip)
    }

    /// A builder for a node with its own fake API server, which runs a healthy Calico
    /// (`FakeApi::healthy_calico`).
    pub fn healthy() -> NodeBuilder<'static> {
        let api = FakeApi::start();
        api.healthy_calico();
        Self::builder(Api::Owned(api))
    }

    fn builder(api: Api<'_>) -> NodeBuilder<'_> {
        NodeBuilder {
            api,
            profile: None,
            kubelet: None,
            created: false,
            release: None,
            installed: false,
        }
    }

    /// The node's own fake API server (`Node::healthy`).
    pub fn api(&self) -> &FakeApi {
        self.api
            .as_ref()
            .expect("the node was built with Node::healthy()")
    }

    /// Creates the simulated host now (a read-only run), from `profile` when given.
    fn create(&self, profile: Option<&str>) {
        let mut c = cmd();
        c.args(["-o", "json", "status", "--offline", "--sim-host"])
            .arg(self.sim());
        if let Some(p) = profile {
            c.args(["--sim-profile", p]);
        }
        let out = c.output().expect("create the host");
        assert!(self.sim().join("state.json").is_file(), "{out:?}");
    }

    fn make_release(&self, version: &str, binary: &str, serve: bool) -> Release {
        let zip = release_zip(self.dir.path(), version, binary);
        let served = serve.then(|| {
            let server = ReleaseServer::start();
            let url = server.serve(
                &format!("/v{version}/calico-windows-v{version}.zip"),
                fs_err::read(&zip).expect("zip"),
            );
            let ca = server.ca_file(self.dir.path());
            Served { url, ca, server }
        });
        Release { zip, served }
    }

    /// The simulated host's directory.
    pub fn sim(&self) -> PathBuf {
        self.dir.path().join("host")
    }

    /// Where the simulated host keeps `C:\<rel>` (lower case, `/`-separated).
    pub fn c_drive(&self, rel: &str) -> PathBuf {
        self.sim().join("fs/c").join(rel)
    }

    /// The node name runs are given, or `None` when the host's kubelet names it.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// `calicoctl-win` on this node: the node name when runs are given one, the simulated
    /// host, `-o json`, the admin kubeconfig; add the command's arguments.
    pub fn command(&self, args: &[&str]) -> assert_cmd::Command {
        self.command_as(&self.admin, args)
    }

    /// Like `command`, with the kubeconfig `kubeconfig` in place of the admin's.
    pub fn command_as(&self, kubeconfig: &Path, args: &[&str]) -> assert_cmd::Command {
        let mut c = match &self.name {
            Some(name) => {
                let mut c = cmd();
                c.args(["--set", &format!("node.name={name}")]);
                c
            }
            None => cmd(),
        };
        c.args(args)
            .args(["-o", "json", "--sim-host"])
            .arg(self.sim())
            .arg("--kubeconfig")
            .arg(kubeconfig);
        c
    }

    /// `calicoctl-win ARGS` as `command` makes it, started in the background, its stdout and
    /// stderr piped (`piped`) or dropped.
    pub fn spawn(&self, args: &[&str], piped: bool) -> std::process::Child {
        let mut c = super::background();
        if let Some(name) = &self.name {
            c.args(["--set", &format!("node.name={name}")]);
        }
        let out = || {
            if piped {
                std::process::Stdio::piped()
            } else {
                std::process::Stdio::null()
            }
        };
        c.args(args)
            .args(["-o", "json", "--sim-host"])
            .arg(self.sim())
            .arg("--kubeconfig")
            .arg(&self.admin)
            .stdout(out())
            .stderr(out())
            .spawn()
            .expect("start calicoctl-win")
    }

    /// Runs `calicoctl-win ARGS` on this node as a person does (text output, the admin
    /// kubeconfig): exit code and stdout.
    pub fn run_text(&self, args: &[&str]) -> (i32, String) {
        let mut c = cmd();
        if let Some(name) = &self.name {
            c.args(["--set", &format!("node.name={name}")]);
        }
        c.args(args)
            .arg("--sim-host")
            .arg(self.sim())
            .arg("--kubeconfig")
            .arg(&self.admin);
        let out = c.output().expect("run");
        let code = out.status.code().expect("code");
        (code, String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Runs `calicoctl-win ARGS -o json` on this node: exit code, stdout's JSON, stderr.
    pub fn run(&self, args: &[&str]) -> (i32, Value, String) {
        self.run_as(&self.admin, args)
    }

    /// Like `run`, with the kubeconfig `kubeconfig` in place of the admin's.
    pub fn run_as(&self, kubeconfig: &Path, args: &[&str]) -> (i32, Value, String) {
        let out = self.command_as(kubeconfig, args).output().expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status.code().expect("code"), json(&out.stdout), stderr)
    }

    /// Runs `calicoctl-win ARGS -o json` on this node with no kubeconfig at all (none given,
    /// no `KUBECONFIG`, none at `C:\k\config`).
    pub fn run_without_kubeconfig(&self, args: &[&str]) -> (i32, Value, String) {
        let mut c = cmd();
        if let Some(name) = &self.name {
            c.args(["--set", &format!("node.name={name}")]);
        }
        let out = c
            .args(args)
            .args(["-o", "json", "--sim-host"])
            .arg(self.sim())
            .env_remove("KUBECONFIG")
            .output()
            .expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status.code().expect("code"), json(&out.stdout), stderr)
    }

    /// A run whose stdout may be empty (a simulated crash): exit code and stderr.
    pub fn run_raw(&self, args: &[&str]) -> (i32, String) {
        let out = self.command(args).output().expect("run");
        (
            out.status.code().expect("code"),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// The release this node was built with.
    pub fn release(&self) -> &Release {
        self.release
            .as_ref()
            .expect("the node was built with .release(..) or .serving(..)")
    }

    /// The release zip on disk.
    pub fn zip(&self) -> &Path {
        &self.release().zip
    }

    /// Where the release is served.
    pub fn served(&self) -> &Served {
        self.release()
            .served
            .as_ref()
            .expect("the node was built with .serving(..)")
    }

    /// `install` from the HTTPS server with the zip's checksum.
    pub fn install(&self, extra: &[&str]) -> (i32, Value, String) {
        let sha = sha256(self.zip());
        let served = self.served();
        let ca = served.ca.display().to_string();
        let args = [
            &[
                "install",
                "--release-zip",
                &served.url,
                "--sha256",
                &sha,
                "--release-ca-cert",
                &ca,
            ][..],
            extra,
        ]
        .concat();
        self.run(&args)
    }

    /// `install` from the zip file (no download cache).
    pub fn install_local(&self, extra: &[&str]) -> (i32, Value, String) {
        let zip = self.zip().display().to_string();
        self.run(&[&["install", "--release-zip", &zip][..], extra].concat())
    }

    pub fn uninstall(&self, extra: &[&str]) -> (i32, Value, String) {
        self.run(&[&["uninstall"][..], extra].concat())
    }

    /// The HNS endpoints: (id, name, address), sorted; what a pod keeps across a handover.
    pub fn endpoints(&self) -> Vec<(String, String, String)> {
        let mut eps: Vec<(String, String, String)> = self.state()["endpoints"]
            .as_array()
            .expect("endpoints")
            .iter()
            .map(|e| {
                let s = |k: &str| e[k].as_str().unwrap_or_default().to_owned();
                (s("id"), s("name"), s("ip"))
            })
            .collect();
        eps.sort();
        eps
    }

    /// What the simulated host holds, for comparisons (`snapshot::assert_same`).
    pub fn snapshot(&self) -> Value {
        super::snapshot::snapshot(&self.sim())
    }

    /// The simulated host's state document.
    pub fn state(&self) -> Value {
        serde_json::from_str(&fs_err::read_to_string(self.sim().join("state.json")).expect("state"))
            .expect("json")
    }

    /// Edits the simulated host's state document.
    pub fn edit_state(&self, f: impl FnOnce(&mut Value)) {
        let mut state = self.state();
        f(&mut state);
        fs_err::write(
            self.sim().join("state.json"),
            serde_json::to_vec_pretty(&state).expect("json"),
        )
        .expect("write the state");
    }

    /// Puts endpoints on the Calico HNS network as HNS would hold them: `(name, ip, state,
    /// remote)`, the state a number of hcsshim's `EndpointState` (1 Created, 3
    /// AttachedSharing, ...), `remote` another host's (HCN `Flags` bit 1) as kube-proxy makes
    /// one for a Service backend, with the MAC it conjures from the address (kubernetes
    /// pkg/proxy/winkernel/proxier.go: `conjureMac("02-11", ip)`, `isLocal: false`).
    pub fn add_endpoints(&self, endpoints: &[(&str, &str, u16, bool)]) {
        self.edit_state(|state| {
            let calico = crate::support::items(state, "networks")
                .find(|n| n["Name"] == "Calico")
                .expect("the Calico network")["ID"]
                .clone();
            let eps = state["endpoints"].as_array_mut().expect("endpoints");
            for (name, ip, st, remote) in endpoints {
                let id = format!("5eb1a7e0-0000-4000-8000-{:012x}", eps.len() + 0xa0);
                let mut ep = serde_json::json!({"id": id, "name": name, "network_id": calico,
                    "ip": ip, "state": st, "remote": remote});
                if *remote {
                    ep["mac"] = serde_json::json!(kube_proxy_mac(ip));
                }
                eps.push(ep);
            }
        });
    }

    /// Moves every fault CalicoNode or `repair` recorded (`EndpointFaults`) `secs` into the
    /// past, as if that much time had gone by since they were first seen.
    pub fn age_endpoint_faults(&self, secs: i64) {
        self.edit_state(|state| {
            let value = &mut state["registry"][r"hklm\software\tigera\calico"]["endpointfaults"];
            let Some(text) = value["data"].as_str() else {
                return;
            };
            let mut seen: serde_json::Map<String, Value> =
                serde_json::from_str(text).expect("the record");
            for t in seen.values_mut() {
                *t = serde_json::json!(t.as_i64().expect("seconds") - secs);
            }
            value["data"] = serde_json::json!(Value::Object(seen).to_string());
        });
    }

    /// Records the endpoints named `names` as at fault since `secs` ago, as CalicoNode's looks
    /// every minute would have.
    pub fn faults_seen_since(&self, names: &[&str], secs: i64) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_secs() as i64;
        self.edit_state(|state| {
            let seen: serde_json::Map<String, Value> = crate::support::items(state, "endpoints")
                .filter(|e| names.iter().any(|n| e["name"] == *n))
                .map(|e| {
                    (
                        e["id"].as_str().expect("id").to_ascii_lowercase(),
                        serde_json::json!(now - secs),
                    )
                })
                .collect();
            state["registry"][r"hklm\software\tigera\calico"]["endpointfaults"] =
                serde_json::json!({"type": "REG_SZ", "data": Value::Object(seen).to_string()});
        });
    }

    /// The VSID (VXLAN VNI) of the Calico HNS network on this node.
    pub fn calico_vsid(&self) -> Option<u64> {
        super::calico_vsid(&self.sim())
    }

    /// Runs `ARGS` on this node stopped at its `n`th mutating call and killed (`kill_at`).
    pub fn kill_at(&self, args: &[&str], n: u64, tmp: &Path) -> super::Killed {
        super::kill_at(&self.sim(), &self.admin, args, n, tmp)
    }
}

/// The MAC kube-proxy gives another host's endpoint for a Service backend at `ip` (kubernetes
/// pkg/proxy/winkernel/proxier.go `conjureMac("02-11", ip)`: `02-11` and the four octets, or
/// `02-11-22-33-44-55` for what is not an IPv4 address).
pub fn kube_proxy_mac(ip: &str) -> String {
    match ip.parse::<std::net::Ipv4Addr>() {
        Ok(ip) => {
            let [a, b, c, d] = ip.octets();
            format!("02-11-{a:02x}-{b:02x}-{c:02x}-{d:02x}")
        }
        Err(_) => "02-11-22-33-44-55".to_owned(),
    }
}
