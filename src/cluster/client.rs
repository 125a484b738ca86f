//! The connected cluster: a kube client built from a kubeconfig, with every call bounded in
//! time and every error naming the server and, for 401/403/404, what to do.

use super::error::{ClusterError, cause_of, certificate_time, is_bad_answer, is_timeout};
use super::kubeconfig::{
    BoxError, InCluster, OnHost, ca_pem, credential_plugin, current_cluster, current_context,
    inline_files, load, refuse_control_in_token_text, refuse_expired_token_text, token_files_read,
};
use super::token::credentials;
use super::{calico_api, guard, proxy};
use crate::k8s_name::NodeName;
use k8s_openapi::api::core::v1::Pod;
use kube::config::Kubeconfig;
use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

/// Objects per page of a list (`Cluster::for_each_page`).
pub const PAGE: u32 = 500;
/// The most pages of one list: 2,000,000 objects.
pub const PAGES_CAP: usize = 4_000;

/// How long one API call may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(15);

/// A connected cluster.
pub struct Cluster {
    pub client: kube::Client,
    /// The same client without kube's retries (the caller answers a 429 itself: an eviction)
    /// nor read bound (callers bound each call: a node's diags answer may take 45 s).
    pub client_without_retries: kube::Client,
    pub server: String,
    /// The CA certificates the admin kubeconfig trusts, as PEM (`None` when it has none).
    pub ca_pem: Option<String>,
    rt: tokio::runtime::Runtime,
    /// The API group of Calico's resources, discovered once (`Cluster::calico_group`).
    pub(super) calico_group: std::sync::OnceLock<calico_api::Group>,
    /// The DatastoreMigration group's versions the same discovery listed.
    pub(super) migration_versions: std::sync::OnceLock<Vec<String>>,
    /// The DatastoreMigration as read once (discovery and the facts both want it).
    pub(super) migration: std::sync::OnceLock<Option<calico_api::Migration>>,
    /// The pods on each node as read once, when the client is kept for one look
    /// (`keep_one_look`).
    one_look: std::sync::Mutex<Option<std::collections::BTreeMap<String, Vec<Pod>>>>,
    /// The server's API group names, listed once (`served` in calico_api.rs).
    pub(super) served_groups: std::sync::OnceLock<Vec<String>>,
    /// The stop that cuts the calls in flight when it is requested (`cut_on`).
    cut: std::sync::OnceLock<crate::duration::Stop>,
    /// The last `Date` this server sent and when it was read, by the monotonic clock.
    server_date: std::sync::Mutex<Option<(i64, std::time::Instant)>>,
}

thread_local! {
    /// The stop that cuts this thread's calls in flight, before the client's (`cut_here`).
    static CUT_HERE: std::cell::RefCell<Option<crate::duration::Stop>> =
        const { std::cell::RefCell::new(None) };
}

/// While the answer lives, a call this thread makes is cut when `stop` is requested (one
/// `verify` run's, among runs that share the client); calls begun after are cut by the
/// client's stop (`cut_on`) alone.
pub fn cut_here(stop: &crate::duration::Stop) -> CutHere {
    CutHere(CUT_HERE.with(|c| c.replace(Some(stop.clone()))))
}

/// This thread's calls cut by a stop of its own (`cut_here`) until dropped.
#[must_use]
pub struct CutHere(Option<crate::duration::Stop>);

impl Drop for CutHere {
    fn drop(&mut self) {
        let before = self.0.take();
        CUT_HERE.with(|c| c.replace(before));
    }
}

/// Ends once `cut` is requested (never without one), looked at every 50 ms (a stop is no
/// future).
async fn requested(cut: Option<&crate::duration::Stop>) {
    match cut {
        Some(s) => {
            while !s.requested() {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        None => std::future::pending().await,
    }
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the client: its config holds the credentials.
        f.debug_struct("Cluster")
            .field("server", &self.server)
            .finish()
    }
}

/// The error of the kubeconfig at `path` that cannot be used.
fn unusable(path: &std::path::Path) -> impl Fn(BoxError) -> ClusterError + Copy + '_ {
    move |source| ClusterError::Kubeconfig {
        path: path.to_owned(),
        source,
    }
}

/// A credential plugin the kubeconfig runs, refused unless allowed.
fn refuse_plugin(
    k: &Kubeconfig,
    path: &std::path::Path,
    allowed: bool,
) -> Result<(), ClusterError> {
    match credential_plugin(k).filter(|_| !allowed) {
        Some(command) => Err(ClusterError::ExecPlugin {
            path: path.to_owned(),
            command,
        }),
        None => Ok(()),
    }
}

impl Cluster {
    /// Connects with the admin kubeconfig(s) at `paths` (`env`: for the proxy variables). A
    /// `$KUBECONFIG` list is merged as kubectl does: the first file to name a cluster, user or
    /// context, or to set `current-context`, wins (kube's `Kubeconfig::merge`, after client-go
    /// `tools/clientcmd/loader.go` `ClientConfigLoadingRules.Load`).
    pub fn connect(
        paths: &[std::path::PathBuf],
        env: &std::collections::BTreeMap<String, String>,
        allow_exec_plugin: bool,
    ) -> Result<Self, ClusterError> {
        let Some(path) = paths.first().filter(|p| p.exists()) else {
            return Err(ClusterError::NoKubeconfig {
                path: paths.first().cloned().unwrap_or_default(),
            });
        };
        let bad = unusable(path);
        let mut kubeconfig = Kubeconfig::default();
        for each in paths.iter().filter(|p| p.exists()) {
            let bad = unusable(each);
            let text = crate::files::read_text_capped(each, crate::files::SMALL_FILE_CAP)
                .map_err(|e| bad(e.into()))?;
            refuse_control_in_token_text(&text).map_err(bad)?;
            refuse_expired_token_text(each, &text)?;
            let read = Kubeconfig::read_from(each).map_err(|e| bad(Box::new(e)))?;
            kubeconfig = kubeconfig.merge(read).map_err(|e| bad(Box::new(e)))?;
        }
        token_files_read(&mut kubeconfig).map_err(bad)?;
        refuse_plugin(&kubeconfig, path, allow_exec_plugin)?;
        Self::from_kubeconfig(kubeconfig, env).map_err(bad)
    }

    /// Connects with a kubeconfig kept on the node, the files it names put in it (the client
    /// opens no path of its own); the same checks as `connect`.
    pub fn connect_on_host(
        k: &OnHost,
        env: &std::collections::BTreeMap<String, String>,
        allow_exec_plugin: bool,
    ) -> Result<Self, ClusterError> {
        let named = PathBuf::from(&k.path);
        let bad = unusable(&named);
        refuse_control_in_token_text(&k.text).map_err(bad)?;
        refuse_expired_token_text(&named, &k.text)?;
        let mut kubeconfig = Kubeconfig::from_yaml(&k.text).map_err(|e| bad(Box::new(e)))?;
        refuse_plugin(&kubeconfig, &named, allow_exec_plugin)?;
        inline_files(&mut kubeconfig, &k.dir(), &|p| Ok(k.files.get(p).cloned())).map_err(bad)?;
        Self::from_kubeconfig(kubeconfig, env).map_err(bad)
    }

    /// Connects as the pod's service account (its token file read again as kubelet renews it).
    pub fn connect_in_cluster(
        sa: &InCluster,
        env: &std::collections::BTreeMap<String, String>,
    ) -> Result<Self, ClusterError> {
        let file = |name: &str| Some(sa.dir.join(name).to_string_lossy().into_owned());
        let kubeconfig = crate::render::kubeconfig::document(
            kube::config::Cluster {
                server: Some(sa.server.clone()),
                certificate_authority: file("ca.crt"),
                ..Default::default()
            },
            kube::config::AuthInfo {
                token_file: file("token"),
                ..Default::default()
            },
            None,
        );
        Self::from_kubeconfig(kubeconfig, env).map_err(unusable(&sa.dir.join("token")))
    }

    /// Connects with a kubeconfig's text read from the node (`path` names it in errors); a
    /// credential plugin is refused unless allowed, as with `connect`.
    pub fn connect_text(
        path: &str,
        text: &str,
        env: &std::collections::BTreeMap<String, String>,
        allow_exec_plugin: bool,
    ) -> Result<Self, ClusterError> {
        let bad = unusable(path.as_ref());
        let kubeconfig = Kubeconfig::from_yaml(text).map_err(|e| bad(Box::new(e)))?;
        refuse_plugin(&kubeconfig, path.as_ref(), allow_exec_plugin)?;
        Self::from_kubeconfig(kubeconfig, env).map_err(bad)
    }

    /// Connects as calico-node: its kubeconfig's text with its current user's credential
    /// replaced by `token`, so nothing the kubeconfig names is run or read.
    pub fn connect_as_node(
        path: &str,
        text: &str,
        token: &credentials::Token,
        env: &std::collections::BTreeMap<String, String>,
    ) -> Result<Self, ClusterError> {
        let bad = unusable(path.as_ref());
        let mut kubeconfig = Kubeconfig::from_yaml(text).map_err(|e| bad(Box::new(e)))?;
        let user = current_context(&kubeconfig).and_then(|c| c.user.clone());
        let auth = user
            .and_then(|u| kubeconfig.auth_infos.iter_mut().find(|a| a.name == u))
            .ok_or_else(|| bad("it has no current context with a user".into()))?;
        auth.auth_info = Some(kube::config::AuthInfo {
            token: Some(secrecy::SecretString::from(token.expose().to_owned())),
            ..Default::default()
        });
        Self::from_kubeconfig(kubeconfig, env).map_err(bad)
    }

    /// The clients for a kubeconfig, bounded as every call is.
    fn from_kubeconfig(
        kubeconfig: Kubeconfig,
        env: &std::collections::BTreeMap<String, String>,
    ) -> Result<Self, BoxError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let kubeconfig_proxy = current_cluster(&kubeconfig).and_then(|c| c.proxy_url.clone());
        let mut config = load(&rt, kubeconfig, CALL_TIMEOUT)?;
        config.proxy_url = proxy::choose(&config.cluster_url, kubeconfig_proxy.as_deref(), env)?;
        config.connect_timeout = Some(Duration::from_secs(10));
        config.read_timeout = Some(CALL_TIMEOUT);
        config.write_timeout = Some(CALL_TIMEOUT);
        let ca_pem = ca_pem(&config)?;
        let server = config
            .cluster_url
            .to_string()
            .trim_end_matches('/')
            .to_owned();
        let (client, client_without_retries) = {
            let _guard = rt.enter();
            let mut bare = config.clone();
            bare.default_retry = false;
            // Its callers bound each call (see `client_without_retries`).
            bare.read_timeout = None;
            let guarded = |c: kube::Config| -> Result<kube::Client, kube::Error> {
                Ok(kube::client::ClientBuilder::try_from(c)?
                    .with_layer(&guard::GuardLayer)
                    .build())
            };
            (guarded(config)?, guarded(bare)?)
        };
        Ok(Self {
            client,
            client_without_retries,
            server,
            ca_pem,
            rt,
            calico_group: std::sync::OnceLock::new(),
            migration_versions: std::sync::OnceLock::new(),
            migration: std::sync::OnceLock::new(),
            one_look: std::sync::Mutex::new(None),
            served_groups: std::sync::OnceLock::new(),
            cut: std::sync::OnceLock::new(),
            server_date: std::sync::Mutex::new(None),
        })
    }

    /// From now on, the pods on a node are read once for this client (`status`'s one look);
    /// not for commands that change them and read again (a drain, a repair).
    pub fn keep_one_look(&self) {
        if let Ok(mut memo) = self.one_look.lock() {
            memo.get_or_insert_with(Default::default);
        }
    }

    /// The pods on `node` as this look read them, if it keeps them and has read them.
    pub(crate) fn looked_at_pods(&self, node: &NodeName) -> Option<Vec<Pod>> {
        self.one_look
            .lock()
            .ok()?
            .as_ref()?
            .get(node.as_str())
            .cloned()
    }

    /// Keeps the pods on `node` read now, when this client is kept for one look.
    pub(crate) fn keep_pods(&self, node: &NodeName, pods: &[Pod]) {
        if let Ok(mut memo) = self.one_look.lock()
            && let Some(memo) = memo.as_mut()
        {
            memo.insert(node.to_string(), pods.to_vec());
        }
    }

    /// Runs `fut` to its end on the client's runtime: for work that bounds its own time.
    pub fn run<F: Future>(&self, fut: F) -> F::Output {
        self.rt.block_on(fut)
    }

    /// Runs one API call, bounded in time; `verb` and `resource` name it in errors.
    pub fn call<T>(
        &self,
        verb: &str,
        resource: &str,
        fut: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, ClusterError> {
        self.call_within(CALL_TIMEOUT, (verb, resource), fut)
    }

    /// The API server's time now by the last `Date` it sent, moved on by the monotonic clock
    /// (`clock_since`), never the wall clock; `None` before one came, or when read `fresh` or
    /// longer ago (CLOCK_MONOTONIC does not count a suspend: rust-lang/rust#79462).
    pub fn server_clock(&self, fresh: Duration) -> Option<i64> {
        let last = *self.server_date.lock().unwrap_or_else(|e| e.into_inner());
        last.and_then(|anchor| clock_since(anchor, std::time::Instant::now(), fresh))
    }

    /// A `Date` of this server (`server_s`) read now.
    pub fn note_server_date(&self, server_s: i64) {
        let mut last = self.server_date.lock().unwrap_or_else(|e| e.into_inner());
        *last = Some((server_s, std::time::Instant::now()));
    }

    /// From now on, a call in flight when `stop` is requested ends at once, as a timeout: a
    /// stopped `verify` must clean up within the 5 s a HostProcess container is left after its
    /// stop (`host::stop`); calls begun after run as usual. The first stop given stays.
    pub fn cut_on(&self, stop: &crate::duration::Stop) {
        let _ = self.cut.set(stop.clone());
    }

    /// `call_within`, not begun, or ended at once, when `stop` is requested (a lease's
    /// renewal, which a stopped run no longer needs).
    pub fn call_unless<T>(
        &self,
        stop: &crate::duration::Stop,
        within: Duration,
        what: (&str, &str),
        fut: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, ClusterError> {
        self.call_cut(Some(stop), within, what, fut)
    }

    /// `call`, bounded by what is left until `until` (nothing left: not sent, a timeout).
    pub fn call_by<T>(
        &self,
        until: std::time::Instant,
        what: (&str, &str),
        fut: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, ClusterError> {
        self.call_within(
            until.saturating_duration_since(std::time::Instant::now()),
            what,
            fut,
        )
    }

    /// `call_by`, with 404 as `None`.
    pub fn call_opt_by<T>(
        &self,
        until: std::time::Instant,
        what: (&str, &str),
        fut: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<Option<T>, ClusterError> {
        found(self.call_by(until, what, fut))
    }

    /// `call`, bounded by `within` (at most the client's own timeouts, `CALL_TIMEOUT`).
    pub fn call_within<T>(
        &self,
        within: Duration,
        what: (&str, &str),
        fut: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, ClusterError> {
        let here = CUT_HERE.with(|c| c.borrow().clone());
        // The first stop not yet requested: a run's own, else the client's (Ctrl-C).
        let cut = [here.as_ref(), self.cut.get()]
            .into_iter()
            .flatten()
            .find(|s| !s.requested());
        self.call_cut(cut, within, what, fut)
    }

    fn call_cut<T>(
        &self,
        cut: Option<&crate::duration::Stop>,
        within: Duration,
        (verb, resource): (&str, &str),
        fut: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, ClusterError> {
        let within = within.min(CALL_TIMEOUT);
        if within.is_zero() {
            return Err(ClusterError::Timeout {
                server: self.server.clone(),
                what: format!("{verb} {resource}, not sent: no time was left for it"),
                after: within,
            });
        }
        let stopped = requested(cut);
        let started = std::time::Instant::now();
        let result = self.rt.block_on(async {
            // The stop looked at first: a call asked after it is never sent.
            tokio::select! {
                biased;
                () = stopped => None,
                r = tokio::time::timeout(within, fut) => Some(r),
            }
        });
        let timeout = |what: String, after| ClusterError::Timeout {
            server: self.server.clone(),
            what,
            after,
        };
        let Some(result) = result else {
            let what = format!("{verb} {resource}, cut by the stop");
            return Err(timeout(what, started.elapsed()));
        };
        match result {
            Ok(Ok(v)) => Ok(v),
            Err(_) => Err(timeout(format!("{verb} {resource}"), within)),
            Ok(Err(e)) if is_timeout(&e) => Err(timeout(format!("{verb} {resource}"), within)),
            Ok(Err(e)) if cause_of::<guard::TooLong>(&e).is_some() => Err(ClusterError::TooLarge {
                server: self.server.clone(),
                what: format!("{verb} {resource}"),
                cap: cause_of::<guard::TooLong>(&e).map_or(0, |t| t.cap),
            }),
            Ok(Err(kube::Error::Api(status))) => Err(ClusterError::Api {
                server: self.server.clone(),
                verb: verb.to_owned(),
                resource: resource.to_owned(),
                code: status.code,
                message: status.message.clone(),
            }),
            Ok(Err(e)) if is_bad_answer(&e) => Err(ClusterError::BadAnswer {
                server: self.server.clone(),
                what: format!("{verb} {resource}"),
                source: Box::new(e),
            }),
            Ok(Err(e)) => Err(ClusterError::Unreachable {
                server: self.server.clone(),
                source: match certificate_time(&e) {
                    Some(text) => text.into(),
                    None => Box::new(e),
                },
            }),
        }
    }

    /// Lists `api` `PAGE` objects at a time, each page's items to `each`; `Ok(false)` when the
    /// resource does not exist; stopped after `PAGES_CAP` pages.
    pub fn for_each_page<E: From<ClusterError>>(
        &self,
        api: &kube::Api<kube::api::DynamicObject>,
        what: &str,
        each: impl FnMut(Vec<kube::api::DynamicObject>) -> Result<(), E>,
    ) -> Result<bool, E> {
        let base = kube::api::ListParams::default().limit(PAGE);
        self.for_each_page_of(api, what, &base, each)
    }

    /// `for_each_page` of any kind, with `base`'s selectors and `limit`, as kubectl pages a
    /// list (apimachinery `ListOptions`: `limit`, then `continue`).
    pub fn for_each_page_of<K, E>(
        &self,
        api: &kube::Api<K>,
        what: &str,
        base: &kube::api::ListParams,
        mut each: impl FnMut(Vec<K>) -> Result<(), E>,
    ) -> Result<bool, E>
    where
        K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
        E: From<ClusterError>,
    {
        let mut token: Option<String> = None;
        for _ in 0..PAGES_CAP {
            let mut lp = base.clone();
            if let Some(t) = &token {
                lp = lp.continue_token(t);
            }
            let Some(page) = self.call_opt("list", what, api.list(&lp))? else {
                return Ok(false);
            };
            each(page.items)?;
            token = page.metadata.continue_.filter(|t| !t.is_empty());
            if token.is_none() {
                return Ok(true);
            }
        }
        Err(ClusterError::BadAnswer {
            server: self.server.clone(),
            what: format!("list {what}"),
            source: format!("it still had more after {PAGES_CAP} pages of {PAGE}").into(),
        }
        .into())
    }

    /// The cluster-wide API of a kind without a k8s-openapi type.
    pub fn dynamic(
        &self,
        (group, version, kind, plural): (&str, &str, &str, &str),
    ) -> kube::Api<kube::api::DynamicObject> {
        let gvk = kube::api::GroupVersionKind::gvk(group, version, kind);
        let ar = kube::api::ApiResource::from_gvk_with_plural(&gvk, plural);
        kube::Api::all_with(self.client.clone(), &ar)
    }

    /// The `get` of `name` in `namespace`, 404 as `None`; named `PLURAL/NAME in NAMESPACE`.
    pub fn get_in<K>(&self, namespace: &str, name: &str) -> Result<Option<K>, ClusterError>
    where
        K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
    {
        let api: kube::Api<K> = kube::Api::namespaced(self.client.clone(), namespace);
        let what = format!("{}/{name} in {namespace}", K::plural(&()));
        self.call_opt("get", &what, api.get(name))
    }

    /// Like `call`, with 404 as `None`.
    pub fn call_opt<T>(
        &self,
        verb: &str,
        resource: &str,
        fut: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<Option<T>, ClusterError> {
        found(self.call(verb, resource, fut))
    }
}

fn found<T>(answer: Result<T, ClusterError>) -> Result<Option<T>, ClusterError> {
    match answer {
        Err(e) if e.is_not_found() => Ok(None),
        other => other.map(Some),
    }
}

/// The server's time at `now` from a `Date` of `server_s` read at `read`, by the monotonic
/// clock; `None` once `fresh` or more passed.
pub fn clock_since(
    (server_s, read): (i64, std::time::Instant),
    now: std::time::Instant,
    fresh: Duration,
) -> Option<i64> {
    let passed = now.saturating_duration_since(read);
    if passed >= fresh {
        return None;
    }
    Some(server_s.saturating_add(i64::try_from(passed.as_secs()).unwrap_or(i64::MAX)))
}

#[cfg(test)]
mod server_clock_tests {
    use super::clock_since;
    use std::time::{Duration, Instant};

    /// A server `Date` read 9 s ago (by the monotonic clock) is 9 s on now, whatever this
    /// host's wall clock did meanwhile; one as old as the renewal interval (`fresh`) or older
    /// is not moved on: the monotonic clock does not count a suspend (a VM paused), so the
    /// caller judges by age. Instants made up, no time passes.
    #[test]
    fn the_servers_time_moves_on_by_the_monotonic_clock_from_a_fresh_date_only() {
        let fresh = Duration::from_secs(15);
        let read = Instant::now();
        let server = 1_800_000_000;
        let at = |now: Instant| clock_since((server, read), now, fresh);
        let aged = |ms: u64| at(read + Duration::from_millis(ms));
        assert_eq!(at(read), Some(server));
        assert_eq!(aged(9_400), Some(server + 9));
        assert_eq!(aged(14_000), Some(server + 14));
        assert_eq!(aged(15_000), None);
        assert_eq!(aged(90_000), None);
        // An instant before the read (never, but bounded): the `Date` itself.
        let later = read + Duration::from_millis(9_400);
        assert_eq!(clock_since((server, later), read, fresh), Some(server));
    }
}
