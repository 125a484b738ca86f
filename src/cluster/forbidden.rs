//! Who refused a call with 403 Forbidden, told from the Status message alone (both have reason
//! `Forbidden`; kubernetes, staging/src/k8s.io/apiserver/pkg/): the authorizer
//! (`endpoints/handlers/responsewriters/errors.go`, `forbiddenMessage`: `User "X" cannot VERB
//! resource "R" in API group "G" in the namespace "N"` or `... at the cluster scope`) or an
//! admission webhook (`admission/plugin/webhook/errors/statuserror.go`, `ToStatusErr`:
//! `admission webhook "W" denied the request: ...`), after `RESOURCE "NAME" is forbidden: `.

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

/// The most of what an admission webhook or policy said kept in a hint (the cluster's text,
/// of any length; the error's cause keeps it whole).
const SAID_CAP: usize = 500;

/// Whether `c` breaks a line: a control character, or Unicode's line and paragraph
/// separators (U+2028, U+2029), which editors and terminals also start a new line at.
fn breaks_line(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}')
}

/// Whether `c` is a bidi control (Unicode's `Bidi_Control`: the marks U+061C, U+200E,
/// U+200F, the embeddings and overrides U+202A..U+202E, the isolates U+2066..U+2069), which
/// can show text in another order than it is read.
pub(crate) fn bidi_control(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `said` on one line (line breaks as blanks), bidi controls dropped, capped at `SAID_CAP`
/// bytes on a character's boundary, `...` after.
fn clean(said: &str) -> String {
    let one: String = said
        .chars()
        .filter(|c| !bidi_control(*c))
        .map(|c| if breaks_line(c) { ' ' } else { c })
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
    /// The namespace a refusal of one namespace object (`namespaces/NAME`, its `status` or
    /// `finalize`) names: kube-apiserver judges it in the namespace NAME (kubernetes,
    /// staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go `NewRequestInfo`).
    fn namespace_object(&self) -> Option<&str> {
        let core_namespaces =
            self.group.is_empty() && self.resource.split('/').next() == Some("namespaces");
        self.namespace.as_deref().filter(|_| core_namespaces)
    }

    /// `delete namespaces at the cluster scope`, `create networkpolicies (API group
    /// networking.k8s.io) in namespace N`, `delete namespaces N (the namespace itself: ...)`.
    pub fn text(&self) -> String {
        if let Some(ns) = self.namespace_object() {
            return format!(
                "{} {} {ns} (the namespace itself: a ClusterRoleBinding or a RoleBinding in {ns} grants it)",
                self.verb, self.resource
            );
        }
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

    /// The `kubectl auth can-i` that asks for this right as the identity refused (`--as`), a
    /// subresource in `--subresource` (kubectl reads `TYPE/NAME` as a name: `pkg/cmd/auth/
    /// cani.go`), a namespace object by its name in itself; `None` when no quoting of the user
    /// serves PowerShell and sh alike (`quoted_user`).
    pub fn can_i(&self) -> Option<String> {
        let (resource, sub) = match self.resource.split_once('/') {
            Some((r, sub)) => (r, format!(" --subresource {sub}")),
            None => (self.resource.as_str(), String::new()),
        };
        let resource = match (self.group.as_str(), self.namespace_object()) {
            (_, Some(ns)) => format!("{resource}/{ns}"),
            ("", None) => resource.to_owned(),
            (g, None) => format!("{resource}.{g}"),
        };
        // Without a namespace kubectl asks in the kubeconfig's (cani.go's `Complete`), where a
        // RoleBinding could say yes to a right needed cluster-wide; `-A` asks with none.
        let scope = match &self.namespace {
            Some(ns) => format!(" -n {ns}"),
            None => " -A".to_owned(),
        };
        Some(format!(
            "kubectl auth can-i {} {resource}{sub}{scope} --as {}",
            self.verb,
            quoted_user(&self.user)?
        ))
    }
}

/// `user` as one word that PowerShell and sh both read as itself: bare when it holds only
/// `[A-Za-z0-9:._@-]`, else in single quotes (sh: POSIX "Single-Quotes"; PowerShell:
/// about_Quoting_Rules). `None` for a quote (PowerShell's U+2018..U+201B too: no form both
/// read alike), or `%`, which kube-apiserver before v1.32 altered (k8s.io/apiserver v0.31.0
/// `responsewriters/errors.go`: `fmt.Errorf(errMsg)`).
fn quoted_user(user: &str) -> Option<String> {
    let bare = |c: char| c.is_ascii_alphanumeric() || ":._@-".contains(c);
    if !user.is_empty() && user.chars().all(bare) {
        return Some(user.to_owned());
    }
    let unquotable = |c: char| c == '\'' || c == '%' || ('\u{2018}'..='\u{201b}').contains(&c);
    match user.chars().any(unquotable) {
        true => None,
        false => Some(format!("'{user}'")),
    }
}

/// The user kube-apiserver wrote with Go's `%q` (`forbiddenMessage`: `User %q cannot ...`,
/// `strconv.Quote`) and `Forbidden`'s sanitizer then changed (`&` `<` `>` to `&amp;` `&lt;`
/// `&gt;`), read up to its closing quote, and what follows it. `%q` writes `\uXXXX` or
/// `\UXXXXXXXX` for a character outside `strconv.IsPrint`'s letters, marks, numbers,
/// punctuation, symbols and ASCII space (Go's `appendEscapedRune`): the ideographic space of a
/// Japanese full name (U+3000), a no-break space, a zero-width joiner, which an x509 CN or an
/// OIDC `name` claim can hold. `None` for the escapes of control bytes (`\n`, `\xXX`), and
/// for a character, raw or escaped, that breaks a line or is a bidi control.
fn unquote_user(s: &str) -> Option<(String, &str)> {
    let mut user = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => {
                let user = user
                    .replace("&lt;", "<")
                    .replace("&gt;", ">")
                    .replace("&amp;", "&");
                return Some((user, &s[i + 1..]));
            }
            '\\' => match chars.next()?.1 {
                e @ ('"' | '\\') => user.push(e),
                e @ ('u' | 'U') => {
                    let n = if e == 'u' { 4 } else { 8 };
                    let hex: String = (0..n).filter_map(|_| chars.next().map(|c| c.1)).collect();
                    let c = u32::from_str_radix(&hex, 16)
                        .ok()
                        .and_then(char::from_u32)?;
                    if hex.len() != n || breaks_line(c) || bidi_control(c) {
                        return None;
                    }
                    user.push(c);
                }
                _ => return None,
            },
            c if breaks_line(c) || bidi_control(c) => return None,
            c => user.push(c),
        }
    }
    None
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
    // The user is `%q`-quoted: read up to its closing quote, not to the first `" cannot `,
    // which a quote in the name (`\" cannot `) would forge.
    let (user, rest) = unquote_user(said.strip_prefix("User \"")?)?;
    let rest = rest.strip_prefix(" cannot ")?;
    let (verb, rest) = rest.split_once(" resource \"")?;
    let (resource, rest) = rest.split_once("\" in API group \"")?;
    let (group, rest) = rest.split_once('"')?;
    let namespace = match rest.strip_prefix(" in the namespace \"") {
        Some(ns) => Some(ns.split_once('"')?.0.to_owned()),
        None if rest.starts_with(" at the cluster scope") => None,
        None => return None,
    };
    Some(Forbidden::MissingRight(MissingRight {
        user,
        verb: verb.to_owned(),
        resource: resource.to_owned(),
        group: group.to_owned(),
        namespace,
    }))
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

/// Whether a 403 in neither form is admission's refusal of a request the identity may make
/// (kubernetes, staging/src/k8s.io/apiserver and plugin/pkg/admission): Pod Security's, a
/// ResourceQuota's, NamespaceLifecycle's.
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

    /// The missing right a 403's message names.
    fn right(message: &str) -> MissingRight {
        match judge(message) {
            Some(Forbidden::MissingRight(r)) => r,
            other => panic!("{other:?}"),
        }
    }

    /// The right `list pods` in `n` refused to the user written (as sent) `user`.
    fn listing(user: &str) -> MissingRight {
        right(&format!(
            "pods is forbidden: User \"{user}\" cannot list resource \"pods\" in API group \"\" in the namespace \"n\""
        ))
    }

    /// The authorizer's message at both scopes, a webhook's and a policy's are told apart;
    /// another 403 (Pod Security admission's) is neither. A webhook's with what it said is
    /// asserted by tests/cluster/verify_sweep.rs
    /// `a_sweep_denied_by_an_admission_webhook_is_the_webhooks_not_a_missing_right`.
    #[test]
    fn rbac_and_a_webhook_are_told_apart_by_the_status_message() {
        let cluster = "namespaces \"v-1\" is forbidden: User \"system:serviceaccount:kube-system:v\" cannot delete resource \"namespaces\" in API group \"\" at the cluster scope";
        let r = right(cluster);
        assert_eq!(r.user, "system:serviceaccount:kube-system:v");
        assert_eq!(r.text(), "delete namespaces at the cluster scope");
        assert_eq!(
            r.can_i().as_deref(),
            Some(
                "kubectl auth can-i delete namespaces -A --as system:serviceaccount:kube-system:v"
            )
        );
        let namespaced = "networkpolicies.networking.k8s.io is forbidden: User \"u\" cannot create resource \"networkpolicies\" in API group \"networking.k8s.io\" in the namespace \"ns\"";
        let r = right(namespaced);
        assert_eq!(
            r.text(),
            "create networkpolicies (API group networking.k8s.io) in namespace ns"
        );
        assert_eq!(
            r.can_i().as_deref(),
            Some("kubectl auth can-i create networkpolicies.networking.k8s.io -n ns --as u")
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

    /// A subresource goes in `--subresource` (kubectl reads `pods/exec` as the pod `exec`). A
    /// refusal of one namespace object is judged in that namespace (kube-apiserver's request
    /// info): the `can-i` asks for that object there. Its delete is asserted by
    /// tests/cluster/verify_sweep.rs `a_sweep_refused_by_rbac_names_the_right_it_lacks`.
    #[test]
    fn can_i_names_a_subresource_apart_and_a_namespace_object_in_itself() {
        let exec = "pods \"p\" is forbidden: User \"u\" cannot create resource \"pods/exec\" in API group \"\" in the namespace \"n\"";
        assert_eq!(
            right(exec).can_i().as_deref(),
            Some("kubectl auth can-i create pods --subresource exec -n n --as u")
        );
        let finalize = "namespaces \"v-1\" is forbidden: User \"u\" cannot update resource \"namespaces/finalize\" in API group \"\" in the namespace \"v-1\"";
        let r = right(finalize);
        assert_eq!(
            r.can_i().as_deref(),
            Some("kubectl auth can-i update namespaces/v-1 --subresource finalize -n v-1 --as u")
        );
        // Another group's `namespaces` is an ordinary namespaced resource.
        let other = "namespaces.example.com is forbidden: User \"u\" cannot list resource \"namespaces\" in API group \"example.com\" in the namespace \"n\"";
        let r = right(other);
        assert_eq!(
            r.text(),
            "list namespaces (API group example.com) in namespace n"
        );
    }

    /// A user name of other characters than `[A-Za-z0-9:._@-]` is single-quoted, which
    /// PowerShell and sh read alike; one holding a quote (PowerShell's four included) or `%`
    /// has no form both read alike, and gets no command.
    #[test]
    fn can_i_quotes_the_user_for_powershell_and_sh_alike() {
        let as_user = |user: &str| listing(user).can_i();
        let plain = "kubectl auth can-i list pods -n n --as system:serviceaccount:a.b:c-d_e@f";
        assert_eq!(
            as_user("system:serviceaccount:a.b:c-d_e@f").as_deref(),
            Some(plain)
        );
        assert_eq!(
            as_user("jane doe$(rm -rf ~)`;|&<>*").as_deref(),
            Some("kubectl auth can-i list pods -n n --as 'jane doe$(rm -rf ~)`;|&<>*'")
        );
        assert_eq!(
            as_user("Dürer").as_deref(),
            Some("kubectl auth can-i list pods -n n --as 'Dürer'")
        );
        for unquotable in [
            "o'brien",
            "o\u{2019}brien",
            "o\u{2018}b",
            "o\u{201a}b",
            "o\u{201b}b",
            "a%b",
        ] {
            assert_eq!(as_user(unquotable), None, "{unquotable:?}");
        }
    }

    /// kube-apiserver writes the user with Go's `%q` and then its sanitizer's `&amp;` `&lt;`
    /// `&gt;`: the user is read back as it is, so `--as` names the real user, and a quote in
    /// the name cannot forge the rest of the message. An escape of what is not printable, or a
    /// raw tab or bidi control, names no right: no command is made of it.
    #[test]
    fn the_user_is_read_back_from_gos_quoting() {
        let as_sent = listing;
        let r = as_sent(r#"jane \"j\" doe"#);
        assert_eq!(r.user, r#"jane "j" doe"#);
        assert_eq!(
            r.can_i().as_deref(),
            Some(r#"kubectl auth can-i list pods -n n --as 'jane "j" doe'"#)
        );
        assert_eq!(as_sent(r#"back\\slash"#).user, r"back\slash");
        assert_eq!(as_sent("o&amp;b&lt;c&gt;").user, "o&b<c>");
        // What Go's %q writes for a name with an ideographic space (U+3000), a no-break
        // space and a zero-width joiner, each outside strconv.IsPrint.
        let spaced = as_sent(r"山田\u3000太郎\u00a0x\u200dy\U0001f600");
        assert_eq!(spaced.user, "山田\u{3000}太郎\u{a0}x\u{200d}y\u{1f600}");
        assert_eq!(
            spaced.can_i().as_deref(),
            Some(
                "kubectl auth can-i list pods -n n --as '山田\u{3000}太郎\u{a0}x\u{200d}y\u{1f600}'"
            )
        );
        for sent in [
            r"a\tb",
            r"a\u202eb",
            r"a\u2028b",
            r"a\u00",
            r"a\ud800b",
            r"a\x41",
            "a\tb",
            "a\u{202e}b",
        ] {
            let message = format!(
                "pods is forbidden: User \"{sent}\" cannot list resource \"pods\" in API group \"\" in the namespace \"n\""
            );
            assert_eq!(judge(&message), None, "{sent}");
        }
        let forged = as_sent(r#"x\" cannot delete resource \"secrets"#);
        assert_eq!(forged.user, r#"x" cannot delete resource "secrets"#);
        assert_eq!(
            (forged.verb.as_str(), forged.resource.as_str()),
            ("list", "pods")
        );
    }

    /// What a webhook said is kept on one line (Unicode's line separators too) without bidi
    /// controls, and capped; the cut is at a character's boundary.
    #[test]
    fn what_a_webhook_said_is_one_capped_line() {
        let long = format!(
            "admission webhook \"w\" denied the request: a\nb\r\u{2028}c\u{202e}{}",
            "é".repeat(400)
        );
        let Some(Forbidden::Webhook { said, .. }) = judge(&long) else {
            panic!("{:?}", judge(&long))
        };
        assert!(said.starts_with("a b  cé"), "{said}");
        assert!(
            said.ends_with("...") && said.len() <= SAID_CAP + 3,
            "{said}"
        );
    }
}
