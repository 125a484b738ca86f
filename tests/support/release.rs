//! Synthetic Calico for Windows release zips with the real layout, and a local HTTPS server
//! that serves them (with Range requests, and on demand a response cut off halfway).

use super::fake_api::TestCa;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The entries of a release: `calico-node.exe` (v3.2x–3.32) or `calico.exe` (3.33+), the
/// binary without a recorded version.
pub fn entries(binary: &str) -> Vec<(String, Vec<u8>)> {
    entries_of(binary, None)
}

/// The Go build information line Calico's build leaves in its binary (`lib.Makefile`'s
/// `-X .../pkg/buildinfo.Version=`, recorded by Go with the other `-ldflags`).
pub fn buildinfo(version: &str) -> String {
    format!(
        "\tbuild\t-ldflags=\"-X github.com/projectcalico/calico/pkg/buildinfo.Version=v{version} -X github.com/projectcalico/calico/pkg/buildinfo.GitRevision=0123abcd\"\n"
    )
}

/// The entries of release `version`, whose binary records it as Calico's builds do.
pub fn entries_of(binary: &str, version: Option<&str>) -> Vec<(String, Vec<u8>)> {
    let mut exe = format!("fake {binary}\n").into_bytes();
    if let Some(v) = version {
        exe.extend_from_slice(&[0u8; 64]);
        exe.extend_from_slice(buildinfo(v).as_bytes());
    }
    let mut v = vec![
        (format!("CalicoWindows/{binary}"), exe),
        (
            "CalicoWindows/cni/calico.exe".into(),
            b"fake cni plugin\n".to_vec(),
        ),
        ("CalicoWindows/cni.conf.template".into(), b"{}\n".to_vec()),
        ("CalicoWindows/config.ps1".into(), b"# legacy\n".to_vec()),
        (
            "CalicoWindows/confd/conf.d/blocks.toml".into(),
            b"[template]\n".to_vec(),
        ),
        (
            "CalicoWindows/confd/templates/blocks.ps1.template".into(),
            b"#\n".to_vec(),
        ),
    ];
    if binary == "calico-node.exe" {
        v.push((
            "CalicoWindows/cni/calico-ipam.exe".into(),
            b"fake ipam\n".to_vec(),
        ));
    }
    v
}

/// Writes a zip of `entries` to `path`.
pub fn write_zip(path: &Path, entries: &[(String, Vec<u8>)]) {
    let f = std::fs::File::create(path).expect("create zip");
    let mut z = zip::ZipWriter::new(f);
    let opts = zip::write::SimpleFileOptions::default();
    for (name, data) in entries {
        z.start_file(name.as_str(), opts).expect("start entry");
        z.write_all(data).expect("write entry");
    }
    z.finish().expect("finish zip");
}

/// A release zip named like the official asset, in `dir`, its binary recording the version.
pub fn release_zip(dir: &Path, version: &str, binary: &str) -> PathBuf {
    let path = dir.join(format!("calico-windows-v{version}.zip"));
    write_zip(&path, &entries_of(binary, Some(version)));
    path
}

pub fn sha256(path: &Path) -> String {
    use sha2::Digest;
    let bytes = fs_err::read(path).expect("read");
    sha2::Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Requests seen: path and Range header.
pub type Requests = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// A local HTTPS server for release files.
pub struct ReleaseServer {
    pub url: String,
    pub ca_pem: String,
    files: Arc<Mutex<BTreeMap<String, Vec<u8>>>>,
    /// Requests seen: path and Range header.
    pub requests: Requests,
    /// While above zero, full responses are cut off halfway (and this counts down).
    pub cut: Arc<AtomicUsize>,
    /// While set, responses stop after their first half and wait (a download that hangs).
    pub stall: Arc<std::sync::atomic::AtomicBool>,
    _runtime: tokio::runtime::Runtime,
}

impl ReleaseServer {
    pub fn start() -> Self {
        let ca = TestCa::new("release-ca");
        Self::with_tls(ca.loopback_acceptor("releases"), ca.pem())
    }

    /// A mirror set up wrongly, as happens: its certificate is a self-signed CA certificate
    /// (basic constraints CA:TRUE) for 127.0.0.1, which is also the CA clients are given.
    pub fn start_with_a_ca_as_its_certificate() -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let key = rcgen::KeyPair::generate().expect("key");
        let mut params =
            rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
                .expect("params");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let cert = params.self_signed(&key).expect("cert");
        let key = <rustls::pki_types::PrivateKeyDer as rustls::pki_types::pem::PemObject>::from_pem_slice(
            key.serialize_pem().as_bytes(),
        )
        .expect("key pem");
        let config = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(vec![cert.der().clone()], key)
            .expect("tls config");
        Self::with_tls(
            tokio_rustls::TlsAcceptor::from(Arc::new(config)),
            cert.pem(),
        )
    }

    fn with_tls(acceptor: tokio_rustls::TlsAcceptor, ca_pem: String) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind loopback");
        let port = listener.local_addr().expect("addr").port();
        let files: Arc<Mutex<BTreeMap<String, Vec<u8>>>> = Arc::default();
        let requests: Requests = Arc::default();
        let cut = Arc::new(AtomicUsize::new(0));
        let stall = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (f, r, c, st) = (files.clone(), requests.clone(), cut.clone(), stall.clone());
        runtime.spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let (acceptor, f, r, c, st) =
                    (acceptor.clone(), f.clone(), r.clone(), c.clone(), st.clone());
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match tls.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let text = String::from_utf8_lossy(&head).into_owned();
                    let path = text.split_whitespace().nth(1).unwrap_or("/").to_owned();
                    let range = text.lines().find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("range").then(|| v.trim().to_owned())
                    });
                    r.lock().expect("lock").push((path.clone(), range.clone()));
                    let body = f.lock().expect("lock").get(&path).cloned();
                    let Some(body) = body else {
                        let _ = tls
                            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                            .await;
                        let _ = tls.shutdown().await;
                        return;
                    };
                    let from = range
                        .as_deref()
                        .and_then(|r| r.strip_prefix("bytes="))
                        .and_then(|r| r.strip_suffix('-'))
                        .and_then(|n| n.parse::<usize>().ok());
                    let (status, start) = match from {
                        Some(n) if n < body.len() => ("206 Partial Content", n),
                        Some(_) => {
                            let _ = tls
                                .write_all(b"HTTP/1.1 416 Range Not Satisfiable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                                .await;
                            let _ = tls.shutdown().await;
                            return;
                        }
                        None => ("200 OK", 0),
                    };
                    let rest = &body[start..];
                    let header = format!(
                        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nContent-Type: application/zip\r\nConnection: close\r\n\r\n",
                        rest.len()
                    );
                    let _ = tls.write_all(header.as_bytes()).await;
                    let cut_now = from.is_none()
                        && c
                            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                            .is_ok();
                    let stalled = st.load(Ordering::SeqCst);
                    let send = if cut_now || stalled {
                        &rest[..rest.len() / 2]
                    } else {
                        rest
                    };
                    let _ = tls.write_all(send).await;
                    let _ = tls.flush().await;
                    while stalled && st.load(Ordering::SeqCst) {
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    }
                    if cut_now {
                        // Drop the connection without a TLS close: the download breaks off.
                        return;
                    }
                    let _ = tls.shutdown().await;
                });
            }
        });
        Self {
            url: format!("https://127.0.0.1:{port}"),
            ca_pem,
            files,
            requests,
            cut,
            stall,
            _runtime: runtime,
        }
    }

    /// Serves `bytes` at `/path`; returns the full URL.
    pub fn serve(&self, path: &str, bytes: Vec<u8>) -> String {
        self.files
            .lock()
            .expect("lock")
            .insert(path.to_owned(), bytes);
        format!("{}{path}", self.url)
    }

    /// Writes the CA into `dir` for `--release-ca-cert`.
    pub fn ca_file(&self, dir: &Path) -> PathBuf {
        let p = dir.join("release-ca.pem");
        fs_err::write(&p, &self.ca_pem).expect("write ca");
        p
    }
}
