//! The cluster side of a plan, as the plan executor (`apply`) sees it.

use super::drain::{
    DrainError, DrainOptions, PodRef, Watch, is_cordoned, networked_daemons, not_ready, pod_ref,
    pods_on, select,
};
use super::eviction::evict_and_wait;
use super::{Cluster, node, operator};
use crate::duration::{Look, Pauses, Wait, poll_until};
use crate::k8s_name::NodeName;
use std::time::Duration;

impl Cluster {
    pub fn is_cordoned(&self, node: &NodeName) -> anyhow::Result<bool> {
        Ok(is_cordoned(self, node)?)
    }

    /// Marks the node unschedulable (`on`) or schedulable again.
    pub fn set_cordoned(&self, node: &NodeName, on: bool) -> anyhow::Result<()> {
        let patch = serde_json::json!({ "spec": { "unschedulable": on.then_some(true) } });
        Ok(node::patch(self, node, &patch)?)
    }

    /// Evicts the node's pods and waits until they are gone (or `watch`'s stop).
    pub fn drain(
        &self,
        node: &NodeName,
        opts: &DrainOptions,
        watch: &mut Watch<'_>,
    ) -> anyhow::Result<()> {
        let s = select(&pods_on(self, node)?);
        if let Some(refused) = s.refusal(node, opts) {
            return Err(refused.into());
        }
        evict_and_wait(self, node, s.to_evict(), opts, watch)?;
        Ok(())
    }

    /// Evicts these pods of the node (`namespace/name`; those gone are skipped) and waits until
    /// they are gone.
    pub fn evict(
        &self,
        node: &NodeName,
        pods: &[String],
        opts: &DrainOptions,
        watch: &mut Watch<'_>,
    ) -> anyhow::Result<()> {
        let there: Vec<PodRef> = pods_on(self, node)?
            .iter()
            .map(pod_ref)
            .filter(|p| pods.contains(&p.to_string()))
            .collect();
        if !there.is_empty() {
            evict_and_wait(self, node, there, opts, watch)?;
        }
        Ok(())
    }

    /// Waits until the node reports Ready; a stop ends the wait at once.
    pub fn wait_ready(
        &self,
        node: &NodeName,
        timeout: Duration,
        watch: &mut Watch<'_>,
    ) -> anyhow::Result<()> {
        let what = format!("node {node} to be Ready");
        let wait = Wait {
            what: &what,
            timeout,
            pauses: Pauses {
                first: Duration::from_millis(100),
                most: Duration::from_secs(2),
            },
            stop: watch.stop,
            say: &mut *watch.say,
        };
        let look = || {
            Ok(match not_ready(&node::read(self, node)?) {
                None => Look::Done(()),
                Some(why) => Look::Pending(why),
            })
        };
        let not_ready = |reason| {
            Err(DrainError::NotReady {
                node: node.to_string(),
                after: timeout,
                reason,
            })
        };
        Ok(poll_until(wait, look, not_ready).map_err(|e| e.stopped_at(node, &[]))?)
    }

    /// Evicts the node's `networked_daemons` and waits until they are gone; their names.
    pub fn recreate_daemonset_pods(
        &self,
        node: &NodeName,
        opts: &DrainOptions,
        watch: &mut Watch<'_>,
    ) -> anyhow::Result<Vec<String>> {
        let pods = networked_daemons(&pods_on(self, node)?);
        let names = pods.iter().map(ToString::to_string).collect();
        if !pods.is_empty() {
            evict_and_wait(self, node, pods, opts, watch)?;
        }
        Ok(names)
    }

    pub fn patch_installation(&self, name: &str, patch: &serde_json::Value) -> anyhow::Result<()> {
        Ok(operator::patch_installation(self, name, patch)?)
    }

    /// `making::remove_made`.
    pub fn remove_made_grant(&self, made: &super::making::Making) -> anyhow::Result<Vec<String>> {
        Ok(super::making::remove_made(self, made)?)
    }
}
