//! Whether a `GET /diags` may have the node's bundle: its token (`cluster::diags_auth::HEADER`)
//! reviewed by the API server as CalicoNode's own identity (calico-node's kubeconfig and the
//! token CalicoNode renews), for this node's audience and the one ServiceAccount `fleet diags`
//! uses (`cluster::diags_auth`). A positive review is kept a short while, by the token's
//! sha256 (never the token), so that a gatherer that asks again after a 503 is not reviewed
//! again; nothing of a token is logged.

use crate::cluster::Cluster;
use crate::cluster::credentials::Token;
use crate::cluster::diags_auth::{self, Verdict};
use crate::host::Host;
use crate::layout::env::EnvVars;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How a token is reviewed; the node's is `ClusterReview`.
pub trait Review: Sync {
    fn review(&self, token: &str) -> Verdict;
}

/// The review as CalicoNode makes it: TokenReview as calico-node, for this node's audience,
/// `diags_auth::ACCOUNT` in `namespace` (`metrics.diags_namespace`) alone.
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

    /// calico-node's cluster client, from its kubeconfig and the token file it names (read at
    /// each review: CalicoNode renews it).
    fn cluster(&self) -> Result<Cluster, String> {
        let kubeconfig = self
            .env
            .get(EnvVars::KUBECONFIG)
            .filter(|k| !k.is_empty())
            .ok_or("the node has no kubeconfig (KUBECONFIG)")?;
        let read = |path: &str| match self.host.read_file(path) {
            Ok(Some(b)) => Ok(String::from_utf8_lossy(&b).into_owned()),
            Ok(None) => Err(format!("{path} is missing")),
            Err(e) => Err(e.to_string()),
        };
        let text = read(kubeconfig)?;
        let file = crate::render::kubeconfig::token_file_of(&text)
            .ok_or_else(|| format!("{kubeconfig} names no token file"))?;
        let token = Token::new(read(&file)?.trim());
        Cluster::connect_as_node(kubeconfig, &text, &token, &self.env).map_err(|e| e.to_string())
    }

    fn node(&self) -> Option<&str> {
        [EnvVars::CALICO_K8S_NODE_REF, EnvVars::NODENAME]
            .iter()
            .find_map(|k| self.env.get(*k).filter(|n| !n.is_empty()))
            .map(String::as_str)
    }
}

impl Review for ClusterReview<'_> {
    fn review(&self, token: &str) -> Verdict {
        let Some(node) = self.node() else {
            return Verdict::Failed {
                forbidden: false,
                why: "the node's name is unknown (NODENAME)".into(),
            };
        };
        match self.cluster() {
            Ok(c) => diags_auth::review(&c, token, node, &self.namespace),
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

/// Positive reviews, by the token's sha256.
#[derive(Default)]
pub struct Reviewed(Mutex<Vec<([u8; 32], Instant)>>);

impl Reviewed {
    /// `token`'s verdict: kept, else `review`'s (kept when allowed).
    pub fn verdict(&self, token: &str, review: &dyn Review) -> Verdict {
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let now = Instant::now();
        {
            let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
            kept.retain(|(_, at)| now.saturating_duration_since(*at) < KEPT_FOR);
            if kept.iter().any(|(k, _)| *k == key) {
                return Verdict::Allowed;
            }
        }
        let verdict = review.review(token);
        if verdict == Verdict::Allowed {
            let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
            if kept.len() >= KEPT_AT_MOST {
                kept.remove(0);
            }
            kept.push((key, Instant::now()));
        }
        verdict
    }
}

/// The token a request's head carries in `diags_auth::HEADER`, if any (the header's name in
/// any case, as HTTP/1.1 allows).
pub fn token_of(head: &str) -> Option<&str> {
    head.split("\r\n").skip(1).find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case(diags_auth::HEADER)
            .then(|| value.trim())
            .filter(|v| !v.is_empty())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Counting(AtomicUsize, Verdict);
    impl Review for Counting {
        fn review(&self, _: &str) -> Verdict {
            self.0.fetch_add(1, Ordering::SeqCst);
            self.1.clone()
        }
    }

    #[test]
    fn a_positive_review_is_kept_by_the_tokens_hash_and_a_negative_one_is_not() {
        let kept = Reviewed::default();
        let yes = Counting(AtomicUsize::new(0), Verdict::Allowed);
        assert_eq!(kept.verdict("t1", &yes), Verdict::Allowed);
        assert_eq!(kept.verdict("t1", &yes), Verdict::Allowed);
        assert_eq!(yes.0.load(Ordering::SeqCst), 1);
        let no = Counting(AtomicUsize::new(0), Verdict::Denied("no".into()));
        assert_eq!(kept.verdict("t2", &no), Verdict::Denied("no".into()));
        assert_eq!(kept.verdict("t2", &no), Verdict::Denied("no".into()));
        assert_eq!(no.0.load(Ordering::SeqCst), 2);
        // The token itself is nowhere in what is kept.
        let held = kept.0.lock().expect("kept");
        assert_eq!(held.len(), 1);
        assert!(!held[0].0.windows(2).any(|w| w == b"t1"));
        drop(held);
        for i in 0..40 {
            kept.verdict(&format!("many-{i}"), &yes);
        }
        assert_eq!(kept.0.lock().expect("kept").len(), KEPT_AT_MOST);
    }

    #[test]
    fn the_token_is_read_from_its_header_in_any_case() {
        let head = "GET /diags HTTP/1.1\r\nHost: x\r\nCalicoctl-Win-Diags-Token:  abc \r\n\r\n";
        assert_eq!(token_of(head), Some("abc"));
        assert_eq!(token_of("GET /diags HTTP/1.1\r\nHost: x\r\n\r\n"), None);
        let empty = "GET /diags HTTP/1.1\r\ncalicoctl-win-diags-token:\r\n\r\n";
        assert_eq!(token_of(empty), None);
    }
}
