//! `service keep-token`: the fleet DaemonSet's container as the node's renewer of last resort.
//! CalicoNode renews calico-node's token with itself, which fails for good once refused (401);
//! this pod's token, renewed by kubelet (kubernetes/kubernetes
//! `pkg/kubelet/token/token_manager.go`), can still ask for calico-node's only (the fleet
//! Role's `resourceNames`), bound to this Node (`fleet::rights::token_policy`).

use crate::cli::KeepTokenArgs;
use crate::cluster::credentials::{self, Token};
use crate::cluster::{Cluster, ClusterError, facts};
use crate::context::Context;
use crate::duration::Stop;
use crate::host::select::Intent;
use crate::host::{Access, EventLevel, Host};
use crate::k8s_name::NodeName;
use std::time::Duration;

/// The longest pause after failed looks.
const MOST_PAUSE: Duration = Duration::from_secs(300);

/// The lifetime asked for when the refused token's is unknown: install's default.
const DEFAULT_LIFETIME: Duration = Duration::from_secs(365 * 86400);

/// `service keep-token`'s document, a line per look that replaced the token (and, with
/// `--once`, one that did not): whether it did, and what it said.
#[derive(serde::Serialize)]
pub(crate) struct KeepToken<'a> {
    pub replaced: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub said: Option<&'a str>,
}

pub fn run(args: &KeepTokenArgs, ctx: &mut Context) -> anyhow::Result<()> {
    // No host lock: CalicoNode writes the same file the same way (temporary file and rename),
    // and a reconfigure must not wait on this loop.
    let host = ctx.open_host(Intent::Change)?;
    let loaded = ctx.load_config()?;
    let config = &loaded.config;
    let Some(kubeconfig) = config.kubeconfig.as_ref().map(|k| k.as_str().to_owned()) else {
        anyhow::bail!("the kubeconfig setting is empty: calico-node has no token file to keep");
    };
    let node = config.node.k8s_node_ref.clone();
    // A failed look is retried later and later, up to five minutes.
    let mut pause = args.every;
    // Verify at the node's own moment of each period (a rollout starts every pod at once).
    let mut schedule = (args.verify_every).map(|every| {
        super::keep_token_verify::Schedule::new(every, &node, args.once, args.verify_image.clone())
    });
    // The stop signal ends a verify run with its clean-up, and the loop at its next pause.
    let stop = schedule.as_ref().map_or_else(Stop::new, |s| s.stop.clone());
    let stop = ctx.catch_stop(stop, UNCAUGHT);
    loop {
        if let Some(s) = schedule.as_mut() {
            match s.tick(ctx, host.as_ref(), (&kubeconfig, &node)) {
                Ok(said) => said.iter().for_each(|l| ctx.printer.text(l)),
                Err(e) if args.once => return Err(e),
                Err(e) => ctx.printer.warn(&format!("{e:#}")),
            }
        }
        if stop.requested() {
            return Ok(());
        }
        let result = look(ctx, host.as_ref(), &kubeconfig, &node);
        pause = if result.is_err() {
            (pause * 2).min(MOST_PAUSE.max(args.every))
        } else {
            args.every
        };
        match result {
            Ok(Some(said)) => {
                ctx.printer.text(&said);
                ctx.printer.json(&KeepToken {
                    replaced: true,
                    said: Some(&said),
                });
            }
            Ok(None) if args.once => {
                ctx.printer.text(&format!(
                    "nothing to do: {}",
                    left_alone(host.as_ref(), &kubeconfig)
                ));
                ctx.printer.json(&KeepToken {
                    replaced: false,
                    said: None,
                });
            }
            Ok(None) => {}
            Err(e) if args.once => return Err(e),
            Err(e) => ctx.printer.warn(&format!("{e:#}")),
        }
        if args.once {
            return Ok(());
        }
        // Not a wait for something (`poll_until`): the loop's period, which the stop cuts.
        if stop.wait(pause) {
            return Ok(());
        }
    }
}

/// What a Ctrl-C does when the stop signal cannot be caught.
const UNCAUGHT: &str =
    "the process ends where it is, and a verify run under way leaves its namespace to the next run";

/// Why a look changed nothing, for `--once`: no kubeconfig of install's, or a token taken.
fn left_alone(host: &dyn Host, kubeconfig: &str) -> String {
    let ours = host.read_file(kubeconfig).ok().flatten().is_some_and(|t| {
        crate::render::kubeconfig::names_token_path(&String::from_utf8_lossy(&t), kubeconfig)
    });
    if ours {
        "calico-node's token is taken".to_owned()
    } else {
        format!(
            "{kubeconfig} is not one install wrote (it names no token file beside it): calicoctl-win keeps no token here"
        )
    }
}

/// One look: `None` while the API server takes calico-node's token or install wrote no
/// kubeconfig; else the new token written, said.
fn look(
    ctx: &mut Context,
    host: &dyn Host,
    kubeconfig: &str,
    node: &NodeName,
) -> anyhow::Result<Option<String>> {
    let Some(text) = host.read_file(kubeconfig)? else {
        return Ok(None);
    };
    let text = String::from_utf8_lossy(&text);
    // Only one reading install's token file: with `--engine both` a node the Plan has not
    // reached has Calico's scripts' inline token (calico v3.32.1 node/windows-packaging
    // install-calico-windows.ps1, calico-kube-config.template's `token:`).
    if !crate::render::kubeconfig::names_token_path(&text, kubeconfig) {
        return Ok(None);
    }
    let Some(token) = credentials::node_token_in(host, &text)? else {
        return Ok(None);
    };
    let as_node = Cluster::connect_as_node(kubeconfig, &text, &token, &ctx.env)?;
    let read = crate::cluster::node::addresses(&as_node, node);
    if !matches!(read, Err(ClusterError::Api { code: 401, .. })) {
        return Ok(None);
    }
    let cluster = ctx.connect_cluster()?.ok_or_else(|| {
        anyhow::anyhow!(
            "calico-node's token is refused, and this process has no credential of its own to ask for a new one (it runs in the fleet DaemonSet's pod)"
        )
    })?;
    replace(host, &cluster, (kubeconfig, node), &token)
}

/// A new token for calico-node, bound to `node`, written over the token file and recorded as
/// CalicoNode records its renewals.
fn replace(
    host: &dyn Host,
    cluster: &Cluster,
    (kubeconfig, node): (&str, &NodeName),
    refused: &Token,
) -> anyhow::Result<Option<String>> {
    let namespace = facts::calico_namespace(cluster)?;
    // The cause, as far as this pod's rights read it (the issuer, the Node; not the account).
    let cause = crate::cluster::refusal::cause(
        refused,
        crate::duration::now(),
        &crate::cluster::refusal::Now {
            clock_skew: crate::installed::token_records::issued(host, refused)
                .ok()
                .flatten()
                .and_then(|r| r.skew),
            ..crate::cluster::refusal::read_now(cluster, refused, (&namespace, "calico-node"))
        },
    )
    .map_or(
        "its cause is told by 'calicoctl-win status' with an admin kubeconfig".to_owned(),
        |c| format!("cause {}: {}", c.word(), c.describe()),
    );
    // At most what the admission policy admits (`fleet::rights::TOKEN_LIFETIME_CAP`).
    let lifetime = match (refused.issued_at(), refused.expiry()) {
        (Some(iat), Some(exp)) if iat < exp => Duration::from_secs((exp - iat).unsigned_abs()),
        _ => DEFAULT_LIFETIME,
    }
    .min(crate::fleet::rights::TOKEN_LIFETIME_CAP);
    let issued =
        credentials::token_request(cluster, &namespace, "calico-node", lifetime, Some(node))?;
    let received = crate::duration::now();
    let record =
        crate::supervise::renew::issued_record(&issued, &namespace, "calico-node", received)?;
    let path = crate::render::kubeconfig::token_path(kubeconfig);
    host.replace_file(&path, issued.token.expose().as_bytes(), Access::Secret)?;
    crate::installed::token_records::keep_issued(host, &record)?;
    // A count that cannot be kept changes nothing (a `--once` by hand beside the DaemonSet's
    // keep-token, its file's one writer, may lose one).
    let _ = crate::installed::metrics::count(
        host,
        crate::installed::metrics::VERIFY_FILE,
        crate::installed::metrics::TOKEN_RENEWALS,
        1,
    );
    let said = format!(
        "the API server refused calico-node's token (401; {cause}): wrote a new one into {path}, from {namespace}/calico-node{}, valid until {}, with this pod's own credential",
        if issued.unbound.is_some() {
            ""
        } else {
            " bound to the Node"
        },
        crate::duration::time_text(record.expires)
    );
    let _ = host.report_event(
        crate::layout::EVENT_SOURCE,
        EventLevel::Warning,
        crate::layout::EVENT_TOKEN_REPLACED,
        &format!("calicoctl-win keep-token: {said}"),
    );
    Ok(Some(said))
}
