//! The docs hold what they claim: every config.ps1 variable calicoctl-win reads is in the
//! migration table with its setting, and every YAML and JSON example parses.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read docs") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            markdown_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

/// The fenced code blocks of a Markdown text: (language, body, line of the fence).
fn code_blocks(text: &str) -> Vec<(String, String, usize)> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, String, usize)> = None;
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix("```") {
            match open.take() {
                Some(block) => blocks.push(block),
                None => open = Some((rest.trim().to_owned(), String::new(), n + 1)),
            }
        } else if let Some((_, body, _)) = open.as_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    blocks
}

#[test]
fn every_config_ps1_variable_is_in_the_migration_table() {
    let text = std::fs::read_to_string(root().join("docs/migrating.md")).expect("migrating.md");
    let mut missing = Vec::new();
    let mut count = 0;
    for spec in calicoctl_win::config::spec::SETTINGS {
        let Some(variable) = spec.ps1 else {
            continue;
        };
        count += 1;
        let row = format!("| `{variable}` | `{}` |", spec.key);
        if !text.contains(&row) {
            missing.push(row);
        }
    }
    assert!(
        count > 20,
        "only {count} settings have a config.ps1 variable"
    );
    assert!(
        missing.is_empty(),
        "docs/migrating.md lacks these rows:\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_yaml_and_json_example_in_the_docs_parses() {
    let mut files = vec![root().join("README.md")];
    markdown_files(&root().join("docs"), &mut files);
    let mut checked = 0;
    let mut bad = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read");
        for (lang, body, line) in code_blocks(&text) {
            let parsed = match lang.as_str() {
                "yaml" | "yml" => serde_saphyr::from_str::<serde_json::Value>(&body)
                    .map(drop)
                    .map_err(|e| e.to_string()),
                "json" => serde_json::from_str::<serde_json::Value>(&body)
                    .map(drop)
                    .map_err(|e| e.to_string()),
                _ => continue,
            };
            checked += 1;
            if let Err(e) = parsed {
                bad.push(format!("{}:{line} ({lang}): {e}", file.display()));
            }
        }
    }
    assert!(checked >= 4, "only {checked} examples found");
    assert!(
        bad.is_empty(),
        "examples that do not parse:\n{}",
        bad.join("\n")
    );
}

#[test]
fn code_blocks_are_found_with_their_language() {
    let blocks = code_blocks("text\n```yaml\na: 1\n```\n\n  ```json\n  {}\n  ```\n");
    assert_eq!(blocks.len(), 2);
    assert_eq!(blocks[0].0, "yaml");
    assert_eq!(blocks[0].1, "a: 1\n");
    assert_eq!(blocks[1].0, "json");
}

#[test]
fn every_check_id_is_in_the_troubleshooting_table() {
    let text =
        std::fs::read_to_string(root().join("docs/troubleshooting.md")).expect("troubleshooting");
    let ids: Vec<&str> = calicoctl_win::checks::host::IDS
        .iter()
        .chain(calicoctl_win::checks::cluster::IDS)
        .copied()
        .collect();
    assert!(ids.len() > 15, "{ids:?}");
    let missing: Vec<&&str> = ids
        .iter()
        .filter(|id| !text.contains(&format!("| `{id}` |")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/troubleshooting.md has no row for {missing:?}"
    );
}

#[test]
fn every_error_kind_is_in_the_errors_page() {
    let text = std::fs::read_to_string(root().join("docs/errors.md")).expect("errors.md");
    let missing: Vec<String> = calicoctl_win::error::Kind::ALL
        .iter()
        .map(|k| k.name())
        .filter(|name| !text.contains(&format!("| `{name}` |")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/errors.md has no row for {missing:?}"
    );
    assert_eq!(calicoctl_win::error::Kind::NeedsDrain.name(), "needs-drain");
}
