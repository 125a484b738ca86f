//! What each policy costs Felix on Windows (`felix` renders it), and the findings that cut it
//! (docs/commands/lint.md states the model and its limits).

use serde::Serialize;
use serde_json::{Value, json};

use super::felix::Renderer;
use super::model::{self, Direction, Policy, Rule};
use super::render;
use super::source::{PolicyError, Source};

/// A policy's row of the report: the Windows endpoints it applies to, the HNS ACLs Felix
/// programs for it over all of them, and the local × remote address pairs inside those ACLs
/// (the matching work: an estimate).
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    pub tier: String,
    pub applies_to: u64,
    pub hns_acls: u64,
    pub address_pairs: u64,
}

/// The two figures, for a finding's before and after.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct Figures {
    pub hns_acls: u64,
    pub address_pairs: u64,
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
    pub before: Figures,
    pub after: Figures,
}

/// What to do, and the policies to apply instead where a rewrite keeps the same connectivity.
#[derive(Debug, Clone, Serialize)]
pub struct Suggestion {
    pub text: String,
    pub rewrite: Option<Vec<Value>>,
}

/// The policy's row, from what it renders on one endpoint, the Windows endpoints it applies to
/// and those Felix programs it on (`programmed`), which its figures count.
pub fn row(p: &Policy, rendered: &render::Rendered, applies_to: u64, programmed: u64) -> Row {
    Row {
        api_version: p.api_version.clone(),
        kind: p.kind.clone(),
        namespace: p.namespace.clone(),
        name: p.name.clone(),
        tier: p.tier.clone(),
        applies_to,
        hns_acls: programmed.saturating_mul(rendered.acls),
        address_pairs: programmed.saturating_mul(rendered.pairs),
    }
}

impl Row {
    fn figures(&self) -> Figures {
        Figures {
            hns_acls: self.hns_acls,
            address_pairs: self.address_pairs,
        }
    }
}

/// The findings for one policy, with `before` its row.
pub fn findings(r: &mut Renderer, p: &Policy, before: &Row) -> Result<Vec<Finding>, PolicyError> {
    let mut out = Vec::new();
    if before.applies_to == 0 {
        return Ok(out);
    }
    let whole = before.applies_to == r.eps.windows_in(p.namespace.as_deref());
    for rule in p.rules.iter().filter(|x| p.types.contains(&x.direction)) {
        let finding = |code, message: String, suggestion, after| Finding {
            code,
            api_version: p.api_version.clone(),
            kind: p.kind.clone(),
            namespace: p.namespace.clone(),
            name: p.name.clone(),
            rule: rule.name(),
            message,
            suggestion,
            before: before.figures(),
            after,
        };
        if let Some(why) = &rule.skipped {
            out.push(finding(
                "skipped-on-windows",
                format!(
                    "Felix on Windows leaves {} out of the {} Windows endpoints this policy applies to: {why}",
                    rule.name(),
                    before.applies_to
                ),
                Suggestion {
                    text: "express the rule with positive matches only (selector, nets, ports, protocol), or accept that Windows endpoints do not get it".into(),
                    rewrite: None,
                },
                before.figures(),
            ));
        } else if whole
            && rule.source.own_selector.is_some()
            && rule.destination.own_selector.is_some()
        {
            let (suggestion, after) = split(r, p, rule, before)?;
            out.push(finding(
                "source-and-destination-selectors",
                format!(
                    "{} has a source and a destination selector and the policy applies to every Windows endpoint in its scope ({}): each of them gets an ACL holding both selectors' addresses, though only endpoints its {} selector matches can use it",
                    rule.name(),
                    before.applies_to,
                    local_side(rule.direction)
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
    renderer: &mut Renderer,
    p: &Policy,
    r: &Rule,
    before: &Row,
) -> Result<(Suggestion, Figures), PolicyError> {
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
    let in_words = |why: String| {
        let text = format!("{text} (not written out: {why})");
        let rewrite = None;
        Ok((Suggestion { text, rewrite }, before.figures()))
    };
    let (Some(object), true, true) = (&p.object, r.local().plain_selector, same_action) else {
        return in_words(format!(
            "the {side} uses more than a selector, or the rules' actions differ, so their order matters"
        ));
    };
    let (rest, moved) = rewrite(object, p, r);
    let mut after = Figures::default();
    for o in [&rest, &moved] {
        // A rewrite that would not be a valid policy (its joined selector past the selector
        // cap, say) stays a suggestion in words: it is nobody's input, so never an error.
        let parsed = Source::of(o, &p.api_version, &p.kind, "the rewrite")
            .and_then(|src| model::calico(&src, o.clone()));
        let policy = match parsed {
            Ok(policy) => policy,
            Err(PolicyError::Invalid { problem, .. }) => {
                return in_words(format!(
                    "the rewritten policy would not be valid: {problem}"
                ));
            }
            Err(other) => {
                return in_words(format!("the rewritten policy would not be valid: {other}"));
            }
        };
        let rendered = render::policy(renderer, &policy);
        let applies_to = renderer.matched(&policy.applies).windows;
        let row = row(&policy, &rendered, applies_to, applies_to);
        after.hns_acls = after.hns_acls.saturating_add(row.hns_acls);
        after.address_pairs = after.address_pairs.saturating_add(row.address_pairs);
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
    let side = local_side(r.direction);
    let mut meta = json!({ "name": p.name });
    if let Some(ns) = &p.namespace {
        meta["namespace"] = json!(ns);
    }
    let spec = object.get("spec").cloned().unwrap_or_else(|| json!({}));
    let word = |d: &Direction| match d {
        Direction::Ingress => "Ingress",
        Direction::Egress => "Egress",
    };
    let types: Vec<&str> = p.types.iter().map(word).collect();
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
    moved_spec["types"] = json!([word(&r.direction)]);
    moved_spec[key] = json!([rule]);
    let mut moved_meta = meta.clone();
    moved_meta["name"] = json!(format!("{}-{}-{}", p.name, key, r.index));
    let head = |meta: Value, spec: Value| json!({ "apiVersion": p.api_version, "kind": p.kind, "metadata": meta, "spec": spec });
    (head(meta, rest_spec), head(moved_meta, moved_spec))
}
