//! Flags shared by several commands, turned into the domain's values and checked: a bad
//! value is a usage error naming the flag.

use crate::cli::ReleaseArgs;
use crate::error::UsageError;
use crate::release::{self, Source, Want};

/// The release flags (`--release-zip`, `--calico-version`, `--sha256` ...), checked.
pub fn release_want(a: &ReleaseArgs) -> anyhow::Result<Want> {
    let version = (a.calico_version.as_deref())
        .map(|v| calico_version(v, "the cluster's is used"))
        .transpose()?;
    let source = match &a.release_zip {
        Some(s) => Source::parse(s),
        None => Source::Url(release::official_url(
            version
                .as_deref()
                .unwrap_or(release::DEFAULT_CALICO_VERSION),
        )),
    };
    let sha256 = a.sha256.as_deref().map(sha256).transpose()?;
    let ca_pem = match &a.release_ca_cert {
        Some(p) => {
            let pem = crate::files::read_capped(p, crate::files::SMALL_FILE_CAP).map_err(|e| {
                UsageError::new(
                    format!("cannot read --release-ca-cert: {e}"),
                    "pass the file of the CA certificate(s) in PEM form",
                )
            })?;
            // Checked now, not only when a download needs it.
            let why = match reqwest::Certificate::from_pem_bundle(&pem) {
                Ok(certs) if !certs.is_empty() => None,
                Ok(_) => Some("holds no PEM certificate".to_owned()),
                Err(e) => Some(format!("not PEM certificates: {e}")),
            };
            if let Some(why) = why {
                return Err(UsageError::new(
                    format!("--release-ca-cert {}: {why}", p.display()),
                    "pass the CA certificate(s) in PEM form (-----BEGIN CERTIFICATE-----)",
                )
                .into());
            }
            Some(pem)
        }
        None => None,
    };
    let chosen = version.is_some() || a.release_zip.is_some();
    let version = version.or_else(|| {
        a.release_zip
            .is_none()
            .then(|| release::DEFAULT_CALICO_VERSION.to_owned())
    });
    Ok(Want {
        source,
        chosen,
        sha256,
        version,
        allow_http: a.allow_http,
        skip_checksum: a.insecure_skip_checksum,
        ca_pem,
        timeout: a.download_timeout,
        idle_timeout: a.download_idle_timeout,
    })
}

/// `--calico-version`, checked, without a leading `v`; `otherwise` says what goes without it.
pub fn calico_version(v: &str, otherwise: &str) -> Result<String, UsageError> {
    let v = v.trim_start_matches('v');
    match release::CalicoVersion::parse_release(v) {
        Ok(_) => Ok(v.to_owned()),
        Err(why) => Err(UsageError::new(
            format!("--calico-version: {why}"),
            format!("write the release like 3.30.2 (without --calico-version, {otherwise})"),
        )),
    }
}

/// `--sha256`, checked.
pub fn sha256(s: &str) -> Result<String, UsageError> {
    release::parse_sha256(s)
        .map_err(|e| UsageError::new(e.to_string(), "copy the checksum from the release page"))
}
