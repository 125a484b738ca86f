//! `fleet status`'s judge of a node's row (`fleet::view::row_troubles`): each trouble
//! a finding of the one catalogue, about the node, with its remedy.

use super::finding::{Code, Finding};
use crate::fleet::view::Trouble;

/// A node's trouble as `fleet status` says it, with its code and its fix.
pub fn fleet_row(node: &str, (trouble, sentence): &(Trouble, String)) -> Finding {
    let code = match trouble {
        Trouble::Malformed => Code::NodeValueMalformed,
        Trouble::NotReady => Code::NodeNotReady,
        Trouble::Degraded => Code::CalicoDegraded,
        Trouble::Unknown => Code::ConditionUnknown,
        Trouble::NoCondition => Code::ConditionMissing,
        Trouble::CodesUnknown => Code::CodesUnknown,
        Trouble::OtherConfig => Code::ConfigNotFleets,
    };
    Finding::fixed(code, node, sentence.clone())
}
