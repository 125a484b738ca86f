//! The judges of what is under way on the node, and of a node where Calico is not installed.

use super::finding::{Code, Finding};

/// A command holds the host lock now (`who`, as the lock names it).
pub fn changing_now(who: &str) -> Finding {
    Finding::new(
        Code::UnderWay,
        "node",
        format!("{who} is changing this node now"),
        "run calicoctl-win status again when it has finished",
    )
}

/// A detached run that ended without its result (`commands::detach`'s sentence).
pub fn detached_died(said: String) -> Finding {
    Finding::new(
        Code::UnderWay,
        "detached run",
        said,
        "read its log, then run the command again: a journal it left is finished or undone by it",
    )
}

/// A run cut off with its journal left: `command`, the steps it finished and where it stopped
/// (` (at: <action>)` or nothing), and when it started.
pub fn cut_off(command: &str, done: usize, stopped_at: &str, started: &str) -> Finding {
    // Only what the commands do: uninstall refuses another command's unfinished journal, a
    // repair's steps (deleted endpoints, evicted pods) cannot be undone, and a migration goes
    // on from where it stopped (to-operator's cluster steps before the host are undone by it
    // when they fail).
    let again = if command == "uninstall" || command == "repair" || command.starts_with("migrate") {
        format!("'calicoctl-win {command}' finishes it")
    } else {
        format!(
            "'calicoctl-win {command}' with the same inputs finishes it, 'calicoctl-win uninstall' undoes it"
        )
    };
    Finding::new(
        Code::UnderWay,
        command,
        format!(
            "{command} was cut off after {done} finished step(s){stopped_at}, started {started}"
        ),
        again,
    )
}

/// Calico is not installed in `root`.
pub fn not_installed(root: &str) -> Finding {
    Finding::fixed(Code::NotInstalled, root, format!("not installed in {root}"))
}
