//! The cluster side of a plan, as the plan executor sees it (`apply`): the node object, the
//! pods on it, the operator's Installation; `Cluster` does each through drain.rs, operator.rs,
//! renewal.rs and node.rs. Passed in from the top, so that `apply` needs no client.

use super::drain::{
    DrainOptions, PodRef, Watch, is_cordoned, networked_daemons, pod_ref, pods_on, select,
    set_cordoned, wait_ready,
};
use super::eviction::evict_and_wait;
use super::token::renewal;
use super::{Cluster, node, operator};
use crate::k8s_name::NodeName;
use std::time::Duration;

/// The cluster side of a plan: the node object and the pods on it.
pub trait NodeControl {
    fn is_cordoned(&self, node: &NodeName) -> anyhow::Result<bool>;
    fn set_cordoned(&self, node: &NodeName, on: bool) -> anyhow::Result<()>;
    /// Evicts the node's pods and waits until they are gone (or `watch`'s stop).
    fn drain(
        &self,
        node: &NodeName,
        opts: &DrainOptions,
        watch: &mut Watch<'_>,
    ) -> anyhow::Result<()>;
    /// Evicts these pods of the node (`namespace/name`; those gone already are skipped) and
    /// waits until they are gone (or `watch`'s stop).
    fn evict(
        &self,
        node: &NodeName,
        pods: &[String],
        opts: &DrainOptions,
        watch: &mut Watch<'_>,
    ) -> anyhow::Result<()>;
    fn wait_ready(
        &self,
        node: &NodeName,
        timeout: Duration,
        watch: &mut Watch<'_>,
    ) -> anyhow::Result<()>;
    /// Evicts the node's DaemonSet pods that have a network of their own (`networked_daemons`)
    /// and waits until they are gone (or `watch`'s stop); their names.
    fn recreate_daemonset_pods(
        &self,
        node: &NodeName,
        opts: &DrainOptions,
        watch: &mut Watch<'_>,
    ) -> anyhow::Result<Vec<String>>;
    /// A JSON merge patch of the operator's Installation `name`.
    fn patch_installation(&self, name: &str, patch: &serde_json::Value) -> anyhow::Result<()>;
    /// Puts back what the patch `applied` changed (`restore`) while every field it set still
    /// holds what it set; else the field that changed since, and nothing written.
    fn restore_installation(
        &self,
        name: &str,
        applied: &serde_json::Value,
        restore: &serde_json::Value,
    ) -> anyhow::Result<Option<String>>;
    /// calicoctl-win's node label set, or removed (`None`).
    fn set_label(&self, node: &NodeName, value: Option<&str>) -> anyhow::Result<()>;
    fn wait_operator_pod(
        &self,
        node: &NodeName,
        want: operator::Want,
        timeout: Duration,
    ) -> anyhow::Result<()>;
    fn clear_network_unavailable(&self, node: &NodeName) -> anyhow::Result<()>;
    /// Sets or removes `migrate`'s cordon annotation.
    fn mark_cordoned(&self, node: &NodeName, on: bool) -> anyhow::Result<()>;
    /// Waits until the operator rendered its Windows DaemonSet for the node
    /// (`operator::wait_daemonset`).
    fn wait_operator_daemonset(&self, node: &NodeName, timeout: Duration) -> anyhow::Result<()>;
    /// Deletes the node's token-renewal Role and RoleBinding when they are ours (the ones
    /// `uids` names; when it names none of one, by its label only when the uids were not
    /// kept: `renewal::Grant::uids_kept`); what stays.
    fn remove_grant(
        &self,
        namespace: &str,
        name: &str,
        uids: (&renewal::GrantUids, bool),
    ) -> anyhow::Result<Vec<String>>;
    /// Deletes what an install made of the node's grant (`making::remove_made`); what stays.
    fn remove_made_grant(&self, made: &super::making::Making) -> anyhow::Result<Vec<String>>;
    /// Removes calicoctl-win's annotations and says why it left the node (`left`).
    fn forget_node(&self, node: &NodeName, left: node::Left) -> anyhow::Result<()>;
}

impl NodeControl for Cluster {
    fn is_cordoned(&self, node: &NodeName) -> anyhow::Result<bool> {
        Ok(is_cordoned(self, node)?)
    }

    fn set_cordoned(&self, node: &NodeName, on: bool) -> anyhow::Result<()> {
        Ok(set_cordoned(self, node, on)?)
    }

    fn drain(
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

    fn evict(
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

    fn wait_ready(
        &self,
        node: &NodeName,
        timeout: Duration,
        watch: &mut Watch<'_>,
    ) -> anyhow::Result<()> {
        Ok(wait_ready(self, node, timeout, watch)?)
    }

    fn recreate_daemonset_pods(
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

    fn patch_installation(&self, name: &str, patch: &serde_json::Value) -> anyhow::Result<()> {
        Ok(operator::patch_installation(self, name, patch)?)
    }

    fn restore_installation(
        &self,
        name: &str,
        applied: &serde_json::Value,
        restore: &serde_json::Value,
    ) -> anyhow::Result<Option<String>> {
        Ok(operator::restore_installation(
            self, name, applied, restore,
        )?)
    }

    fn set_label(&self, node: &NodeName, value: Option<&str>) -> anyhow::Result<()> {
        Ok(operator::set_label(self, node, value)?)
    }

    fn wait_operator_pod(
        &self,
        node: &NodeName,
        want: operator::Want,
        timeout: Duration,
    ) -> anyhow::Result<()> {
        Ok(operator::wait_pod(self, node, want, timeout)?)
    }

    fn clear_network_unavailable(&self, node: &NodeName) -> anyhow::Result<()> {
        Ok(operator::clear_network_unavailable(self, node)?)
    }

    fn mark_cordoned(&self, node: &NodeName, on: bool) -> anyhow::Result<()> {
        Ok(operator::mark_cordoned(self, node, on)?)
    }

    fn wait_operator_daemonset(&self, node: &NodeName, timeout: Duration) -> anyhow::Result<()> {
        Ok(operator::wait_daemonset(self, node, timeout)?)
    }

    fn remove_grant(
        &self,
        namespace: &str,
        name: &str,
        (uids, uids_kept): (&renewal::GrantUids, bool),
    ) -> anyhow::Result<Vec<String>> {
        let g = renewal::Grant {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            service_account: String::new(),
            uids: uids.clone(),
            uids_kept,
        };
        Ok(renewal::remove(self, &g)?)
    }

    fn remove_made_grant(&self, made: &super::making::Making) -> anyhow::Result<Vec<String>> {
        Ok(super::making::remove_made(self, made)?)
    }

    fn forget_node(&self, node: &NodeName, left: node::Left) -> anyhow::Result<()> {
        Ok(node::forget(self, node, left)?)
    }
}
