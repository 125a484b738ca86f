//! Who refused a call with 403 Forbidden, judged from the message of the Status the API
//! server sent: its authorizer (RBAC: a right the identity lacks) or an admission webhook (a
//! policy that denied a request the identity may make). Both come with reason `Forbidden`;
//! only the message tells them apart (kubernetes, staging/src/k8s.io/apiserver/pkg/):
//! - RBAC: `endpoints/handlers/responsewriters/errors.go`, `forbiddenMessage`, wrapped by
//!   `apierrors.NewForbidden` (`RESOURCE "NAME" is forbidden: `): `User "X" cannot VERB
//!   resource "R" in API group "G" in the namespace "N"`, or `... at the cluster scope` for a
//!   request that names no namespace (the fake API server's `forbidden` says it so);
//! - a webhook: `admission/plugin/webhook/errors/statuserror.go`, `ToStatusErr`: `admission
//!   webhook "W" denied the request: WHAT IT SAID` (or `... without explanation`), after the
//!   same `RESOURCE "NAME" is forbidden: ` in its current form, alone in its first (2017).

/// Who refused a 403.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Forbidden {
    /// The authorizer: no rule grants the identity this.
    MissingRight(MissingRight),
    /// An admission webhook denied the request, saying `said`.
    Webhook { name: String, said: String },
    /// A ValidatingAdmissionPolicy whose validation sets reason Forbidden denied it, saying
    /// `said` (`admission/plugin/policy/validating/dispatcher.go`: `ValidatingAdmissionPolicy
    /// 'P' with binding 'B' denied request: MESSAGE`, or without the binding, wrapped by
    /// `admission.NewForbidden`; the default reason, Invalid, is a 422, no 403).
    Policy { name: String, said: String },
}

/// The most of what an admission webhook or policy said kept in a hint: it is the cluster's
/// text, of any length (the Status message is read up to the answer's cap), and the error's
/// cause keeps it whole.
const SAID_CAP: usize = 500;

/// `said` on one line, control characters as blanks, at most `SAID_CAP` bytes (cut at a
/// character's boundary, `...` after).
fn clean(said: &str) -> String {
    let one: String = said
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if one.len() <= SAID_CAP {
        return one;
    }
    let mut end = SAID_CAP;
    while !one.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &one[..end])
}

/// The right a request lacked, as the authorizer's message names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MissingRight {
    pub user: String,
    pub verb: String,
    /// The resource, with its subresource (`pods/proxy`).
    pub resource: String,
    /// The API group, empty for the core group.
    pub group: String,
    /// `None` at the cluster scope.
    pub namespace: Option<String>,
}

impl MissingRight {
    /// `delete namespaces at the cluster scope`, `create networkpolicies (API group
    /// networking.k8s.io) in namespace N`.
    pub fn text(&self) -> String {
        let group = match self.group.as_str() {
            "" => String::new(),
            g => format!(" (API group {g})"),
        };
        let scope = match &self.namespace {
            Some(ns) => format!("in namespace {ns}"),
            None => "at the cluster scope".to_owned(),
        };
        format!("{} {}{group} {scope}", self.verb, self.resource)
    }

    /// The `kubectl auth can-i` that asks for this right as the identity refused (`--as`: an
    /// administrator asking for themselves would mostly be told yes). kubectl reads
    /// `TYPE/NAME` as a resource's name, so a subresource goes in `--subresource`
    /// (kubectl's `pkg/cmd/auth/cani.go`).
    pub fn can_i(&self) -> String {
        let (resource, sub) = match self.resource.split_once('/') {
            Some((r, sub)) => (r, format!(" --subresource {sub}")),
            None => (self.resource.as_str(), String::new()),
        };
        let resource = match self.group.as_str() {
            "" => resource.to_owned(),
            g => format!("{resource}.{g}"),
        };
        let scope = match &self.namespace {
            Some(ns) => format!(" -n {ns}"),
            None => String::new(),
        };
        format!(
            "kubectl auth can-i {} {resource}{sub}{scope} --as {}",
            self.verb, self.user
        )
    }
}

/// Who refused, from a 403's message; `None` for another refusal (a quota, Pod Security
/// admission, a namespace being deleted) or a message in neither form.
pub fn judge(message: &str) -> Option<Forbidden> {
    const WEBHOOK: &str = "admission webhook \"";
    // What follows `NewForbidden`'s prefix: the authorizer's or the webhook's own words.
    let said = match message.starts_with(WEBHOOK) {
        true => message,
        false => message.split_once("forbidden: ")?.1,
    };
    if let Some(rest) = said.strip_prefix(WEBHOOK) {
        let (name, rest) = rest.split_once("\" denied the request")?;
        let said = rest.strip_prefix(": ").unwrap_or(rest.trim_start());
        return Some(Forbidden::Webhook {
            name: name.to_owned(),
            said: clean(said),
        });
    }
    if let Some(rest) = said.strip_prefix("ValidatingAdmissionPolicy '") {
        let (name, rest) = rest.split_once('\'')?;
        let (_, said) = rest.split_once("denied request: ")?;
        return Some(Forbidden::Policy {
            name: name.to_owned(),
            said: clean(said),
        });
    }
    let rest = said.strip_prefix("User \"")?;
    let (user, rest) = rest.split_once("\" cannot ")?;
    let (verb, rest) = rest.split_once(" resource \"")?;
    let (resource, rest) = rest.split_once("\" in API group \"")?;
    let (group, rest) = rest.split_once('"')?;
    let namespace = match rest.strip_prefix(" in the namespace \"") {
        Some(ns) => Some(ns.split_once('"')?.0.to_owned()),
        None if rest.starts_with(" at the cluster scope") => None,
        None => return None,
    };
    Some(Forbidden::MissingRight(MissingRight {
        user: user.to_owned(),
        verb: verb.to_owned(),
        resource: resource.to_owned(),
        group: group.to_owned(),
        namespace,
    }))
}

/// The hint of an admission webhook's or policy's denial, from a 403's message: the
/// identity's rights are not the cause.
pub fn admission_hint(message: &str) -> Option<String> {
    match judge(message)? {
        Forbidden::Webhook { name, .. } => Some(webhook_hint(&name)),
        Forbidden::Policy { name, .. } => Some(policy_hint(&name)),
        Forbidden::MissingRight(_) => None,
    }
}

/// What to do about a webhook's denial: the identity's rights are not the cause.
pub fn webhook_hint(name: &str) -> String {
    format!(
        "admission webhook \"{name}\" denied the request, not a missing right (the identity may make it): see what it said, and which webhook configuration names it ('kubectl get validatingwebhookconfigurations,mutatingwebhookconfigurations'); its owner can admit the request"
    )
}

/// What to do about a ValidatingAdmissionPolicy's denial: as a webhook's.
pub fn policy_hint(name: &str) -> String {
    format!(
        "ValidatingAdmissionPolicy '{name}' denied the request, not a missing right (the identity may make it): see what it said, and the policy and its bindings ('kubectl get validatingadmissionpolicy {name}', 'kubectl get validatingadmissionpolicybindings'); its owner can admit the request"
    )
}

/// Whether a 403 in neither form is one of the refusals admission makes of a request the
/// identity may make (kubernetes, staging/src/k8s.io/apiserver and plugin/pkg/admission):
/// Pod Security admission's `violates PodSecurity`, a ResourceQuota's `exceeded quota`, and
/// NamespaceLifecycle's `because it is being terminated`.
pub fn other_admission(message: &str) -> bool {
    [
        "violates PodSecurity",
        "exceeded quota",
        "because it is being terminated",
    ]
    .iter()
    .any(|w| message.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The authorizer's message at both scopes and a webhook's are told apart; another 403
    /// (Pod Security admission's) is neither.
    #[test]
    fn rbac_and_a_webhook_are_told_apart_by_the_status_message() {
        let cluster = "namespaces \"v-1\" is forbidden: User \"system:serviceaccount:kube-system:v\" cannot delete resource \"namespaces\" in API group \"\" at the cluster scope";
        let Some(Forbidden::MissingRight(r)) = judge(cluster) else {
            panic!("{:?}", judge(cluster))
        };
        assert_eq!(r.user, "system:serviceaccount:kube-system:v");
        assert_eq!(r.text(), "delete namespaces at the cluster scope");
        assert_eq!(
            r.can_i(),
            "kubectl auth can-i delete namespaces --as system:serviceaccount:kube-system:v"
        );
        let namespaced = "networkpolicies.networking.k8s.io is forbidden: User \"u\" cannot create resource \"networkpolicies\" in API group \"networking.k8s.io\" in the namespace \"ns\"";
        let Some(Forbidden::MissingRight(r)) = judge(namespaced) else {
            panic!("{:?}", judge(namespaced))
        };
        assert_eq!(
            r.text(),
            "create networkpolicies (API group networking.k8s.io) in namespace ns"
        );
        assert_eq!(
            r.can_i(),
            "kubectl auth can-i create networkpolicies.networking.k8s.io -n ns --as u"
        );
        let webhook = "namespaces \"v-1\" is forbidden: admission webhook \"deny.example.com\" denied the request: User \"u\" cannot delete it";
        assert_eq!(
            judge(webhook),
            Some(Forbidden::Webhook {
                name: "deny.example.com".into(),
                said: "User \"u\" cannot delete it".into()
            })
        );
        let silent = "pods \"Unknown\" is forbidden: admission webhook \"w\" denied the request without explanation";
        assert_eq!(
            judge(silent),
            Some(Forbidden::Webhook {
                name: "w".into(),
                said: "without explanation".into()
            })
        );
        let first_form = "admission webhook \"w\" denied the request: no";
        assert!(matches!(judge(first_form), Some(Forbidden::Webhook { .. })));
        let pod_security =
            "pods \"p\" is forbidden: violates PodSecurity \"restricted:latest\": privileged";
        assert_eq!(judge(pod_security), None);
        assert!(other_admission(pod_security));
        let policy = "serviceaccounts \"calico-node\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: only its own Node";
        assert_eq!(
            judge(policy),
            Some(Forbidden::Policy {
                name: "p".into(),
                said: "only its own Node".into()
            })
        );
        let unbound = "x is forbidden: ValidatingAdmissionPolicy 'p' denied request: no";
        assert!(matches!(judge(unbound), Some(Forbidden::Policy { .. })));
    }

    /// A subresource goes in `--subresource` (kubectl reads `pods/exec` as the pod `exec`).
    #[test]
    fn can_i_names_a_subresource_apart() {
        let exec = "pods \"p\" is forbidden: User \"u\" cannot create resource \"pods/exec\" in API group \"\" in the namespace \"n\"";
        let Some(Forbidden::MissingRight(r)) = judge(exec) else {
            panic!("{:?}", judge(exec))
        };
        assert_eq!(
            r.can_i(),
            "kubectl auth can-i create pods --subresource exec -n n --as u"
        );
    }

    /// What a webhook said is kept on one line and capped; the cut is at a character's
    /// boundary.
    #[test]
    fn what_a_webhook_said_is_one_capped_line() {
        let long = format!(
            "admission webhook \"w\" denied the request: a\nb\r{}",
            "é".repeat(400)
        );
        let Some(Forbidden::Webhook { said, .. }) = judge(&long) else {
            panic!("{:?}", judge(&long))
        };
        assert!(said.starts_with("a b "), "{said}");
        assert!(
            said.ends_with("...") && said.len() <= SAID_CAP + 3,
            "{said}"
        );
    }
}
