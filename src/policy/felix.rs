//! What Felix's Windows dataplane programs, counted as it makes it (projectcalico/calico at
//! v3.31.7; v3.32.1 differs only cosmetically in these files):
//!
//! - one HNS ACL per Calico rule, each side's addresses and ports packed into comma-joined
//!   lists, split only above 4,000 entries a list (`protoRuleToHnsRules`,
//!   felix/dataplane/windows/policysets/policysets.go:517-570, `ipPortsPerRule` :261,
//!   `SplitIPList`/`SplitPortList` :596-630): ⌈L/4000⌉·⌈Lp/4000⌉·⌈R/4000⌉·⌈Rp/4000⌉ ACLs, at
//!   least one each;
//! - per endpoint and direction, each tier's policies in order with the tier's end-of-tier ACL
//!   (`GetPolicySetRules`, policysets.go:117-183), the profiles when no default-tier policy
//!   applies in that direction, the tiers flattened into one list (`flattenTiers`,
//!   felix/dataplane/windows/flattener.go:18-142), and the host ACL per direction and the
//!   node-to-endpoint allow (felix/dataplane/windows/endpoint_mgr.go:430-431, 511-563).
//!
//! IP sets are the cluster's, so a rule renders the same on every endpoint: its ACLs are
//! computed once and multiplied by the endpoints it applies to.

use foldhash::{HashMap, HashMapExt};

use super::endpoints::{Endpoints, Matched};
use super::model::{Action, Direction, Entity, Net, Rule};
use crate::selector::Node;

/// `ipPortsPerRule` (policysets.go:261): a list of more entries is split over several ACLs.
pub const PER_ACL: u64 = 4000;

/// The Calico release whose Windows rendering is modelled (`--calico-version`): the one
/// version type, `release::CalicoVersion`; the lint reads its major and minor numbers.
pub use crate::release::CalicoVersion as Release;

/// The release modelled when none is given and the cluster says none.
pub const DEFAULT_RELEASE: Release = Release::new(3, 31, 0);

/// `3.31`, `v3.31.7`, as a release whose rendering this lint models. Releases before 3.16
/// packed nothing (one ACL per address pair for Windows RS3) and are refused.
pub fn modelled(text: &str) -> Result<Release, String> {
    let r = Release::parse(text)
        .map_err(|_| format!("{text:?} is not a Calico release (3.31 or v3.31.7)"))?;
    if (r.major, r.minor) < (3, 16) {
        return Err(format!(
            "Calico {}.{} is older than 3.16, the first release whose Windows rendering (one ACL per rule) this lint models",
            r.major, r.minor
        ));
    }
    Ok(r)
}

/// The release as the lint names it: its major and minor numbers, which decide the rendering.
pub fn release_name(r: &Release) -> String {
    format!("{}.{}", r.major, r.minor)
}

/// Every tier is rendered and flattened from v3.29.0 (flattener.go first there); before,
/// endpoint_mgr.go renders only the endpoint's first tier (`workload.Tiers[0]`, v3.28.0
/// endpoint_mgr.go:349-359).
pub fn all_tiers(r: &Release) -> bool {
    (r.major, r.minor) >= (3, 29)
}

/// Staged policies reach Felix from v3.30.0 (policy_mgr.go's `PolicyIsStaged` first there).
pub fn staged_policies(r: &Release) -> bool {
    (r.major, r.minor) >= (3, 30)
}

/// What one Calico rule renders into on each endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Not supported on Windows (`ErrNotSupported`): left out with a warning.
    Skipped,
    /// A no-op (`ErrRuleIsNoOp`): IPv6 networks only, or networks and a selector that do not
    /// overlap (policysets.go:315-337, 457-465, 493-501).
    NoOp,
    /// A selector no endpoint matches: its IP set has no members, `GetIPSetMembers` returns
    /// nil and the rule is dropped (felix/dataplane/windows/ipsets/ipsets.go:125-141,
    /// policysets.go:656-679).
    EmptyIpSet,
    /// `acls` ACLs holding `local` and `remote` addresses (0: any).
    Acls { acls: u64, local: u64, remote: u64 },
}

impl Outcome {
    pub fn acls(self) -> u64 {
        match self {
            Outcome::Acls { acls, .. } => acls,
            _ => 0,
        }
    }

    /// Local × remote addresses in the rule's ACLs (an unrestricted side counts once): the
    /// matching work HNS does for it, an estimate.
    pub fn pairs(self) -> u64 {
        match self {
            Outcome::Acls { local, remote, .. } => local.max(1).saturating_mul(remote.max(1)),
            _ => 0,
        }
    }
}

/// One side's addresses in an ACL, as far as flattening needs them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Addrs {
    Any,
    /// Networks given in the rule (exact).
    Nets(Vec<Net>),
    /// An IP set's members, counted; their overlap with another list is taken as non-empty.
    Members(u64),
}

/// One side's ports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ports {
    Any,
    Ranges(Vec<(u16, u16)>),
}

/// The ACLs one rule renders (`count` of them, split by `PER_ACL`), as far as flattening needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    pub count: u64,
    pub action: Action,
    /// HNS's protocol number, 256 for any.
    pub protocol: u16,
    pub local: Addrs,
    pub remote: Addrs,
    pub local_ports: Ports,
    pub remote_ports: Ports,
}

impl Group {
    /// A single ACL matching everything with `action` (an end-of-tier or a profile's rule).
    pub fn any(action: Action) -> Self {
        Group {
            count: 1,
            action,
            protocol: 256,
            local: Addrs::Any,
            remote: Addrs::Any,
            local_ports: Ports::Any,
            remote_ports: Ports::Any,
        }
    }
}

fn chunks(n: u64) -> u64 {
    n.div_ceil(PER_ACL).max(1)
}

/// Renders rules against the cluster's endpoints, each selector's members counted once.
pub struct Renderer<'a> {
    pub eps: &'a Endpoints,
    matched: HashMap<Node, Matched>,
    in_nets: HashMap<(Node, Vec<Net>), u64>,
}

impl<'a> Renderer<'a> {
    pub fn new(eps: &'a Endpoints) -> Self {
        Renderer {
            eps,
            matched: HashMap::new(),
            in_nets: HashMap::new(),
        }
    }

    /// The endpoints a selector matches.
    pub fn matched(&mut self, sel: &Node) -> Matched {
        if let Some(m) = self.matched.get(sel) {
            return *m;
        }
        let m = self.eps.matched(sel);
        self.matched.insert(sel.clone(), m);
        m
    }

    /// One side's addresses: the IP set's members, intersected with the rule's networks when
    /// both are given (`iputils.IntersectCIDRs`, policysets.go:457-465, 493-501), else the
    /// networks, else any.
    fn side(&mut self, e: &Entity) -> Result<Addrs, Outcome> {
        if e.only_v6_nets {
            return Err(Outcome::NoOp);
        }
        let Some(sel) = &e.selector else {
            return Ok(if e.nets.is_empty() {
                Addrs::Any
            } else {
                Addrs::Nets(e.nets.clone())
            });
        };
        let members = self.matched(sel).all;
        if members == 0 {
            return Err(Outcome::EmptyIpSet);
        }
        if e.nets.is_empty() {
            return Ok(Addrs::Members(members));
        }
        let key = (sel.clone(), e.nets.clone());
        let inside = match self.in_nets.get(&key) {
            Some(n) => *n,
            None => {
                let n = self.eps.matched_in(sel, &e.nets);
                self.in_nets.insert(key, n);
                n
            }
        };
        if inside == 0 {
            return Err(Outcome::NoOp);
        }
        Ok(Addrs::Members(inside))
    }

    /// The rule's ACLs on each endpoint, or why it has none.
    pub fn rule(&mut self, r: &Rule) -> (Outcome, Option<Group>) {
        if r.skipped.is_some() {
            return (Outcome::Skipped, None);
        }
        let (src, dst) = match (self.side(&r.source), self.side(&r.destination)) {
            (Ok(s), Ok(d)) => (s, d),
            (Err(o), _) | (_, Err(o)) => return (o, None),
        };
        let ports = |p: &[(u16, u16)]| {
            if p.is_empty() {
                Ports::Any
            } else {
                Ports::Ranges(p.to_vec())
            }
        };
        let (src_ports, dst_ports) = (ports(&r.source.ports), ports(&r.destination.ports));
        // Inbound: the source is remote; outbound: local (policysets.go:466-506, 521-529).
        let (local, remote, local_ports, remote_ports) = match r.direction {
            Direction::Ingress => (dst, src, dst_ports, src_ports),
            Direction::Egress => (src, dst, src_ports, dst_ports),
        };
        let n = |a: &Addrs| match a {
            Addrs::Any => 0,
            Addrs::Nets(v) => v.len() as u64,
            Addrs::Members(m) => *m,
        };
        let np = |p: &Ports| match p {
            Ports::Any => 0,
            Ports::Ranges(v) => v.len() as u64,
        };
        let (l, rm) = (n(&local), n(&remote));
        let acls = chunks(l)
            .saturating_mul(chunks(np(&local_ports)))
            .saturating_mul(chunks(rm))
            .saturating_mul(chunks(np(&remote_ports)));
        let action = Action::parse(&r.action).unwrap_or(Action::Allow);
        let group = Group {
            count: acls,
            action,
            protocol: r.protocol,
            local,
            remote,
            local_ports,
            remote_ports,
        };
        (
            Outcome::Acls {
                acls,
                local: l,
                remote: rm,
            },
            Some(group),
        )
    }
}

/// `combineCIDRs` (flattener.go:170-190): an empty side takes the other; two lists are
/// intersected, and none left makes the combination a no-op (`None`).
fn combine_addrs(a: &Addrs, b: &Addrs) -> Option<Addrs> {
    match (a, b) {
        (Addrs::Any, x) | (x, Addrs::Any) => Some(x.clone()),
        (Addrs::Nets(x), Addrs::Nets(y)) => {
            let mut out: Vec<Net> = Vec::new();
            for p in x {
                for q in y {
                    let inner = if p.len >= q.len && q.contains(p.addr) {
                        Some(*p)
                    } else if q.len >= p.len && p.contains(q.addr) {
                        Some(*q)
                    } else {
                        None
                    };
                    if let Some(n) = inner.filter(|n| !out.contains(n)) {
                        out.push(n);
                    }
                }
            }
            (!out.is_empty()).then_some(Addrs::Nets(out))
        }
        // An IP set's members are not listed here: their overlap is taken as non-empty.
        (Addrs::Members(m), _) | (_, Addrs::Members(m)) => Some(Addrs::Members(*m)),
    }
}

/// `combinePorts` (flattener.go:143-168): ranges intersected pairwise.
fn combine_ports(a: &Ports, b: &Ports) -> Option<Ports> {
    match (a, b) {
        (Ports::Any, x) | (x, Ports::Any) => Some(x.clone()),
        (Ports::Ranges(x), Ports::Ranges(y)) => {
            let out: Vec<(u16, u16)> = x
                .iter()
                .flat_map(|p| y.iter().map(move |q| (p.0.max(q.0), p.1.min(q.1))))
                .filter(|(lo, hi)| lo <= hi)
                .collect();
            (!out.is_empty()).then_some(Ports::Ranges(out))
        }
    }
}

/// `combineRules` (flattener.go:112-141): `a && b` with `b`'s action, or `None` when it
/// matches nothing.
fn combine(a: &Group, b: &Group) -> Option<Group> {
    let protocol = match (a.protocol, b.protocol) {
        (256, p) => p,
        (p, 256) => p,
        (p, q) if p == q => p,
        _ => return None,
    };
    Some(Group {
        count: a.count.saturating_mul(b.count),
        action: b.action,
        protocol,
        local: combine_addrs(&a.local, &b.local)?,
        remote: combine_addrs(&a.remote, &b.remote)?,
        local_ports: combine_ports(&a.local_ports, &b.local_ports)?,
        remote_ports: combine_ports(&a.remote_ports, &b.remote_ports)?,
    })
}

/// `flattenTiers` (flattener.go:18-110): the last tier's pass ACLs become blocks; then, from
/// the first tier, each pass ACL is replaced by its combination with every ACL of the next
/// tier, until one tier is left or a tier has no pass ACL (the tiers after it are never
/// reached). The flat list, and the index of the first tier never reached, if any.
pub fn flatten(mut tiers: Vec<Vec<Group>>) -> (Vec<Group>, Option<usize>) {
    if let Some(last) = tiers.last_mut() {
        for g in last.iter_mut().filter(|g| g.action == Action::Pass) {
            g.action = Action::Deny;
        }
    }
    let total = tiers.len();
    let mut rest = tiers.into_iter();
    let Some(mut first) = rest.next() else {
        return (Vec::new(), None);
    };
    for (i, second) in rest.enumerate() {
        if !first.iter().any(|g| g.action == Action::Pass) {
            return (first, Some(i + 1).filter(|&n| n < total));
        }
        let mut next = Vec::with_capacity(first.len());
        for g in first {
            if g.action == Action::Pass {
                next.extend(second.iter().filter_map(|h| combine(&g, h)));
            } else {
                next.push(g);
            }
        }
        first = next;
    }
    (first, None)
}

/// The ACLs of a flat list.
pub fn count(groups: &[Group]) -> u64 {
    groups.iter().fold(0u64, |n, g| n.saturating_add(g.count))
}

#[cfg(test)]
mod tests;
