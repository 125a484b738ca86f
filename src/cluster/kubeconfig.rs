//! Kubeconfigs read safely: the admin's files, a kubeconfig kept on the node, a pod's service
//! account; tokens refused before kube sees them (control bytes, expired), the files a
//! kubeconfig names put in it, its CA as PEM.

use super::error::ClusterError;
use super::token::credentials;
use kube::config::{KubeConfigOptions, Kubeconfig};
use rustls::pki_types::pem::PemObject;
use std::path::Path;

/// The program the current context's user runs for its credentials: an `exec` plugin's
/// command, or an `auth-provider`'s `cmd-path` (gcp's), which kube runs as kubectl does.
pub(super) fn credential_plugin(k: &Kubeconfig) -> Option<String> {
    let user = current_context(k)?.user.clone()?;
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

/// The kubeconfig's current context.
pub(super) fn current_context(k: &Kubeconfig) -> Option<&kube::config::Context> {
    let name = k.current_context.as_deref()?;
    k.contexts.iter().find(|c| c.name == name)?.context.as_ref()
}

/// The cluster of the kubeconfig's current context.
pub(super) fn current_cluster(k: &Kubeconfig) -> Option<&kube::config::Cluster> {
    let cluster = &current_context(k)?.cluster;
    k.clusters
        .iter()
        .find(|c| &c.name == cluster)?
        .cluster
        .as_ref()
}

/// DER bytes as one PEM block.
pub fn pem(label: &str, der: &[u8]) -> String {
    pem::encode_config(
        &pem::Pem::new(label, der),
        pem::EncodeConfig::new().set_line_ending(pem::LineEnding::LF),
    )
}

/// A pod's service account: the directory its token and CA are mounted in, and the API
/// server from `KUBERNETES_SERVICE_HOST` and `KUBERNETES_SERVICE_PORT`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InCluster {
    pub dir: std::path::PathBuf,
    pub server: String,
}

impl InCluster {
    /// Where a pod has its service account: a HostProcess container's under
    /// `$CONTAINER_SANDBOX_MOUNT_POINT` (its volumes on every containerd: microsoft/hcsshim#1443),
    /// any other's at `/var/run/secrets/...`. `None` outside a pod, or without a token.
    pub fn detect(env: &std::collections::BTreeMap<String, String>) -> Option<Self> {
        let var = |k: &str| env.get(k).map(String::as_str).filter(|v| !v.is_empty());
        let host = var("KUBERNETES_SERVICE_HOST")?;
        let port = var("KUBERNETES_SERVICE_PORT").unwrap_or("443");
        let base = std::path::PathBuf::from(var("CONTAINER_SANDBOX_MOUNT_POINT").unwrap_or("/"));
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

pub(super) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Where a token holds a byte no HTTP header may carry (CR, LF, DEL, other controls).
fn control_at(token: &str) -> Option<usize> {
    token
        .bytes()
        .position(|b| b != b'\t' && (b < 0x20 || b == 0x7f))
}

/// kube hands a static token to tower-http's bearer layer, which panics on a byte no HTTP
/// header may hold: such a token is refused here, without it.
pub(super) fn refuse_control_in_token_text(text: &str) -> Result<(), BoxError> {
    if let Some(token) = crate::render::kubeconfig::token_of(text)
        && let Some(at) = control_at(&token)
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

/// Puts each `tokenFile`'s token in the kubeconfig, trimmed as kubectl does (client-go
/// `transport/token_source.go` `fileTokenSource.Token`: `strings.TrimSpace`: a Windows
/// editor's CR/LF); a control character inside it is said. `read_from` made the path absolute.
pub(super) fn token_files_read(k: &mut Kubeconfig) -> Result<(), BoxError> {
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
        if let Some(at) = control_at(token) {
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

/// An inline token that is a JWT past its `exp` is said expired, before a bare 401.
pub(super) fn refuse_expired_token_text(path: &Path, text: &str) -> Result<(), ClusterError> {
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
    pub(super) text: String,
    /// The files it names, by their full path on the host; one missing is not here.
    pub(super) files: std::collections::BTreeMap<String, Vec<u8>>,
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
    /// there is none. One that does not parse is kept as text, refused when used.
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

    pub(super) fn dir(&self) -> String {
        self.path
            .rsplit_once('\\')
            .map_or(String::new(), |(d, _)| d.to_owned())
    }
}

/// Puts the files a kubeconfig names into it, read through `read`: a path with a drive or a
/// UNC prefix as it is, any other from `dir` (kubectl resolves a kubeconfig's relative paths
/// from its directory: client-go `ResolveLocalPaths`).
pub(super) fn inline_files(k: &mut Kubeconfig, dir: &str, read: &ReadFile) -> Result<(), BoxError> {
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

/// kube's client config from the kubeconfig, bounded by `within` like every call (loading may
/// run an exec plugin); the timer is made inside the runtime.
pub(super) fn load(
    rt: &tokio::runtime::Runtime,
    kubeconfig: Kubeconfig,
    within: std::time::Duration,
) -> Result<kube::Config, BoxError> {
    let loading = rt.block_on(async {
        tokio::time::timeout(
            within,
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()),
        )
        .await
    });
    match loading {
        Err(_) => Err(format!(
            "loading it took longer than {}s (a credential plugin that does not return?)",
            within.as_secs()
        )
        .into()),
        Ok(r) => Ok(r?),
    }
}

/// The CA certificates the config trusts, as PEM (`None` when it has none).
pub(super) fn ca_pem(config: &kube::Config) -> Result<Option<String>, BoxError> {
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

#[cfg(test)]
mod on_host_tests {
    use super::*;

    /// The files a kubeconfig on the node names are read through the host: a relative one
    /// from the kubeconfig's directory (client-go `ResolveLocalPaths`), one with a drive or a
    /// UNC prefix as it is; a token file's token is trimmed; `Debug` shows the path only. A
    /// file missing is named: tests/lifecycle/host_defaults.rs
    /// `the_admin_kubeconfig_is_found_at_c_k_config_after_the_usual_places`.
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
        assert!(OnHost::read(r"C:\k\none", &read).expect("read").is_none());
    }
}
