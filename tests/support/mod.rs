//! Shared helpers for the binary's integration tests.
#![allow(dead_code)] // Each test crate uses a different subset.

pub mod admission;
pub mod client_go;
pub mod documents;
pub mod etcd;
pub mod fake_api;
pub mod node;
pub mod operator;
pub mod proxy;
pub mod release;
pub mod snapshot;

#[allow(unused_imports)] // Not every test binary builds a node.
pub use node::Node;

use assert_cmd::Command;
use std::path::{Path, PathBuf};

/// A fixture's node name as the library takes it.
pub fn node_name(name: &str) -> calicoctl_win::k8s_name::NodeName {
    calicoctl_win::k8s_name::NodeName::parse(name).expect("a node name")
}

/// The crate root: tests run the binary from here so relative fixture paths resolve.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The binary with an empty environment, so settings on the test machine (VXLAN_VNI, IP, ...)
/// cannot leak into a test.
pub fn cmd() -> Command {
    let mut c = Command::cargo_bin("calicoctl-win").expect("binary builds");
    c.env_clear().current_dir(root());
    c
}

/// The binary as `cmd` makes it, to start in the background (stdin closed).
pub fn background() -> std::process::Command {
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("calicoctl-win"));
    c.env_clear()
        .current_dir(root())
        .stdin(std::process::Stdio::null());
    c
}

/// The binary as on a node named `win-1`, so results do not depend on this machine's host name.
pub fn on_node() -> Command {
    let mut c = cmd();
    c.args(["--set", "node.name=win-1"]);
    c
}

/// The entries of the JSON list `doc[key]` (a document's `checks`, `actions`, `findings` ...).
pub fn items<'a>(doc: &'a serde_json::Value, key: &str) -> std::slice::Iter<'a, serde_json::Value> {
    doc[key]
        .as_array()
        .unwrap_or_else(|| panic!("no list {key}: {doc}"))
        .iter()
}

/// Parses stdout as one JSON document.
pub fn json(stdout: &[u8]) -> serde_json::Value {
    serde_json::from_slice(stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}): {}",
            String::from_utf8_lossy(stdout)
        )
    })
}

/// Runs `command`, which must succeed (else its stderr is shown), and parses its stdout as JSON.
pub fn json_of(command: &mut Command) -> serde_json::Value {
    let out = command.output().expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json(&out.stdout)
}

/// Runs `command`, which must exit with `code` (else its output is shown): its output.
pub fn exits(command: &mut Command, code: i32) -> std::process::Output {
    command.assert().code(code).get_output().clone()
}

/// Compares `actual` with the reviewed golden file `golden` (`<golden>.snap`, insta's format:
/// a short header, then the text): `cargo insta review`, or `INSTA_UPDATE=always cargo test`,
/// takes an intended change, and `git diff` shows it.
pub fn assert_golden(golden: &Path, actual: &str) {
    let dir = golden.parent().expect("a golden file has a directory");
    let name = golden
        .file_name()
        .expect("a golden file has a name")
        .to_string_lossy()
        .into_owned();
    insta::with_settings!({snapshot_path => dir, prepend_module_to_snapshot => false, omit_expression => true}, {
        insta::assert_snapshot!(name, actual);
    });
}

/// A program from Debian's packages that some tests run (`kubectl`, `etcd`). On a machine
/// without it those tests say so and pass; CI sets `CALICOCTL_WIN_REQUIRE_TOOLS=1`, which
/// makes a missing program a failure, so the tests cannot silently stop running there.
pub fn tool(name: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var_os("CALICOCTL_WIN_REQUIRE_TOOLS").is_none(),
            "{name} is required (CALICOCTL_WIN_REQUIRE_TOOLS is set) but not on PATH"
        );
        eprintln!("skipped: {name} is not installed (apt-get install -y {name}); CI requires it");
    }
    found
}

/// How a run stopped at a pause point (`--sim-fault pause:N`) ended.
#[derive(Debug)]
pub enum Killed {
    /// It stopped there (the text says where) and was killed with SIGKILL from outside.
    At(String),
    /// It finished before reaching the call: its exit code and stderr.
    Ended(i32, String),
}

/// Runs `calicoctl-win ARGS` on node win-1 of the simulated host `host` with `--sim-fault
/// pause:N` and, once it has stopped at its Nth mutating call, kills it from outside
/// (SIGKILL: no destructor, no flush, nothing of the process runs again). Its temp directory
/// is `tmp`, so that a test can see what a killed run leaves there.
pub fn kill_at(host: &Path, admin: &Path, args: &[&str], n: u64, tmp: &Path) -> Killed {
    let marker = PathBuf::from(format!("{}.paused", host.display()));
    let _ = fs_err::remove_file(&marker);
    let stderr_path = tmp.with_extension("stderr");
    let stderr = std::fs::File::create(&stderr_path).expect("stderr file");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("calicoctl-win"))
        .env_clear()
        .env("TMPDIR", tmp)
        .current_dir(root())
        .args(["--set", "node.name=win-1"])
        .args(args)
        .args(["-o", "json", "--sim-host"])
        .arg(host)
        .arg("--kubeconfig")
        .arg(admin)
        .args(["--sim-fault", &format!("pause:{n}")])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("start calicoctl-win");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        if let Ok(at) = fs_err::read_to_string(&marker)
            && !at.is_empty()
        {
            child.kill().expect("SIGKILL");
            child.wait().expect("reap");
            fs_err::remove_file(&marker).expect("remove the pause marker");
            return Killed::At(at);
        }
        if let Some(status) = child.try_wait().expect("wait") {
            let err = fs_err::read_to_string(&stderr_path).unwrap_or_default();
            return Killed::Ended(status.code().unwrap_or(-1), err);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "calicoctl-win {args:?} neither paused at call {n} nor ended in 120 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Copies a simulated host directory.
pub fn copy_dir(from: &Path, to: &Path) {
    fs_err::create_dir_all(to).expect("mkdir");
    for e in fs_err::read_dir(from).expect("read dir").flatten() {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if src.is_dir() {
            copy_dir(&src, &dst);
        } else {
            fs_err::copy(&src, &dst).expect("copy");
        }
    }
}

/// The entries of `dir` (a killed run's temp directory), for an assertion that it is empty.
pub fn entries(dir: &Path) -> Vec<String> {
    fs_err::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The VSID (VXLAN VNI) of the Calico HNS network on the simulated host in `sim`.
pub fn calico_vsid(sim: &Path) -> Option<u64> {
    let state: serde_json::Value =
        serde_json::from_str(&fs_err::read_to_string(sim.join("state.json")).ok()?).ok()?;
    state["networks"]
        .as_array()?
        .iter()
        .find(|n| n["Name"] == "Calico")?
        .pointer("/Ipams/0/Subnets/0/Policies/0/Settings/IsolationId")?
        .as_u64()
}

/// A kubeconfig of the service account `namespace`/`name`, as an admin writes it with
/// `fetch installer-kubeconfig` (a 2 h token), in `dir`.
/// A client of the cluster `kubeconfig` names, as the commands connect.
pub fn connect(kubeconfig: &Path) -> calicoctl_win::cluster::Cluster {
    calicoctl_win::cluster::Cluster::connect(
        std::slice::from_ref(&kubeconfig.to_path_buf()),
        &Default::default(),
        false,
    )
    .expect("connect")
}

/// `service_account_kubeconfig` in a temp dir of its own (keep the dir while the file is used).
pub fn account(
    api: &fake_api::FakeApi,
    namespace: &str,
    name: &str,
) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = service_account_kubeconfig(api, dir.path(), namespace, name);
    (dir, kubeconfig)
}

pub fn service_account_kubeconfig(
    api: &fake_api::FakeApi,
    dir: &Path,
    namespace: &str,
    name: &str,
) -> PathBuf {
    let admin = dir.join("for-the-token").join("admin.kubeconfig");
    fs_err::create_dir_all(admin.parent().expect("dir")).expect("dir");
    let admin = api.kubeconfig(admin.parent().expect("dir"), None);
    let out = dir.join(format!("{name}.kubeconfig"));
    on_node()
        .args(["fetch", "installer-kubeconfig", "-o", "json"])
        .args([
            "--service-account",
            name,
            "--namespace",
            namespace,
            "--kubeconfig",
        ])
        .arg(&admin)
        .arg("--out-file")
        .arg(&out)
        .assert()
        .success();
    fs_err::remove_dir_all(admin.parent().expect("dir")).expect("remove the admin kubeconfig");
    out
}

/// The token a kubeconfig calicoctl-win wrote holds inline.
pub fn token_in(kubeconfig: &Path) -> String {
    let doc: serde_json::Value =
        serde_json::from_str(&fs_err::read_to_string(kubeconfig).expect("read")).expect("json");
    doc["users"][0]["user"]["token"]
        .as_str()
        .expect("token")
        .to_owned()
}

/// Every file under `dir` holding `needle`, into `found`.
pub fn files_holding(dir: &Path, needle: &str, found: &mut Vec<String>) {
    for entry in fs_err::read_dir(dir).expect("read dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_holding(&path, needle, found);
        } else if fs_err::read(&path).is_ok_and(|b| String::from_utf8_lossy(&b).contains(needle)) {
            found.push(path.display().to_string());
        }
    }
}

/// `service run node --console` on the simulated host `sim` with `args`, as a child to watch;
/// its platform probes point at a closed loopback port.
#[cfg(unix)]
pub fn console_node(sim: &Path, args: &[&str]) -> std::process::Child {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let closed = format!("http://{}", closed.local_addr().expect("addr"));
    std::process::Command::new(assert_cmd::cargo::cargo_bin("calicoctl-win"))
        .env_clear()
        .args(["service", "run", "node", "--console", "--sim-host"])
        .arg(sim)
        .args(["--ec2-metadata-url", &closed, "--gce-metadata-url", &closed])
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn")
}

/// Stops a `console_node` child as the SCM would (SIGTERM here) and returns its log (stderr).
#[cfg(unix)]
pub fn stop_console(child: std::process::Child) -> String {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("signal");
    let out = child.wait_with_output().expect("wait");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The `problems` of a `status -o json` document, as strings.
pub fn status_problems(doc: &serde_json::Value) -> Vec<String> {
    doc["problems"]
        .as_array()
        .map(|p| {
            p.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}
