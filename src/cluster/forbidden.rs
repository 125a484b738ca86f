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

    /// The `kubectl auth can-i` that asks for this right.
    pub fn can_i(&self) -> String {
        let resource = match self.group.as_str() {
            "" => self.resource.clone(),
            g => match self.resource.split_once('/') {
                Some((r, sub)) => format!("{r}.{g}/{sub}"),
                None => format!("{}.{g}", self.resource),
            },
        };
        match &self.namespace {
            Some(ns) => format!("kubectl auth can-i {} {resource} -n {ns}", self.verb),
            None => format!("kubectl auth can-i {} {resource}", self.verb),
        }
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
            said: said.to_owned(),
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

/// The webhook that denied a request, from a 403's message.
pub fn webhook(message: &str) -> Option<String> {
    match judge(message)? {
        Forbidden::Webhook { name, .. } => Some(name),
        Forbidden::MissingRight(_) => None,
    }
}

/// What to do about a webhook's denial: the identity's rights are not the cause.
pub fn webhook_hint(name: &str) -> String {
    format!(
        "admission webhook \"{name}\" denied the request, not a missing right (the identity may make it): see what it said, and which webhook configuration names it ('kubectl get validatingwebhookconfigurations,mutatingwebhookconfigurations'); its owner can admit the request"
    )
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
        assert_eq!(r.can_i(), "kubectl auth can-i delete namespaces");
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
            "kubectl auth can-i create networkpolicies.networking.k8s.io -n ns"
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
    }
}
