//! Install's JSON document: the plan's facts before the shared changing shape's actions.

use crate::checks::Check;
use crate::host::uplink::Choice;

/// Install's own keys of its document (`change::Changing`).
#[derive(serde::Serialize)]
pub(crate) struct Install<'a> {
    pub calico_version: Option<&'a str>,
    pub install_root: &'a str,
    pub checks: &'a [Check],
    pub blocking: &'a [&'static str],
    /// What was fetched, requested or chosen before the plan (in a dry run, what would be).
    pub prepare: &'a [String],
    pub uplink: &'a Choice,
    #[serde(flatten)]
    pub from_operator: Option<FromOperator>,
}

/// What `migrate from-operator` adds to install's document.
#[derive(serde::Serialize)]
#[cfg_attr(test, derive(Default))]
pub(crate) struct FromOperator {
    pub node: String,
    pub direction: &'static str,
    pub migrate_actions: Vec<crate::apply::Shown>,
    pub migrate_actions_after: Vec<crate::apply::Shown>,
}
