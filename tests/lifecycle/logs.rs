//! `logs` through the binary on an installed simulated node: a service's log redacted as
//! `diags` redacts it, and clear refusals of a bad role, duration or flag.

use crate::support::cmd;
use crate::support::node::Node;

/// `calicoctl-win ARGS` on the node, text output: exit code, stdout, stderr.
fn logs(node: &Node, args: &[&str]) -> (i32, String, String) {
    let out = cmd()
        .args(["--set", "node.name=win-1", "--sim-host"])
        .arg(node.sim())
        .arg("--kubeconfig")
        .arg(&node.admin)
        .args(args)
        .output()
        .expect("run");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (
        out.status.code().expect("code"),
        text(&out.stdout),
        text(&out.stderr),
    )
}

/// The node's log with calico-node's token, a bearer credential and a private key written
/// into it: `logs node` shows its lines with each of them taken out.
#[test]
fn logs_show_a_services_log_with_its_secrets_redacted() {
    let node = Node::healthy().installed().build();
    let token = fs_err::read_to_string(node.c_drive("calicowindows/calico-kube-config.token"))
        .expect("calico-node's token");
    let log = node.c_drive("calicowindows/logs/calico-node.log");
    fs_err::create_dir_all(log.parent().expect("dir")).expect("dir");
    let mut text = fs_err::read_to_string(&log).unwrap_or_default();
    text.push_str(&format!(
        "using token {}\nAuthorization: Bearer abcdefgh12345\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAsecretkeymaterial\n-----END RSA PRIVATE KEY-----\nthe last line\n",
        token.trim()
    ));
    fs_err::write(&log, text).expect("log");
    let (code, out, err) = logs(&node, &["logs", "node", "--tail", "6"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "using token <redacted>\nAuthorization: Bearer <redacted>\n-----BEGIN RSA PRIVATE KEY-----\n<redacted>\n<redacted>\nthe last line\n"
    );
    // Every log there is, each line with its role.
    let (code, out, err) = logs(&node, &["logs", "--tail", "1"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("[node] the last line\n"), "{out}");
}

/// A role, a duration or a flag that is wrong is refused with what is accepted (exit 2).
#[test]
fn logs_refuse_a_bad_role_duration_or_flag() {
    let node = Node::healthy().installed().build();
    for (args, said) in [
        (
            &["logs", "calico"][..],
            "possible values: node, felix, confd, kube-proxy, calicoctl-win",
        ),
        (&["logs", "felix", "--since", "5x"], "is not a duration"),
        (
            &["logs", "felix", "--since", "1h", "--tail", "3"],
            "cannot be used with",
        ),
        (&["logs", "felix", "--position", r"C:\p.json"], "--follow"),
        (
            &[
                "logs",
                "felix",
                "node",
                "--follow",
                "--position",
                r"C:\p.json",
            ],
            "one role",
        ),
        (
            &["logs", "felix", "--follow", "--position", "p.json"],
            "not an absolute path on a drive",
        ),
        (&["-o", "json", "logs", "felix"], "leave out -o json"),
    ] {
        let (code, _, err) = logs(&node, args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(said), "{args:?}: {err}");
    }
}

/// `logs felix --follow --position FILE` until it has written `want` and kept its position at
/// the end of the current log, then killed from outside (SIGKILL, as kubelet ends a container
/// past its grace): what it wrote.
fn follow_until_killed(node: &Node, position: &Kept, want: &str) -> String {
    follow_until_killed_said(node, position, want).0
}

/// `follow_until_killed`: what it wrote, and what it said on stderr.
fn follow_until_killed_said(node: &Node, position: &Kept, want: &str) -> (String, String) {
    let (position, local) = (position.0, position.1.as_path());
    let out_file = local.with_extension(format!("out{}", want.len()));
    let err_file = local.with_extension(format!("err{}", want.len()));
    let mut child = background(
        node,
        &["logs", "felix", "--follow", "--position", position],
        std::fs::File::create(&out_file).expect("out"),
        std::fs::File::create(&err_file).expect("err"),
    );
    let current = node.c_drive("calicowindows/logs/calico-felix.log");
    let size = fs_err::metadata(&current).expect("log").len();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let written = fs_err::read_to_string(&out_file).unwrap_or_default();
        if written == want && kept_offset(local) == Some(size) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the follower wrote {written:?}, not {want:?}, in 60 s: {}",
            fs_err::read_to_string(&err_file).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    let read = |p: &std::path::Path| fs_err::read_to_string(p).expect("read");
    (read(&out_file), read(&err_file))
}

/// The stop signal (SIGTERM, as kubelet stops a container; Ctrl-C) ends a follower at its next
/// pause with success, its position kept, instead of killing it where it is.
#[cfg(unix)]
#[test]
fn a_follower_ends_cleanly_on_the_stop_signal() {
    let node = Node::healthy().installed().build();
    let dir = node.c_drive("calicowindows/logs");
    fs_err::create_dir_all(&dir).expect("dir");
    fs_err::write(dir.join("calico-felix.log"), "felix 0\n").expect("log");
    let (position, local) = kept(&node);
    let mut child = background(
        &node,
        &["logs", "felix", "--follow", "--position", position],
        std::process::Stdio::null(),
        std::process::Stdio::piped(),
    );
    // Its position kept: it has read, so its stop signal is caught by then. Bounded: a
    // follower that never keeps it (or has ended) fails the test instead of hanging it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !local.exists() {
        if std::time::Instant::now() >= deadline || child.try_wait().ok().flatten().is_some() {
            let _ = child.kill();
            let out = child.wait_with_output().expect("ended");
            panic!(
                "the follower kept no position at {}: {}",
                local.display(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    let out = child.wait_with_output().expect("ended");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?} {err}", out.status);
    assert!(err.contains("stopped following the logs"), "{err}");
}

/// A follower killed and started again with its position (a container restarted in its
/// pod) goes on where it stopped: the lines written while none ran, across a rotation, come
/// once, and nothing it had shown comes again.
#[test]
fn a_restarted_follower_goes_on_from_its_position() {
    let node = Node::healthy().installed().build();
    let dir = node.c_drive("calicowindows/logs");
    fs_err::create_dir_all(&dir).expect("dir");
    let lines = |r: std::ops::Range<u32>| r.map(|i| format!("felix {i}\n")).collect::<String>();
    fs_err::write(dir.join("calico-felix.log"), lines(0..3)).expect("log");
    let position = kept(&node);
    let first = follow_until_killed(&node, &position, &lines(0..3));
    // While no follower runs: more lines, the service's rotation, more lines.
    let mut text = lines(0..3);
    text.push_str(&lines(3..5));
    fs_err::write(dir.join("calico-felix-20251121T080003Z.log"), text).expect("rotated");
    fs_err::write(dir.join("calico-felix.log"), lines(5..7)).expect("log");
    let second = follow_until_killed(&node, &position, &lines(3..7));
    assert_eq!(format!("{first}{second}"), lines(0..7));
}

/// A position file is made writable by SYSTEM and Administrators only (a secret file on the
/// simulated host); one that others may change (Users, by its access list) is not trusted: the
/// follower starts again as one with no position (the last lines), says why, and the file is
/// made anew, protected.
#[test]
fn a_position_file_others_may_change_is_not_trusted() {
    let node = Node::healthy().installed().build();
    let dir = node.c_drive("calicowindows/logs");
    fs_err::create_dir_all(&dir).expect("dir");
    let lines = |r: std::ops::Range<u32>| r.map(|i| format!("felix {i}\n")).collect::<String>();
    fs_err::write(dir.join("calico-felix.log"), lines(0..3)).expect("log");
    let position = kept(&node);
    let key = position.0.to_ascii_lowercase();
    let secret = |node: &Node| {
        let state = node.state();
        let listed = state["secrets"].as_array().expect("secrets").iter();
        listed.clone().any(|k| k == key.as_str()) && state["security"].get(&key).is_none()
    };
    follow_until_killed(&node, &position, &lines(0..3));
    assert!(secret(&node), "{}", node.state()["secrets"]);
    node.edit_state(|state| {
        let listed = state["secrets"].as_array_mut().expect("secrets");
        listed.retain(|k| k != key.as_str());
        state["security"][&key] = "O:BAD:P(A;;FA;;;SY)(A;;FA;;;BA)(A;;FA;;;BU)".into();
    });
    fs_err::write(dir.join("calico-felix.log"), lines(0..5)).expect("log");
    // Not where the record says (after line 2): from the last lines, all of them here.
    let (again, err) = follow_until_killed_said(&node, &position, &lines(0..5));
    assert_eq!(again, lines(0..5));
    assert!(err.contains("may be changed by Users may write"), "{err}");
    assert!(err.contains("its position is not trusted"), "{err}");
    assert!(secret(&node), "{}", node.state());
}

/// A position path through a symbolic link (the simulated host's junction) that Users may
/// change is refused before anything is read or written there: said on stderr, with why, and
/// the follower goes on without a kept position.
#[cfg(unix)]
#[test]
fn a_position_path_through_a_link_others_may_change_is_refused() {
    let node = Node::healthy().installed().build();
    let dir = node.c_drive("calicowindows/logs");
    fs_err::create_dir_all(&dir).expect("dir");
    fs_err::write(dir.join("calico-felix.log"), "felix 0\n").expect("log");
    // C:\log-positions a link into the install root, made by a user: whoever makes a link
    // owns it.
    let target = node.c_drive("calicowindows");
    std::os::unix::fs::symlink(&target, node.c_drive("log-positions")).expect("link");
    node.edit_state(|state| {
        state["security"][r"c:\log-positions"] =
            serde_json::json!("O:BUD:(A;;FA;;;SY)(A;;FA;;;BA)(A;;FA;;;BU)");
    });
    let tmp = tempfile::tempdir().expect("tempdir");
    let (out, err) = (tmp.path().join("out"), tmp.path().join("err"));
    let mut child = background(
        &node,
        &["logs", "felix", "--follow", "--position", POSITION],
        std::fs::File::create(&out).expect("out"),
        std::fs::File::create(&err).expect("err"),
    );
    wait_for(&mut child, &out, &err, |o, e| {
        o == "felix 0\n" && e.contains("following without a kept position")
    });
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    let said = fs_err::read_to_string(&err).expect("err");
    assert!(
        said.contains(
            r"C:\log-positions is a junction or symbolic link that someone but SYSTEM and Administrators owns or may change (its owner Users"
        ),
        "{said}"
    );
    assert!(said.contains("neither read nor written"), "{said}");
    assert!(
        !target.join("felix.json").exists(),
        "written through the link"
    );
}

/// Where the followers here keep their position: in the DaemonSet's emptyDir as the node sees
/// it.
const POSITION: &str = r"C:\log-positions\felix.json";

/// `POSITION` on the node, and where the simulated host keeps it (its directory made).
type Kept = (&'static str, std::path::PathBuf);

fn kept(node: &Node) -> Kept {
    let local = node.c_drive("log-positions/felix.json");
    fs_err::create_dir_all(local.parent().expect("dir")).expect("dir");
    (POSITION, local)
}

/// A file put at `POSITION` as a follower writes it (SYSTEM and Administrators only).
fn plant(node: &Node, position: &Kept, bytes: &[u8]) {
    fs_err::write(&position.1, bytes).expect("planted");
    let key = position.0.to_ascii_lowercase();
    node.edit_state(|state| {
        let listed = state["secrets"].as_array_mut().expect("secrets");
        if !listed.iter().any(|k| k == key.as_str()) {
            listed.push(key.into());
        }
    });
}

/// Waits (60 s at most) until `done` holds of the follower's stdout and stderr, or it ends.
fn wait_for(
    child: &mut std::process::Child,
    out: &std::path::Path,
    err: &std::path::Path,
    done: impl Fn(&str, &str) -> bool,
) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let (o, e) = (
            fs_err::read_to_string(out).unwrap_or_default(),
            fs_err::read_to_string(err).unwrap_or_default(),
        );
        if done(&o, &e) {
            return;
        }
        let ended = child.try_wait().expect("wait");
        assert!(ended.is_none(), "the follower ended ({ended:?}): {e}");
        assert!(
            std::time::Instant::now() < deadline,
            "the follower wrote {o:?} and {e:?} in 60 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A log directory that cannot be listed for a while (a poll that fails) is said on stderr
/// and tried again: the follower goes on, and shows the lines written once it can read.
#[test]
fn a_follower_goes_on_past_a_log_it_cannot_read_for_a_while() {
    let node = Node::healthy().installed().build();
    let dir = node.c_drive("calicowindows/logs");
    fs_err::create_dir_all(&dir).expect("dir");
    fs_err::write(dir.join("calico-felix.log"), "felix 0\n").expect("log");
    let tmp = tempfile::tempdir().expect("tempdir");
    let (out, err) = (tmp.path().join("out"), tmp.path().join("err"));
    let mut child = background(
        &node,
        &["logs", "felix", "--follow"],
        std::fs::File::create(&out).expect("out"),
        std::fs::File::create(&err).expect("err"),
    );
    wait_for(&mut child, &out, &err, |o, _| o == "felix 0\n");
    // The directory's place taken by a file: listing it fails until it is back.
    let aside = tmp.path().join("logs");
    fs_err::rename(&dir, &aside).expect("aside");
    fs_err::write(&dir, "not a directory").expect("file");
    wait_for(&mut child, &out, &err, |_, e| e.contains("trying again"));
    fs_err::remove_file(&dir).expect("file");
    fs_err::rename(&aside, &dir).expect("back");
    let mut log = fs_err::OpenOptions::new()
        .append(true)
        .open(dir.join("calico-felix.log"))
        .expect("log");
    std::io::Write::write_all(&mut log, b"felix 1\n").expect("append");
    wait_for(&mut child, &out, &err, |o, _| o == "felix 0\nfelix 1\n");
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
}

/// A position file in a directory that is not there is said on stderr: a follower started
/// again would not go on where this one stopped.
#[test]
fn a_position_that_cannot_be_kept_is_said() {
    let node = Node::healthy().installed().build();
    let dir = node.c_drive("calicowindows/logs");
    fs_err::create_dir_all(&dir).expect("dir");
    fs_err::write(dir.join("calico-felix.log"), "felix 0\n").expect("log");
    let tmp = tempfile::tempdir().expect("tempdir");
    let (out, err) = (tmp.path().join("out"), tmp.path().join("err"));
    let mut child = background(
        &node,
        &[
            "logs",
            "felix",
            "--follow",
            "--position",
            r"C:\gone\felix.json",
        ],
        std::fs::File::create(&out).expect("out"),
        std::fs::File::create(&err).expect("err"),
    );
    wait_for(&mut child, &out, &err, |o, e| {
        o == "felix 0\n" && e.contains("is no directory") && e.contains("cannot keep the position")
    });
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
}

/// A role named without a log says so on stderr (exit 0); output whose reader went away
/// (`| head`) ends the command quietly, exit 0, as any filter.
#[test]
fn logs_say_a_missing_log_and_stop_quietly_when_the_output_closes() {
    let node = Node::healthy().installed().build();
    let dir = node.c_drive("calicowindows/logs");
    fs_err::create_dir_all(&dir).expect("dir");
    let _ = fs_err::remove_file(dir.join("calico-confd.log"));
    let (code, out, err) = logs(&node, &["logs", "confd"]);
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    assert!(err.contains("no confd log in"), "{err}");

    let line = format!("{}\n", "f".repeat(99));
    fs_err::write(dir.join("calico-felix.log"), line.repeat(20_000)).expect("log");
    let mut child = background(
        &node,
        &["logs", "felix"],
        std::process::Stdio::piped(),
        std::process::Stdio::piped(),
    );
    let mut first = [0u8; 100];
    std::io::Read::read_exact(child.stdout.as_mut().expect("stdout"), &mut first).expect("read");
    drop(child.stdout.take());
    let done = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(0), "{err}");
    assert_eq!(err, "");
}

/// `logs felix --follow` (with `--position FILE` when given) on the node, its stdout a pipe.
fn follower(node: &Node, position: Option<&Kept>) -> std::process::Child {
    let mut args = vec!["logs", "felix", "--follow"];
    if let Some(p) = position {
        args.extend(["--position", p.0]);
    }
    let (out, err) = (std::process::Stdio::piped(), std::process::Stdio::null());
    background(node, &args, out, err)
}

/// Appends `text` to the node's current Felix log.
fn append_felix(node: &Node, text: &str) {
    let mut log = fs_err::OpenOptions::new()
        .append(true)
        .open(node.c_drive("calicowindows/logs/calico-felix.log"))
        .expect("log");
    std::io::Write::write_all(&mut log, text.as_bytes()).expect("append");
}

/// As the DaemonSet runs it (`--position`), a follower started again after 20,000 lines were
/// written while none ran shows them all, each once, where the last one stopped, and then a
/// line appended when it begins to show them. How soon that line is shown (the 5 s target) is
/// measured by `cargo bench --bench logs_follow`, which prints it; here the wait is a bound for
/// a loaded machine, not a speed asked of it.
#[test]
fn a_follower_started_again_after_a_backlog_shows_it_once_and_then_the_new_line() {
    use std::io::BufRead;
    use std::time::Duration;
    let node = Node::healthy().installed().build();
    let dir = node.c_drive("calicowindows/logs");
    fs_err::create_dir_all(&dir).expect("dir");
    fs_err::write(dir.join("calico-felix.log"), "felix 0\n").expect("log");
    let position = kept(&node);
    assert_eq!(
        follow_until_killed(&node, &position, "felix 0\n"),
        "felix 0\n"
    );
    let backlog: String = (1..=20_000)
        .map(|i| format!("felix {i:05} {}\n", "b".repeat(87)))
        .collect();
    append_felix(&node, &backlog);
    let mut child = follower(&node, Some(&position));
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
    // The follower started and began on the backlog: it goes on where the last one stopped.
    let first = rx.recv_timeout(Duration::from_secs(60));
    assert!(
        first
            .as_deref()
            .is_ok_and(|l| l.starts_with("felix 00001 ")),
        "{first:?}"
    );
    append_felix(&node, "felix new written now\n");
    let mut shown = 1;
    let seen = loop {
        match rx.recv_timeout(Duration::from_secs(120)) {
            Ok(line) if line == "felix new written now" => break true,
            Ok(_) => shown += 1,
            Err(_) => break false,
        }
    };
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    assert!(
        seen,
        "the line written was not shown ({shown} of the backlog's 20,000 lines shown before the follower fell silent for 120 s)"
    );
    assert_eq!(shown, 20_000, "the backlog, each line once");
}

/// The position is kept in place: one file, its record overwritten (not a new file renamed
/// over it per line), one record long.
#[cfg(unix)]
#[test]
fn a_followers_position_is_overwritten_in_place() {
    let node = Node::healthy().installed().build();
    let dir = node.c_drive("calicowindows/logs");
    fs_err::create_dir_all(&dir).expect("dir");
    fs_err::write(dir.join("calico-felix.log"), "felix 0\n").expect("log");
    let position = kept(&node);
    let mut child = follower(&node, Some(&position));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while kept_offset(&position.1) != Some(8) {
        assert!(
            std::time::Instant::now() < deadline,
            "no position kept in 60 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // The file held open here: a file renamed over its name would leave it as it was.
    let mut held = fs_err::File::open(&position.1).expect("kept");
    append_felix(&node, "felix 1\nfelix 2\n");
    while kept_offset(&position.1) != Some(24) {
        assert!(
            std::time::Instant::now() < deadline,
            "no position kept in 60 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    let mut text = String::new();
    std::io::Read::read_to_string(&mut held, &mut text).expect("read");
    let fields: Vec<&str> = text.split(' ').collect();
    assert_eq!(
        fields.get(3),
        Some(&"00000000000000000024"),
        "the file was replaced: {text:?}"
    );
    // commands/logs_position.rs `RECORD`: the fields at their fixed widths.
    assert_eq!(text.len(), 207, "one record");
}

/// A position file a power loss left zeroed (written, never synced) holds no position: said,
/// and the follower starts as one without a position (the last 100 lines).
#[test]
fn a_zeroed_position_is_said() {
    let node = Node::healthy().installed().build();
    let dir = node.c_drive("calicowindows/logs");
    fs_err::create_dir_all(&dir).expect("dir");
    fs_err::write(dir.join("calico-felix.log"), "felix 0\nfelix 1\n").expect("log");
    let position = kept(&node);
    plant(&node, &position, &[0u8; 207]);
    let (code, out, err) = logs_briefly(&node, &position);
    assert_eq!((code, out.as_str()), (None, "felix 0\nfelix 1\n"), "{err}");
    assert!(err.contains("holds no whole position record"), "{err}");
}

/// A follower with `--position FILE`, killed once its position is kept past its first read.
fn logs_briefly(node: &Node, position: &Kept) -> (Option<i32>, String, String) {
    let (position, local) = (position.0, position.1.as_path());
    let out_file = local.with_extension("brief");
    let err_file = local.with_extension("err");
    let mut child = background(
        node,
        &["logs", "felix", "--follow", "--position", position],
        std::fs::File::create(&out_file).expect("out"),
        std::fs::File::create(&err_file).expect("err"),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while kept_offset(local) != Some(16) {
        assert!(
            std::time::Instant::now() < deadline,
            "no position kept in 60 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().expect("SIGKILL");
    let code = child.wait().expect("reap").code();
    let read = |p| fs_err::read_to_string(p).expect("read");
    (code, read(&out_file), read(&err_file))
}

/// The kept position's offset, when the file holds one: its record is `P2 HEAD HEAD_LEN
/// OFFSET AT IN_KEY PENDING SUM` (`commands/logs_position.rs`).
fn kept_offset(position: &std::path::Path) -> Option<u64> {
    let text = String::from_utf8(fs_err::read(position).ok()?).ok()?;
    let fields: Vec<&str> = text.trim_end().split(' ').collect();
    (fields.len() == 8 && fields[0] == "P2")
        .then(|| fields[3].parse().ok())
        .flatten()
}

/// A follower killed in mid-stream (its output a pipe nobody reads, so it is stopped inside a
/// write, as a container's is when kubelet kills it) and started again with its position
/// repeats at most the one line it was writing, and loses none: its position is kept after
/// each line, not after each 64 KiB read.
#[test]
fn a_follower_killed_mid_stream_repeats_at_most_one_line() {
    use std::io::Read;
    use std::time::{Duration, Instant};
    let node = Node::healthy().installed().build();
    let dir = node.c_drive("calicowindows/logs");
    fs_err::create_dir_all(&dir).expect("dir");
    let log = dir.join("calico-felix.log");
    fs_err::write(&log, "felix 0\n").expect("log");
    let position = kept(&node);
    let mut child = follower(&node, Some(&position));
    let mut stdout = child.stdout.take().expect("stdout");
    let mut first = vec![0u8; 8];
    stdout.read_exact(&mut first).expect("the first line");
    let deadline = Instant::now() + Duration::from_secs(60);
    while kept_offset(&position.1) != Some(8) {
        assert!(Instant::now() < deadline, "no position kept in 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    // 2,000 lines of 100 bytes: more than a 64 KiB read, and than the pipe holds.
    let line = |i: u32| format!("felix {i:05} {}\n", "x".repeat(87));
    let more: String = (1..=2000).map(line).collect();
    append_felix(&node, &more);
    // 10,000 bytes taken from the pipe, then none: the follower fills it and stops in a write.
    let mut taken = vec![0u8; 10_000];
    stdout.read_exact(&mut taken).expect("read");
    first.extend_from_slice(&taken);
    while kept_offset(&position.1).is_none_or(|o| o < 65_000) {
        assert!(
            Instant::now() < deadline,
            "the position stayed short of 65,000 in 60 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Time for the follower to fill the pipe; killed wherever it is, the bound must hold.
    std::thread::sleep(Duration::from_millis(500));
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    stdout
        .read_to_end(&mut first)
        .expect("what was in the pipe");
    let size = fs_err::metadata(&log).expect("log").len();

    let mut child = follower(&node, Some(&position));
    let mut stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut buf = [0u8; 8192];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 {
                break;
            }
            all.extend_from_slice(&buf[..n]);
            if all.ends_with(line(2000).as_bytes()) {
                let _ = tx.send(std::mem::take(&mut all));
                return;
            }
        }
    });
    let second = rx.recv_timeout(Duration::from_secs(60));
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    let second = second.expect("the restarted follower wrote to the log's end in 60 s");
    let all = format!("felix 0\n{more}").into_bytes();
    assert_eq!(all.len() as u64, size);
    assert!(
        all.starts_with(&first),
        "the first follower wrote what is not in the log"
    );
    assert!(
        all.ends_with(&second),
        "the second follower wrote what is not in the log"
    );
    let start = all.len() - second.len();
    assert!(
        start == 0 || all[start - 1] == b'\n',
        "the second follower began inside a line"
    );
    // Nothing lost between them; at most one line (100 bytes) shown by both.
    assert!(start <= first.len(), "lost {} bytes", start - first.len());
    let repeated = first.len() - start;
    assert!(
        repeated <= 100,
        "{repeated} bytes shown by both followers (more than one line)"
    );
}

/// `logs calicoctl-win` reads `C:\ProgramData\calicoctl-win\install.log`, the log of an
/// `install --detach` (`commands/detach.rs`), with its token redacted; not the other files of
/// that directory, nor the services' logs.
#[test]
fn logs_calicoctl_win_reads_the_detached_installs_log() {
    let node = Node::healthy().installed().build();
    let token = fs_err::read_to_string(node.c_drive("calicowindows/calico-kube-config.token"))
        .expect("calico-node's token");
    let state = node.c_drive("programdata/calicoctl-win");
    fs_err::create_dir_all(&state).expect("state dir");
    fs_err::write(
        state.join("install.log"),
        format!(
            "2026-11-24T16:00:37Z [calicoctl-win] info: installing\nwrote token {}\n",
            token.trim()
        ),
    )
    .expect("log");
    fs_err::write(state.join("uninstall.log"), "another command's log\n").expect("other");
    fs_err::write(state.join("install.result.json"), "{}\n").expect("result");
    let (code, out, err) = logs(&node, &["logs", "calicoctl-win"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "2026-11-24T16:00:37Z [calicoctl-win] info: installing\nwrote token <redacted>\n"
    );
    // Without it, said as missing, where it was looked for.
    fs_err::remove_file(state.join("install.log")).expect("remove");
    let (code, out, err) = logs(&node, &["logs", "calicoctl-win"]);
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    assert!(
        err.contains(r"no calicoctl-win log in C:\ProgramData\calicoctl-win"),
        "{err}"
    );
}

/// `calicoctl-win ARGS` on the node (no cluster) in the background, its output to `out`, `err`.
fn background(
    node: &Node,
    args: &[&str],
    out: impl Into<std::process::Stdio>,
    err: impl Into<std::process::Stdio>,
) -> std::process::Child {
    crate::support::background()
        .args(["--set", "node.name=win-1", "--sim-host"])
        .arg(node.sim())
        .args(args)
        .stdout(out)
        .stderr(err)
        .spawn()
        .expect("start calicoctl-win")
}
