//! The binary's behaviour as a user or a provisioning script sees it.

use crate::support::{cmd, json, on_node, root};
use assert_cmd::assert::OutputAssertExt;
use sha2::{Digest, Sha256};

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn render_with_no_config_file_writes_the_default_files_and_lists_their_hashes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out_dir = dir.path().join("out");
    let out = on_node()
        .args(["-o", "json", "render", "--output-dir"])
        .arg(&out_dir)
        .assert()
        .success()
        .get_output()
        .clone();
    let listed = json(&out.stdout);
    assert_eq!(listed["schema"], 1, "{listed}");
    let names: Vec<String> = crate::support::items(&listed, "files")
        .map(|f| {
            let path = std::path::PathBuf::from(f["path"].as_str().expect("path"));
            let bytes = fs_err::read(&path).expect("listed file exists");
            assert_eq!(
                f["sha256"],
                sha256_hex(&bytes),
                "hash of {}",
                path.display()
            );
            path.file_name()
                .expect("name")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(
        names,
        [
            "10-calico.conf",
            "calico-node.env",
            "calico-felix.env",
            "external-network.json"
        ]
    );
}

#[test]
fn render_in_text_mode_prints_one_path_per_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = on_node()
        .args(["render", "--output-dir"])
        .arg(dir.path())
        .output()
        .expect("runs");
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), 4, "{stdout}");
    assert!(
        stdout.lines().all(|l| std::path::Path::new(l).is_file()),
        "{stdout}"
    );
}

#[test]
fn render_rewrites_only_changed_files_and_logs_what_it_did() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("run.log");
    let run = |vni: &str| {
        on_node()
            .args(["--set", &format!("vxlan.vni={vni}"), "--log-file"])
            .arg(&log)
            .args(["render", "--output-dir"])
            .arg(dir.path().join("out"))
            .assert()
            .success();
    };
    run("4096");
    run("4096");
    run("4097");
    let log = fs_err::read_to_string(&log).expect("log written");
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 12, "{log}");
    assert!(lines[..4].iter().all(|l| l.contains(" wrote ")), "{log}");
    assert!(
        lines[4..8].iter().all(|l| l.contains(" unchanged ")),
        "{log}"
    );
    // A new VNI changes the CNI config and felix's and calico-node's environment, not the External network.
    let third: Vec<&str> = lines[8..]
        .iter()
        .map(|l| {
            if l.contains(" wrote ") {
                "wrote"
            } else {
                "unchanged"
            }
        })
        .collect();
    assert_eq!(third, ["wrote", "wrote", "wrote", "unchanged"], "{log}");
}

#[test]
fn render_dry_run_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out_dir = dir.path().join("out");
    let out = on_node()
        .args(["--dry-run", "render", "--output-dir"])
        .arg(&out_dir)
        .output()
        .expect("runs");
    assert!(out.status.success());
    assert!(!out_dir.exists());
}

#[test]
fn a_template_with_an_unknown_placeholder_fails_before_anything_is_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let template = dir.path().join("cni.conf.template");
    fs_err::write(
        &template,
        "{\"name\": \"Calico\", \"x\": \"__NOT_A_PLACEHOLDER__\"}",
    )
    .expect("write");
    let out_dir = dir.path().join("out");
    let out = crate::support::exits(
        on_node()
            .args(["--set"])
            .arg(format!("cni.template={}", template.display()))
            .args(["render", "--output-dir"])
            .arg(&out_dir),
        2,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("__NOT_A_PLACEHOLDER__"), "{stderr}");
    assert!(stderr.contains("hint: "), "{stderr}");
    assert!(!out_dir.exists(), "nothing written");
}

#[test]
fn a_template_that_is_not_json_after_filling_is_rejected() {
    let dir = tempfile::tempdir().expect("tempdir");
    let template = dir.path().join("cni.conf.template");
    fs_err::write(&template, "{\"vni\": __VNI__,}").expect("write");
    on_node()
        .args(["--set"])
        .arg(format!("cni.template={}", template.display()))
        .args(["render", "--output-dir"])
        .arg(dir.path().join("out"))
        .assert()
        .code(2)
        .stderr(predicates::str::contains("not valid JSON"));
}

#[test]
fn config_show_with_no_config_file_reports_defaults_as_one_json_document() {
    let out = on_node()
        .args(["-o", "json", "config", "show"])
        .assert()
        .success()
        .get_output()
        .clone();
    let doc = json(&out.stdout);
    assert_eq!(doc["config_file"], serde_json::Value::Null);
    let settings = doc["settings"].as_object().expect("settings");
    assert!(settings.len() >= 30);
    for (key, s) in settings {
        // The simulated ws2022 host runs containerd: the runtime and its CNI directories
        // come from the host.
        let expected = match key.as_str() {
            "node.name" => "flag",
            "container_runtime" | "cni.bin_dir" | "cni.conf_dir" => "host",
            _ => "default",
        };
        assert_eq!(s["source"], expected, "{key}");
    }
    assert_eq!(settings["vxlan.vni"]["value"], 4096);
    assert_eq!(
        settings["service_cidrs"]["value"],
        serde_json::json!(["10.96.0.0/12"])
    );
}

#[test]
fn config_show_names_flag_env_and_file_line_sources() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("calico-windows.yaml");
    fs_err::write(
        &file,
        "backend: vxlan\nvxlan:\n  vni: 4100\n  mac_prefix: 0E-2B\n",
    )
    .expect("write");
    let out = on_node()
        .arg("--config")
        .arg(&file)
        .args(["--set", "vxlan.vni=4200", "config", "show"])
        .env("VXLAN_MAC_PREFIX", "0e-2c")
        .env("K8S_SERVICE_CIDR", "10.96.0.0/12,10.112.0.0/16")
        .assert()
        .success()
        .get_output()
        .clone();
    let text = String::from_utf8_lossy(&out.stdout);
    let row = |key: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("{key} ")))
            .unwrap_or_else(|| panic!("no row {key}: {text}"))
            .to_owned()
    };
    assert!(row("vxlan.vni").contains("4200") && row("vxlan.vni").ends_with("flag"));
    assert!(
        row("vxlan.mac_prefix").contains("0E-2C")
            && row("vxlan.mac_prefix").ends_with("env VXLAN_MAC_PREFIX")
    );
    assert!(row("backend").ends_with("file:1"));
    assert!(row("service_cidrs").contains("10.96.0.0/12,10.112.0.0/16"));
    assert!(row("datastore").ends_with("default"));
}

#[test]
fn the_kubeconfig_variable_chooses_cluster_access_not_calicos_kubeconfig() {
    let out = on_node()
        .args(["-o", "json", "config", "show"])
        .env("KUBECONFIG", "/tmp/admin.conf")
        .output()
        .expect("runs");
    let doc = json(&out.stdout);
    assert_eq!(
        doc["settings"]["kubeconfig"]["value"],
        "C:\\CalicoWindows\\calico-kube-config"
    );
    assert_eq!(doc["cluster_kubeconfig"]["path"], "/tmp/admin.conf");
    assert_eq!(doc["cluster_kubeconfig"]["source"], "env KUBECONFIG");
    let out = on_node()
        .args([
            "--kubeconfig",
            "/tmp/other.conf",
            "-o",
            "json",
            "config",
            "show",
        ])
        .output()
        .expect("runs");
    assert_eq!(
        json(&out.stdout)["cluster_kubeconfig"]["source"],
        "flag --kubeconfig"
    );
}

#[test]
fn a_missing_config_file_is_a_usage_error() {
    let out = crate::support::exits(
        cmd().args(["--config", "no-such-file.yaml", "config", "show"]),
        2,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no-such-file.yaml") && stderr.contains("Caused by:"),
        "{stderr}"
    );
}

#[test]
fn bad_usage_exits_2() {
    cmd().args(["render", "--no-such-flag"]).assert().code(2);
    cmd()
        .args(["render", "--output-dir", "x", "--os-build", "latest"])
        .assert()
        .code(2);
}

#[test]
fn no_colour_without_a_terminal() {
    let out = crate::support::exits(cmd().args(["--set", "vxlan.vni=1", "config", "show"]), 2);
    assert!(
        !out.stderr.contains(&0x1b),
        "ANSI escape in {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn help_says_what_each_command_changes_on_the_host() {
    for args in [
        &["render", "--help"][..],
        &["config", "show", "--help"],
        &["config", "import-ps1", "--help"],
    ] {
        let out = cmd().args(args).output().expect("runs");
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("Changes on the host:"), "{args:?}: {text}");
    }
}

/// `repair` restarts no service (docs/commands/repair.md): neither its help nor the top-level
/// list of commands says it does, and it has no flag for a service's stop or start.
#[test]
fn repair_help_claims_no_restart() {
    for args in [&["--help"][..], &["repair", "--help"]] {
        let out = cmd().args(args).output().expect("runs");
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        let repair = &text[text.find("repair").expect("repair")..];
        let line = repair.lines().next().unwrap_or_default();
        let said = if args.len() == 1 { line } else { &text };
        for claim in ["restart Felix", "restarts CalicoFelix", "--service-timeout"] {
            assert!(!said.contains(claim), "{args:?}: {claim:?} in {said}");
        }
        assert!(
            said.contains("nothing is restarted") || said.contains("Nothing is restarted"),
            "{args:?}: {said}"
        );
    }
}

#[test]
fn the_documented_commands_have_docs_pages() {
    for page in ["render.md", "config-show.md", "config-import-ps1.md"] {
        assert!(
            root().join("docs/commands").join(page).is_file(),
            "docs/commands/{page}"
        );
    }
}

#[test]
fn the_shipped_example_config_equals_the_built_in_defaults() {
    let show = |config: Option<&str>| {
        let mut c = on_node();
        if let Some(f) = config {
            c.args(["--config", f]);
        }
        let out = c
            .args(["-o", "json", "config", "show"])
            .assert()
            .success()
            .get_output()
            .clone();
        json(&out.stdout)["settings"].clone()
    };
    let from_file = show(Some("templates/calico-windows.yaml"));
    let defaults = show(None);
    let mut from_file_count = 0;
    for (key, s) in from_file.as_object().expect("settings") {
        assert_eq!(s["value"], defaults[key]["value"], "{key}");
        if s["source"]
            .as_str()
            .is_some_and(|src| src.starts_with("file:"))
        {
            from_file_count += 1;
        }
    }
    assert!(
        from_file_count >= 20,
        "the example sets most keys explicitly ({from_file_count})"
    );
}

#[test]
fn a_cni_file_name_that_clashes_with_another_rendered_file_is_rejected() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out_dir = dir.path().join("out");
    on_node()
        .args([
            "--set",
            "cni.conf_filename=external-network.json",
            "render",
            "--output-dir",
        ])
        .arg(&out_dir)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("cni.conf_filename"));
    assert!(!out_dir.exists());
}

#[test]
fn verbose_shows_details_on_stderr_only_when_asked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = |verbose: bool| {
        let mut c = on_node();
        if verbose {
            c.arg("-v");
        }
        let out = c
            .args(["render", "--output-dir"])
            .arg(dir.path())
            .output()
            .expect("runs");
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert!(run(true).contains("Windows build 20348.2227 from the host"));
    assert!(!run(false).contains("Windows build"));
}

#[test]
fn every_duration_flag_refuses_an_overflowing_value_before_doing_anything() {
    let huge = "18446744073709551615s";
    let cases: &[&[&str]] = &[
        &["install", "--dry-run", "--wait-timeout"],
        &["install", "--dry-run", "--service-timeout"],
        &["install", "--dry-run", "--download-timeout"],
        &["install", "--dry-run", "--token-lifetime"],
        &["install", "--dry-run", "--token-keep-if-valid-for"],
        &["reconfigure", "--dry-run", "--drain-timeout"],
        &["reconfigure", "--dry-run", "--wait-timeout"],
        &["uninstall", "--dry-run", "--service-timeout"],
        &["fetch", "kubeconfig", "--lifetime"],
        &["fetch", "kubeconfig", "--refresh-if-expiring-within"],
        &["service", "run", "node", "--console", "--stop-timeout"],
        &["service", "run", "node", "--console", "--startup-timeout"],
    ];
    for args in cases {
        let out = on_node().args(*args).arg(huge).output().expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("longer than the longest duration accepted, 100y"),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn a_control_character_in_the_admin_token_is_a_clear_error_not_a_panic() {
    let dir = tempfile::tempdir().expect("tmp");
    for (i, bad) in ["\\r", "\\n", "\\u007f"].iter().enumerate() {
        let path = dir.path().join(format!("admin-{i}.kubeconfig"));
        fs_err::write(
            &path,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\nusers:\n- name: u\n  user:\n    token: \"secret-abc{bad}def\"\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n"
            ),
        )
        .expect("write");
        for args in [
            &["preflight", "--sim-host"][..],
            &["fetch", "kubeconfig", "--sim-host"],
            &["install", "--dry-run", "--sim-host"],
        ] {
            let out = on_node()
                .arg("--kubeconfig")
                .arg(&path)
                .args(args)
                .arg(dir.path().join("host"))
                .output()
                .expect("runs");
            let stderr = String::from_utf8_lossy(&out.stderr);
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert_ne!(out.status.code(), Some(101), "{args:?}: {stderr}");
            assert!(
                stderr.contains("control character") || stdout.contains("control character"),
                "{args:?} {bad}: {stderr}{stdout}"
            );
            assert!(
                !stderr.contains("secret-abc") && !stdout.contains("secret-abc"),
                "{stderr}"
            );
        }
    }
}

#[cfg(unix)]
#[test]
fn a_pipe_given_as_an_input_file_is_refused_at_once_not_read_forever() {
    let dir = tempfile::tempdir().expect("tmp");
    let fifo = dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let f = fifo.display().to_string();
    let cases: &[&[&str]] = &[
        &["--config", &f, "config", "show", "--offline"],
        &["--kubeconfig", &f, "preflight"],
        &["install", "--dry-run", "--release-zip", &f],
        &["config", "import-ps1", &f],
        &[
            "--set",
            &format!("cni.template={f}"),
            "render",
            "--output-dir",
            &format!("{}/out", dir.path().display()),
        ],
    ];
    for args in cases {
        // config import-ps1 reads no configuration, so it takes no --set.
        let mut c = if args.contains(&"import-ps1") {
            cmd()
        } else {
            on_node()
        };
        let out = c
            .args(*args)
            .timeout(std::time::Duration::from_secs(30))
            .output()
            .expect("runs");
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            matches!(out.status.code(), Some(1..=3)),
            "{args:?}: {:?} {all}",
            out.status.code()
        );
        assert!(all.contains("not a regular file"), "{args:?}: {all}");
    }
}

/// With `-o json`, stdout is one JSON document whatever happens, clap's own answers included.
#[test]
fn with_o_json_the_version_usage_errors_and_help_are_one_json_document() {
    let run = |args: &[&str]| {
        let out = cmd().args(args).output().expect("runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let doc: serde_json::Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{args:?}: stdout is not one JSON document ({e}): {text}"));
        (out.status.code(), doc)
    };
    let (code, v) = run(&["--version", "-o", "json"]);
    assert_eq!(code, Some(0));
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    assert!(
        v["commit"].is_string() && v["build_date"].is_string(),
        "{v}"
    );
    assert_eq!(v["schema"], 1);

    for args in [
        &["-o", "json", "install", "--no-such-flag"][..],
        &["--output=json", "reconfigure", "--drain-timeout", "soon"],
        &["-ojson", "no-such-command"],
        &["--output-format", "json", "uninstall", "--help"],
        &["-o", "json"],
    ] {
        let (code, doc) = run(args);
        assert_eq!(code, Some(2), "{args:?}: {doc}");
        assert_eq!(doc["error"]["kind"], "usage", "{args:?}: {doc}");
        assert_eq!(doc["exit_code"], 2, "{args:?}");
        assert!(
            doc["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
        );
    }

    // Without -o json, clap answers as it always does.
    let out = cmd().arg("--version").output().expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("calicoctl-win "), "{text}");
    assert!(text.contains("(commit "), "{text}");
}

/// Exit codes as the README's table says: a file given on the command line that is missing is
/// bad usage (2), a preflight with an unreadable kubeconfig too, and a dry run exits as the real
/// run would (3 when it would stop at the checks).
#[test]
fn missing_inputs_are_usage_errors_and_a_blocked_dry_run_exits_3() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("missing").display().to_string();
    let sim = dir.path().join("host").display().to_string();
    let run = |args: &[&str]| {
        let out = cmd()
            .args(["-o", "json", "--sim-host", &sim, "--set", "node.name=win-1"])
            .args(args)
            .output()
            .expect("runs");
        let doc = json(&out.stdout);
        (out.status.code(), doc)
    };
    for (args, kind) in [
        (vec!["install", "--release-zip", &missing], "usage"),
        (
            vec!["install", "--dry-run", "--release-ca-cert", &missing],
            "usage",
        ),
        (
            vec!["preflight", "--kubeconfig", &missing],
            "no-admin-kubeconfig",
        ),
        (
            vec!["status", "--kubeconfig", &missing],
            "no-admin-kubeconfig",
        ),
    ] {
        let (code, doc) = run(&args);
        assert_eq!(code, Some(2), "{args:?}: {doc}");
        assert_eq!(doc["error"]["kind"], kind, "{args:?}: {doc}");
    }

    // A node without HNS: the real install would stop at the checks, and so does its dry run,
    // after showing the plan.
    let out = cmd()
        .args([
            "-o",
            "json",
            "--sim-profile",
            "ws2022-no-hns",
            "--set",
            "node.name=win-1",
        ])
        .args(["install", "--dry-run"])
        .output()
        .expect("runs");
    let doc = json(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{doc}");
    assert_eq!(doc["blocking"], serde_json::json!(["hns"]), "{doc}");
    assert!(
        doc["actions"].as_array().is_some_and(|a| !a.is_empty()),
        "{doc}"
    );
}

/// `-q` keeps stdout for results to nothing but warnings and errors on stderr; `--color`
/// decides the colour whatever stderr is; a global flag a command would ignore is refused.
#[test]
fn quiet_color_and_a_dry_run_the_service_body_cannot_honour() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = on_node()
        .args(["-q", "render", "--output-dir"])
        .arg(dir.path().join("out"))
        .output()
        .expect("runs");
    assert!(out.status.success());
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(dir.path().join("out/10-calico.conf").is_file());

    let painted = |color: &str| {
        let out = crate::support::exits(
            cmd()
                .args(["--color", color, "config", "show", "--config"])
                .arg(dir.path().join("missing.yaml")),
            2,
        );
        String::from_utf8_lossy(&out.stderr).contains("\x1b[")
    };
    assert!(painted("always"));
    assert!(!painted("never"));
    assert!(!painted("auto"), "stderr is not a terminal here");

    let out = crate::support::exits(cmd().args(["service", "run", "node", "--dry-run"]), 2);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("service run has no --dry-run"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The completion scripts come from the command line's definition: bash's parses, and each
/// names the commands.
#[test]
fn completion_scripts_for_every_shell() {
    let script = |shell: &str| {
        let out = cmd().args(["completions", shell]).output().expect("runs");
        assert!(out.status.success(), "{shell}");
        String::from_utf8(out.stdout).expect("utf-8")
    };
    let ps = script("powershell");
    assert!(ps.contains("Register-ArgumentCompleter"), "{ps}");
    assert!(
        ps.contains("'reconfigure'") && ps.contains("--drain"),
        "powershell"
    );
    let bash = script("bash");
    let file = tempfile::NamedTempFile::new().expect("temp");
    fs_err::write(file.path(), &bash).expect("write");
    std::process::Command::new("bash")
        .arg("-n")
        .arg(file.path())
        .assert()
        .success();
    assert!(bash.contains("install") && bash.contains("--release-zip"));
    for shell in ["zsh", "fish"] {
        assert!(script(shell).contains("uninstall"), "{shell}");
    }
    let out = cmd().args(["completions", "tcsh"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
}

/// A flag a command lacks gets our tip: the setting it names as `--set`, or the commands that
/// have it (clap's nearest spelling offered `--log-file` for `--offline`).
#[test]
fn an_unknown_flag_points_at_the_setting_or_the_commands_that_have_it() {
    let out = crate::support::exits(cmd().args(["install", "--vni", "4097"]), 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--set vxlan.vni=4097"), "{err}");
    let out = cmd().args(["install", "--offline"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--offline is a flag of: preflight, status"),
        "{err}"
    );
    assert!(!err.contains("--log-file"), "{err}");
    let out = cmd()
        .args(["install", "--vni=4097", "-o", "json"])
        .output()
        .expect("runs");
    let doc = json(&out.stdout);
    assert_eq!(
        doc["error"]["hint"],
        "settings are given with --set: --set vxlan.vni=4097 (or in the config file)"
    );
}

/// `--calico-version` names a release: all three numbers.
#[test]
fn a_calico_version_without_its_patch_number_is_refused() {
    let out = crate::support::exits(
        cmd().args(["install", "--dry-run", "--calico-version", "3.30"]),
        2,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("names no release") && err.contains("3.30.0"),
        "{err}"
    );
}

/// A command that cannot skip the cluster is not told to: `--offline` is offered only as what
/// preflight, status and config show accept (fetch kubeconfig refuses it).
#[test]
fn fetch_without_a_kubeconfig_is_not_offered_offline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = crate::support::exits(
        on_node()
            .env("HOME", dir.path())
            .args(["fetch", "kubeconfig", "-o", "json", "--sim-host"])
            .arg(dir.path().join("host")),
        2,
    );
    let doc = json(&out.stdout);
    let hint = doc["error"]["hint"].as_str().expect("hint");
    assert!(
        hint.contains("--kubeconfig")
            && hint.contains("preflight, status and config show skip the cluster with --offline"),
        "{hint}"
    );
}

/// A dry run without an admin kubeconfig says that the install itself would stop
/// (`no-admin-kubeconfig`), on stderr and in the JSON document's warnings, as the missing
/// checksum is said, and after its plan exits as the install would: 2, with its error.
#[test]
fn a_dry_run_without_an_admin_kubeconfig_shows_its_plan_and_refuses_as_the_install_would() {
    let out = cmd()
        .args(["install", "--dry-run", "-o", "json"])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("error: install needs the cluster to get calico-node's kubeconfig"),
        "{stderr}"
    );
    assert!(stderr.contains("warning: no admin kubeconfig"), "{stderr}");
    let doc = json(&out.stdout);
    let warnings = doc["warnings"].to_string();
    assert!(warnings.contains("no-admin-kubeconfig"), "{doc}");
    assert!(warnings.contains("SHA-256"), "{doc}");
    // The plan's document holds the refusal, as the error document has it.
    assert!(doc["actions"].is_array(), "{doc}");
    assert_eq!(doc["error"]["kind"], "no-admin-kubeconfig", "{doc}");
    assert!(
        doc["error"]["message"].as_str().is_some_and(
            |m| m.starts_with("install needs the cluster to get calico-node's kubeconfig")
        ),
        "{doc}"
    );
    assert!(doc["error"]["hint"].is_string(), "{doc}");
    assert_eq!(doc["exit_code"], 2, "{doc}");
}

/// `status -o json` on a node where Calico is not installed has the keys an installed node's
/// document has for its verdict: `healthy`, `problems` and `findings`, the finding coded.
#[test]
fn status_json_has_findings_when_calico_is_not_installed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = crate::support::exits(
        cmd()
            .args(["status", "--offline", "-o", "json", "--sim-host"])
            .arg(dir.path().join("host")),
        1,
    );
    let doc = json(&out.stdout);
    assert_eq!(doc["installed"], false, "{doc}");
    let findings = doc["findings"].as_array().expect("findings");
    assert_eq!(findings.len(), 1, "{doc}");
    assert_eq!(findings[0]["code"], "not-installed", "{doc}");
    assert_eq!(doc["problems"][0], findings[0]["message"], "{doc}");
}

/// An empty `CALICOCTL_WIN_CONFIG` (a machine-wide variable cleared to nothing) is unset, as
/// an empty `KUBECONFIG` is to kubectl, not a `--config` given no value; one naming a file is
/// read.
#[test]
fn an_empty_config_variable_is_unset() {
    cmd()
        .env("CALICOCTL_WIN_CONFIG", "")
        .args(["config", "show", "-o", "json", "--offline"])
        .assert()
        .success();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("calico-windows.yaml");
    fs_err::write(&file, "vxlan:\n  vni: 4097\n").expect("write");
    let out = crate::support::exits(
        cmd().env("CALICOCTL_WIN_CONFIG", &file).args([
            "config",
            "show",
            "-o",
            "json",
            "--offline",
        ]),
        0,
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("4097"));
}

#[test]
fn verify_refuses_a_bad_egress_and_timeouts_a_leftover_sweep_could_outlast() {
    let bad: &[&[&str]] = &[
        &["--egress", "example.com"],
        &["--egress", "example.com:0"],
        &["--egress", "example.com:65536"],
        &["--egress", "http://example.com:80"],
        &["--egress", "a b:80"],
        &["--egress", "300.1.1.1:80"],
        &["--egress", "x-.example:80"],
        &["--egress", &"a".repeat(300)],
        &["--timeout", "11m"],
        &["--timeout", "0s"],
        &["--pull-timeout", "16m"],
        &["--cluster-domain", "Cluster Local"],
    ];
    for args in bad {
        let out = cmd().arg("verify").args(*args).output().expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        // Refused by the flag's own check, before anything else is looked at.
        assert!(stderr.contains("invalid value"), "{args:?}: {stderr}");
    }
    let out = cmd()
        .args(["verify", "--timeout", "1h"])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("longer than 10m") && stderr.contains("30m old"),
        "{stderr}"
    );
}
