//! `fetch kubeconfig` and `fetch etcd-certs`: calico-node's credentials from the cluster,
//! checked before anything is written, written atomically as secret files.

use super::fetched::{
    EtcdCerts, EtcdFile, InstallerKubeconfig, Kubeconfig, ReleaseFetched, ReleasePlan, TokenFrom,
};
use crate::cli::{FetchEtcdArgs, FetchKubeconfigArgs};
use crate::cluster::credentials::{self, Issued};
use crate::cluster::etcd;
use crate::cluster::{Cluster, facts};
use crate::context::Context;
use crate::duration::{self, now, time_text};
use crate::error::UsageError;
use crate::host::Access;
use crate::release::{Local, Place};
use crate::render::kubeconfig;
use anyhow::Context as _;

fn namespace(ctx: &mut Context, c: &Cluster, given: &Option<String>) -> anyhow::Result<String> {
    Ok(match given {
        Some(ns) => ns.clone(),
        None => {
            let ns = facts::calico_namespace(c)?;
            ctx.log(&format!("Calico's namespace is {ns}"));
            ns
        }
    })
}

pub fn kubeconfig(args: &FetchKubeconfigArgs, ctx: &mut Context) -> anyhow::Result<()> {
    let host = ctx.open_host_to_change("fetch kubeconfig")?;
    let loaded = ctx.load_config()?;
    let Some(path) = loaded.config.kubeconfig.clone() else {
        return Err(UsageError::new(
            "the kubeconfig setting is empty: there is nowhere to write calico-node's kubeconfig",
            "leave kubeconfig unset for <install_root>\\calico-kube-config, or set a path",
        )
        .into());
    };
    let path = path.as_str().to_owned();

    if still_valid(args, ctx, host.as_ref(), &path)? {
        return Ok(());
    }

    let c = ctx.require_cluster()?;
    let ns = namespace(ctx, &c, &args.namespace)?;
    let sa = &args.service_account;
    let method = if args.legacy_secret {
        "legacy-secret"
    } else {
        "token-request"
    };
    let server = c.server.as_str();
    let (namespace, service_account) = (ns.as_str(), sa.as_str());
    let from = TokenFrom {
        method,
        namespace,
        service_account,
        server,
    };
    if ctx.options.dry_run {
        credentials::service_account(&c, &ns, sa)?;
        let how = if args.legacy_secret {
            "read (or create) a service-account token secret".to_owned()
        } else {
            format!("request a token lasting {}", duration::show(args.lifetime))
        };
        ctx.printer.text(&format!(
            "would {how} for {ns}/{sa} on {} and write {path}",
            c.server
        ));
        ctx.printer.json(&Kubeconfig::planned(&path, from));
        return Ok(());
    }

    let issued: Issued = if args.legacy_secret {
        credentials::legacy_secret(&c, &ns, sa, args.timeout, &mut |l: &str| {
            ctx.printer.detail(l);
        })?
    } else {
        // calico-node's token for this node: bound to its Node where the server allows it.
        let node = loaded.config.node.k8s_node_ref.clone();
        credentials::token_request(&c, &ns, sa, args.lifetime, Some(&node))?
    };
    let ca = credentials::ca_for(&c, &ns, &issued)?;
    // The token first: the kubeconfig names its file, so it never names a missing one.
    let token_path = kubeconfig::token_path(&path);
    let text = kubeconfig::kubeconfig(&c.server, &ca, &token_path, &ns);
    let token_changed = host.write_file(
        &token_path,
        issued.token.expose().as_bytes(),
        Access::Secret,
    )?;
    let changed = host.write_file(&path, text.as_bytes(), Access::Secret)? || token_changed;
    ctx.log(&format!("wrote {token_path} and {path} ({method})"));

    let expires = issued.expires.map(time_text);
    let validity = validity(args, ctx, &issued, now());
    ctx.printer.text(&format!(
        "wrote {path}: token for {ns}/{sa} from {}, {validity}",
        c.server
    ));
    ctx.printer
        .json(&Kubeconfig::done(&path, changed, Some(from), expires));
    Ok(())
}

/// With `--refresh-if-expiring-within`, whether the kubeconfig on the node stays valid long
/// enough (then said, and nothing is done).
fn still_valid(
    args: &FetchKubeconfigArgs,
    ctx: &mut Context,
    host: &dyn crate::host::Host,
    path: &str,
) -> anyhow::Result<bool> {
    let Some(within) = args.refresh_if_expiring_within else {
        return Ok(false);
    };
    let Some(valid_until) =
        credentials::node_token(host, path)?.and_then(|t| credentials::outlives(&t, within))
    else {
        return Ok(false);
    };
    let until = valid_until.map_or_else(
        || "it does not expire".to_owned(),
        |t| format!("valid until {}", time_text(t)),
    );
    ctx.printer.text(&format!(
        "{path}: the token is {until}, more than {} from now; nothing to do",
        duration::show(within)
    ));
    let expires = valid_until.map(time_text);
    ctx.printer
        .json(&Kubeconfig::done(path, false, None, expires));
    Ok(true)
}

/// How long the issued token is valid, warning of a cap or a clock skew. The life granted is
/// the token's `exp - iat` (the server's clock), so a node clock ahead is not taken for a cap;
/// `received` is the answer's arrival by this node's clock.
fn validity(
    args: &FetchKubeconfigArgs,
    ctx: &mut Context,
    issued: &Issued,
    received: i64,
) -> String {
    let Some(secs) = issued.expires else {
        return "does not expire (legacy token secret)".to_owned();
    };
    let iat = issued.token.issued_at();
    let life = secs - iat.unwrap_or(received);
    if let Some(said) = iat.and_then(|iat| {
        crate::installed::token_records::skew_sentence(received.saturating_sub(iat), life)
    }) {
        ctx.printer.warn(&format!(
            "{said}: the token's times are the API server's, and CalicoNode times its renewals by when each token came"
        ));
    }
    let granted = std::time::Duration::from_secs(u64::try_from(life).unwrap_or(0));
    if !args.legacy_secret && granted + std::time::Duration::from_secs(60) < args.lifetime {
        ctx.printer.warn(&format!(
            "the API server granted {} of the {} asked for (its --service-account-max-token-expiration); once installed, CalicoNode renews the token itself before it expires",
            duration::show(granted),
            duration::show(args.lifetime)
        ));
    }
    format!("valid until {}", time_text(secs))
}

pub fn etcd_certs(args: &FetchEtcdArgs, ctx: &mut Context) -> anyhow::Result<()> {
    let host = ctx.open_host_to_change("fetch etcd-certs")?;
    let loaded = ctx.load_config()?;
    let c = ctx.require_cluster()?;
    let ns = namespace(ctx, &c, &args.namespace)?;
    let files = etcd::files_from_secret(&c, &ns, &args.secret)?;
    etcd::check_files(&files)?;

    let mut endpoints: Vec<String> = loaded
        .config
        .etcd
        .endpoints
        .iter()
        .map(ToString::to_string)
        .collect();
    if endpoints.is_empty() {
        endpoints = facts::etcd_endpoints(&c, &ns)?;
    }
    if endpoints.is_empty() {
        return Err(UsageError::new(
            "there are no etcd endpoints to check the certificates against",
            "set etcd.endpoints (like --set etcd.endpoints=https://10.0.0.5:2379), or etcd_endpoints in the calico-config ConfigMap",
        )
        .into());
    }
    for e in &endpoints {
        etcd::health(e, &files, args.timeout)?;
        ctx.log(&format!("etcd at {e} is healthy with these certificates"));
    }

    let dir = loaded.config.install_root.join("etcd-tls");
    let mut written = Vec::new();
    for ((_, name, setting), bytes) in etcd::TLS_FILES.iter().zip(files.in_order()) {
        let path = dir.join(name).as_str().to_owned();
        let changed = if ctx.options.dry_run {
            false
        } else {
            host.write_file(&path, bytes, Access::Secret)?
        };
        written.push((*setting, path, changed));
    }
    let verb = if ctx.options.dry_run {
        "would write"
    } else {
        "wrote"
    };
    ctx.printer.text(&format!(
        "etcd answered GET /health with these certificates at {}",
        endpoints.join(", ")
    ));
    for (setting, path, _) in &written {
        ctx.printer
            .text(&format!("{verb} {path}  (--set {setting}={path})"));
    }
    let files = written.iter().map(|(setting, path, changed)| EtcdFile {
        setting,
        path,
        changed: *changed,
    });
    ctx.printer.json(&EtcdCerts {
        secret: format!("{ns}/{}", args.secret),
        endpoints: &endpoints,
        dry_run: ctx.options.dry_run,
        files: files.collect(),
    });
    Ok(())
}

pub fn release(args: &crate::cli::FetchReleaseArgs, ctx: &mut Context) -> anyhow::Result<()> {
    use std::io::IsTerminal;
    let want = super::flags::release_want(&args.release)?;
    let out = &args.output_dir;
    if ctx.options.dry_run {
        ctx.printer.text(&format!(
            "would obtain {} into {} and extract it there",
            want.source.show(),
            out.display()
        ));
        ctx.printer.json(&ReleasePlan {
            dry_run: true,
            source: want.source.show(),
            output_dir: out,
        });
        return Ok(());
    }
    let extracted = out.join("CalicoWindows");
    if extracted.exists() {
        return Err(UsageError::new(
            format!("{} exists already", extracted.display()),
            "pass an empty --output-dir, or remove the old CalicoWindows folder",
        )
        .into());
    }
    fs_err::create_dir_all(out)?;
    ctx.adopt_machine_proxy();
    let mut progress = crate::output::DownloadProgress::new(
        std::io::stderr().is_terminal(),
        ctx.printer.is_quiet(),
    );
    let staging = tempfile::Builder::new()
        .prefix(".calicoctl-win-extract-")
        .tempdir_in(out)?;
    let (out_dir, staging_dir) = (Local::name(out)?, Local::name(staging.path())?);
    let (obtained, x) = crate::release::obtain(
        &want,
        Place::new(&Local, &out_dir),
        Place::new(&Local, &staging_dir),
        &ctx.env,
        &mut progress,
    )?;
    if let Some(why) = &obtained.extracted_again {
        ctx.log(&format!("extracted again from the finished zip: {why}"));
    }
    crate::release::check_version(&want, &x, &want.source.show())?;
    fs_err::rename(&x.root, &extracted)?;
    let version = x.version.clone();
    ctx.printer.text(&format!(
        "{} (sha256 {}): Calico {} with {}, extracted into {}",
        obtained.path,
        obtained.sha256,
        version.as_deref().unwrap_or("of unknown version"),
        x.binary.file_name(),
        extracted.display()
    ));
    ctx.printer.json(&ReleaseFetched {
        zip: &obtained.path,
        sha256: &obtained.sha256,
        downloaded: obtained.downloaded,
        version: version.as_deref(),
        binary: &x.binary,
        extracted: &extracted,
    });
    Ok(())
}

/// The longest an installer credential may live: a node joins within the day.
const INSTALLER_MAX: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// `fetch installer-kubeconfig`: the installer's kubeconfig with a short-lived token.
pub fn installer_kubeconfig(
    args: &crate::cli::FetchInstallerArgs,
    ctx: &mut Context,
) -> anyhow::Result<()> {
    if args.lifetime > INSTALLER_MAX || args.lifetime < std::time::Duration::from_secs(600) {
        return Err(UsageError::new(
            format!(
                "--lifetime {} is not between 10m (the TokenRequest API's least) and 24h",
                duration::show_hours(args.lifetime)
            ),
            "an installer credential should live as long as a node takes to join: 2h is the default",
        )
        .into());
    }
    let to_stdout = crate::files::is_stdout(&args.out_file);
    if to_stdout && ctx.printer.format == crate::output::Format::Json {
        return Err(UsageError::new(
            "--out-file - and -o json both want standard output",
            "drop -o json to write the kubeconfig to standard output, or name a file with --out-file",
        )
        .into());
    }
    if !to_stdout {
        crate::files::check_target(&args.out_file)?;
    }
    let c = ctx.require_cluster()?;
    let (ns, sa) = (&args.namespace, &args.service_account);
    if ctx.options.dry_run {
        credentials::service_account(&c, ns, sa)?;
        ctx.printer.text(&format!(
            "would request a token lasting {} for {ns}/{sa} and write {}",
            duration::show(args.lifetime),
            args.out_file.display()
        ));
        return Ok(());
    }
    // The installer's: the new node's Node may not exist yet, and it is no node's.
    let issued = credentials::token_request(&c, ns, sa, args.lifetime, None)?;
    let ca = credentials::ca_for(&c, ns, &issued)?;
    let text = kubeconfig::kubeconfig_with_token(&c.server, &ca, issued.token.expose(), ns);
    let expires = issued.expires.map(time_text);
    if to_stdout {
        ctx.printer.text(text.trim_end());
        ctx.printer.note(&format!(
            "the kubeconfig above is {ns}/{sa}'s on {}, valid until {}: keep it out of logs, hand it to the new node's install and remove it after",
            c.server,
            expires.as_deref().unwrap_or("(no expiry)")
        ));
        return Ok(());
    }
    crate::files::write_secret(&args.out_file, text.as_bytes())
        .with_context(|| format!("cannot write {}", args.out_file.display()))?;
    ctx.printer.text(&format!(
        "wrote {}: {ns}/{sa} on {}, valid until {}; hand it to the new node's install and remove it after",
        args.out_file.display(),
        c.server,
        expires.as_deref().unwrap_or("(no expiry)")
    ));
    ctx.printer.json(&InstallerKubeconfig {
        path: args.out_file.display().to_string(),
        namespace: ns,
        service_account: sa,
        server: &c.server,
        expires,
    });
    Ok(())
}
