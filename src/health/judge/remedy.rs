//! Each code's remedy, written once: the remedy column of its row in docs/findings.md. A judge
//! whose fix is the same for every finding of its code gives this one; a judge whose fix names
//! what it found (a service, the node, an adapter, a VNI, a command) gives that, and this is
//! its general form. `node-being-removed`'s reads the autoscaler's taint value as a Unix time:
//! cluster-autoscaler utils/taints/taints.go `MarkToBeDeleted` sets `time.Now().Unix()`.

use super::finding::Code;

/// The catalogue of codes, each row `| `code` | what is wrong | remedy |`.
const CATALOGUE: &str = include_str!("../../../docs/findings.md");

/// The catalogue's rows, each split into its cells.
pub(super) fn rows() -> impl Iterator<Item = Vec<&'static str>> {
    CATALOGUE
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| l.trim_matches('|').split(" | ").map(str::trim).collect())
}

impl Code {
    /// What fixes a finding of this code (`docs_findings_lists_every_code_with_its_remedy`
    /// proves each code has its row).
    pub fn remedy(self) -> &'static str {
        let named = format!("`{}`", self.word());
        rows()
            .find(|row| row[0] == named)
            .and_then(|row| row.get(2).copied())
            .unwrap_or_default()
    }
}
