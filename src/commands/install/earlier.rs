//! The grants this install made under a namespace or name it no longer uses (a reinstall or
//! `reconfigure` changed them: the node renamed): kept in the install record as still to
//! remove (`InstallRecord::renewal_earlier`), and removed only once the install is committed,
//! after its record is written (`remove_pending`): never part of a run a failure rolls back,
//! so a rolled back run leaves the earlier install its grant, and never undone.

use crate::apply::Action;
use crate::apply::journal::Journal;
use crate::cluster::earlier;
use crate::cluster::renewal::Grant;
use crate::context::Context;
use crate::host::{Access, Host};
use crate::installed::record::{self, InstallRecord};
use crate::layout::InstallRoot;

/// The grant made now with this install's id (`Grant::owner`): the previous record's, so
/// that the grants it made stay told its own, else the one a cut-off run journaled, else a
/// new one.
pub(super) fn with_owner(
    mut g: Grant,
    previous: Option<&InstallRecord>,
    journal: Option<&Journal>,
) -> Grant {
    let kept = previous.and_then(|p| p.renewal.as_ref().and_then(|r| r.owner.clone()));
    let journaled = || journal.and_then(|j| j.grant.as_ref().and_then(|m| m.owner.clone()));
    g.owner = Some(kept.or_else(journaled).unwrap_or_else(Grant::new_owner));
    g
}

/// The grants still to remove once the install made `g`: the previous record's grant when it
/// stood elsewhere (another namespace or name), and those it still names to remove, each once;
/// never one where `g` stands. `None` (the record's kept) without a grant made now.
pub(super) fn pending(g: Option<&Grant>, previous: Option<&InstallRecord>) -> Option<Vec<Grant>> {
    let g = g?;
    let at = |x: &Grant| (x.namespace.clone(), x.name.clone());
    let mut out: Vec<Grant> = Vec::new();
    // The previous record's grant, made under another node name, with the config hash its
    // Node carried (`Grant::node_hash`); those it names still to remove carry their own.
    let renamed = |e: &Grant| {
        let mut e = e.clone();
        if e.name != g.name && e.node_hash.is_none() {
            e.node_hash = previous.and_then(|p| p.config_hash.clone());
        }
        e
    };
    let recorded = previous.into_iter().flat_map(|p| {
        let current = p.renewal.iter().map(renamed);
        current.chain(p.renewal_earlier.iter().cloned())
    });
    for e in recorded {
        if at(&e) != at(g) && !out.iter().any(|x| at(x) == at(&e)) {
            out.push(e);
        }
    }
    Some(out)
}

/// The plan as shown (the dry run, the JSON document): `actions`, then the removal of each
/// grant still to remove, which runs after them (`remove_pending`).
pub(super) fn shown(actions: &[Action], pending: Option<&[Grant]>) -> Vec<Action> {
    let removals = pending.into_iter().flatten().map(removal);
    actions.iter().cloned().chain(removals).collect()
}

fn removal(g: &Grant) -> Action {
    Action::RemoveEarlierGrant {
        namespace: g.namespace.clone(),
        name: g.name.clone(),
        uids: g.uids.clone(),
        owner: g.owner.clone(),
        node_hash: g.node_hash.clone(),
    }
}

/// After the install (or reconfigure, repair) is committed: removes what of each grant the
/// record names still to remove is positively this install's (`earlier::remove`), said, and
/// writes the record without those settled (removed, gone, or found not ours). One the cluster
/// does not answer for, or whose delete is refused (no right in its namespace), stays in the
/// record, said with its command: the next run or `uninstall --purge` finishes it. Nothing
/// here fails the command: it is committed.
pub(crate) fn remove_pending(
    ctx: &mut Context,
    host: &dyn Host,
    root: &InstallRoot,
    cluster: Option<&crate::cluster::Cluster>,
) {
    let mut rec = match record::read(host, root) {
        Ok(Some(rec)) if !rec.renewal_earlier.is_empty() => rec,
        Ok(_) => return,
        Err(e) => return ctx.printer.warn(&format!("{e:#}")),
    };
    let Some(c) = cluster else {
        for g in &rec.renewal_earlier {
            ctx.printer.warn(&format!(
                "the Role and RoleBinding {} in {} this install made under its earlier namespace or name stay, the cluster not read with the admin kubeconfig: the next install, reconfigure or repair with it, or 'calicoctl-win uninstall --purge', removes them",
                g.name, g.namespace
            ));
        }
        return;
    };
    let mut kept = Vec::new();
    for g in std::mem::take(&mut rec.renewal_earlier) {
        let removal = earlier::remove(c, &g);
        removal.left.iter().for_each(|w| ctx.printer.warn(w));
        if !removal.settled {
            kept.push(g);
        }
    }
    rec.renewal_earlier = kept;
    let written = (rec.to_bytes().map_err(anyhow::Error::from))
        .and_then(|b| Ok(host.replace_file(&root.record(), &b, Access::Normal)?));
    if let Err(e) = written {
        ctx.printer.warn(&format!(
            "cannot write the install record without the earlier grants removed: {e:#}; the next install removes what is left of them"
        ));
    }
}
