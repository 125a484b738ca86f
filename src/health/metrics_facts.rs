//! The metrics ports as status sees them: a rule Felix left open to every address, and
//! CalicoNode's endpoint not listening (`installed::metrics_findings`).

use super::look::Notes;
use crate::host::Host;
use crate::installed::health;
use crate::installed::metrics_findings::{
    FELIX_RULE, diags_review, diags_review_refused, endpoint, endpoint_down, felix_rule,
};

/// CalicoNode's endpoint when it cannot listen, a firewall that cannot be read; and, said but
/// no problem, Felix's own Prometheus rule when it lets every address in (a leftover of the
/// operator's Felix, which breaks nothing of the node's), and its `/diags` refused because the
/// API server refuses it the TokenReview.
pub(super) fn metrics(h: &dyn Host, n: &mut Notes) {
    n.findings.extend(endpoint_down(h).as_ref().map(endpoint));
    n.shown.diags_review = diags_review_refused(h).as_ref().map(diags_review);
    match h.firewall_rule(FELIX_RULE) {
        Ok(rule) => n.shown.felix_rule = felix_rule(rule.as_ref()),
        Err(e) => n.findings.push(health::host_unreadable(
            "firewall",
            format!("the firewall rule '{FELIX_RULE}' cannot be read: {e}"),
        )),
    }
}
