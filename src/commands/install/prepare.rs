//! The configuration merged with the cluster's, and what install puts on the node besides the
//! release: calico-node's credentials and calicoctl-win itself.

use super::super::common::ClusterRead;
use crate::apply::Content;
use crate::cli::InstallArgs;
use crate::cluster::renewal::Grant;
use crate::cluster::{credentials, etcd, facts};
use crate::config::types::Datastore;
use crate::config::{Config, Raw};
use crate::context::Context;
use crate::duration::time_text;
use crate::error::UsageError;
use crate::host::{Host, HostKind};
use crate::k8s_name::NodeName;
use crate::plan::install::DesiredFile;
use crate::render;
use anyhow::Context as _;
use std::collections::BTreeMap;

/// calicoctl-win itself, which the services run (a stand-in on a simulated host).
fn self_file(host: &dyn Host, c: &Config) -> anyhow::Result<DesiredFile> {
    let content = match host.kind() {
        HostKind::Windows => Content::Local(
            std::env::current_exe().context("cannot find calicoctl-win's own executable")?,
        ),
        _ => Content::Bytes(
            format!(
                "calicoctl-win {} (stand-in on a simulated host)\n",
                env!("CARGO_PKG_VERSION")
            )
            .into_bytes(),
        ),
    };
    DesiredFile::new(c.root().self_exe(), "calicoctl-win itself", content, false)
}

/// The etcd TLS files from Calico's secret, checked (and against etcd when its endpoints
/// are known).
pub(super) fn etcd_credentials(
    c: &crate::cluster::Cluster,
    config: &Config,
) -> anyhow::Result<etcd::EtcdTlsFiles> {
    let ns = facts::calico_namespace(c)?;
    let files = etcd::files_from_secret(c, &ns, "calico-etcd-secrets")?;
    etcd::check_files(&files)?;
    for e in &config.etcd.endpoints {
        etcd::health(&e.to_string(), &files, std::time::Duration::from_secs(10))?;
    }
    Ok(files)
}

/// The configuration with what the cluster gives; for etcd without TLS files, those from
/// Calico's secret, whose install paths become settings.
pub(super) fn merged_config(
    ctx: &mut Context,
    cluster: &ClusterRead,
    base: crate::config::Loaded,
) -> anyhow::Result<(crate::config::Loaded, Option<etcd::EtcdTlsFiles>)> {
    let mut settings = match cluster {
        ClusterRead::Read(_, f) => f.settings(),
        _ => BTreeMap::new(),
    };
    let loaded = if settings.is_empty() {
        base
    } else {
        ctx.load_config_with(settings.clone())?
    };
    let ClusterRead::Read(c, _) = cluster else {
        return Ok((loaded, None));
    };
    if loaded.config.datastore != Datastore::Etcdv3 || loaded.config.etcd.tls.is_some() {
        return Ok((loaded, None));
    }
    let files = etcd_credentials(c, &loaded.config)?;
    for (_, name, setting) in etcd::TLS_FILES {
        let path = loaded.config.install_root.join("etcd-tls").join(name);
        settings.insert(setting, Raw::Scalar(path.as_str().to_owned()));
    }
    Ok((ctx.load_config_with(settings)?, Some(files)))
}

/// What install puts on the node besides the release and rendered files, and the renewal
/// grant: made before any change, so their refusal refuses a run that changed nothing.
pub(super) struct Credentials {
    /// calicoctl-win itself, then calico-node's credentials.
    pub files: Vec<DesiredFile>,
    /// What `files` says of how they were obtained.
    pub prepare: Vec<String>,
    pub renewal: Option<Grant>,
    /// What the grant says.
    pub renewal_prepare: Vec<String>,
    /// A dry run's refusal, given after its plan as the real run would.
    pub refused: Option<anyhow::Error>,
}

/// The [`Credentials`] of this install.
pub(super) fn credentials(
    ctx: &mut Context,
    args: &InstallArgs,
    (host, c): (&dyn Host, &Config),
    (cluster, node): (&ClusterRead, &NodeName),
    etcd_files: Option<etcd::EtcdTlsFiles>,
) -> anyhow::Result<Credentials> {
    let mut prepare = Vec::new();
    let mut refused = None;
    let mut files = vec![self_file(host, c)?];
    files.extend(credential_files(
        ctx,
        args,
        (host, c),
        cluster,
        etcd_files,
        (&mut prepare, &mut refused),
    )?);
    let mut renewal_prepare = Vec::new();
    let dry_run = ctx.options.dry_run;
    let renewal = renewal_grant(c, cluster, node, &files, (&mut renewal_prepare, dry_run))?;
    Ok(Credentials {
        files,
        prepare,
        renewal,
        renewal_prepare,
        refused,
    })
}

/// calico-node's credentials: the kubeconfig (a valid one on the node is kept), or the etcd
/// files read from the cluster.
fn credential_files(
    ctx: &mut Context,
    args: &InstallArgs,
    (host, c): (&dyn Host, &Config),
    cluster: &ClusterRead,
    etcd_files: Option<etcd::EtcdTlsFiles>,
    (prepare, refused): (&mut Vec<String>, &mut Option<anyhow::Error>),
) -> anyhow::Result<Vec<DesiredFile>> {
    if c.datastore == Datastore::Etcdv3 {
        let Some(files) = etcd_files else {
            if c.etcd.tls.is_none() && !ctx.options.dry_run {
                prepare.push("etcd without TLS files (etcd.key_file and friends are unset, and no cluster to read calico-etcd-secrets from)".into());
            }
            return Ok(Vec::new());
        };
        prepare.push("etcd TLS files from the calico-etcd-secrets secret, checked".into());
        return etcd_tls_files(c, &files);
    }
    let Some(path) = c.kubeconfig.as_ref().map(|p| p.as_str().to_owned()) else {
        return Ok(Vec::new());
    };
    let token_path = render::kubeconfig::token_path(&path);
    let kept = crate::cluster::credentials::node_token(host, &path)?
        .filter(|t| {
            crate::cluster::credentials::outlives(t, args.token_keep_if_valid_for).is_some()
        })
        .zip(host.read_file(&path)?)
        .and_then(|(token, k)| {
            render::kubeconfig::with_token_file(&String::from_utf8_lossy(&k), &token_path)
                .map(|text| (token, text))
        });
    let (kubeconfig, token) = if let Some((token, text)) = kept {
        prepare.push(format!(
            "keeps calico-node's token in {path}: it is valid for more than {}",
            crate::duration::show(args.token_keep_if_valid_for)
        ));
        (
            Content::Bytes(text.into_bytes()),
            Content::Bytes(token.expose().as_bytes().to_vec()),
        )
    } else {
        let asked = (cluster, &c.node.k8s_node_ref);
        requested_kubeconfig(ctx, args, asked, (&path, &token_path), (prepare, refused))?
    };
    Ok(vec![
        DesiredFile::new(
            path,
            "credentials: calico-node's kubeconfig",
            kubeconfig,
            true,
        )?,
        DesiredFile::new(token_path, "credentials: calico-node's token", token, true)?,
    ])
}

/// The etcd TLS files, where the install root keeps them.
fn etcd_tls_files(c: &Config, files: &etcd::EtcdTlsFiles) -> anyhow::Result<Vec<DesiredFile>> {
    let dir = c.install_root.join("etcd-tls");
    etcd::TLS_FILES
        .iter()
        .zip(files.in_order())
        .map(|((_, name, _), bytes)| {
            DesiredFile::new(
                dir.join(name).as_str().to_owned(),
                "credentials: etcd TLS from calico-etcd-secrets",
                Content::Bytes(bytes.to_vec()),
                true,
            )
        })
        .collect()
}

/// A kubeconfig for calico-node with a requested token (pending in a dry run); refused
/// without a cluster (a dry run's kept in `refused`).
fn requested_kubeconfig(
    ctx: &mut Context,
    args: &InstallArgs,
    (cluster, node): (&ClusterRead, &NodeName),
    (path, token_path): (&str, &str),
    (prepare, refused): (&mut Vec<String>, &mut Option<anyhow::Error>),
) -> anyhow::Result<(Content, Content)> {
    let ClusterRead::Read(cl, _) = cluster else {
        let refusal = no_cluster_for_the_kubeconfig(cluster, path);
        if ctx.options.dry_run {
            prepare.push(format!(
                "would request a token for calico-node through the TokenRequest API and write {path} (needs the admin kubeconfig: --kubeconfig, $KUBECONFIG, ~/.kube/config or C:\\k\\config)"
            ));
            ctx.printer.warn(&format!(
                "no admin kubeconfig: the install itself would stop before it changes anything (no-admin-kubeconfig, exit 2), as it cannot get calico-node's kubeconfig {path}; pass --kubeconfig FILE, or write the file first with 'calicoctl-win fetch kubeconfig'"
            ));
            *refused = Some(refusal);
            return Ok((Content::Pending, Content::Pending));
        }
        return Err(refusal);
    };
    let ns = facts::calico_namespace(cl)?;
    if ctx.options.dry_run {
        prepare.push(format!(
            "would request a token for {ns}/calico-node lasting {} from {} and write {path}",
            crate::duration::show(args.token_lifetime),
            cl.server
        ));
        return Ok((Content::Pending, Content::Pending));
    }
    // Bound to this node's Node where the server allows it (deleting the Node revokes it).
    let issued =
        credentials::token_request(cl, &ns, "calico-node", args.token_lifetime, Some(node))?;
    if let Some(said) = skew_said(&issued) {
        ctx.printer.warn(&said);
    }
    if let Some(why) = &issued.unbound {
        prepare.push(format!(
            "calico-node's token is not bound to the Node (deleting the Node does not revoke it): {why}"
        ));
    }
    let ca = credentials::ca_for(cl, &ns, &issued)?;
    let text = render::kubeconfig::kubeconfig(&cl.server, &ca, token_path, &ns);
    prepare.push(format!(
        "a token for {ns}/calico-node from {}, {}",
        cl.server,
        issued
            .expires
            .map_or("without expiry".to_owned(), |t| format!(
                "valid until {}",
                time_text(t)
            ))
    ));
    Ok((
        Content::Bytes(text.into_bytes()),
        Content::Bytes(issued.token.expose().as_bytes().to_vec()),
    ))
}

/// The refusal of an install that needs the cluster for calico-node's kubeconfig and has none.
fn no_cluster_for_the_kubeconfig(cluster: &ClusterRead, path: &str) -> anyhow::Error {
    let (why, kind) = match cluster {
        ClusterRead::Failed(e) => (
            format!("the cluster cannot be read: {e}"),
            crate::error::Kind::ClusterUnreachable,
        ),
        _ => (
            "there is no admin kubeconfig".to_owned(),
            crate::error::Kind::NoAdminKubeconfig,
        ),
    };
    UsageError::new(
        format!("install needs the cluster to get calico-node's kubeconfig ({path}), and {why}"),
        "pass --kubeconfig FILE (or set KUBECONFIG), or write the file first with 'calicoctl-win fetch kubeconfig'",
    )
    .of_kind(kind)
    .into()
}

/// This node's clock against the API server's (arrival minus the token's `iat`), when it
/// matters.
fn skew_said(issued: &credentials::Issued) -> Option<String> {
    let received = crate::duration::now();
    let iat = issued.token.issued_at()?;
    let life = issued.expires.map_or(i64::MAX, |e| e.saturating_sub(iat));
    let said = crate::installed::token_records::skew_sentence(received.saturating_sub(iat), life)?;
    Some(format!(
        "{said}: token expiry is judged on the API server's clock, but TLS certificates, logs and kubelet go by this node's; set the node's time source"
    ))
}

/// The node's grant to renew calico-node's token (kubernetes datastore, admin kubeconfig), for
/// the token's service account. Without the cluster, said in `prepare`: no renewal until an
/// install with it.
fn renewal_grant(
    c: &Config,
    cluster: &ClusterRead,
    node: &NodeName,
    files: &[DesiredFile],
    (prepare, dry_run): (&mut Vec<String>, bool),
) -> anyhow::Result<Option<Grant>> {
    let Some(kubeconfig) = c
        .kubeconfig
        .as_ref()
        .filter(|_| c.datastore == Datastore::Kubernetes)
    else {
        return Ok(None);
    };
    let ClusterRead::Read(cl, _) = cluster else {
        let name = format!("{}{node}", crate::cluster::renewal::NAME_PREFIX);
        prepare.push(if dry_run {
            format!(
                "would let CalicoNode renew calico-node's token with its own credential: Role and RoleBinding {name} (needs the admin kubeconfig)"
            )
        } else {
            format!(
                "no admin kubeconfig: the grant that lets CalicoNode renew calico-node's token ({name}) is not made; the token in {kubeconfig} is not renewed"
            )
        });
        return Ok(None);
    };
    let token_path = render::kubeconfig::token_path(kubeconfig.as_str());
    let written = files
        .iter()
        .find(|f| f.path == token_path)
        .and_then(|f| match &f.content {
            Content::Bytes(b) => {
                credentials::Token::new(String::from_utf8_lossy(b).into_owned()).service_account()
            }
            _ => None,
        });
    let (ns, sa) = match written {
        Some(identity) => identity,
        None => (facts::calico_namespace(cl)?, "calico-node".to_owned()),
    };
    let grant = Grant::for_node(&ns, node, &sa);
    prepare.push(format!(
        "{} CalicoNode renew calico-node's token with its own credential: Role and RoleBinding {} in {ns} (create serviceaccounts/token for {sa} only)",
        if dry_run { "would let" } else { "lets" },
        grant.name
    ));
    Ok(Some(grant))
}
