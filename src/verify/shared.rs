//! What the runs in one namespace given (`verify --namespace`) made, told apart by their run id
//! (`objects::RUN_LABEL`), each holding its Lease there: the sweep at a run's start (a Lease
//! run out deleted with the uid and resourceVersion it was judged by, then its objects) and the
//! run's clean-up. Only objects with verify's labels are touched.

use super::lease::{Held, older, run_out};
use super::matrix::{NodeFacts, RunError};
use super::objects::{Names, OWNER_LABEL, OWNER_VALUE, RUN_LABEL};
use super::options::Options;
use super::probe;
use crate::cluster::{Cluster, ClusterError};
use crate::duration::{Look, Pauses, poll_quietly};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Event, Pod, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::ListParams;
use std::collections::BTreeSet;
use std::time::Instant;

use super::options::RENEW;
use super::step::POLL;

/// The run's Lease taken in the namespace given `ns`, after the sweep of what killed runs
/// left there: the Lease held and the runs swept (`NS/ID`).
pub fn claim(c: &Cluster, ns: &str, o: &Options) -> Result<(Held, Vec<String>), RunError> {
    let swept = match probe::server_date(c, None)? {
        Some(now) => {
            c.note_server_date(now);
            sweep(c, ns, now)?
        }
        // No `Date` from the server: nothing is judged run out.
        None => Vec::new(),
    };
    Ok((super::lease::take(c, ns, o)?, swept))
}

/// The run's clean-up in a namespace given: its objects deleted (by its label, each by its
/// uid), its pods waited for until `until`, then its Lease deleted. Whether all is gone; pods still terminating
/// leave the Lease to run out, and the next run deletes what is left.
pub fn release(c: &Cluster, ns: &str, held: &Held, until: Instant) -> Result<bool, ClusterError> {
    held.stop();
    remove_run(c, ns, &held.names.id, until)?;
    if !pods_left(c, ns, &held.names.selector(), until)?.is_empty() {
        return Ok(false);
    }
    super::lease::delete_lease(c, held, until)?;
    Ok(true)
}

/// The sweep at a run's start in `ns`, judged at `now` (the API server's time): the runs
/// whose Lease ran out (`judge`), then their objects; the objects of runs without a Lease,
/// older than `LEFTOVER_AGE`. The runs swept, as `NS/ID`.
fn sweep(c: &Cluster, ns: &str, now: i64) -> Result<Vec<String>, RunError> {
    let until = Instant::now() + super::options::GONE_WAIT + RENEW;
    let (living, ran_out) = judge(c, ns, now, until)?;
    let mut swept = Vec::new();
    for id in ran_out {
        remove_run(c, ns, &id, until)?;
        swept.push(format!("{ns}/{id}"));
    }
    // Runs without a Lease: their objects once old.
    for id in leaseless(c, ns, &living, now, until)? {
        remove_run(c, ns, &id, until)?;
        swept.push(format!("{ns}/{id}"));
    }
    Ok(swept)
}

/// The runs' Leases in `ns`, judged at `now`: the ids of the living runs, and of those whose
/// Lease ran out (`run_out`) and was deleted as judged (a 409: renewed, or made again, since
/// it was read: a living run's).
pub fn judge(
    c: &Cluster,
    ns: &str,
    now: i64,
    until: Instant,
) -> Result<(BTreeSet<String>, Vec<String>), ClusterError> {
    let leases: Api<Lease> = Api::namespaced(c.client.clone(), ns);
    let ours = ListParams::default().labels(&format!("{OWNER_LABEL}={OWNER_VALUE}"));
    let found = c
        .call_by(until, ("list", "leases"), leases.list(&ours))?
        .items;
    let (mut living, mut ran_out) = (BTreeSet::new(), Vec::new());
    for l in &found {
        let Some(id) = l.metadata.labels.as_ref().and_then(|m| m.get(RUN_LABEL)) else {
            continue;
        };
        if !run_out(l, now) {
            living.insert(id.clone());
            continue;
        }
        let name = l.metadata.name.clone().unwrap_or_default();
        let meta = &l.metadata;
        let dp = probe::only(meta.uid.as_deref(), meta.resource_version.as_deref());
        let what = format!("leases/{name}");
        match c.call_opt_by(until, ("delete", &what), leases.delete(&name, &dp)) {
            Ok(_) => ran_out.push(id.clone()),
            Err(ClusterError::Api { code: 409, .. }) => {
                living.insert(id.clone());
            }
            Err(e) => return Err(e),
        }
    }
    Ok((living, ran_out))
}

/// The ids of the runs whose objects in `ns` are older than `LEFTOVER_AGE` and whose Lease is
/// not among the `living`, nor there now.
fn leaseless(
    c: &Cluster,
    ns: &str,
    living: &BTreeSet<String>,
    now: i64,
    until: Instant,
) -> Result<BTreeSet<String>, ClusterError> {
    let lp = ListParams::default().labels(RUN_LABEL);
    let (_, pods) = list_of::<Pod>(c, (ns, &lp), ("pods", until))?;
    let (_, services) = list_of::<Service>(c, (ns, &lp), ("services", until))?;
    let (_, policies) = list_of::<NetworkPolicy>(c, (ns, &lp), ("networkpolicies", until))?;
    let metas = pods.iter().map(|p| &p.metadata);
    let metas = metas.chain(services.iter().map(|s| &s.metadata));
    let mut old = BTreeSet::new();
    for meta in metas.chain(policies.iter().map(|p| &p.metadata)) {
        let id = meta.labels.as_ref().and_then(|m| m.get(RUN_LABEL));
        if let Some(id) = id.filter(|id| !living.contains(*id))
            && crate::cluster::labelled(meta, (OWNER_LABEL, OWNER_VALUE))
            && older(meta, now)
        {
            old.insert(id.clone());
        }
    }
    // A Lease there now (made since the list) is a living run's.
    let leases: Api<Lease> = Api::namespaced(c.client.clone(), ns);
    let mut gone_runs = BTreeSet::new();
    for id in old {
        let name = Names::new(&id, true).lease();
        let what = format!("leases/{name}");
        if c.call_opt_by(until, ("get", &what), leases.get(&name))?
            .is_none()
        {
            gone_runs.insert(id);
        }
    }
    Ok(gone_runs)
}

/// Deletes the objects of the run `id` in `ns`, each by its uid as listed by its label: its
/// pods (those Terminating on a node not Ready or gone at once, `wedged`), their events
/// (matched by the pods' uids), its Service and its policy.
fn remove_run(c: &Cluster, ns: &str, id: &str, until: Instant) -> Result<(), ClusterError> {
    let lp = ListParams::default().labels(&format!("{RUN_LABEL}={id}"));
    let (pods, mut listed) = list_of::<Pod>(c, (ns, &lp), ("pods", until))?;
    listed.retain(|p| crate::cluster::labelled(&p.metadata, (OWNER_LABEL, OWNER_VALUE)));
    super::wedged::force_dead(c, ns, &listed, until)?;
    for p in &listed {
        delete(c, &pods, (&p.metadata, "pods"), until)?;
    }
    let (services, found) = list_of::<Service>(c, (ns, &lp), ("services", until))?;
    for s in &found {
        delete(c, &services, (&s.metadata, "services"), until)?;
    }
    let what = ("networkpolicies", until);
    let (policies, found) = list_of::<NetworkPolicy>(c, (ns, &lp), what)?;
    for p in &found {
        delete(c, &policies, (&p.metadata, "networkpolicies"), until)?;
    }
    let uids: Vec<&str> = listed
        .iter()
        .filter_map(|p| p.metadata.uid.as_deref())
        .collect();
    let events: Api<Event> = Api::namespaced(c.client.clone(), ns);
    for e in probe::events(c, ns, Some(until))? {
        if e.involved_object
            .uid
            .as_deref()
            .is_some_and(|u| uids.contains(&u))
        {
            delete(c, &events, (&e.metadata, "events"), until)?;
        }
    }
    Ok(())
}

/// The `kind` objects in `ns` that `lp` selects, listed by `until`, and their Api.
fn list_of<K>(
    c: &Cluster,
    (ns, lp): (&str, &ListParams),
    (kind, until): (&str, Instant),
) -> Result<(Api<K>, Vec<K>), ClusterError>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(c.client.clone(), ns);
    let items = c.call_by(until, ("list", kind), api.list(lp))?.items;
    Ok((api, items))
}

/// One object deleted by its uid (`DeleteOptions.preconditions`), if it carries verify's
/// label; gone already, or no longer the object listed, is fine.
fn delete<K>(
    c: &Cluster,
    api: &Api<K>,
    (meta, kind): (&ObjectMeta, &str),
    until: Instant,
) -> Result<(), ClusterError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let name = meta.name.clone().unwrap_or_default();
    let what = format!("{kind}/{name}");
    let dp = probe::only(meta.uid.as_deref(), None);
    probe::gone(c.call_opt_by(until, ("delete", &what), api.delete(&name, &dp)))
}

/// The run's pods in `ns` (by `selector`), waited for (until `until`) to be gone: those not gone.
fn pods_left(
    c: &Cluster,
    ns: &str,
    selector: &str,
    until: Instant,
) -> Result<Vec<Pod>, ClusterError> {
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), ns);
    let lp = ListParams::default().labels(selector);
    // Quietly, and not cut by the stop: a stopped run's clean-up comes after it.
    let mut seen: Option<Vec<Pod>> = None;
    poll_quietly(
        super::step::last_look(until),
        Pauses::every(POLL),
        || {
            let left = match c.call_by(until, ("list", "pods"), pods.list(&lp)) {
                Ok(l) => l.items,
                Err(ClusterError::Timeout { .. }) if seen.is_some() => {
                    return Ok(Look::Pending(seen.clone().unwrap_or_default()));
                }
                Err(e) => return Err(e),
            };
            seen = Some(left.clone());
            Ok(super::step::done_if(left.is_empty(), left))
        },
        Ok,
    )
}

/// The nodes, the one under test taken as usable when `--while-cordoned` (system-upgrade-
/// controller cordons it for the fleet Plan's job: `pkg/upgrade/job/job.go`).
pub fn while_cordoned(mut nodes: Vec<NodeFacts>, o: &super::options::Options) -> Vec<NodeFacts> {
    if o.while_cordoned {
        for n in nodes.iter_mut().filter(|n| n.name == o.node) {
            n.usable = true;
        }
    }
    nodes
}
