//! The grants earlier installs of the node made under another namespace or name than the one
//! this install makes (a config changed since): the plan removes what of them is still ours,
//! as its last steps, and the record names them until nothing of them is left.

use crate::cluster::earlier;
use crate::cluster::renewal::Grant;
use crate::commands::common::ClusterRead;
use crate::context::Context;

/// The grants earlier installs made under another namespace or name than `g` (the previous
/// record's grant, and those it still names to remove: `InstallRecord::renewal_earlier`), as
/// far as they are still ours (`earlier::still_ours`), for the plan to remove and record;
/// what stays of them, said. `None` (the record's kept as they are) without a grant made now.
pub(super) fn earlier_grants(
    ctx: &mut Context,
    cluster: &ClusterRead,
    g: Option<&Grant>,
    previous: Option<&crate::installed::record::InstallRecord>,
) -> anyhow::Result<Option<Vec<Grant>>> {
    let (Some(g), ClusterRead::Read(c, _)) = (g, cluster) else {
        return Ok(None);
    };
    let mut earlier: Vec<&Grant> = Vec::new();
    let recorded = previous
        .into_iter()
        .flat_map(|p| p.renewal.iter().chain(&p.renewal_earlier));
    for e in recorded {
        let at = |x: &Grant| (x.namespace.clone(), x.name.clone());
        if at(e) != at(g) && !earlier.iter().any(|x| at(x) == at(e)) {
            earlier.push(e);
        }
    }
    let (ours, said) = earlier::still_ours(c, earlier).map_err(|e| {
        anyhow::Error::new(e).context(
            "cannot read the Role and RoleBinding an earlier install made to renew calico-node's token under another namespace or name",
        )
    })?;
    said.iter().for_each(|w| ctx.printer.warn(w));
    Ok(Some(ours))
}
