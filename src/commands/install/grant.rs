//! The node's grant to renew its token, made between the plan shown and the plan run, each
//! object journaled before it is created (`making::Making`): a run cut off at any point leaves
//! it named in a journal, for the next install or uninstall. A failed run deletes only what it
//! (or the cut-off run it continues) made, in its rollback before the journal goes.

use super::beginning::{Begun, fresh_journal};
use super::{Within, hand_over, record_uids};
use crate::apply;
use crate::apply::journal::Journal;
use crate::cluster::making::{self, Making};
use crate::cluster::renewal::{self, Grant};
use crate::commands::common::ClusterRead;
use crate::context::Context;
use crate::host::Host;
use crate::plan::install::Inputs;

/// The install's journal the grant is kept in: this run's, else one begun for it (`Begun`).
pub(super) struct Journaling<'j, 'a> {
    pub journal: &'j mut Option<Journal>,
    pub begun: &'j mut Option<Begun<'a>>,
    pub path: &'j str,
    pub timeout: std::time::Duration,
}

/// The node's grant, then the enclosing command's steps (`hand_over`), so a refused grant
/// changes nothing of them, and the grant is undone when they fail. The plan to run, with the
/// grant's uids in its record (the document shows the plan as first made).
pub(super) fn grant_then_hand_over<'a>(
    ctx: &mut Context,
    (host, cluster, node_name): (&'a dyn Host, &ClusterRead, &crate::k8s_name::NodeName),
    (inputs, actions): (&mut Inputs, &[apply::Action]),
    within: Option<&mut Within>,
    at: Journaling<'_, 'a>,
) -> anyhow::Result<Vec<apply::Action>> {
    let mut actions = actions.to_vec();
    let planned = inputs.renewal.as_ref().map(|g| g.uids.clone());
    let renewal = inputs.renewal.clone();
    let config = inputs.config;
    let begun = &mut *at.begun;
    let journaling = Journaling {
        journal: at.journal,
        begun: &mut *begun,
        path: at.path,
        timeout: at.timeout,
    };
    let (made, uids) = grant(
        ctx,
        (host, cluster, node_name),
        renewal.as_ref(),
        (config, journaling),
    )?;
    let then = record_uids(host, inputs, &mut actions, (planned, uids))
        .and_then(|()| hand_over(ctx, host, within, begun));
    if let Err(e) = then {
        if !ungrant(ctx, cluster, made.as_ref()) {
            keep_journal(ctx, begun, at.path);
        }
        return Err(e);
    }
    Ok(actions)
}

/// The grant made before the host changes (a refusal undoes it); what this install made of
/// it, and the uids to record.
fn grant<'a>(
    ctx: &mut Context,
    (host, cluster, node_name): (&'a dyn Host, &ClusterRead, &crate::k8s_name::NodeName),
    g: Option<&Grant>,
    (config, mut at): (&crate::config::Config, Journaling<'_, 'a>),
) -> anyhow::Result<(Option<Making>, renewal::GrantUids)> {
    undo_earlier_grant(ctx, (host, cluster), g, &mut at)?;
    let (Some(g), ClusterRead::Read(c, _)) = (g, cluster) else {
        return Ok((None, g.map(|g| g.uids.clone()).unwrap_or_default()));
    };
    // An earlier run of this install, cut off, may have made it: then it is ours.
    let mut making = (at.journal.as_ref())
        .and_then(|j| j.grant.clone())
        .filter(|m| m.is_of(g))
        .unwrap_or_else(|| Making::of(g))
        .with_nonce();
    if at.journal.is_none() {
        let journal = fresh_journal(host, config, host.missing_parents(at.path)?)?;
        *at.begun = Begun::armed(host, Some(journal.clone()), at.path, at.timeout);
        *at.journal = Some(journal);
    }
    let before = making.clone();
    let mut save = |m: &Making| -> anyhow::Result<()> {
        let kept = Some(m.clone()).filter(Making::makes_any);
        if let Some(b) = at.begun.as_mut() {
            b.journal.grant.clone_from(&kept);
        }
        match at.journal.as_mut() {
            Some(j) => {
                j.grant = kept;
                j.save(host, at.path)
            }
            None => Ok(()),
        }
    };
    match making::ensure(c, g, node_name, &mut making, &mut save) {
        Ok(uids) => {
            if making.makes_any() && making != before {
                ctx.log(&format!(
                    "created Role and RoleBinding {} in {}",
                    g.name, g.namespace
                ));
            }
            Ok((Some(making), uids))
        }
        Err(e) => {
            if !ungrant(ctx, cluster, Some(&making)) {
                keep_journal(ctx, at.begun, at.path);
            }
            Err(e.context(format!(
                "cannot create the Role and RoleBinding {} that let CalicoNode renew calico-node's token",
                g.name
            )))
        }
    }
}

/// The grant a cut-off run made that this run does not (the node or namespace changed, no
/// admin kubeconfig, etcd).
fn earlier_grant(journal: Option<&Journal>, g: Option<&Grant>) -> Option<Making> {
    (journal.and_then(|j| j.grant.clone()))
        .filter(|m| m.makes_any() && !g.is_some_and(|g| m.is_of(g)))
}

/// The refusal of a run that does not make the grant a cut-off run made and cannot remove it.
fn cannot_remove(m: &Making, why: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "an earlier run of this install made the Role and RoleBinding {} in {}, which this run does not make, and it cannot be removed ({why}); remove it with '{}', or run install with the admin kubeconfig",
        m.name,
        m.namespace,
        m.delete_command()
    )
}

const NO_ADMIN: &str = "this run does not reach the cluster with the admin kubeconfig";

/// `undo_earlier_grant`'s refusal when known before any change (no cluster), dry run too.
pub(super) fn refuse_earlier_grant(
    journal: Option<&Journal>,
    g: Option<&Grant>,
    cluster: &ClusterRead,
) -> anyhow::Result<()> {
    match earlier_grant(journal, g) {
        Some(m) if !matches!(cluster, ClusterRead::Read(..)) => Err(cannot_remove(&m, NO_ADMIN)),
        _ => match (cluster, g) {
            (ClusterRead::Read(c, _), Some(g)) => making::refuse_foreign(c, g),
            _ => Ok(()),
        },
    }
}

/// The `earlier_grant` removed before any change, then dropped from the journal; without the
/// cluster, or refused, this run is refused with the command that deletes it.
fn undo_earlier_grant(
    ctx: &mut Context,
    (host, cluster): (&dyn Host, &ClusterRead),
    g: Option<&Grant>,
    at: &mut Journaling<'_, '_>,
) -> anyhow::Result<()> {
    let Some(m) = earlier_grant(at.journal.as_ref(), g) else {
        return Ok(());
    };
    remove(ctx, cluster, &m, NO_ADMIN).map_err(|why| cannot_remove(&m, &why))?;
    if let Some(j) = at.journal.as_mut() {
        j.grant = None;
        j.save(host, at.path)?;
    }
    Ok(())
}

/// A grant a run stopped before its plan could not remove stays named in the journal this run
/// began, which is kept (not undone, `Begun`) for the next install or uninstall to remove.
fn keep_journal(ctx: &mut Context, begun: &mut Option<Begun<'_>>, path: &str) {
    if let Some(b) = begun.as_mut().filter(|b| b.armed) {
        b.armed = false;
        ctx.printer.warn(&format!(
            "the journal {path} keeps it: the next install or uninstall removes it"
        ));
    }
}

/// A failed install removes what it made of the grant; true when nothing of it stays.
fn ungrant(ctx: &mut Context, cluster: &ClusterRead, made: Option<&Making>) -> bool {
    let Some(m) = made.filter(|m| m.makes_any()) else {
        return true;
    };
    match remove(ctx, cluster, m, "the cluster cannot be reached") {
        Ok(()) => true,
        Err(e) => {
            ctx.printer.warn(&format!(
                "the install failed and what it made of the Role and RoleBinding {} stays: {e}; remove it with '{}'",
                m.name,
                m.delete_command()
            ));
            false
        }
    }
}

/// What a run made of the grant removed (a lost create waited out, `remove_made`), what stays
/// said; `Err` why not (`unreached`: the cluster was not read).
fn remove(
    ctx: &mut Context,
    cluster: &ClusterRead,
    m: &Making,
    unreached: &str,
) -> Result<(), String> {
    let ClusterRead::Read(c, _) = cluster else {
        return Err(unreached.to_owned());
    };
    m.wait_note().inspect(|n| ctx.printer.note(n));
    let left = making::remove_made(c, m).map_err(|e| e.to_string())?;
    left.iter().for_each(|l| ctx.printer.warn(l));
    Ok(())
}
