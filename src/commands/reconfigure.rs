//! `reconfigure`: converges an installed node to a changed config, draining it and making the
//! Calico HNS network again when the change is one HNS cannot make in place.

use super::preflight::{ClusterRead, read_cluster, with_cluster};
use crate::cli::{DrainBy, ReconfigureArgs};
use crate::cluster::drain;
use crate::config::types::Backend;
use crate::context::Context;
use crate::duration::now;
use crate::error::UsageError;
use crate::plan::install::{Inputs, Restart};
use crate::plan::reconfigure::{self, NodeSteps, network_changes};
use crate::plan::record::{self, NetworkSettings, join};
use crate::plan::{self, Action};
use crate::render::hns::CALICO_NETWORK;
use anyhow::Context as _;
use serde_json::json;

pub fn run(args: &ReconfigureArgs, ctx: &mut Context) -> anyhow::Result<()> {
    let dry_run = ctx.options.dry_run;
    let host = ctx.open_host_to_change("reconfigure")?;
    let base = ctx.load_config()?;
    let node_name = base.config.node.name.to_string();
    let cluster = read_cluster(false, ctx, &node_name)?;
    let loaded = with_cluster(ctx, &cluster, base)?;
    let config = &loaded.config;
    let root = crate::plan::install::install_root(config);

    // What is installed.
    let Some(rec) = record::read(host.as_ref(), &root)? else {
        return Err(UsageError::new(
            format!("Calico is not installed in {root} (there is no install record)"),
            "install it with 'calicoctl-win install', or point install_root at where it is",
        )
        .of_kind(crate::error::Kind::NotInstalled)
        .into());
    };
    let journal_path = join(&root, record::JOURNAL_FILE);
    let journal = super::continue_journal(ctx, host.as_ref(), &journal_path, "reconfigure")?;
    if config.backend == Backend::WindowsBgp && rec.backend != Backend::WindowsBgp.to_string() {
        return Err(UsageError::new(
            format!(
                "the backend changes from {} to windows-bgp, which needs confd's files from the Calico release",
                rec.backend
            ),
            "run 'calicoctl-win uninstall', then 'calicoctl-win install' with the new config",
        )
        .into());
    }

    // Files: the new rendered ones; the release's and the credentials stay as they are.
    let rendered =
        crate::plan::desired::rendered_files(host.as_ref(), config, rec.calico_version.as_deref())?;
    let kept = reconfigure::kept_files(&rec, &rendered);

    // Networks: what HNS cannot change in place.
    let new_net = NetworkSettings::of(config);
    let networks = if config.backend == Backend::None && rec.networks.is_empty() {
        Vec::new()
    } else {
        host.hns_networks()
            .context("cannot read the HNS networks to compare them with the config")?
    };
    let calico = networks.iter().find(|n| n.name == CALICO_NETWORK);
    let changes = network_changes(rec.network.as_ref(), &new_net, calico);
    let recreate = !changes.is_empty();
    let we_cordoned = reconfigure::cordoned_by(journal.as_ref(), &node_name);
    let delete = if recreate {
        reconfigure::networks_to_delete(rec.network.as_ref(), &new_net, &networks)
    } else {
        Vec::new()
    };

    // The cluster: needed to drain, and to compare the VNI with Felix's.
    let need = Need {
        recreate,
        we_cordoned,
        changes: &changes,
        vni: new_net.vni,
    };
    let NodePlan {
        steps: node_steps,
        preview: evicted_preview,
        cluster: connected,
    } = node_plan(args, config, cluster, &node_name, &need)?;

    let restart = if recreate {
        Restart::AlreadyStopped
    } else {
        Restart::Affected
    };
    let inputs = reconfigure::Inputs {
        install: Inputs {
            config,
            files: rendered,
            extra_owned: kept,
            extra_dirs: Vec::new(),
            calico_version: rec.calico_version.clone(),
            legacy: Vec::new(),
            start: true,
            wait_timeout: args.wait_timeout,
            previous: Some(rec.clone()),
            journal: journal.as_ref(),
            restart,
            expect_vsid: (config.backend == Backend::Vxlan).then_some(new_net.vni),
        },
        installed_services: rec.services.iter().map(|s| s.name.clone()).collect(),
        delete,
        node: node_steps,
    };
    let actions = reconfigure::plan(host.as_ref(), &inputs)?;

    ctx.printer.text(&format!(
        "Reconfigure Calico in {root} on node {node_name} ({} backend)",
        config.backend
    ));
    let kind = if recreate {
        ctx.printer.text(&format!(
            "  - network-immutable: {}; the Calico HNS network is made again",
            changes.join("; ")
        ));
        "network"
    } else if actions.is_empty() {
        "none"
    } else {
        "files"
    };
    let actions_json = plan::to_json(&actions).context("cannot show the plan as JSON")?;
    let doc = |changed: bool| {
        json!({
            "dry_run": dry_run,
            "install_root": root,
            "change": kind,
            "network_changes": changes,
            "pods": evicted_preview,
            "actions": actions_json,
            "changed": changed,
        })
    };
    if actions.is_empty() {
        ctx.printer
            .text("Nothing to do: the node already matches this config.");
        ctx.printer.json(&doc(false));
        return Ok(());
    }
    if dry_run {
        super::print_plan(ctx, &actions);
        ctx.printer.note("--dry-run: nothing was changed");
        ctx.printer.json(&doc(false));
        return Ok(());
    }

    let node_control = connected
        .as_deref()
        .map(|c| c as &dyn crate::cluster::drain::NodeControl);
    let opts = plan::Options {
        command: "reconfigure",
        journal_path,
        rollback: true,
        stop_timeout: args.service_timeout,
        start_timeout: args.service_timeout,
        previous: journal,
        routes_before: Vec::new(),
        record: None,
        logs_dir: None,
        now: now(),
        cluster: node_control,
    };
    if let Err(e) = super::execute_plan(ctx, host.as_ref(), &actions, opts) {
        return Err(failed(e, &node_name));
    }
    super::annotate_node(ctx, connected.as_deref(), host.as_ref(), &root, &node_name);
    ctx.printer
        .text(&format!("Reconfigured: {} step(s).", actions.len()));
    ctx.printer.json(&doc(true));
    Ok(())
}

/// What the node needs from the cluster for this change.
struct Need<'a> {
    /// The Calico network is made again: the node is cordoned and drained around it.
    recreate: bool,
    /// An interrupted run cordoned the node: this one uncordons it.
    we_cordoned: bool,
    changes: &'a [String],
    vni: u32,
}

/// The cluster steps of the plan, the pods a drain would evict, and the cluster they use.
struct NodePlan {
    steps: Option<NodeSteps>,
    preview: serde_json::Value,
    cluster: Option<Box<crate::cluster::Cluster>>,
}

/// Cordon, drain and uncordon around a network recreation (or only the uncordon an
/// interrupted run owes), after checking the cluster agrees with the new VNI and the pods can
/// be evicted; nothing when the cluster is not involved.
fn node_plan(
    args: &ReconfigureArgs,
    config: &crate::config::Config,
    cluster: ClusterRead,
    node_name: &str,
    need: &Need<'_>,
) -> anyhow::Result<NodePlan> {
    if !need.recreate && !need.we_cordoned {
        // Not needed for the change; kept to annotate the node with what it runs.
        return Ok(NodePlan {
            steps: None,
            preview: json!(null),
            cluster: match cluster {
                ClusterRead::Read(c, _) => Some(c),
                _ => None,
            },
        });
    }
    if need.recreate && args.drain.is_none() {
        return Err(UsageError::new(
            format!(
                "this change needs the Calico HNS network made again ({}), which disconnects every pod on node {node_name}",
                need.changes.join("; ")
            ),
            "pass --drain to cordon and drain the node around it (--dry-run shows the pods it would evict)",
        )
        .of_kind(crate::error::Kind::NeedsDrain)
        .into());
    }
    let (c, facts) = match cluster {
        ClusterRead::Read(c, facts) => (c, facts),
        ClusterRead::Failed(e) => {
            return Err(anyhow::Error::new(e).context(format!(
                "draining node {node_name} needs the cluster, which cannot be read"
            )));
        }
        ClusterRead::Skipped(why) => {
            return Err(UsageError::new(
                format!("draining node {node_name} needs the cluster: {why}"),
                "pass the admin kubeconfig with --kubeconfig, or set KUBECONFIG",
            )
            .of_kind(crate::error::Kind::NoAdminKubeconfig)
            .into());
        }
    };
    if config.backend == Backend::Vxlan
        && need.recreate
        && let Some(cluster_vni) = facts.felix.vxlan_vni
        && cluster_vni != need.vni
        && !args.allow_vni_mismatch
    {
        return Err(UsageError::new(
            format!(
                "VNI {} differs from the cluster's FelixConfiguration vxlanVNI {cluster_vni}: this node could not reach pods on the other nodes",
                need.vni
            ),
            format!(
                "change the cluster first ('kubectl patch felixconfiguration default --type merge -p '{{\"spec\":{{\"vxlanVNI\":{}}}}}''), or pass --allow-vni-mismatch if that is what you mean",
                need.vni
            ),
        )
        .of_kind(crate::error::Kind::VniMismatch)
        .into());
    }
    let cordoned = drain::is_cordoned(&c, node_name)?;
    let external = args.drain == Some(DrainBy::External);
    if external && need.recreate && !cordoned {
        return Err(UsageError::new(
            format!(
                "--drain=external: node {node_name} is not cordoned, so it was not drained for the Calico network to be made again"
            ),
            "let the engine cordon and drain the node first (kubectl drain), or pass --drain to have calicoctl-win do it",
        )
        .of_kind(crate::error::Kind::NeedsDrain)
        .into());
    }
    let options = drain::DrainOptions {
        timeout: args.drain_timeout,
        grace_period: args.grace_period,
        force: args.force,
        delete_emptydir_data: args.delete_emptydir_data,
        concurrency: usize::from(args.drain_concurrency),
    };
    let mut preview = json!(null);
    let drain_action = if need.recreate && !external {
        let s = drain::select(&drain::pods_on(&c, node_name)?);
        if let Some(refused) = s.refusal(node_name, &options) {
            let hint = refused.hint();
            return Err(
                UsageError::new(format!("{refused}; nothing was changed"), hint)
                    .of_kind(crate::error::Kind::DrainRefused)
                    .into(),
            );
        }
        preview = json!({"evict": &s.evict, "unmanaged": &s.unmanaged, "skipped": &s.skipped});
        let show = |v: &[drain::PodRef]| v.iter().map(ToString::to_string).collect::<Vec<_>>();
        let mut evict = show(&s.evict);
        evict.extend(show(&s.unmanaged));
        Some(Action::Drain {
            node: node_name.to_owned(),
            evict,
            skipped: show(&s.skipped),
            options,
        })
    } else {
        None
    };
    Ok(NodePlan {
        steps: Some(NodeSteps {
            node: node_name.to_owned(),
            // A node cordoned before (by an engine, by hand) is not ours to uncordon.
            cordon: need.recreate && !cordoned,
            uncordon: (need.recreate && !cordoned) || need.we_cordoned,
            drain: drain_action,
            ready_timeout: args.wait_timeout,
        }),
        preview,
        cluster: Some(c),
    })
}

/// The error of a failed reconfigure, with what was undone and what a rerun does.
fn failed(e: plan::ExecError, node_name: &str) -> anyhow::Error {
    let after = if e.past_no_return {
        format!(
            "it failed after the Calico network was deleted, so nothing was undone; run 'calicoctl-win reconfigure' again with the same config to finish (node {node_name} stays cordoned until then)"
        )
    } else {
        // Evictions cannot be undone: a drain that stopped says what it evicted.
        let evicted = e
            .source
            .downcast_ref::<drain::DrainError>()
            .and_then(|d| match d {
                drain::DrainError::Timeout { evicted, .. } => Some(evicted.len()),
                _ => None,
            });
        match &e.rollback_failures {
                Some(f) if f.is_empty() => match evicted {
                    Some(0) => "the node is uncordoned again and the Calico services and network were not touched; no pod was evicted".to_owned(),
                    Some(n) => format!("the node is uncordoned again and the Calico services and network were not touched; the {n} evicted pod(s) are not brought back (their controllers start them elsewhere)"),
                    None => "everything done before it was undone: the services run as before and the node is uncordoned".to_owned(),
                },
                Some(f) => format!(
                    "undoing the steps done before it failed partly: {}; the journal is kept and the next reconfigure continues from it",
                    f.join("; ")
                ),
                None => String::new(),
            }
    };
    anyhow::Error::new(e).context(format!("reconfigure failed; {after}"))
}
