//! `--out-file` (fleet rbac, fleet plan, fetch installer-kubeconfig) writes only regular
//! files: a device or a FIFO in its place is refused without being opened (never replaced,
//! never blocked on), `-` is standard output, and a missing directory is named as such.

#![cfg(unix)]

use crate::support::cmd;
use crate::support::fake_api::FakeApi;
use std::path::Path;
use std::time::Duration;

/// A command that must end within 30 s (a FIFO opened for reading would block forever).
fn run(args: &[&str], out: &Path, cwd: &Path) -> (Option<i32>, String, String) {
    let mut c = cmd();
    let out = c
        .current_dir(cwd)
        .args(args)
        .arg("--out-file")
        .arg(out)
        .timeout(Duration::from_secs(30))
        .output()
        .expect("runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn commands(admin: &Path) -> Vec<Vec<String>> {
    let config = admin.with_file_name("calico-windows.yaml");
    fs_err::write(&config, "backend: vxlan\n").expect("config");
    vec![
        vec!["fleet".into(), "rbac".into()],
        vec![
            "fleet".into(),
            "plan".into(),
            "--image".into(),
            "registry.example/calicoctl-win:1.0".into(),
            "--config".into(),
            config.display().to_string(),
        ],
        vec![
            "fetch".into(),
            "installer-kubeconfig".into(),
            "--kubeconfig".into(),
            admin.display().to_string(),
        ],
    ]
}

#[test]
fn a_device_or_fifo_is_refused_and_left_as_it_was() {
    let (_api, dir, admin) = FakeApi::calico_admin();
    // A link to a character device (so that a replacement would replace the link, not the
    // device), and a FIFO nobody writes to.
    let device = dir.path().join("device");
    std::os::unix::fs::symlink("/dev/null", &device).expect("link");
    let fifo = dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo (coreutils)");
    assert!(made.success());
    for args in commands(&admin) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        for (target, kind) in [(&device, "a device"), (&fifo, "a FIFO")] {
            let (code, _, stderr) = run(&args, target, dir.path());
            assert_eq!(code, Some(2), "{args:?} {kind}: {stderr}");
            assert!(
                stderr.contains(kind) && stderr.contains("--out-file -"),
                "{stderr}"
            );
        }
        assert!(
            fs_err::symlink_metadata(&device)
                .expect("link")
                .is_symlink()
        );
        let fifo_type = fs_err::symlink_metadata(&fifo).expect("fifo").file_type();
        assert!(std::os::unix::fs::FileTypeExt::is_fifo(&fifo_type));
    }
}

#[test]
fn dash_is_standard_output_and_a_missing_directory_is_named() {
    let api = FakeApi::calico();
    let mut sa = crate::support::fake_api::meta(
        "v1",
        "ServiceAccount",
        "calicoctl-win-installer",
        Some("kube-system"),
    );
    sa["secrets"] = serde_json::json!([]);
    api.put(
        "/api/v1/namespaces/kube-system/serviceaccounts/calicoctl-win-installer",
        sa,
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let admin = api.kubeconfig(dir.path(), None);
    let cwd = dir.path().join("cwd");
    fs_err::create_dir(&cwd).expect("mkdir");
    for args in commands(&admin) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, stdout, stderr) = run(&args, Path::new("-"), &cwd);
        assert_eq!(code, Some(0), "{args:?}: {stderr}");
        assert!(
            stdout.contains("apiVersion"),
            "{args:?} wrote nothing to stdout: {stdout}"
        );
        assert!(!cwd.join("-").exists(), "{args:?} wrote a file named '-'");

        let missing = dir.path().join("no-such-dir/out.yaml");
        let (code, _, stderr) = run(&args, &missing, &cwd);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("no-such-dir") && stderr.contains("does not exist"),
            "{stderr}"
        );
        assert!(!stderr.contains(".calicoctl-win.tmp"), "{stderr}");
    }
    // With -o json, stdout is the JSON document: '-' is refused rather than mixed into it.
    let (code, _, stderr) = run(
        &[
            "-o",
            "json",
            "fetch",
            "installer-kubeconfig",
            "--kubeconfig",
            &admin.display().to_string(),
        ],
        Path::new("-"),
        &cwd,
    );
    assert_eq!(code, Some(2), "{stderr}");
}

/// `--dry-run` changes nothing, `--out-file` included: fleet rbac and fleet plan show the
/// manifests they would write and leave the file as it was (a file that the real run refuses
/// is refused alike).
#[test]
fn a_dry_run_writes_no_out_file() {
    let (_api, dir, admin) = FakeApi::calico_admin();
    let out = dir.path().join("manifests.yaml");
    let missing = dir.path().join("no-such-dir/out.yaml");
    for args in commands(&admin).into_iter().take(2) {
        let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
        args.insert(0, "--dry-run");
        let (code, stdout, stderr) = run(&args, &out, dir.path());
        assert_eq!(code, Some(0), "{args:?}: {stderr}");
        assert!(
            !out.exists(),
            "{args:?} wrote {} in a dry run",
            out.display()
        );
        assert!(stdout.contains("apiVersion"), "{args:?}: {stdout}");
        assert!(stderr.contains("not written"), "{args:?}: {stderr}");
        let (code, _, stderr) = run(&args, &missing, dir.path());
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
    }
}
