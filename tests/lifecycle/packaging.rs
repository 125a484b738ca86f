//! The release artifacts (packaging/package.py, run by packaging/package.sh): the zip holds
//! what a Windows admin needs, SHA256SUMS and the winget manifests name it by its checksum,
//! and the same inputs give the same bytes whatever the files' times.

use serde_json::Value;
use std::path::{Path, PathBuf};

const URL_BASE: &str = "https://releases.example/calicoctl-win/v0.1.0";

/// Runs package.py on `exe` and a completion script into `out`.
fn package(exe: &Path, completion: &Path, out: &Path, url_base: &str) -> std::process::Output {
    std::process::Command::new("python3")
        .arg(crate::support::root().join("packaging/package.py"))
        .arg("--exe")
        .arg(exe)
        .arg("--completion")
        .arg(completion)
        .args([
            "--version",
            env!("CARGO_PKG_VERSION"),
            "--date",
            "1763856000",
        ])
        .args(["--url-base", url_base])
        .arg("--out")
        .arg(out)
        .output()
        .expect("python3")
}

fn inputs(dir: &Path) -> (PathBuf, PathBuf) {
    let exe = dir.join("calicoctl-win.exe");
    fs_err::write(&exe, b"MZ stand-in for the Windows build").expect("exe");
    let out = crate::support::cmd()
        .args(["completions", "powershell"])
        .output()
        .expect("completions");
    assert!(out.status.success());
    let completion = dir.join("completion.ps1");
    fs_err::write(&completion, &out.stdout).expect("completion");
    (exe, completion)
}

fn yaml(path: &Path) -> Value {
    serde_saphyr::from_str(&fs_err::read_to_string(path).expect("manifest")).expect("YAML")
}

#[test]
fn the_release_zip_sums_and_winget_manifests_are_complete_and_reproducible() {
    if crate::support::tool("python3").is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let (exe, completion) = inputs(dir.path());
    let a = dir.path().join("a");
    let run = package(&exe, &completion, &a, URL_BASE);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );

    let version = env!("CARGO_PKG_VERSION");
    let zip_name = format!("calicoctl-win-{version}-windows-amd64.zip");
    let zip_path = a.join(&zip_name);
    let mut zip =
        zip::ZipArchive::new(std::fs::File::open(&zip_path).expect("zip")).expect("a zip");
    let names: Vec<String> = (0..zip.len())
        .map(|i| {
            zip.by_index(i)
                .expect("entry")
                .name()
                .expect("name")
                .to_string()
        })
        .collect();
    assert_eq!(
        names,
        [
            "calicoctl-win.exe",
            "LICENSE",
            "README.md",
            "calico-windows.yaml",
            "calicoctl-win-completion.ps1"
        ]
    );
    let mut shipped = Vec::new();
    std::io::Read::read_to_end(
        &mut zip.by_name("calicoctl-win.exe").expect("exe"),
        &mut shipped,
    )
    .expect("read");
    assert_eq!(shipped, fs_err::read(&exe).expect("exe"));
    let mut license = String::new();
    std::io::Read::read_to_string(&mut zip.by_name("LICENSE").expect("LICENSE"), &mut license)
        .expect("read");
    assert!(license.contains("Apache License") && license.contains("Version 2.0"));

    let digest = crate::support::release::sha256(&zip_path);
    assert_eq!(
        fs_err::read_to_string(a.join("SHA256SUMS")).expect("sums"),
        format!("{digest}  {zip_name}\n")
    );
    let winget = a.join("winget").join(version);
    let id = "calicoctl-win.calicoctl-win";
    let installer = yaml(&winget.join(format!("{id}.installer.yaml")));
    assert_eq!(installer["InstallerType"], "zip");
    assert_eq!(installer["NestedInstallerType"], "portable");
    assert_eq!(
        installer["NestedInstallerFiles"][0]["RelativeFilePath"],
        "calicoctl-win.exe"
    );
    assert!(names.contains(&"calicoctl-win.exe".to_owned()));
    assert_eq!(installer["Installers"][0]["Architecture"], "x64");
    assert_eq!(
        installer["Installers"][0]["InstallerUrl"],
        format!("{URL_BASE}/{zip_name}")
    );
    assert_eq!(
        installer["Installers"][0]["InstallerSha256"],
        digest.to_uppercase()
    );
    for (file, kind) in [
        (format!("{id}.yaml"), "version"),
        (format!("{id}.installer.yaml"), "installer"),
        (format!("{id}.locale.en-US.yaml"), "defaultLocale"),
    ] {
        let m = yaml(&winget.join(&file));
        assert_eq!(m["PackageIdentifier"], id, "{file}");
        assert_eq!(m["PackageVersion"], version, "{file}");
        assert_eq!(m["ManifestType"], kind, "{file}");
        assert_eq!(m["ManifestVersion"], "1.9.0", "{file}");
    }

    // The same inputs, touched later, give the same bytes.
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(3600);
    for f in [&exe, &completion] {
        std::fs::File::options()
            .write(true)
            .open(f)
            .and_then(|f| f.set_modified(later))
            .expect("touch");
    }
    let b = dir.path().join("b");
    let run = package(&exe, &completion, &b, URL_BASE);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    for file in [
        zip_name.clone(),
        "SHA256SUMS".into(),
        format!("winget/{version}/{id}.installer.yaml"),
        format!("winget/{version}/{id}.locale.en-US.yaml"),
        format!("winget/{version}/{id}.yaml"),
    ] {
        assert_eq!(
            fs_err::read(a.join(&file)).expect("a"),
            fs_err::read(b.join(&file)).expect("b"),
            "{file} differs between two runs on the same inputs"
        );
    }
}

#[test]
fn a_plain_http_download_url_is_refused() {
    if crate::support::tool("python3").is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let (exe, completion) = inputs(dir.path());
    let out = dir.path().join("out");
    let run = package(&exe, &completion, &out, "http://releases.example/x");
    assert!(!run.status.success());
    assert!(String::from_utf8_lossy(&run.stderr).contains("https://"));
    assert!(!out.exists(), "nothing written");
}

/// package.sh puts what it builds where cargo builds: CARGO_TARGET_DIR when set. cargo is a
/// stand-in here that answers as cargo does (`cargo metadata` reports `target_directory`,
/// which CARGO_TARGET_DIR sets: The Cargo Book, "cargo metadata" and "Environment variables";
/// `cargo build --target T --release` writes `<target dir>/T/release/`), so no release build
/// runs.
#[cfg(unix)]
#[test]
fn package_sh_honours_cargo_target_dir() {
    use assert_cmd::assert::OutputAssertExt;
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = dir.path().join("bin");
    fs_err::create_dir(&bin).expect("bin");
    let target = dir.path().join("elsewhere");
    let stub = format!(
        r#"#!/bin/sh
case "$1" in
metadata) printf '{{"packages":[{{"version":"{v}"}}],"target_directory":"%s"}}\n' "$CARGO_TARGET_DIR" ;;
build) mkdir -p "$CARGO_TARGET_DIR/x86_64-pc-windows-gnu/release" && printf 'MZ stand-in' > "$CARGO_TARGET_DIR/x86_64-pc-windows-gnu/release/calicoctl-win.exe" ;;
run) echo 'Register-ArgumentCompleter -Native -CommandName calicoctl-win -ScriptBlock {{ }}' ;;
esac
"#,
        v = env!("CARGO_PKG_VERSION")
    );
    fs_err::write(bin.join("cargo"), stub).expect("stub");
    fs_err::set_permissions(bin.join("cargo"), std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    std::process::Command::new("bash")
        .arg(crate::support::root().join("packaging/package.sh"))
        .arg(URL_BASE)
        .env("PATH", path)
        .env("CARGO_TARGET_DIR", &target)
        .env("SOURCE_DATE_EPOCH", "1763856000")
        .assert()
        .success();
    let zip = format!(
        "calicoctl-win-{}-windows-amd64.zip",
        env!("CARGO_PKG_VERSION")
    );
    assert!(target.join("release-artifacts").join(&zip).is_file());
    assert!(target.join("release-artifacts/SHA256SUMS").is_file());
}
