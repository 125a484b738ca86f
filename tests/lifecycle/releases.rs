//! Calico releases as they really are: zips of the 3.2x, 3.28–3.32 and 3.33 layouts whose
//! binaries record their version the way Calico's builds do, each installed on a simulated
//! host, and the exact command lines the services start them with (node-service.ps1 at each
//! release tag).

use crate::support::Node;
use crate::support::fake_api::FakeApi;
use crate::support::release::{entries_of, write_zip};
use crate::support::snapshot::{assert_same, snapshot};
use serde_json::Value;

/// Installs a release zip named without its version (`calico-windows.zip`), so the version can
/// only come from the binary; returns the install's JSON, the host state and the node.
fn install(binary: &str, version: &str) -> (Value, Value, Node, FakeApi, Value) {
    let api = FakeApi::calico();
    let node = Node::new(&api);
    let zip = node.dir.path().join("calico-windows.zip");
    write_zip(&zip, &entries_of(binary, Some(version)));
    let (code, _, stderr) = node.run(&["preflight", "--offline"]);
    assert!(code == 0 || code == 3, "{stderr}");
    let initial = snapshot(&node.sim());
    let (code, doc, stderr) = node.run(&[
        "install",
        "--release-zip",
        &zip.display().to_string(),
        "--allow-downgrade",
    ]);
    assert_eq!(code, 0, "{version}: {stderr}");
    let state: Value = serde_json::from_str(
        &fs_err::read_to_string(node.sim().join("state.json")).expect("state"),
    )
    .expect("json");
    (doc, state, node, api, initial)
}

fn started(state: &Value) -> Vec<String> {
    crate::support::items(state, "started")
        .map(|s| s.as_str().expect("text").to_owned())
        .collect()
}

#[test]
fn each_release_is_started_with_its_own_command_lines() {
    let root = r"C:\CalicoWindows";
    // No release gets Calico's token refresher: node-service.ps1 starts it only inside a
    // HostProcess container (v3.27.5, v3.28.1, v3.29.0 and later, commit 4821bf2338), and the
    // CNI config names calico-node's kubeconfig at every release (calico.psm1).
    let cases: &[(&str, &str, &str)] = &[
        // 3.2x to 3.30: plain startup.
        ("calico-node.exe", "3.27.3", "calico-node.exe -startup"),
        ("calico-node.exe", "3.30.2", "calico-node.exe -startup"),
        // 3.31–3.32: -complete-startup, or the node keeps NetworkUnavailable.
        (
            "calico-node.exe",
            "3.31.0",
            "calico-node.exe -startup -complete-startup",
        ),
        // 3.33: calico.exe and its subcommands.
        (
            "calico.exe",
            "3.33.0",
            "calico.exe component node startup --complete-startup",
        ),
    ];
    for (binary, version, startup) in cases {
        let (doc, state, node, _api, initial) = install(binary, version);
        // The version came from the binary: the zip's name has none.
        assert_eq!(doc["calico_version"], *version, "{version}");
        assert_eq!(
            started(&state),
            vec![format!(r"{root}\{startup}")],
            "{version}"
        );
        // The services carry the version, which decides these lines at every start.
        let node_cmd = state["services"]["caliconode"]["command_line"]
            .as_str()
            .expect("command line");
        assert!(
            node_cmd.ends_with(&format!("--calico-version {version}")),
            "{node_cmd}"
        );
        let conf = fs_err::read_to_string(
            node.c_drive("program files/containerd/cni/conf/10-calico.conf"),
        )
        .expect("cni conf");
        assert!(
            conf.contains(r"C:\\CalicoWindows\\calico-kube-config"),
            "{conf}"
        );
        assert!(!node.c_drive("calicowindows/token-refresher").exists());
        // Uninstall removes what the services wrote as well as what install recorded.
        let (code, _, stderr) = node.run(&["uninstall", "--purge", "--remove-logs"]);
        assert_eq!(code, 0, "{stderr}");
        assert_same(&snapshot(&node.sim()), &initial, version);
    }
}

#[test]
fn the_version_follows_the_cluster_and_a_downgrade_needs_to_be_asked_for() {
    let api = FakeApi::calico(); // ClusterInformation calicoVersion v3.30.2
    let node = Node::new(&api);
    let initial_dir = node.sim();

    // No version given: the cluster's, not the built-in default.
    let (code, doc, stderr) = node.run(&["install", "--dry-run"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(doc["calico_version"], "3.30.2");
    assert!(
        doc["prepare"][0]
            .as_str()
            .is_some_and(|p| p.contains("/v3.30.2/calico-windows-v3.30.2.zip")),
        "{}",
        doc["prepare"]
    );

    // A newer one warns; an older one is refused before anything happens.
    let (code, _, stderr) = node.run(&["install", "--dry-run", "--calico-version", "3.31.0"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("newer than the cluster's Calico 3.30.2"),
        "{stderr}"
    );
    let (code, doc, stderr) = node.run(&["install", "--calico-version", "3.29.1"]);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(doc["error"]["kind"], "downgrade", "{doc}");
    let message = doc["error"].to_string();
    assert!(
        message.contains("older than the cluster's Calico 3.30.2"),
        "{message}"
    );
    assert!(message.contains("--allow-downgrade"), "{message}");
    let (code, _, stderr) = node.run(&[
        "install",
        "--dry-run",
        "--calico-version",
        "3.29.1",
        "--allow-downgrade",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("older than the cluster's"), "{stderr}");

    // A zip is judged by the version its binary records, whatever its name says.
    let zip = node.dir.path().join("calico-windows-v3.30.2.zip");
    write_zip(&zip, &entries_of("calico-node.exe", Some("3.29.1")));
    let before = snapshot(&initial_dir);
    let (code, doc, stderr) = node.run(&["install", "--release-zip", &zip.display().to_string()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        doc["error"]
            .to_string()
            .contains("is Calico 3.29.1, older than"),
        "{}",
        doc["error"]
    );
    assert_same(&snapshot(&initial_dir), &before, "refused downgrade");
}

/// A dry run may use the zip a download left in the cache (it has the asked checksum), and
/// changes nothing on the node: a cached zip it refuses stays where it is.
#[test]
fn a_dry_run_reads_the_cached_zip_and_leaves_a_refused_one_in_place() {
    let api = FakeApi::calico(); // ClusterInformation calicoVersion v3.30.2
    let node = Node::new(&api);
    let (code, _, stderr) = node.run(&["preflight", "--offline"]);
    assert!(code == 0 || code == 3, "{stderr}");
    // As a download that finished left it; nothing serves the URL.
    let cache = node
        .sim()
        .join("fs")
        .join("c")
        .join("calicowindows")
        .join("cache");
    fs_err::create_dir_all(&cache).expect("cache");
    let zip = cache.join("calico-windows-v3.31.0.zip");
    write_zip(&zip, &entries_of("calico-node.exe", Some("3.29.1")));
    let sha = crate::support::release::sha256(&zip);
    let before = snapshot(&node.sim());
    let url = "https://127.0.0.1:9/calico-windows-v3.31.0.zip";
    let dry_run = |version: &str| {
        node.run(&[
            "install",
            "--dry-run",
            "--release-zip",
            url,
            "--sha256",
            &sha,
            "--calico-version",
            version,
            "--allow-downgrade",
        ])
    };
    // Its binary says 3.29.1, not the 3.31.0 asked for: refused, and kept.
    let (code, doc, stderr) = dry_run("3.31.0");
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(doc["error"]["kind"], "version-mismatch", "{doc}");
    assert!(zip.is_file(), "the dry run removed the cached zip");
    assert_same(&snapshot(&node.sim()), &before, "a refusing dry run");
    // Asked for what it is, the dry run's plan is made from it, not from a download.
    let (code, doc, stderr) = dry_run("3.29.1");
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(doc["calico_version"], "3.29.1", "{doc}");
    assert_same(&snapshot(&node.sim()), &before, "a dry run");
}

/// An install refused for its release (a given zip older than the cluster's Calico) or for
/// calico-node's kubeconfig (no admin kubeconfig to request it with) refuses before its first
/// change: it makes no mutating call on the node at all (a crash injected at the first one is
/// never reached: no journal begun, no root or cache made, nothing staged), and the dry run
/// refuses with the same error (after showing its plan, as a dry run the checks stop does).
#[test]
fn a_refused_install_makes_no_change_and_its_dry_run_refuses_alike() {
    let api = FakeApi::calico(); // ClusterInformation calicoVersion v3.30.2
    let node = Node::new(&api);
    let (code, _, stderr) = node.run(&["preflight", "--offline"]);
    assert!(code == 0 || code == 3, "{stderr}");
    let before = snapshot(&node.sim());
    let zip = |name: &str, version: &str| {
        let path = node.dir.path().join(name);
        write_zip(&path, &entries_of("calico-node.exe", Some(version)));
        path.display().to_string()
    };
    let older = zip("calico-windows.zip", "3.29.1");
    let same = zip("calico-windows-current.zip", "3.30.2");
    let first_change_crashes = ["--sim-fault", "crash:1"];
    for dry_run in [false, true] {
        let how = if dry_run { "--dry-run" } else { "crash:1" };
        let with = |args: &[&'static str], zip: &str| {
            let mut all: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
            all.push(zip.to_owned());
            if dry_run {
                all.push("--dry-run".to_owned());
            } else {
                all.extend(first_change_crashes.map(str::to_owned));
            }
            all
        };
        let args = with(&["install", "--release-zip"], &older);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, doc, stderr) = node.run(&args);
        assert_eq!(code, 2, "{how}: {stderr}");
        assert_eq!(doc["error"]["kind"], "downgrade", "{how}: {doc}");
        assert_same(&snapshot(&node.sim()), &before, how);

        let args = with(&["install", "--release-zip"], &same);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, doc, stderr) = node.run_without_kubeconfig(&args);
        assert_eq!(code, 2, "{how}: {stderr}");
        let refusal = "error: install needs the cluster to get calico-node's kubeconfig";
        assert!(stderr.contains(refusal), "{how}: {stderr}");
        if dry_run {
            // The dry run's document is its plan; it ends with the real run's refusal.
            assert!(doc["actions"].as_array().is_some_and(|a| !a.is_empty()));
            assert!(doc["warnings"].to_string().contains("no-admin-kubeconfig"));
        } else {
            assert_eq!(doc["error"]["kind"], "no-admin-kubeconfig", "{how}: {doc}");
        }
        assert_same(&snapshot(&node.sim()), &before, how);
    }
}

/// A real install's look at a given zip extracts it in calicoctl-win's state directory (the
/// simulated host's directory), which it leaves as it found it; what a look cut off by a kill
/// left there is removed by the next install, which holds the host lock (so that look's run
/// has ended), while a link of that name is said and left, with what it names.
#[cfg(unix)]
#[test]
fn a_killed_looks_release_is_removed_by_the_next_install_and_a_link_is_left() {
    let api = FakeApi::calico();
    let node = Node::new(&api);
    let zip = node.dir.path().join("calico-windows.zip");
    write_zip(&zip, &entries_of("calico-node.exe", Some("3.30.2")));
    let (code, _, stderr) = node.run(&["preflight", "--offline"]);
    assert!(code == 0 || code == 3, "{stderr}");
    let left = node.sim().join("release-look-Ab12Cd");
    fs_err::create_dir_all(left.join("CalicoWindows")).expect("left");
    fs_err::write(left.join("CalicoWindows/calico-node.exe"), b"old").expect("file");
    let elsewhere = node.dir.path().join("elsewhere");
    fs_err::create_dir(&elsewhere).expect("elsewhere");
    fs_err::write(elsewhere.join("keep.txt"), b"keep").expect("keep");
    let link = node.sim().join("release-look-link");
    std::os::unix::fs::symlink(&elsewhere, &link).expect("link");
    let (code, _, stderr) = node.run(&["install", "--release-zip", &zip.display().to_string()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        !left.exists(),
        "the killed look's release is still there: {stderr}"
    );
    assert!(elsewhere.join("keep.txt").is_file());
    assert!(
        fs_err::symlink_metadata(&link).is_ok(),
        "the link was removed"
    );
    assert!(
        stderr.contains(&link.display().to_string()) && stderr.contains("remove it by hand"),
        "{stderr}"
    );
    let looks: Vec<_> = fs_err::read_dir(node.sim())
        .expect("dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("release-look-") && n != "release-look-link")
        .collect();
    assert!(looks.is_empty(), "{looks:?}");
}
