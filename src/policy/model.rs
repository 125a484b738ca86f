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
    /// How many Calico rules this entry stands for (a Kubernetes rule with several protocols).
    pub copies: u64,
}

/// One side of a rule.
#[derive(Debug, Clone, Default)]
pub struct Entity {
    /// The endpoints matched, as `GetEntityRuleSelector` builds it; `None` matches any address.
    pub selector: Option<Node>,
    /// The entity's own `selector` field (or service accounts), not only a namespace scope.
    pub own_selector: Option<String>,
    /// Whether only `selector` is set (so it can move into the policy's selector).
    pub plain_selector: bool,
    pub nets: usize,
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

fn no_global(src: &Source, field: &str, node: &Node) -> Result<(), PolicyError> {
    if node.uses_global() {
        return Err(src.invalid(format!(
            "{field} uses global(), which Calico accepts only as a rule's whole namespaceSelector"
        )));
    }
    Ok(())
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
    let own = text(spec, "selector");
    let mut applies = parse_at(src, "spec.selector", own)?;
    no_global(src, "spec.selector", &applies)?;
    let sa = text(spec, "serviceAccountSelector");
    let ns_sel = text(spec, "namespaceSelector");
    if let Some(ns) = &namespace {
        applies = and(applies, in_namespace(ns));
    } else if !ns_sel.is_empty() {
        let n = parse_at(src, "spec.namespaceSelector", ns_sel)?;
        no_global(src, "spec.namespaceSelector", &n)?;
        applies = and(applies, n.prefixed("pcns."))
            .replacing(&Node::Has(NAMESPACE_LABEL.into()), &Node::Global);
    }
    if !sa.is_empty() {
        let n = parse_at(src, "spec.serviceAccountSelector", sa)?;
        no_global(src, "spec.serviceAccountSelector", &n)?;
        applies = and(applies, n.prefixed("pcsa."));
        if namespace.is_none() {
            applies = applies.replacing(&Node::Has(SERVICE_ACCOUNT_LABEL.into()), &Node::Global);
        }
    }
    let whole = matches!(parse_at(src, "spec.selector", own)?, Node::All)
        && sa.is_empty()
        && ns_sel.is_empty();
    let mut rules = Vec::new();
    for direction in [Direction::Ingress, Direction::Egress] {
        let list = spec.get(direction.key()).and_then(Value::as_array);
        if list.is_some_and(|l| l.len() > RULES_CAP) {
            return Err(src.invalid(format!("more than {RULES_CAP} {} rules", direction.key())));
        }
        for (index, r) in list.into_iter().flatten().enumerate() {
            rules.push(calico_rule(src, r, direction, index, namespace.as_deref())?);
        }
    }
    let types = calico_types(spec, &rules);
    Ok(Policy {
        api_version: src.api_version.clone(),
        kind: src.kind.clone(),
        namespace,
        name: src.name.clone(),
        applies,
        selects_whole_scope: whole,
        types,
        rules,
        object: Some(object),
    })
}

/// The policy's types: as given, else as Calico's defaulting sets them (ingress always,
/// egress when there are egress rules).
fn calico_types(spec: &Value, rules: &[Rule]) -> Vec<Direction> {
    if let Some(given) = spec.get("types").and_then(Value::as_array) {
        return given
            .iter()
            .filter_map(|t| match t.as_str() {
                Some("Ingress") => Some(Direction::Ingress),
                Some("Egress") => Some(Direction::Egress),
                _ => None,
            })
            .collect();
    }
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
    let source = entity(src, &format!("{at}.source"), r.get("source"), ns)?;
    let destination = entity(src, &format!("{at}.destination"), r.get("destination"), ns)?;
    let action = text(r, "action").to_owned();
    Ok(Rule {
        direction,
        index,
        skipped: windows_skip(r, &action),
        action,
        source,
        destination,
        copies: 1,
    })
}

/// Why Felix on Windows leaves the rule out (felix/dataplane/windows/policysets/policysets.go
/// at v3.31.7: negative matches, ICMP type or code, named ports, the Log action).
fn windows_skip(r: &Value, action: &str) -> Option<String> {
    let has = |v: Option<&Value>| {
        v.is_some_and(|v| !v.is_null() && v != "" && v != &Value::Array(vec![]))
    };
    let sides = [r.get("source"), r.get("destination")];
    let negative = has(r.get("notProtocol"))
        || has(r.get("notICMP"))
        || sides
            .iter()
            .flatten()
            .any(|s| has(s.get("notSelector")) || has(s.get("notNets")) || has(s.get("notPorts")));
    let named = sides.iter().flatten().any(|s| {
        s.get("ports")
            .and_then(Value::as_array)
            .is_some_and(|p| p.iter().any(is_named_port))
    });
    if negative {
        Some(
            "it has a negative match (notSelector, notNets, notPorts, notProtocol or notICMP)"
                .into(),
        )
    } else if has(r.get("icmp")) {
        Some("it matches an ICMP type or code".into())
    } else if named {
        Some("it names a port (named ports are not supported on Windows)".into())
    } else if action.eq_ignore_ascii_case("log") {
        Some("its action is Log".into())
    } else {
        None
    }
}

fn is_named_port(p: &Value) -> bool {
    p.as_str().is_some_and(|s| {
        !s.split(':')
            .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
    })
}

fn entity(
    src: &Source,
    at: &str,
    e: Option<&Value>,
    ns: Option<&str>,
) -> Result<Entity, PolicyError> {
    let Some(e) = e.filter(|e| e.is_object()) else {
        return Ok(Entity::default());
    };
    let sel = text(e, "selector");
    let ns_sel = text(e, "namespaceSelector");
    let sa = e.get("serviceAccounts").filter(|s| s.is_object());
    let nets = e.get("nets").and_then(Value::as_array).map_or(0, Vec::len);
    let not_sel = text(e, "notSelector");
    let mut parts = Vec::new();
    if let Some(sa) = sa {
        parts.push(service_accounts(src, at, sa)?);
    }
    if !sel.is_empty() {
        let n = parse_at(src, &format!("{at}.selector"), sel)?;
        no_global(src, &format!("{at}.selector"), &n)?;
        parts.push(n);
    }
    if !not_sel.is_empty() {
        no_global(
            src,
            &format!("{at}.notSelector"),
            &parse_at(src, &format!("{at}.notSelector"), not_sel)?,
        )?;
    }
    let selector = combined(src, at, parts, ns_sel, ns, !not_sel.is_empty())?;
    let own = (!sel.is_empty() || sa.is_some()).then(|| sel.to_owned());
    Ok(Entity {
        selector,
        plain_selector: !sel.is_empty()
            && sa.is_none()
            && ns_sel.is_empty()
            && nets == 0
            && not_sel.is_empty(),
        own_selector: own,
        nets,
    })
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
        let n = parse_at(src, &format!("{at}.serviceAccounts.selector"), sel)?;
        no_global(src, &format!("{at}.serviceAccounts.selector"), &n)?;
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
        let list = spec.get(direction.key()).and_then(Value::as_array);
        if list.is_some_and(|l| l.len() > RULES_CAP) {
            return Err(src.invalid(format!("more than {RULES_CAP} {} rules", direction.key())));
        }
        for (index, r) in list.into_iter().flatten().enumerate() {
            let c = k8s::rule(r.get(peers_key), r.get("ports")).map_err(|e| src.invalid(e))?;
            rules.extend(k8s_rules(src, direction, index, &ns, c)?);
        }
    }
    let types = k8s_types(spec);
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
    })
}

fn k8s_rules(
    src: &Source,
    direction: Direction,
    index: usize,
    ns: &str,
    c: k8s::Converted,
) -> Result<Vec<Rule>, PolicyError> {
    let at = format!("{}[{index}]", direction.key());
    let mut out = Vec::new();
    for p in c.peers {
        let parts = if p.selector.is_empty() {
            vec![]
        } else {
            vec![parse_at(src, &format!("{at} peer"), &p.selector)?]
        };
        let selector = combined(src, &at, parts, &p.namespace_selector, Some(ns), false)?;
        let peer = Entity {
            own_selector: (!p.selector.is_empty()).then(|| p.selector.clone()),
            selector,
            plain_selector: false,
            nets: p.nets,
        };
        let skipped = if p.not_nets > 0 {
            Some("its ipBlock has except entries, which become notNets (a negative match)".into())
        } else if c.named_port {
            Some("it names a port (named ports are not supported on Windows)".into())
        } else {
            None
        };
        let (source, destination) = match direction {
            Direction::Ingress => (peer, Entity::default()),
            Direction::Egress => (Entity::default(), peer),
        };
        out.push(Rule {
            direction,
            index,
            action: "Allow".into(),
            source,
            destination,
            skipped,
            copies: c.protocols.max(1) as u64,
        });
    }
    Ok(out)
}

fn k8s_types(spec: &Value) -> Vec<Direction> {
    let given: Vec<&str> = spec
        .get("policyTypes")
        .and_then(Value::as_array)
        .map(|t| t.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = Vec::new();
    if given.contains(&"Ingress") {
        out.push(Direction::Ingress);
    }
    if given.contains(&"Egress") {
        out.push(Direction::Egress);
    }
    if out.is_empty() {
        out.push(Direction::Ingress);
    }
    out
}
