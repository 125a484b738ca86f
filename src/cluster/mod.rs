//! The cluster: a kube client built from the admin kubeconfig, with every call bounded in time
//! and every error naming the server and, for 401/403/404, what to do.

pub mod calico_api;
pub mod credentials;
pub mod drain;
pub mod etcd;
pub mod facts;
pub mod fix;
pub mod fleet_view;
mod guard;
pub mod installation;
pub mod ipam;
pub mod node;
pub mod operator;
pub mod pods;
pub mod proxy;
pub mod refusal;
pub mod renewal;
pub mod rights;
pub mod token_check;
pub mod verify_rights;

use k8s_openapi::api::core::v1::Pod;
use kube::config::{KubeConfigOptions, Kubeconfig};
use rustls::pki_types::pem::PemObject;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Objects per page of a list (`Cluster::for_each_page`).
pub const PAGE: u32 = 500;
/// The most pages of one list: 2,000,000 objects.
pub const PAGES_CAP: usize = 4_000;

/// How long one API call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(15);

/// Why the cluster could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("the kubeconfig {} does not exist", .path.display())]
    NoKubeconfig { path: PathBuf },
    #[error("cannot use the kubeconfig {}", .path.display())]
    Kubeconfig {
        path: PathBuf,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The kubeconfig's token is a JWT whose `exp` has passed: every call would be a 401.
    #[error(
        "the token in the kubeconfig {} expired at {}",
        .path.display(),
        crate::duration::time_text(*.expired)
    )]
    ExpiredToken { path: PathBuf, expired: i64 },
    /// The kubeconfig's user runs a program for its credentials, which would run elevated.
    #[error(
        "the kubeconfig {} runs a credential plugin ({command}) for its user: calicoctl-win does not run programs a kubeconfig names, as on a node it runs as an administrator or as SYSTEM and the plugin would too",
        .path.display()
    )]
    ExecPlugin { path: PathBuf, command: String },
    /// An answer came, and it is not one calicoctl-win can use.
    #[error("the API server {server} answered {what} with something that is not its API's answer")]
    BadAnswer {
        server: String,
        what: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("cannot reach the Kubernetes API server {server}")]
    Unreachable {
        server: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// An answer longer than calicoctl-win reads in one (`guard::TooLong`).
    #[error("the API server {server} answered {what} with more than {} MiB, the most calicoctl-win reads in one answer", .cap >> 20)]
    TooLarge {
        server: String,
        what: String,
        cap: usize,
    },
    #[error("the API server {server} did not answer within {}s ({what})", .after.as_secs())]
    Timeout {
        server: String,
        what: String,
        after: Duration,
    },
    #[error("the API server {server} refused to {verb} {resource}: {code} {message}")]
    Api {
        server: String,
        verb: String,
        resource: String,
        code: u16,
        message: String,
    },
}

impl ClusterError {
    /// What the user can do about it.
    pub fn hint(&self) -> String {
        match self {
            ClusterError::NoKubeconfig { .. } => "pass an admin kubeconfig with --kubeconfig, or set KUBECONFIG (preflight, status and config show skip the cluster with --offline)".into(),
            ClusterError::Kubeconfig { .. } => "check the file with 'kubectl --kubeconfig FILE cluster-info'".into(),
            ClusterError::ExpiredToken { .. } => "an installer kubeconfig lives 2 hours by default: an admin makes a new one with 'calicoctl-win fetch installer-kubeconfig --out-file installer.kubeconfig' (or pass another kubeconfig with --kubeconfig)".into(),
            ClusterError::ExecPlugin { command, .. } => format!(
                "pass --allow-exec-plugin if {command} may run as administrator on this node; otherwise use a kubeconfig with a token or a client certificate"
            ),
            ClusterError::TooLarge { what, .. } => format!(
                "the answer to {what} is larger than calicoctl-win reads at once (long lists are read a page at a time): report it with the command that asked, and how many objects the cluster holds"
            ),
            ClusterError::BadAnswer { .. } => "the server in the kubeconfig may not be the API server (a proxy or a load balancer answering in its place): check it with 'kubectl --kubeconfig FILE get --raw /version', and HTTPS_PROXY/NO_PROXY".into(),
            ClusterError::Unreachable { .. } | ClusterError::Timeout { .. } => {
                "check the server address in the kubeconfig, the network path to it, and HTTPS_PROXY/NO_PROXY (or the WinHTTP proxy: netsh winhttp show proxy); the CA in the kubeconfig must sign the server's certificate".into()
            }
            ClusterError::Api { code: 401, .. } => {
                "the kubeconfig's credentials were rejected: renew the token or pass another kubeconfig with --kubeconfig".into()
            }
            ClusterError::Api { code: 403, verb, resource, .. } => format!(
                "the identity in the kubeconfig may not {verb} {resource}; grant it in a ClusterRole (check with 'kubectl auth can-i {verb} {resource}')"
            ),
            ClusterError::Api { code: 429, .. } => {
                "the API server is overloaded (429 Too Many Requests) or its priority and fairness limits refused this client: run the command again in a minute".into()
            }
            ClusterError::Api { code: 404, resource, .. } => {
                format!("{resource} does not exist: is Calico installed in this cluster, and is this the right cluster?")
            }
            ClusterError::Api { .. } => "see the API server's message above".into(),
        }
    }

    /// Whether the object simply is not there.
    pub fn is_not_found(&self) -> bool {
        matches!(self, ClusterError::Api { code: 404, .. })
    }
}

/// The first cause of `e` of type `T`.
fn cause_of<T: std::error::Error + 'static>(e: &kube::Error) -> Option<&T> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(t) = c.downcast_ref::<T>() {
            return Some(t);
        }
        cause = c.source();
    }
    None
}

/// Whether kube's error is a wait that ran out: the client's read or connect timeout
/// (`read_timeout`, `connect_timeout`, which hyper-timeout reports as an I/O `TimedOut`), not
/// a server that cannot be reached.
fn is_timeout(e: &kube::Error) -> bool {
    cause_of::<std::io::Error>(e).is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
}

/// Whether kube's error is an answer that came but cannot be used (not JSON, too long, not
/// the JSON expected), rather than no answer.
fn is_bad_answer(e: &kube::Error) -> bool {
    if matches!(e, kube::Error::SerdeError(_)) {
        return true;
    }
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if c.is::<guard::NotJson>() || c.is::<guard::TooLong>() || c.is::<guard::Truncated>() {
            return true;
        }
        cause = c.source();
    }
    false
}

/// The program the current context's user runs for its credentials: an `exec` plugin's
/// command, or an `auth-provider`'s `cmd-path` (gcp's), which kube runs as kubectl does.
fn credential_plugin(k: &Kubeconfig) -> Option<String> {
    let context = k.current_context.as_deref()?;
    let user = k
        .contexts
        .iter()
        .find(|c| c.name == context)?
        .context
        .as_ref()?
        .user
        .clone()?;
    let auth = k
        .auth_infos
        .iter()
        .find(|a| a.name == user)?
        .auth_info
        .as_ref()?;
    if let Some(exec) = &auth.exec {
        return Some(
            exec.command
                .clone()
                .unwrap_or_else(|| "an exec plugin".into()),
        );
    }
    auth.auth_provider
        .as_ref()
        .and_then(|p| p.config.get("cmd-path").cloned())
}

/// The cluster of the kubeconfig's current context.
fn current_cluster(k: &Kubeconfig) -> Option<&kube::config::Cluster> {
    let context = k.current_context.as_deref()?;
    let cluster = k
        .contexts
        .iter()
        .find(|c| c.name == context)?
        .context
        .as_ref()?
        .cluster
        .clone();
    k.clusters
        .iter()
        .find(|c| c.name == cluster)?
        .cluster
        .as_ref()
}

/// A server certificate refused for its dates, said with dates: rustls says it in Unix
/// seconds ("verification time 1795449087 (UNIX), but certificate is not valid after ...").
/// rustls's error sits inside an `io::Error`, whose `source()` skips it, so each link is
/// looked into as well.
fn certificate_time(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    use rustls::CertificateError::{ExpiredContext, NotValidYetContext};
    let show = |t: rustls::pki_types::UnixTime| {
        crate::duration::time_text(i64::try_from(t.as_secs()).unwrap_or(i64::MAX))
    };
    let mut link: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = link {
        let inner = err
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .map(|i| i as &(dyn std::error::Error + 'static));
        let tls = err
            .downcast_ref::<rustls::Error>()
            .or_else(|| inner.and_then(|i| i.downcast_ref::<rustls::Error>()));
        match tls {
            Some(rustls::Error::InvalidCertificate(ExpiredContext { time, not_after })) => {
                return Some(format!(
                    "the server's certificate expired at {}; this machine's clock says {}: renew the API server's certificate (kubeadm certs renew), or set this machine's clock right",
                    show(*not_after),
                    show(*time)
                ));
            }
            Some(rustls::Error::InvalidCertificate(NotValidYetContext { time, not_before })) => {
                return Some(format!(
                    "the server's certificate is valid only from {}; this machine's clock says {}: set this machine's clock right",
                    show(*not_before),
                    show(*time)
                ));
            }
            _ => {}
        }
        link = inner.or_else(|| err.source());
    }
    None
}

/// DER bytes as one PEM block.
pub fn pem(label: &str, der: &[u8]) -> String {
    pem::encode_config(
        &pem::Pem::new(label, der),
        pem::EncodeConfig::new().set_line_ending(pem::LineEnding::LF),
    )
}

/// A connected cluster.
pub struct Cluster {
    pub client: kube::Client,
    /// The same client without kube's own retries, for calls whose 429 the caller answers
    /// itself (an eviction a PodDisruptionBudget refuses).
    pub client_without_retries: kube::Client,
    pub server: String,
    /// The CA certificates the admin kubeconfig trusts, as PEM (`None` when it has none).
    pub ca_pem: Option<String>,
    rt: tokio::runtime::Runtime,
    /// The API group Calico's resources are served in, discovered once
    /// (`calico_api::Group`, `Cluster::calico_group`).
    calico_group: std::sync::OnceLock<calico_api::Group>,
    /// The versions of the DatastoreMigration group the server offers, as the same discovery
    /// listed them (`read_migration` asks only those).
    migration_versions: std::sync::OnceLock<Vec<String>>,
    /// The DatastoreMigration as read once (discovery and the facts both want it).
    migration: std::sync::OnceLock<Option<calico_api::Migration>>,
    /// The pods on each node as read once, when the client is kept for one look
    /// (`keep_one_look`); `None` otherwise, when every read asks again.
    one_look: std::sync::Mutex<Option<std::collections::BTreeMap<String, Vec<Pod>>>>,
    /// The server's API group names, listed once (`served` in calico_api.rs).
    pub(super) served_groups: std::sync::OnceLock<Vec<String>>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the client: its config holds the credentials.
        f.debug_struct("Cluster")
            .field("server", &self.server)
            .finish()
    }
}

/// A pod's service account: the directory its token and CA are mounted in, and the API
/// server from `KUBERNETES_SERVICE_HOST` and `KUBERNETES_SERVICE_PORT`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InCluster {
    pub dir: std::path::PathBuf,
    pub server: String,
}

impl InCluster {
    /// Where a pod has its service account mounted: a HostProcess container under
    /// `$CONTAINER_SANDBOX_MOUNT_POINT` (which holds the container's volumes on every
    /// containerd: microsoft/hcsshim#1443), any other at `/var/run/secrets/...`. `None` outside
    /// a pod, or when the pod has no token.
    pub fn detect(env: &std::collections::BTreeMap<String, String>) -> Option<Self> {
        let host = env
            .get("KUBERNETES_SERVICE_HOST")
            .filter(|h| !h.is_empty())?;
        let port = env
            .get("KUBERNETES_SERVICE_PORT")
            .filter(|p| !p.is_empty())
            .map_or("443", String::as_str);
        let base = env
            .get("CONTAINER_SANDBOX_MOUNT_POINT")
            .filter(|m| !m.is_empty())
            .map_or_else(|| std::path::PathBuf::from("/"), std::path::PathBuf::from);
        let dir = ["var", "run", "secrets", "kubernetes.io", "serviceaccount"]
            .iter()
            .fold(base, |p, part| p.join(part));
        if !dir.join("token").is_file() {
            return None;
        }
        let server = if host.contains(':') {
            format!("https://[{host}]:{port}")
        } else {
            format!("https://{host}:{port}")
        };
        Some(Self { dir, server })
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// kube hands a static token to tower-http's bearer layer, which panics on a byte no HTTP
/// header may hold (CR, LF, DEL, other controls): such a token is refused here, without it.
fn refuse_control_in_token(path: &Path) -> Result<(), BoxError> {
    let text = crate::files::read_text_capped(path, crate::files::SMALL_FILE_CAP)?;
    refuse_control_in_token_text(&text)
}

fn refuse_control_in_token_text(text: &str) -> Result<(), BoxError> {
    if let Some(token) = crate::render::kubeconfig::token_of(text)
        && let Some(at) = token
            .bytes()
            .position(|b| b != b'\t' && (b < 0x20 || b == 0x7f))
    {
        return Err(format!(
            "the current user's token holds a control character (byte {at} of {}, code {:#04x}), which no HTTP header may carry; copy the token again without line breaks",
            token.len(),
            token.as_bytes()[at]
        )
        .into());
    }
    Ok(())
}

/// Puts each `tokenFile`'s token in the kubeconfig, trimmed as kubectl trims it (client-go
/// `transport/token_source.go`, `fileTokenSource.Token`: `strings.TrimSpace`), so that a file
/// ending in a line break (CR/LF from a Windows editor) is the token it holds; a control
/// character inside it is said as such. kube's `read_from` made the path absolute.
fn token_files_read(k: &mut Kubeconfig) -> Result<(), BoxError> {
    for a in k.auth_infos.iter_mut().filter_map(|a| a.auth_info.as_mut()) {
        let Some(p) = a.token_file.take() else {
            continue;
        };
        // As client-go: the file's token first, the inline one when the file cannot be read.
        let text = match crate::files::read_text_capped(Path::new(&p), crate::files::SMALL_FILE_CAP)
        {
            Ok(text) => text,
            Err(_) if a.token.is_some() => continue,
            Err(e) => return Err(format!("cannot read its tokenFile {p}: {e}").into()),
        };
        let token = text.trim();
        if let Some(at) = token
            .bytes()
            .position(|b| b != b'\t' && (b < 0x20 || b == 0x7f))
        {
            return Err(format!(
                "its tokenFile {p} holds a control character inside the token (byte {at} of {}), which no HTTP header may carry; write the token on one line",
                token.len()
            )
            .into());
        }
        a.token = Some(secrecy::SecretString::from(token.to_owned()));
    }
    Ok(())
}

/// A kubeconfig whose inline token is a JWT past its `exp` is said as expired, with when,
/// before any call gets a bare 401 for it.
fn refuse_expired_token(path: &Path) -> Result<(), ClusterError> {
    let Ok(text) = crate::files::read_text_capped(path, crate::files::SMALL_FILE_CAP) else {
        return Ok(());
    };
    refuse_expired_token_text(path, &text)
}

fn refuse_expired_token_text(path: &Path, text: &str) -> Result<(), ClusterError> {
    let token = crate::render::kubeconfig::token_of(text).map(credentials::Token::new);
    match token.and_then(|t| t.expiry()) {
        Some(exp) if exp <= crate::duration::now() => Err(ClusterError::ExpiredToken {
            path: path.to_owned(),
            expired: exp,
        }),
        _ => Ok(()),
    }
}

/// Reads a file of the host whole: `None` when it is not there, else its bytes or why not.
pub type ReadFile<'a> = dyn Fn(&str) -> Result<Option<Vec<u8>>, String> + 'a;

/// A kubeconfig kept on the node (the node-join scripts' `C:\\k\\config`), read through the
/// host's files with the files it names. `Debug` shows its path only: it holds credentials.
pub struct OnHost {
    pub path: String,
    text: String,
    /// The files it names, by their full path on the host; one missing is not here.
    files: std::collections::BTreeMap<String, Vec<u8>>,
}

impl std::fmt::Debug for OnHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnHost")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl OnHost {
    /// Reads the kubeconfig at `path` and the files it names through `read`; `None` when
    /// there is no file at `path`. A kubeconfig that does not parse is read as text only, and
    /// refused when it is used.
    pub fn read(path: &str, read: &ReadFile) -> Result<Option<Self>, String> {
        let Some(bytes) = read(path)? else {
            return Ok(None);
        };
        let text = String::from_utf8(bytes).map_err(|_| format!("{path} is not UTF-8"))?;
        let mut k = Self {
            path: path.to_owned(),
            text,
            files: Default::default(),
        };
        if let Ok(mut kubeconfig) = Kubeconfig::from_yaml(&k.text) {
            let files = std::cell::RefCell::new(std::collections::BTreeMap::new());
            let _ = inline_files(&mut kubeconfig, &k.dir(), &|p| {
                let got = read(p)?;
                if let Some(b) = &got {
                    files.borrow_mut().insert(p.to_owned(), b.clone());
                }
                Ok(got)
            });
            k.files = files.into_inner();
        }
        Ok(Some(k))
    }

    fn dir(&self) -> String {
        self.path
            .rsplit_once('\\')
            .map_or(String::new(), |(d, _)| d.to_owned())
    }
}

/// Puts the files a kubeconfig names into it, read through `read`: a path with a drive or a
/// UNC prefix as it is, any other from `dir` (kubectl resolves a kubeconfig's relative paths
/// from its directory: client-go `ResolveLocalPaths`).
fn inline_files(k: &mut Kubeconfig, dir: &str, read: &ReadFile) -> Result<(), BoxError> {
    use base64::Engine;
    let b64 = |b: Vec<u8>| base64::engine::general_purpose::STANDARD.encode(b);
    let load = |p: &str| -> Result<Vec<u8>, BoxError> {
        let absolute = p.as_bytes().get(1) == Some(&b':') || p.starts_with("\\\\");
        let full = if absolute || dir.is_empty() {
            p.to_owned()
        } else {
            crate::layout::join(dir, p)
        };
        read(&full)?.ok_or_else(|| format!("{full}, which it names, does not exist").into())
    };
    for c in k.clusters.iter_mut().filter_map(|c| c.cluster.as_mut()) {
        if let Some(p) = c.certificate_authority.take() {
            c.certificate_authority_data = Some(b64(load(&p)?));
        }
    }
    for a in k.auth_infos.iter_mut().filter_map(|a| a.auth_info.as_mut()) {
        if let Some(p) = a.client_certificate.take() {
            a.client_certificate_data = Some(b64(load(&p)?));
        }
        if let Some(p) = a.client_key.take() {
            a.client_key_data = Some(secrecy::SecretString::from(b64(load(&p)?)));
        }
        if let Some(p) = a.token_file.take() {
            let token = String::from_utf8_lossy(&load(&p)?).trim().to_owned();
            a.token = Some(secrecy::SecretString::from(token));
        }
    }
    Ok(())
}

/// kube's client config from the kubeconfig. Loading may run an exec credential plugin, so
/// it is bounded like every call; the timer must be made inside the runtime, hence the async
/// block.
fn load(rt: &tokio::runtime::Runtime, kubeconfig: Kubeconfig) -> Result<kube::Config, BoxError> {
    let loading = rt.block_on(async {
        tokio::time::timeout(
            CALL_TIMEOUT,
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()),
        )
        .await
    });
    match loading {
        Err(_) => Err(format!(
            "loading it took longer than {}s (a credential plugin that does not return?)",
            CALL_TIMEOUT.as_secs()
        )
        .into()),
        Ok(r) => Ok(r?),
    }
}

/// The CA certificates the config trusts, as PEM (`None` when it has none).
fn ca_pem(config: &kube::Config) -> Result<Option<String>, BoxError> {
    let ca_der = match (&config.root_cert, &config.root_cert_file) {
        (Some(certs), _) => certs.clone(),
        (None, Some(file)) => {
            let text = fs_err::read(file)?;
            rustls::pki_types::CertificateDer::pem_slice_iter(&text)
                .filter_map(Result::ok)
                .map(|c| c.to_vec())
                .collect()
        }
        (None, None) => Vec::new(),
    };
    Ok((!ca_der.is_empty()).then(|| ca_der.iter().map(|d| pem("CERTIFICATE", d)).collect()))
}

impl Cluster {
    /// Connects with the admin kubeconfig at `path`; `env` is the process environment, for
    /// the proxy variables.
    /// Several files (a `$KUBECONFIG` list) are merged as kubectl merges them: the first file
    /// to name a cluster, user or context, or to set `current-context`, wins (kube's
    /// `Kubeconfig::merge`, which follows client-go `tools/clientcmd/loader.go`
    /// `ClientConfigLoadingRules.Load`).
    pub fn connect(
        paths: &[std::path::PathBuf],
        env: &std::collections::BTreeMap<String, String>,
        allow_exec_plugin: bool,
    ) -> Result<Self, ClusterError> {
        let Some(path) = paths.first().filter(|p| p.exists()) else {
            return Err(ClusterError::NoKubeconfig {
                path: paths.first().cloned().unwrap_or_default(),
            });
        };
        let bad = |source: BoxError| ClusterError::Kubeconfig {
            path: path.to_owned(),
            source,
        };
        let mut kubeconfig = Kubeconfig::default();
        for each in paths.iter().filter(|p| p.exists()) {
            let bad = |source: BoxError| ClusterError::Kubeconfig {
                path: each.to_owned(),
                source,
            };
            refuse_control_in_token(each).map_err(bad)?;
            refuse_expired_token(each)?;
            let read = Kubeconfig::read_from(each).map_err(|e| bad(Box::new(e)))?;
            kubeconfig = kubeconfig.merge(read).map_err(|e| bad(Box::new(e)))?;
        }
        token_files_read(&mut kubeconfig).map_err(bad)?;
        if let Some(command) = credential_plugin(&kubeconfig).filter(|_| !allow_exec_plugin) {
            return Err(ClusterError::ExecPlugin {
                path: path.to_owned(),
                command,
            });
        }
        Self::from_kubeconfig(kubeconfig, env).map_err(bad)
    }

    /// Connects with a kubeconfig kept on the node (`OnHost`, read through the host's files):
    /// the files it names are put in it, so the Kubernetes client opens no path of its own.
    /// The same checks as `connect`.
    pub fn connect_on_host(
        k: &OnHost,
        env: &std::collections::BTreeMap<String, String>,
        allow_exec_plugin: bool,
    ) -> Result<Self, ClusterError> {
        let named = PathBuf::from(&k.path);
        let bad = |source: BoxError| ClusterError::Kubeconfig {
            path: named.clone(),
            source,
        };
        refuse_control_in_token_text(&k.text).map_err(bad)?;
        refuse_expired_token_text(&named, &k.text)?;
        let mut kubeconfig = Kubeconfig::from_yaml(&k.text).map_err(|e| bad(Box::new(e)))?;
        if let Some(command) = credential_plugin(&kubeconfig).filter(|_| !allow_exec_plugin) {
            return Err(ClusterError::ExecPlugin {
                path: named,
                command,
            });
        }
        inline_files(&mut kubeconfig, &k.dir(), &|p| Ok(k.files.get(p).cloned())).map_err(bad)?;
        Self::from_kubeconfig(kubeconfig, env).map_err(bad)
    }

    /// Connects as the pod's service account, from its mounted token and CA (`sa.dir`) and the
    /// API server Kubernetes names in the pod's environment. The token file is read again as
    /// the kubelet renews it.
    pub fn connect_in_cluster(
        sa: &InCluster,
        env: &std::collections::BTreeMap<String, String>,
    ) -> Result<Self, ClusterError> {
        let file = |name: &str| Some(sa.dir.join(name).to_string_lossy().into_owned());
        let kubeconfig = crate::render::kubeconfig::document(
            kube::config::Cluster {
                server: Some(sa.server.clone()),
                certificate_authority: file("ca.crt"),
                ..Default::default()
            },
            kube::config::AuthInfo {
                token_file: file("token"),
                ..Default::default()
            },
            None,
        );
        Self::from_kubeconfig(kubeconfig, env).map_err(|source| ClusterError::Kubeconfig {
            path: sa.dir.join("token"),
            source,
        })
    }

    /// Connects with a kubeconfig's text read from the node (`path` names it in errors); a
    /// credential plugin is refused unless allowed, as with `connect`.
    pub fn connect_text(
        path: &str,
        text: &str,
        env: &std::collections::BTreeMap<String, String>,
        allow_exec_plugin: bool,
    ) -> Result<Self, ClusterError> {
        let bad = |source: BoxError| ClusterError::Kubeconfig {
            path: path.into(),
            source,
        };
        let kubeconfig = Kubeconfig::from_yaml(text).map_err(|e| bad(Box::new(e)))?;
        if let Some(command) = credential_plugin(&kubeconfig).filter(|_| !allow_exec_plugin) {
            return Err(ClusterError::ExecPlugin {
                path: path.into(),
                command,
            });
        }
        Self::from_kubeconfig(kubeconfig, env).map_err(bad)
    }

    /// Connects as calico-node: its kubeconfig's text (`path` names it in errors) with its
    /// current user's credential replaced by `token`, so nothing the kubeconfig names is run
    /// or read for it.
    pub fn connect_as_node(
        path: &str,
        text: &str,
        token: &credentials::Token,
        env: &std::collections::BTreeMap<String, String>,
    ) -> Result<Self, ClusterError> {
        let bad = |source: BoxError| ClusterError::Kubeconfig {
            path: path.into(),
            source,
        };
        let mut kubeconfig = Kubeconfig::from_yaml(text).map_err(|e| bad(Box::new(e)))?;
        let user = kubeconfig.current_context.clone().and_then(|name| {
            kubeconfig
                .contexts
                .iter()
                .find(|c| c.name == name)
                .and_then(|c| c.context.as_ref()?.user.clone())
        });
        let auth = user
            .and_then(|u| kubeconfig.auth_infos.iter_mut().find(|a| a.name == u))
            .ok_or_else(|| bad("it has no current context with a user".into()))?;
        auth.auth_info = Some(kube::config::AuthInfo {
            token: Some(secrecy::SecretString::from(token.expose().to_owned())),
            ..Default::default()
        });
        Self::from_kubeconfig(kubeconfig, env).map_err(bad)
    }

    /// The clients for a kubeconfig, bounded as every call is; `env` is the process
    /// environment, for the proxy variables.
    fn from_kubeconfig(
        kubeconfig: Kubeconfig,
        env: &std::collections::BTreeMap<String, String>,
    ) -> Result<Self, BoxError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let kubeconfig_proxy = current_cluster(&kubeconfig).and_then(|c| c.proxy_url.clone());
        let mut config = load(&rt, kubeconfig)?;
        config.proxy_url = proxy::choose(&config.cluster_url, kubeconfig_proxy.as_deref(), env)?;
        config.connect_timeout = Some(Duration::from_secs(10));
        config.read_timeout = Some(CALL_TIMEOUT);
        config.write_timeout = Some(CALL_TIMEOUT);
        let ca_pem = ca_pem(&config)?;
        let server = config
            .cluster_url
            .to_string()
            .trim_end_matches('/')
            .to_owned();
        let (client, client_without_retries) = {
            let _guard = rt.enter();
            let mut bare = config.clone();
            bare.default_retry = false;
            let guarded = |c: kube::Config| -> Result<kube::Client, kube::Error> {
                Ok(kube::client::ClientBuilder::try_from(c)?
                    .with_layer(&guard::GuardLayer {
                        cap: guard::BODY_CAP,
                    })
                    .build())
            };
            (guarded(config)?, guarded(bare)?)
        };
        Ok(Self {
            client,
            client_without_retries,
            server,
            ca_pem,
            rt,
            calico_group: std::sync::OnceLock::new(),
            migration_versions: std::sync::OnceLock::new(),
            migration: std::sync::OnceLock::new(),
            one_look: std::sync::Mutex::new(None),
            served_groups: std::sync::OnceLock::new(),
        })
    }

    /// From now on, the pods on a node are read once for this client: one look at the node
    /// (`status`), whose judges all read the same pods. Not for commands that change what
    /// they read (a drain, a repair) and read it again.
    pub fn keep_one_look(&self) {
        if let Ok(mut memo) = self.one_look.lock() {
            memo.get_or_insert_with(Default::default);
        }
    }

    /// The pods on `node` as this look read them, if it keeps them and has read them.
    pub(crate) fn looked_at_pods(&self, node: &str) -> Option<Vec<Pod>> {
        self.one_look.lock().ok()?.as_ref()?.get(node).cloned()
    }

    /// Keeps the pods on `node` read now, when this client is kept for one look.
    pub(crate) fn keep_pods(&self, node: &str, pods: &[Pod]) {
        if let Ok(mut memo) = self.one_look.lock()
            && let Some(memo) = memo.as_mut()
        {
            memo.insert(node.to_owned(), pods.to_vec());
        }
    }

    /// Runs one API call, bounded in time; `verb` and `resource` name it in errors.
    pub fn call<T>(
        &self,
        verb: &str,
        resource: &str,
        fut: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, ClusterError> {
        self.call_within(CALL_TIMEOUT, (verb, resource), fut)
    }

    /// `call`, bounded by `within` (at most the client's own timeouts, `CALL_TIMEOUT`).
    pub fn call_within<T>(
        &self,
        within: Duration,
        (verb, resource): (&str, &str),
        fut: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, ClusterError> {
        let within = within.min(CALL_TIMEOUT);
        let result = self
            .rt
            .block_on(async { tokio::time::timeout(within, fut).await });
        match result {
            Err(_) => Err(ClusterError::Timeout {
                server: self.server.clone(),
                what: format!("{verb} {resource}"),
                after: within,
            }),
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) if is_timeout(&e) => Err(ClusterError::Timeout {
                server: self.server.clone(),
                what: format!("{verb} {resource}"),
                after: within,
            }),
            Ok(Err(e)) if cause_of::<guard::TooLong>(&e).is_some() => Err(ClusterError::TooLarge {
                server: self.server.clone(),
                what: format!("{verb} {resource}"),
                cap: cause_of::<guard::TooLong>(&e).map_or(0, |t| t.cap),
            }),
            Ok(Err(kube::Error::Api(status))) => Err(ClusterError::Api {
                server: self.server.clone(),
                verb: verb.to_owned(),
                resource: resource.to_owned(),
                code: status.code,
                message: status.message.clone(),
            }),
            Ok(Err(e)) if is_bad_answer(&e) => Err(ClusterError::BadAnswer {
                server: self.server.clone(),
                what: format!("{verb} {resource}"),
                source: Box::new(e),
            }),
            Ok(Err(e)) => Err(ClusterError::Unreachable {
                server: self.server.clone(),
                source: match certificate_time(&e) {
                    Some(text) => text.into(),
                    None => Box::new(e),
                },
            }),
        }
    }

    /// Lists `api` a page of `PAGE` objects at a time (each page well under the answer cap),
    /// giving each page's items to `each`; `Ok(false)` when the resource does not exist. A
    /// server that keeps sending continue tokens is stopped after `PAGES_CAP` pages.
    pub fn for_each_page<E: From<ClusterError>>(
        &self,
        api: &kube::Api<kube::api::DynamicObject>,
        what: &str,
        each: impl FnMut(Vec<kube::api::DynamicObject>) -> Result<(), E>,
    ) -> Result<bool, E> {
        let base = kube::api::ListParams::default().limit(PAGE);
        self.for_each_page_of(api, what, &base, each)
    }

    /// `for_each_page` of any kind, with `base`'s selectors and page size (`limit`), as
    /// kubectl pages a list (apimachinery `ListOptions`: `limit`, then `continue`).
    pub fn for_each_page_of<K, E>(
        &self,
        api: &kube::Api<K>,
        what: &str,
        base: &kube::api::ListParams,
        mut each: impl FnMut(Vec<K>) -> Result<(), E>,
    ) -> Result<bool, E>
    where
        K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
        E: From<ClusterError>,
    {
        let mut token: Option<String> = None;
        for _ in 0..PAGES_CAP {
            let mut lp = base.clone();
            if let Some(t) = &token {
                lp = lp.continue_token(t);
            }
            let Some(page) = self.call_opt("list", what, api.list(&lp))? else {
                return Ok(false);
            };
            each(page.items)?;
            token = page.metadata.continue_.filter(|t| !t.is_empty());
            if token.is_none() {
                return Ok(true);
            }
        }
        Err(ClusterError::BadAnswer {
            server: self.server.clone(),
            what: format!("list {what}"),
            source: format!("it still had more after {PAGES_CAP} pages of {PAGE}").into(),
        }
        .into())
    }

    /// Like `call`, with 404 as `None`.
    pub fn call_opt<T>(
        &self,
        verb: &str,
        resource: &str,
        fut: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<Option<T>, ClusterError> {
        match self.call(verb, resource, fut) {
            Ok(v) => Ok(Some(v)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }
}

impl crate::error::Diagnose for ClusterError {
    fn diagnose(&self) -> Option<crate::error::Diagnosis> {
        use crate::error::Kind;
        let kind = match self {
            Self::NoKubeconfig { .. } => Kind::NoAdminKubeconfig,
            Self::Kubeconfig { .. } | Self::ExecPlugin { .. } | Self::ExpiredToken { .. } => {
                Kind::BadKubeconfig
            }
            Self::Unreachable { .. } => Kind::ClusterUnreachable,
            Self::BadAnswer { .. } | Self::TooLarge { .. } => Kind::ClusterBadAnswer,
            Self::Timeout { .. } => Kind::ClusterTimeout,
            Self::Api { .. } => Kind::ClusterRefused,
        };
        let exit = match self {
            Self::Timeout { .. } => crate::error::Exit::Timeout,
            // A kubeconfig given that cannot be read or used: bad input.
            Self::NoKubeconfig { .. }
            | Self::Kubeconfig { .. }
            | Self::ExecPlugin { .. }
            | Self::ExpiredToken { .. } => crate::error::Exit::Usage,
            Self::Unreachable { .. }
            | Self::Api { .. }
            | Self::BadAnswer { .. }
            | Self::TooLarge { .. } => crate::error::Exit::Failed,
        };
        Some(crate::error::Diagnosis {
            exit,
            kind,
            hint: Some(self.hint()),
        })
    }
}

#[cfg(test)]
mod on_host_tests {
    use super::*;

    /// The files a kubeconfig on the node names are read through the host: a relative one
    /// from the kubeconfig's directory (client-go `ResolveLocalPaths`), one with a drive or a
    /// UNC prefix as it is; a token file's token is trimmed; `Debug` shows the path only.
    #[test]
    fn the_files_it_names_are_read_from_its_directory_or_as_given() {
        let text = "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://10.0.0.1:6443\n    certificate-authority: ca.pem\nusers:\n- name: u\n  user:\n    client-certificate: D:\\pki\\client.crt\n    client-key: \\\\share\\pki\\client.key\n    tokenFile: token\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n";
        let files: std::collections::BTreeMap<&str, &[u8]> = [
            (r"C:\k\config", text.as_bytes()),
            (r"C:\k\ca.pem", &b"CA"[..]),
            (r"D:\pki\client.crt", &b"CRT"[..]),
            (r"\\share\pki\client.key", &b"KEY"[..]),
            (r"C:\k\token", &b"secret-token\r\n"[..]),
        ]
        .into();
        let read = |p: &str| Ok(files.get(p).map(|b| b.to_vec()));
        let k = OnHost::read(r"C:\k\config", &read)
            .expect("read")
            .expect("there");
        assert_eq!(k.files.len(), 4, "{:?}", k.files.keys());
        assert!(!format!("{k:?}").contains("secret"), "{k:?}");
        let mut kubeconfig = Kubeconfig::from_yaml(&k.text).expect("yaml");
        inline_files(&mut kubeconfig, &k.dir(), &|p| Ok(k.files.get(p).cloned())).expect("inline");
        let cluster = kubeconfig.clusters[0].cluster.as_ref().expect("cluster");
        assert_eq!(cluster.certificate_authority, None);
        assert_eq!(cluster.certificate_authority_data.as_deref(), Some("Q0E="));
        let user = kubeconfig.auth_infos[0].auth_info.as_ref().expect("user");
        assert_eq!(user.client_certificate_data.as_deref(), Some("Q1JU"));
        use secrecy::ExposeSecret;
        assert_eq!(
            user.token
                .as_ref()
                .map(|t| t.expose_secret().to_owned())
                .as_deref(),
            Some("secret-token")
        );
        // A file it names that is not there is said, with its full path.
        let without_ca = |p: &str| {
            Ok(files
                .get(p)
                .filter(|_| !p.ends_with("ca.pem"))
                .map(|b| b.to_vec()))
        };
        let k = OnHost::read(r"C:\k\config", &without_ca)
            .expect("read")
            .expect("there");
        let err = Cluster::connect_on_host(&k, &Default::default(), false).expect_err("no CA");
        assert!(
            crate::error::chain(&err).contains(r"C:\k\ca.pem, which it names, does not exist"),
            "{}",
            crate::error::chain(&err)
        );
        assert!(OnHost::read(r"C:\k\none", &read).expect("read").is_none());
    }
}

#[cfg(test)]
mod answer_tests {
    use super::*;

    /// A client read or connect timeout (hyper-timeout reports an I/O `TimedOut`) is a wait that
    /// ran out (`cluster-timeout`, exit 4), not an unreachable server.
    #[test]
    fn a_read_timeout_is_a_timeout() {
        let timed_out = kube::Error::Service(Box::new(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "read timed out",
        )));
        assert!(is_timeout(&timed_out));
        let refused = kube::Error::Service(Box::new(std::io::Error::from(
            std::io::ErrorKind::ConnectionRefused,
        )));
        assert!(!is_timeout(&refused));
        let too_long = kube::Error::Service(Box::new(guard::TooLong { cap: 8 << 20 }));
        assert_eq!(
            cause_of::<guard::TooLong>(&too_long).map(|t| t.cap),
            Some(8 << 20)
        );
    }

    /// A 429 and an answer over the cap have their own words, not the proxy or CA hint.
    #[test]
    fn an_overload_and_an_over_cap_answer_say_what_they_are() {
        let server = "https://10.0.0.1:6443".to_owned();
        let busy = ClusterError::Api {
            server: server.clone(),
            verb: "list".into(),
            resource: "pods".into(),
            code: 429,
            message: "Too Many Requests".into(),
        };
        assert!(busy.hint().contains("overloaded"), "{}", busy.hint());
        let big = ClusterError::TooLarge {
            server,
            what: "list nodes".into(),
            cap: 8 << 20,
        };
        assert!(big.to_string().contains("more than 8 MiB"), "{big}");
        assert!(!big.hint().contains("proxy"), "{}", big.hint());
        for e in [&busy, &big] {
            assert!(!e.hint().contains("HTTPS_PROXY"), "{}", e.hint());
        }
    }
}
