//! `install` and `uninstall` through the binary: a simulated host, the fake API server and a
//! local HTTPS release server with synthetic zips of the real layout.

use crate::support::fake_api::FakeApi;
use crate::support::release::{ReleaseServer, release_zip, sha256, write_zip};
use crate::support::snapshot::{assert_same, snapshot};
use crate::support::{Node, on_node};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;

/// A node on a healthy fake cluster with a release zip of `binary` (Calico 3.34.0 for
/// `calico.exe`, 3.30.2 for `calico-node.exe`) served over HTTPS.
fn setup(binary: &str) -> Node {
    setup_on(Node::healthy(), binary)
}

fn setup_on(b: crate::support::node::NodeBuilder<'_>, binary: &str) -> Node {
    let version = if binary == "calico.exe" {
        "3.34.0"
    } else {
        "3.30.2"
    };
    b.created().serving(version, binary).build()
}

/// The release server's `host:port`, as a proxy sees it asked for.
fn release_host(s: &Node) -> String {
    s.served()
        .url
        .trim_start_matches("https://")
        .split('/')
        .next()
        .expect("host")
        .to_owned()
}

fn install_round_trip(binary: &str) {
    let s = setup(binary);
    let initial = s.snapshot();

    let (code, doc, stderr) = s.install(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(doc["changed"], true);
    // The host it leaves, whole: services (their command lines, dependencies, start and
    // recovery), Calico's registry key, the networks, the firewall rule, the files.
    let name = format!("host-after-install-{}", binary.trim_end_matches(".exe"));
    crate::support::documents::snapshot(&s, &name, &s.state());
    assert!(s.c_drive(&format!("calicowindows/{binary}")).is_file());
    assert!(
        s.c_drive("program files/containerd/cni/bin/calico-ipam.exe")
            .is_file()
    );
    assert!(s.c_drive("calicowindows/calico-kube-config").is_file());
    assert!(
        !s.c_drive("calicowindows/calicoctl-win.journal.json")
            .exists()
    );
    let record: Value = serde_json::from_slice(
        &fs_err::read(s.c_drive("calicowindows/calicoctl-win-install.json")).expect("record"),
    )
    .expect("record json");
    let version = if binary == "calico.exe" {
        "3.34.0"
    } else {
        "3.30.2"
    };
    assert_eq!(record["calico_version"], version);
    // calico-node's token reaches the file its kubeconfig names and nothing the install
    // prints.
    let kubeconfig: Value = serde_json::from_slice(
        &fs_err::read(s.c_drive("calicowindows/calico-kube-config")).expect("kubeconfig"),
    )
    .expect("the kubeconfig is JSON-shaped YAML");
    assert_eq!(
        kubeconfig["users"][0]["user"]["tokenFile"],
        r"C:\CalicoWindows\calico-kube-config.token"
    );
    let token = fs_err::read_to_string(s.c_drive("calicowindows/calico-kube-config.token"))
        .expect("token file");
    let token = token.as_str();
    assert!(token.len() > 20, "{token}");
    for (what, text) in [("stdout", doc.to_string()), ("stderr", stderr.clone())] {
        assert!(!text.contains(token), "the token is in {what}");
    }
    let installed = s.snapshot();

    // The same inputs again: nothing to change, and nothing changed.
    let (code, doc, stderr) = s.install(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(doc["actions"], json!([]), "{doc}");
    assert_eq!(doc["changed"], false);
    assert_same(&s.snapshot(), &installed, "second install");

    // Uninstall --purge --remove-logs: back to exactly the initial host.
    let (code, _, stderr) = s.uninstall(&["--purge", "--remove-logs"]);
    assert_eq!(code, 0, "{stderr}");
    assert_same(
        &s.snapshot(),
        &initial,
        "after uninstall --purge --remove-logs",
    );
}

#[test]
fn install_twice_then_purge_returns_the_initial_host_with_calico_node_exe() {
    install_round_trip("calico-node.exe");
}

#[test]
fn install_twice_then_purge_returns_the_initial_host_with_calico_exe() {
    install_round_trip("calico.exe");
}

#[test]
fn dry_runs_change_nothing_and_list_every_action() {
    let s = setup("calico-node.exe");
    let before = s.snapshot();
    let (code, doc, stderr) = s.install(&["--dry-run"]);
    assert_eq!(code, 0, "{stderr}");
    assert_same(&s.snapshot(), &before, "install --dry-run");
    // The plan's document whole is `documents.rs`'s snapshot; here, what no snapshot may
    // hold: the admin's token.
    assert!(
        doc["actions"].as_array().is_some_and(|a| a.len() > 10),
        "{doc}"
    );
    assert!(!doc.to_string().contains("fake-admin-token"));

    let (code, _, stderr) = s.install(&[]);
    assert_eq!(code, 0, "{stderr}");
    let installed = s.snapshot();
    let (code, doc, stderr) = s.uninstall(&["--purge", "--dry-run"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(crate::support::items(&doc, "actions").any(|a| a["action"] == "delete-network"));
    assert_same(&s.snapshot(), &installed, "uninstall --dry-run");
}

#[test]
fn uninstall_without_purge_keeps_networks_and_works_without_config() {
    let s = setup("calico-node.exe");
    let (code, _, stderr) = s.install(&[]);
    assert_eq!(code, 0, "{stderr}");
    let broken = s.dir.path().join("broken.yaml");
    fs_err::write(&broken, "backend: [not, a, backend]\n").expect("write");
    let out = on_node()
        .args(["uninstall", "--config"])
        .arg(&broken)
        .args(["--kubeconfig", "/nonexistent/kubeconfig", "--sim-host"])
        .arg(s.sim())
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("config cannot be read"), "{stderr}");
    let state = s.state();
    assert!(state["services"]["caliconode"].is_null());
    assert_eq!(
        state["networks"].as_array().expect("networks").len(),
        2,
        "networks stay"
    );
    assert!(!s.c_drive("calicowindows/calico-node.exe").exists());
    assert!(
        !s.c_drive("program files/containerd/cni/bin/calico.exe")
            .exists()
    );
    assert!(
        s.c_drive("program files/containerd/containerd.exe")
            .is_file(),
        "containerd stays"
    );
    assert!(s.c_drive("calicowindows/logs").is_dir(), "logs stay");

    let (code, doc, _) = s.uninstall(&[]);
    assert_eq!(code, 0);
    assert_eq!(doc["changed"], false, "nothing left to uninstall");
}

use crate::support::copy_dir;

/// Runs on a fresh copy of `template`.
fn run_on(s: &Node, template: &Path, host: &Path, args: &[&str]) -> (i32, String) {
    let _ = fs_err::remove_dir_all(host);
    copy_dir(template, host);
    run_at(s, host, args)
}

fn run_at(s: &Node, host: &Path, args: &[&str]) -> (i32, String) {
    let out = on_node()
        .args(args)
        .args(["-o", "json", "--sim-host"])
        .arg(host)
        .arg("--kubeconfig")
        .arg(&s.admin)
        .output()
        .expect("run");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The snapshot without what the install record says it found before (`routes_before`,
/// `addresses_before`).
fn without_found_before(mut v: Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                m.remove("routes_before");
                m.remove("addresses_before");
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut v);
    v
}

#[test]
fn a_failure_at_every_install_step_rolls_back_or_a_rerun_converges() {
    let s = setup("calico-node.exe");
    let pristine = s.dir.path().join("pristine");
    copy_dir(&s.sim(), &pristine);
    let initial = snapshot(&pristine);
    let zip = s.zip().display().to_string();
    let install = ["install", "--release-zip", zip.as_str()];

    let clean = s.dir.path().join("clean");
    let (code, stderr) = run_on(&s, &pristine, &clean, &install);
    assert_eq!(code, 0, "{stderr}");
    let installed = snapshot(&clean);

    let host = s.dir.path().join("faulty");
    let mut rolled_back = 0;
    let mut converged = 0;
    let mut went_on = 0;
    for n in 1.. {
        let fault = format!("fail:{n}");
        let (code, stderr) = run_on(
            &s,
            &pristine,
            &host,
            &[&install[..], &["--sim-fault", &fault]].concat(),
        );
        let fired = stderr.contains("a failure injected at mutating call");
        if code == 0 && fired {
            // The run went on past the failure: it tried again and the node is as a clean
            // install leaves it (the extraction that follows the download starts again from
            // the zip), or it warned about what it could not keep (the file stats).
            let warned = stderr
                .lines()
                .any(|l| l.starts_with("warning:") && l.contains("simulated failure injected"));
            if !warned {
                assert_same(
                    &snapshot(&host),
                    &installed,
                    &format!("{fault}, tried again ({stderr})"),
                );
            }
            went_on += 1;
            continue;
        }
        if code == 0 {
            assert!(n > 10, "the install made only {n} mutating calls");
            break;
        }
        assert!(
            stderr.contains("simulated failure injected"),
            "{fault}: {stderr}"
        );
        assert!(stderr.contains("install failed"), "{fault}: {stderr}");
        // What the rollback says it left is measured: "as it was" exactly when the whole
        // simulated host (compared here independently) is as it was.
        let as_it_was = stderr.contains("the node is as it was")
            || stderr.contains("install failed before changing anything");
        if snapshot(&host) == initial {
            assert!(as_it_was, "{fault}: {stderr}");
            rolled_back += 1;
            continue;
        }
        assert!(
            !as_it_was,
            "{fault}: the host differs, the message says not: {stderr}"
        );
        let said = stderr;
        let (code, stderr) = run_at(&s, &host, &install);
        assert_eq!(code, 0, "{fault}, rerun: {stderr}");
        // A rollback does not remove the HNS networks the run made (it names them, with the
        // command that does); the rerun then records the node's routes and addresses with
        // the vSwitch as those it found before. Everything else converges, and a purge still
        // gives the node back as it was: routes go back where their address is now.
        let networks_left = said.contains("was made while the command ran");
        let (after, expected) = if networks_left {
            (
                without_found_before(snapshot(&host)),
                without_found_before(installed.clone()),
            )
        } else {
            (snapshot(&host), installed.clone())
        };
        assert_same(
            &after,
            &expected,
            &format!("{fault} ({said}), then a rerun"),
        );
        if networks_left {
            let (code, stderr) = run_at(&s, &host, &["uninstall", "--purge", "--remove-logs"]);
            assert_eq!(code, 0, "{fault}, rerun, purge: {stderr}");
            assert_same(
                &snapshot(&host),
                &initial,
                &format!("{fault}, rerun, then a purge"),
            );
        }
        converged += 1;
    }
    assert!(
        rolled_back > 10,
        "most failures roll back to the initial host ({rolled_back})"
    );
    eprintln!(
        "{rolled_back} rolled back, {converged} converged on a rerun, {went_on} went on past it"
    );
}

/// The outside-in crash test of install. The real binary is stopped at each of its mutating
/// calls in turn (inside a file write, its temporary file written and not yet renamed; before
/// any other call) and killed there with SIGKILL from outside. Each killed state, copied, is
/// then installed again, which must give exactly the host of an uninterrupted install, and
/// purged instead, which must give exactly the initial host (an interrupted install is undone,
/// not reported as nothing to uninstall). No killed run leaves anything in the temp dir.
#[test]
fn install_killed_from_outside_at_every_call_is_finished_by_a_rerun_or_undone_by_a_purge() {
    let s = setup("calico.exe");
    let pristine = s.dir.path().join("pristine");
    copy_dir(&s.sim(), &pristine);
    let initial = snapshot(&pristine);
    let zip = s.zip().display().to_string();
    let install = ["install", "--release-zip", zip.as_str()];
    let purge = ["uninstall", "--purge", "--remove-logs"];
    let clean = s.dir.path().join("clean");
    let (code, stderr) = run_on(&s, &pristine, &clean, &install);
    assert_eq!(code, 0, "{stderr}");
    let installed = snapshot(&clean);

    let host = s.dir.path().join("killed");
    let purged = s.dir.path().join("purged");
    let tmp = s.dir.path().join("tmp");
    for n in 1.. {
        let _ = fs_err::remove_dir_all(&host);
        copy_dir(&pristine, &host);
        let _ = fs_err::remove_dir_all(&tmp);
        fs_err::create_dir_all(&tmp).expect("tmp");
        let at = match crate::support::kill_at(&host, &s.admin, &install, n, &tmp) {
            crate::support::Killed::At(at) => at,
            crate::support::Killed::Ended(code, stderr) => {
                assert_eq!(code, 0, "{stderr}");
                assert!(n > 20, "the install made only {n} mutating calls");
                break;
            }
        };
        assert_eq!(
            crate::support::entries(&tmp),
            Vec::<String>::new(),
            "{at}: left in the temp dir"
        );
        let _ = fs_err::remove_dir_all(&purged);
        copy_dir(&host, &purged);

        let (code, stderr) = run_at(&s, &host, &install);
        assert_eq!(code, 0, "killed {at}, rerun: {stderr}");
        assert_same(
            &snapshot(&host),
            &installed,
            &format!("killed {at}, then a rerun"),
        );

        let (code, stderr) = run_at(&s, &purged, &purge);
        assert_eq!(code, 0, "killed {at}, purge: {stderr}");
        assert_same(
            &snapshot(&purged),
            &initial,
            &format!("killed {at}, then a purge"),
        );
    }
}

/// The outside-in crash test of `uninstall --purge`: killed from outside at each mutating call
/// in turn, a rerun finishes it and leaves the initial host.
#[test]
fn uninstall_killed_from_outside_at_every_call_is_finished_by_a_rerun() {
    let s = setup("calico-node.exe");
    let pristine = s.dir.path().join("pristine");
    copy_dir(&s.sim(), &pristine);
    let initial = snapshot(&pristine);
    let zip = s.zip().display().to_string();
    let installed = s.dir.path().join("installed");
    let (code, stderr) = run_on(
        &s,
        &pristine,
        &installed,
        &["install", "--release-zip", &zip],
    );
    assert_eq!(code, 0, "{stderr}");
    let purge = ["uninstall", "--purge", "--remove-logs"];
    let host = s.dir.path().join("killed");
    let tmp = s.dir.path().join("tmp");
    fs_err::create_dir_all(&tmp).expect("tmp");
    for n in 1.. {
        let _ = fs_err::remove_dir_all(&host);
        copy_dir(&installed, &host);
        let at = match crate::support::kill_at(&host, &s.admin, &purge, n, &tmp) {
            crate::support::Killed::At(at) => at,
            crate::support::Killed::Ended(code, stderr) => {
                assert_eq!(code, 0, "{stderr}");
                assert!(n > 10, "the uninstall made only {n} mutating calls");
                break;
            }
        };
        let (code, stderr) = run_at(&s, &host, &purge);
        assert_eq!(code, 0, "killed {at}, rerun: {stderr}");
        assert_same(
            &snapshot(&host),
            &initial,
            &format!("killed {at}, then a rerun"),
        );
    }
}

/// A download killed from outside: the rerun's record owns the install root and the cache the
/// killed run created (a purge after it returns the initial host), and a purge straight after
/// the kill removes them and the partial download.
#[test]
fn an_install_killed_in_its_download_is_finished_or_purged_without_leftovers() {
    let s = setup("calico-node.exe");
    let initial = s.snapshot();
    let pristine = s.dir.path().join("pristine");
    copy_dir(&s.sim(), &pristine);
    let sha = sha256(s.zip());
    let ca = s.served().ca.display().to_string();
    let install = [
        "install",
        "--release-zip",
        s.served().url.as_str(),
        "--sha256",
        &sha,
        "--release-ca-cert",
        &ca,
    ];
    let tmp = s.dir.path().join("tmp");
    let purged = s.dir.path().join("purged");
    for then_install in [true, false] {
        let _ = fs_err::remove_dir_all(s.sim());
        copy_dir(&pristine, &s.sim());
        let _ = fs_err::remove_dir_all(&tmp);
        fs_err::create_dir_all(&tmp).expect("tmp");
        s.served()
            .server
            .stall
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let before = s.served().server.requests.lock().expect("requests").len();
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("calicoctl-win"))
            .env_clear()
            .env("TMPDIR", &tmp)
            .current_dir(crate::support::root())
            .args(["--set", "node.name=win-1"])
            .args(install)
            .arg("--sim-host")
            .arg(s.sim())
            .arg("--kubeconfig")
            .arg(&s.admin)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start install");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !s.served().server.requests.lock().expect("requests")[before..]
            .iter()
            .any(|(p, _)| p.ends_with(".zip"))
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the install never downloaded"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        // Half the zip is sent; let it reach the disk.
        std::thread::sleep(std::time::Duration::from_millis(300));
        child.kill().expect("SIGKILL the install");
        child.wait().expect("reap");
        s.served()
            .server
            .stall
            .store(false, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(
            crate::support::entries(&tmp),
            Vec::<String>::new(),
            "left in the temp dir"
        );
        if then_install {
            let (code, doc, stderr) = s.install(&[]);
            assert_eq!(code, 0, "{doc} {stderr}");
            assert!(stderr.contains("did not finish"), "{stderr}");
        }
        let _ = fs_err::remove_dir_all(&purged);
        copy_dir(&s.sim(), &purged);
        let (code, stderr) = run_at(&s, &purged, &["uninstall", "--purge", "--remove-logs"]);
        assert_eq!(code, 0, "{stderr}");
        let what = if then_install {
            "a download killed, an install, a purge"
        } else {
            "a download killed, a purge"
        };
        assert_same(&snapshot(&purged), &initial, what);
    }
}

#[test]
fn a_failure_at_every_uninstall_step_is_finished_by_a_rerun() {
    let s = setup("calico-node.exe");
    let pristine = s.dir.path().join("pristine");
    copy_dir(&s.sim(), &pristine);
    let initial = snapshot(&pristine);
    let zip = s.zip().display().to_string();
    let installed = s.dir.path().join("installed");
    let (code, stderr) = run_on(
        &s,
        &pristine,
        &installed,
        &["install", "--release-zip", &zip],
    );
    assert_eq!(code, 0, "{stderr}");
    let uninstall = ["uninstall", "--purge", "--remove-logs"];
    let host = s.dir.path().join("faulty");
    for n in 1.. {
        let fault = format!("fail:{n}");
        let (code, stderr) = run_on(
            &s,
            &installed,
            &host,
            &[&uninstall[..], &["--sim-fault", &fault]].concat(),
        );
        if code == 0 {
            assert!(n > 10, "the uninstall made only {n} mutating calls");
            break;
        }
        assert!(
            stderr.contains("running uninstall again finishes it"),
            "{fault}: {stderr}"
        );
        let (code, stderr) = run_at(&s, &host, &uninstall);
        assert_eq!(code, 0, "{fault}, rerun: {stderr}");
        assert_same(
            &snapshot(&host),
            &initial,
            &format!("{fault}, then a rerun"),
        );
    }
}

#[test]
fn bad_releases_are_refused_and_leave_nothing_behind() {
    let s = setup("calico-node.exe");
    let initial = s.snapshot();
    let dir = s.dir.path();
    let ca = s.served().ca.display().to_string();

    // A path escape inside the zip.
    let evil = dir.join("calico-windows-v3.30.2-evil.zip");
    let mut entries = crate::support::release::entries("calico-node.exe");
    entries.push(("CalicoWindows/../../evil.txt".into(), b"x".to_vec()));
    write_zip(&evil, &entries);
    let (code, _, stderr) = s.run(&["install", "--release-zip", &evil.display().to_string()]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("escapes the target directory"), "{stderr}");
    assert_same(&s.snapshot(), &initial, "path escape");
    // The same zip downloaded: its extraction as it arrives writes nothing outside staging.
    let evil_url = s.served().server.serve(
        "/evil/calico-windows-v3.30.2.zip",
        fs_err::read(&evil).expect("zip"),
    );
    let (code, _, stderr) = s.run(&[
        "install",
        "--release-zip",
        &evil_url,
        "--insecure-skip-checksum",
        "--release-ca-cert",
        &ca,
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("escapes the target directory"), "{stderr}");
    assert!(
        !dir.join("evil.txt").exists() && !dir.parent().expect("parent").join("evil.txt").exists()
    );
    assert_same(&s.snapshot(), &initial, "path escape downloaded");

    // An unknown layout.
    let odd = dir.join("odd.zip");
    write_zip(&odd, &[("Calico/calico-node.exe".into(), b"x".to_vec())]);
    let (code, _, stderr) = s.run(&["install", "--release-zip", &odd.display().to_string()]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("not a Calico for Windows release"),
        "{stderr}"
    );
    assert_same(&s.snapshot(), &initial, "unknown layout");

    // A wrong checksum for the download: the partial file and the cache go.
    let (code, _, stderr) = s.run(&[
        "install",
        "--release-zip",
        &s.served().url,
        "--sha256",
        &"0".repeat(64),
        "--release-ca-cert",
        &ca,
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("has SHA-256"), "{stderr}");
    assert_same(&s.snapshot(), &initial, "wrong checksum");

    // Truncated data: a download cut short has the wrong checksum; a truncated file is no zip.
    let bytes = fs_err::read(s.zip()).expect("zip");
    let short_url = s.served().server.serve(
        "/short/calico-windows-v3.30.2.zip",
        bytes[..bytes.len() / 2].to_vec(),
    );
    let (code, _, stderr) = s.run(&[
        "install",
        "--release-zip",
        &short_url,
        "--sha256",
        &sha256(s.zip()),
        "--release-ca-cert",
        &ca,
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert_same(&s.snapshot(), &initial, "truncated download");
    let (code, _, stderr) = s.run(&[
        "install",
        "--release-zip",
        &short_url,
        "--insecure-skip-checksum",
        "--release-ca-cert",
        &ca,
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("not a readable zip"), "{stderr}");
    assert_same(&s.snapshot(), &initial, "truncated zip without a checksum");

    // A URL needs a checksum; plain HTTP needs --allow-http (refused before any connection).
    let (code, _, stderr) = s.run(&[
        "install",
        "--release-zip",
        &s.served().url,
        "--release-ca-cert",
        &ca,
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--sha256"), "{stderr}");
    let http = s.served().url.replace("https://", "http://");
    let (code, _, stderr) = s.run(&[
        "install",
        "--release-zip",
        &http,
        "--sha256",
        &sha256(s.zip()),
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--allow-http"), "{stderr}");
    // A version other than the one asked for.
    let (code, _, stderr) = s.run(&[
        "install",
        "--release-zip",
        &s.zip().display().to_string(),
        "--calico-version",
        "3.29.0",
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("not 3.29.0"), "{stderr}");
    assert_same(&s.snapshot(), &initial, "every refusal");
}

#[test]
fn a_broken_download_is_resumed_by_the_next_install() {
    let s = setup("calico-node.exe");
    s.served()
        .server
        .cut
        .store(1, std::sync::atomic::Ordering::SeqCst);
    let (code, _, stderr) = s.install(&["--no-start"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("broke off"), "{stderr}");
    let part = s.c_drive("calicowindows/cache/calico-windows-v3.30.2.zip.part");
    assert!(part.is_file(), "the partial download is kept");
    let (code, _, stderr) = s.install(&["--no-start", "-v"]);
    assert_eq!(code, 0, "{stderr}");
    // Extracted while it arrived, the resumed part read from its start.
    assert!(!stderr.contains("extracted again"), "{stderr}");
    // No terminal: progress is plain lines on stderr, and says where it resumes.
    assert!(
        stderr.contains("downloading https://127.0.0.1:"),
        "{stderr}"
    );
    assert!(stderr.contains(", resuming at "), "{stderr}");
    let ranges: Vec<_> = s
        .served()
        .server
        .requests
        .lock()
        .expect("lock")
        .iter()
        .filter_map(|(_, r)| r.clone())
        .collect();
    assert_eq!(ranges.len(), 1, "one resumed request: {ranges:?}");
    assert!(!part.exists());
    let state = s.state();
    assert_eq!(
        state["services"]["caliconode"]["state"], "stopped",
        "--no-start"
    );

    // A second install reuses the cached zip without downloading.
    let before = s.served().server.requests.lock().expect("lock").len();
    let (code, doc, stderr) = s.install(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        s.served().server.requests.lock().expect("lock").len(),
        before,
        "cache used"
    );
    let started: Vec<&str> = crate::support::items(&doc, "actions")
        .filter(|a| a["action"] == "start-service")
        .filter_map(|a| a["name"].as_str())
        .collect();
    assert_eq!(started, ["CalicoNode", "CalicoFelix"]);
}

/// A zip written to a pipe gives each entry's sizes after its data: it cannot be extracted as
/// it arrives, so the finished download is extracted from the start, with the same result.
#[test]
fn a_downloaded_zip_with_sizes_after_the_data_is_extracted_again_when_complete() {
    let s = setup("calico-node.exe");
    let mut z = zip::ZipWriter::new_stream(Vec::new());
    for (name, data) in crate::support::release::entries_of("calico-node.exe", Some("3.30.2")) {
        z.start_file(name, zip::write::SimpleFileOptions::default())
            .expect("start");
        std::io::Write::write_all(&mut z, &data).expect("write");
    }
    let piped = z.finish().expect("finish").into_inner();
    let url = s
        .served()
        .server
        .serve("/piped/calico-windows-v3.30.2.zip", piped.clone());
    let piped_file = s.dir.path().join("piped.zip");
    fs_err::write(&piped_file, &piped).expect("write");
    let sha = sha256(&piped_file);
    let ca = s.served().ca.display().to_string();
    let (code, _, stderr) = s.run(&[
        "install",
        "--release-zip",
        &url,
        "--sha256",
        &sha,
        "--release-ca-cert",
        &ca,
        "-v",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("extracted again from the finished zip"),
        "{stderr}"
    );
    assert_eq!(s.state()["services"]["caliconode"]["state"], "running");
}

#[test]
fn a_legacy_install_needs_migrate_legacy_and_uninstall_explains_it() {
    let s = setup_on(
        Node::healthy().profile("ws2022-legacy-calico"),
        "calico-node.exe",
    );
    let (code, _, stderr) = s.uninstall(&[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--migrate-legacy"), "{stderr}");
    let (code, _, stderr) = s.install_local(&[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--migrate-legacy"), "{stderr}");
    let (code, doc, stderr) = s.install_local(&["--migrate-legacy", "--skip", "firewall-vxlan"]);
    assert_eq!(code, 0, "{stderr}");
    // After the directories are protected, before anything else.
    let first: Vec<&str> = crate::support::items(&doc, "actions")
        .filter_map(|a| a["action"].as_str())
        .filter(|a| *a != "protect-dir")
        .take(3)
        .collect();
    assert!(
        first.contains(&"delete-service"),
        "legacy services go first: {first:?}"
    );
    let state = s.state();
    assert!(
        state["services"]["caliconode"]["command_line"]
            .as_str()
            .expect("cmd")
            .contains("calicoctl-win.exe"),
        "CalicoNode is ours now"
    );
}

#[test]
fn taint_windows_taints_the_node_once() {
    let s = setup("calico-node.exe");
    let (code, _, stderr) = s.install_local(&["--taint-windows"]);
    assert_eq!(code, 0, "{stderr}");
    let node = s.api().get("/api/v1/nodes/win-1").expect("node");
    assert_eq!(
        node["spec"]["taints"],
        json!([{"key": "os", "value": "windows", "effect": "NoSchedule"}])
    );
    let (code, _, stderr) = s.install_local(&["--taint-windows"]);
    assert_eq!(code, 0, "{stderr}");
    let node = s.api().get("/api/v1/nodes/win-1").expect("node");
    assert_eq!(node["spec"]["taints"].as_array().expect("taints").len(), 1);
}

#[test]
fn downloads_go_through_the_proxy_unless_no_proxy_names_the_server() {
    let s = setup("calico-node.exe");
    let proxy = crate::support::proxy::Proxy::start();
    let release_host = release_host(&s);
    let sha = sha256(s.zip());
    let run = |no_proxy: Option<&str>| {
        // fetch release reads no configuration (so it takes no --set node.name).
        let mut c = crate::support::cmd();
        c.args([
            "fetch",
            "release",
            "--release-zip",
            &s.served().url,
            "--sha256",
            &sha,
        ])
        .arg("--release-ca-cert")
        .arg(&s.served().ca)
        .arg("--output-dir")
        .arg(s.dir.path().join(format!("out-{}", no_proxy.is_some())))
        .env("HTTPS_PROXY", &proxy.url);
        if let Some(np) = no_proxy {
            c.env("NO_PROXY", np);
        }
        let out = c.output().expect("run");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(None);
    assert_eq!(
        proxy.targets(),
        [release_host],
        "the download went through the proxy"
    );
    run(Some("example.com,127.0.0.1"));
    assert_eq!(
        proxy.targets().len(),
        1,
        "NO_PROXY names the server: connected directly"
    );
}

/// The snapshot with the quotes taken out of service command lines: a service put back by a
/// rollback is registered with its program quoted (`"C:\CalicoWindows\nssm.exe"`, as every
/// registration through the SCM API is), which the SCM reads as the same program and arguments.
fn unquoted(mut snap: Value) -> Value {
    if let Some(svcs) = snap["state"]["services"].as_object_mut() {
        for svc in svcs.values_mut() {
            if let Some(line) = svc["command_line"].as_str() {
                svc["command_line"] = json!(line.replace('"', ""));
            }
        }
    }
    snap
}

#[test]
fn a_failed_migration_puts_the_legacy_services_back() {
    let s = setup_on(
        Node::healthy().profile("ws2022-legacy-calico"),
        "calico-node.exe",
    );
    let initial = s.snapshot();
    let zip = s.zip().display().to_string();
    // The release is staged under the cache first; then the plan's first mutating calls stop
    // and delete the legacy services. A failure at any of them, or at the steps right after,
    // undoes what was done.
    let install = |fault: &str| {
        s.run(&[
            "install",
            "--release-zip",
            &zip,
            "--migrate-legacy",
            "--skip",
            "firewall-vxlan",
            "--sim-fault",
            fault,
        ])
    };
    let (code, _, stderr) = install("fail:~stop service");
    assert_eq!(code, 1, "{stderr}");
    let first: u64 = stderr
        .split("injected at mutating call ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no injected call in {stderr}"));
    for n in first..first + 16 {
        let fault = format!("fail:{n}");
        let (code, _, stderr) = install(&fault);
        assert_eq!(code, 1, "{fault}: {stderr}");
        assert_same(
            &unquoted(s.snapshot()),
            &unquoted(initial.clone()),
            &format!("{fault}: the legacy install is back"),
        );
    }
}

#[test]
fn a_registration_quoted_differently_is_the_same_command_no_drift_no_restart() {
    // The SCM keeps the ImagePath as it was written; an earlier calicoctl-win (and hand-made
    // registrations) quote the program even without a space. Windows reads both alike.
    let s = setup("calico-node.exe");
    s.api()
        .set_node_ready("win-1", "True", "kubelet is posting ready status");
    let (code, _, stderr) = s.install(&[]);
    assert_eq!(code, 0, "{stderr}");
    let state_path = s.sim().join("state.json");
    let mut state = s.state();
    for svc in ["caliconode", "calicofelix"] {
        let line = state["services"][svc]["command_line"]
            .as_str()
            .expect("command line")
            .to_owned();
        let (program, rest) = line.split_once(' ').expect("arguments");
        state["services"][svc]["command_line"] = json!(format!("\"{program}\" {rest}"));
    }
    fs_err::write(&state_path, state.to_string()).expect("write state");
    let (code, doc, stderr) = s.run(&["status"]);
    assert_eq!(code, 0, "status: {stderr} {doc}");
    assert_eq!(doc["services"][0]["drift"], json!([]), "{doc}");
    let (code, doc, stderr) = s.install(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(doc["changed"], false, "{doc}");
    assert_eq!(doc["actions"], json!([]), "{doc}");
}

#[test]
fn a_service_left_start_pending_is_started_by_the_next_install() {
    let s = setup("calico-node.exe");
    let (code, _, stderr) = s.install(&[]);
    assert_eq!(code, 0, "{stderr}");
    // A start cut off halfway (the machine lost power, the SCM gave up): start-pending.
    let state_path = s.sim().join("state.json");
    let mut state = s.state();
    state["services"]["calicofelix"]["state"] = json!("start-pending");
    fs_err::write(&state_path, state.to_string()).expect("write state");
    let (code, doc, stderr) = s.install(&[]);
    assert_eq!(code, 0, "{stderr}");
    let actions = doc["actions"].to_string();
    assert!(actions.contains("start service CalicoFelix"), "{actions}");
    assert_eq!(s.state()["services"]["calicofelix"]["state"], "running");
}

/// One command at a time: an install hangs in its download holding the host lock; an
/// uninstall started meanwhile exits 5 at once naming the install, its pid and start time,
/// and changes nothing. The install is then killed from outside (SIGKILL): its lock goes with
/// it, the next install takes over and finishes, and `uninstall --purge` still returns the
/// initial host (the killed run's root and cache are remembered).
#[test]
fn a_second_command_is_refused_while_one_runs_and_a_killed_holder_frees_the_host() {
    let s = setup("calico-node.exe");
    let initial = s.snapshot();
    s.served()
        .server
        .stall
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let sha = sha256(s.zip());
    let ca = s.served().ca.display().to_string();
    let mut install = std::process::Command::new(assert_cmd::cargo::cargo_bin("calicoctl-win"));
    install
        .env_clear()
        .current_dir(crate::support::root())
        .args([
            "--set",
            "node.name=win-1",
            "install",
            "--release-zip",
            &s.served().url,
        ])
        .args(["--sha256", &sha, "--release-ca-cert", &ca, "-o", "json"])
        .arg("--sim-host")
        .arg(s.sim())
        .arg("--kubeconfig")
        .arg(&s.admin)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = install.spawn().expect("start install");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let lock = s.sim().join("calicoctl-win.lock");
    while calicoctl_win::host::lock::holder(&lock).is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "the install never took the lock"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // Let it reach the download.
    while !s
        .served()
        .server
        .requests
        .lock()
        .expect("requests")
        .iter()
        .any(|(p, _)| p.ends_with(".zip"))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the install never downloaded"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // ... and the half it was sent reach the disk, so that the install changes nothing more.
    let part = s.c_drive("calicowindows/cache/calico-windows-v3.30.2.zip.part");
    let mut size = 0;
    loop {
        std::thread::sleep(std::time::Duration::from_millis(300));
        let now = fs_err::metadata(&part).map_or(0, |m| m.len());
        if now > 0 && now == size {
            break;
        }
        size = now;
        assert!(
            std::time::Instant::now() < deadline,
            "the download never settled"
        );
    }
    let busy = s.snapshot();
    let (code, doc, stderr) = s.uninstall(&["--purge"]);
    assert_eq!(code, 5, "{doc} {stderr}");
    assert_eq!(doc["error"]["kind"], "locked", "{doc}");
    let message = doc["error"].to_string();
    assert!(
        message.contains(&format!("install (pid {}, started ", child.id())),
        "{message}"
    );
    assert_same(&s.snapshot(), &busy, "a refused uninstall");

    child.kill().expect("SIGKILL the install");
    child.wait().expect("reap");
    s.served()
        .server
        .stall
        .store(false, std::sync::atomic::Ordering::SeqCst);
    let (code, doc, stderr) = s.install(&[]);
    assert_eq!(code, 0, "{doc} {stderr}");
    let (code, doc, stderr) = s.uninstall(&["--purge", "--remove-logs"]);
    assert_eq!(code, 0, "{doc} {stderr}");
    assert_same(
        &s.snapshot(),
        &initial,
        "after a killed install, an install and a purge",
    );
}

/// When Windows refuses CalicoNode the metadata route (ERROR_ACCESS_DENIED), install's wait ends at once with
/// the service's error and the OS's code (exit 1, not a timeout after --wait-timeout), and the
/// rollback says, measured, what still differs: the networks CalicoNode made, the address on
/// the vSwitch and the route the policy also refused to the rollback, with the commands that
/// put them back.
#[test]
fn a_refused_metadata_route_ends_the_wait_with_the_os_error_and_the_rollback_says_what_remains() {
    let s = setup("calico-node.exe");
    let has_metadata = |state: &Value| {
        crate::support::items(state, "routes").any(|r| r["destination"] == "169.254.169.254")
    };
    assert!(
        has_metadata(&s.state()),
        "the profile has the metadata route"
    );
    // A wait that ran out would exit 4 after five minutes; the service's error ends it.
    let (code, doc, stderr) = s.install_local(&[
        "--wait-timeout",
        "5m",
        "--sim-fault",
        "deny:~add route 169.254.169.254",
    ]);
    assert_eq!(code, 1, "{doc} {stderr}");
    assert_eq!(doc["error"]["kind"], "service-failed", "{doc}");
    let causes = doc["error"]["causes"].to_string();
    assert!(
        causes.contains("CalicoNode could not restore the route 169.254.169.254/32 via 10.0.0.1 that the vSwitch dropped: add route 169.254.169.254/32 via 10.0.0.1 on interface")
            && causes.contains("Access is denied. (os error 5)"),
        "{doc}"
    );
    assert!(
        stderr.contains("Access is denied. (os error 5)"),
        "{stderr}"
    );
    let message = doc["error"]["message"].as_str().expect("message");
    assert!(!message.contains("as it was"), "{message}");
    for left in [
        "HNS network Calico (Overlay) was made while the command ran (fix: Get-HnsNetwork | Where-Object Name -eq 'Calico' | Remove-HnsNetwork)",
        "HNS network External (Overlay) was made",
        "is on vEthernet (Ethernet) (it was on Ethernet)",
    ] {
        assert!(message.contains(left), "{left}: {message}");
    }
    let state = s.state();
    assert!(
        !state["networks"].as_array().expect("networks").is_empty(),
        "the network CalicoNode made stays"
    );
    // The policy refuses the rollback's restore too: the route stays gone, and the message
    // says so with the command that adds it on the interface its address comes back to.
    assert!(!has_metadata(&state), "the denial held for the rollback");
    assert!(
        message.contains("the route 169.254.169.254/32 via 10.0.0.1 is gone (fix: New-NetRoute -DestinationPrefix 169.254.169.254/32 -InterfaceAlias 'Ethernet' -NextHop 10.0.0.1"),
        "{message}"
    );
    assert!(
        crate::support::items(&state, "events").any(|e| e["level"] == "warning"
            && e["message"]
                .as_str()
                .is_some_and(|m| m.contains("Access is denied. (os error 5)"))),
        "the event log has the refusal: {}",
        state["events"]
    );
}

/// The cloud metadata route the node had before must be back when install finishes: when
/// CalicoNode cannot restore it, the install fails at once with CalicoNode's error, and the
/// rollback puts it back on the vSwitch that stays and says that the networks CalicoNode made
/// remain. After that failed install a good one, then a purge, return the initial host:
/// the recorded routes go back on the interfaces holding their addresses then, not on the
/// vEthernet that the purge removed. And status reports a metadata route that went missing.
#[test]
fn the_metadata_route_is_waited_for_restored_after_a_failure_and_put_back_on_the_nic_by_a_purge() {
    let s = setup("calico-node.exe");
    let initial = s.snapshot();
    let has_metadata = |state: &Value| {
        crate::support::items(state, "routes").any(|r| r["destination"] == "169.254.169.254")
    };
    assert!(
        has_metadata(&s.state()),
        "the profile has the metadata route"
    );
    let (code, doc, stderr) = s.install_local(&[
        "--wait-timeout",
        "5m",
        "--sim-fault",
        "fail:~add route 169.254.169.254",
    ]);
    assert_eq!(code, 1, "{doc} {stderr}");
    assert!(
        error_text(&doc).contains("CalicoNode could not restore the route 169.254.169.254/32"),
        "{doc}"
    );
    let message = doc["error"]["message"].as_str().expect("message");
    assert!(
        !message.contains("as it was")
            && message.contains("HNS network External (Overlay) was made"),
        "{message}"
    );
    // The rollback removed the logs directory it made, but not the logs: they say why, and
    // the message says where they went.
    let kept = message
        .split("were moved to ")
        .nth(1)
        .expect("where the logs went")
        .split([';', ' '])
        .next()
        .expect("dir");
    let rel = kept
        .trim_start_matches(r"C:\")
        .replace('\\', "/")
        .to_ascii_lowercase();
    let log = fs_err::read_to_string(s.c_drive(&format!("{rel}/calico-node.log")))
        .expect("the kept calico-node.log");
    assert!(log.contains("169.254.169.254"), "{log}");
    let state = s.state();
    assert!(
        !state["networks"].as_array().expect("networks").is_empty(),
        "the network CalicoNode made stays"
    );
    assert!(has_metadata(&state), "the rollback restored the route");

    let (code, doc, stderr) = s.install_local(&[]);
    assert_eq!(code, 0, "{doc} {stderr}");
    let (code, doc, stderr) = s.run(&["status", "--offline"]);
    assert_eq!(code, 0, "{doc} {stderr}");

    // The route goes missing: status says so.
    let path = s.sim().join("state.json");
    let mut state = s.state();
    state["routes"]
        .as_array_mut()
        .expect("routes")
        .retain(|r| r["destination"] != "169.254.169.254");
    fs_err::write(&path, serde_json::to_vec_pretty(&state).expect("json")).expect("write");
    let (code, _, stderr) = s.run(&["status", "--offline"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("the cloud metadata route 169.254.169.254/32 is missing"),
        "{stderr}"
    );
    let (code, doc, stderr) = s.install_local(&[]);
    assert_eq!(
        code, 0,
        "a rerun waits until CalicoNode puts it back: {doc} {stderr}"
    );
    assert!(has_metadata(&s.state()));

    let (code, doc, stderr) = s.uninstall(&["--purge", "--remove-logs"]);
    assert_eq!(code, 0, "{doc} {stderr}");
    assert_eq!(doc["warnings"], json!([]), "{doc}");
    assert_same(
        &s.snapshot(),
        &initial,
        "a failed install, an install, a purge",
    );
}

/// The JSON error's message and causes, one per line.
fn error_text(doc: &Value) -> String {
    std::iter::once(&doc["error"]["message"])
        .chain(doc["error"]["causes"].as_array().into_iter().flatten())
        .filter_map(Value::as_str)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Windows refusing a call (ERROR_ACCESS_DENIED, as a locked-down node's policy answers) in
/// each host area reaches the user with the operation, its object and the OS's code, in the
/// JSON error and on stderr: files, registry, services and firewall during an install, HNS
/// during a purge (routes: the metadata route test above).
#[test]
fn a_refusal_in_each_host_area_reaches_the_user_with_the_os_code() {
    let s = setup("calico-node.exe");
    for (area, deny) in [
        (
            "files",
            r"write C:\CalicoWindows\calicoctl-win.journal.json",
        ),
        (
            "registry",
            r"set registry value HKLM\SYSTEM\CurrentControlSet\Services\EventLog",
        ),
        ("services", "create service CalicoNode"),
        ("services", "start service CalicoNode"),
        ("firewall", "add firewall rule"),
    ] {
        let (code, doc, stderr) = s.install_local(&["--sim-fault", &format!("deny:~{deny}")]);
        assert_ne!(code, 0, "{area}: {doc}");
        let all = error_text(&doc);
        assert!(
            all.contains(deny) && all.contains("Access is denied. (os error 5)"),
            "{area}: {doc}"
        );
        // A refused start is undone whole, in the words tests/windows/wine_lifecycle.rs's run_install
        // reads before it installs again.
        assert!(
            !deny.starts_with("start") || doc.to_string().contains("the node is as it was"),
            "{area}: {doc}"
        );
        assert!(
            stderr.contains("Access is denied. (os error 5)"),
            "{area}: {stderr}"
        );
    }
    let (code, doc, stderr) = s.install_local(&[]);
    assert_eq!(code, 0, "{doc} {stderr}");
    let (code, doc, stderr) = s.uninstall(&["--purge", "--sim-fault", "deny:~delete HNS network"]);
    assert_ne!(code, 0, "hns: {doc}");
    let all = error_text(&doc);
    assert!(
        all.contains("delete HNS network") && all.contains("Access is denied. (os error 5)"),
        "hns: {doc} {stderr}"
    );
}

/// A stalled download is given up by the idle limit, apart from the total one, and each says
/// which limit fired with its flag; the partial file stays for the next run, which resumes.
#[test]
fn a_stalled_download_names_the_limit_that_fired_and_is_resumed() {
    let s = setup("calico-node.exe");
    s.served()
        .server
        .stall
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let (code, doc, stderr) = s.install(&["--download-idle-timeout", "1s"]);
    assert_eq!(code, 4, "{doc} {stderr}");
    assert!(
        stderr.contains("received nothing for 1s (--download-idle-timeout 1s)"),
        "{stderr}"
    );
    assert!(stderr.contains("resumed by the next run"), "{stderr}");
    let (code, doc, stderr) =
        s.install(&["--download-timeout", "2s", "--download-idle-timeout", "1m"]);
    assert_eq!(code, 4, "{doc} {stderr}");
    assert!(
        stderr.contains("did not finish within --download-timeout 2s"),
        "{stderr}"
    );
    s.served()
        .server
        .stall
        .store(false, std::sync::atomic::Ordering::SeqCst);
    let (code, doc, stderr) = s.install(&["--no-start"]);
    assert_eq!(code, 0, "{doc} {stderr}");
    assert!(stderr.contains(", resuming at "), "{stderr}");
}

/// Without --sha256, a SHA256SUMS beside the zip names its checksum (sha256sum's format); a
/// list that names another checksum makes the download fail its check, and nothing is left.
#[test]
fn a_sha256sums_beside_the_release_gives_the_checksum() {
    let s = setup("calico-node.exe");
    let initial = s.snapshot();
    let ca = s.served().ca.display().to_string();
    let zip_name = "calico-windows-v3.30.2.zip";
    let bytes = fs_err::read(s.zip()).expect("zip");

    // A wrong list: the download is refused by its checksum.
    let wrong = s
        .served()
        .server
        .serve(&format!("/wrong/{zip_name}"), bytes.clone());
    s.served().server.serve(
        "/wrong/SHA256SUMS",
        format!("{}  {zip_name}\n", "0".repeat(64)).into_bytes(),
    );
    let (code, doc, stderr) =
        s.run(&["install", "--release-zip", &wrong, "--release-ca-cert", &ca]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(doc["error"]["kind"], "checksum-mismatch", "{doc}");
    assert_same(&s.snapshot(), &initial, "refused by SHA256SUMS");

    // The right one, among others, in sha256sum's binary-mode form.
    let good = s.served().server.serve(&format!("/good/{zip_name}"), bytes);
    s.served().server.serve(
        "/good/SHA256SUMS",
        format!(
            "{}  install-calico-windows.ps1\n{} *{zip_name}\n",
            "1".repeat(64),
            sha256(s.zip())
        )
        .into_bytes(),
    );
    let (code, _, stderr) = s.run(&["install", "--release-zip", &good, "--release-ca-cert", &ca]);
    assert_eq!(code, 0, "{stderr}");
}

/// A failed upgrade rolls back to the running node it was: what the running services wrote
/// (calico-node's `nodename`, `CALICO_NODENAME_FILE`) stays. The rollback removed such files
/// whenever an install failed, as if the run had made the install root.
#[test]
fn a_failed_upgrade_keeps_what_the_running_services_wrote() {
    let s = setup("calico-node.exe");
    let (code, _, stderr) = s.install_local(&[]);
    assert_eq!(code, 0, "{stderr}");
    // What calico-node writes at its first start.
    let refreshed = s.c_drive("calicowindows/nodename");
    fs_err::write(&refreshed, "win-1").expect("nodename");

    let next_dir = s.dir.path().join("next");
    fs_err::create_dir_all(&next_dir).expect("dir");
    let next = crate::support::release::release_zip(&next_dir, "3.30.3", "calico-node.exe");
    let (code, _, stderr) = s.run(&[
        "install",
        "--release-zip",
        &next.display().to_string(),
        "--calico-version",
        "3.30.3",
        "--sim-fault",
        r"fail:~write C:\CalicoWindows\calicoctl-win-install.json",
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("undone"), "{stderr}");
    assert!(
        refreshed.is_file(),
        "the rollback kept calico-node's nodename"
    );
    assert_eq!(s.state()["services"]["caliconode"]["state"], "running");
}

/// `diags` on an installed node: one zip with what a support case needs, and no token or key
/// in any file of it, though the logs, the kubeconfigs and the record hold them.
#[test]
fn diags_collect_the_node_into_one_zip_with_every_secret_redacted() {
    let s = setup("calico-node.exe");
    // Credentials an administrator gave the services' environment: config-show.json shows it.
    let env = [
        "--set",
        "extra_env.node.HTTPS_PROXY=http://calico:hunter2pass@proxy.corp:3128",
        "--set",
        "extra_env.felix.AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENG",
        "--set",
        "extra_env.felix.FOO_API_KEY=apikeyvalue1",
    ];
    let (code, _, stderr) = s.install_local(&env);
    assert_eq!(code, 0, "{stderr}");
    // The secrets on the node: calico-node's token, the admin's, and the CNI kubeconfig's that
    // the token refresher of an earlier calicoctl-win version left.
    let leftover = s.c_drive("calicowindows/token-refresher/host/etc/cni/net.d/calico-kubeconfig");
    fs_err::create_dir_all(leftover.parent().expect("dir")).expect("dir");
    fs_err::write(
        &leftover,
        "users:\n- name: calico\n  user:\n    token: left-by-an-earlier-refresher\n",
    )
    .expect("leftover");
    let secrets = vec![
        fs_err::read_to_string(s.c_drive("calicowindows/calico-kube-config.token"))
            .expect("token file"),
        s.api().token.clone(),
        "left-by-an-earlier-refresher".to_owned(),
    ];
    let mut secrets = secrets;
    // A service that logged its token, as a careless component might, and an etcd key.
    let log = s.c_drive("calicowindows/logs/calico-node.log");
    let mut text = fs_err::read_to_string(&log).unwrap_or_default();
    text.push_str(&format!(
        "using token {}\nAuthorization: Bearer {}\nproxy http://calico:hunter2pass@proxy.corp:3128 GITHUB_TOKEN=ghp_abcdef123456 --password flagpass22\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAsecretkeymaterial\n-----END RSA PRIVATE KEY-----\n",
        secrets[0], secrets[1]
    ));
    fs_err::write(&log, text).expect("log");
    secrets.push("MIIEowIBAAKCAQEAsecretkeymaterial".into());
    secrets.extend(
        [
            "hunter2pass",
            "wJalrXUtnFEMIK7MDENG",
            "apikeyvalue1",
            "ghp_abcdef123456",
            "flagpass22",
        ]
        .map(String::from),
    );

    s.api()
        .set_node_ready("win-1", "True", "kubelet is posting ready status");
    let mut node = s.api().get("/api/v1/nodes/win-1").expect("node");
    node["status"]["nodeInfo"] = json!({"kubeletVersion": "v1.34.2", "kubeProxyVersion": "v1.34.2",
        "osImage": "Windows Server 2022 Datacenter", "containerRuntimeVersion": "containerd://1.7.27"});
    s.api().put("/api/v1/nodes/win-1", node);
    let before = s.snapshot();
    let out = s.dir.path().join("diags.zip");
    let out_arg = out.display().to_string();
    let (code, doc, stderr) = s.run(&[&["diags", "--out-file", &out_arg][..], &env].concat());
    assert_eq!(code, 0, "{stderr}");
    let files: Vec<&str> = crate::support::items(&doc, "files")
        .filter_map(Value::as_str)
        .collect();
    for want in [
        "config-show.json",
        "status.json",
        "preflight.json",
        "host/services.json",
        "host/hns.json",
        "host/hns-policy-lists.json",
        "host/network.json",
        "host/firewall.json",
        "install/calicoctl-win-install.json",
        "logs/calico-node.log",
        "versions.json",
        "diags.json",
    ] {
        assert!(files.contains(&want), "{want} in {files:?}");
    }
    let mut zip = zip::ZipArchive::new(std::fs::File::open(&out).expect("zip")).expect("a zip");
    let mut members = BTreeMap::new();
    for i in 0..zip.len() {
        let mut f = zip.by_index(i).expect("member");
        let mut text = String::new();
        std::io::Read::read_to_string(&mut f, &mut text).expect("text");
        members.insert(f.name().expect("name").to_string(), text);
    }
    assert_eq!(members.len(), files.len());
    for (name, text) in &members {
        for secret in &secrets {
            assert!(
                !text.contains(secret.as_str()),
                "a secret survived in {name}"
            );
        }
    }
    let member = |name: &str| -> Value { serde_json::from_str(&members[name]).expect(name) };
    assert_eq!(
        member("status.json")["exit_code"],
        0,
        "{}",
        members["status.json"]
    );
    assert_eq!(member("status.json")["document"]["healthy"], true);
    assert_eq!(
        member("host/services.json")["CalicoNode"]["state"],
        "running",
        "{}",
        members["host/services.json"]
    );
    let hns = member("host/hns.json");
    assert!(
        hns.as_array()
            .expect("networks")
            .iter()
            .any(|n| n["network"]["name"] == "Calico"),
        "{hns}"
    );
    // Calico_ep as the endpoint lists carry it: another host's endpoint on VXLAN
    // (createAndAttachVxlanHostEP), with its HNS state (none claimed for it).
    let text = hns.to_string();
    assert!(
        text.contains(r#""name":"Calico_ep""#) && text.contains(r#""remote":true,"state":null"#),
        "{hns}"
    );
    assert_eq!(member("host/hns-policy-lists.json"), serde_json::json!([]));
    let versions = member("versions.json");
    assert_eq!(versions["calico"], "3.30.2", "{versions}");
    assert_eq!(
        versions["node_info"]["kubeletVersion"], "v1.34.2",
        "{versions}"
    );
    assert!(members["logs/calico-node.log"].contains("using token <redacted>"));
    assert!(
        members["config-show.json"].contains("http://calico:<redacted>@proxy.corp:3128"),
        "{}",
        members["config-show.json"]
    );
    // Nothing on the host changed, and nothing is left beside the zip.
    assert_same(&before, &s.snapshot(), "diags changed the host");
    let leftovers: Vec<_> = fs_err::read_dir(s.dir.path())
        .expect("dir")
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// A mirror whose certificate is its CA's own (CA:TRUE) fails TLS even with that CA trusted;
/// the hint says so instead of the generic "check the URL, the proxy and the CA".
#[test]
fn a_mirror_with_a_ca_as_its_certificate_gets_a_hint_that_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let zip = release_zip(dir.path(), "3.30.2", "calico-node.exe");
    let bytes = fs_err::read(&zip).expect("zip");
    let check = |server: &ReleaseServer, ca_ok: bool| {
        let url = server.serve("/v3.30.2/calico-windows-v3.30.2.zip", bytes.clone());
        let ca = server.ca_file(dir.path());
        let out = dir.path().join("out");
        let run = crate::support::cmd()
            .args(["fetch", "release", "--release-zip", &url, "--sha256"])
            .arg(sha256(&zip))
            .arg("--release-ca-cert")
            .arg(&ca)
            .arg("--output-dir")
            .arg(&out)
            .args(["-o", "json"])
            .output()
            .expect("run");
        let doc = crate::support::json(&run.stdout);
        let code = run.status.code();
        if ca_ok {
            assert_eq!(code, Some(0), "{doc}");
        } else {
            assert_eq!(code, Some(1), "{doc}");
            assert_eq!(doc["error"]["kind"], "download-failed", "{doc}");
            let hint = doc["error"]["hint"].as_str().unwrap_or_default();
            assert!(hint.contains("CA certificate"), "{doc}");
            assert!(hint.contains("CA:FALSE"), "{doc}");
        }
    };
    check(&ReleaseServer::start_with_a_ca_as_its_certificate(), false);
    // A mirror set up right, for contrast: its certificate issued by the CA given.
    check(&ReleaseServer::start(), true);
}

/// Windows services and provisioning run without proxy variables; the machine's WinHTTP proxy
/// (`netsh winhttp set proxy`) is what such a node has. Without a variable, the release
/// download and the API server connection go through it, and its bypass list is kept.
#[test]
fn the_winhttp_proxy_is_used_when_no_proxy_variable_is_set() {
    let s = setup("calico-node.exe");
    let proxy = crate::support::proxy::Proxy::start();
    let api_host = s.api().url.trim_start_matches("https://").to_owned();
    let release_host = release_host(&s);
    let set_winhttp = |bypass: Option<&str>| {
        let path = s.sim().join("state.json");
        let mut state: Value =
            serde_json::from_str(&fs_err::read_to_string(&path).expect("state")).expect("json");
        state["system"]["winhttp_proxy"] = json!({
            "proxy": proxy.url.trim_start_matches("http://"),
            "bypass": bypass,
        });
        fs_err::write(&path, serde_json::to_string(&state).expect("json")).expect("write");
    };
    set_winhttp(Some("<local>;*.corp.example"));
    let ca = s.served().ca.display().to_string();
    let (code, _, stderr) = s.run(&[
        "install",
        "--release-zip",
        &s.served().url,
        "--sha256",
        &sha256(s.zip()),
        "--release-ca-cert",
        &ca,
    ]);
    assert_eq!(code, 0, "{stderr}");
    let through = proxy.targets();
    assert!(through.contains(&release_host), "the download: {through:?}");
    assert!(through.contains(&api_host), "the API server: {through:?}");

    // A bypass list that names the servers: straight to them.
    set_winhttp(Some("127.0.0.*;*.corp.example"));
    let before = proxy.targets().len();
    let (code, doc, stderr) = s.run(&["config", "show"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(doc["cluster"]["read"], true, "{doc}");
    assert_eq!(
        proxy.targets().len(),
        before,
        "127.0.0.* bypasses the proxy"
    );

    // A proxy variable wins over WinHTTP: with HTTPS_PROXY naming a dead proxy, the API
    // server is unreachable (so WinHTTP's was not used).
    set_winhttp(None);
    let out = crate::support::on_node()
        .args(["config", "show", "-o", "json", "--sim-host"])
        .arg(s.sim())
        .arg("--kubeconfig")
        .arg(&s.admin)
        .env("HTTPS_PROXY", "http://127.0.0.1:9")
        .output()
        .expect("run");
    assert_eq!(
        proxy.targets().len(),
        before,
        "the variable was used, not WinHTTP"
    );
    let doc = crate::support::json(&out.stdout);
    assert_eq!(doc["cluster"]["read"], false, "{doc}");
}

/// Install registers the Application event log source the service bodies write under (its
/// message file, the event types); uninstall, even without --purge, removes it with the
/// services; a source that was there before install is left alone.
#[test]
fn the_event_log_source_is_registered_by_install_and_removed_by_uninstall() {
    let s = setup("calico-node.exe");
    let key = r"hklm\system\currentcontrolset\services\eventlog\application\calicoctl-win";
    let (code, _, stderr) = s.install_local(&[]);
    assert_eq!(code, 0, "{stderr}");
    let reg = &s.state()["registry"][key];
    assert_eq!(
        reg["typessupported"],
        json!({"type": "REG_DWORD", "data": 7}),
        "{reg}"
    );
    // REG_EXPAND_SZ from %SystemRoot%: Windows is not always on C:.
    assert_eq!(reg["eventmessagefile"]["type"], "REG_EXPAND_SZ", "{reg}");
    assert!(
        reg["eventmessagefile"]["data"].as_str().is_some_and(
            |f| f.starts_with("%SystemRoot%\\") && f.ends_with(r"\EventLogMessages.dll")
        ),
        "{reg}"
    );
    let (code, _, stderr) = s.uninstall(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        s.state()["registry"].get(key).is_none(),
        "removed by uninstall"
    );

    // A source registered by someone else before install stays.
    let path = s.sim().join("state.json");
    let mut state = s.state();
    state["registry"][key] = json!({"typessupported": {"type": "REG_DWORD", "data": 7}});
    fs_err::write(&path, serde_json::to_string(&state).expect("json")).expect("write");
    let (code, _, stderr) = s.install_local(&[]);
    assert_eq!(code, 0, "{stderr}");
    let (code, _, stderr) = s.uninstall(&["--purge"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        s.state()["registry"].get(key).is_some(),
        "a source install did not create is not removed"
    );
}

/// The CNI config CalicoNode withheld at shutdown (until calico-node startup finishes in the
/// next boot) is not drift, and uninstall removes it as it removes the config itself.
#[test]
fn a_withheld_cni_config_is_not_drift_and_uninstall_removes_it() {
    let s = setup("calico-node.exe");
    let initial = s.snapshot();
    let (code, _, stderr) = s.install_local(&[]);
    assert_eq!(code, 0, "{stderr}");
    let conf = s.c_drive("program files/containerd/cni/conf/10-calico.conf");
    let withheld = conf.with_file_name("10-calico.conf.calicoctl-win-withheld");
    fs_err::rename(&conf, &withheld).expect("withhold as CalicoNode does at shutdown");
    let (_, doc, _) = s.run(&["status", "--offline"]);
    assert!(
        !doc["problems"].to_string().contains("10-calico.conf"),
        "{doc}"
    );
    let (code, _, stderr) = s.uninstall(&["--purge", "--remove-logs"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!withheld.exists(), "removed by uninstall");
    assert_same(
        &unquoted(s.snapshot()),
        &unquoted(initial),
        "after uninstall --purge",
    );
}

/// `status` compares each installed file's size and modification time with those it had after
/// the install and hashes only a file whose differ; `status --verify` hashes every file. A change
/// that keeps both (its time put back, as SetFileTime can) is found only by `--verify`; a change
/// that moves the time is found by both. Uninstall removes the kept sizes and times.
#[test]
fn status_hashes_only_files_whose_size_or_time_changed_and_verify_hashes_all() {
    let s = setup("calico-node.exe");
    let initial = s.snapshot();
    let (code, _, stderr) = s.install_local(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        s.c_drive("calicowindows/calicoctl-win-file-stat.json")
            .is_file()
    );
    for verify in [&[][..], &["--verify"][..]] {
        let (code, doc, stderr) = s.run(&[&["status", "--offline"][..], verify].concat());
        assert_eq!(code, 0, "{verify:?}: {doc} {stderr}");
    }

    let exe = s.c_drive("calicowindows/calico-node.exe");
    let installed = fs_err::metadata(&exe)
        .expect("exe")
        .modified()
        .expect("mtime");
    let mut bytes = fs_err::read(&exe).expect("exe");
    bytes[0] ^= 0xff;
    fs_err::write(&exe, &bytes).expect("write");
    let put_back = |t: std::time::SystemTime| {
        std::fs::File::options()
            .write(true)
            .open(&exe)
            .expect("open")
            .set_modified(t)
            .expect("set the time");
    };
    put_back(installed);
    let changed = |doc: &serde_json::Value| {
        doc["drift"].as_array().expect("drift").iter().any(|d| {
            d["path"] == r"C:\CalicoWindows\calico-node.exe"
                && d["state"] == "changed-since-install"
        })
    };
    let (code, doc, stderr) = s.run(&["status", "--offline"]);
    assert_eq!(
        code, 0,
        "the quick check sees the same size and time: {doc} {stderr}"
    );
    let (code, doc, stderr) = s.run(&["status", "--offline", "--verify"]);
    assert_eq!(code, 1, "{doc} {stderr}");
    assert!(changed(&doc), "{doc}");
    assert!(
        stderr.contains(r"calico-node.exe changed since install"),
        "{stderr}"
    );

    put_back(installed + std::time::Duration::from_secs(1));
    let (code, doc, stderr) = s.run(&["status", "--offline"]);
    assert_eq!(code, 1, "{doc} {stderr}");
    assert!(changed(&doc), "{doc}");

    let (code, _, stderr) = s.uninstall(&["--purge", "--remove-logs"]);
    assert_eq!(code, 0, "{stderr}");
    assert_same(
        &unquoted(s.snapshot()),
        &unquoted(initial),
        "after uninstall --purge",
    );
}

/// `install --detach` returns at once with where its log and result will be. The install goes
/// on in a process group of its own: killing the whole group of the session that started it
/// (what a WinRM or SSH session cut by the new vSwitch does) does not stop it. When it ends,
/// its exit code and JSON result are recorded, and the node is installed. A detached install
/// that fails records its error the same way.
#[cfg(unix)]
#[test]
fn a_detached_install_outlives_its_session_and_records_its_result() {
    use std::os::unix::process::CommandExt;
    let s = setup("calico-node.exe");
    let detached = |zip: &Path, fault: &[&str]| {
        let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("calicoctl-win"));
        c.env_clear()
            .current_dir(crate::support::root())
            .args(fault)
            .args(["--set", "node.name=win-1", "-o", "json", "--sim-host"])
            .arg(s.sim())
            .arg("--kubeconfig")
            .arg(&s.admin)
            .args(["install", "--detach", "--release-zip"])
            .arg(zip)
            // The session: a process group the test ends as a whole.
            .process_group(0);
        let child = c
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("runs");
        let session = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid"));
        let out = child.wait_with_output().expect("ends");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The session ends: SIGKILL to every process left in its group (none, if the install
        // went to a group of its own; it may still be running).
        let _ = nix::sys::signal::killpg(session, nix::sys::signal::Signal::SIGKILL);
        serde_json::from_slice::<Value>(&out.stdout).expect("json")
    };
    let wait_result = |doc: &Value| {
        let result = std::path::PathBuf::from(doc["result"].as_str().expect("result"));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while !result.is_file() {
            assert!(
                std::time::Instant::now() < deadline,
                "no result in {}",
                result.display()
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let text = fs_err::read_to_string(&result).expect("result");
        serde_json::from_str::<Value>(&text).expect("result json")
    };

    // Held as its plan creates the first service, the detached install is still there after
    // its session ended.
    let doc = detached(s.zip(), &["--sim-fault", "pause:~create service"]);
    assert_eq!(doc["detached"], true, "{doc}");
    let pid =
        nix::unistd::Pid::from_raw(i32::try_from(doc["pid"].as_u64().expect("pid")).expect("pid"));
    let marker = std::path::PathBuf::from(format!("{}.paused", s.sim().display()));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !marker.is_file() {
        assert!(
            std::time::Instant::now() < deadline,
            "the detached run never paused"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        nix::sys::signal::kill(pid, None).is_ok(),
        "the detached run died with its session"
    );
    // While it runs: status says who is changing the node, and a second --detach is refused
    // at once (exit 5) without touching the running one's files.
    let (code, status, _) = s.run(&["status", "--offline"]);
    assert_ne!(code, 0);
    assert!(
        status["problems"]
            .to_string()
            .contains("is changing this node now"),
        "{status}"
    );
    let result_file = std::path::PathBuf::from(doc["result"].as_str().expect("result"));
    let zip = s.zip().display().to_string();
    let (code, second, err) = s.run(&["install", "--detach", "--release-zip", &zip]);
    assert_eq!(code, 5, "{second} {err}");
    assert_eq!(second["error"]["kind"], "locked", "{second}");
    assert!(!result_file.exists(), "the second --detach wrote a result");

    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).expect("kill it");
    // SIGKILL is delivered at once and acted on later: wait until the process has ended (a
    // zombie, or reaped), with a deadline, before asking status about it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let state = fs_err::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = state
            .rsplit_once(')')
            .map_or("", |(_, rest)| rest.trim_start());
        if state.is_empty() || state.starts_with('Z') || state.starts_with('X') {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the killed run never ended"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    fs_err::remove_file(&marker).expect("marker");
    // Killed, it recorded nothing; once it is clearly gone (its start backdated past the
    // minute a run has to take the lock), status writes its result and says the install was
    // cut off, with what finishes it.
    let started_file = s.sim().join("install.detached.json");
    let mut started: Value =
        serde_json::from_slice(&fs_err::read(&started_file).expect("started")).expect("json");
    started["started"] = json!(started["started"].as_i64().expect("started") - 120);
    fs_err::write(&started_file, started.to_string()).expect("backdate");
    let (_, status, _) = s.run(&["status", "--offline"]);
    let problems = status["problems"].to_string();
    assert!(
        problems.contains("ended without recording its result"),
        "{status}"
    );
    assert!(problems.contains("install was cut off after"), "{status}");
    // The journal knows the steps begun, not the plan: no "N of M".
    assert!(problems.contains("finished step(s) (at: "), "{status}");
    let died: Value =
        serde_json::from_slice(&fs_err::read(&result_file).expect("a result")).expect("json");
    assert_eq!(died["exit_code"], 1, "{died}");
    assert!(!started_file.exists());

    // Run to its end (continuing what the killed one began), it records its result.
    let doc = detached(s.zip(), &[]);
    let result = wait_result(&doc);
    assert_eq!(result["exit_code"], 0, "{result}");
    assert_eq!(result["output"]["changed"], true, "{result}");
    let log = fs_err::read_to_string(doc["log"].as_str().expect("log")).expect("log");
    assert!(!log.is_empty());
    s.api()
        .set_node_ready("win-1", "True", "kubelet is posting ready status");
    let (code, status, err) = s.run(&["status"]);
    assert_eq!(code, 0, "{err} {status}");

    // A detached install that fails records its error.
    let bad = s.dir.path().join("broken.zip");
    fs_err::write(&bad, b"not a zip").expect("write");
    let (code, _, err) = s.run(&["uninstall", "--purge"]);
    assert_eq!(code, 0, "{err}");
    let doc = detached(&bad, &[]);
    let result = wait_result(&doc);
    assert_ne!(result["exit_code"], 0, "{result}");
    assert!(result["output"]["error"]["kind"].is_string(), "{result}");
}

/// The opt-in kube-proxy service (`kube_proxy.path`): install registers `kube-proxy` running
/// calicoctl-win's `service run kube-proxy` after CalicoNode and starts it, which on the
/// simulated host runs its start-up for real (Calico's network, kube-proxy's version,
/// `Calico_ep`); status and preflight pass it; uninstall removes it with the rest. A kube-proxy
/// service someone else registered is refused, not taken over.
#[test]
fn the_kube_proxy_service_runs_on_calicos_network_and_goes_with_uninstall() {
    let s = setup("calico-node.exe");
    s.api()
        .set_node_ready("win-1", "True", "kubelet is posting ready status");
    let exe = s.c_drive("k/kube-proxy.exe");
    fs_err::write(&exe, "kube-proxy v1.33.6 (simulated)\n").expect("kube-proxy.exe");
    let zip = s.zip().display().to_string();
    let with_kube_proxy = ["--set", r"kube_proxy.path=C:\k\kube-proxy.exe"];
    let (code, doc, err) =
        s.run(&[&["install", "--release-zip", &zip][..], &with_kube_proxy].concat());
    assert_eq!(code, 0, "{err} {doc}");
    let state = || -> Value {
        serde_json::from_str(&fs_err::read_to_string(s.sim().join("state.json")).expect("state"))
            .expect("json")
    };
    let svc = state()["services"]["kube-proxy"].clone();
    let line = svc["command_line"].as_str().expect("command line");
    assert!(
        line.contains(r"calicoctl-win.exe service run kube-proxy"),
        "{line}"
    );
    assert_eq!(svc["dependencies"], json!(["CalicoNode"]));
    assert_eq!(svc["state"], "running", "{svc}");
    let started = state()["started"].to_string();
    assert!(
        started.contains(r"C:\\k\\kube-proxy.exe --version"),
        "{started}"
    );
    let env = fs_err::read_to_string(s.c_drive("calicowindows/kube-proxy.env")).expect("env");
    assert!(env.contains("KUBE_NETWORK=Calico\n"), "{env}");
    assert!(env.contains(r"KUBE_PROXY_KUBECONFIG=C:\k\config"), "{env}");

    // kube-proxy runs as SYSTEM from C:\k, which join scripts make under C:\ where every user
    // may change it: status says so, and preflight --fix protects it.
    let (code, doc, err) = s.run(&[&["status"][..], &with_kube_proxy].concat());
    assert_eq!(code, 1, "{err} {doc}");
    assert_eq!(doc["dir_access"][0]["dir"], r"C:\k", "{doc}");
    let (_, doc, err) =
        s.run(&[&["preflight", "--offline", "--fix"][..], &with_kube_proxy].concat());
    assert!(err.contains(r"protected C:\k"), "{err} {doc}");
    let (code, doc, err) = s.run(&[&["status"][..], &with_kube_proxy].concat());
    assert_eq!(code, 0, "{err} {doc}");
    assert_eq!(doc["kube_proxy"]["verdict"], "pass", "{doc}");

    // Its service body wrote its log; `--remove-logs` removes it with the others (once the
    // list of service logs forgot kube-proxy's).
    let log = s.c_drive("calicowindows/logs/calico-kube-proxy.log");
    assert!(log.is_file(), "kube-proxy's service wrote no log");
    let (code, _, err) = s.run(&["uninstall", "--remove-logs"]);
    assert_eq!(code, 0, "{err}");
    assert!(state()["services"]["kube-proxy"].is_null());
    assert!(!s.c_drive("calicowindows/kube-proxy.env").exists());
    assert!(
        !log.exists(),
        "uninstall --remove-logs left kube-proxy's log"
    );
    assert!(exe.is_file(), "kube-proxy.exe is not calicoctl-win's");

    // Someone else's kube-proxy service: refused, nothing changed.
    let mut st = state();
    st["services"]["kube-proxy"] = json!({
        "name": "kube-proxy", "display_name": "kube-proxy service", "description": "",
        "command_line": r"C:\Program Files\nssm\nssm.exe", "start": "auto", "dependencies": [],
        "recovery": null, "state": "running", "pid": 4321,
    });
    // In the order the simulated host keeps them.
    let sorted: BTreeMap<String, Value> =
        serde_json::from_value(st["services"].clone()).expect("services");
    st["services"] = serde_json::to_value(sorted).expect("services");
    fs_err::write(s.sim().join("state.json"), st.to_string()).expect("state");
    let before = snapshot(&s.sim());
    // preflight says so first (exit 3); past it, install refuses to take the service over.
    let (code, doc, err) =
        s.run(&[&["install", "--release-zip", &zip][..], &with_kube_proxy].concat());
    assert_eq!(code, 3, "{err}");
    assert!(
        doc["checks"].to_string().contains("it did not register"),
        "{doc}"
    );
    let skip = ["--skip", "kube-proxy"];
    let (code, doc, err) = s.run(
        &[
            &["install", "--release-zip", &zip][..],
            &with_kube_proxy,
            &skip,
        ]
        .concat(),
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("did not register"), "{err} {doc}");
    assert_same(&snapshot(&s.sim()), &before, "refused");
}

/// What runs as SYSTEM comes from directories only SYSTEM and Administrators can change. On
/// the simulated host, as on Windows Server, a folder made under `C:\` inherits the drive
/// root's right of Users to add files and folders to it, and a folder a local user made is
/// theirs: preflight fails `dir-access` naming who, `--fix` protects them; install protects a
/// root made before it, and the CNI directories it makes; status reports one opened again;
/// a second install changes nothing, and uninstall --purge gives back the host as it was.
#[test]
fn directories_whose_files_run_as_system_are_protected_and_checked() {
    let s = setup("calico-node.exe");
    let initial = s.snapshot();
    let state_path = s.sim().join("state.json");
    // What a user (or a careless script) does to a directory's access list, behind the tool.
    let set_security = |path: &str, sddl: &str| {
        let mut st = s.state();
        let mut map = st["security"].as_object().cloned().unwrap_or_default();
        map.insert(path.to_owned(), json!(sddl));
        st["security"] = Value::Object(map);
        fs_err::write(&state_path, serde_json::to_vec_pretty(&st).expect("json")).expect("write");
    };
    let check = |doc: &Value| -> Value {
        doc["checks"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["id"] == "dir-access").cloned())
            .unwrap_or_else(|| panic!("no dir-access check: {doc}"))
    };
    // A root an administrator made under C:\ before the install: every user may change it.
    fs_err::create_dir_all(s.c_drive("calicowindows")).expect("root");
    let (code, doc, _) = s.run(&["preflight", "--offline"]);
    assert_eq!(code, 3, "{doc}");
    let c = check(&doc);
    assert_eq!(c["verdict"], "fail", "{c}");
    assert!(
        c["message"].as_str().is_some_and(
            |m| m.contains(r"C:\CalicoWindows: Users may write (inherited from the parent)")
        ),
        "{c}"
    );
    assert!(
        c["remedy"]
            .as_str()
            .is_some_and(|r| r.contains("preflight --fix") && r.contains("icacls")),
        "{c}"
    );
    // --fix protects it; the check passes.
    let (_, doc, stderr) = s.run(&["preflight", "--offline", "--fix"]);
    assert_eq!(check(&doc)["verdict"], "pass", "{doc} {stderr}");
    // A local user made it and owns it: named by the owner's right to change the list.
    set_security(
        r"c:\calicowindows",
        "O:S-1-5-21-1-2-3-1001D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;FA;;;S-1-5-21-1-2-3-1001)",
    );
    let (_, doc, _) = s.run(&["preflight", "--offline"]);
    let c = check(&doc);
    assert!(
        c["message"].as_str().is_some_and(|m| m
            .contains("its owner S-1-5-21-1-2-3-1001 may change the access list")
            && m.contains(
                "S-1-5-21-1-2-3-1001 may write, delete, change the access list, take ownership"
            )),
        "{c}"
    );
    // Install protects it before anything is put there (an empty root is taken over as new:
    // protected as it begins its journal), and the CNI directories it makes, first.
    let (code, doc, stderr) = s.install_local(&[]);
    assert_eq!(code, 0, "{doc} {stderr}");
    let protected: Vec<&str> = crate::support::items(&doc, "actions")
        .take_while(|a| a["action"] == "protect-dir")
        .filter_map(|a| a["path"].as_str())
        .collect();
    assert_eq!(
        protected,
        [
            r"C:\Program Files\containerd\cni\bin",
            r"C:\Program Files\containerd\cni\conf"
        ],
        "{doc}"
    );
    let security = s.state()["security"].clone();
    assert_eq!(
        security[r"c:\calicowindows"],
        "O:BAD:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;0x1200a9;;;BU)",
        "{security}"
    );
    let (code, doc, stderr) = s.run(&["status", "--offline"]);
    assert_eq!(code, 0, "{doc} {stderr}");
    // Nothing to change the second time.
    let (code, doc, stderr) = s.install_local(&[]);
    assert_eq!(code, 0, "{doc} {stderr}");
    assert_eq!(doc["actions"], json!([]), "{doc}");
    // Opened again behind the tool's back: status says so.
    set_security(
        r"c:\calicowindows",
        "O:BAD:(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;FA;;;WD)",
    );
    let (code, doc, _) = s.run(&["status", "--offline"]);
    assert_eq!(code, 1, "{doc}");
    assert!(
        doc["dir_access"].to_string().contains("Everyone may write"),
        "{doc}"
    );
    // The purge gives back the host as it was: the root install took over and the CNI
    // directories it made are gone, with their access lists.
    let (code, doc, stderr) = s.uninstall(&["--purge", "--remove-logs"]);
    assert_eq!(code, 0, "{doc} {stderr}");
    assert_same(&s.snapshot(), &initial, "after the purge");
}

/// A root that holds something of someone else's is not taken over: install protects it as
/// its first step (the access list it had kept in the record), and uninstall gives that list
/// back with the directory, so the purge leaves the host exactly as it found it.
#[test]
fn a_root_that_was_there_gets_its_access_list_back_from_uninstall() {
    let s = setup("calico-node.exe");
    fs_err::create_dir_all(s.c_drive("calicowindows")).expect("root");
    fs_err::write(s.c_drive("calicowindows/notes.txt"), "someone's\n").expect("file");
    let initial = s.snapshot();
    let (code, doc, stderr) = s.install_local(&[]);
    assert_eq!(code, 0, "{doc} {stderr}");
    let first = &doc["actions"][0];
    assert_eq!(first["action"], "protect-dir", "{doc}");
    assert_eq!(first["path"], r"C:\CalicoWindows", "{doc}");
    assert!(
        first["writers"].to_string().contains("Users may write"),
        "{first}"
    );
    let record: Value = serde_json::from_slice(
        &fs_err::read(s.c_drive("calicowindows/calicoctl-win-install.json")).expect("record"),
    )
    .expect("json");
    assert_eq!(
        record["protected"][0]["path"], r"C:\CalicoWindows",
        "{record}"
    );
    // The release was staged in the cache before the plan protected the root: the cache was
    // protected first, so nobody else could swap a staged binary.
    let security = s.state()["security"].clone();
    let cache = security
        .as_object()
        .and_then(|m| m.iter().find(|(k, _)| k.ends_with(r"calicowindows\cache")))
        .map(|(_, v)| v.to_string())
        .unwrap_or_default();
    assert!(cache.contains("D:P(A;OICI;FA;;;SY)"), "{security}");
    let (code, doc, stderr) = s.uninstall(&["--purge", "--remove-logs"]);
    assert_eq!(code, 0, "{doc} {stderr}");
    assert_same(&s.snapshot(), &initial, "after the purge");
}

/// The host lock is taken before the simulated host's state is read: a command that read the
/// state first could plan from what the lock holder was still changing (its record then missed
/// the firewall rule and registry keys the other run added). Seen from outside: with the lock
/// held and the state unreadable, the answer is `locked`, not a complaint about the state.
#[test]
fn the_host_lock_is_taken_before_the_hosts_state_is_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sim = dir.path().join("host");
    fs_err::create_dir_all(&sim).expect("dir");
    fs_err::write(sim.join("state.json"), "{ being rewritten").expect("state");
    let _held = calicoctl_win::host::lock::acquire(&sim, "install").expect("lock");
    for args in [&["install", "--no-start"][..], &["uninstall"][..]] {
        let out = crate::support::on_node()
            .args(args)
            .args(["-o", "json", "--sim-host"])
            .arg(&sim)
            .output()
            .expect("runs");
        let doc = crate::support::json(&out.stdout);
        assert_eq!(out.status.code(), Some(5), "{args:?}: {doc}");
        assert_eq!(doc["error"]["kind"], "locked", "{args:?}: {doc}");
    }
}

/// `status` shows the pod addresses used of the node's block (Calico's IPAMBlock: Windows
/// reserves the first three and the last address under its own handle), and a block smaller
/// than kubelet's maxPods is a problem.
#[test]
fn status_shows_the_addresses_used_of_the_nodes_block() {
    let s = setup("calico-node.exe");
    s.api()
        .set_node_ready("win-1", "True", "kubelet is posting ready status");
    let (code, _, stderr) = s.install(&[]);
    assert_eq!(code, 0, "{stderr}");
    let reserved = "windows-reserved-ipam-handle";
    let mut allocations = vec![json!(null); 64];
    for i in [0, 1, 2, 63] {
        allocations[i] = json!(0);
    }
    for slot in allocations.iter_mut().take(20).skip(3) {
        *slot = json!(1);
    }
    let block = |cidr: &str, node: &str| {
        crate::support::fake_api::calico(
            "IPAMBlock",
            &cidr.replace(['.', '/'], "-"),
            json!({
                "cidr": cidr, "affinity": format!("host:{node}"), "allocations": allocations,
                "unallocated": [], "attributes": [{"handle_id": reserved}, {"handle_id": "k8s-pod-network.x"}],
            }),
        )
    };
    let crd = "/apis/crd.projectcalico.org/v1/ipamblocks";
    s.api().put(
        &format!("{crd}/10-244-1-0-26"),
        block("10.244.1.0/26", "win-1"),
    );
    s.api().put(
        &format!("{crd}/10-244-2-0-26"),
        block("10.244.2.0/26", "linux-1"),
    );
    let (code, doc, stderr) = s.run(&["status"]);
    assert_eq!(code, 0, "status: {stderr} {doc}");
    assert_eq!(doc["ipam"]["blocks"][0]["cidr"], "10.244.1.0/26", "{doc}");
    assert_eq!(
        doc["ipam"]["blocks"].as_array().unwrap().len(),
        1,
        "only this node's block"
    );
    assert_eq!(
        (
            doc["ipam"]["pods"].as_u64(),
            doc["ipam"]["capacity"].as_u64()
        ),
        (Some(17), Some(60))
    );
    assert_eq!(doc["ipam"]["blocks"][0]["reserved"], 4);

    let mut node = s.api().get("/api/v1/nodes/win-1").unwrap();
    node["status"]["capacity"]["pods"] = json!("110");
    s.api().put("/api/v1/nodes/win-1", node);
    let (code, doc, _) = s.run(&["status"]);
    assert_eq!(code, 1, "{doc}");
    let problems = doc["problems"].to_string();
    assert!(
        problems.contains("up to 110 pods") && problems.contains("holds 60"),
        "{problems}"
    );

    // Back to 60 pods, and every pod address of the block taken: a new pod gets none.
    let mut node = s.api().get("/api/v1/nodes/win-1").unwrap();
    node["status"]["capacity"]["pods"] = json!("60");
    s.api().put("/api/v1/nodes/win-1", node);
    let path = format!("{crd}/10-244-1-0-26");
    let mut full = s.api().get(&path).unwrap();
    for i in 3..63 {
        full["spec"]["allocations"][i] = json!(1);
    }
    s.api().put(&path, full);
    let (code, doc, _) = s.run(&["status"]);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(doc["ipam"]["pods"], 60);
    let problems = doc["problems"].to_string();
    assert!(problems.contains("block is full (60 of 60)"), "{problems}");
}

/// An install made with another install root (`--set install_root`) is found by an uninstall
/// run without that setting: install recorded its root in Calico's registry key.
#[test]
fn uninstall_without_the_config_finds_the_install_root_install_recorded() {
    let (_api, node, zip) = Node::on_calico_with_zip();
    let (code, _, err) = node.run(&[
        "install",
        "--no-start",
        "--release-zip",
        &zip,
        "--set",
        r"install_root=C:\Calico2",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(node.c_drive("calico2/calicoctl-win-install.json").is_file());
    let (code, doc, err) = node.run(&["uninstall"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(doc["install_root"], r"C:\Calico2", "{doc}");
    assert!(
        err.contains(r"install recorded its root C:\Calico2"),
        "{err}"
    );
    assert!(!node.c_drive("calico2/calicoctl-win-install.json").exists());
    let state = fs_err::read_to_string(node.sim().join("state.json")).expect("state");
    assert!(!state.contains("CalicoNode"), "a service is left: {state}");
}

/// On a cluster without an operator Installation, an install renders the CNI config its
/// release's own template gives: `cniVersion` 1.0.0 for
/// v3.31.7 (projectcalico/calico e345d10438), 0.3.1 for v3.31.6; status finds no drift after.
#[test]
fn an_install_renders_its_releases_cni_version() {
    for (release, cni) in [("3.31.6", "0.3.1"), ("3.31.7", "1.0.0")] {
        let api = FakeApi::calico();
        // A manifest install: with an operator's Installation, its specVersion decides
        // (tests/lifecycle/migrate.rs).
        api.remove("/apis/operator.tigera.io/v1/installations/default");
        let node = Node::new(&api);
        let zip = release_zip(node.dir.path(), release, "calico-node.exe");
        let zip = zip.display().to_string();
        let (code, _, err) = node.run(&["install", "--no-start", "--release-zip", &zip]);
        assert_eq!(code, 0, "{release}: {err}");
        let conf = node.c_drive("program files/containerd/cni/conf/10-calico.conf");
        let conf: Value =
            serde_json::from_str(&fs_err::read_to_string(conf).expect("conf")).expect("json");
        assert_eq!(conf["cniVersion"], cni, "{release}");
        let (_, doc, _) = node.run(&["status", "--offline"]);
        assert!(
            !doc["problems"].to_string().contains("10-calico.conf"),
            "{release}: {doc}"
        );
    }
}

/// windows-bgp on a release whose confd never writes BGP config (v3.31.0 to v3.31.4:
/// projectcalico/calico#11714, fixed by 38c14b1299 in v3.31.5) is refused before anything
/// changes, and goes ahead with --allow-known-issue; v3.31.5 is not refused.
#[test]
fn install_refuses_windows_bgp_on_a_release_whose_confd_writes_no_bgp_config() {
    let api = FakeApi::calico();
    let node = Node::new(&api);
    let run = |release: &str, extra: &[&str]| {
        let zip = release_zip(node.dir.path(), release, "calico-node.exe");
        let zip = zip.display().to_string();
        let mut args = vec![
            "install",
            "--dry-run",
            "--release-zip",
            &zip,
            "--calico-version",
            release,
            "--set",
            "backend=windows-bgp",
            "--skip",
            "ip-pools",
            "--skip",
            "remote-access",
            "--allow-downgrade",
        ];
        args.extend_from_slice(extra);
        node.run(&args)
    };
    let (code, doc, err) = run("3.31.2", &[]);
    assert_eq!(code, 3, "{err}");
    assert_eq!(doc["blocking"], json!(["known-issues"]), "{doc}");
    assert!(doc.to_string().contains("issues/11714"), "{doc}");
    let (code, doc, err) = run(
        "3.31.2",
        &["--allow-known-issue", "confd-bgp-never-in-sync"],
    );
    assert_eq!(code, 0, "{err} {doc}");
    let (code, doc, err) = run("3.31.5", &[]);
    assert_eq!(code, 0, "{err} {doc}");
}

/// A junction where the install root should be (any local user may make one: `mklink /J`
/// needs no privilege) would send what install writes, and the access list it sets, wherever
/// its maker chose. preflight's dir-access names it and install refuses it, writing nothing
/// there. On the simulated host a symbolic link stands for the junction.
#[cfg(unix)]
#[test]
fn a_junction_on_the_way_to_the_install_root_is_refused() {
    let api = FakeApi::calico();
    let node = Node::new(&api);
    let (code, _, err) = node.run(&["preflight", "--offline"]);
    assert!(code == 0 || code == 3, "{err}");
    let root = node.c_drive("calicowindows");
    let _ = fs_err::remove_dir_all(&root);
    let elsewhere = node.dir.path().join("elsewhere");
    fs_err::create_dir(&elsewhere).expect("target");
    std::os::unix::fs::symlink(&elsewhere, &root).expect("the junction");

    let (code, doc, err) = node.run(&["preflight", "--offline"]);
    assert_eq!(code, 3, "{err}");
    let access = crate::support::items(&doc, "checks")
        .find(|c| c["id"] == "dir-access")
        .cloned()
        .expect("dir-access");
    assert_eq!(access["verdict"], "fail", "{access}");
    assert!(
        access["message"]
            .to_string()
            .contains(r"C:\\CalicoWindows is a junction"),
        "{access}"
    );

    let zip = release_zip(node.dir.path(), "3.30.2", "calico-node.exe");
    let zip = zip.display().to_string();
    let (code, doc, err) = node.run(&["install", "--no-start", "--release-zip", &zip]);
    assert_eq!(code, 3, "{err}");
    assert!(doc["blocking"].to_string().contains("dir-access"), "{doc}");
    assert_eq!(
        fs_err::read_dir(&elsewhere).expect("list").count(),
        0,
        "install wrote through the junction"
    );
    // With the check accepted, the step that protects the directory refuses it itself (a
    // junction made after the checks is met there), and the install is undone.
    let (code, _, err) = node.run(&[
        "install",
        "--no-start",
        "--release-zip",
        &zip,
        "--skip",
        "dir-access",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("is a junction or another reparse point"),
        "{err}"
    );
    assert_eq!(
        fs_err::read_dir(&elsewhere).expect("list").count(),
        0,
        "install wrote through the junction"
    );
}

/// The release's own `cni.conf.template` decides the `cniVersion`, as install-calico.ps1 takes
/// the zip's template: one that says 0.4.0 renders 0.4.0 on a release the table gives 0.3.1,
/// and status renders the same from the record (no drift).
#[test]
fn the_zips_own_template_gives_the_cni_version() {
    let api = FakeApi::calico();
    api.remove("/apis/operator.tigera.io/v1/installations/default");
    let node = Node::new(&api);
    let mut entries = crate::support::release::entries_of("calico-node.exe", Some("3.31.6"));
    for (name, data) in &mut entries {
        if name.ends_with("cni.conf.template") {
            *data = b"{\n  \"cniVersion\": \"0.4.0\",\n  \"name\": \"Calico\"\n}\n".to_vec();
        }
    }
    let zip = node.dir.path().join("calico-windows-v3.31.6.zip");
    write_zip(&zip, &entries);
    let zip = zip.display().to_string();
    let (code, _, err) = node.run(&["install", "--no-start", "--release-zip", &zip]);
    assert_eq!(code, 0, "{err}");
    let conf = node.c_drive("program files/containerd/cni/conf/10-calico.conf");
    let conf: Value =
        serde_json::from_str(&fs_err::read_to_string(conf).expect("conf")).expect("json");
    assert_eq!(conf["cniVersion"], "0.4.0");
    let (_, doc, _) = node.run(&["status", "--offline"]);
    assert!(
        !doc["problems"].to_string().contains("10-calico.conf"),
        "{doc}"
    );
}

/// A file with the right bytes but someone else's owner or access list (a user planted it
/// before the root was protected, or opened it up since) is written anew, never kept: Windows
/// keeps an existing file's own security when it is opened again, so only a new file made in
/// the protected directory (`CREATE_NEW`, then renamed over it) drops what was planted.
#[test]
fn a_file_with_the_right_bytes_but_a_foreign_owner_is_written_anew() {
    let s = setup("calico-node.exe");
    let (code, doc, stderr) = s.install_local(&[]);
    assert_eq!(code, 0, "{doc} {stderr}");
    let state_path = s.sim().join("state.json");
    let target = r"c:\calicowindows\calico-node.exe";
    let user = "S-1-5-21-1-2-3-1001";
    let mut st = s.state();
    st["security"][target] = json!(format!(
        "O:{user}D:P(A;;FA;;;SY)(A;;FA;;;BA)(A;;FA;;;{user})"
    ));
    fs_err::write(&state_path, serde_json::to_vec_pretty(&st).expect("json")).expect("write");
    let (code, doc, stderr) = s.install_local(&[]);
    assert_eq!(code, 0, "{doc} {stderr}");
    let writes: Vec<&Value> = crate::support::items(&doc, "actions")
        .filter(|a| a["action"] == "write-file")
        .collect();
    assert_eq!(writes.len(), 1, "{doc}");
    assert!(
        writes[0]["path"]
            .as_str()
            .is_some_and(|p| p.eq_ignore_ascii_case(target)),
        "{doc}"
    );
    let said = writes[0]["description"].as_str().unwrap_or_default();
    assert!(
        said.contains(&format!("its owner {user} may change the access list"))
            && said.contains("written anew"),
        "{doc}"
    );
    assert!(
        s.state()["security"].get(target).is_none(),
        "the planted list is gone with the file it was on: {}",
        s.state()["security"]
    );
    let (code, doc, stderr) = s.install_local(&[]);
    assert_eq!(code, 0, "{doc} {stderr}");
    assert_eq!(doc["actions"], json!([]), "{doc}");
}
