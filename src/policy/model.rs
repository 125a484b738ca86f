//! Policies as Felix receives them: Calico NetworkPolicy and GlobalNetworkPolicy (either API
//! group) and Kubernetes NetworkPolicy, each with the selectors Calico's update processors build
//! (libcalico-go v3.31.7 `lib/backend/syncersv1/updateprocessors/networkpolicyprocessor.go`,
//! `globalnetworkpolicyprocessor.go`, `rules.go`).

use serde_json::Value;

use super::k8s;
use super::source::{PolicyError, Source};
use crate::selector::{self, Node};

/// The label of an endpoint's namespace (`apiv3.LabelNamespace`).
pub const NAMESPACE_LABEL: &str = "projectcalico.org/namespace";
/// The label of an endpoint's service account (`apiv3.LabelServiceAccount`).
pub const SERVICE_ACCOUNT_LABEL: &str = "projectcalico.org/serviceaccount";
/// The most bytes of one selector read (Calico sets none; ours keeps the evaluation bounded).
pub const SELECTOR_CAP: usize = 16 << 10;
/// The most rules of one direction of one policy.
pub const RULES_CAP: usize = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Ingress,
    Egress,
}

impl Direction {
    pub fn key(self) -> &'static str {
        match self {
            Direction::Ingress => "ingress",
            Direction::Egress => "egress",
        }
    }
}

/// A policy, its effective selector and rules.
#[derive(Debug, Clone)]
pub struct Policy {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    /// What Felix matches endpoints against: the spec's selector within the policy's scope.
    pub applies: Node,
    /// Whether the spec selects every endpoint in its scope (`all()` or empty, and no
    /// service-account or namespace selector narrowing it).
    pub selects_whole_scope: bool,
    pub types: Vec<Direction>,
    pub rules: Vec<Rule>,
    /// The object as read, for rewrites (`None` for Kubernetes policies).
    pub object: Option<Value>,
    /// The tier: `spec.tier`, else as `names.TierFromPolicyName` reads it from the name
    /// (libcalico-go v3.31.7 `lib/names/policy.go:52-79`: the word before the first dot,
    /// `default` for none and for Kubernetes policies).
    pub tier: String,
    /// `spec.order` (Kubernetes policies: 1000, as `K8sNetworkPolicyToCalico` sets it); `None`
    /// sorts last.
    pub order: Option<f64>,
    /// A staged policy (`Staged*` kinds): Felix on Windows creates no policy set for it.
    pub staged: bool,
    /// `doNotTrack` or `preDNAT`: such a policy applies to host endpoints only, never to a
    /// workload (felix/calc/event_sequencer.go:1244-1267 at v3.31.7).
    pub host_only: bool,
}

/// Rendering orders a direction's rules by this: `Allow`, `Deny`, `Pass` (or `Next-Tier`), or
/// `Log`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    Allow,
    Deny,
    Pass,
    Log,
}

impl Action {
    /// As `protoRuleToHnsRules` reads it (policysets.go:348-361): empty is Allow.
    pub fn parse(text: &str) -> Option<Self> {
        match text.to_ascii_lowercase().as_str() {
            "" | "allow" => Some(Action::Allow),
            "deny" => Some(Action::Deny),
            "pass" | "next-tier" => Some(Action::Pass),
            "log" => Some(Action::Log),
            _ => None,
        }
    }
}

/// An IPv4 network of a rule's `nets` (a bare address is a /32).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Net {
    pub addr: u32,
    pub len: u8,
}

impl Net {
    /// `Some(Ok(net))` for IPv4, `Some(Err(()))` for IPv6, `None` when it is neither.
    pub fn parse(text: &str) -> Option<Result<Net, ()>> {
        let (ip, len) = text
            .split_once('/')
            .map_or((text, None), |(a, l)| (a, Some(l)));
        if let Ok(v4) = ip.parse::<std::net::Ipv4Addr>() {
            let len = match len {
                Some(l) => l.parse::<u8>().ok().filter(|l| *l <= 32)?,
                None => 32,
            };
            return Some(Ok(Net {
                addr: u32::from(v4) & mask(len),
                len,
            }));
        }
        ip.parse::<std::net::Ipv6Addr>().ok().map(|_| Err(()))
    }

    pub fn contains(&self, ip: u32) -> bool {
        ip & mask(self.len) == self.addr
    }
}

/// The network mask of a prefix length (0 to 32).
fn mask(len: u8) -> u32 {
    u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0)
}

/// One rule of a policy.
#[derive(Debug, Clone)]
pub struct Rule {
    pub direction: Direction,
    /// The rule's index within its direction, as in `ingress[0]`.
    pub index: usize,
    pub action: String,
    pub source: Entity,
    pub destination: Entity,
    /// Why Felix on Windows skips the rule (policysets.go `protoRuleToHnsRules`), if it does.
    pub skipped: Option<String>,
    /// The protocol as HNS numbers it (`protocolNameToNumber`, policysets.go:681-699): 256 is
    /// any.
    pub protocol: u16,
}

/// One side of a rule.
#[derive(Debug, Clone, Default)]
pub struct Entity {
    /// The endpoints matched, as `GetEntityRuleSelector` builds it with a `notSelector` folded
    /// in; `None` matches any address.
    pub selector: Option<Node>,
    /// The entity's own `selector` field (or service accounts), not only a namespace scope.
    pub own_selector: Option<String>,
    /// Whether only `selector` is set (so it can move into the policy's selector).
    pub plain_selector: bool,
    /// The IPv4 networks of `nets`.
    pub nets: Vec<Net>,
    /// `nets` holds IPv6 networks only: the rule is a no-op on Windows.
    pub only_v6_nets: bool,
    /// The port ranges of `ports` (numbers and `a:b` ranges).
    pub ports: Vec<(u16, u16)>,
}

impl Rule {
    /// The `ingress[0]` name of the rule.
    pub fn name(&self) -> String {
        format!("{}[{}]", self.direction.key(), self.index)
    }
    /// The side the endpoint is on: the destination of ingress, the source of egress.
    pub fn local(&self) -> &Entity {
        match self.direction {
            Direction::Ingress => &self.destination,
            Direction::Egress => &self.source,
        }
    }
}

fn parse_at(src: &Source, field: &str, text: &str) -> Result<Node, PolicyError> {
    if text.len() > SELECTOR_CAP {
        return Err(src.invalid(format!("{field} is longer than {SELECTOR_CAP} bytes")));
    }
    selector::parse(text).map_err(|e| {
        src.invalid(format!(
            "{field} {text:?}: {} at position {}",
            e.message, e.at
        ))
    })
}

/// `parse_at` of a selector where Calico refuses `global()`.
fn parse_no_global(src: &Source, field: &str, text: &str) -> Result<Node, PolicyError> {
    let node = parse_at(src, field, text)?;
    if node.uses_global() {
        return Err(src.invalid(format!(
            "{field} uses global(), which Calico accepts only as a rule's whole namespaceSelector"
        )));
    }
    Ok(node)
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn and(a: Node, b: Node) -> Node {
    match (a, b) {
        (Node::All, b) => b,
        (a, Node::All) => a,
        (a, b) => Node::And(vec![a, b]),
    }
}

fn in_namespace(ns: &str) -> Node {
    Node::Eq(NAMESPACE_LABEL.into(), ns.into())
}

/// A Calico NetworkPolicy or GlobalNetworkPolicy.
pub fn calico(src: &Source, object: Value) -> Result<Policy, PolicyError> {
    let null = Value::Null;
    let spec = object.get("spec").unwrap_or(&null);
    if !spec.is_object() && !spec.is_null() {
        return Err(src.invalid("spec is not a map"));
    }
    let namespace = src.namespace.clone();
    let mut applies = parse_no_global(src, "spec.selector", text(spec, "selector"))?;
    let sa = text(spec, "serviceAccountSelector");
    let ns_sel = text(spec, "namespaceSelector");
    let whole = applies == Node::All && sa.is_empty() && ns_sel.is_empty();
    if let Some(ns) = &namespace {
        applies = and(applies, in_namespace(ns));
    } else if !ns_sel.is_empty() {
        let n = parse_no_global(src, "spec.namespaceSelector", ns_sel)?;
        applies = and(applies, n.prefixed("pcns."))
            .replacing(&Node::Has(NAMESPACE_LABEL.into()), &Node::Global);
    }
    if !sa.is_empty() {
        let n = parse_no_global(src, "spec.serviceAccountSelector", sa)?;
        applies = and(applies, n.prefixed("pcsa."));
        if namespace.is_none() {
            applies = applies.replacing(&Node::Has(SERVICE_ACCOUNT_LABEL.into()), &Node::Global);
        }
    }
    let mut rules = Vec::new();
    for direction in [Direction::Ingress, Direction::Egress] {
        for (index, r) in rules_of(src, spec, direction)?.iter().enumerate() {
            rules.push(calico_rule(src, r, direction, index, namespace.as_deref())?);
        }
    }
    let types = given_types(spec.get("types")).unwrap_or_else(|| calico_types(&rules));
    let tier = match text(spec, "tier") {
        "" => tier_from_name(&src.name),
        t => t.to_owned(),
    };
    let flag = |k: &str| spec.get(k).and_then(Value::as_bool) == Some(true);
    Ok(Policy {
        api_version: src.api_version.clone(),
        kind: src.kind.clone(),
        namespace,
        name: src.name.clone(),
        applies,
        selects_whole_scope: whole,
        types,
        rules,
        tier,
        order: spec.get("order").and_then(Value::as_f64),
        staged: src.kind.starts_with("Staged"),
        host_only: flag("doNotTrack") || flag("preDNAT"),
        object: Some(object),
    })
}

/// A direction's rules, at most `RULES_CAP`.
fn rules_of<'a>(src: &Source, spec: &'a Value, d: Direction) -> Result<&'a [Value], PolicyError> {
    let list = spec
        .get(d.key())
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    if list.len() > RULES_CAP {
        return Err(src.invalid(format!("more than {RULES_CAP} {} rules", d.key())));
    }
    Ok(list)
}

/// `names.TierFromPolicyName` (libcalico-go v3.31.7 `lib/names/policy.go:52-79`): Kubernetes
/// and OpenStack policies are in `default`, as is a name without a dot; otherwise the word
/// before the first dot.
pub fn tier_from_name(name: &str) -> String {
    if ["knp.default.", "ossg."]
        .iter()
        .any(|p| name.starts_with(p))
    {
        return "default".into();
    }
    match name.split_once('.') {
        Some((tier, _)) if !tier.is_empty() => tier.to_owned(),
        _ => "default".into(),
    }
}

/// A policy's `types` (`policyTypes`) as given, if given.
fn given_types(list: Option<&Value>) -> Option<Vec<Direction>> {
    let list = list?.as_array()?.iter().filter_map(|t| match t.as_str() {
        Some("Ingress") => Some(Direction::Ingress),
        Some("Egress") => Some(Direction::Egress),
        _ => None,
    });
    Some(list.collect())
}

/// The types Calico's defaulting sets when none are given: ingress always, egress when there
/// are egress rules.
fn calico_types(rules: &[Rule]) -> Vec<Direction> {
    let ingress = rules.iter().any(|r| r.direction == Direction::Ingress);
    let egress = rules.iter().any(|r| r.direction == Direction::Egress);
    match (ingress, egress) {
        (false, true) => vec![Direction::Egress],
        (true, true) => vec![Direction::Ingress, Direction::Egress],
        _ => vec![Direction::Ingress],
    }
}

fn calico_rule(
    src: &Source,
    r: &Value,
    direction: Direction,
    index: usize,
    ns: Option<&str>,
) -> Result<Rule, PolicyError> {
    let at = format!("{}[{index}]", direction.key());
    if !r.is_object() {
        return Err(src.invalid(format!("{at} is not a rule (a map)")));
    }
    let (source, not_src) = entity(src, &format!("{at}.source"), r.get("source"), ns)?;
    let (destination, not_dst) =
        entity(src, &format!("{at}.destination"), r.get("destination"), ns)?;
    let action = text(r, "action").to_owned();
    if Action::parse(&action).is_none() {
        return Err(src.invalid(format!(
            "{at}.action {action:?} is not Allow, Deny, Pass or Log"
        )));
    }
    let protocol = match r.get("protocol") {
        Some(Value::Number(n)) => n
            .as_u64()
            .and_then(|n| u16::try_from(n).ok())
            .unwrap_or(256),
        Some(Value::String(name)) => protocol_number(name),
        _ => 256,
    };
    let skipped = windows_skip(r, &action, protocol, not_src || not_dst);
    Ok(Rule {
        direction,
        index,
        skipped,
        action,
        source,
        destination,
        protocol,
    })
}

/// `protocolNameToNumber` (felix/dataplane/windows/policysets/policysets.go:681-699 at v3.31.7):
/// 256 is any.
pub fn protocol_number(name: &str) -> u16 {
    match name.to_ascii_lowercase().as_str() {
        "tcp" => 6,
        "udp" => 17,
        "icmp" => 1,
        "icmpv6" => 58,
        "sctp" => 132,
        "udplite" => 136,
        _ => 256,
    }
}

/// Why Felix on Windows leaves the rule out (felix/dataplane/windows/policysets/policysets.go
/// at v3.31.7, `protoRuleToHnsRules` :287-338: an IPv6 rule, a negative match, an ICMP type or
/// code, a named port; :356-358: the Log action). A `notSelector` beside a positive selector is
/// no negative match: Felix folds it into the selector (felix/calc/rule_scanner.go:594-612).
fn windows_skip(r: &Value, action: &str, protocol: u16, not_selector: bool) -> Option<String> {
    let has = |v: Option<&Value>| {
        v.is_some_and(|v| !v.is_null() && v != "" && v != &Value::Array(vec![]))
    };
    let sides = [r.get("source"), r.get("destination")];
    let negative = not_selector
        || has(r.get("notProtocol"))
        || has(r.get("notICMP"))
        || sides
            .iter()
            .flatten()
            .any(|s| has(s.get("notNets")) || has(s.get("notPorts")));
    let named = sides.iter().flatten().any(|s| {
        s.get("ports")
            .and_then(Value::as_array)
            .is_some_and(|p| p.iter().any(is_named_port))
    });
    let v6 = r.get("ipVersion").and_then(Value::as_u64) == Some(6) || protocol == 58;
    if v6 {
        Some(
            "it is an IPv6 rule (ipVersion 6 or ICMPv6), and Felix on Windows renders IPv4 only"
                .into(),
        )
    } else if negative {
        Some(
            "it has a negative match (notNets, notPorts, notProtocol, notICMP, or a notSelector without a positive selector beside it)"
                .into(),
        )
    } else if has(r.get("icmp")) {
        Some("it matches an ICMP type or code".into())
    } else if named {
        Some(NAMED_PORT.into())
    } else if action.eq_ignore_ascii_case("log") {
        Some("its action is Log".into())
    } else {
        None
    }
}

const NAMED_PORT: &str = "it names a port (named ports are not supported on Windows)";

fn is_named_port(p: &Value) -> bool {
    p.as_str().is_some_and(|s| {
        !s.split(':')
            .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// The numeric ports and ranges of a `ports` list (names are left to `windows_skip`).
fn port_ranges(ports: Option<&Value>) -> Vec<(u16, u16)> {
    let number = |t: &str| t.parse::<u16>().ok();
    ports
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| match p {
            Value::Number(n) => n
                .as_u64()
                .and_then(|n| u16::try_from(n).ok())
                .map(|n| (n, n)),
            Value::String(t) => match t.split_once(':') {
                Some((a, b)) => Some((number(a)?, number(b)?)),
                None => number(t).map(|n| (n, n)),
            },
            _ => None,
        })
        .collect()
}

/// A rule's `nets`: the IPv4 ones, and whether every one given was IPv6 (`filterNets`,
/// policysets.go:315-337: IPv6 entries are dropped, and a side left with none makes the rule a
/// no-op).
fn nets_of(src: &Source, at: &str, e: &Value) -> Result<(Vec<Net>, bool), PolicyError> {
    let list = e.get("nets").and_then(Value::as_array);
    let mut v4 = Vec::new();
    let mut v6 = 0;
    for n in list.into_iter().flatten() {
        match n.as_str().and_then(Net::parse) {
            Some(Ok(net)) => v4.push(net),
            Some(Err(())) => v6 += 1,
            None => return Err(src.invalid(format!("{at}.nets has {n}, not a CIDR"))),
        }
    }
    let only_v6 = v4.is_empty() && v6 > 0;
    Ok((v4, only_v6))
}

/// One side of a rule, and whether a `notSelector` is left a negative match (no positive
/// selector to fold it into).
fn entity(
    src: &Source,
    at: &str,
    e: Option<&Value>,
    ns: Option<&str>,
) -> Result<(Entity, bool), PolicyError> {
    let Some(e) = e.filter(|e| e.is_object()) else {
        return Ok((Entity::default(), false));
    };
    let sel = text(e, "selector");
    let ns_sel = text(e, "namespaceSelector");
    let sa = e.get("serviceAccounts").filter(|s| s.is_object());
    let (nets, only_v6_nets) = nets_of(src, at, e)?;
    let not_sel = text(e, "notSelector");
    let mut parts = Vec::new();
    if let Some(sa) = sa {
        parts.push(service_accounts(src, at, sa)?);
    }
    if !sel.is_empty() {
        let n = parse_no_global(src, &format!("{at}.selector"), sel)?;
        parts.push(n);
    }
    let not = if not_sel.is_empty() {
        None
    } else {
        let n = parse_no_global(src, &format!("{at}.notSelector"), not_sel)?;
        Some(n)
    };
    let mut selector = combined(src, at, parts, ns_sel, ns, not.is_some())?;
    // `combineMatchesIfPossible` (rule_scanner.go:594-612): beside a positive selector the
    // notSelector narrows it; alone it stays a negative match.
    let negative = match (&mut selector, not) {
        (Some(positive), Some(not)) => {
            *positive = and(positive.clone(), Node::Not(Box::new(not)));
            false
        }
        (None, Some(_)) => true,
        _ => false,
    };
    let own = (!sel.is_empty() || sa.is_some()).then(|| sel.to_owned());
    let entity = Entity {
        selector,
        plain_selector: !sel.is_empty()
            && sa.is_none()
            && ns_sel.is_empty()
            && nets.is_empty()
            && !only_v6_nets
            && not_sel.is_empty(),
        own_selector: own,
        nets,
        only_v6_nets,
        ports: port_ranges(e.get("ports")),
    };
    Ok((entity, negative))
}

/// `getEndpointSelector`: the namespace part and the selectors, joined by `&&`.
fn combined(
    src: &Source,
    at: &str,
    parts: Vec<Node>,
    ns_sel: &str,
    ns: Option<&str>,
    has_not: bool,
) -> Result<Option<Node>, PolicyError> {
    let selector = parts.into_iter().reduce(and);
    let scope = if !ns_sel.is_empty() {
        let n = parse_at(src, &format!("{at}.namespaceSelector"), ns_sel)?;
        if n.uses_global() && n != Node::Global {
            return Err(src.invalid(format!(
                "{at}.namespaceSelector uses global() with other terms; Calico accepts it only alone"
            )));
        }
        Some(n.prefixed("pcns.").replacing(
            &Node::Has(NAMESPACE_LABEL.into()),
            &Node::Not(Box::new(Node::Has(NAMESPACE_LABEL.into()))),
        ))
    } else {
        ns.map(in_namespace)
    };
    Ok(match (scope, selector) {
        (Some(s), Some(sel)) => Some(and(s, sel)),
        (Some(s), None) if !ns_sel.is_empty() || has_not => Some(s),
        (_, sel) => sel,
    })
}

fn service_accounts(src: &Source, at: &str, sa: &Value) -> Result<Node, PolicyError> {
    let mut node = Node::All;
    let sel = text(sa, "selector");
    if !sel.is_empty() {
        let n = parse_no_global(src, &format!("{at}.serviceAccounts.selector"), sel)?;
        node = n.prefixed("pcsa.");
    }
    let names: std::collections::BTreeSet<String> = sa
        .get("names")
        .and_then(Value::as_array)
        .map(|n| {
            n.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if !names.is_empty() {
        node = and(node, Node::In(SERVICE_ACCOUNT_LABEL.into(), names));
    }
    Ok(node)
}

/// A Kubernetes NetworkPolicy, converted as `K8sNetworkPolicyToCalico` converts it.
pub fn kubernetes(src: &Source, object: &Value) -> Result<Policy, PolicyError> {
    let null = Value::Null;
    let spec = object.get("spec").unwrap_or(&null);
    let ns = src.namespace.clone().unwrap_or_else(|| "default".into());
    let text = k8s::pod_selector(spec.get("podSelector")).map_err(|e| src.invalid(e))?;
    let applies = and(parse_at(src, "spec.podSelector", &text)?, in_namespace(&ns));
    let whole = text == "projectcalico.org/orchestrator == 'k8s'";
    let mut rules = Vec::new();
    for (direction, peers_key) in [(Direction::Ingress, "from"), (Direction::Egress, "to")] {
        for (index, r) in rules_of(src, spec, direction)?.iter().enumerate() {
            let c = k8s::rule(r.get(peers_key), r.get("ports")).map_err(|e| src.invalid(e))?;
            rules.extend(k8s_rules(src, direction, index, &ns, c)?);
        }
    }
    // No policyTypes (or none known) is Ingress.
    let types = given_types(spec.get("policyTypes"))
        .filter(|t| !t.is_empty())
        .unwrap_or(vec![Direction::Ingress]);
    Ok(Policy {
        api_version: src.api_version.clone(),
        kind: src.kind.clone(),
        namespace: Some(ns),
        name: src.name.clone(),
        applies,
        selects_whole_scope: whole,
        types,
        rules,
        object: None,
        // `K8sNetworkPolicyToCalico` gives every converted policy order 1000 in `default`.
        tier: "default".into(),
        order: Some(1000.0),
        staged: src.kind.starts_with("Staged"),
        host_only: false,
    })
}

/// One Calico rule per protocol and peer, in `k8sRuleToCalico`'s order (conversion.go:999-1077
/// at v3.31.7: protocols sorted, then peers); a protocol with a named port makes only its own
/// rules use a named-port IP set, which Felix on Windows skips.
fn k8s_rules(
    src: &Source,
    direction: Direction,
    index: usize,
    ns: &str,
    c: k8s::Converted,
) -> Result<Vec<Rule>, PolicyError> {
    let at = format!("{}[{index}]", direction.key());
    let mut out = Vec::new();
    for proto in &c.protocols {
        for p in &c.peers {
            let parts = if p.selector.is_empty() {
                vec![]
            } else {
                vec![parse_at(src, &format!("{at} peer"), &p.selector)?]
            };
            let selector = combined(src, &at, parts, &p.namespace_selector, Some(ns), false)?;
            let (nets, only_v6_nets) = match &p.cidr {
                Some(cidr) => match Net::parse(cidr) {
                    Some(Ok(net)) => (vec![net], false),
                    Some(Err(())) => (vec![], true),
                    None => return Err(src.invalid(format!("{at} ipBlock {cidr:?} is not a CIDR"))),
                },
                None => (vec![], false),
            };
            let peer = Entity {
                own_selector: (!p.selector.is_empty()).then(|| p.selector.clone()),
                selector,
                plain_selector: false,
                nets,
                only_v6_nets,
                ports: Vec::new(),
            };
            let skipped = if p.not_nets > 0 {
                Some(
                    "its ipBlock has except entries, which become notNets (a negative match)"
                        .into(),
                )
            } else if proto.named {
                Some(NAMED_PORT.into())
            } else {
                None
            };
            let ports = Entity {
                ports: proto.ports.clone(),
                ..Entity::default()
            };
            let (source, destination) = match direction {
                Direction::Ingress => (peer, ports),
                Direction::Egress => (
                    Entity::default(),
                    Entity {
                        ports: proto.ports.clone(),
                        ..peer
                    },
                ),
            };
            out.push(Rule {
                direction,
                index,
                action: "Allow".into(),
                source,
                destination,
                skipped,
                protocol: proto.protocol.as_deref().map_or(256, protocol_number),
            });
        }
    }
    Ok(out)
}
