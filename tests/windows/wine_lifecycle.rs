//! The whole lifecycle of calicoctl-win.exe under Wine, on the real Windows host code: the
//! real SCM running the services, the registry, and HNS, the firewall and routes through the
//! project's stand-ins (tools/wine/), against the fake API server on loopback. Install with
//! vxlan and with windows-bgp, `status`, install again (nothing to change, nothing restarted),
//! `reconfigure --drain` to a new VNI (the Calico network made again with the new VSID), and
//! `uninstall --purge`, which must give back the prefix as it was.
//!
//! Only `tools/wine/test.sh` runs it: it builds the Windows exe and the stand-ins, makes the
//! prefix and sets CALICOCTL_WIN_WINE_LIFECYCLE. Elsewhere the test says so and passes.

use crate::support::fake_api::{FakeApi, calico};
use crate::support::release::{buildinfo, sha256, write_zip};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

const CRD: &str = "/apis/crd.projectcalico.org/v1";

/// A Wine prefix prepared as a Windows node: containerd and RemoteAccess registered and
/// running (the contract tests' minimal service), kubelet.exe running, and the stand-in DLLs
/// loaded for calicoctl-win.exe.
struct Node {
    wine: PathBuf,
    prefix: PathBuf,
    /// The windows-gnu target's debug directory.
    bin: PathBuf,
    kubelet: Option<Child>,
    dir: tempfile::TempDir,
}

impl Drop for Node {
    fn drop(&mut self) {
        if let Some(mut k) = self.kubelet.take() {
            let _ = k.kill();
            let _ = k.wait();
        }
    }
}

/// `Z:\...`: how a Windows program under Wine names a path of the Linux machine.
fn z(p: &Path) -> String {
    format!("Z:{}", p.display()).replace('/', "\\")
}

impl Node {
    fn new() -> Option<Self> {
        if std::env::var_os("CALICOCTL_WIN_WINE_LIFECYCLE").is_none() {
            eprintln!("skipped: tools/wine/test.sh runs this test under Wine");
            return None;
        }
        let var = |k: &str| {
            PathBuf::from(std::env::var_os(k).unwrap_or_else(|| panic!("{k} is not set")))
        };
        let node = Self {
            wine: var("CALICOCTL_WIN_WINE"),
            prefix: var("WINEPREFIX"),
            bin: var("CALICOCTL_WIN_WINDOWS_BIN"),
            kubelet: None,
            dir: tempfile::tempdir().expect("tempdir"),
        };
        Some(node)
    }

    fn c(&self, rel: &str) -> PathBuf {
        self.prefix.join("drive_c").join(rel)
    }

    fn wine(&self) -> Command {
        let mut c = Command::new(&self.wine);
        c.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", std::env::var_os("HOME").unwrap_or_default())
            .env("WINEPREFIX", &self.prefix)
            .env("WINEDEBUG", "-all")
            .env("WINEDLLOVERRIDES", "mscoree,mshtml=");
        c
    }

    /// Runs a Windows program; its exit code and output. The output goes through files, not
    /// pipes: services.exe, which Wine starts on the first SCM call, inherits the handles and
    /// would keep a pipe open long after the program ended.
    fn run(&self, program: &str, args: &[&str]) -> (i32, String, String) {
        let out_path = self.dir.path().join("stdout");
        let err_path = self.dir.path().join("stderr");
        let file = |p: &Path| std::fs::File::create(p).expect("output file");
        let status = self
            .wine()
            .arg(program)
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(file(&out_path))
            .stderr(file(&err_path))
            .status()
            .expect("run wine");
        let read =
            |p: &Path| String::from_utf8_lossy(&fs_err::read(p).unwrap_or_default()).into_owned();
        (
            status.code().unwrap_or(-1),
            read(&out_path),
            read(&err_path),
        )
    }

    fn ok(&self, program: &str, args: &[&str]) -> String {
        let (code, out, err) = self.run(program, args);
        assert_eq!(code, 0, "{program} {args:?}: {out}{err}");
        out
    }

    /// calicoctl-win.exe ARGS on node win-1 with the admin kubeconfig: exit code, stdout's
    /// JSON and stderr.
    fn calicoctl(&self, kubeconfig: &Path, args: &[&str]) -> (i32, Value, String) {
        let exe = self.bin.join("calicoctl-win.exe");
        let kc = z(kubeconfig);
        let mut all: Vec<&str> = args.to_vec();
        all.extend([
            "-o",
            "json",
            "--set",
            "node.name=win-1",
            "--kubeconfig",
            &kc,
        ]);
        let (code, out, err) = self.run(&exe.display().to_string(), &all);
        let doc = serde_json::from_str(&out).unwrap_or_else(|_| json!({"stdout": out}));
        (code, doc, err)
    }

    /// The node's preconditions, before the first snapshot.
    fn prepare(&mut self) {
        for dll in ["iphlpapi", "hnetcfg"] {
            self.ok(
                "reg",
                &[
                    "add",
                    r"HKCU\Software\Wine\AppDefaults\calicoctl-win.exe\DllOverrides",
                    "/v",
                    dll,
                    "/d",
                    "native",
                    "/f",
                ],
            );
        }
        fs_err::create_dir_all(self.c("k")).expect("C:\\k");
        fs_err::copy(
            self.bin.join("examples").join("fake-calico-node.exe"),
            self.c("k/kubelet.exe"),
        )
        .expect("copy kubelet");
        let kubelet = self
            .wine()
            .arg(r"C:\k\kubelet.exe")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start kubelet");
        // kubelet.exe keeps the wineserver alive: when the last ordinary process ends, Wine
        // ends services.exe and every service with it.
        let service_exe = self.bin.join("examples").join("contract-test-service.exe");
        for (name, dir, exe) in [
            ("containerd", "Program Files/containerd", "containerd.exe"),
            ("RemoteAccess", "k/remoteaccess", "remoteaccess.exe"),
        ] {
            fs_err::create_dir_all(self.c(dir)).expect("dir");
            fs_err::copy(&service_exe, self.c(dir).join(exe)).expect("copy the service");
            // Quoted, as `containerd --register-service` registers it.
            let path = format!("\"C:\\{}\\{exe}\"", dir.replace('/', "\\"));
            if self.run("sc", &["query", name]).0 == 0 {
                let _ = self.run("sc", &["stop", name]);
                let _ = self.run("sc", &["delete", name]);
            }
            self.ok("sc", &["create", name, "binpath=", &path]);
            self.ok("sc", &["start", name]);
        }
        // CalicoNode waits for kubelet.exe itself (Wine's tasklist prints nothing to a pipe).
        self.kubelet = Some(kubelet);
    }

    /// A release zip of the real layout whose calico-node.exe is the fake one (built for
    /// Windows, with Calico's build information appended as Calico's builds record it).
    fn release(&self, version: &str) -> PathBuf {
        let mut exe = fs_err::read(self.bin.join("examples").join("fake-calico-node.exe"))
            .expect("fake calico-node");
        exe.extend_from_slice(buildinfo(version).as_bytes());
        let mut entries = crate::support::release::entries("calico-node.exe");
        entries[0].1 = exe;
        let path = self
            .dir
            .path()
            .join(format!("calico-windows-v{version}.zip"));
        write_zip(&path, &entries);
        path
    }

    fn hcn_networks(&self) -> Vec<Value> {
        let mut v: Vec<Value> = fs_err::read_dir(self.c("calicoctl-win-hcn/networks"))
            .map(|d| {
                d.flatten()
                    .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                    .filter_map(|e| fs_err::read_to_string(e.path()).ok())
                    .filter_map(|t| serde_json::from_str(&t).ok())
                    .collect()
            })
            .unwrap_or_default();
        v.sort_by(|a, b| a["Name"].as_str().cmp(&b["Name"].as_str()));
        v
    }

    /// The stand-in HCN's object files (`networks/<id>.json`, `endpoints/<id>.json`).
    fn hcn_files(&self) -> std::collections::BTreeSet<String> {
        ["networks", "endpoints"]
            .iter()
            .flat_map(|kind| {
                fs_err::read_dir(self.c("calicoctl-win-hcn").join(kind))
                    .into_iter()
                    .flatten()
                    .flatten()
                    .map(move |e| format!("{kind}/{}", e.file_name().to_string_lossy()))
            })
            .collect()
    }

    fn network(&self, name: &str) -> Option<Value> {
        self.hcn_networks().into_iter().find(|n| n["Name"] == name)
    }

    fn net_state(&self) -> Value {
        fs_err::read_to_string(self.c("calicoctl-win-net/state.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null)
    }

    fn log_lines(&self, file: &str, needle: &str) -> usize {
        fs_err::read_to_string(self.c(&format!("CalicoWindows/logs/{file}")))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains(needle))
            .count()
    }

    /// The registry keys calicoctl-win may touch: the services, Calico's key and the machine
    /// environment.
    fn registry(&self) -> Value {
        // Wine's reg.exe has once printed nothing for this key in CI (exit status unread then),
        // which read as every service gone; a query that fails or lists no service (Wine's own
        // services are always there) is asked again, and named if it keeps failing.
        let services = (0..3)
            .map(|_| self.run("reg", &["query", r"HKLM\System\CurrentControlSet\Services"]))
            .inspect(|(code, out, err)| {
                if *code != 0 || out.trim().is_empty() {
                    eprintln!("reg query Services: exit {code}, stdout {out:?}, stderr {err:?}");
                }
            })
            .find(|(code, out, _)| *code == 0 && !out.trim().is_empty())
            .map(|(_, out, _)| out)
            .expect("reg query HKLM\\System\\CurrentControlSet\\Services lists Wine's services");
        let mut names: Vec<String> = services
            .lines()
            .filter_map(|l| {
                l.trim()
                    .rsplit_once('\\')
                    .map(|(_, n)| n.to_ascii_lowercase())
            })
            .collect();
        names.sort();
        let (_, calico, _) = self.run("reg", &["query", r"HKLM\Software\Tigera", "/s"]);
        let (_, env, _) = self.run(
            "reg",
            &[
                "query",
                r"HKLM\System\CurrentControlSet\Control\Session Manager\Environment",
            ],
        );
        let lines = |t: &str| -> Vec<String> {
            t.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(String::from)
                .collect()
        };
        json!({"services": names, "tigera": lines(&calico), "environment": lines(&env)})
    }

    /// The prefix as uninstall must leave it: files outside Wine's own directories, the
    /// registry above, the HNS networks, the firewall rules, and the adapters and routes.
    fn snapshot(&self) -> Value {
        let mut files = BTreeMap::new();
        walk(&self.c(""), &self.c(""), &mut files);
        let nets: Vec<Value> = self
            .hcn_networks()
            .iter()
            .map(|n| json!([n["Name"], n["Type"]]))
            .collect();
        let rules: Value = fs_err::read_to_string(self.c("calicoctl-win-firewall/rules.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .map(|v| {
                let mut names: Vec<String> = match &v {
                    Value::Object(m) => m.keys().cloned().collect(),
                    Value::Array(a) => a.iter().map(|r| r["name"].to_string()).collect(),
                    _ => Vec::new(),
                };
                names.sort();
                json!(names)
            })
            .unwrap_or(json!([]));
        let net = self.net_state();
        let mut adapters: Vec<String> = net["adapters"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|a| {
                format!(
                    "{} #{} {}/{}",
                    a["name"], a["index"], a["ip"], a["prefix_len"]
                )
            })
            .collect();
        adapters.sort();
        let mut routes: Vec<String> = net["routes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| {
                format!(
                    "{}/{} via {} if {}",
                    r["destination"], r["prefix_len"], r["next_hop"], r["interface_index"]
                )
            })
            .collect();
        routes.sort();
        json!({"files": files, "registry": self.registry(), "networks": nets,
            "firewall": rules, "adapters": adapters, "routes": routes})
    }
}

/// Files and directories under drive_c, with checksums; Wine's own trees, the user profiles
/// (temp files) and the stand-ins' state (compared by meaning above) are left out.
fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
    let Ok(entries) = fs_err::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let rel = p
            .strip_prefix(base)
            .expect("under base")
            .display()
            .to_string();
        let top = rel
            .split('/')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        if matches!(
            top.as_str(),
            "windows"
                | "users"
                | "programdata"
                | "calicoctl-win-hcn"
                | "calicoctl-win-net"
                | "calicoctl-win-firewall"
        ) {
            continue;
        }
        if p.is_dir() {
            out.insert(rel.clone(), "dir".into());
            walk(base, &p, out);
        } else if rel.ends_with("containerd.log") || rel.ends_with("remoteaccess.log") {
            // The stand-in services' own notes of their starts and stops.
            continue;
        } else {
            out.insert(rel, sha256(&p));
        }
    }
}

fn assert_same(now: &Value, before: &Value, what: &str) {
    if now != before {
        let a = serde_json::to_string_pretty(before).unwrap_or_default();
        let b = serde_json::to_string_pretty(now).unwrap_or_default();
        let diff: Vec<String> = b
            .lines()
            .filter(|l| !a.contains(l))
            .map(|l| format!("+ {l}"))
            .chain(
                a.lines()
                    .filter(|l| !b.contains(l))
                    .map(|l| format!("- {l}")),
            )
            .collect();
        panic!(
            "{what}: the prefix differs from its initial state:\n{}",
            diff.join("\n")
        );
    }
}

fn vsid(n: &Value) -> Option<u64> {
    n.pointer("/Ipams/0/Subnets/0/Policies/0/Settings/IsolationId")
        .and_then(Value::as_u64)
}

fn bgp_cluster(api: &FakeApi) {
    api.put(
        &format!("{CRD}/ippools/default-ipv4-ippool"),
        calico(
            "IPPool",
            "default-ipv4-ippool",
            json!({"cidr": "10.244.0.0/16", "blockSize": 26, "ipipMode": "Never", "vxlanMode": "Never", "natOutgoing": true}),
        ),
    );
    api.put(
        &format!("{CRD}/felixconfigurations/default"),
        calico(
            "FelixConfiguration",
            "default",
            json!({"vxlanEnabled": false, "ipipEnabled": false}),
        ),
    );
    api.put(
        "/apis/operator.tigera.io/v1/installations/default",
        json!({"apiVersion": "operator.tigera.io/v1", "kind": "Installation",
            "metadata": {"name": "default"},
            "spec": {"calicoNetwork": {"bgp": "Enabled", "windowsDataplane": "Disabled"}}}),
    );
}

/// Checks after an install: status is clean, and a second install changes nothing and
/// restarts nothing.
fn installed_and_idempotent(n: &Node, kc: &Path, install: &[&str]) {
    let (code, doc, err) = n.calicoctl(kc, &["status", "--config", install[2]]);
    assert_eq!(code, 0, "status after install: {doc}\n{err}");
    let felix = n.log_lines("calico-felix.log", "fake calico-node -felix");
    let node = n.log_lines("calico-node.log", "runs CalicoNode");
    assert!(
        felix >= 1 && node >= 1,
        "the services never ran their programs"
    );
    let (code, doc, err) = n.calicoctl(kc, install);
    assert_eq!(code, 0, "second install: {doc}\n{err}");
    // Nothing to change but the secret files' access lists: Wine keeps no DACL on a file
    // (it reads back one made from the Unix mode, which lets everyone read), so install
    // restricts them again each time. On Windows the list is empty; either way nothing else
    // changes and nothing restarts.
    // The same holds for the protected directories: Wine reads back a list without the
    // protection flag, so install protects them again, which restarts nothing either.
    let actions: Vec<&Value> = doc["actions"].as_array().expect("actions").iter().collect();
    assert!(
        actions
            .iter()
            .all(|a| a["action"] == "restrict-file" || a["action"] == "protect-dir"),
        "second install: {doc}"
    );
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        (
            n.log_lines("calico-felix.log", "fake calico-node -felix"),
            n.log_lines("calico-node.log", "runs CalicoNode")
        ),
        (felix, node),
        "the second install restarted a service"
    );
}

/// `install` with ARGS; once more when Wine itself failed to start a service's process
/// (ERROR_INTERNAL_ERROR, 1359, before any of the program's code ran: see `start_service` in
/// src/host/contract.rs for the Wine source) and the install undid everything, as it says and
/// as the prefix shows against `before` (the words are pinned by tests/lifecycle/install.rs's
/// `a_refusal_in_each_host_area_reaches_the_user_with_the_os_code`). Any other failure is the
/// answer.
fn run_install(n: &Node, kc: &Path, args: &[&str], before: &Value) -> (i32, Value, String) {
    let (code, doc, err) = n.calicoctl(kc, args);
    let text = format!("{doc}{err}");
    if code != 0
        && text.contains("(os error 1359)")
        && text.contains("the node is as it was")
        && n.snapshot() == *before
    {
        eprintln!("Wine did not start a service's process and the install was undone: {text}");
        return n.calicoctl(kc, args);
    }
    (code, doc, err)
}

#[test]
fn the_whole_lifecycle_under_wine_returns_the_prefix_to_its_initial_state() {
    let Some(mut n) = Node::new() else {
        return;
    };
    n.prepare();
    let api = FakeApi::calico();
    let kc = n.dir.path().join("admin.kubeconfig");
    // The admin kubeconfig names its CA as a Windows program sees it.
    let ca = n.dir.path().join("ca.pem");
    api.kubeconfig(n.dir.path(), None);
    fs_err::copy(n.dir.path().join("fake-api-ca.pem"), &ca).expect("ca");
    let text = fs_err::read_to_string(&kc).expect("kubeconfig");
    let text = text.replace(
        &n.dir.path().join("fake-api-ca.pem").display().to_string(),
        &z(&ca),
    );
    fs_err::write(&kc, text).expect("kubeconfig");
    api.set_node_ready("win-1", "True", "kubelet is posting ready status");
    // kubelet's address on this node: the IP helper stand-in's Ethernet adapter (10.0.2.15),
    // which the vSwitch takes over and the networks' management IP must be.
    api.set_node_internal_ip("win-1", Some("10.0.2.15"));
    let zip = n.release("3.30.2");
    let zip = z(&zip);
    // The settings in a config file, as an administrator keeps them: every command reads it.
    let config = |name: &str, yaml: &str| {
        let path = n.dir.path().join(name);
        fs_err::write(&path, yaml).expect("config");
        z(&path)
    };
    let vxlan = config(
        "vxlan.yaml",
        "container_runtime: containerd\nnode:\n  platform: ec2\n",
    );
    let initial = n.snapshot();

    // vxlan: install, status, install again, a new VNI through a drain, uninstall --purge.
    // Wine is no Windows Server; the node is an EC2 VM (no metadata probe leaves loopback).
    let install = [
        "install",
        "--config",
        &vxlan,
        "--release-zip",
        &zip,
        "--skip",
        "os-build",
    ];
    let (code, doc, err) = run_install(&n, &kc, &install, &initial);
    assert_eq!(code, 0, "install: {doc}\n{err}");
    let calico = n.network("Calico").expect("the Calico network");
    assert_eq!(calico["Type"], "Overlay");
    assert_eq!(vsid(&calico), Some(4096), "{calico}");
    assert!(n.network("External").is_some());
    // The vSwitch dropped the metadata route; CalicoNode put it back on the vSwitch.
    let net = n.net_state();
    let vswitch = net["adapters"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["name"] == "vEthernet (Ethernet)"))
        .map(|a| a["index"].clone())
        .expect("the vSwitch's interface");
    assert!(
        net["routes"].as_array().is_some_and(|r| r
            .iter()
            .any(|r| r["destination"] == "169.254.169.254" && r["interface_index"] == vswitch)),
        "{net}"
    );
    installed_and_idempotent(&n, &kc, &install);

    api.set_felix_vni(4097);
    let (code, doc, err) = n.calicoctl(
        &kc,
        &[
            "reconfigure",
            "--config",
            &vxlan,
            "--drain",
            "--set",
            "vxlan.vni=4097",
        ],
    );
    assert_eq!(code, 0, "reconfigure: {doc}\n{err}");
    let calico = n.network("Calico").expect("the Calico network");
    assert_eq!(vsid(&calico), Some(4097), "{calico}");
    let (code, doc, err) = n.calicoctl(
        &kc,
        &["status", "--config", &vxlan, "--set", "vxlan.vni=4097"],
    );
    assert_eq!(code, 0, "status after reconfigure: {doc}\n{err}");

    let (code, doc, err) = n.calicoctl(
        &kc,
        &["uninstall", "--config", &vxlan, "--purge", "--remove-logs"],
    );
    assert_eq!(code, 0, "uninstall: {doc}\n{err}");
    assert_same(&n.snapshot(), &initial, "vxlan: after uninstall --purge");

    // windows-bgp: the L2Bridge network, confd, RemoteAccess restarted.
    bgp_cluster(&api);
    let bgp = config(
        "bgp.yaml",
        "container_runtime: containerd\nbackend: windows-bgp\nnode:\n  platform: bare-metal\n",
    );
    let install = [
        "install",
        "--config",
        &bgp,
        "--release-zip",
        &zip,
        "--skip",
        "os-build",
    ];
    let (code, doc, err) = run_install(&n, &kc, &install, &initial);
    assert_eq!(code, 0, "install windows-bgp: {doc}\n{err}");
    assert_eq!(n.network("Calico").expect("Calico")["Type"], "L2Bridge");
    assert!(
        n.registry()["services"]
            .as_array()
            .is_some_and(|s| s.contains(&json!("calicoconfd")))
    );
    installed_and_idempotent(&n, &kc, &install);
    let (code, doc, err) = n.calicoctl(
        &kc,
        &["uninstall", "--config", &bgp, "--purge", "--remove-logs"],
    );
    assert_eq!(code, 0, "uninstall windows-bgp: {doc}\n{err}");
    assert_same(
        &n.snapshot(),
        &initial,
        "windows-bgp: after uninstall --purge",
    );

    refused_metadata_route(&n, &kc, &bgp, &zip);
}

/// The IP helper refuses the metadata route (ERROR_ACCESS_DENIED, as a locked-down node's
/// policy may) on a windows-bgp node: install ends at once with CalicoNode's error and the OS's code, not after its
/// five-minute wait, and the rollback's message lists what remains, measured: the networks
/// CalicoNode made, the address on the vSwitch and the route, each with its command. Everything
/// else is back; once the networks and the route are put back as the message says (here in the
/// stand-ins' state), the prefix is as it was.
fn refused_metadata_route(n: &Node, kc: &Path, config: &str, zip: &str) {
    // The node has its metadata route through the gateway (the HNS contract run before in
    // this prefix made and deleted a vSwitch, which dropped it).
    let net_path = n.c("calicoctl-win-net/state.json");
    let mut net: Value =
        serde_json::from_str(&fs_err::read_to_string(&net_path).expect("the stand-in's state"))
            .expect("json");
    let routes = net["routes"].as_array_mut().expect("routes");
    if !routes.iter().any(|r| r["destination"] == "169.254.169.254") {
        routes.push(json!({"destination": "169.254.169.254", "prefix_len": 32,
            "next_hop": "10.0.2.2", "interface_index": 4, "metric": 256}));
    }
    let net_before = net.to_string();
    fs_err::write(&net_path, &net_before).expect("the metadata route");
    let initial = &n.snapshot();
    let mut refusing = net.clone();
    refusing["refuse_routes"] = json!(["169.254.169.254/32"]);
    fs_err::write(&net_path, refusing.to_string()).expect("refuse");
    let hcn_before = n.hcn_files();

    let (code, doc, err) = n.calicoctl(
        kc,
        &[
            "install",
            "--config",
            config,
            "--release-zip",
            zip,
            "--skip",
            "os-build",
            "--wait-timeout",
            "5m",
        ],
    );
    assert_eq!(
        code, 1,
        "a refused route fails the install at once: {doc}\n{err}"
    );
    assert_eq!(doc["error"]["kind"], "service-failed", "{doc}");
    let causes: Vec<&str> = crate::support::items(&doc["error"], "causes")
        .filter_map(Value::as_str)
        .collect();
    assert!(
        causes.iter().any(|c| c.contains(
            "CalicoNode could not restore the route 169.254.169.254/32 via 10.0.2.2 that the vSwitch dropped: add route 169.254.169.254/32 via 10.0.2.2 on interface"
        ) && c.contains("(os error 5)")),
        "{doc}"
    );
    let message = doc["error"]["message"].as_str().expect("message");
    assert!(!message.contains("as it was"), "{message}");
    for left in [
        "HNS network Calico (L2Bridge) was made while the command ran (fix: Get-HnsNetwork | Where-Object Name -eq 'Calico' | Remove-HnsNetwork)",
        "HNS network External (L2Bridge) was made",
        "the host address 10.0.2.15/24 is on vEthernet (Ethernet) (it was on Ethernet)",
        "the route 169.254.169.254/32 via 10.0.2.2 is gone (fix: New-NetRoute -DestinationPrefix 169.254.169.254/32 -InterfaceAlias 'Ethernet' -NextHop 10.0.2.2 -RouteMetric 256)",
    ] {
        assert!(message.contains(left), "{left}\n{message}");
    }
    // What the message lists differs; nothing else does.
    let now = n.snapshot();
    for part in ["files", "registry", "firewall"] {
        assert_same(
            &now[part],
            &initial[part],
            &format!("{part} after the rollback"),
        );
    }
    // The administrator's fixes, as the stand-ins see them: the networks removed, the
    // address and the route back.
    for f in n.hcn_files().difference(&hcn_before) {
        fs_err::remove_file(n.c("calicoctl-win-hcn").join(f)).expect("remove network");
    }
    fs_err::write(&net_path, net_before).expect("the route back");
    assert_same(&n.snapshot(), initial, "after the refused route's fixes");
}
