//! Kubernetes label selectors and NetworkPolicy as Calico converts them: libcalico-go v3.31.7
//! `lib/backend/k8s/conversion/conversion.go` (`k8sSelectorToCalico`, `K8sNetworkPolicyToCalico`,
//! `k8sRuleToCalico`, `k8sPeerToCalicoFields`). The conversion's own test table runs against
//! this module (tests/cli/calico_selector.rs).

use serde_json::Value;

/// What is wrong with a selector or rule, for the caller to say where.
pub type Problem = String;

/// A Kubernetes `LabelSelector` of pods, as Calico's selector text (`SelectorPod`): always
/// restricted to Kubernetes endpoints.
pub fn pod_selector(s: Option<&Value>) -> Result<String, Problem> {
    convert(s, true)
}

/// A Kubernetes `LabelSelector` of namespaces (`SelectorNamespace`): absent is `""` (no
/// namespace selector), present but empty is `all()`.
pub fn namespace_selector(s: Option<&Value>) -> Result<String, Problem> {
    convert(s, false)
}

fn convert(s: Option<&Value>, pod: bool) -> Result<String, Problem> {
    let mut terms = Vec::new();
    if pod {
        terms.push("projectcalico.org/orchestrator == 'k8s'".to_owned());
    }
    let Some(s) = s.filter(|s| !s.is_null()) else {
        return Ok(terms.join(" && "));
    };
    let labels = s.get("matchLabels").and_then(Value::as_object);
    let exprs = s.get("matchExpressions").and_then(Value::as_array);
    if !pod && labels.is_none_or(|l| l.is_empty()) && exprs.is_none_or(|e| e.is_empty()) {
        return Ok("all()".to_owned());
    }
    // serde_json's maps keep their keys sorted unless preserve_order is on: sort as Go does.
    let mut keys: Vec<(&String, &Value)> = labels.into_iter().flatten().collect();
    keys.sort_by(|a, b| a.0.cmp(b.0));
    for (k, v) in keys {
        let v = v
            .as_str()
            .ok_or_else(|| format!("matchLabels {k} is not a string"))?;
        terms.push(format!("{k} == '{v}'"));
    }
    for e in exprs.into_iter().flatten() {
        terms.push(expression(e)?);
    }
    Ok(terms.join(" && "))
}

fn expression(e: &Value) -> Result<String, Problem> {
    let key = e
        .get("key")
        .and_then(Value::as_str)
        .ok_or("a matchExpressions entry has no key")?;
    let values: Vec<&str> = e
        .get("values")
        .and_then(Value::as_array)
        .map(|v| v.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let list = values.join("', '");
    Ok(match e.get("operator").and_then(Value::as_str) {
        Some("In") => format!("{key} in {{ '{list}' }}"),
        Some("NotIn") => format!("{key} not in {{ '{list}' }}"),
        Some("Exists") => format!("has({key})"),
        Some("DoesNotExist") => format!("! has({key})"),
        other => {
            return Err(format!(
                "matchExpressions on {key} has operator {other:?}, not In, NotIn, Exists or DoesNotExist"
            ));
        }
    })
}

/// One Calico rule made from a Kubernetes rule: its peer's selectors, or its IP block.
#[derive(Debug, Clone, Default)]
pub struct Peer {
    pub selector: String,
    pub namespace_selector: String,
    /// The ipBlock's CIDR.
    pub cidr: Option<String>,
    pub not_nets: usize,
}

/// One protocol of a rule's ports: its name (`None`: any), its numeric ports and ranges, and
/// whether one of its ports is a name (`port: http`).
#[derive(Debug, Clone, Default)]
pub struct Protocol {
    pub protocol: Option<String>,
    pub ports: Vec<(u16, u16)>,
    pub named: bool,
}

/// The Calico rules one Kubernetes ingress or egress rule becomes (`k8sRuleToCalico`,
/// conversion.go:980-1077 at v3.31.7): one per protocol of its ports, sorted (TCP when a port
/// names none; one rule for any protocol without ports or with an empty port), times each peer
/// (one without peers).
pub struct Converted {
    pub peers: Vec<Peer>,
    pub protocols: Vec<Protocol>,
}

/// Converts one rule's peers (`from` or `to`) and ports as `k8sRuleToCalico` does.
pub fn rule(peers: Option<&Value>, ports: Option<&Value>) -> Result<Converted, Problem> {
    let mut out = Vec::new();
    for p in peers.and_then(Value::as_array).into_iter().flatten() {
        out.push(peer(p)?);
    }
    if out.is_empty() {
        out.push(Peer::default());
    }
    let ports = ports
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut by_protocol: std::collections::BTreeMap<String, Protocol> = Default::default();
    for p in ports {
        if p.get("port").is_none() && p.get("protocol").is_none() {
            // An empty port allows everything: one rule for any protocol (Calico breaks there).
            by_protocol.clear();
            break;
        }
        let name = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
        let entry = by_protocol
            .entry(name.to_owned())
            .or_insert_with(|| Protocol {
                protocol: Some(name.to_owned()),
                ..Protocol::default()
            });
        match p.get("port") {
            Some(Value::String(_)) => entry.named = true,
            Some(Value::Number(n)) => {
                let first = n.as_u64().and_then(|n| u16::try_from(n).ok()).unwrap_or(0);
                let last = p
                    .get("endPort")
                    .and_then(Value::as_u64)
                    .and_then(|n| u16::try_from(n).ok())
                    .unwrap_or(first);
                entry.ports.push((first, last));
            }
            _ => {}
        }
    }
    let protocols = if by_protocol.is_empty() {
        vec![Protocol::default()]
    } else {
        by_protocol.into_values().collect()
    };
    Ok(Converted {
        peers: out,
        protocols,
    })
}

fn peer(p: &Value) -> Result<Peer, Problem> {
    if let Some(block) = p.get("ipBlock").filter(|b| !b.is_null()) {
        let except = block
            .get("except")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        return Ok(Peer {
            cidr: Some(
                block
                    .get("cidr")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            ),
            not_nets: except,
            ..Peer::default()
        });
    }
    Ok(Peer {
        selector: pod_selector(p.get("podSelector"))?,
        namespace_selector: namespace_selector(p.get("namespaceSelector"))?,
        ..Peer::default()
    })
}
