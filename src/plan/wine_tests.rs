//! install and uninstall through calicoctl-win.exe against the real SCM and registry (under
//! Wine in CI). Wine has no HNS and no firewall rules, so the install uses the `none` backend
//! (no networks, no VXLAN rule) and does not start the services.

use crate::host::contract::on_windows::{Defer, SCM, built, remove_service_at_end, under_wine};
use crate::host::windows::WindowsHost;
use crate::host::{Registry, Services, StartType};
use std::io::Write;
use std::path::Path;
use std::process::Command;

/// A release zip with the real layout (calico-node.exe naming) for `version`.
fn release_zip(dir: &Path, version: &str) -> std::path::PathBuf {
    let path = dir.join(format!("calico-windows-v{version}.zip"));
    let mut z = zip::ZipWriter::new(std::fs::File::create(&path).expect("zip"));
    let opts = zip::write::SimpleFileOptions::default();
    for (name, data) in [
        ("CalicoWindows/calico-node.exe", "fake calico-node"),
        ("CalicoWindows/cni/calico.exe", "fake cni"),
        ("CalicoWindows/cni/calico-ipam.exe", "fake ipam"),
        ("CalicoWindows/cni.conf.template", "{}"),
    ] {
        z.start_file(name, opts).expect("entry");
        z.write_all(data.as_bytes()).expect("write");
    }
    z.finish().expect("finish");
    path
}

fn run(exe: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(exe).args(args).output().expect("run the exe");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// How install registers the services; that `uninstall --purge` gives the prefix back is
/// tests/windows' `the_whole_lifecycle_under_wine_returns_the_prefix_to_its_initial_state`.
#[test]
fn install_registers_services_running_calicoctl_win() {
    if !under_wine() {
        return;
    }
    let _turn = SCM.lock().unwrap_or_else(|p| p.into_inner());
    let h = WindowsHost::new();
    for name in ["CalicoNode", "CalicoFelix"] {
        assert_eq!(h.service_query(name).expect("query"), None, "{name} exists");
    }
    // Removed however the test ends.
    let _remove = ["CalicoFelix", "CalicoNode"].map(|name| remove_service_at_end(&h, name));
    let _key = Defer(|| {
        let _ = h.reg_delete_key(crate::layout::CALICO_KEY);
    });
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().display().to_string();
    let zip = release_zip(tmp.path(), "3.31.0").display().to_string();
    let tls = tmp.path().join("tls");
    fs_err::create_dir(&tls).expect("tls dir");
    for f in ["k.pem", "c.pem", "a.pem"] {
        fs_err::write(tls.join(f), "pem").expect("tls file");
    }
    let root = format!("{dir}\\CalicoWindows");
    let settings = [
        "node.name=wine".to_owned(),
        "backend=none".into(),
        format!("install_root={root}"),
        format!("cni.bin_dir={dir}\\cni\\bin"),
        format!("cni.conf_dir={dir}\\cni\\conf"),
        "datastore=etcdv3".into(),
        "etcd.endpoints=https://127.0.0.1:2379".into(),
        format!("etcd.key_file={dir}\\tls\\k.pem"),
        format!("etcd.cert_file={dir}\\tls\\c.pem"),
        format!("etcd.ca_cert_file={dir}\\tls\\a.pem"),
    ];
    let mut args: Vec<&str> = vec!["install", "--release-zip", &zip, "--no-start"];
    // Wine is no Windows Server and has neither HNS nor a container runtime.
    for id in ["os-build", "hns", "container-runtime"] {
        args.extend(["--skip", id]);
    }
    for s in &settings {
        args.extend(["--set", s]);
    }
    let exe = built("calicoctl-win.exe");
    let (code, text) = run(&exe, &args);
    assert_eq!(code, 0, "install: {text}");

    // The SCM keeps the program quoted only when its path has a space.
    let ours = format!("{root}\\calicoctl-win.exe");
    let node = h
        .service_query("CalicoNode")
        .expect("query")
        .expect("CalicoNode");
    assert!(
        node.command_line
            .replace('"', "")
            .starts_with(&format!("{ours} service run node --install-root")),
        "{}",
        node.command_line
    );
    assert_eq!(node.start, StartType::Auto);
    assert!(
        node.account.eq_ignore_ascii_case("LocalSystem"),
        "{}",
        node.account
    );
    let felix = h
        .service_query("CalicoFelix")
        .expect("query")
        .expect("CalicoFelix");
    assert!(
        felix.command_line.starts_with(&ours),
        "{}",
        felix.command_line
    );
    // Wine's QueryServiceConfigW reports no dependencies; the SCM's own store has them.
    assert_eq!(
        h.reg_get(
            r"HKLM\System\CurrentControlSet\Services\CalicoFelix",
            "DependOnService"
        )
        .expect("reg"),
        Some(crate::host::RegValue::MultiSz(vec!["CalicoNode".into()]))
    );
    assert!(Path::new(&format!("{root}\\calicoctl-win.exe")).is_file());
    assert_eq!(
        h.reg_get(crate::layout::CALICO_KEY, "InstallRoot")
            .expect("reg"),
        Some(crate::host::RegValue::Sz(root.clone()))
    );
}

/// The opt-in kube-proxy service's registration, through the real SCM: calicoctl-win's
/// `service run kube-proxy`, automatic start, after CalicoNode, named and described as
/// Calico's install-kube-services.ps1 registered it.
#[test]
fn the_kube_proxy_service_registers_with_the_real_scm() {
    if !under_wine() {
        return;
    }
    let _turn = SCM.lock().unwrap_or_else(|p| p.into_inner());
    let h = WindowsHost::new();
    assert_eq!(h.service_query("kube-proxy").expect("query"), None);
    let c = crate::config::tests::from_sets(&[
        "node.name=wine",
        r"kube_proxy.path=C:\k\kube-proxy.exe",
    ]);
    let specs = crate::plan::install::services(&c, Some("3.31.0"));
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["CalicoNode", "CalicoFelix", "kube-proxy"]);
    let spec = &specs[2];
    h.service_create(spec).expect("create kube-proxy");
    // Deleted however the test ends, so that the prefix is as it was.
    let guard = remove_service_at_end(&h, "kube-proxy");
    let got = h
        .service_query("kube-proxy")
        .expect("query")
        .expect("kube-proxy");
    assert!(
        got.command_line
            .replace('"', "")
            .ends_with(r"calicoctl-win.exe service run kube-proxy --install-root C:\CalicoWindows --calico-version 3.31.0"),
        "{}",
        got.command_line
    );
    assert_eq!(got.start, StartType::Auto);
    assert_eq!(got.display_name, "kube-proxy service");
    // Wine's QueryServiceConfigW reports no dependencies; the SCM's own store has them.
    assert_eq!(
        h.reg_get(
            r"HKLM\System\CurrentControlSet\Services\kube-proxy",
            "DependOnService"
        )
        .expect("reg"),
        Some(crate::host::RegValue::MultiSz(vec!["CalicoNode".into()]))
    );
    drop(guard);
    assert_eq!(h.service_query("kube-proxy").expect("query"), None);
}
