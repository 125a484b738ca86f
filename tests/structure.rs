//! The layering of docs/architecture.md, checked: no source file imports (through `crate::`
//! or `super::` paths) a file that imports it back, directly or through others. Test modules
//! are left out: a test may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// `src/apply/exec.rs` -> `apply::exec`, `src/plan/mod.rs` -> `plan`.
fn module_of(rel: &str) -> String {
    let p = rel.trim_end_matches(".rs");
    let p = p.strip_suffix("/mod").unwrap_or(p);
    p.replace('/', "::")
}

/// A file's code without its inline test module (`#[cfg(test)] mod tests {`, any name), which
/// is test code and ends the file.
fn without_inline_tests(text: &str) -> &str {
    let inline_tests = regex::Regex::new(r"#\[cfg\(test\)\]\s*mod [a-z_0-9]+ \{").expect("regex");
    inline_tests.find(text).map_or(text, |m| &text[..m.start()])
}

fn sources(dir: &Path, root: &Path, out: &mut BTreeMap<String, String>) {
    for entry in fs_err::read_dir(dir).expect("read src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            sources(&path, root, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path
                .strip_prefix(root)
                .expect("under src")
                .to_string_lossy()
                .replace('\\', "/");
            if rel == "lib.rs" || rel == "main.rs" {
                continue;
            }
            let module = module_of(&rel);
            let is_test = module
                .split("::")
                .any(|s| s == "tests" || s.ends_with("_tests"));
            if !is_test {
                let text = fs_err::read_to_string(&path).expect("read source");
                let code = without_inline_tests(&text);
                out.insert(module, code.to_owned());
            }
        }
    }
}

/// The module a path names: its longest prefix that is a module.
fn resolve(segments: &[&str], modules: &BTreeSet<String>) -> Option<String> {
    (1..=segments.len())
        .rev()
        .map(|n| segments[..n].join("::"))
        .find(|m| modules.contains(m))
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = BTreeMap::new();
    sources(&root, &root, &mut files);
    let mut modules: BTreeSet<String> = files.keys().cloned().collect();
    // Modules whose files are left out (test modules) still resolve, to nothing.
    modules.insert(String::new());
    // Every path form: `crate::a::b::f`, `super::{A, b}`, `super::Type::X`, `self::c::*`; the
    // module is the longest prefix of lower-case segments that names one.
    let path = regex::Regex::new(r"\b(crate|super|self)((?:::[a-z_][a-z0-9_]*)*)(::[A-Z{*])?")
        .expect("regex");
    // A module's own children by their bare names (`install::run` in commands/mod.rs).
    let child_decl = regex::Regex::new(r"(?m)^\s*(?:pub(?:\([a-z]+\))? )?mod ([a-z_][a-z0-9_]*);")
        .expect("regex");
    let bare = regex::Regex::new(r"(?:^|[^:\w])([a-z_][a-z0-9_]*)((?:::[a-z_][a-z0-9_]*)+)")
        .expect("regex");
    let mut edges = BTreeMap::new();
    for (module, code) in &files {
        let parent: Vec<&str> = module.split("::").collect();
        let parent = &parent[..parent.len() - 1];
        let mut deps = BTreeSet::new();
        for c in path.captures_iter(code) {
            if c[2].is_empty() && c.get(3).is_none() {
                continue;
            }
            let tail: Vec<&str> = c[2]
                .trim_start_matches("::")
                .split("::")
                .filter(|t| !t.is_empty())
                .collect();
            let here: Vec<&str> = module.split("::").collect();
            let segments: Vec<&str> = match &c[1] {
                "crate" => tail,
                "self" => here.iter().copied().chain(tail).collect(),
                _ => parent.iter().copied().chain(tail).collect(),
            };
            if let Some(m) = resolve(&segments, &modules)
                && m != *module
                && files.contains_key(&m)
            {
                deps.insert(m);
            }
        }
        let children: BTreeSet<&str> = child_decl
            .captures_iter(code)
            .filter_map(|c| c.get(1).map(|m| m.as_str()))
            .collect();
        for c in bare.captures_iter(code) {
            if !children.contains(&c[1]) {
                continue;
            }
            let tail = c[2].trim_start_matches("::").split("::");
            let segments: Vec<&str> = module
                .split("::")
                .chain(std::iter::once(&c[1]))
                .chain(tail)
                .collect();
            if let Some(m) = resolve(&segments, &modules)
                && m != *module
                && files.contains_key(&m)
            {
                deps.insert(m);
            }
        }
        edges.insert(module.clone(), deps);
    }
    edges
}

/// A path of imports from `from` back to `to`, if there is one.
fn path_back(
    edges: &BTreeMap<String, BTreeSet<String>>,
    from: &str,
    to: &str,
) -> Option<Vec<String>> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![vec![from.to_owned()]];
    while let Some(route) = stack.pop() {
        let last = route.last().expect("non-empty").clone();
        if last == to {
            return Some(route);
        }
        if !seen.insert(last.clone()) {
            continue;
        }
        for next in edges.get(&last).into_iter().flatten() {
            let mut longer = route.clone();
            longer.push(next.clone());
            stack.push(longer);
        }
    }
    None
}

#[test]
fn no_source_file_imports_one_that_imports_it_back() {
    let edges = graph();
    assert!(
        edges.len() > 50,
        "the source files were not found: {edges:?}"
    );
    assert!(
        edges["commands::install"].contains("plan::install"),
        "imports are not read: {:?}",
        edges["commands::install"]
    );
    assert!(
        edges["commands"].contains("commands::install"),
        "a parent's bare paths to its children are not read: {:?}",
        edges["commands"]
    );
    // A parent and its child count as any two files: a child that needs its parent's types
    // imports them from a sibling file of their own (config/model.rs, release/error.rs).
    let mut circles = Vec::new();
    for (module, deps) in &edges {
        for dep in deps {
            if let Some(back) = path_back(&edges, dep, module) {
                circles.push(format!("{module} -> {}", back.join(" -> ")));
            }
        }
    }
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}

#[test]
fn a_circle_is_found_when_there_is_one() {
    let edges: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec!["a"]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.into_iter().map(str::to_owned).collect()))
    .collect();
    assert_eq!(
        path_back(&edges, "b", "a"),
        Some(vec!["b".into(), "c".into(), "a".into()])
    );
    assert_eq!(path_back(&edges, "a", "d"), None);
}

/// The functions of the non-test sources longer than `LIMIT` lines, with their lengths:
/// `module::function` -> lines (from the `fn` line to its closing brace at the same indent).
fn long_functions(limit: usize) -> BTreeMap<String, usize> {
    let mut modules = BTreeMap::new();
    sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut modules,
    );
    // The binary's own file counts too (the import graph leaves it out).
    let main = fs_err::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/main.rs"))
        .expect("read main.rs");
    modules.insert("main".to_owned(), main);
    let mut out = BTreeMap::new();
    for (module, code) in &modules {
        // The host contract suite is test code (compiled for tests only).
        if module == "host::contract" {
            continue;
        }
        // Test code after a `#[cfg(test)]` item is not counted.
        let code = code.split("#[cfg(test)]").next().unwrap_or_default();
        let lines: Vec<&str> = code.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            let line = lines[i];
            let trimmed = line.trim_start();
            let indent = line.len() - trimmed.len();
            let name = ["pub fn ", "pub(crate) fn ", "pub(super) fn ", "fn "]
                .iter()
                .find_map(|p| trimmed.strip_prefix(p))
                .and_then(|rest| rest.split(['(', '<']).next())
                .filter(|_| !line.trim_end().ends_with(';'));
            if let Some(name) = name {
                let close = " ".repeat(indent) + "}";
                let end = (i + 1..lines.len())
                    .find(|&j| {
                        lines[j].starts_with(&close)
                            && lines[j].len() - lines[j].trim_start().len() == indent
                    })
                    .unwrap_or(i);
                let len = end - i + 1;
                if len > limit {
                    out.insert(format!("{module}::{name}"), len);
                }
                i = end;
            }
            i += 1;
        }
    }
    out
}

/// No function over 80 lines (docs/architecture.md): a longer one is split by concept into
/// functions that each do one thing, so a command reads as its recipe.
#[test]
fn no_function_is_longer_than_80_lines() {
    const LIMIT: usize = 80;
    let found = long_functions(LIMIT);
    assert!(
        found.is_empty(),
        "split these by concept (limit {LIMIT} lines): {found:#?}"
    );
}

/// The rooms of docs/architecture.md from the bottom up: a file may import its own room and
/// rooms of a lower rank, never a higher one (an import that climbs fails). Written from the
/// code; the host contract suite is test code and left out.
const RANKS: &[(&str, u32)] = &[
    ("error", 0),
    ("layout", 0),
    ("selector", 0),
    ("redact", 0),
    ("duration", 0),
    ("k8s_name", 0),
    ("http1", 0),
    ("files", 1),
    ("release", 2),
    ("host", 3),
    ("net", 4),
    ("config", 4),
    ("output", 5),
    ("render", 5),
    ("cluster", 6),
    ("fleet", 7),
    ("installed", 8),
    ("context", 9),
    ("apply", 10),
    ("checks", 11),
    ("verify", 11),
    ("health", 11),
    ("supervise", 12),
    ("plan", 12),
    ("policy", 12),
    ("cli", 13),
    ("commands", 14),
];

/// `status` gathers nothing itself: it reads the config and the cluster, takes the desired
/// state from `plan/` and prints the survey (`health::survey`), which asks calico-node's token,
/// reads the host lock and settles a detached run's result, and judges the node.
#[test]
fn status_gathers_nothing_itself() {
    let edges = graph();
    let status = &edges["commands::status"];
    assert!(
        status.contains("health"),
        "imports are not read: {status:?}"
    );
    let gathering = [
        "host::lock",
        "commands::detach",
        "apply::detached",
        "cluster::token_check",
        "installed::endpoints",
        "health::judge",
    ];
    let found: Vec<&String> = status
        .iter()
        .filter(|m| gathering.contains(&m.as_str()))
        .collect();
    assert!(found.is_empty(), "status gathers these itself: {found:?}");
}

fn rank(module: &str) -> Option<u32> {
    let room = module.split("::").next().unwrap_or_default();
    RANKS.iter().find(|(r, _)| *r == room).map(|(_, n)| *n)
}

/// The imports that climb: `from -> to` where `to`'s room ranks above `from`'s.
fn climbing(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut out = Vec::new();
    for (from, deps) in edges {
        for to in deps {
            match (rank(from), rank(to)) {
                (Some(a), Some(b)) if b > a => out.push(format!("{from} -> {to}")),
                (None, _) => out.push(format!("{from} is in no room of RANKS")),
                (_, None) => out.push(format!("{to} is in no room of RANKS")),
                _ => {}
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn no_import_climbs_to_a_higher_room() {
    let edges = graph();
    let up = climbing(&edges);
    assert!(up.is_empty(), "imports that climb:\n{}", up.join("\n"));
}

#[test]
fn a_climbing_import_is_found_when_there_is_one() {
    let edges: BTreeMap<String, BTreeSet<String>> = [
        ("host::sim", vec!["supervise::node"]),
        ("plan::install", vec!["host", "layout"]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.into_iter().map(str::to_owned).collect()))
    .collect();
    assert_eq!(climbing(&edges), ["host::sim -> supervise::node"]);
}

/// The error types that implement `Diagnose` in `sources` but are missing from the
/// `KNOWN_ERRORS` text: such an error would quietly become exit 1 with no hint.
fn unlisted(sources: &BTreeMap<String, String>, known: &str) -> Vec<String> {
    let diagnose =
        regex::Regex::new(r"impl (?:crate::error::)?Diagnose for ([A-Za-z_][A-Za-z0-9_]*)")
            .expect("regex");
    let mut out: Vec<String> = sources
        .values()
        .flat_map(|code| diagnose.captures_iter(code).map(|c| c[1].to_owned()))
        .filter(|name| !known.contains(&format!("::{name}>")))
        .collect();
    out.sort();
    out.dedup();
    out
}

#[test]
fn every_error_that_diagnoses_itself_is_a_known_error() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = BTreeMap::new();
    sources(&root, &root, &mut files);
    let commands = &files["commands::known_errors"];
    let at = commands.find("const KNOWN_ERRORS").expect("KNOWN_ERRORS");
    let known = &commands[at..at + commands[at..].find("];").expect("end of the list")];
    assert!(
        known.contains("::ConfigError>"),
        "KNOWN_ERRORS is not read: {known}"
    );
    let missing = unlisted(&files, known);
    assert!(
        missing.is_empty(),
        "add these to KNOWN_ERRORS in src/commands/known_errors.rs: {missing:?}"
    );
    // And one that is not listed is found.
    let planted = BTreeMap::from([(
        "x".to_owned(),
        "impl crate::error::Diagnose for NewError {}".to_owned(),
    )]);
    assert_eq!(unlisted(&planted, known), ["NewError"]);
}

/// docs/architecture.md's table of ranks says what `RANKS` says: every room at its rank.
#[test]
fn the_documented_ranks_are_the_checked_ones() {
    let doc =
        fs_err::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md"))
            .expect("docs/architecture.md");
    let row = regex::Regex::new(r"(?m)^\| (\d+) \| (.+) \|$").expect("regex");
    let room = regex::Regex::new(r"`([a-z0-9_]+)`").expect("regex");
    let mut documented: Vec<(String, u32)> = row
        .captures_iter(&doc)
        .flat_map(|c| {
            let rank: u32 = c[1].parse().expect("rank");
            room.captures_iter(&c[2])
                .map(|r| (r[1].to_owned(), rank))
                .collect::<Vec<_>>()
        })
        .collect();
    documented.sort();
    let mut checked: Vec<(String, u32)> =
        RANKS.iter().map(|(r, n)| ((*r).to_owned(), *n)).collect();
    checked.sort();
    assert_eq!(
        documented, checked,
        "docs/architecture.md's rank table and RANKS differ"
    );
}

/// Where code outside `host/` may reach a host path through this machine's file system
/// (`Files::local_path`): only what another program's API needs as a path of its own, the
/// service logs a process keeps open and appends to. Everything else goes through `Files`
/// (the release's download and staging too, `host::ReleaseDisk`), where the simulated host's
/// faults and the contract suite reach it.
const LOCAL_PATH_USES: &[(&str, usize)] = &[("supervise", 1)];

fn local_path_uses(sources: &BTreeMap<String, String>) -> BTreeMap<String, usize> {
    sources
        .iter()
        .filter(|(module, _)| !module.starts_with("host"))
        .map(|(module, code)| (module.clone(), code.matches(".local_path(").count()))
        .filter(|(_, n)| *n > 0)
        .collect()
}

#[test]
fn local_paths_are_reached_only_where_another_api_needs_one() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = BTreeMap::new();
    sources(&root, &root, &mut files);
    let allowed: BTreeMap<String, usize> = LOCAL_PATH_USES
        .iter()
        .map(|(m, n)| ((*m).to_owned(), *n))
        .collect();
    assert_eq!(
        local_path_uses(&files),
        allowed,
        "a new use of local_path outside host/: walk, read, hash or delete through Files instead"
    );
    // And a new one is seen.
    let planted = BTreeMap::from([("plan".to_owned(), "host.local_path(p)".to_owned())]);
    assert_eq!(local_path_uses(&planted)["plan"], 1);
}

/// `text` with every test module (`#[cfg(test)]`, `#[cfg(all(test, ...))]`, inline or declared)
/// blanked, its lines kept so that line numbers hold.
fn without_any_tests(text: &str) -> String {
    let start = regex::Regex::new(
        r"#\[cfg\((?:all\()?test[^\]]*\]\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+\w+\s*\{",
    )
    .expect("regex");
    let mut out = String::new();
    let mut at = 0;
    while let Some(m) = start.find_at(text, at) {
        out.push_str(&text[at..m.start()]);
        let mut depth = 0;
        let mut end = text.len();
        for (i, c) in text[m.end() - 1..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = m.end() - 1 + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.push_str(&"\n".repeat(text[m.start()..end].matches('\n').count()));
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

/// STYLE.md: no `unwrap()`/`expect()` outside tests unless a comment states why it cannot
/// fail (within the five lines above it); the rest return errors with context.
#[test]
fn every_unwrap_outside_tests_says_why_it_cannot_fail() {
    let call = regex::Regex::new(r"\.(unwrap|expect)\(").expect("regex");
    let mut found = Vec::new();
    let mut seen = 0;
    let mut files = BTreeMap::new();
    sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    for main in ["main.rs", "lib.rs"] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(main);
        files.insert(main.to_owned(), fs_err::read_to_string(path).expect("read"));
    }
    for (module, _) in files {
        // The host contract suite is test code (compiled for tests only).
        if module == "host::contract" {
            continue;
        }
        let rel = if module.ends_with(".rs") {
            module.clone()
        } else {
            let base = module.replace("::", "/");
            let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
            if dir.join(format!("{base}.rs")).exists() {
                format!("{base}.rs")
            } else {
                format!("{base}/mod.rs")
            }
        };
        let text =
            fs_err::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(&rel))
                .expect("read source");
        let code = without_any_tests(&text);
        let lines: Vec<&str> = code.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if line.trim_start().starts_with("//") || !call.is_match(line) {
                continue;
            }
            seen += 1;
            // A reason in a plain comment, not a doc comment of an item around it.
            let said = lines[i.saturating_sub(5)..=i].iter().any(|l| {
                let t = l.trim_start();
                l.contains("//") && !t.starts_with("///") && !t.starts_with("//!")
            });
            if !said {
                found.push(format!("src/{rel}:{}: {}", i + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "unwrap/expect outside tests without a comment saying why it cannot fail ({seen} seen):\n{}",
        found.join("\n")
    );
}

/// One wait: a pause outside tests is `duration`'s loop (`poll_until`, `poll_quietly`) or a
/// stop's (`Stop::wait`); any other sleep, timed receive or timed condition-variable wait is
/// one of these, by file and function, each for the reason given.
const SLEEPS: &[(&str, &str, &str)] = &[
    (
        "host/sharing.rs",
        "on_windows",
        "a sharing violation's retry: sharing::PAUSES, eight pauses in all, is its bound",
    ),
    (
        "host/windows/files.rs",
        "rename_shared",
        "a sharing violation's retry: sharing::PAUSES, eight pauses in all, is its bound",
    ),
    (
        "host/windows/files.rs",
        "remove",
        "a sharing violation's retry: sharing::PAUSES, eight pauses in all, is its bound",
    ),
    (
        "duration/wait.rs",
        "poll_quietly",
        "poll_quietly's pause: a host call's own bound",
    ),
    (
        "host/process.rs",
        "wait_timeout",
        "the simulated child, which never exits on its own: the wait is the caller's bound",
    ),
    (
        "host/sim/handle.rs",
        "pause",
        "the simulated host's pause fault: held until killed",
    ),
    (
        "host/windows/console.rs",
        "handler",
        "the console handler holds the event: Windows ends the process when it returns",
    ),
    (
        "duration/stop.rs",
        "wait",
        "Stop::wait itself: the condition variable a stop request wakes",
    ),
    (
        "net.rs",
        "resolve",
        "a name lookup on a thread that cannot be cancelled: the one receive is the bound",
    ),
    (
        "cluster/client.rs",
        "requested",
        "a stop turned into a future, looked at every 50 ms",
    ),
    (
        "supervise/metrics_server.rs",
        "accept",
        "the accept loop's look at the stop every 100 ms, and its pause of 1 s after a failed accept",
    ),
    (
        "supervise/metrics_server.rs",
        "answer",
        "a connection's look at its answer's deadline every 100 ms (hyper has no write timeout)",
    ),
    (
        "commands/verify.rs",
        "run_all",
        "the scope's join of its verify runs: each run's waits are poll_until's, bounded by --timeout",
    ),
    (
        "release/mod.rs",
        "download_and_extract",
        "the follower's join: it ends when the download ends, which ends complete or failed (FailOnDrop) within the download's own timeouts",
    ),
    (
        "release/mod.rs",
        "hash_and_extract",
        "the join of an extraction of a finished file on disk, capped at EXTRACT_CAP bytes",
    ),
    (
        "release/stream.rs",
        "started",
        "the download's condition variable: every return or panic of the download sets it complete or failed (FailOnDrop)",
    ),
    (
        "release/stream.rs",
        "beyond",
        "the download's condition variable: every return or panic of the download sets it complete or failed (FailOnDrop)",
    ),
    (
        "release/stream.rs",
        "follow",
        "the workers' receive ends when the header reader drops the sender; their join, when their inflation reaches the download's end",
    ),
    (
        "supervise/scm.rs",
        "service_main",
        "the status reporter's join after the stop and the body's end are requested: its wait is at most half the wait hint",
    ),
];

/// The name of the function a line belongs to: the last `fn NAME` above it.
fn enclosing_fn(code: &str, line: usize) -> String {
    let decl = regex::Regex::new(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)").expect("regex");
    code.lines()
        .take(line + 1)
        .filter_map(|l| decl.captures(l).map(|c| c[1].to_owned()))
        .last()
        .unwrap_or_default()
}

/// Where `code` waits: each (line index, the line) where a wait starts. The code is matched
/// whole, with its line breaks, so that a call wrapped over lines is seen; a line that is a
/// comment is no code. A sleep however named (`thread::sleep`, `tokio::time::sleep`, a bare
/// imported `sleep`), a timed channel receive, a timed condition-variable wait (two arguments:
/// a guard and a duration; a child's `wait_timeout` takes one); and the untimed ones, which
/// wait for ever when nothing answers: a channel's `recv()`, a thread's `join()`, a child's
/// `wait()`, a condition variable's `wait(guard)` or `wait_while` (in a file that holds a
/// `Condvar`: a stop's `wait(duration)` looks alike), Windows' `INFINITE` and `WBEM_INFINITE`.
fn waits_in(code: &str) -> Vec<(usize, String)> {
    let wait = regex::Regex::new(concat!(
        r"(^|[^A-Za-z0-9_])sleep\s*\(|recv_timeout\s*\(|wait_timeout(_while)?\s*\([^,()]*,",
        r"|\.recv\s*\(\s*\)|\.join\s*\(\s*\)|\.wait\s*\(\s*\)|\b(WBEM_)?INFINITE\b",
        // A sleep handed on as a function (`&mut std::thread::sleep`), not called here.
        r"|\bthread::sleep\b",
    ))
    .expect("regex");
    let condvar = regex::Regex::new(r"\.wait(_while)?\s*\(\s*[^)\s]").expect("regex");
    let lines: Vec<&str> = code.lines().collect();
    let bare: String = lines
        .iter()
        .map(|l| {
            if l.trim_start().starts_with("//") {
                ""
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut starts: Vec<usize> = wait.find_iter(&bare).map(|m| m.start()).collect();
    if bare.contains("Condvar") {
        starts.extend(condvar.find_iter(&bare).map(|m| m.start()));
    }
    let mut at: Vec<usize> = starts
        .into_iter()
        .map(|start| {
            // A match that begins with the character before `sleep` may begin on the line
            // above: the wait is where its name is.
            let name = bare[start..]
                .find(|c: char| c.is_alphanumeric() || c == '.' || c == '_')
                .map_or(start, |k| start + k);
            bare[..name].matches('\n').count()
        })
        .collect();
    at.sort_unstable();
    at.dedup();
    at.into_iter()
        .map(|i| (i, lines[i].trim().to_owned()))
        .collect()
}

/// Each form of wait is seen, wrapped over lines or not; a stop's timed wait, a comment and a
/// path's `join(x)` are not.
#[test]
fn the_wait_matcher_sees_each_form() {
    let seen = |code: &str| waits_in(code).len();
    for form in [
        "std::thread::sleep(d);",
        "rx.recv_timeout(\n    Duration::from_secs(1),\n);",
        "cv.wait_timeout(\n    guard,\n    d,\n);",
        "cv.wait_timeout_while(guard,\n d, |x| *x);",
        "let v = rx.recv();",
        "let v = rx\n    .recv()\n    .ok();",
        "handle.join().ok();",
        "worker\n    .join()\n    .ok();",
        "child.wait()?;",
        "unsafe { WaitForSingleObject(h, INFINITE) };",
        "found.Next(WBEM_INFINITE, &mut first, &mut n);",
        "retried(op, transient, &mut std::thread::sleep)",
        "use std::sync::Condvar;\nfn f() { s = cv.wait(s).unwrap(); }",
        "use std::sync::Condvar;\nfn f() { s = cv\n    .wait_while(s, |x| *x); }",
    ] {
        assert_eq!(seen(form), 1, "not seen: {form}");
    }
    for not_one in [
        "if stop.wait(delay) {}",
        "// std::thread::sleep(d);",
        "let p = dir.join(name);",
        "let s = parts.join(\", \");",
    ] {
        assert_eq!(seen(not_one), 0, "seen: {not_one}");
    }
}

#[test]
fn every_wait_runs_the_one_poll_loop() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        for e in fs_err::read_dir(&dir).expect("read dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    let mut found = Vec::new();
    let mut used = std::collections::BTreeSet::new();
    for p in files {
        let rel = p
            .strip_prefix(&root)
            .expect("under src")
            .to_string_lossy()
            .replace('\\', "/");
        let test_file = rel.ends_with("_tests.rs")
            || rel.ends_with("/tests.rs")
            || rel.contains("/tests/")
            || rel == "host/contract.rs";
        if test_file {
            continue;
        }
        let code = without_any_tests(&fs_err::read_to_string(&p).expect("read"));
        for (i, line) in waits_in(&code) {
            let function = enclosing_fn(&code, i);
            match SLEEPS
                .iter()
                .position(|(f, n, _)| *f == rel && *n == function)
            {
                Some(k) => {
                    used.insert(k);
                }
                None => found.push(format!("src/{rel}:{} (fn {function}): {line}", i + 1)),
            }
        }
    }
    assert!(
        found.is_empty(),
        "a wait of its own: run it on duration::poll_until (or Stop::wait for a loop without end):\n{}",
        found.join("\n")
    );
    let stale: Vec<_> = (0..SLEEPS.len())
        .filter(|k| !used.contains(k))
        .map(|k| SLEEPS[k])
        .collect();
    assert!(stale.is_empty(), "exceptions no wait needs: {stale:?}");
}
