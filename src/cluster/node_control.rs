//! The cluster side of a plan, as the plan executor (`apply`) sees it.

use super::drain::{
    DrainOptions, PodRef, Watch, is_cordoned, networked_daemons, pod_ref, pods_on, select,
    set_cordoned, wait_ready,
};
use super::eviction::evict_and_wait;
use super::token::renewal;
use super::{Cluster, node, operator};
use crate::k8s_name::NodeName;
use std::time::Duration;

impl Cluster {
    pub fn is_cordoned(&self, node: &NodeName) -> anyhow::Result<bool> {
        Ok(is_cordoned(self, node)?)
    }

    pub fn set_cordoned(&self, node: &NodeName, on: bool) -> anyhow::Result<()> {
        Ok(set_cordoned(self, node, on)?)
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

    pub fn wait_ready(
        &self,
        node: &NodeName,
        timeout: Duration,
        watch: &mut Watch<'_>,
    ) -> anyhow::Result<()> {
        Ok(wait_ready(self, node, timeout, watch)?)
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

    /// `operator::restore_installation`.
    pub fn restore_installation(
        &self,
        name: &str,
        applied: &serde_json::Value,
        restore: &serde_json::Value,
    ) -> anyhow::Result<Option<String>> {
        Ok(operator::restore_installation(
            self, name, applied, restore,
        )?)
    }

    pub fn set_label(&self, node: &NodeName, value: Option<&str>) -> anyhow::Result<()> {
        Ok(operator::set_label(self, node, value)?)
    }

    pub fn wait_operator_pod(
        &self,
        node: &NodeName,
        want: operator::Want,
        timeout: Duration,
    ) -> anyhow::Result<()> {
        Ok(operator::wait_pod(self, node, want, timeout)?)
    }

    pub fn clear_network_unavailable(&self, node: &NodeName) -> anyhow::Result<()> {
        Ok(operator::clear_network_unavailable(self, node)?)
    }

    pub fn mark_cordoned(&self, node: &NodeName, on: bool) -> anyhow::Result<()> {
        Ok(operator::mark_cordoned(self, node, on)?)
    }

    pub fn wait_operator_daemonset(
        &self,
        node: &NodeName,
        timeout: Duration,
    ) -> anyhow::Result<()> {
        Ok(operator::wait_daemonset(self, node, timeout)?)
    }

    /// Deletes the node's token-renewal Role and RoleBinding when ours (`renewal::remove`);
    /// what stays.
    pub fn remove_grant(
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

    /// `making::remove_made`.
    pub fn remove_made_grant(&self, made: &super::making::Making) -> anyhow::Result<Vec<String>> {
        Ok(super::making::remove_made(self, made)?)
    }

    /// `node::forget`.
    pub fn forget_node(&self, node: &NodeName, left: node::Left) -> anyhow::Result<()> {
        Ok(node::forget(self, node, left)?)
    }
}
