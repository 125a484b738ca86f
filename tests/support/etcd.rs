//! A real `etcd` (Debian's etcd-server) on loopback with mutual TLS, for one test.

use super::fake_api::TestCa;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Etcd {
    pub url: String,
    child: Child,
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

impl Etcd {
    /// Starts etcd in `dir` with a server certificate from `ca`, requiring client
    /// certificates signed by `ca`.
    pub fn start(bin: &Path, dir: &Path, ca: &TestCa) -> Self {
        let (cert, key) = ca.issue("etcd", &["127.0.0.1", "localhost"]);
        let write = |name: &str, text: &str| {
            let p = dir.join(name);
            fs_err::write(&p, text).expect("write etcd tls file");
            p
        };
        let (cert, key, trusted) = (
            write("etcd-server.crt", &cert),
            write("etcd-server.key", &key),
            write("etcd-trusted-ca.crt", &ca.pem()),
        );
        // A port found free may be taken by a parallel test before etcd binds it: etcd then
        // exits at once ("address already in use"), and the start is tried with new ports.
        for attempt in 0..3 {
            let (client, peer) = (free_port(), free_port());
            let url = format!("https://127.0.0.1:{client}");
            let peer_url = format!("http://127.0.0.1:{peer}");
            let child = Command::new(bin)
                .env_clear()
                .arg("--name=test")
                .arg(format!(
                    "--data-dir={}",
                    dir.join(format!("etcd-data-{attempt}")).display()
                ))
                .arg(format!("--listen-client-urls={url}"))
                .arg(format!("--advertise-client-urls={url}"))
                .arg(format!("--listen-peer-urls={peer_url}"))
                .arg(format!("--initial-advertise-peer-urls={peer_url}"))
                .arg(format!("--initial-cluster=test={peer_url}"))
                .arg(format!("--cert-file={}", cert.display()))
                .arg(format!("--key-file={}", key.display()))
                .arg(format!("--trusted-ca-file={}", trusted.display()))
                .arg("--client-cert-auth")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start etcd");
            let mut etcd = Self { url, child };
            let started = Instant::now();
            loop {
                if let Some(status) = etcd.child.try_wait().expect("etcd's status") {
                    eprintln!("etcd exited at start ({status}); trying other ports");
                    break;
                }
                if std::net::TcpStream::connect(("127.0.0.1", client)).is_ok() {
                    return etcd;
                }
                assert!(
                    started.elapsed() < Duration::from_secs(20),
                    "etcd did not listen on {} within 20s",
                    etcd.url
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        panic!("etcd exited at start three times");
    }
}
