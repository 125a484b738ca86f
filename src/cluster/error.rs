//! Why the cluster could not be used, and what kube's errors are taken for.

use super::guard;
use std::path::PathBuf;
use std::time::Duration;

/// Why the cluster could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("the kubeconfig {} does not exist", .path.display())]
    NoKubeconfig { path: PathBuf },
    #[error("cannot use the kubeconfig {}", .path.display())]
    Kubeconfig {
        path: PathBuf,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The kubeconfig's token is a JWT whose `exp` has passed: every call would be a 401.
    #[error(
        "the token in the kubeconfig {} expired at {}",
        .path.display(),
        crate::duration::time_text(*.expired)
    )]
    ExpiredToken { path: PathBuf, expired: i64 },
    /// The kubeconfig's user runs a program for its credentials, which would run elevated.
    #[error(
        "the kubeconfig {} runs a credential plugin ({command}) for its user: calicoctl-win does not run programs a kubeconfig names, as on a node it runs as an administrator or as SYSTEM and the plugin would too",
        .path.display()
    )]
    ExecPlugin { path: PathBuf, command: String },
    /// An answer came, and it is not one calicoctl-win can use.
    #[error("the API server {server} answered {what} with something that is not its API's answer")]
    BadAnswer {
        server: String,
        what: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("cannot reach the Kubernetes API server {server}")]
    Unreachable {
        server: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// An answer longer than calicoctl-win reads in one (`guard::TooLong`).
    #[error("the API server {server} answered {what} with more than {} MiB, the most calicoctl-win reads in one answer", .cap >> 20)]
    TooLarge {
        server: String,
        what: String,
        cap: usize,
    },
    #[error("the API server {server} did not answer within {}s ({what})", .after.as_secs())]
    Timeout {
        server: String,
        what: String,
        after: Duration,
    },
    #[error("the API server {server} refused to {verb} {resource}: {code} {message}")]
    Api {
        server: String,
        verb: String,
        resource: String,
        code: u16,
        message: String,
    },
}

impl ClusterError {
    /// What the user can do about it.
    pub fn hint(&self) -> String {
        match self {
            ClusterError::NoKubeconfig { .. } => "pass an admin kubeconfig with --kubeconfig, or set KUBECONFIG (preflight, status and config show skip the cluster with --offline)".into(),
            ClusterError::Kubeconfig { .. } => "check the file with 'kubectl --kubeconfig FILE cluster-info'".into(),
            ClusterError::ExpiredToken { .. } => "an installer kubeconfig lives 2 hours by default: an admin makes a new one with 'calicoctl-win fetch installer-kubeconfig --out-file installer.kubeconfig' (or pass another kubeconfig with --kubeconfig)".into(),
            ClusterError::ExecPlugin { command, .. } => format!(
                "pass --allow-exec-plugin if {command} may run as administrator on this node; otherwise use a kubeconfig with a token or a client certificate"
            ),
            ClusterError::TooLarge { what, .. } => format!(
                "the answer to {what} is larger than calicoctl-win reads at once (long lists are read a page at a time): report it with the command that asked, and how many objects the cluster holds"
            ),
            ClusterError::BadAnswer { .. } => "the server in the kubeconfig may not be the API server (a proxy or a load balancer answering in its place): check it with 'kubectl --kubeconfig FILE get --raw /version', and HTTPS_PROXY/NO_PROXY".into(),
            ClusterError::Unreachable { .. } | ClusterError::Timeout { .. } => {
                "check the server address in the kubeconfig, the network path to it, and HTTPS_PROXY/NO_PROXY (or the WinHTTP proxy: netsh winhttp show proxy); the CA in the kubeconfig must sign the server's certificate".into()
            }
            ClusterError::Api { code: 401, .. } => {
                "the kubeconfig's credentials were rejected: renew the token or pass another kubeconfig with --kubeconfig".into()
            }
            // Only the authorizer's refusal (`forbidden::judge`) names a missing right.
            ClusterError::Api { code: 403, verb, resource, message, .. } => {
                use super::forbidden::{self, Forbidden};
                match forbidden::judge(message) {
                    Some(Forbidden::Webhook { name, .. }) => forbidden::webhook_hint(&name),
                    Some(Forbidden::Policy { name, .. }) => forbidden::policy_hint(&name),
                    Some(Forbidden::MissingRight(_)) => format!(
                        "the identity in the kubeconfig may not {verb} {resource}; grant it in a ClusterRole (check with '{}')",
                        can_i(verb, resource)
                    ),
                    None if forbidden::other_admission(message) => "the cluster's admission refused the request, not a missing right (Pod Security admission, a ResourceQuota, or a namespace being deleted): see the API server's message above".into(),
                    None => format!(
                        "the API server refused the request (403), and its message above names no right the identity lacks in RBAC's words: an admission plugin or policy, or another authorizer, refused it; if it names a missing right, '{}' checks it",
                        can_i(verb, resource)
                    ),
                }
            }
            ClusterError::Api { code: 429, .. } => {
                "the API server is overloaded (429 Too Many Requests) or its priority and fairness limits refused this client: run the command again in a minute".into()
            }
            ClusterError::Api { code: 404, resource, .. } => {
                format!("{resource} does not exist: is Calico installed in this cluster, and is this the right cluster?")
            }
            ClusterError::Api { .. } => "see the API server's message above".into(),
        }
    }

    /// Whether the object simply is not there.
    pub fn is_not_found(&self) -> bool {
        matches!(self, ClusterError::Api { code: 404, .. })
    }
}

/// The first cause of `e` of type `T`.
pub fn cause_of<T: std::error::Error + 'static>(e: &kube::Error) -> Option<&T> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(t) = c.downcast_ref::<T>() {
            return Some(t);
        }
        cause = c.source();
    }
    None
}

/// Whether kube's error is the client's read or connect timeout (hyper-timeout's I/O
/// `TimedOut`), not a server that cannot be reached.
pub(super) fn is_timeout(e: &kube::Error) -> bool {
    cause_of::<std::io::Error>(e).is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
}

/// Whether kube's error is an answer that came but cannot be used (not JSON, too long, not
/// the JSON expected).
pub(super) fn is_bad_answer(e: &kube::Error) -> bool {
    matches!(e, kube::Error::SerdeError(_))
        || cause_of::<guard::NotJson>(e).is_some()
        || cause_of::<guard::TooLong>(e).is_some()
        || cause_of::<guard::Truncated>(e).is_some()
}

/// A server certificate refused for its dates, said with dates (rustls says Unix seconds).
/// rustls's error sits inside an `io::Error`, whose `source()` skips it: each link is looked
/// into as well.
pub(super) fn certificate_time(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    use rustls::CertificateError::{ExpiredContext, NotValidYetContext};
    let show = |t: rustls::pki_types::UnixTime| {
        crate::duration::time_text(i64::try_from(t.as_secs()).unwrap_or(i64::MAX))
    };
    let mut link: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = link {
        let inner = err
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .map(|i| i as &(dyn std::error::Error + 'static));
        let tls = err
            .downcast_ref::<rustls::Error>()
            .or_else(|| inner.and_then(|i| i.downcast_ref::<rustls::Error>()));
        match tls {
            Some(rustls::Error::InvalidCertificate(ExpiredContext { time, not_after })) => {
                return Some(format!(
                    "the server's certificate expired at {}; this machine's clock says {}: renew the API server's certificate (kubeadm certs renew), or set this machine's clock right",
                    show(*not_after),
                    show(*time)
                ));
            }
            Some(rustls::Error::InvalidCertificate(NotValidYetContext { time, not_before })) => {
                return Some(format!(
                    "the server's certificate is valid only from {}; this machine's clock says {}: set this machine's clock right",
                    show(*not_before),
                    show(*time)
                ));
            }
            _ => {}
        }
        link = inner.or_else(|| err.source());
    }
    None
}
impl crate::error::Diagnose for ClusterError {
    fn diagnose(&self) -> Option<crate::error::Diagnosis> {
        use crate::error::{Exit, Kind};
        // A kubeconfig given that cannot be read or used: bad input.
        let (exit, kind) = match self {
            Self::NoKubeconfig { .. } => (Exit::Usage, Kind::NoAdminKubeconfig),
            Self::Kubeconfig { .. } | Self::ExecPlugin { .. } | Self::ExpiredToken { .. } => {
                (Exit::Usage, Kind::BadKubeconfig)
            }
            Self::Unreachable { .. } => (Exit::Failed, Kind::ClusterUnreachable),
            Self::BadAnswer { .. } | Self::TooLarge { .. } => {
                (Exit::Failed, Kind::ClusterBadAnswer)
            }
            Self::Timeout { .. } => (Exit::Timeout, Kind::ClusterTimeout),
            Self::Api { .. } => (Exit::Failed, Kind::ClusterRefused),
        };
        Some(crate::error::Diagnosis {
            exit,
            kind,
            hint: Some(self.hint()),
        })
    }
}

/// The `kubectl auth can-i` command that checks `verb` on `resource` (`TYPE`, `TYPE/NAME`, or
/// either followed by ` in NAMESPACE`).
fn can_i(verb: &str, resource: &str) -> String {
    match resource.split_once(" in ") {
        Some((what, ns)) => format!("kubectl auth can-i {verb} {what} -n {ns}"),
        None => format!("kubectl auth can-i {verb} {resource}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A namespaced object (`leases/NAME in NS`, as `Cluster::get_in` names it) is checked
    /// with `-n NS`: `kubectl auth can-i VERB TYPE/NAME` takes no other argument.
    #[test]
    fn the_can_i_hint_names_a_namespace_as_kubectl_takes_it() {
        assert_eq!(
            can_i("get", "leases/run-1 in calico-system"),
            "kubectl auth can-i get leases/run-1 -n calico-system"
        );
        assert_eq!(can_i("list", "nodes"), "kubectl auth can-i list nodes");
    }

    /// A client read or connect timeout (hyper-timeout reports an I/O `TimedOut`) is a wait that
    /// ran out (`cluster-timeout`, exit 4), not an unreachable server.
    #[test]
    fn a_read_timeout_is_a_timeout() {
        let timed_out = kube::Error::Service(Box::new(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "read timed out",
        )));
        assert!(is_timeout(&timed_out));
        let refused = kube::Error::Service(Box::new(std::io::Error::from(
            std::io::ErrorKind::ConnectionRefused,
        )));
        assert!(!is_timeout(&refused));
    }

    /// A 429 and an answer over the cap have their own words, not the proxy or CA hint.
    #[test]
    fn an_overload_and_an_over_cap_answer_say_what_they_are() {
        let server = "https://10.0.0.1:6443".to_owned();
        let busy = ClusterError::Api {
            server: server.clone(),
            verb: "list".into(),
            resource: "pods".into(),
            code: 429,
            message: "Too Many Requests".into(),
        };
        assert!(busy.hint().contains("overloaded"), "{}", busy.hint());
        let big = ClusterError::TooLarge {
            server,
            what: "list nodes".into(),
            cap: 8 << 20,
        };
        assert!(!big.hint().contains("proxy"), "{}", big.hint());
        assert!(!busy.hint().contains("HTTPS_PROXY"), "{}", busy.hint());
    }

    fn forbidden(message: &str) -> String {
        ClusterError::Api {
            server: "https://127.0.0.1:6443".into(),
            verb: "create".into(),
            resource: "pods".into(),
            code: 403,
            message: message.into(),
        }
        .hint()
    }

    /// A 403 names a missing right only when no admission refused the request: a webhook's,
    /// a policy's, Pod Security's and a quota's refusals send the reader elsewhere.
    #[test]
    fn only_an_authorizers_403_is_told_to_grant_a_right() {
        let rbac = forbidden(
            "pods \"p\" is forbidden: User \"u\" cannot create resource \"pods\" in API group \"\" in the namespace \"n\"",
        );
        assert!(rbac.contains("grant it in a ClusterRole"), "{rbac}");
        for (message, names) in [
            (
                "pods \"p\" is forbidden: admission webhook \"w.example.com\" denied the request: no",
                "w.example.com",
            ),
            (
                "pods \"p\" is forbidden: ValidatingAdmissionPolicy 'pol' with binding 'b' denied request: no",
                "'pol'",
            ),
            (
                "pods \"p\" is forbidden: violates PodSecurity \"restricted:latest\": privileged",
                "Pod Security",
            ),
            (
                "pods \"p\" is forbidden: exceeded quota: q, requested: pods=1",
                "ResourceQuota",
            ),
            (
                "pods \"p\" is forbidden: maximum cpu usage per Pod is 2, but limit is 4",
                "admission plugin or policy",
            ),
        ] {
            let hint = forbidden(message);
            assert!(!hint.contains("ClusterRole"), "{message}: {hint}");
            assert!(hint.contains(names), "{message}: {hint}");
        }
    }
}
