//! `logs --follow --position` benchmark (not a test): how soon a line is shown after it is
//! written, when the follower is started again (as kubelet restarts the DaemonSet's container)
//! with a backlog of 20,000 lines written while none ran. The follower's position is set by a
//! first run, then the backlog is written, the follower started again from that position, and
//! a new line appended once the backlog's first line is on its stdout; the figure is the time
//! from that write to the line on stdout. The target: within 5 s. `LINES=N` for another
//! backlog, `RUNS=N` for more runs (default 3; each run's figure and the median are printed).
//!
//! Run with `cargo bench --bench logs_follow`.

#[path = "../tests/support/mod.rs"]
mod support;

use std::io::{BufRead, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::Node;

fn env_num(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// Where the follower keeps its position on the node: the DaemonSet's emptyDir.
const POSITION: &str = r"C:\log-positions\felix.pos";

fn follower(node: &Node) -> Child {
    Command::new(env!("CARGO_BIN_EXE_calicoctl-win"))
        .env_clear()
        .current_dir(support::root())
        .args(["--set", "node.name=win-1", "--sim-host"])
        .arg(node.sim())
        .args(["logs", "felix", "--follow", "--position", POSITION])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start calicoctl-win")
}

fn append(node: &Node, text: &str) {
    let mut log = fs_err::OpenOptions::new()
        .append(true)
        .open(node.c_drive("calicowindows/logs/calico-felix.log"))
        .expect("log");
    log.write_all(text.as_bytes()).expect("append");
}

/// The follower's stdout, line by line, on a channel.
fn lines(child: &mut Child) -> std::sync::mpsc::Receiver<String> {
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// One run: the time from the new line's write to its showing, and the backlog lines shown.
fn one(backlog: usize) -> (Option<Duration>, usize) {
    let node = Node::healthy().installed().build();
    let dir = node.c_drive("calicowindows/logs");
    fs_err::create_dir_all(&dir).expect("dir");
    fs_err::write(dir.join("calico-felix.log"), "felix 0\n").expect("log");
    fs_err::create_dir_all(node.c_drive("log-positions")).expect("dir");
    // The first follower shows the one line and keeps its position (synced each second).
    let mut first = follower(&node);
    let rx = lines(&mut first);
    let shown = rx.recv_timeout(Duration::from_secs(60));
    assert_eq!(shown.as_deref(), Ok("felix 0"), "the first follower");
    std::thread::sleep(Duration::from_secs(2));
    first.kill().expect("kill");
    first.wait().expect("reap");
    let text: String = (1..=backlog)
        .map(|i| format!("felix {i:05} {}\n", "b".repeat(87)))
        .collect();
    append(&node, &text);
    let mut child = follower(&node);
    let rx = lines(&mut child);
    let start = rx.recv_timeout(Duration::from_secs(60));
    assert!(
        start
            .as_deref()
            .is_ok_and(|l| l.starts_with("felix 00001 ")),
        "went on where it stopped: {start:?}"
    );
    append(&node, "felix new written now\n");
    let written = Instant::now();
    let mut count = 1;
    let seen = loop {
        match rx.recv_timeout(Duration::from_secs(120)) {
            Ok(l) if l == "felix new written now" => break Some(written.elapsed()),
            Ok(_) => count += 1,
            Err(_) => break None,
        }
    };
    child.kill().expect("kill");
    child.wait().expect("reap");
    (seen, count)
}

fn main() {
    let backlog = env_num("LINES", 20_000);
    let runs = env_num("RUNS", 3).max(1);
    let mut took = Vec::new();
    for run in 1..=runs {
        let (seen, count) = one(backlog);
        match seen {
            Some(d) => {
                println!(
                    "run {run}: the new line shown {:.3} s after it was written ({count} of {backlog} backlog lines before it)",
                    d.as_secs_f64()
                );
                took.push(d);
            }
            None => println!("run {run}: the new line not shown in 120 s ({count} lines shown)"),
        }
    }
    took.sort();
    if let Some(m) = took.get(took.len() / 2) {
        println!(
            "logs_follow: median {:.3} s from write to stdout after a {backlog}-line backlog (target: 5 s)",
            m.as_secs_f64()
        );
    }
}
