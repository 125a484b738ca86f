//! The sweep at a run's start of the namespaces killed runs left: one whose Lease ran out, or
//! with no Lease and older than `LEFTOVER_AGE`, is deleted by the uid and resourceVersion it was
//! judged by; one marked kept or with a living Lease never. A Terminating one's pods on nodes
//! not Ready are deleted at once (wedged.rs).

use super::matrix::{PlanError, RunError};
use super::objects;
use super::probe;
use super::step::POLL;
use super::wedged;
use crate::cluster::forbidden::{self, Forbidden};
use crate::cluster::{Cluster, ClusterError};
use crate::duration::{Look, Pauses, poll_quietly};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::Api;
use std::time::{Duration, Instant};

/// What the sweep did: the namespaces it removed (deleted, or, Terminating, seen gone), and
/// the Terminating ones it left, each with why.
#[derive(Debug, Default)]
pub struct Swept {
    pub removed: Vec<String>,
    pub left: Vec<String>,
}

/// Sweeps the leftovers of killed runs, judged by the API server's clock (none when it gives
/// no `Date`); a Terminating one's pods forced and its end waited for at most `wait`, every
/// call by `until`. A listing or a delete refused (403) by RBAC or an admission webhook is
/// the sweep's refusal, which says which (`refused`).
pub fn sweep(c: &Cluster, (wait, until): (Duration, Instant)) -> Result<Swept, RunError> {
    let mut swept = Swept::default();
    let found = probe::our_namespaces(c).map_err(refused)?;
    if found.is_empty() {
        return Ok(swept);
    }
    let Some(now) = probe::server_date(c, None)? else {
        return Ok(swept);
    };
    for n in &found {
        let name = n.metadata.name.clone().unwrap_or_default();
        let terminating = n.metadata.deletion_timestamp.is_some();
        if !name.starts_with(objects::NAMESPACE_PREFIX) || (objects::kept(n) && !terminating) {
            continue;
        }
        let (living, ran_out) = super::shared::judge(c, &name, now, until).map_err(refused)?;
        let old = super::lease::older(&n.metadata, now);
        if !living.is_empty() || (ran_out.is_empty() && !old && !terminating) {
            continue;
        }
        if terminating {
            match unstick(c, n, (wait, until)) {
                Ok(None) => swept.removed.push(name),
                Ok(Some(why)) => swept.left.push(format!("namespace {name} {why}")),
                Err(e) => swept.left.push(format!(
                    "namespace {name} is left Terminating: {e} ({})",
                    refused_hint(&e)
                )),
            }
            continue;
        }
        // Only the namespace as it was judged: one made again under the same name (its
        // uid), or marked kept since (its resourceVersion), is not this sweep's (409).
        let as_read = (
            n.metadata.uid.as_deref(),
            n.metadata.resource_version.as_deref(),
        );
        if probe::delete_namespace(c, &name, as_read, None).map_err(refused)? {
            swept.removed.push(name);
        }
    }
    Ok(swept)
}

/// A sweep's call refused by RBAC, an admission webhook or a ValidatingAdmissionPolicy, as the sweep's refusal with its
/// hint; any other failure as it is.
fn refused(e: ClusterError) -> RunError {
    match &e {
        ClusterError::Api {
            code: 403, message, ..
        } if forbidden::judge(message).is_some() => RunError::Plan(PlanError::SweepRefused {
            hint: refused_hint(&e),
            cause: e.to_string(),
        }),
        _ => RunError::Cluster(e),
    }
}

/// The hint of a sweep's failure: the right RBAC refused, or the admission webhook that
/// denied it (`cluster::forbidden`); any other failure keeps its own hint.
fn refused_hint(e: &ClusterError) -> String {
    let ClusterError::Api {
        code: 403, message, ..
    } = e
    else {
        return e.hint();
    };
    match forbidden::judge(message) {
        Some(Forbidden::MissingRight(right)) => format!(
            "the identity in the kubeconfig ({}) may not {}, which the sweep at a verify run's start needs: a run without --namespace lists the namespaces killed runs left (label {}={}) and the Leases in them, deletes them and the probe pods that hold them; grant it in a ClusterRole, or run verify with --namespace {}, which 'calicoctl-win fleet rbac --identity verify' makes with every right a run there needs; {}",
            right.user,
            right.text(),
            objects::OWNER_LABEL,
            objects::OWNER_VALUE,
            crate::cluster::verify_rights::NAMESPACE,
            // The command last, after `run: `, so that it is copied whole with its own quotes.
            right.can_i().map_or_else(
                || "check it with 'kubectl auth can-i' as that identity: its name holds a quote or control character that no one quoting serves in both PowerShell and sh".to_owned(),
                |cmd| format!("to check the right, run: {cmd}")
            ),
        ),
        Some(Forbidden::Webhook { name, said }) => admission(forbidden::webhook_hint(&name), &said),
        Some(Forbidden::Policy { name, said }) => admission(forbidden::policy_hint(&name), &said),
        None => e.hint(),
    }
}

/// An admission webhook's or policy's denial of the sweep, with what it said.
fn admission(hint: String, said: &str) -> String {
    format!(
        "{hint} (it said: {said}); the namespaces killed runs left stay until it admits their delete or an administrator deletes them"
    )
}

/// A Terminating leftover: its probe pods Terminating on a node not Ready or gone deleted at
/// once, then, if any was, its end waited for (at most `wait`): `None` once it is gone, else
/// why it is left.
fn unstick(
    c: &Cluster,
    n: &Namespace,
    (wait, until): (Duration, Instant),
) -> Result<Option<String>, ClusterError> {
    let name = n.metadata.name.as_deref().unwrap_or_default();
    let pods = wedged::ours_in(c, name, until)?;
    let forced = wedged::force_dead(c, name, &pods, until)?;
    let by = match forced.is_empty() {
        true => Instant::now(),
        false => (Instant::now() + wait).min(until),
    };
    if gone(c, (name, n.metadata.uid.as_deref()), (by, until))? {
        return Ok(None);
    }
    let holding: Vec<&Pod> = pods
        .iter()
        .filter(|p| !forced.iter().any(|f| p.metadata.name.as_ref() == Some(f)))
        .collect();
    Ok(Some(why_left(n, &holding, &forced)))
}

/// Whether the namespace of that uid is gone (or made again), looked at until `by`, each
/// look by `until`.
fn gone(
    c: &Cluster,
    (name, uid): (&str, Option<&str>),
    (by, until): (Instant, Instant),
) -> Result<bool, ClusterError> {
    let api: Api<Namespace> = Api::all(c.client.clone());
    let what = format!("namespaces/{name}");
    poll_quietly(
        by,
        Pauses::every(POLL),
        || {
            let now = c.call_opt_by(until, ("get", &what), api.get(name))?;
            Ok(match now {
                Some(n) if n.metadata.uid.as_deref() == uid => Look::Pending(()),
                _ => Look::Done(true),
            })
        },
        |()| Ok(false),
    )
}

/// Why a Terminating leftover is left: the pods forced, each pod of ours still there, or,
/// holding none, what the namespace controller says of it.
fn why_left(n: &Namespace, holding: &[&Pod], forced: &[String]) -> String {
    let mut why = Vec::new();
    if !forced.is_empty() {
        why.push(format!(
            "its pods {} Terminating on a node not Ready or gone were deleted at once (grace 0); the namespace controller removes it at its next pass",
            forced.join(", ")
        ));
    }
    for p in holding {
        let pod = p.metadata.name.as_deref().unwrap_or_default();
        let node = p.spec.as_ref().and_then(|s| s.node_name.as_deref());
        why.push(match (p.metadata.deletion_timestamp.is_some(), node) {
            (true, Some(node)) => format!(
                "pod {pod} is stopping on node {node}, which is Ready: its kubelet confirms it"
            ),
            (true, None) => format!("pod {pod}, bound to no node, is left to pod GC"),
            (false, _) => {
                format!("pod {pod} is not deleted yet: the namespace controller deletes it")
            }
        });
    }
    if why.is_empty() {
        let said = controller_says(n);
        why.push(match said {
            Some(s) => format!("no pod of ours holds it; the namespace controller says: {s}"),
            None => "no pod of ours holds it: the namespace controller finishes it".to_owned(),
        });
    }
    format!("is left Terminating: {}", why.join("; "))
}

/// The namespace controller's conditions that are True (content remaining, finalizers not
/// done, a deletion that failed: `status_condition_utils.go`), their messages.
fn controller_says(n: &Namespace) -> Option<String> {
    let said: Vec<String> = n
        .status
        .as_ref()?
        .conditions
        .iter()
        .flatten()
        .filter(|c| c.status == "True")
        .map(|c| c.message.clone().unwrap_or_else(|| c.type_.clone()))
        .collect();
    (!said.is_empty()).then(|| said.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(code: u16, message: &str) -> ClusterError {
        ClusterError::Api {
            server: "https://127.0.0.1:6443".into(),
            verb: "delete".into(),
            resource: "pods".into(),
            code,
            message: message.into(),
        }
    }

    /// A 403 that is no refusal of RBAC or admission (a quota) keeps its own hint and is no
    /// sweep refusal, as any other failure; the right RBAC refused and the webhook that denied
    /// are tests/cluster/verify_sweep.rs's.
    #[test]
    fn a_failure_that_is_no_refusal_keeps_its_own_hint() {
        let quota = api(403, "pods \"p\" is forbidden: exceeded quota: q");
        assert_eq!(refused_hint(&quota), quota.hint());
        assert!(matches!(refused(quota), RunError::Cluster(_)));
        assert_eq!(refused_hint(&api(500, "x")), api(500, "x").hint());
    }
}
