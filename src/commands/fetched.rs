//! The documents of the `fetch` commands: what was fetched, and where it was written.

/// `fetch kubeconfig`'s document; `refreshed` false when the token on the node lasts long
/// enough (`--refresh-if-expiring-within`).
#[derive(Default, serde::Serialize)]
pub(crate) struct Kubeconfig<'a> {
    pub path: &'a str,
    pub changed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refreshed: Option<bool>,
    #[serde(flatten)]
    pub from: Option<TokenFrom<'a>>,
    /// When the token expires (`null`: it does not); absent in a dry run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires: Option<Option<String>>,
}

impl<'a> Kubeconfig<'a> {
    /// A dry run's: what would be written.
    pub fn planned(path: &'a str, from: TokenFrom<'a>) -> Self {
        let (dry_run, from) = (Some(true), Some(from));
        Self {
            path,
            dry_run,
            from,
            ..Self::default()
        }
    }

    /// Written (`from` given) or still valid (`from` none, nothing written).
    pub fn done(
        path: &'a str,
        changed: bool,
        from: Option<TokenFrom<'a>>,
        expires: Option<String>,
    ) -> Self {
        let (refreshed, expires) = (Some(from.is_some()), Some(expires));
        Self {
            path,
            changed,
            refreshed,
            from,
            expires,
            ..Self::default()
        }
    }
}

/// Whose token, from where, and how: `token-request` or `legacy-secret`.
#[derive(serde::Serialize)]
#[cfg_attr(test, derive(Default))]
pub(crate) struct TokenFrom<'a> {
    pub method: &'a str,
    pub namespace: &'a str,
    pub service_account: &'a str,
    pub server: &'a str,
}

/// `fetch installer-kubeconfig`: the installer's kubeconfig written with a short-lived token.
#[derive(serde::Serialize)]
#[cfg_attr(test, derive(Default))]
pub(crate) struct InstallerKubeconfig<'a> {
    pub path: String,
    pub namespace: &'a str,
    pub service_account: &'a str,
    pub server: &'a str,
    pub expires: Option<String>,
}

/// `fetch etcd-certs`' document.
#[derive(serde::Serialize)]
#[cfg_attr(test, derive(Default))]
pub(crate) struct EtcdCerts<'a> {
    pub secret: String,
    pub endpoints: &'a [String],
    pub dry_run: bool,
    pub files: Vec<EtcdFile<'a>>,
}

/// One certificate file of `fetch etcd-certs`.
#[derive(serde::Serialize)]
pub(crate) struct EtcdFile<'a> {
    pub setting: &'a str,
    pub path: &'a str,
    pub changed: bool,
}

/// `fetch release --dry-run`: what would be obtained, and where it would be extracted.
#[derive(serde::Serialize)]
pub(crate) struct ReleasePlan<'a> {
    pub dry_run: bool,
    pub source: String,
    pub output_dir: &'a std::path::Path,
}

/// `fetch release`'s document.
#[derive(serde::Serialize)]
pub(crate) struct ReleaseFetched<'a> {
    pub zip: &'a str,
    pub sha256: &'a str,
    pub downloaded: bool,
    pub version: Option<&'a str>,
    pub binary: &'a crate::release::Binary,
    pub extracted: &'a std::path::Path,
}
