//! install → status → install again → uninstall --purge of calicoctl-win.exe on the Windows
//! host this test runs on, as a Windows program: the real SCM, registry, file system, HNS,
//! firewall and IP helper, a stand-in calico-node (the `fake-calico-node` example) from a
//! release zip of Calico's layout, and the fake API server on loopback in this process.
//!
//! It changes the host, so it runs only when asked (`CALICOCTL_WIN_LIFECYCLE=1`):
//! `.github/workflows/windows.yml` runs it on GitHub's hosted Windows Server runners (elevated,
//! with the Containers feature), and `tools/wine/test.sh` runs it as a Windows program under
//! Wine, where HNS, the firewall and the IP helper are the project's stand-ins. It cleans up
//! after itself however it ends: what it registered for the node (a stand-in containerd
//! service, a kubelet.exe process) and, when the uninstall did not, calicoctl-win's services.
//!
//! What it checks is read back through calicoctl-win's own Windows host code, so the same
//! assertions hold on both: after the purge no Calico service, no `Calico` or `External`
//! network, no VXLAN firewall rule and no install root remain.
#![cfg(windows)]

use crate::support::fake_api::FakeApi;
use crate::support::release::{buildinfo, write_zip};
use calicoctl_win::host::windows::WindowsHost;
use calicoctl_win::host::{Files, Firewall, Hns, Services};
use calicoctl_win::layout::{CALICO_NETWORK, EXTERNAL_NETWORK, Role, VXLAN_RULE};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

const ROOT: &str = r"C:\CalicoWindows";

/// Runs its closure when dropped: clean-up that happens however the test ends.
struct Defer<F: FnMut()>(F);

impl<F: FnMut()> Drop for Defer<F> {
    fn drop(&mut self) {
        (self.0)()
    }
}

fn under_wine() -> bool {
    std::env::var_os("CALICOCTL_WIN_TEST_UNDER_WINE").is_some()
}

/// Under Wine, calicoctl-win.exe and the services it registers load the project's stand-in
/// iphlpapi.dll and hnetcfg.dll (Wine's own lack what it calls), as tests/windows/wine_lifecycle.rs
/// sets them; on Windows nothing is done.
fn wine_dll_overrides() {
    if !under_wine() {
        return;
    }
    for dll in ["iphlpapi", "hnetcfg"] {
        let key = r"HKCU\Software\Wine\AppDefaults\calicoctl-win.exe\DllOverrides";
        let (code, text) = run("reg", &["add", key, "/v", dll, "/d", "native", "/f"]);
        assert_eq!(code, 0, "reg add {key}: {text}");
    }
}

/// The directory of the test binaries' sibling programs (`target/<profile>`).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    exe.parent()
        .and_then(Path::parent)
        .expect("target dir")
        .to_path_buf()
}

fn example(name: &str) -> PathBuf {
    let path = target_dir().join("examples").join(format!("{name}.exe"));
    assert!(
        path.is_file(),
        "{} is missing: cargo build --example {name}",
        path.display()
    );
    path
}

fn run(program: &str, args: &[&str]) -> (i32, String) {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run {program}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// calicoctl-win.exe ARGS as node win-1 with the admin kubeconfig: exit code, JSON and stderr.
fn calicoctl(kubeconfig: &Path, args: &[&str]) -> (i32, Value, String) {
    let kc = kubeconfig.display().to_string();
    let mut all: Vec<&str> = args.to_vec();
    all.extend([
        "-o",
        "json",
        "--set",
        "node.name=win-1",
        "--kubeconfig",
        &kc,
    ]);
    let out = Command::new(env!("CARGO_BIN_EXE_calicoctl-win"))
        .args(&all)
        .stdin(Stdio::null())
        .output()
        .expect("run calicoctl-win.exe");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let doc = serde_json::from_str(&stdout).unwrap_or_else(|_| json!({ "stdout": stdout }));
    (
        out.status.code().unwrap_or(-1),
        doc,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A containerd service for the runtime check, when the host has none: the contract tests'
/// minimal service at containerd's path, removed at the end with its directory. One the host
/// has is started if it is stopped, and left as it is.
fn stand_in_containerd(h: &WindowsHost) -> Option<Defer<impl FnMut()>> {
    if let Some(svc) = h.service_query("containerd").expect("query") {
        if svc.state != calicoctl_win::host::ServiceState::Running {
            let (code, text) = run("sc", &["start", "containerd"]);
            assert_eq!(code, 0, "sc start containerd: {text}");
        }
        return None;
    }
    let dir = r"C:\Program Files\containerd";
    let made = !Path::new(dir).exists();
    fs_err::create_dir_all(dir).expect("containerd's directory");
    let exe = format!(r"{dir}\containerd.exe");
    fs_err::copy(example("contract-test-service"), &exe).expect("copy the service");
    let binpath = format!("\"{exe}\"");
    let (code, text) = run("sc", &["create", "containerd", "binpath=", &binpath]);
    assert_eq!(code, 0, "sc create containerd: {text}");
    let (code, text) = run("sc", &["start", "containerd"]);
    assert_eq!(code, 0, "sc start containerd: {text}");
    Some(Defer(move || {
        let _ = run("sc", &["stop", "containerd"]);
        let _ = run("sc", &["delete", "containerd"]);
        let _ = fs_err::remove_file(&exe);
        if made {
            let _ = fs_err::remove_dir_all(dir);
        }
    }))
}

/// kubelet.exe running (CalicoNode waits for it by image name): the stand-in calico-node
/// under that name, killed at the end.
fn stand_in_kubelet(dir: &Path) -> Child {
    let exe = dir.join("kubelet.exe");
    fs_err::copy(example("fake-calico-node"), &exe).expect("copy kubelet");
    Command::new(&exe)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start kubelet")
}

/// A release zip of Calico's layout whose calico-node.exe is the stand-in, with Calico's
/// build information appended as Calico's builds record it.
fn release(dir: &Path, version: &str) -> PathBuf {
    let mut exe = fs_err::read(example("fake-calico-node")).expect("fake calico-node");
    exe.extend_from_slice(buildinfo(version).as_bytes());
    let mut entries = crate::support::release::entries("calico-node.exe");
    entries[0].1 = exe;
    let path = dir.join(format!("calico-windows-v{version}.zip"));
    write_zip(&path, &entries);
    path
}

/// What a purge must leave: none of the services, networks, rule or root install made.
fn remains(h: &WindowsHost) -> Vec<String> {
    // The Calico services (the tested install registers no kube-proxy service).
    let mut left: Vec<String> = [Role::Node, Role::Felix, Role::Confd]
        .iter()
        .map(|r| r.service_name())
        .filter(|s| h.service_query(s).ok().flatten().is_some())
        .map(|s| format!("service {s}"))
        .collect();
    for n in h.hns_networks().unwrap_or_default() {
        if n.name == CALICO_NETWORK || n.name == EXTERNAL_NETWORK {
            left.push(format!("HNS network {}", n.name));
        }
    }
    if h.firewall_rule(VXLAN_RULE).ok().flatten().is_some() {
        left.push(format!("firewall rule {VXLAN_RULE}"));
    }
    if h.dir_exists(ROOT).unwrap_or(false) {
        left.push(ROOT.into());
    }
    left
}

#[test]
fn install_status_and_purge_on_this_windows_host() {
    if std::env::var_os("CALICOCTL_WIN_LIFECYCLE").is_none() {
        eprintln!("skipped: set CALICOCTL_WIN_LIFECYCLE=1 on a Windows host this may change");
        return;
    }
    wine_dll_overrides();
    let h = WindowsHost::new();
    assert_eq!(
        remains(&h),
        Vec::<String>::new(),
        "the host has a Calico install already: this test needs one without"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let _containerd = stand_in_containerd(&h);
    let mut kubelet = stand_in_kubelet(dir.path());
    let kc_for_cleanup = dir.path().join("admin.kubeconfig");
    let _cleanup = Defer(|| {
        let _ = kubelet.kill();
        let _ = kubelet.wait();
        // An uninstall that failed leaves the rest to remove; a second purge does it.
        if !remains(&WindowsHost::new()).is_empty() {
            let _ = calicoctl(&kc_for_cleanup, &["uninstall", "--purge", "--remove-logs"]);
        }
    });
    let api = FakeApi::calico();
    let kc = api.kubeconfig(dir.path(), None);
    api.set_node_ready("win-1", "True", "kubelet is posting ready status");
    // The runner's address is not the test's to know: the Node posts none, and status judges
    // the address only against what it has.
    api.set_node_internal_ip("win-1", None);
    let zip = release(dir.path(), "3.30.2").display().to_string();
    let config = dir.path().join("vxlan.yaml");
    fs_err::write(
        &config,
        "container_runtime: containerd\nnode:\n  platform: bare-metal\n",
    )
    .expect("config");
    let config = config.display().to_string();
    let mut install = vec!["install", "--config", &config, "--release-zip", &zip];
    if under_wine() {
        // Wine says it is Windows 10, no Windows Server build.
        install.extend(["--skip", "os-build"]);
    }

    let (code, doc, err) = calicoctl(&kc, &install);
    assert_eq!(code, 0, "install: {doc}\n{err}");
    let networks = h.hns_networks().expect("networks");
    let calico = networks
        .iter()
        .find(|n| n.name == "Calico")
        .unwrap_or_else(|| panic!("no Calico network: {networks:?}"));
    assert_eq!(calico.vsid(), Some(4096), "{calico:?}");
    for s in ["CalicoNode", "CalicoFelix"] {
        assert!(
            h.service_query(s).expect("query").is_some(),
            "{s} is not registered"
        );
    }
    let (code, doc, err) = calicoctl(&kc, &["status", "--config", &config]);
    assert_eq!(code, 0, "status after install: {doc}\n{err}");

    // Nothing to change the second time. Under Wine the secret files and the protected
    // directories read back without their lists (Wine keeps none), so those are done again;
    // on Windows nothing is.
    let (code, doc, err) = calicoctl(&kc, &install);
    assert_eq!(code, 0, "second install: {doc}\n{err}");
    let again: Vec<&Value> = doc["actions"].as_array().expect("actions").iter().collect();
    let tolerated = |a: &&Value| {
        under_wine() && (a["action"] == "restrict-file" || a["action"] == "protect-dir")
    };
    assert!(again.iter().all(tolerated), "second install: {doc}");

    let (code, doc, err) = calicoctl(
        &kc,
        &["uninstall", "--config", &config, "--purge", "--remove-logs"],
    );
    assert_eq!(code, 0, "uninstall: {doc}\n{err}");
    assert_eq!(remains(&h), Vec::<String>::new(), "after uninstall --purge");
}
