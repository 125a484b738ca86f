//! Whether a `GET /diags` may have the bundle: its token reviewed by the API server
//! (`fleet::diags::auth`) for this node's audience and `fleet diags`' ServiceAccount. Verdicts
//! are kept a short while by the token's sha256; nothing of a token is logged.

use crate::cluster::Cluster;
use crate::duration::Stop;
use crate::fleet::diags::auth::{self, Verdict};
use crate::host::Host;
use crate::k8s_name::NodeName;
use crate::layout::env::EnvVars;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How a token is reviewed; the node's is `ClusterReview`.
pub trait Review: Sync {
    /// The verdict on `token`; a stop ends a review under way (`Verdict::Failed`).
    fn review(&self, token: &str, stop: &Stop) -> Verdict;
}

/// The review as CalicoNode makes it: TokenReview as calico-node, for this node's audience,
/// `auth::ACCOUNT` in `namespace` (`metrics.diags_namespace`) alone.
pub struct ClusterReview<'a> {
    host: &'a dyn Host,
    env: BTreeMap<String, String>,
    namespace: String,
}

impl<'a> ClusterReview<'a> {
    pub fn new(host: &'a dyn Host, env: &BTreeMap<String, String>, namespace: &str) -> Self {
        Self {
            host,
            env: env.clone(),
            namespace: namespace.to_owned(),
        }
    }

    /// calico-node's cluster client, its token read at each review.
    fn cluster(&self) -> Result<Cluster, String> {
        let kubeconfig = self
            .env
            .get(EnvVars::KUBECONFIG)
            .filter(|k| !k.is_empty())
            .ok_or("the node has no kubeconfig (KUBECONFIG)")?;
        super::condition::connect(self.host, kubeconfig, &self.env).map_err(|e| format!("{e:#}"))
    }
}

/// The node's Node, as calico-node names it (`CALICO_K8S_NODE_REF`, else `NODENAME`).
pub(super) fn node_of(env: &BTreeMap<String, String>) -> Option<NodeName> {
    [EnvVars::CALICO_K8S_NODE_REF, EnvVars::NODENAME]
        .iter()
        .find_map(|k| NodeName::parse(env.get(*k)?).ok())
}

impl Review for ClusterReview<'_> {
    fn review(&self, token: &str, stop: &Stop) -> Verdict {
        let Some(node) = node_of(&self.env) else {
            return Verdict::Failed {
                forbidden: false,
                why: "the node's name is unknown (NODENAME)".into(),
            };
        };
        match self.cluster() {
            Ok(c) => auth::review_until(&c, token, &node, &self.namespace, stop),
            Err(why) => Verdict::Failed {
                forbidden: false,
                why: format!("cannot reach the API server as calico-node: {why}"),
            },
        }
    }
}

/// How long a positive review is kept.
const KEPT_FOR: Duration = Duration::from_secs(60);
/// How many positive reviews are kept at most (the oldest goes first).
const KEPT_AT_MOST: usize = 16;
/// How long a refused token is refused again without a review.
const REFUSED_FOR: Duration = Duration::from_secs(30);
/// How many refused tokens are kept at most (the oldest goes first).
const REFUSED_AT_MOST: usize = 64;
/// How long a token refused with the authenticator's error is refused again without a
/// review: some such refusals pass (a signing key not loaded yet).
const UNSETTLED_FOR: Duration = Duration::from_secs(5);

/// Tokens by their sha256, each with when it was kept.
type Kept = Mutex<Vec<([u8; 32], Instant)>>;

/// Reviews kept by the token's sha256 (never the token): positive ones, and refused ones.
#[derive(Default)]
pub struct Reviewed {
    allowed: Kept,
    refused: Kept,
    unsettled: Kept,
}

fn key_of(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Whether `key` is in `kept` (younger than `ttl`), forgetting what is older.
fn holds(kept: &Kept, key: &[u8; 32], ttl: Duration) -> bool {
    let now = Instant::now();
    let mut kept = kept.lock().unwrap_or_else(|p| p.into_inner());
    kept.retain(|(_, at)| now.saturating_duration_since(*at) < ttl);
    kept.iter().any(|(k, _)| k == key)
}

/// Keeps `key` in `kept`, at most `cap` (the oldest goes first).
fn keep(kept: &Kept, key: [u8; 32], cap: usize) {
    let mut kept = kept.lock().unwrap_or_else(|p| p.into_inner());
    if kept.len() >= cap {
        kept.remove(0);
    }
    kept.push((key, Instant::now()));
}

impl Reviewed {
    /// Whether `token` was refused by a review a short while ago (`REFUSED_FOR`).
    pub fn refused_lately(&self, token: &str) -> bool {
        let key = key_of(token);
        holds(&self.refused, &key, REFUSED_FOR) || holds(&self.unsettled, &key, UNSETTLED_FOR)
    }

    /// `token`'s verdict: kept, else `review`'s (a failed review is never kept).
    pub fn verdict(&self, token: &str, review: &dyn Review, stop: &Stop) -> Verdict {
        let key = key_of(token);
        if holds(&self.allowed, &key, KEPT_FOR) {
            return Verdict::Allowed;
        }
        if self.refused_lately(token) {
            return Verdict::Denied("the token was refused a short while ago".into());
        }
        let verdict = review.review(token, stop);
        match verdict {
            Verdict::Allowed => keep(&self.allowed, key, KEPT_AT_MOST),
            Verdict::Denied(_) => keep(&self.refused, key, REFUSED_AT_MOST),
            // A refusal that may pass is kept briefly; a failed review says nothing of the token.
            Verdict::Unsettled(_) => keep(&self.unsettled, key, REFUSED_AT_MOST),
            Verdict::Failed { .. } => {}
        }
        verdict
    }
}

/// The most a token may hold: a ServiceAccount token for one audience is about 1 KiB.
const TOKEN_CAP: usize = 4096;

/// Whether `token` is shaped like a ServiceAccount token (a JWT of at most `TOKEN_CAP`
/// bytes), as kube-apiserver reads one first (kubernetes/kubernetes
/// `pkg/serviceaccount/jwt.go`, `hasCorrectIssuer`); no review could authenticate another.
pub fn jwt_shaped(token: &str) -> bool {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let object = |part: &str| {
        b64.decode(part)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .filter(serde_json::Value::is_object)
    };
    let parts: Vec<&str> = token.split('.').collect();
    let [header, payload, signature] = parts[..] else {
        return false;
    };
    token.len() <= TOKEN_CAP
        && object(header).is_some_and(|h| h["alg"].is_string())
        && object(payload).is_some()
        && !signature.is_empty()
        && b64.decode(signature).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::supervise::shared_tests::jwt;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Counting(AtomicUsize, Verdict);
    impl Review for Counting {
        fn review(&self, _: &str, _: &Stop) -> Verdict {
            self.0.fetch_add(1, Ordering::SeqCst);
            self.1.clone()
        }
    }

    /// Allowed and refused reviews are kept by the token's hash; a failed review is not.
    #[test]
    fn reviews_are_kept_by_the_tokens_hash_allowed_and_refused_but_not_failed() {
        let kept = Reviewed::default();
        let stop = Stop::new();
        let yes = Counting(AtomicUsize::new(0), Verdict::Allowed);
        assert_eq!(kept.verdict("t1", &yes, &stop), Verdict::Allowed);
        assert_eq!(kept.verdict("t1", &yes, &stop), Verdict::Allowed);
        assert_eq!(yes.0.load(Ordering::SeqCst), 1);
        let no = Counting(AtomicUsize::new(0), Verdict::Denied("no".into()));
        assert!(!kept.refused_lately("t2"));
        assert_eq!(kept.verdict("t2", &no, &stop), Verdict::Denied("no".into()));
        assert!(kept.refused_lately("t2"));
        assert!(matches!(kept.verdict("t2", &no, &stop), Verdict::Denied(_)));
        assert_eq!(
            no.0.load(Ordering::SeqCst),
            1,
            "a refused token was reviewed again"
        );
        let failed = Verdict::Failed {
            forbidden: false,
            why: "timed out".into(),
        };
        let down = Counting(AtomicUsize::new(0), failed);
        kept.verdict("t3", &down, &stop);
        kept.verdict("t3", &down, &stop);
        assert_eq!(down.0.load(Ordering::SeqCst), 2);
        assert!(!kept.refused_lately("t3"));
        // A refusal with the authenticator's error is kept only `UNSETTLED_FOR`.
        let unsettled = Counting(AtomicUsize::new(0), Verdict::Unsettled("key".into()));
        kept.verdict("t4", &unsettled, &stop);
        assert!(kept.refused_lately("t4"));
        assert!(matches!(
            kept.verdict("t4", &unsettled, &stop),
            Verdict::Denied(_)
        ));
        assert_eq!(unsettled.0.load(Ordering::SeqCst), 1);
        assert_eq!(kept.unsettled.lock().expect("kept").len(), 1);
        // The token itself is nowhere in what is kept.
        for list in [&kept.allowed, &kept.refused] {
            let held = list.lock().expect("kept");
            assert_eq!(held.len(), 1);
            assert!(!held[0].0.windows(2).any(|w| w == b"t1" || w == b"t2"));
        }
        for i in 0..100 {
            kept.verdict(&format!("many-{i}"), &yes, &stop);
            kept.verdict(&format!("bad-{i}"), &no, &stop);
        }
        assert_eq!(kept.allowed.lock().expect("kept").len(), KEPT_AT_MOST);
        assert_eq!(kept.refused.lock().expect("kept").len(), REFUSED_AT_MOST);
    }

    /// Only a value shaped like a ServiceAccount token goes to a review: three base64url
    /// parts, a header naming its `alg`, a JSON payload, within the cap.
    #[test]
    fn only_a_jwt_shaped_value_is_taken_for_review() {
        use base64::Engine;
        let b64 = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        assert!(jwt_shaped(&jwt(
            "system:serviceaccount:ns:calicoctl-win-diags"
        )));
        let long = jwt(&"x".repeat(TOKEN_CAP));
        let (h, p) = (b64(r#"{"alg":"RS256"}"#), b64("{}"));
        for bad in [
            "good".to_owned(),
            String::new(),
            "a.b.c".into(),
            format!("{h}.{p}"),
            format!("{h}.{p}.sig.more"),
            format!("{h}.{p}."),
            format!("{h}={p}.c2ln"),
            format!("{}.{p}.c2ln", b64(r#"{"typ":"JWT"}"#)),
            format!("{}.{p}.c2ln", b64("[1]")),
            format!("{h}.{}.c2ln", b64("not json")),
            format!("{h}.{p}.c2ln+/"),
            long,
        ] {
            assert!(!jwt_shaped(&bad), "{bad:?}");
        }
    }

    /// A stop ends a review the API server does not answer at once.
    #[test]
    fn a_stop_abandons_a_review_the_api_server_does_not_answer() {
        use crate::host::{Access, Files};
        let host = crate::host::sim::SimHost::in_memory("ws2022").expect("host");
        let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let server = format!("http://{}", silent.local_addr().expect("addr"));
        let (config, token) = (r"C:\CalicoWindows\kubeconfig", r"C:\CalicoWindows\token");
        let text = crate::render::kubeconfig::kubeconfig(&server, "", token, "calico-system");
        host.create_dir(r"C:\CalicoWindows").expect("dir");
        host.write_file(config, text.as_bytes(), Access::Normal)
            .expect("kubeconfig");
        host.write_file(token, b"node-token", Access::Normal)
            .expect("token");
        let env = BTreeMap::from([
            (EnvVars::KUBECONFIG.to_owned(), config.to_owned()),
            (EnvVars::NODENAME.to_owned(), "win-1".to_owned()),
        ]);
        let review = ClusterReview::new(&host, &env, "system-upgrade");
        let stop = Stop::new();
        let verdict = std::thread::scope(|s| {
            let verdict = s.spawn(|| review.review(&jwt("x"), &stop));
            // The review is under way once the API server has its connection.
            let held = silent.accept().expect("the review connects");
            stop.request();
            let verdict = verdict.join().expect("review");
            drop(held);
            verdict
        });
        match verdict {
            Verdict::Failed { why, .. } => assert!(why.contains("stopping"), "{why}"),
            other => panic!("{other:?}"),
        }
    }
}
