//! `verify --namespace NS`: the run in a namespace it is given (`fleet rbac --identity verify`
//! makes `calicoctl-win-verify`) instead of one of its own, so that its rights can be a Role
//! in that namespace (no namespace made or deleted, no pod made elsewhere). Runs in the one
//! namespace take turns: a run holds the ConfigMap `calicoctl-win-verify-run` (its create is
//! refused, 409, while another run holds it: kube-apiserver's create of an existing name,
//! `staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go` `Create`), waits its
//! turn within its deadline, and deletes what it made (and its pods' events, matched by the
//! pods' uids), then the ConfigMap. A ConfigMap older than `LEFTOVER_AGE_S` is a killed
//! run's: the next run deletes it (only while it is that one: `preconditions.uid`), takes the
//! turn, and deletes the killed run's objects.

use super::matrix::NodeFacts;
use super::objects::{OWNER_LABEL, OWNER_VALUE, POLICY_NAME};
use super::probe;
use crate::cluster::{Cluster, ClusterError};
use k8s_openapi::api::core::v1::{ConfigMap, Event, Pod, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{DeleteParams, ListParams};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The ConfigMap a run holds while it runs in the namespace.
pub const TURN: &str = crate::cluster::verify_rights::TURN;
const POLL: Duration = Duration::from_secs(1);
/// How long a killed run's pods may take to go (the run's own clean-up waits as long).
const RELEASE_WAIT: Duration = Duration::from_secs(60);

fn turn(suffix: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(TURN.into()),
            labels: Some(BTreeMap::from([(OWNER_LABEL.into(), OWNER_VALUE.into())])),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("run".into(), suffix.to_owned())])),
        ..Default::default()
    }
}

/// Deletes what a killed run left in `ns` (its turn older than `max_age_s`): the run's name,
/// when there was one, and whether this run now holds the turn. The old turn is deleted only
/// while it is the one found old (`preconditions.uid`: a 409 is another sweep's, which took
/// it first), then taken by this run before anything else is deleted, so no other run makes
/// pods of the same names meanwhile.
pub fn sweep(
    c: &Cluster,
    ns: &str,
    (now_s, max_age_s): (i64, i64),
    suffix: &str,
) -> Result<(Vec<String>, bool), ClusterError> {
    let api: Api<ConfigMap> = Api::namespaced(c.client.clone(), ns);
    let what = format!("configmaps/{TURN}");
    let Some(held) = c.call_opt("get", &what, api.get(TURN))? else {
        return Ok((Vec::new(), false));
    };
    let old = held
        .metadata
        .creation_timestamp
        .as_ref()
        .is_some_and(|t| now_s - t.0.as_second() > max_age_s);
    if !old {
        return Ok((Vec::new(), false));
    }
    let dp = probe::only(held.metadata.uid.as_deref());
    match c.call_opt("delete", &what, api.delete(TURN, &dp)) {
        Ok(Some(_)) => {}
        Ok(None) | Err(ClusterError::Api { code: 409, .. }) => return Ok((Vec::new(), false)),
        Err(e) => return Err(e),
    }
    match probe::create(c, &api, &what, &turn(suffix)) {
        Ok(()) => {}
        // Another run took the free turn first: what is left is its to deal with.
        Err(ClusterError::Api { code: 409, .. }) => return Ok((Vec::new(), false)),
        Err(e) => return Err(e),
    }
    remove(c, ns, Instant::now() + RELEASE_WAIT)?;
    let run = held.data.and_then(|d| d.get("run").cloned());
    Ok((
        vec![format!("{ns}/{}", run.as_deref().unwrap_or(TURN))],
        true,
    ))
}

/// Takes the namespace's turn, waiting (within `deadline`) while another run holds it.
pub fn claim(
    c: &Cluster,
    ns: &str,
    suffix: &str,
    deadline: Instant,
    interrupted: &AtomicBool,
) -> Result<(), ClusterError> {
    let api: Api<ConfigMap> = Api::namespaced(c.client.clone(), ns);
    loop {
        match probe::create(c, &api, &format!("configmaps/{TURN}"), &turn(suffix)) {
            Err(ClusterError::Api { code: 409, .. })
                if Instant::now() + POLL < deadline && !interrupted.load(Ordering::SeqCst) =>
            {
                std::thread::sleep(POLL)
            }
            done => return done,
        }
    }
}

/// Deletes the run's objects, waits (until `until`) for its pods to be gone, then gives the
/// turn back. Gone already is fine.
pub fn release(c: &Cluster, ns: &str, until: Instant) -> Result<bool, ClusterError> {
    if !remove(c, ns, until)? {
        return Ok(false);
    }
    let api: Api<ConfigMap> = Api::namespaced(c.client.clone(), ns);
    let dp = DeleteParams::default();
    c.call_opt(
        "delete",
        &format!("configmaps/{TURN}"),
        api.delete(TURN, &dp),
    )?;
    Ok(true)
}

/// Deletes the objects of the run that holds the turn (this one, or the killed run whose turn
/// this one took) and its pods' events, and waits (until `until`) for its pods to be gone:
/// whether they are.
fn remove(c: &Cluster, ns: &str, until: Instant) -> Result<bool, ClusterError> {
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), ns);
    let lp = ListParams::default().labels(&format!("{OWNER_LABEL}={OWNER_VALUE}"));
    let listed = c.call("list", "pods", pods.list(&lp))?.items;
    let uids: Vec<String> = listed
        .iter()
        .filter_map(|p| p.metadata.uid.clone())
        .collect();
    for p in &listed {
        let name = p.metadata.name.clone().unwrap_or_default();
        let dp = probe::only(p.metadata.uid.as_deref());
        gone(c.call_opt("delete", &format!("pods/{name}"), pods.delete(&name, &dp)))?;
    }
    let dp = DeleteParams::default();
    let services: Api<Service> = Api::namespaced(c.client.clone(), ns);
    let what = format!("services/{}", super::dial::SERVICE_NAME);
    c.call_opt(
        "delete",
        &what,
        services.delete(super::dial::SERVICE_NAME, &dp),
    )?;
    let policies: Api<NetworkPolicy> = Api::namespaced(c.client.clone(), ns);
    let what = format!("networkpolicies/{POLICY_NAME}");
    c.call_opt("delete", &what, policies.delete(POLICY_NAME, &dp))?;
    // The pods' events go too, matched by the pods' uids (probe.rs reads them so).
    let events: Api<Event> = Api::namespaced(c.client.clone(), ns);
    let all = c.call("list", "events", events.list(&ListParams::default()))?;
    let ours = |e: &Event| {
        e.involved_object
            .uid
            .as_ref()
            .is_some_and(|u| uids.contains(u))
    };
    for e in all.items.iter().filter(|e| ours(e)) {
        let name = e.metadata.name.clone().unwrap_or_default();
        let dp = probe::only(e.metadata.uid.as_deref());
        gone(c.call_opt(
            "delete",
            &format!("events/{name}"),
            events.delete(&name, &dp),
        ))?;
    }
    // The next run makes pods of the same names: the turn is given back once they are gone.
    loop {
        if c.call("list", "pods", pods.list(&lp))?.items.is_empty() {
            return Ok(true);
        }
        if Instant::now() + POLL >= until {
            return Ok(false);
        }
        std::thread::sleep(POLL);
    }
}

/// A delete's answer: gone already (404) or no longer the object listed (409) is fine.
fn gone<T>(r: Result<T, ClusterError>) -> Result<(), ClusterError> {
    match r {
        Ok(_) | Err(ClusterError::Api { code: 409, .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The nodes, the one under test taken as usable when `--while-cordoned`: the fleet Plan's
/// job runs on it, cordoned by system-upgrade-controller for the change (its drain, then the
/// upgrade container; `pkg/upgrade/job/job.go`), and the probe pods tolerate every
/// `NoSchedule` taint, the cordon's `node.kubernetes.io/unschedulable` too.
pub fn while_cordoned(mut nodes: Vec<NodeFacts>, o: &super::options::Options) -> Vec<NodeFacts> {
    if o.while_cordoned {
        for n in nodes.iter_mut().filter(|n| n.name == o.node) {
            n.usable = true;
        }
    }
    nodes
}
