//! kube-apiserver's validating admission policy plugin, as it judges one request by one policy
//! (k8s.io/apiserver `pkg/admission/plugin/policy/validating`, and the ValidatingAdmissionPolicy
//! docs): the request must fall in `matchConstraints` (its `resourceRules`, and a
//! `namespaceSelector` of `kubernetes.io/metadata.name`, the only form calicoctl-win writes),
//! then every `matchConditions` expression must be true ("If any match condition evaluates to
//! false, the policy is skipped"), then each `validations` expression in order: the first false
//! denies with its message. The CEL is run by the `cel` crate, not read by us.

use serde_json::Value;
use std::collections::HashMap;

/// What a policy made of a request.
#[derive(Debug, PartialEq, Eq)]
pub enum Judged {
    /// The policy does not apply to it.
    NotMatched,
    Admitted,
    /// Denied, with the failed validation's message.
    Denied(String),
}

/// `policy` (a ValidatingAdmissionPolicy document) on `request` (the admission request's
/// attributes as CEL's `request` sees them: operation, resource, subResource, name, namespace,
/// userInfo) creating `object`.
pub fn judge(policy: &Value, request: &Value, object: &Value) -> Judged {
    let spec = &policy["spec"];
    if !constrained(&spec["matchConstraints"], request) {
        return Judged::NotMatched;
    }
    let mut ctx = cel::Context::default();
    ctx.add_variable_from_value("request", cel_value(request));
    ctx.add_variable_from_value("object", cel_value(object));
    let holds = |expression: &str| -> bool {
        let program = cel::Program::compile(expression)
            .unwrap_or_else(|e| panic!("{expression}: does not parse: {e}"));
        match program.execute(&ctx) {
            Ok(cel::Value::Bool(b)) => b,
            other => panic!("{expression}: {other:?}"),
        }
    };
    let list = |key: &str| spec[key].as_array().cloned().unwrap_or_default();
    for c in list("matchConditions") {
        if !holds(c["expression"].as_str().expect("expression")) {
            return Judged::NotMatched;
        }
    }
    for v in list("validations") {
        if !holds(v["expression"].as_str().expect("expression")) {
            return Judged::Denied(v["message"].as_str().unwrap_or_default().to_owned());
        }
    }
    Judged::Admitted
}

/// Whether `request` falls in the policy's `matchConstraints`.
fn constrained(constraints: &Value, request: &Value) -> bool {
    let has = |list: &Value, item: &str| {
        list.as_array()
            .is_some_and(|l| l.iter().any(|i| i == item || i == "*"))
    };
    let resource = match request["subResource"].as_str() {
        Some(sub) if !sub.is_empty() => format!("{}/{sub}", request["resource"]["resource"]),
        _ => request["resource"]["resource"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    }
    .replace('"', "");
    let rule = constraints["resourceRules"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|r| {
            has(
                &r["operations"],
                request["operation"].as_str().unwrap_or_default(),
            ) && has(&r["resources"], &resource)
                && has(
                    &r["apiGroups"],
                    request["resource"]["group"].as_str().unwrap_or_default(),
                )
        });
    let name = "kubernetes.io/metadata.name";
    let namespace = match constraints["namespaceSelector"]["matchLabels"][name].as_str() {
        Some(ns) => request["namespace"].as_str() == Some(ns),
        None => true,
    };
    rule && namespace
}

/// A JSON value as CEL sees it: whole numbers as int, as the API server's schema types them.
fn cel_value(v: &Value) -> cel::Value {
    match v {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => n.as_i64().map_or_else(
            || cel::Value::Float(n.as_f64().unwrap_or_default()),
            cel::Value::Int,
        ),
        Value::String(s) => s.as_str().into(),
        Value::Array(a) => a.iter().map(cel_value).collect::<Vec<_>>().into(),
        // A null field is an absent one to the API server's typed object (`has()` false).
        Value::Object(o) => o
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| (k.clone(), cel_value(v)))
            .collect::<HashMap<_, _>>()
            .into(),
    }
}
