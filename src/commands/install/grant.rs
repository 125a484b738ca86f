//! The node's grant to renew its token, made between the plan shown and the plan run: journaled
//! before each of its objects is created (`making::Making`), so that a run cut off before its
//! install record names them leaves them to the next install (which finishes or undoes them)
//! or to uninstall (which undoes them); a failed run deletes only what it or the cut-off run
//! it continues made, never a grant that was there before: the plan's rollback deletes it
//! before it drops the journal (`apply::undo`), so that a run killed at any point leaves it
//! named in a journal.

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

/// The install's journal the grant is kept in: the one this run began or continues, else one
/// begun for it (and undone, `Begun`, if the run stops before its plan).
pub(super) struct Journaling<'j, 'a> {
    pub journal: &'j mut Option<Journal>,
    pub begun: &'j mut Option<Begun<'a>>,
    pub path: &'j str,
    pub timeout: std::time::Duration,
}

impl<'j, 'a> Journaling<'j, 'a> {
    /// The journal and beginning of this run of `change`.
    pub fn new(
        (journal, begun): (&'j mut Option<Journal>, &'j mut Option<Begun<'a>>),
        change: &'j crate::commands::change::Change,
        timeout: std::time::Duration,
    ) -> Self {
        Self {
            journal,
            begun,
            path: &change.journal_path,
            timeout,
        }
    }
}

/// The node's grant, then the enclosing command's steps (`hand_over`): the grant first, so
/// that a refused grant changes nothing of them (a migration's node stays with the operator),
/// and undone when they fail. The plan to run (made again with the grant's uids in its install
/// record; the document shows the plan as first made). What this install made of the grant is
/// in the journal the plan runs with, whose rollback deletes it.
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

/// The grant made (its objects journaled first), before the host changes (a refusal changes
/// nothing: what it made is undone); what this install made of it, and the uids to record.
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

/// The grant a cut-off run of this install made (journaled) when this run does not make that
/// same grant (the node or namespace changed, no admin kubeconfig, etcd).
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

/// `undo_earlier_grant`'s refusal when it is known before anything changes (no cluster to
/// remove it with): given then, in the dry run too, with the grant this run makes (`g`).
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

/// The grant a cut-off run made that this run does not make (`earlier_grant`): removed before
/// any change, and then dropped from the journal (kept there until it is gone); without the
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

/// What a run stopped before its plan made of the grant and could not remove stays named in
/// the journal this run began (saved with it before each create): that beginning is kept,
/// not undone with the journal (`Begun`), so that the next install or uninstall removes it
/// (and the directories it names) rather than nobody. A journal this run did not begin is
/// kept anyway.
fn keep_journal(ctx: &mut Context, begun: &mut Option<Begun<'_>>, path: &str) {
    if let Some(b) = begun.as_mut().filter(|b| b.armed) {
        b.armed = false;
        ctx.printer.warn(&format!(
            "the journal {path} keeps it: the next install or uninstall removes it"
        ));
    }
}

/// A failed install removes what it made of the grant (a grant there before it stays); true
/// when nothing of it stays.
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

/// What a run made of the grant removed, what stays of it said; a create whose answer was lost
/// is waited out (`remove_made`): nothing of it comes. `Err` says why not (`unreached` when
/// the cluster was not read).
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
