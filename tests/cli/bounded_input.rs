//! Answers no API server would give, from a TLS server on loopback that speaks raw HTTP/1.1:
//! an endless body, an HTML page, a truncated and a malformed JSON body. Each ends in an error
//! that says what came (not "cannot reach"), and the endless one ends at the cap while it is
//! read, with the process's peak memory measured from outside (`/usr/bin/time`).

use crate::support::fake_api::TestCa;
use serde_json::Value;
use std::path::Path;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[derive(Clone, Copy, Debug)]
enum Answer {
    Endless,
    Html,
    Truncated,
    Malformed,
}

/// Serves `answer` to every request; returns the kubeconfig pointing at it.
fn serve(answer: Answer, dir: &Path, rt: &tokio::runtime::Runtime) -> std::path::PathBuf {
    let ca = TestCa::new("hostile-ca");
    let acceptor = ca.loopback_acceptor("hostile");
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind loopback");
    let port = listener.local_addr().expect("addr").port();
    rt.spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                // The request head; its body (none for a GET) is not needed.
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if tls.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let _ = answer_with(answer, &mut tls).await;
            });
        }
    });
    let ca_path = dir.join("hostile-ca.pem");
    fs_err::write(&ca_path, ca.pem()).expect("ca");
    let path = dir.join("hostile.kubeconfig");
    fs_err::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: h\n  cluster:\n    server: https://127.0.0.1:{port}\n    certificate-authority: {}\nusers:\n- name: u\n  user:\n    token: hostile-token\ncontexts:\n- name: h\n  context:\n    cluster: h\n    user: u\ncurrent-context: h\n",
            ca_path.display()
        ),
    )
    .expect("kubeconfig");
    path
}

async fn answer_with<W: AsyncWriteExt + Unpin>(answer: Answer, w: &mut W) -> std::io::Result<()> {
    match answer {
        Answer::Endless => {
            w.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n").await?;
            let chunk = vec![b' '; 64 << 10];
            let head = format!("{:x}\r\n", chunk.len());
            // Until the client hangs up: it must, at its cap.
            loop {
                w.write_all(head.as_bytes()).await?;
                w.write_all(&chunk).await?;
                w.write_all(b"\r\n").await?;
            }
        }
        Answer::Html => {
            let body = "<html><head><title>Sign in</title></head><body>\u{1b}[31mproxy login</body></html>";
            w.write_all(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                )
                .as_bytes(),
            )
            .await
        }
        Answer::Truncated => {
            w.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"kind\":\"ClusterInformation\",")
                .await?;
            w.shutdown().await
        }
        Answer::Malformed => {
            let body = "{\"kind\": not json";
            w.write_all(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                )
                .as_bytes(),
            )
            .await
        }
    }
}

/// `fetch kubeconfig` against the server, under `/usr/bin/time` when it is there: exit code,
/// the JSON error, and the peak resident memory in KiB.
fn run(kubeconfig: &Path, dir: &Path) -> (i32, Value, Option<u64>) {
    let exe = assert_cmd::cargo::cargo_bin("calicoctl-win");
    let time = crate::support::tool("time");
    let mut c = match &time {
        Some(t) => {
            let mut c = std::process::Command::new(t);
            c.args(["-f", "peak-kib %M", "--"]).arg(&exe);
            c
        }
        None => std::process::Command::new(&exe),
    };
    let out = c
        .args(["fetch", "kubeconfig", "-o", "json", "--sim-host"])
        .arg(dir.join("host"))
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["--set", "node.name=win-1"])
        .env_remove("KUBECONFIG")
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let peak = stderr
        .lines()
        .find_map(|l| l.strip_prefix("peak-kib "))
        .and_then(|k| k.trim().parse().ok());
    (
        out.status.code().unwrap_or(-1),
        crate::support::json(&out.stdout),
        peak,
    )
}

#[test]
fn hostile_answers_are_named_for_what_they_are_and_an_endless_one_ends_at_the_cap() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    for answer in [
        Answer::Endless,
        Answer::Html,
        Answer::Truncated,
        Answer::Malformed,
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = serve(answer, dir.path(), &rt);
        let (code, doc, peak) = run(&kubeconfig, dir.path());
        let text = std::iter::once(&doc["error"]["message"])
            .chain(doc["error"]["causes"].as_array().into_iter().flatten())
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(code, 1, "{answer:?}: {doc}");
        assert!(!text.contains("cannot reach"), "{answer:?}: {text}");
        let (kind, says) = match answer {
            Answer::Endless => (
                "cluster-bad-answer",
                "with more than 8 MiB, the most calicoctl-win reads in one answer",
            ),
            Answer::Html => (
                "cluster-bad-answer",
                "200 and content type text/html; charset=utf-8, not JSON: it begins \"<html><head><title>Sign in</title></head><body>\\u{1b}[31mproxy login",
            ),
            Answer::Truncated => (
                "cluster-bad-answer",
                "the answer was cut off after 29 of the 1000 bytes it announced",
            ),
            Answer::Malformed => ("cluster-bad-answer", "Error deserializing response"),
        };
        assert_eq!(doc["error"]["kind"], kind, "{answer:?}: {doc}");
        assert!(text.contains(says), "{answer:?}: {text}");
        if let Some(kib) = peak {
            eprintln!("{answer:?}: peak resident memory {kib} KiB");
            assert!(
                kib < 50 * 1024,
                "peak memory {kib} KiB with an endless body"
            );
        }
    }
}
