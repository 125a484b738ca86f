//! A list's `fieldSelector`, as kube-apiserver reads it (Kubernetes v1.33).
//!
//! Terms are `field=value`, `field==value` or `field!=value`, joined by `,` (and)
//! (`staging/src/k8s.io/apimachinery/pkg/fields/selector.go`, `ParseSelector`). Each field is
//! first converted by the kind's field label conversion, and a field the kind does not select
//! on is a 400 BadRequest (`staging/src/k8s.io/apiserver/pkg/endpoints/handlers/get.go`,
//! `ListResource`: `opts.FieldSelector.Transform(fn)` -> `errors.NewBadRequest`). Every kind
//! selects on `metadata.name`, and a namespaced one on `metadata.namespace`
//! (`staging/src/k8s.io/apimachinery/pkg/runtime/conversion.go`,
//! `DefaultMetaV1FieldSelectorConversion`; `staging/src/k8s.io/apiserver/pkg/registry/generic/
//! matcher.go`, `ObjectMetaFieldsSet`; a custom resource's likewise,
//! `staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/conversion/converter.go`,
//! `crConverter.ConvertFieldLabel`); pods, nodes and secrets select on more, and Nodes not on
//! `metadata.namespace` (`pkg/apis/core/v1/conversion.go`, `AddFieldLabelConversionsForPod`,
//! `…ForNode`, `…ForSecret`; the values: `pkg/registry/core/pod/strategy.go`,
//! `ToSelectableFields`). Other kinds with fields of their own (events, namespaces …) are not
//! listed by selector here and are given the default set; a cluster-scoped kind is given
//! `metadata.name` alone, as a cluster-scoped custom resource and a Node are (a built-in one
//! of the default conversion would take `metadata.namespace` too, which nothing asks).

use serde_json::Value;

/// One term: the field, whether it must equal (`true`) or differ, and the value.
pub struct Term {
    field: String,
    equal: bool,
    value: String,
}

/// The fields a kind of `plural` selects on besides `metadata.name`.
fn own_fields(plural: &str, namespaced: bool) -> &'static [&'static str] {
    match (plural, namespaced) {
        ("pods", _) => &[
            "metadata.namespace",
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
        ],
        ("nodes", _) => &["spec.unschedulable"],
        ("secrets", _) => &["metadata.namespace", "type"],
        (_, true) => &["metadata.namespace"],
        (_, false) => &[],
    }
}

/// The terms of a decoded fieldSelector, or the BadRequest message for a field the kind does
/// not select on or a term that is none.
pub fn terms(selector: &str, plural: &str, namespaced: bool) -> Result<Vec<Term>, String> {
    let mut out = Vec::new();
    for t in selector.split(',').filter(|t| !t.is_empty()) {
        let (field, equal, value) = if let Some((f, v)) = t.split_once("!=") {
            (f, false, v)
        } else if let Some((f, v)) = t.split_once("==").or_else(|| t.split_once('=')) {
            (f, true, v)
        } else {
            return Err(format!(
                "invalid selector: '{selector}'; can't understand '{t}'"
            ));
        };
        // The old name pods still answer to (`spec.host`).
        let field = match (plural, field) {
            ("pods", "spec.host") => "spec.nodeName",
            _ => field,
        };
        if field != "metadata.name" && !own_fields(plural, namespaced).contains(&field) {
            return Err(match plural {
                "pods" | "nodes" | "secrets" => format!("field label not supported: {field}"),
                _ => format!(
                    "{field:?} is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
                ),
            });
        }
        out.push(Term {
            field: field.to_owned(),
            equal,
            value: value.to_owned(),
        });
    }
    Ok(out)
}

/// A field's value as the kind's field set has it (a missing one is empty).
fn value(o: &Value, plural: &str, field: &str) -> String {
    match (plural, field) {
        ("pods", "spec.hostNetwork") => o["spec"]["hostNetwork"]
            .as_bool()
            .unwrap_or(false)
            .to_string(),
        ("pods", "status.podIP") => o["status"]["podIPs"][0]["ip"]
            .as_str()
            .or(o["status"]["podIP"].as_str())
            .unwrap_or_default()
            .to_owned(),
        ("nodes", "spec.unschedulable") => o["spec"]["unschedulable"]
            .as_bool()
            .unwrap_or(false)
            .to_string(),
        _ => field
            .split('.')
            .fold(o, |v, k| &v[k])
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    }
}

/// Whether an object of `plural` matches every term.
pub fn matches(terms: &[Term], plural: &str, o: &Value) -> bool {
    terms
        .iter()
        .all(|t| (value(o, plural, &t.field) == t.value) == t.equal)
}

/// The name a list asks for by `metadata.name=NAME` (or `==`), which kube-apiserver takes as
/// the request's name, so RBAC judges it by `resourceNames`
/// (`staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go`, `NewRequestInfo`:
/// `opts.FieldSelector.RequiresExactMatch("metadata.name")`, when it is a valid path segment).
pub fn exact_name(selector: &str) -> Option<String> {
    selector
        .split(',')
        .filter(|t| !t.contains("!="))
        .filter_map(|t| t.split_once("==").or_else(|| t.split_once('=')))
        .find(|(f, _)| *f == "metadata.name")
        .map(|(_, v)| v.to_owned())
        .filter(|v| !v.is_empty() && v != "." && v != ".." && !v.contains(['/', '%']))
}
