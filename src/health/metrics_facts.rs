//! The metrics ports as status sees them: a rule Felix left open to every address, and
//! CalicoNode's endpoint not listening (`health::metrics_findings`).

use super::judge;
use super::look::Notes;
use crate::health::metrics_findings::{
    FELIX_RULE, diags_review, diags_review_refused, endpoint, endpoint_down, felix_rule,
};
use crate::host::Host;
use k8s_openapi::api::core::v1::{Service, ServicePort};

/// CalicoNode's endpoint when it cannot listen, a firewall that cannot be read; said but no
/// problem: Felix's rule open to every address (the operator's Felix's leftover, harmless to the
/// node), and `/diags` refused for want of the TokenReview.
pub(super) fn metrics(h: &dyn Host, n: &mut Notes) {
    n.findings.extend(endpoint_down(h).as_ref().map(endpoint));
    n.shown.diags_review = diags_review_refused(h).as_ref().map(diags_review);
    match h.firewall_rule(FELIX_RULE) {
        Ok(rule) => n.shown.felix_rule = felix_rule(rule.as_ref()),
        Err(e) => n.findings.push(judge::host_unreadable(
            "firewall",
            format!("the firewall rule '{FELIX_RULE}' cannot be read: {e}"),
        )),
    }
}

/// Status's alone: with metrics on, CalicoNode's endpoint unscraped for an hour while the
/// fleet's metrics Service (`fleet plan --metrics-service`) is there: said, not a problem.
/// Without such a Service nothing is said; Services that cannot be read are said with doubt.
pub(super) fn unscraped(
    h: &dyn Host,
    config: &crate::config::Config,
    cluster: &crate::cluster::read::ClusterRead,
    n: &mut Notes,
) {
    use crate::health::metrics_findings::{scrapes, unscraped};
    let m = &config.metrics;
    let crate::cluster::read::ClusterRead::Read(c, _) = cluster else {
        return;
    };
    let Some(kept) = scrapes(h).filter(|_| m.enabled) else {
        return;
    };
    let now = crate::duration::now();
    if unscraped(&kept, now, m.port.0, "").is_none() {
        return;
    }
    let ns = m.diags_namespace.to_string();
    let services: kube::Api<Service> = kube::Api::namespaced(c.client.clone(), &ns);
    let lp = kube::api::ListParams::default().labels(crate::fleet::manifests::APP_LABEL);
    let list = match c.call("list", &format!("services in {ns}"), services.list(&lp)) {
        Ok(list) => list,
        // Refused (the installer's narrow roles list no Services): whether a scraper is meant
        // cannot be told, and the endpoint's silence is said all the same, as such.
        Err(e) => {
            let why = format!(
                "of the fleet in {ns}, if there is one (its Services could not be listed: {e}),"
            );
            n.shown.metrics_unscraped = unscraped(&kept, now, m.port.0, &why);
            return;
        }
    };
    let port = |p: &ServicePort| {
        p.name.as_deref() == Some(crate::fleet::manifests::METRICS_PORT_NAME)
            && p.port == i32::from(m.port.0)
    };
    let ports = |s: &&Service| {
        s.spec
            .iter()
            .flat_map(|s| s.ports.iter().flatten())
            .any(port)
    };
    let ours = list.items.iter().find(ports);
    if let Some(svc) = ours {
        let name = format!("{ns}/{}", svc.metadata.name.as_deref().unwrap_or_default());
        n.shown.metrics_unscraped = unscraped(&kept, now, m.port.0, &name);
    }
}
