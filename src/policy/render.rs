//! Each Windows endpoint's whole ACL list, as Felix's endpoint manager assembles it
//! (felix/dataplane/windows/endpoint_mgr.go at v3.31.7): the endpoint's tiers in order, each
//! with its policies in order and its end-of-tier ACL (:372-395), the profiles when no
//! default-tier policy applies in a direction (:397-406), flattened (:409-410), the host ACL
//! per direction (:430-431) and the node-to-endpoint allow (:511-520, 548-563). And what
//! Felix's own Windows code gets wrong on the way, as findings.

use std::collections::BTreeMap;

use foldhash::{HashMap, HashMapExt};

use super::endpoints::Endpoints;
use super::felix::{Group, Release, Renderer, count, flatten};
use super::model::{Action, Direction, Policy};
use crate::selector::Node;

/// The default tier's name and order (api/pkg/apis/projectcalico/v3/tier.go:41 at v3.31.7).
pub const DEFAULT_TIER: &str = "default";
pub const DEFAULT_TIER_ORDER: f64 = 1_000_000.0;

/// A tier as read (`Tier` objects): its order (`None` sorts last) and whether its default
/// action is Pass (its end-of-tier ACL passes instead of blocking: endpoint_mgr.go:373).
#[derive(Clone, Debug, PartialEq)]
pub struct TierSpec {
    pub order: Option<f64>,
    pub pass_at_end: bool,
}

/// What one policy renders into on each endpoint it applies to, per direction.
#[derive(Clone, Debug, Default)]
pub struct Rendered {
    pub ingress: Vec<Group>,
    pub egress: Vec<Group>,
    /// Its rules' ACLs and address pairs on one endpoint.
    pub acls: u64,
    pub pairs: u64,
}

impl Rendered {
    fn of(&self, d: Direction) -> &[Group] {
        match d {
            Direction::Ingress => &self.ingress,
            Direction::Egress => &self.egress,
        }
    }
}

/// Renders a policy's rules for the directions of its types.
pub fn policy(r: &mut Renderer, p: &Policy) -> Rendered {
    let mut out = Rendered::default();
    for rule in p.rules.iter().filter(|r| p.types.contains(&r.direction)) {
        let (outcome, group) = r.rule(rule);
        out.acls = out.acls.saturating_add(outcome.acls());
        out.pairs = out.pairs.saturating_add(outcome.pairs());
        if let Some(g) = group {
            match rule.direction {
                Direction::Ingress => out.ingress.push(g),
                Direction::Egress => out.egress.push(g),
            }
        }
    }
    out
}

/// What Felix on Windows gets wrong for some endpoints: the code, the tier or policy it is
/// about, the endpoints it hits (counted, and a few named) and what is lost.
#[derive(Clone, Debug, Default)]
pub struct Lost {
    pub code: &'static str,
    /// The policy (index) or, for a tier finding, none.
    pub policy: Option<usize>,
    pub tier: String,
    pub endpoints: u64,
    pub examples: Vec<String>,
    /// The policies (indices) or tiers never rendered.
    pub policies_lost: Vec<usize>,
    pub tiers_lost: Vec<String>,
}

/// One Windows endpoint's ACL list (for a class of endpoints with the same labels).
#[derive(Clone, Debug, serde::Serialize)]
pub struct EndpointAcls {
    pub endpoint: String,
    /// Windows endpoints with the same labels, and so the same list.
    pub like_it: u64,
    pub hns_acls: u64,
    /// The ACLs of each direction's tiers (end-of-tier ACLs included) or profiles.
    pub ingress: u64,
    pub egress: u64,
    /// The node-to-endpoint allow and the host ACL of each direction.
    pub fixed: u64,
    pub tiers: Vec<String>,
}

/// The inputs every endpoint is assembled from.
pub struct Cluster<'a> {
    pub policies: &'a [Policy],
    pub rendered: &'a [Rendered],
    pub tiers: &'a HashMap<String, TierSpec>,
    pub release: Release,
}

impl Cluster<'_> {
    fn tier(&self, name: &str) -> TierSpec {
        self.tiers.get(name).cloned().unwrap_or(TierSpec {
            order: (name == DEFAULT_TIER).then_some(DEFAULT_TIER_ORDER),
            pass_at_end: false,
        })
    }

    /// Whether Felix renders the policy for workloads at all.
    pub fn reaches_workloads(&self, p: &Policy) -> bool {
        !p.host_only && (!p.staged || super::felix::staged_policies(&self.release))
    }

    /// The policies in Felix's order: tiers by order (`None` last) then name
    /// (felix/calc/policy_sorter.go `TierLess`), policies by order (`None` last) then name
    /// (`PolKVLess`).
    fn sorted(&self) -> Vec<usize> {
        let mut keyed: Vec<(f64, &str, f64, &str, &str, usize)> = (0..self.policies.len())
            .filter(|i| self.reaches_workloads(&self.policies[*i]))
            .map(|i| {
                let p = &self.policies[i];
                (
                    self.tier(&p.tier).order.unwrap_or(f64::INFINITY),
                    p.tier.as_str(),
                    p.order.unwrap_or(f64::INFINITY),
                    p.namespace.as_deref().unwrap_or_default(),
                    p.name.as_str(),
                    i,
                )
            })
            .collect();
        keyed.sort_by(|x, y| {
            x.0.total_cmp(&y.0)
                .then_with(|| x.1.cmp(y.1))
                .then_with(|| x.2.total_cmp(&y.2))
                .then_with(|| (x.3, x.4).cmp(&(y.3, y.4)))
        });
        keyed.into_iter().map(|k| k.5).collect()
    }
}

/// The Windows endpoint classes each policy's selector matches (one evaluation per distinct
/// selector).
pub fn applies(eps: &Endpoints, policies: &[Policy]) -> Vec<std::sync::Arc<Vec<usize>>> {
    let mut seen: HashMap<&Node, std::sync::Arc<Vec<usize>>> = HashMap::new();
    policies
        .iter()
        .map(|p| {
            seen.entry(&p.applies)
                .or_insert_with(|| std::sync::Arc::new(eps.windows_classes_matching(&p.applies)))
                .clone()
        })
        .collect()
}

/// What `endpoints` finds: each Windows endpoint class's ACL list, what Felix loses on the
/// way, and for each policy the Windows endpoints Felix programs it on (fewer than it applies
/// to where it is lost: after a staged policy in its tier, in a tier never reached, in a tier
/// a release renders no policy of).
pub struct Assembled {
    pub endpoints: Vec<EndpointAcls>,
    pub lost: Vec<Lost>,
    pub programmed: Vec<u64>,
}

/// Every Windows endpoint class's ACL list and what Felix loses on the way; `applies` holds
/// each policy's classes.
pub fn endpoints(
    eps: &Endpoints,
    c: &Cluster,
    applies: &[std::sync::Arc<Vec<usize>>],
) -> Assembled {
    let mut per_class: Vec<Vec<usize>> = vec![Vec::new(); eps.classes.len()];
    for i in c.sorted() {
        for &k in applies[i].iter() {
            per_class[k].push(i);
        }
    }
    let classes: Vec<usize> = (0..eps.classes.len())
        .filter(|&k| eps.classes[k].windows > 0)
        .collect();
    let (assembled, programmed) = assemble_each(eps, c, &per_class, &classes);
    let mut lost: BTreeMap<(&'static str, Option<usize>, String), Lost> = BTreeMap::new();
    let mut out = Vec::new();
    for (k, (one, found)) in classes.into_iter().zip(assembled) {
        let class = &eps.classes[k];
        let name = class.example.clone().unwrap_or_default();
        for mut f in found {
            let entry = lost
                .entry((f.code, f.policy, f.tier.clone()))
                .or_insert_with(|| Lost {
                    code: f.code,
                    policy: f.policy,
                    tier: f.tier.clone(),
                    ..Lost::default()
                });
            entry.endpoints += class.windows;
            if entry.examples.len() < 3 {
                entry.examples.push(name.clone());
            }
            for p in f.policies_lost.drain(..) {
                if !entry.policies_lost.contains(&p) {
                    entry.policies_lost.push(p);
                }
            }
            for t in f.tiers_lost.drain(..) {
                if !entry.tiers_lost.contains(&t) {
                    entry.tiers_lost.push(t);
                }
            }
        }
        out.push(EndpointAcls {
            endpoint: name,
            like_it: class.windows,
            ..one
        });
    }
    out.sort_by(|a, b| {
        b.hns_acls
            .cmp(&a.hns_acls)
            .then(a.endpoint.cmp(&b.endpoint))
    });
    Assembled {
        endpoints: out,
        lost: lost.into_values().collect(),
        programmed,
    }
}

/// Each class's list and what it loses, in the order of `classes`, and for each policy the
/// Windows endpoints Felix programs it on. The classes are assembled on two cores (each alone:
/// what one reads, no other writes), every other one on the second, and put back in order, as
/// one core would give them; each core counts its own classes' programmed policies.
fn assemble_each(
    eps: &Endpoints,
    c: &Cluster,
    per_class: &[Vec<usize>],
    classes: &[usize],
) -> (Vec<(EndpointAcls, Vec<Lost>)>, Vec<u64>) {
    let half = |skip: usize| {
        let mut programmed = vec![0_u64; c.policies.len()];
        let mut lists = Vec::new();
        for &k in classes.iter().skip(skip).step_by(2) {
            let mut found = Vec::new();
            let mut on_it = std::collections::BTreeSet::new();
            lists.push((assemble(c, &per_class[k], &mut found, &mut on_it), found));
            for i in on_it {
                programmed[i] = programmed[i].saturating_add(eps.classes[k].windows);
            }
        }
        (lists, programmed)
    };
    let mut odd = (Vec::new(), Vec::new());
    let (even, programmed) = std::thread::scope(|s| {
        s.spawn(|| odd = half(1));
        half(0)
    });
    let programmed = programmed
        .iter()
        .zip(&odd.1)
        .map(|(a, b)| a.saturating_add(*b))
        .collect();
    let mut all = Vec::with_capacity(classes.len());
    let mut later = odd.0.into_iter();
    for e in even {
        all.push(e);
        all.extend(later.next());
    }
    (all, programmed)
}

/// One endpoint's list from the policies that apply to it (in Felix's order); the policies
/// Felix programs on it go into `programmed`.
fn assemble(
    c: &Cluster,
    applying: &[usize],
    found: &mut Vec<Lost>,
    programmed: &mut std::collections::BTreeSet<usize>,
) -> EndpointAcls {
    // workload.Tiers: the tiers with a policy for the endpoint, in order; `applying` is in
    // Felix's order, so each tier's policies are one run of it.
    let mut runs: Vec<(&str, &[usize])> = Vec::new();
    let mut start = 0;
    for (n, &i) in applying.iter().enumerate() {
        let t = c.policies[i].tier.as_str();
        let next = applying.get(n + 1).map(|&j| c.policies[j].tier.as_str());
        if next != Some(t) {
            runs.push((t, &applying[start..=n]));
            start = n + 1;
        }
    }
    let tiers: Vec<&str> = runs.iter().map(|r| r.0).collect();
    // refreshPendingWlEpUpdates (endpoint_mgr.go:259-273) looks only at the first tier when
    // a policy or IP set changes.
    if tiers.len() > 1 && tiers[0] != DEFAULT_TIER && tiers.contains(&DEFAULT_TIER) {
        found.push(Lost {
            code: "change-not-reprogrammed",
            tier: DEFAULT_TIER.into(),
            ..Lost::default()
        });
    }
    let rendered = if super::felix::all_tiers(&c.release) {
        &runs[..]
    } else {
        &runs[..runs.len().min(1)]
    };
    let ingress = direction(c, rendered, Direction::Ingress, found, programmed);
    let egress = direction(c, rendered, Direction::Egress, found, programmed);
    // The node-to-endpoint allow and one host ACL per direction.
    let fixed = 3;
    EndpointAcls {
        endpoint: String::new(),
        like_it: 0,
        hns_acls: ingress.saturating_add(egress).saturating_add(fixed),
        ingress,
        egress,
        fixed,
        tiers: rendered.iter().map(|r| r.0.to_owned()).collect(),
    }
}

/// One tier of one direction on an endpoint: the policies rendered (those before a staged
/// one) and the end-of-tier action.
struct Part<'p> {
    name: &'p str,
    policies: Vec<usize>,
    end: Action,
    /// The profiles' part (`kns.<namespace>`'s allow before the end-of-tier block), not a tier.
    profiles: bool,
}

/// One direction's ACLs from policies and profiles (the host ACL is one of the fixed ones).
fn direction(
    c: &Cluster,
    runs: &[(&str, &[usize])],
    d: Direction,
    found: &mut Vec<Lost>,
    programmed: &mut std::collections::BTreeSet<usize>,
) -> u64 {
    let mut parts: Vec<Part> = Vec::new();
    let mut default_applies = false;
    for &(tier, run) in runs {
        let mut pols = run
            .iter()
            .copied()
            .filter(|&i| c.policies[i].types.contains(&d));
        let Some(first) = pols.next() else {
            continue;
        };
        default_applies |= tier == DEFAULT_TIER;
        let rendered = up_to_staged(c, tier, std::iter::once(first).chain(pols), found);
        let end = if c.tier(tier).pass_at_end {
            Action::Pass
        } else {
            Action::Deny
        };
        parts.push(Part {
            name: tier,
            policies: rendered,
            end,
            profiles: false,
        });
    }
    if parts.is_empty() || !default_applies {
        // The profiles: kns.<namespace> allows all (conversion.go `NamespaceToProfile`),
        // ksa.<namespace>.<account> has no rules, then the end-of-tier block.
        parts.push(Part {
            name: "profiles",
            policies: Vec::new(),
            end: Action::Deny,
            profiles: true,
        });
    }
    let (acls, unreachable) = flattened(c, &parts, d);
    let reached = unreachable.unwrap_or(parts.len());
    programmed.extend(
        parts[..reached]
            .iter()
            .flat_map(|p| p.policies.iter().copied()),
    );
    // A tier without a pass rule ends every packet: the profiles after it are what policies
    // are for, but a real tier after it is dead for this endpoint.
    let lost: Vec<String> = unreachable
        .map(|k| &parts[k..])
        .unwrap_or_default()
        .iter()
        .filter(|p| !p.profiles)
        .map(|p| p.name.to_owned())
        .collect();
    if let (Some(k), false) = (unreachable, lost.is_empty()) {
        found.push(Lost {
            code: "unreachable-tier",
            tier: parts[k - 1].name.to_owned(),
            tiers_lost: lost,
            ..Lost::default()
        });
    }
    acls
}

/// A tier's policies of one direction as Felix renders them: up to the first staged one. No
/// policy set exists for a staged policy (policy_mgr.go:42-45) and GetPolicySetRules stops at
/// a missing set (policysets.go:142-146), so the enforced ones after it are lost (a finding).
fn up_to_staged(
    c: &Cluster,
    tier: &str,
    mut pols: impl Iterator<Item = usize>,
    found: &mut Vec<Lost>,
) -> Vec<usize> {
    let mut rendered = Vec::new();
    while let Some(i) = pols.next() {
        if c.policies[i].staged {
            let rest: Vec<usize> = pols.filter(|&j| !c.policies[j].staged).collect();
            if !rest.is_empty() {
                found.push(Lost {
                    code: "staged-policy-hides-later-policies",
                    policy: Some(i),
                    tier: tier.to_owned(),
                    policies_lost: rest,
                    ..Lost::default()
                });
            }
            break;
        }
        rendered.push(i);
    }
    rendered
}

/// The ACLs of the parts once flattened, and the first part never reached. Counted without
/// building the list when the first part passes nothing (the usual case); built and flattened
/// as `flattenTiers` does otherwise.
fn flattened(c: &Cluster, parts: &[Part], d: Direction) -> (u64, Option<usize>) {
    let passes = |p: &Part| {
        p.end == Action::Pass
            || p.policies
                .iter()
                .any(|&i| c.rendered[i].of(d).iter().any(|g| g.action == Action::Pass))
    };
    let size = |p: &Part| {
        let profile = u64::from(p.profiles);
        p.policies.iter().fold(1 + profile, |n, &i| {
            n.saturating_add(count(c.rendered[i].of(d)))
        })
    };
    if let Some(first) = parts.first().filter(|p| !passes(p)) {
        return (size(first), (parts.len() > 1).then_some(1));
    }
    let lists: Vec<Vec<Group>> = parts
        .iter()
        .map(|p| {
            let mut groups: Vec<Group> = p
                .policies
                .iter()
                .flat_map(|&i| c.rendered[i].of(d).iter().cloned())
                .collect();
            if p.profiles {
                groups.push(Group::any(Action::Allow));
            }
            groups.push(Group::any(p.end));
            groups
        })
        .collect();
    let (flat, unreachable) = flatten(lists);
    (count(&flat), unreachable)
}

#[cfg(test)]
mod tests;
