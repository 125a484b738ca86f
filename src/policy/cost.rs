//! What each policy costs Felix on Windows, and the findings that cut it
//! (docs/commands/lint.md states the model and its limits).
//!
//! Felix renders every policy once per Windows endpoint it applies to
//! (felix/dataplane/windows/policysets/policysets.go, v3.31.7: `GetPolicySetRules` per endpoint,
//! `protoRuleToHnsRules` per rule), with each selector of a rule turned into the addresses of
//! the IP set it names; IP sets hold every matching endpoint's address, Linux pods included.
//! The estimate counts, per endpoint, each rule once per pair of a source and a destination
//! address it is expanded into.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::{Value, json};

use super::endpoints::{Endpoints, Matched};
use super::model::{self, Direction, Entity, Policy, Rule};
use super::source::{PolicyError, Source};
use crate::selector::Node;

/// Each distinct selector's matches, computed once.
#[derive(Default)]
pub struct Cache(HashMap<Node, Matched>);

impl Cache {
    fn matched(&mut self, eps: &Endpoints, sel: &Node) -> Matched {
        if let Some(m) = self.0.get(sel) {
            return *m;
        }
        let m = eps.matched(sel);
        self.0.insert(sel.clone(), m);
        m
    }
}

/// A policy's row of the report.
#[derive(Debug, Clone, Serialize)]
pub struct Estimate {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    pub applies_to: u64,
    pub estimated_rules: u64,
}

/// A finding: what costs more than it needs to, or does not do on Windows what it says.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub code: &'static str,
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    pub rule: String,
    pub message: String,
    pub suggestion: Suggestion,
    pub estimated_rules: u64,
    pub estimated_rules_after: u64,
}

/// What to do, and the policies to apply instead where a rewrite keeps the same connectivity.
#[derive(Debug, Clone, Serialize)]
pub struct Suggestion {
    pub text: String,
    pub rewrite: Option<Vec<Value>>,
}

fn addresses(cache: &mut Cache, eps: &Endpoints, e: &Entity) -> u64 {
    let selected = e.selector.as_ref().map_or(0, |s| cache.matched(eps, s).all);
    selected.saturating_add(e.nets as u64)
}

/// The rules one Calico rule renders per endpoint: one per pair of addresses.
fn rule_cost(cache: &mut Cache, eps: &Endpoints, r: &Rule) -> u64 {
    if r.skipped.is_some() {
        return 0;
    }
    let src = addresses(cache, eps, &r.source).max(1);
    let dst = addresses(cache, eps, &r.destination).max(1);
    src.saturating_mul(dst).saturating_mul(r.copies)
}

/// The policy's Windows endpoints and its estimated HNS rules across them.
pub fn estimate(cache: &mut Cache, eps: &Endpoints, p: &Policy) -> Estimate {
    let applies_to = cache.matched(eps, &p.applies).windows;
    let per_endpoint = p
        .rules
        .iter()
        .filter(|r| p.types.contains(&r.direction))
        .fold(0u64, |sum, r| sum.saturating_add(rule_cost(cache, eps, r)));
    Estimate {
        api_version: p.api_version.clone(),
        kind: p.kind.clone(),
        namespace: p.namespace.clone(),
        name: p.name.clone(),
        applies_to,
        estimated_rules: applies_to.saturating_mul(per_endpoint),
    }
}

/// The findings for one policy, with `before` its estimate.
pub fn findings(
    cache: &mut Cache,
    eps: &Endpoints,
    p: &Policy,
    before: &Estimate,
) -> Result<Vec<Finding>, PolicyError> {
    let mut out = Vec::new();
    if before.applies_to == 0 {
        return Ok(out);
    }
    let whole = before.applies_to == eps.windows_in(p.namespace.as_deref());
    for r in p.rules.iter().filter(|r| p.types.contains(&r.direction)) {
        let finding = |code, message: String, suggestion, after| Finding {
            code,
            api_version: p.api_version.clone(),
            kind: p.kind.clone(),
            namespace: p.namespace.clone(),
            name: p.name.clone(),
            rule: r.name(),
            message,
            suggestion,
            estimated_rules: before.estimated_rules,
            estimated_rules_after: after,
        };
        if let Some(why) = &r.skipped {
            out.push(finding(
                "skipped-on-windows",
                format!(
                    "Felix on Windows leaves {} out of the {} Windows endpoints this policy applies to: {why}",
                    r.name(),
                    before.applies_to
                ),
                Suggestion {
                    text: "express the rule with positive matches only (selector, nets, ports, protocol), or accept that Windows endpoints do not get it".into(),
                    rewrite: None,
                },
                before.estimated_rules,
            ));
        } else if whole && r.source.own_selector.is_some() && r.destination.own_selector.is_some() {
            let (suggestion, after) = split(cache, eps, p, r, before)?;
            out.push(finding(
                "source-and-destination-selectors",
                format!(
                    "{} has a source and a destination selector and the policy applies to every Windows endpoint in its scope ({}): each of them gets the rule expanded by both selectors' addresses, though only endpoints its {} selector matches can use it",
                    r.name(),
                    before.applies_to,
                    local_side(r.direction)
                ),
                suggestion,
                after,
            ));
        }
    }
    Ok(out)
}

fn local_side(d: Direction) -> &'static str {
    match d {
        Direction::Ingress => "destination",
        Direction::Egress => "source",
    }
}

/// Moves the rule into a policy whose selector is the rule's local selector. Exact when that
/// selector is a plain one and every rule of the direction has the same action (so their order
/// does not matter); the rest of the policy stays, with its types written out, so the
/// endpoints it selects keep the default deny it gives them.
fn split(
    cache: &mut Cache,
    eps: &Endpoints,
    p: &Policy,
    r: &Rule,
    before: &Estimate,
) -> Result<(Suggestion, u64), PolicyError> {
    let side = local_side(r.direction);
    let text = format!(
        "select the endpoints by the rule's {side} selector in the policy itself: move {} into a policy of its own whose selector is that selector, and drop it from the rule",
        r.name()
    );
    let same_action = p
        .rules
        .iter()
        .filter(|o| o.direction == r.direction)
        .all(|o| o.action.eq_ignore_ascii_case(&r.action));
    let (Some(object), true, true) = (&p.object, r.local().plain_selector, same_action) else {
        let text = format!(
            "{text} (not written out: the {side} uses more than a selector, or the rules' actions differ, so their order matters)"
        );
        return Ok((
            Suggestion {
                text,
                rewrite: None,
            },
            before.estimated_rules,
        ));
    };
    let (rest, moved) = rewrite(object, p, r);
    let mut after = 0u64;
    for o in [&rest, &moved] {
        // A rewrite that would not be a valid policy (its joined selector past the selector
        // cap, say) stays a suggestion in words: it is nobody's input, so never an error.
        let parsed = Source::of(o, &p.api_version, &p.kind, "the rewrite")
            .and_then(|src| model::calico(&src, o.clone()));
        let policy = match parsed {
            Ok(policy) => policy,
            Err(e) => {
                let why = match e {
                    PolicyError::Invalid { problem, .. } => problem,
                    other => other.to_string(),
                };
                return Ok((
                    Suggestion {
                        text: format!(
                            "{text} (not written out: the rewritten policy would not be valid: {why})"
                        ),
                        rewrite: None,
                    },
                    before.estimated_rules,
                ));
            }
        };
        after = after.saturating_add(estimate(cache, eps, &policy).estimated_rules);
    }
    let text = format!(
        "{text}. The first policy below is the original without the rule (it keeps its types, so the endpoints it selects keep their default deny; delete it if another policy isolates them), the second holds the rule"
    );
    Ok((
        Suggestion {
            text,
            rewrite: Some(vec![rest, moved]),
        },
        after,
    ))
}

fn rewrite(object: &Value, p: &Policy, r: &Rule) -> (Value, Value) {
    let key = r.direction.key();
    let side = match r.direction {
        Direction::Ingress => "destination",
        Direction::Egress => "source",
    };
    let mut meta = json!({ "name": p.name });
    if let Some(ns) = &p.namespace {
        meta["namespace"] = json!(ns);
    }
    let spec = object.get("spec").cloned().unwrap_or_else(|| json!({}));
    let types: Vec<&str> = p
        .types
        .iter()
        .map(|d| match d {
            Direction::Ingress => "Ingress",
            Direction::Egress => "Egress",
        })
        .collect();
    let mut rest_spec = spec.clone();
    if let Some(list) = rest_spec.get_mut(key).and_then(Value::as_array_mut) {
        list.remove(r.index);
    }
    rest_spec["types"] = json!(types);
    let mut rule = spec[key][r.index].clone();
    let local = rule[side]["selector"].as_str().unwrap_or("").to_owned();
    if let Some(o) = rule[side].as_object_mut() {
        o.remove("selector");
        if o.is_empty() {
            rule.as_object_mut().map(|r| r.remove(side));
        }
    }
    let own = spec
        .get("selector")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim();
    let selector = if own.is_empty() || own == "all()" {
        local
    } else {
        format!("({own}) && ({local})")
    };
    let mut moved_spec = spec.clone();
    if let Some(o) = moved_spec.as_object_mut() {
        o.remove("ingress");
        o.remove("egress");
    }
    moved_spec["selector"] = json!(selector);
    moved_spec["types"] = json!([if r.direction == Direction::Ingress {
        "Ingress"
    } else {
        "Egress"
    }]);
    moved_spec[key] = json!([rule]);
    let mut moved_meta = meta.clone();
    moved_meta["name"] = json!(format!("{}-{}-{}", p.name, key, r.index));
    let head = |meta: Value, spec: Value| json!({ "apiVersion": p.api_version, "kind": p.kind, "metadata": meta, "spec": spec });
    (head(meta, rest_spec), head(moved_meta, moved_spec))
}
