//! Build facts for `--version`: the git commit and the commit's date (not the clock's, so the
//! same commit builds the same bytes). Outside a git checkout both are "unknown".
//!
//! For Windows (the GNU toolchain), the executable also gets a version resource (what
//! Explorer's Details tab and `(Get-Item calicoctl-win.exe).VersionInfo` show): the file and
//! product version, the description, the commit. It is compiled with the MinGW resource
//! compiler (`x86_64-w64-mingw32-windres`, or `$WINDRES`) and linked into the binary.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (out.status.success() && !text.is_empty()).then(|| text.to_owned())
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let date = git(&["log", "-1", "--format=%cs"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=CALICOCTL_WIN_COMMIT={commit}");
    println!("cargo:rustc-env=CALICOCTL_WIN_BUILD_DATE={date}");
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/refs/heads");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=WINDRES");
    let target = |name: &str| std::env::var(format!("CARGO_CFG_TARGET_{name}")).unwrap_or_default();
    if target("OS") == "windows" && target("ENV") == "gnu" {
        version_resource(&commit);
    }
}

/// A string as an .rc string literal: quotes doubled, nothing else special in ours.
fn rc_text(s: &str) -> String {
    s.replace('"', "\"\"")
}

fn version_resource(commit: &str) {
    // Cannot fail: cargo sets OUT_DIR for every build script it runs (the Cargo book,
    // "Environment variables Cargo sets for build scripts").
    let out_dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    let out = Path::new(&out_dir);
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let part = |name: &str| {
        std::env::var(format!("CARGO_PKG_VERSION_{name}"))
            .ok()
            .and_then(|v| v.parse::<u16>().ok())
            .unwrap_or(0)
    };
    let numbers = format!("{},{},{},0", part("MAJOR"), part("MINOR"), part("PATCH"));
    let description = std::env::var("CARGO_PKG_DESCRIPTION").unwrap_or_default();
    let license = std::env::var("CARGO_PKG_LICENSE").unwrap_or_default();
    let rc = format!(
        r#"#include <winver.h>
1 VERSIONINFO
FILEVERSION {numbers}
PRODUCTVERSION {numbers}
FILEFLAGSMASK 0x3fL
FILEFLAGS 0x0L
FILEOS VOS_NT_WINDOWS32
FILETYPE VFT_APP
FILESUBTYPE 0x0L
BEGIN
  BLOCK "StringFileInfo"
  BEGIN
    BLOCK "040904b0"
    BEGIN
      VALUE "CompanyName", "calicoctl-win"
      VALUE "FileDescription", "{description}"
      VALUE "FileVersion", "{version}"
      VALUE "InternalName", "calicoctl-win"
      VALUE "LegalCopyright", "Licensed under {license}"
      VALUE "OriginalFilename", "calicoctl-win.exe"
      VALUE "ProductName", "calicoctl-win"
      VALUE "ProductVersion", "{version} ({commit})"
    END
  END
  BLOCK "VarFileInfo"
  BEGIN
    VALUE "Translation", 0x409, 1200
  END
END
"#,
        description = rc_text(&description),
        version = rc_text(&version),
        license = rc_text(&license),
        commit = rc_text(commit),
    );
    let rc_path = out.join("calicoctl-win.rc");
    // A build script has no fs-err: its panic names the path itself.
    #[allow(clippy::disallowed_methods)]
    if let Err(e) = std::fs::write(&rc_path, rc) {
        panic!("write the resource script {}: {e}", rc_path.display());
    }
    let object = out.join("calicoctl-win-version.o");
    let windres = std::env::var("WINDRES").unwrap_or_else(|_| "x86_64-w64-mingw32-windres".into());
    let status = Command::new(&windres)
        .arg(&rc_path)
        .args(["-O", "coff", "-o"])
        .arg(&object)
        .status();
    match status {
        Ok(s) if s.success() => {
            // Only calicoctl-win.exe: the examples and tests are not shipped.
            println!(
                "cargo:rustc-link-arg-bin=calicoctl-win={}",
                object.display()
            );
        }
        Ok(s) => panic!("{windres} failed ({s}) on {}", rc_path.display()),
        Err(e) => println!(
            "cargo:warning=no version resource in calicoctl-win.exe: {windres} cannot run ({e}); install gcc-mingw-w64-x86-64 (binutils-mingw-w64) or set WINDRES"
        ),
    }
}
