//! What this node judges of itself, without an admin kubeconfig: the part of the survey
//! CalicoNode makes every minute (its condition and the codes beside it,
//! `supervise::condition`) and repair after its run.

use crate::installed::health::{self, Finding};

/// What this node can judge of itself, with the cluster when it has one: CalicoFelix's
/// service, Felix's health, the Calico network's endpoints (by `how`'s survey) and the HNS
/// restart watchdog's services. CalicoNode's condition gives these every minute, `repair`
/// after its run. What cannot be read is a finding too.
pub fn on_node(
    host: &dyn crate::host::Host,
    root: &crate::layout::InstallRoot,
    how: &crate::installed::endpoints::Survey<'_>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let unreadable = health::host_unreadable;
    let felix = crate::layout::Role::Felix.service_name();
    match host.service_query(felix) {
        Ok(found) => out.extend(health::service(felix, found.as_ref())),
        Err(e) => out.push(unreadable(felix, format!("{felix} cannot be read: {e}"))),
    }
    match crate::installed::felix_health::read(host, root) {
        Ok(h) => out.extend(health::felix(&h, crate::duration::now())),
        Err(e) => out.push(unreadable(
            "Felix",
            format!("Felix's health cannot be asked: {e}"),
        )),
    }
    match crate::installed::endpoints::survey_calico(host, how) {
        Ok(Some(judged)) => out.extend(judged.iter().filter_map(health::endpoint)),
        Ok(None) => out.extend(health::calico_network(false)),
        // As `status` words it (`hns_facts`): one judge for a survey that could not be made.
        Err(e) => out.push(health::endpoints_unjudged(format!("{e:#}"))),
    }
    if let Some(r) = crate::installed::hns_restart::last(host) {
        let at = crate::duration::time_text(r.at);
        out.extend(health::hns_restart(&r.still_failing(host), &at));
    }
    let networks = host.hns_networks().unwrap_or_default();
    if let Some(before) = crate::installed::addressing::current(host, &networks) {
        match host.adapters() {
            Ok(adapters) => out.extend(health::addressing(&before, &adapters)),
            Err(e) => out.push(unreadable("network adapters", e.to_string())),
        }
    }
    out
}
