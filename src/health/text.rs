//! The report for people: each section's line, then healthy, or each finding with its code
//! and its fix (the findings' one form, `installed::health::Said`).

use super::report::NodeReport;

/// The lines status prints, in order.
pub fn lines(report: &NodeReport) -> Vec<String> {
    match report {
        NodeReport::NotInstalled(r) => r.lines.clone(),
        NodeReport::Installed(r) => {
            let mut out = r.lines.clone();
            out.push(if r.healthy { "Healthy." } else { "Degraded:" }.to_owned());
            out.extend(r.findings.iter().map(|f| format!("  - {f:4}")));
            out
        }
    }
}
