//! The docs hold what they claim: every config.ps1 variable calicoctl-win reads is in the
//! migration table with its setting, and every YAML and JSON example parses.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs_err::read_dir(dir).expect("read docs") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            markdown_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

/// The Markdown pages the docs tests read: the README, CONTRIBUTING.md and all of docs/.
fn doc_files() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md"), root().join("CONTRIBUTING.md")];
    markdown_files(&root().join("docs"), &mut files);
    files
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
    let text = fs_err::read_to_string(root().join("docs/migrating.md")).expect("migrating.md");
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
    let files = doc_files();
    let mut checked = 0;
    let mut bad = Vec::new();
    for file in &files {
        let text = fs_err::read_to_string(file).expect("read");
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
        fs_err::read_to_string(root().join("docs/troubleshooting.md")).expect("troubleshooting");
    let ids: Vec<&str> = calicoctl_win::checks::host::IDS
        .iter()
        .chain(calicoctl_win::checks::cluster::IDS)
        .copied()
        .chain([calicoctl_win::checks::known_issues::ID])
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
    let text = fs_err::read_to_string(root().join("docs/errors.md")).expect("errors.md");
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

/// The exit codes docs/errors.md gives each kind are the ones the code uses for it
/// (`Kind::exits`, which a debug build checks every error against as it is made).
#[test]
fn every_error_kind_has_the_exit_codes_the_errors_page_says() {
    let text = fs_err::read_to_string(root().join("docs/errors.md")).expect("errors.md");
    let mut wrong = Vec::new();
    for kind in calicoctl_win::error::Kind::ALL {
        let name = kind.name();
        let Some(row) = text
            .lines()
            .find(|l| l.starts_with(&format!("| `{name}` |")))
        else {
            continue;
        };
        let documented: std::collections::BTreeSet<i32> = row
            .split('|')
            .nth(2)
            .unwrap_or_default()
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|n| n.parse().ok())
            .collect();
        let code: std::collections::BTreeSet<i32> =
            kind.exits().iter().map(|e| *e as i32).collect();
        if documented != code {
            wrong.push(format!("{name}: docs {documented:?}, code {code:?}"));
        }
    }
    assert!(wrong.is_empty(), "docs/errors.md: {wrong:#?}");
}

/// The subcommands a command line in the docs may start with.
fn subcommands() -> Vec<String> {
    use clap::CommandFactory;
    calicoctl_win::cli::Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_owned())
        .collect()
}

/// Every calicoctl-win command line the README, CONTRIBUTING.md and docs/ show: in code blocks,
/// a command that starts with `calicoctl-win` (`.exe`, or a path to it) or `cargo run --`, line
/// continuations (PowerShell's backtick, sh's backslash) joined; in inline code, a span that
/// starts with one of those or with a subcommand and names a flag. With the file and line.
fn documented_command_lines() -> Vec<(String, usize, String)> {
    let files = doc_files();
    let subs = subcommands();
    let mut out = Vec::new();
    for path in files {
        let text = fs_err::read_to_string(&path).expect("read");
        let name = path
            .strip_prefix(root())
            .expect("under root")
            .display()
            .to_string();
        let mut in_block = false;
        let mut joined = String::new();
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("```") {
                in_block = !in_block;
                continue;
            }
            if in_block {
                let t = line.trim_end();
                joined.push_str(t.trim_end_matches(['`', '\\']));
                joined.push(' ');
                if t.ends_with('`') || t.ends_with('\\') {
                    continue;
                }
                let whole = std::mem::take(&mut joined);
                for part in whole.split(['|', ';']) {
                    if let Some(rest) = command_of(part) {
                        out.push((name.clone(), n + 1, rest));
                    }
                }
                continue;
            }
            for (i, span) in line.split('`').enumerate() {
                if i % 2 == 0 {
                    continue;
                }
                let span = span.split(" | ").next().unwrap_or_default();
                let span = span.split(r" \| ").next().unwrap_or_default();
                let first = span.split_whitespace().next().unwrap_or_default();
                match command_of(span) {
                    Some(r) => out.push((name.clone(), n + 1, r)),
                    None if subs.iter().any(|s| s == first) && span.contains(" --") => {
                        out.push((name.clone(), n + 1, span.to_owned()))
                    }
                    None => {}
                }
            }
        }
    }
    out
}

/// The arguments of a command that starts with calicoctl-win (or a path to it, or
/// `cargo run --`); `None` for other text.
fn command_of(part: &str) -> Option<String> {
    let t = part.trim_start().trim_start_matches("& ");
    if let Some(rest) = t.strip_prefix("cargo run --") {
        return Some(rest.to_owned());
    }
    let first = t.split_whitespace().next()?;
    let program = first.rsplit(['\\', '/']).next()?;
    (program == "calicoctl-win" || program == "calicoctl-win.exe")
        .then(|| t[first.len()..].to_owned())
}

/// The words of a documented command line as a shell passes them: a `#` comment dropped,
/// `<placeholders>` as one word, a synopsis's `[optional]` brackets and `a|b` alternatives
/// read as their first, `...` dropped, quotes taken off.
fn words(line: &str) -> Vec<String> {
    let line = line.split(" #").next().unwrap_or_default();
    let mut flat = String::new();
    let (mut in_angle, mut in_suffix) = (false, false);
    for c in line.chars() {
        match c {
            '<' => {
                in_angle = true;
                flat.push('X');
            }
            '>' => in_angle = false,
            _ if in_angle => {}
            // `BUILD[.UBR]`: an optional part of one word.
            '[' if flat.ends_with(|p: char| !p.is_whitespace()) => in_suffix = true,
            ']' if in_suffix => in_suffix = false,
            _ if in_suffix => {}
            '[' | ']' => flat.push(' '),
            _ => flat.push(c),
        }
    }
    flat.split_whitespace()
        .map(|w| w.split('|').next().unwrap_or_default())
        .map(|w| w.trim_end_matches("...").trim_end_matches('…'))
        .map(|w| w.trim_matches(['"', '\'']).to_owned())
        .filter(|w| !w.is_empty() && !w.starts_with('$'))
        .collect()
}

/// Every command line in the docs names a subcommand and flags calicoctl-win has: parsed by
/// the binary's own argument parser, only an unknown flag or subcommand fails (a placeholder
/// value or a missing argument in an example is fine).
#[test]
fn every_command_line_in_the_docs_names_flags_that_exist() {
    use clap::Parser;
    let lines = documented_command_lines();
    assert!(lines.len() > 50, "{} command lines found", lines.len());
    let mut wrong = Vec::new();
    for (file, line, text) in &lines {
        let args = words(text);
        let argv = std::iter::once("calicoctl-win".to_owned()).chain(args.iter().cloned());
        if let Err(e) = calicoctl_win::cli::Cli::try_parse_from(argv) {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::UnknownArgument | ErrorKind::InvalidSubcommand
            ) {
                let why = e.to_string();
                let why = why.lines().next().unwrap_or_default().to_owned();
                wrong.push(format!("{file}:{line}: `{}`: {why}", args.join(" ")));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_command_line_with_a_flag_that_does_not_exist_is_found() {
    use clap::Parser;
    let argv = words(" install --kube-proxy PATH");
    let e = calicoctl_win::cli::Cli::try_parse_from(
        std::iter::once("calicoctl-win".to_owned()).chain(argv),
    )
    .expect_err("no such flag");
    assert_eq!(e.kind(), clap::error::ErrorKind::UnknownArgument);
}

/// Every simulated-host profile is in docs/simulated-host.md's table and in `--sim-profile`'s
/// help.
#[test]
fn every_sim_profile_is_documented_and_in_the_help() {
    use clap::CommandFactory;
    let page = fs_err::read_to_string(root().join("docs/simulated-host.md")).expect("page");
    let help = calicoctl_win::cli::Cli::command()
        .get_arguments()
        .find(|a| a.get_id() == "sim_profile")
        .and_then(|a| a.get_help().map(ToString::to_string))
        .expect("--sim-profile has help");
    let help_names: Vec<&str> = help
        .split([',', ' ', ':'])
        .filter(|w| w.starts_with("ws"))
        .collect();
    for (name, _) in calicoctl_win::host::sim::PROFILES {
        assert!(
            page.contains(&format!("| `{name}`")),
            "{name} is not in simulated-host.md"
        );
        assert!(
            help_names.contains(name),
            "{name} is not in --sim-profile's help: {help}"
        );
    }
}

/// Every source a setting can come from is in config-show.md's list of sources.
#[test]
fn every_config_source_is_in_config_show_docs() {
    use calicoctl_win::config::Source;
    // Adding a source makes this match fail to compile until the list below has it.
    let named = |s: &Source| match s {
        Source::Flag => "`flag`".to_owned(),
        Source::Env(_) => "`env NAME`".to_owned(),
        Source::File(_) => "`file:LINE`".to_owned(),
        Source::Host => "`host`".to_owned(),
        Source::Cluster => "`cluster`".to_owned(),
        Source::Default => "`default`".to_owned(),
    };
    let page = fs_err::read_to_string(root().join("docs/commands/config-show.md")).expect("page");
    let sources = page
        .split("Sources, highest precedence first:")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .expect("the list of sources");
    for s in [
        Source::Flag,
        Source::Env("X"),
        Source::File(1),
        Source::Host,
        Source::Cluster,
        Source::Default,
    ] {
        let name = named(&s);
        assert!(sources.contains(&name), "{name} is not in: {sources}");
    }
}

/// Every `SUBCOMMAND [SUB] --flag` the README, CONTRIBUTING.md and docs/ name in their prose,
/// tables and code: (file, line, subcommand path, flag).
fn flag_mentions() -> Vec<(String, usize, Vec<String>, String)> {
    use clap::CommandFactory;
    let cli = calicoctl_win::cli::Cli::command();
    let files = doc_files();
    let mut out = Vec::new();
    for path in files {
        let text = fs_err::read_to_string(&path).expect("read");
        let name = path
            .strip_prefix(root())
            .expect("under root")
            .display()
            .to_string();
        // A mention runs within one code span or stretch of prose, up to punctuation.
        let stretches = text.lines().enumerate().flat_map(|(n, line)| {
            line.split(['`', '(', ')', ',', ';', '|'])
                .map(move |s| (n, s))
                .collect::<Vec<_>>()
        });
        for (n, stretch) in stretches {
            let toks: Vec<&str> = stretch.split_whitespace().collect();
            // A subcommand's own subcommand (`fleet diags`) is no mention of the top-level
            // command of that name (`diags`).
            let mut taken = 0;
            for i in 0..toks.len() {
                if i < taken {
                    continue;
                }
                let Some(sub) = cli.find_subcommand(toks[i]) else {
                    continue;
                };
                let mut path = vec![toks[i].to_owned()];
                let mut j = i + 1;
                if let Some(t) = toks.get(j).filter(|t| sub.find_subcommand(t).is_some()) {
                    path.push((*t).to_owned());
                    j += 1;
                }
                // The flags right after it, each with at most one value.
                while let Some(t) = toks.get(j).filter(|t| t.starts_with("--") && t.len() > 2) {
                    let flag = t
                        .split('=')
                        .next()
                        .unwrap_or_default()
                        // A command quoted in prose ends with its quote: 'repair --dry-run'.
                        .trim_end_matches(['.', ':', '\'']);
                    out.push((name.clone(), n + 1, path.clone(), flag.to_owned()));
                    j += 1;
                    if toks.get(j).is_some_and(|v| !v.starts_with('-')) {
                        j += 1;
                    }
                }
                taken = j;
            }
        }
    }
    out
}

/// Every flag the docs name after a subcommand exists on it: `install --kube-proxy PATH`
/// in a setting's description was a flag install never had.
#[test]
fn every_flag_named_after_a_subcommand_exists() {
    use clap::CommandFactory;
    let mut cli = calicoctl_win::cli::Cli::command();
    cli.build();
    let mentions = flag_mentions();
    assert!(mentions.len() > 50, "{} mentions", mentions.len());
    let mut wrong = Vec::new();
    for (file, line, path, flag) in &mentions {
        let mut cmd = &cli;
        for p in path {
            cmd = cmd.find_subcommand(p).expect("found above");
        }
        let long = flag.trim_start_matches("--");
        let known = cmd
            .get_arguments()
            .chain(cli.get_arguments())
            .any(|a| a.get_long() == Some(long))
            || long == "help";
        if !known {
            wrong.push(format!("{file}:{line}: `{} {flag}`", path.join(" ")));
        }
    }
    assert!(
        wrong.is_empty(),
        "flags that do not exist:\n{}",
        wrong.join("\n")
    );
}

/// The paths of the object keys in a JSON value (`a.b`, `list[].id`).
fn key_paths(v: &serde_json::Value, at: &str, out: &mut std::collections::BTreeSet<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, w) in m {
                let p = if at.is_empty() {
                    k.clone()
                } else {
                    format!("{at}/{k}")
                };
                out.insert(p.clone());
                key_paths(w, &p, out);
            }
        }
        serde_json::Value::Array(a) => {
            for w in a {
                key_paths(w, &format!("{at}[]"), out);
            }
        }
        _ => {}
    }
}

/// The JSON examples of a command's page name only fields the command prints: each page's
/// first `json` block against the command's own `-o json` output on a simulated host.
#[test]
fn json_examples_name_fields_the_commands_print() {
    let cases: &[(&str, &[&str])] = &[
        ("docs/commands/config-show.md", &["config", "show"]),
        ("docs/commands/preflight.md", &["preflight", "--offline"]),
        (
            "docs/commands/lint.md",
            &["lint", "policies", "--from-file", "tests/lint-seed"],
        ),
        // A usage error: the error document of every failure.
        ("docs/errors.md", &["install", "--vni", "4097"]),
    ];
    for (page, args) in cases {
        let text = fs_err::read_to_string(root().join(page)).expect("page");
        let (_, example, _) = code_blocks(&text)
            .into_iter()
            .find(|(lang, _, _)| lang == "json")
            .unwrap_or_else(|| panic!("{page} has no json example"));
        let example: serde_json::Value = serde_json::from_str(&example).expect("example");
        let out = assert_cmd::Command::cargo_bin("calicoctl-win")
            .expect("binary")
            .env_clear()
            .args(["--set", "node.name=win-1", "-o", "json"])
            .args(*args)
            .output()
            .expect("runs");
        let real: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{page}: {args:?} printed no JSON: {e}"));
        let (mut documented, mut printed) = Default::default();
        key_paths(&example, "", &mut documented);
        key_paths(&real, "", &mut printed);
        let missing: Vec<&String> = documented.difference(&printed).collect();
        assert!(
            missing.is_empty(),
            "{page} names fields `{}` does not print: {missing:?}",
            args.join(" ")
        );
    }
}

/// Every `--flag` a command's help names exists on that command (or is global), and a flag
/// named with an upper-case placeholder (`--out-file FILE`) takes a value of that name:
/// `config import-ps1 --help` said "writes --output FILE", and `--output` is the output format.
#[test]
fn every_flag_a_help_text_names_exists_with_its_value() {
    use clap::CommandFactory;
    let mut cli = calicoctl_win::cli::Cli::command();
    cli.build();
    let mut wrong = Vec::new();
    fn walk(c: &clap::Command, root: &clap::Command, path: &str, wrong: &mut Vec<String>) {
        let mut texts: Vec<String> = [c.get_about(), c.get_long_about()]
            .into_iter()
            .flatten()
            .map(ToString::to_string)
            .collect();
        texts.extend(
            c.get_arguments()
                .filter_map(|a| a.get_long_help().or(a.get_help()))
                .map(ToString::to_string),
        );
        for text in texts {
            let words: Vec<&str> = text
                .split(|ch: char| ch.is_whitespace() || "(),;'`".contains(ch))
                .filter(|w| !w.is_empty())
                .collect();
            for (i, w) in words.iter().enumerate() {
                let Some(long) = w
                    .strip_prefix("--")
                    .map(|l| l.split('=').next().unwrap_or(l))
                else {
                    continue;
                };
                let long = long.trim_end_matches(['.', ':']);
                if long.is_empty() || long == "help" {
                    continue;
                }
                let arg = c
                    .get_arguments()
                    .chain(root.get_arguments())
                    .find(|a| a.get_long() == Some(long));
                let Some(arg) = arg else {
                    // Another command's flag (a help may name the command a job runs), or
                    // another program's: kube-proxy's and kube-apiserver's.
                    const OTHERS: &[&str] = &["source-vip", "service-account-max-token-expiration"];
                    if !has_flag(root, long) && !OTHERS.contains(&long) {
                        wrong.push(format!("{path}: --{long} does not exist"));
                    }
                    continue;
                };
                let next = words.get(i + 1).copied().unwrap_or_default();
                // A placeholder of the kinds value names use.
                const KINDS: &[&str] = &[
                    "FILE", "DIR", "PATH", "URL", "DURATION", "NAME", "HEX", "VERSION", "SIZE", "N",
                ];
                if KINDS.contains(&next) {
                    let names: Vec<String> = arg
                        .get_value_names()
                        .into_iter()
                        .flatten()
                        .map(ToString::to_string)
                        .collect();
                    let same = |n: &String| {
                        n.split('|')
                            .any(|k| k == next || (k == "PATH" && next == "FILE"))
                    };
                    if !names.iter().any(same) {
                        wrong.push(format!(
                            "{path}: --{long} {next}, but --{long} takes {names:?}"
                        ));
                    }
                }
            }
        }
        for s in c.get_subcommands().filter(|s| s.get_name() != "help") {
            walk(s, root, &format!("{path} {}", s.get_name()), wrong);
        }
    }
    fn has_flag(c: &clap::Command, long: &str) -> bool {
        c.get_arguments().any(|a| a.get_long() == Some(long))
            || c.get_subcommands().any(|s| has_flag(s, long))
    }
    walk(&cli, &cli, "calicoctl-win", &mut wrong);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The README's main job (`cargo run -- install --dry-run`) does what the README says of it: a
/// warning that the download needs `--sha256`, the plan's lines saying what needs the admin
/// kubeconfig (once it claimed a warning about the admin kubeconfig, and printed none), and
/// the real install's refusal at the end.
#[test]
fn the_readmes_dry_run_says_what_the_readme_says() {
    let readme = fs_err::read_to_string(root().join("README.md")).expect("README");
    let flat = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(
            "a warning says that the download needs `--sha256`, and the plan's lines say what needs the admin kubeconfig; it then exits 2 (`no-admin-kubeconfig`) as a real install without one does"
        ),
        "the README's description of the dry run changed: check it against the run"
    );
    let out = assert_cmd::Command::cargo_bin("calicoctl-win")
        .expect("binary")
        .env_clear()
        .args(["install", "--dry-run"])
        .output()
        .expect("runs");
    // The plan, then the refusal the install without an admin kubeconfig gives.
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stderr.contains("no admin kubeconfig"), "{stderr}");
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("warning:") && l.contains("--sha256")),
        "{stderr}"
    );
    assert!(stdout.contains("needs the admin kubeconfig"), "{stdout}");
}

/// docs/configuration.md lists every key of the services' environment files, in
/// `layout::env::ALL`'s order, and nothing else.
#[test]
fn every_environment_key_is_in_the_configuration_page() {
    let text = fs_err::read_to_string(root().join("docs/configuration.md")).expect("page");
    let table = text
        .split("<!-- env:start -->")
        .nth(1)
        .and_then(|t| t.split("<!-- env:end -->").next())
        .expect("the env table's markers");
    let listed: Vec<&str> = table
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once('`').map(|(k, _)| k))
        .collect();
    assert_eq!(listed, calicoctl_win::layout::env::ALL);
}

/// The source a name in backticks points at, or why it points nowhere: `health/judge.rs`
/// (a path from the repository's root, or under `src/`) must exist; `health::judge::vni`
/// (a module path whose first segment is a room of `src/`) must name modules that exist, and
/// what follows the last module must be defined in its file (an item, a field, a variant) or
/// re-exported there (`pub use`). Names of other crates
/// (`std::`, `kube::`) and paths with placeholders are left alone.
fn stale_reference(name: &str) -> Option<String> {
    let src = root().join("src");
    if name.contains('<') || name.contains('*') || name.contains(' ') {
        return None;
    }
    if let Some((first, _)) = name.split_once("::") {
        let first_is_room = src.join(format!("{first}.rs")).is_file() || src.join(first).is_dir();
        if !first_is_room
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
        {
            return None;
        }
        let mut at = src.clone();
        let mut file: Option<PathBuf> = None;
        let mut rest = Vec::new();
        for seg in name.split("::") {
            if !rest.is_empty() {
                rest.push(seg);
                continue;
            }
            let as_file = at.join(format!("{seg}.rs"));
            let as_dir = at.join(seg);
            if as_file.is_file() {
                file = Some(as_file);
                at = as_dir;
            } else if as_dir.join("mod.rs").is_file() {
                file = Some(as_dir.join("mod.rs"));
                at = as_dir;
            } else {
                rest.push(seg);
            }
        }
        let file = file?;
        let text = fs_err::read_to_string(&file).unwrap_or_default();
        let missing: Vec<&&str> = rest
            .iter()
            .filter(|item| {
                // Defined there (an item, a field or a variant), or re-exported (`pub use`).
                let item = regex::escape(item);
                let defined = regex::Regex::new(&format!(
                    r"(?m)\b(fn|struct|enum|const|static|mod|type|trait)\s+{item}\b|\bpub use [^;]*\b{item}\b|^\s*(pub(\([a-z]+\))? )?{item}\s*[:,({{]"
                ))
                .expect("regex");
                !defined.is_match(&text)
            })
            .collect();
        return (!missing.is_empty())
            .then(|| format!("{name}: {} has no {missing:?}", file.display()));
    }
    let looks_like_source = name.ends_with(".rs")
        || ["src/", "tests/", "tools/", "scripts/", "benches/", "fuzz/"]
            .iter()
            .any(|p| name.starts_with(p));
    if !looks_like_source || name.contains("::") {
        return None;
    }
    let path = name.split(':').next().unwrap_or(name);
    let found = root().join(path).exists() || src.join(path).exists();
    (!found).then(|| format!("{name}: no such file"))
}

/// Every source file and module path the docs, the README and CONTRIBUTING.md name in backticks
/// exists, and every item they name after a module is in it: a renamed or moved module fails
/// here.
#[test]
fn the_docs_name_todays_modules_and_files() {
    let files = doc_files();
    let tick = regex::Regex::new(r"`([^`\n]+)`").expect("regex");
    let mut stale = Vec::new();
    for f in &files {
        let text = fs_err::read_to_string(f).expect("read");
        for (n, line) in text.lines().enumerate() {
            for c in tick.captures_iter(line) {
                if let Some(why) = stale_reference(&c[1]) {
                    stale.push(format!("{}:{}: {why}", f.display(), n + 1));
                }
            }
        }
    }
    assert!(
        stale.is_empty(),
        "stale names in the docs:\n{}",
        stale.join("\n")
    );
}

#[test]
fn a_stale_module_or_file_name_is_found() {
    assert_eq!(stale_reference("health::api_group::judge"), None);
    assert_eq!(stale_reference("layout::env::EnvVars"), None);
    assert_eq!(stale_reference("src/health/judge/mod.rs"), None);
    assert_eq!(stale_reference("std::fs::rename"), None);
    assert!(
        stale_reference("supervise::renew::keep_refused").is_some(),
        "moved to installed::token_records"
    );
    assert_eq!(stale_reference("installed::token_records::refused"), None);
    assert!(
        stale_reference("installed::nowhere").is_some(),
        "no item of installed/mod.rs"
    );
    assert!(stale_reference("checks::host::weak_dirs").is_some());
    assert!(stale_reference("src/plan/exec.rs").is_some());
}

/// The README's command table fits on one screen: one row a command (at most 30 rows), each
/// saying what the command does in at most 15 words and linking to its page.
#[test]
fn the_readmes_command_table_fits_on_one_screen() {
    let text = fs_err::read_to_string(root().join("README.md")).expect("README");
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("| command | what it does |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert!(
        (10..=30).contains(&rows.len()),
        "{} rows: {rows:#?}",
        rows.len()
    );
    for row in rows {
        let cells: Vec<&str> = row.split('|').collect();
        let (command, said) = (cells[1], cells[2]);
        assert!(command.contains("](docs/"), "no link to its page: {row}");
        let words = said.split_whitespace().count();
        assert!(words <= 15, "{words} words: {row}");
    }
}
