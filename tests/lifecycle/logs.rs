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
        (&["logs", "felix", "--position", "p.json"], "--follow"),
        (
            &["logs", "felix", "node", "--follow", "--position", "p.json"],
            "one role",
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
fn follow_until_killed(node: &Node, position: &std::path::Path, want: &str) -> String {
    let out_file = position.with_extension(format!("out{}", want.len()));
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("calicoctl-win"))
        .env_clear()
        .current_dir(crate::support::root())
        .args(["--set", "node.name=win-1", "--sim-host"])
        .arg(node.sim())
        .args(["logs", "felix", "--follow", "--position"])
        .arg(position)
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&out_file).expect("out"))
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start calicoctl-win");
    let current = node.c_drive("calicowindows/logs/calico-felix.log");
    let size = fs_err::metadata(&current).expect("log").len();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let kept: Option<serde_json::Value> = fs_err::read(position)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        let written = fs_err::read_to_string(&out_file).unwrap_or_default();
        if written == want && kept.is_some_and(|p| p["offset"] == size) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the follower wrote {written:?}, not {want:?}, in 60 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    fs_err::read_to_string(&out_file).expect("out")
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
    let tmp = tempfile::tempdir().expect("tempdir");
    let position = tmp.path().join("felix.json");
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("calicoctl-win"))
        .env_clear()
        .current_dir(crate::support::root())
        .args(["--set", "node.name=win-1", "--sim-host"])
        .arg(node.sim())
        .args(["logs", "felix", "--follow", "--position"])
        .arg(&position)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start calicoctl-win");
    // Its position kept: it has read, so its stop signal is caught by then.
    while !position.exists() {
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
    let tmp = tempfile::tempdir().expect("tempdir");
    let position = tmp.path().join("felix.json");
    let first = follow_until_killed(&node, &position, &lines(0..3));
    // While no follower runs: more lines, the service's rotation, more lines.
    let mut text = lines(0..3);
    text.push_str(&lines(3..5));
    fs_err::write(dir.join("calico-felix-20251121T080003Z.log"), text).expect("rotated");
    fs_err::write(dir.join("calico-felix.log"), lines(5..7)).expect("log");
    let second = follow_until_killed(&node, &position, &lines(3..7));
    assert_eq!(format!("{first}{second}"), lines(0..7));
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
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("calicoctl-win"))
        .env_clear()
        .current_dir(crate::support::root())
        .args(["--set", "node.name=win-1", "--sim-host"])
        .arg(node.sim())
        .args(["logs", "felix", "--follow"])
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&out).expect("out"))
        .stderr(std::fs::File::create(&err).expect("err"))
        .spawn()
        .expect("start calicoctl-win");
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
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("calicoctl-win"))
        .env_clear()
        .current_dir(crate::support::root())
        .args(["--set", "node.name=win-1", "--sim-host"])
        .arg(node.sim())
        .args(["logs", "felix", "--follow", "--position"])
        .arg(tmp.path().join("gone").join("felix.json"))
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&out).expect("out"))
        .stderr(std::fs::File::create(&err).expect("err"))
        .spawn()
        .expect("start calicoctl-win");
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
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("calicoctl-win"))
        .env_clear()
        .current_dir(crate::support::root())
        .args(["--set", "node.name=win-1", "--sim-host"])
        .arg(node.sim())
        .args(["logs", "felix"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start calicoctl-win");
    let mut first = [0u8; 100];
    std::io::Read::read_exact(child.stdout.as_mut().expect("stdout"), &mut first).expect("read");
    drop(child.stdout.take());
    let done = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(0), "{err}");
    assert_eq!(err, "");
}
