//! What is under way on the node: a command changing it now (who holds the host lock), a
//! detached run that died, or a run cut off (its journal is still in the install root and
//! nobody holds the lock), each with the command that finishes or undoes it.

use super::look::{Notes, Running};
use super::sections::{Interrupted, UnderWay};
use crate::duration::time_text;
use crate::host::Host;
use crate::installed::health;
use crate::layout::InstallRoot;

pub(super) fn under_way(
    host: &dyn Host,
    root: &InstallRoot,
    running: &Running,
    n: &mut Notes,
) -> anyhow::Result<Option<UnderWay>> {
    if let Some(holder) = &running.holder {
        let who = holder.clone().unwrap_or_else(|| "a command".to_owned());
        n.findings.push(health::changing_now(&who));
        return Ok(Some(UnderWay::Running { running: who }));
    }
    if let Some(died) = &running.died {
        n.findings.push(health::detached_died(died.clone()));
    }
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
    n.findings.push(health::cut_off(
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
