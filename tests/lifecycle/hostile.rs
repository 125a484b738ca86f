//! Every command driven with hostile flags and files, through the binary: no panic (exit 101),
//! no hang (each run is killed after 60 s, which fails the test), a clear error naming the
//! input, and nothing written when an input is refused (exit 2 leaves the simulated host as it
//! was).
//!
//! The flags are read from each command's `--help`: every `<DURATION>` flag gets hostile
//! durations, every input `<FILE>`/`<PATH|URL>` flag hostile files; the global `--config`,
//! `--kubeconfig` and `--set` get hostile values on every command.

use crate::support::fake_api::FakeApi;
use crate::support::release::release_zip;
use crate::support::snapshot::{assert_same, snapshot};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Each command with the arguments it needs besides the hostile one.
fn commands(dir: &Path) -> Vec<Vec<String>> {
    let out = dir.join("out").display().to_string();
    let ps1 = dir.join("config.ps1");
    fs_err::write(&ps1, "$env:KUBE_NETWORK = \"Calico.*\"\n").expect("ps1");
    let zip = dir.join("calico-windows-v3.30.2.zip").display().to_string();
    [
        vec!["render", "--output-dir", &out],
        vec!["preflight", "--offline"],
        vec!["install", "--release-zip", &zip],
        vec!["uninstall", "--purge"],
        vec!["reconfigure", "--drain"],
        vec!["status", "--offline"],
        // Refused inputs end it at once; valid ones would run the service until stopped.
        vec!["service", "run", "node", "--console"],
        vec!["fetch", "kubeconfig"],
        vec!["fetch", "etcd-certs"],
        vec![
            "fetch",
            "release",
            "--release-zip",
            &zip,
            "--output-dir",
            &out,
        ],
        vec!["config", "show"],
        vec!["diags", "--offline", "--out-file", &format!("{out}.zip")],
        vec!["config", "import-ps1", &ps1.display().to_string()],
    ]
    .into_iter()
    .map(|c| c.into_iter().map(str::to_owned).collect())
    .collect()
}

/// The flags of `command` whose value is a duration, and those whose value is a file read.
fn flags(command: &[String]) -> (Vec<String>, Vec<String>) {
    let words: Vec<&str> = command
        .iter()
        .map(String::as_str)
        .take_while(|w| !w.starts_with('-') && !w.contains('/'))
        .collect();
    let out = crate::support::cmd()
        .args(&words)
        .arg("--help")
        .output()
        .expect("help");
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    let (mut durations, mut files) = (Vec::new(), Vec::new());
    for line in help.lines() {
        let line = line.trim_start();
        let Some((flag, value)) = line.split_once(' ') else {
            continue;
        };
        if !flag.starts_with("--") {
            continue;
        }
        if value.starts_with("<DURATION>") {
            durations.push(flag.to_owned());
        }
        // Inputs only: outputs and the globals tested on their own are left out.
        let global = matches!(
            flag,
            "--config" | "--kubeconfig" | "--log-file" | "--sim-host"
        );
        if !global
            && (value.starts_with("<FILE>") || value.starts_with("<PATH|URL>"))
            && flag != "--out-file"
        {
            files.push(flag.to_owned());
        }
    }
    (durations, files)
}

struct Hostile {
    dir: tempfile::TempDir,
    template: PathBuf,
    admin: PathBuf,
    _api: FakeApi,
}

impl Hostile {
    /// A node with Calico installed (so uninstall, reconfigure and status have work to do),
    /// an admin kubeconfig for a fake API server, and the hostile files.
    fn new() -> Self {
        let (api, dir, admin) = FakeApi::calico_admin();
        let zip = release_zip(dir.path(), "3.30.2", "calico-node.exe");
        let template = dir.path().join("template");
        crate::support::on_node()
            .args(["install", "--release-zip"])
            .arg(&zip)
            .arg("--sim-host")
            .arg(&template)
            .arg("--kubeconfig")
            .arg(&admin)
            .assert()
            .success();
        Self {
            dir,
            template,
            admin,
            _api: api,
        }
    }

    /// Hostile input files: a FIFO nobody writes, endless devices, a directory, a missing
    /// path, binary garbage, a file past every size cap, a YAML alias bomb, deep nesting.
    fn files(&self) -> Vec<PathBuf> {
        let d = self.dir.path().join("hostile");
        fs_err::create_dir_all(d.join("a-directory")).expect("mkdir");
        let fifo = d.join("fifo");
        let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
        assert!(made.success());
        let garbage: Vec<u8> = (0..4096u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        fs_err::write(d.join("garbage"), &garbage).expect("write");
        let big = std::fs::File::create(d.join("big")).expect("big");
        big.set_len(40 << 20).expect("sparse 40 MB");
        let mut bomb =
            String::from("a: &a [\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\"]\n");
        for i in 0..9u8 {
            let (p, n) = ((b'a' + i) as char, (b'b' + i) as char);
            bomb.push_str(&format!(
                "{n}: &{n} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n"
            ));
        }
        fs_err::write(d.join("alias-bomb.yaml"), bomb).expect("write");
        fs_err::write(d.join("deep.yaml"), "[".repeat(100_000)).expect("write");
        vec![
            fifo,
            PathBuf::from("/dev/zero"),
            PathBuf::from("/dev/urandom"),
            d.join("a-directory"),
            d.join("missing"),
            d.join("garbage"),
            d.join("big"),
            d.join("alias-bomb.yaml"),
            d.join("deep.yaml"),
        ]
    }

    /// Admin kubeconfigs that are broken in the ways that once panicked or hung.
    fn kubeconfigs(&self) -> Vec<PathBuf> {
        let good = fs_err::read_to_string(&self.admin).expect("admin");
        let token = good
            .lines()
            .find_map(|l| l.trim().strip_prefix("token: "))
            .expect("token")
            .to_owned();
        let d = self.dir.path().join("hostile");
        fs_err::create_dir_all(&d).expect("mkdir");
        let mut out = Vec::new();
        for (name, bad) in [
            ("cr", "\r"),
            ("lf", "\\n"),
            ("del", "\u{7f}"),
            ("nul", "\\0"),
        ] {
            let p = d.join(format!("token-{name}.kubeconfig"));
            let quoted = format!("\"{token}{bad}x\"");
            fs_err::write(
                &p,
                good.replace(&format!("token: {token}"), &format!("token: {quoted}")),
            )
            .expect("write");
            out.push(p);
        }
        let refused = d.join("refused.kubeconfig");
        fs_err::write(
            &refused,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n",
        )
        .expect("write");
        out.push(refused);
        out
    }

    /// Runs one command with `flag` set to `value` (in place of the command's own value for
    /// it, if any; as `--flag=value`, so that a value starting with `-` stays a value).
    fn run_with(&self, command: &[String], flag: &str, value: &str) -> (i32, String) {
        let mut args: Vec<String> = Vec::new();
        let mut it = command.iter();
        while let Some(a) = it.next() {
            if a == flag {
                it.next();
            } else {
                args.push(a.clone());
            }
        }
        self.run(&args, &[format!("{flag}={value}")], None)
    }

    /// Runs one command on a fresh copy of the installed node: its exit code and stderr. Fails
    /// on a panic, on a run past 60 s, and on a refused input that changed the host.
    fn run(
        &self,
        command: &[String],
        extra: &[String],
        kubeconfig: Option<&Path>,
    ) -> (i32, String) {
        let host = self.dir.path().join("host");
        let _ = fs_err::remove_dir_all(&host);
        copy_dir(&self.template, &host);
        let before = snapshot(&host);
        let tmp = self.dir.path().join("tmp");
        fs_err::create_dir_all(&tmp).expect("tmp");
        let err_path = self.dir.path().join("stderr");
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("calicoctl-win"))
            .env_clear()
            .env("TMPDIR", &tmp)
            .current_dir(crate::support::root())
            // The node's name, for the commands that read the configuration (first, so that
            // a hostile --set after it wins).
            .args(
                reads_config(command)
                    .then_some(["--set", "node.name=win-1"])
                    .into_iter()
                    .flatten(),
            )
            .args(["-o", "json", "--sim-host"])
            .arg(&host)
            .arg("--kubeconfig")
            .arg(kubeconfig.unwrap_or(&self.admin))
            .args(command)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&err_path).expect("stderr"))
            .spawn()
            .expect("start");
        let what = format!("{} {}", command.join(" "), extra.join(" "));
        let started = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().expect("wait") {
                break s;
            }
            if started.elapsed() > Duration::from_secs(60) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{what}: still running after 60 s");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let stderr = fs_err::read_to_string(&err_path).unwrap_or_default();
        let code = status.code().expect("exited, not killed by a signal");
        assert_ne!(code, 101, "{what}: panicked:\n{stderr}");
        assert!(!stderr.contains("panicked at"), "{what}:\n{stderr}");
        if code == 2 {
            assert_same(&snapshot(&host), &before, &format!("{what} (refused)"));
        }
        (code, stderr)
    }
}

fn reads_config(command: &[String]) -> bool {
    let words: Vec<&str> = command.iter().take(2).map(String::as_str).collect();
    !matches!(
        words.as_slice(),
        ["service", "run"] | ["fetch", "release"] | ["config", "import-ps1"]
    )
}

use crate::support::copy_dir;

const DURATIONS: &[&str] = &[
    "18446744073709551615s",
    "99999999999999999999y",
    "101y",
    "0s",
    "-5s",
    "1.5h",
    "",
    "\u{7f}",
];

#[test]
fn every_duration_flag_of_every_command_refuses_hostile_values_clearly() {
    let h = Hostile::new();
    let mut runs = 0;
    for command in commands(h.dir.path()) {
        let (durations, _) = flags(&command);
        for flag in &durations {
            for value in DURATIONS {
                let (code, stderr) = h.run_with(&command, flag, value);
                assert_eq!(code, 2, "{command:?} {flag} {value:?}: {stderr}");
                assert!(stderr.contains(flag.as_str()), "names the flag: {stderr}");
                runs += 1;
            }
        }
    }
    assert!(
        runs > 100,
        "only {runs} runs: the flags were not found in the help"
    );
}

#[test]
fn every_input_file_flag_and_the_config_refuse_pipes_devices_and_garbage() {
    let h = Hostile::new();
    let files = h.files();
    for command in commands(h.dir.path()) {
        let (_, file_flags) = flags(&command);
        for flag in file_flags.iter().map(String::as_str).chain(["--config"]) {
            for f in &files {
                let path = f.display().to_string();
                let (code, stderr) = h.run_with(&command, flag, &path);
                // uninstall works without a valid config, by design, and says why it ignores it.
                let ignored = command[0] == "uninstall" && flag == "--config";
                if ignored {
                    assert!(stderr.contains("the config cannot be read"), "{stderr}");
                } else {
                    assert_ne!(code, 0, "{command:?} {flag} {path}: accepted: {stderr}");
                }
                let name = f
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                assert!(
                    stderr.contains(&name),
                    "{command:?} {flag} {path}: the error names the input: {stderr}"
                );
            }
        }
    }
}

#[test]
fn hostile_kubeconfigs_and_settings_are_clear_errors_on_every_command() {
    let h = Hostile::new();
    let kubeconfigs = h.kubeconfigs();
    let sets = [
        "vxlan.vni=18446744073709551616",
        "node.name=a\nb",
        "=x",
        "no-equals-sign",
        "extra_env.felix.=x",
        "vxlan.port=-1",
    ];
    for command in commands(h.dir.path()) {
        // The commands that talk to the cluster with the admin kubeconfig.
        let cluster = matches!(command[0].as_str(), "install" | "reconfigure" | "fetch")
            && command.get(1).is_none_or(|c| c != "release");
        for k in kubeconfigs.iter().filter(|_| cluster) {
            let (code, stderr) = h.run(&command, &[], Some(k));
            if code != 0 {
                assert!(
                    stderr.contains("error"),
                    "{command:?} {}: {stderr}",
                    k.display()
                );
            }
            assert!(
                !stderr.contains("\r"),
                "no raw control character from the token echoed"
            );
        }
        for s in sets {
            let (code, stderr) = h.run(&command, &[format!("--set={s}")], None);
            if command[0] == "uninstall" {
                // Works without a valid config, by design: the record says what to remove.
                assert!(stderr.contains("the config cannot be read"), "{stderr}");
            } else {
                assert_eq!(code, 2, "{command:?} --set {s:?}: {stderr}");
            }
        }
    }
}
