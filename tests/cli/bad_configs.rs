//! A corpus of bad configurations: each must exit 2 and name the offending key.
//! Each file starts with `# key: KEY` (`-` for a file-level problem), and may add
//! `# env: NAME=VALUE`, `# set: KEY=VALUE` and `# line: N` (the line the problem is reported at).

use crate::support::{cmd, json, root};

struct Case {
    name: String,
    path: std::path::PathBuf,
    key: String,
    env: Vec<(String, String)>,
    sets: Vec<String>,
    line: Option<String>,
}

fn cases() -> Vec<Case> {
    let mut cases: Vec<Case> = fs_err::read_dir(root().join("tests/bad-configs"))
        .expect("corpus dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .map(|path| {
            let text = fs_err::read_to_string(&path).expect("read case");
            let header = |tag: &str| -> Vec<String> {
                text.lines()
                    .filter_map(|l| l.strip_prefix(&format!("# {tag}: ")))
                    .map(str::to_owned)
                    .collect()
            };
            Case {
                name: path
                    .file_name()
                    .expect("name")
                    .to_string_lossy()
                    .into_owned(),
                key: header("key")
                    .pop()
                    .unwrap_or_else(|| panic!("{} has no '# key:' line", path.display())),
                env: header("env")
                    .iter()
                    .map(|e| {
                        let (k, v) = e.split_once('=').expect("NAME=VALUE");
                        (k.to_owned(), v.to_owned())
                    })
                    .collect(),
                sets: header("set"),
                line: header("line").pop(),
                path,
            }
        })
        .collect();
    cases.sort_by(|a, b| a.name.cmp(&b.name));
    cases
}

#[test]
fn the_corpus_has_at_least_25_cases() {
    assert!(cases().len() >= 25, "{}", cases().len());
}

#[test]
fn every_bad_config_exits_2_and_names_its_key() {
    for case in cases() {
        let mut c = cmd();
        c.arg("--config").arg(&case.path).args(["-o", "json"]);
        for s in &case.sets {
            c.args(["--set", s]);
        }
        c.envs(case.env.iter().map(|(k, v)| (k, v)));
        let out = c.args(["config", "show"]).output().expect("runs");
        assert_eq!(
            out.status.code(),
            Some(2),
            "{}: exit code; stderr: {}",
            case.name,
            String::from_utf8_lossy(&out.stderr)
        );

        let doc = json(&out.stdout);
        let problems = doc["error"]["problems"]
            .as_array()
            .unwrap_or_else(|| panic!("{}: no problems in {doc}", case.name));
        let want_key = (case.key != "-").then_some(case.key.as_str());
        let matching: Vec<_> = problems
            .iter()
            .filter(|p| p["key"].as_str() == want_key)
            .collect();
        assert!(
            !matching.is_empty(),
            "{}: no problem names {:?}: {doc}",
            case.name,
            case.key
        );
        if let Some(line) = &case.line {
            assert!(
                matching
                    .iter()
                    .any(|p| p["source"] == format!("file:{line}")),
                "{}: line {line}: {doc}",
                case.name
            );
        }

        // The text rendering names the key too, with the error/hint layout.
        let stderr = String::from_utf8_lossy(&out.stderr);
        // A note about the simulated host may come first.
        let stderr: String = stderr
            .lines()
            .skip_while(|l| l.starts_with("note: "))
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(stderr.starts_with("error: "), "{}: {stderr}", case.name);
        assert!(stderr.contains("hint: "), "{}: {stderr}", case.name);
        if let Some(k) = want_key {
            assert!(stderr.contains(k), "{}: {stderr}", case.name);
        }
    }
}

/// A path on a drive that is not fixed (here a network share mapped to Z:, as
/// GetDriveTypeW reports DRIVE_REMOTE) is refused naming the key and what the drive is.
#[test]
fn a_path_on_a_network_drive_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sim = dir.path().join("host");
    let made = cmd()
        .args(["preflight", "--offline", "--sim-host"])
        .arg(&sim)
        .output()
        .expect("create host");
    assert!(sim.join("state.json").is_file(), "{made:?}");
    let state = sim.join("state.json");
    let mut doc: serde_json::Value =
        serde_json::from_str(&fs_err::read_to_string(&state).expect("state")).expect("json");
    doc["system"]["drives"]["Z"] = serde_json::json!("remote");
    fs_err::write(&state, doc.to_string()).expect("write state");
    let out = cmd()
        .args([
            "config",
            "show",
            "-o",
            "json",
            "--set",
            r"logs.dir=Z:\logs",
            "--sim-host",
        ])
        .arg(&sim)
        .assert()
        .code(2)
        .get_output()
        .clone();
    let doc = json(&out.stdout);
    let problem = &doc["error"]["problems"][0];
    assert_eq!(problem["key"], "logs.dir", "{doc}");
    assert!(
        problem["message"]
            .as_str()
            .is_some_and(|m| m.contains("Z: is a network drive")),
        "{doc}"
    );
    // On C:, the same setting is accepted.
    cmd()
        .args(["config", "show", "--set", r"logs.dir=C:\logs", "--sim-host"])
        .arg(&sim)
        .assert()
        .success();
}

/// A file of two YAML documents is said in the file's words, not the YAML library's (which
/// advised its own functions for several documents).
#[test]
fn two_yaml_documents_are_said_as_such() {
    let out = cmd()
        .arg("--config")
        .arg(root().join("tests/bad-configs/53-two-yaml-documents.yaml"))
        .args(["-o", "json", "config", "show"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let doc = json(&out.stdout);
    let said = doc["error"]["problems"].to_string();
    assert!(said.contains("one YAML document expected"), "{said}");
    assert!(!said.contains("from_str_multiple"), "{said}");
}
