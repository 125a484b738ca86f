//! The files an install wants on the host: the release's binaries and CNI plugins, and how
//! each one's contents are known (rendered, extracted, or only once the release is fetched).

use crate::apply::Content;
use crate::config::Config;
use crate::config::types::Backend;
use crate::host::Host;
use crate::release::{Binary, CalicoVersion, Extracted, Want};
use crate::render::{self, CniTemplate, HostFacts, OsBuild};
use anyhow::Context as _;

/// What a rendered file's `from` says.
pub const RENDERED: &str = "rendered";

/// A file install puts on the host.
#[derive(Clone, Debug)]
pub struct DesiredFile {
    pub path: String,
    pub from: String,
    pub content: Content,
    pub sha256: Option<String>,
    pub secret: bool,
}

impl DesiredFile {
    /// A file to write at `path`; a local source is hashed now (an unreadable one is an error).
    pub fn new(
        path: String,
        from: impl Into<String>,
        content: Content,
        secret: bool,
    ) -> anyhow::Result<Self> {
        let sha256 = match &content {
            Content::Bytes(b) => Some(crate::files::sha256_hex(b)),
            Content::Local(p) => Some(
                crate::files::sha256_file(p)
                    .with_context(|| format!("cannot read {}", p.display()))?,
            ),
            Content::OnNode(p) => anyhow::bail!("{p} is on the node: stage it with its checksum"),
            Content::Pending => None,
        };
        Ok(Self {
            path,
            from: from.into(),
            content,
            sha256,
            secret,
        })
    }

    /// A file of the extracted release (`staged`, on the node or, in a dry run, on this
    /// machine) to put at `path`, hashed now.
    pub fn staged(
        host: &dyn Host,
        path: String,
        from: impl Into<String>,
        x: &Extracted,
        staged: &str,
    ) -> anyhow::Result<Self> {
        if !x.on_node {
            return Self::new(path, from, Content::Local(staged.into()), false);
        }
        let sha256 = host
            .sha256(staged)?
            .with_context(|| format!("{staged} disappeared from the staging directory"))?;
        Ok(Self {
            path,
            from: from.into(),
            content: Content::OnNode(staged.to_owned()),
            sha256: Some(sha256),
            secret: false,
        })
    }
}

/// The release as far as this run knows it.
pub enum Got {
    Release {
        x: Extracted,
        sha256: String,
        /// The cached zip on the host: path and checksum.
        cached: Option<(String, String)>,
    },
    /// A dry run that would download it.
    Pending {
        url: String,
        version: Option<String>,
    },
}

impl Got {
    /// The `cniVersion` of the release's own `cni.conf.template`, when the release is here
    /// and its template names one.
    pub fn cni_version(&self) -> Option<String> {
        let Self::Release { x, .. } = self else {
            return None;
        };
        crate::render::cni::cni_version_in(x.cni_template.as_deref()?)
    }

    /// The `cniVersion` install renders and records: the operator's (its Installation's
    /// `spec.cni.specVersion`, `cluster::operator::Installation::cni_version`) where the
    /// cluster has an Installation and this release's plugin accepts it, so that this node and
    /// the operator's agree; else the release template's.
    pub fn chosen_cni_version(&self, operator: Option<&str>) -> Option<String> {
        let release = self
            .version()
            .and_then(|v| crate::release::version::CalicoVersion::parse(&v).ok());
        operator
            .filter(|v| release.as_ref().is_none_or(|r| r.accepts_cni_spec(v)))
            .map(str::to_owned)
            .or_else(|| self.cni_version())
    }

    pub fn version(&self) -> Option<String> {
        match self {
            Self::Release { x, .. } => x.version.clone(),
            Self::Pending { version, .. } => version.clone(),
        }
    }
}

/// The Calico binary, confd's files (windows-bgp) and the CNI plugins.
pub fn release_files(
    host: &dyn Host,
    c: &Config,
    got: &Got,
    want: &Want,
    prepare: &mut Vec<String>,
) -> anyhow::Result<Vec<DesiredFile>> {
    let root = &c.install_root;
    let mut out = Vec::new();
    let cni = c.backend != Backend::None;
    match got {
        Got::Release { x, sha256, .. } => {
            prepare.push(format!(
                "release {} (sha256 {sha256}): Calico {} with {}",
                want.source.show(),
                x.version.as_deref().unwrap_or("of unknown version"),
                x.binary.file_name()
            ));
            // `rel` under the release's CalicoWindows folder, staged as `file`, put at `dest`.
            let staged = |dest: String, rel: &str, file: &str| {
                let from = format!("release CalicoWindows\\{rel}");
                DesiredFile::staged(host, dest, from, x, file)
            };
            let bin = x.binary.file_name();
            out.push(staged(
                root.join(bin).as_str().to_owned(),
                bin,
                &x.binary_file,
            )?);
            if c.backend == Backend::WindowsBgp {
                for (rel, file) in &x.confd {
                    out.push(staged(root.join(rel).as_str().to_owned(), rel, file)?);
                }
            }
            // The CNI plugins, where the runtime looks for them; a release without a separate
            // IPAM plugin gets calico.exe under that name too.
            let plugin = x.cni.iter().find(|(n, _)| n == "calico.exe");
            let ipam = x.cni.iter().find(|(n, _)| n == "calico-ipam.exe");
            for (name, src) in [("calico.exe", plugin), ("calico-ipam.exe", ipam.or(plugin))] {
                if let Some((from, file)) = src.filter(|_| cni) {
                    let dest = c.cni.bin_dir.join(name).as_str().to_owned();
                    out.push(staged(dest, &format!("cni\\{from}"), file)?);
                }
            }
        }
        Got::Pending { url, version } => {
            let sha = want
                .sha256
                .as_deref()
                .map_or("--sha256 not given".to_owned(), |s| format!("sha256 {s}"));
            prepare.push(format!(
                "would download {} ({sha}) into {}, check it and extract it",
                crate::redact::shown(url),
                root.join(crate::layout::CACHE_DIR).as_str()
            ));
            let bin = version
                .as_deref()
                .and_then(|v| CalicoVersion::parse(v).ok())
                .map_or(Binary::CalicoNode, |v| v.features().binary)
                .file_name();
            out.push(DesiredFile::new(
                root.join(bin).as_str().to_owned(),
                format!("release CalicoWindows\\{bin}"),
                Content::Pending,
                false,
            )?);
            if cni {
                for name in ["calico.exe", "calico-ipam.exe"] {
                    out.push(DesiredFile::new(
                        c.cni.bin_dir.join(name).as_str().to_owned(),
                        "release CalicoWindows\\cni\\calico.exe",
                        Content::Pending,
                        false,
                    )?);
                }
            }
        }
    }
    Ok(out)
}

/// Every file, from the CNI template in `cni.template` or the built-in one.
pub fn render_files(
    config: &crate::config::Config,
    facts: &HostFacts,
) -> anyhow::Result<Vec<render::RenderedFile>> {
    let user_template = match &config.cni.template {
        Some(path) => Some((
            path.display().to_string(),
            crate::files::read_text_capped(path, crate::files::SMALL_FILE_CAP)
                .with_context(|| "cannot read the CNI template given in cni.template")?,
        )),
        None => None,
    };
    let built_in = render::cni::built_in_template(
        facts.calico_version.as_ref(),
        facts.release_cni_version.as_deref(),
    );
    let template = match &user_template {
        Some((name, text)) => CniTemplate { name, text },
        None => CniTemplate {
            name: "the built-in template",
            text: &built_in,
        },
    };
    Ok(render::render_all(config, facts, &template)?)
}

/// The CNI config, the services' environment files and the External network (on `uplink`),
/// for the Calico release `calico_version`, its components pinned to `api_group` when given.
pub fn rendered_files(
    host: &dyn Host,
    c: &Config,
    (calico_version, release_cni_version): (Option<&str>, Option<&str>),
    uplink: Option<&str>,
    api_group: Option<&'static str>,
) -> anyhow::Result<Vec<DesiredFile>> {
    let f = host
        .system_facts()
        .context("cannot read the Windows build, which decides loopback DSR in the CNI config")?;
    let os_build = OsBuild {
        build: f.build,
        ubr: f.ubr.unwrap_or(0),
    };
    let facts = HostFacts {
        os_build,
        aks: on_aks(host, c)?,
        calico_version: calico_version
            .and_then(|v| crate::release::version::CalicoVersion::parse(v).ok()),
        release_cni_version: release_cni_version.map(str::to_owned),
        uplink: uplink.map(str::to_owned),
        calico_api_group: api_group,
    };
    let rendered = render_files(c, &facts)?;
    rendered
        .into_iter()
        .map(|f| {
            let dir = if f.name == c.cni.conf_filename.to_string() {
                &c.cni.conf_dir
            } else {
                &c.install_root
            };
            DesiredFile::new(
                dir.join(&f.name).as_str().to_owned(),
                RENDERED,
                Content::Bytes(f.contents.into_bytes()),
                false,
            )
        })
        .collect()
}

/// Whether a policy-only node is on AKS, which gets Calico's static rules; only asked of
/// HNS with the none backend.
pub fn on_aks(host: &dyn Host, c: &Config) -> anyhow::Result<bool> {
    if c.backend != crate::config::types::Backend::None {
        return Ok(false);
    }
    match host.hns_networks() {
        Ok(networks) => Ok(crate::installed::platform::is_aks(&networks)),
        // A node without HNS has no Azure CNI network either.
        Err(crate::host::HostError::Unavailable { .. }) => Ok(false),
        Err(e) => Err(anyhow::Error::new(e)
            .context("cannot list the HNS networks to tell whether this is an AKS node")),
    }
}

/// The adapter the External network's vSwitch binds on this host (`host::uplink`): the
/// configured one, else the one holding the node IP (the Node's InternalIP when the cluster
/// gave it, else kubelet's `--node-ip`), else the default route's. The none backend makes no
/// vSwitch.
pub fn choose_uplink(
    host: &dyn Host,
    c: &Config,
    internal_ip: Option<std::net::Ipv4Addr>,
) -> anyhow::Result<crate::host::uplink::Choice> {
    use crate::host::uplink;
    if c.backend == crate::config::types::Backend::None {
        return Ok(uplink::Choice {
            adapter: None,
            why: "the none backend makes no vSwitch".into(),
        });
    }
    let adapters = uplink::every_adapter(host)
        .context("cannot list the network adapters to choose the one the vSwitch binds")?;
    let routes = host.routes().context("cannot read the routing table")?;
    let networks = match host.hns_networks() {
        Ok(n) => n,
        Err(crate::host::HostError::Unavailable { .. }) => Vec::new(),
        Err(e) => return Err(anyhow::Error::new(e).context("cannot list the HNS networks")),
    };
    let external = networks
        .iter()
        .find(|n| n.name == crate::layout::EXTERNAL_NETWORK);
    let kubelet = host
        .service_query("kubelet")
        .ok()
        .flatten()
        .map(|s| s.command_line);
    let flags = host
        .read_file(uplink::KUBEADM_FLAGS)
        .ok()
        .flatten()
        .map(|b| String::from_utf8_lossy(&b).into_owned());
    let node = uplink::node_ip(internal_ip, kubelet.as_deref(), flags.as_deref());
    let configured = c.vxlan.adapter.as_ref().map(|a| a.to_string());
    Ok(uplink::choose(
        configured.as_deref(),
        node.as_ref(),
        &adapters,
        &routes,
        external,
    )?)
}

/// A record's network settings with the adapter the External network is on now filled in when
/// the record names none (it was written before the adapter was chosen by the node IP) and
/// that adapter can be told for certain, so that choosing the adapter it already binds is no
/// change.
pub fn with_current_uplink(
    host: &dyn Host,
    old: &crate::installed::record::NetworkSettings,
) -> crate::installed::record::NetworkSettings {
    let current = || {
        let networks = host.hns_networks().ok()?;
        let external = networks
            .iter()
            .find(|n| n.name == crate::layout::EXTERNAL_NETWORK)?;
        let ip: std::net::Ipv4Addr = external.management_ip.as_deref()?.parse().ok()?;
        let adapters = crate::host::uplink::every_adapter(host).ok()?;
        let vnic = adapters
            .iter()
            .find(|a| a.is_vswitch_port() && a.holds(ip))?;
        crate::host::uplink::uplink_of(vnic, &adapters, Some(external))
    };
    let mut old = old.clone();
    if old.adapter.is_none() {
        old.adapter = current();
    }
    old
}
