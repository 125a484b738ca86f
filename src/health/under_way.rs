//! What is under way on the node: a command changing it now (who holds the host lock in
//! calicoctl-win's state directory), a detached run that died (its result written now), or a run cut off (its journal is still in the install root and
//! nobody holds the lock), each with the command that finishes or undoes it.

use super::judge;
use super::look::Notes;
use super::sections::{Interrupted, UnderWay};
use crate::duration::time_text;
use crate::host::Host;
use crate::layout::InstallRoot;
use std::path::Path;

/// What is under way, `busy` being who holds the host lock as the look found it once
/// (`host::lock::busy`).
pub(super) fn under_way(
    host: &dyn Host,
    root: &InstallRoot,
    state_dir: Option<&Path>,
    busy: Option<Option<crate::host::lock::Holder>>,
    n: &mut Notes,
) -> anyhow::Result<Option<UnderWay>> {
    if let Some(holder) = busy {
        let who = holder.map_or_else(|| "a command".to_owned(), |h| h.to_string());
        n.findings.push(judge::changing_now(&who));
        return Ok(Some(UnderWay::Running { running: who }));
    }
    // Nobody holds the lock: a detached run that ended without its result has died, and its
    // result is written now (`apply::detached::settle`).
    let died = state_dir.map(crate::apply::detached::settle).transpose()?;
    n.findings.extend(died.flatten().map(judge::detached_died));
    let mut cut_off = Vec::new();
    for path in root.journals() {
        if let Some(j) = crate::apply::journal::Journal::load(host, &path)? {
            cut_off.push(interrupted(&j, n));
        }
    }
    Ok(match cut_off.len() {
        0 => None,
        1 => Some(UnderWay::Interrupted(cut_off.remove(0))),
        _ => Some(UnderWay::Several(cut_off)),
    })
}

/// A run cut off, said with the command that finishes or undoes it.
fn interrupted(j: &crate::apply::journal::Journal, n: &mut Notes) -> Interrupted {
    let done = j.entries.iter().filter(|e| e.done).count();
    // The journal holds the steps begun, not the whole plan: say what was done and where it
    // stopped, never a count of the plan it does not know.
    let stopped_at = j
        .entries
        .iter()
        .find(|e| !e.done)
        .or(j.entries.last())
        .map_or(String::new(), |e| format!(" (at: {})", e.action));
    n.findings.push(judge::cut_off(
        &j.command,
        done,
        &stopped_at,
        &time_text(j.started),
    ));
    Interrupted {
        interrupted: j.command.clone(),
        steps_done: done,
        steps: j.entries.len(),
    }
}
