//! Calico network policy as Felix renders it on Windows (its selectors: `crate::selector`): the
//! labels of an endpoint, policies from either API, the HNS ACLs Felix programs for each and
//! each endpoint's whole ACL list (`lint policies`).

pub mod cost;
pub mod endpoints;
pub mod felix;
pub mod input;
pub mod k8s;
pub mod model;
pub mod render;
mod source;

use std::collections::BTreeMap;

use serde_json::Value;

use endpoints::{Endpoints, Inventory, Pod};
use model::Policy;
use render::TierSpec;
pub use source::{NAME_CAP, PolicyError, Source};

/// The most objects one lint reads (files and cluster alike).
pub const OBJECTS_CAP: usize = 2_000_000;
/// The objects read: what the endpoints are and the policies.
#[derive(Debug, Default)]
pub struct Collected {
    pub inventory: Inventory,
    pub policies: Vec<Policy>,
    /// `Tier` objects by name.
    pub tiers: foldhash::HashMap<String, TierSpec>,
    pub objects: usize,
    /// Objects of kinds the lint does not use.
    pub ignored: usize,
}

impl Collected {
    /// Adds one object (a `List` adds its items).
    pub fn add(&mut self, mut object: Value, origin: &str) -> Result<(), PolicyError> {
        self.count(origin)?;
        let text = |o: &Value, k: &str| o.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        let (api_version, kind) = (text(&object, "apiVersion"), text(&object, "kind"));
        if let (true, Some(Value::Array(items))) = (
            kind.ends_with("List"),
            object.get_mut("items").map(Value::take),
        ) {
            // `kubectl get -o yaml` prints `kind: List` with typed items; an API list
            // (`PodList`) leaves the items' kind and apiVersion to the list.
            let item_kind = kind.strip_suffix("List").unwrap_or_default();
            for mut item in items {
                if item.get("kind").is_none() && !item_kind.is_empty() {
                    item["kind"] = Value::String(item_kind.to_owned());
                    item["apiVersion"] = Value::String(api_version.clone());
                }
                self.add(item, origin)?;
            }
            return Ok(());
        }
        let (api_version, kind) = (api_version.as_str(), kind.as_str());
        let calico = matches!(
            api_version,
            "projectcalico.org/v3" | "crd.projectcalico.org/v1"
        );
        match (api_version, kind) {
            ("v1", "Pod" | "Namespace" | "Node" | "ServiceAccount") => {
                let src = Source::of(&object, api_version, kind, origin)?;
                let core: CoreObject = serde_json::from_value(object)
                    .map_err(|e| src.invalid(format!("not a {kind}: {e}")))?;
                self.add_core(&src, core)?;
            }
            ("networking.k8s.io/v1", "NetworkPolicy")
            | (
                "projectcalico.org/v3" | "crd.projectcalico.org/v1",
                "StagedKubernetesNetworkPolicy",
            ) => {
                let src = Source::of(&object, api_version, kind, origin)?;
                self.policies.push(model::kubernetes(&src, &object)?);
            }
            (_, "Tier") if calico => {
                let src = Source::of(&object, api_version, kind, origin)?;
                let spec = object.get("spec");
                let order = spec.and_then(|s| s.get("order")).and_then(Value::as_f64);
                let pass_at_end = spec
                    .and_then(|s| s.get("defaultAction"))
                    .and_then(Value::as_str)
                    .is_some_and(|a| a.eq_ignore_ascii_case("pass"));
                self.tiers
                    .insert(src.name.clone(), TierSpec { order, pass_at_end });
            }
            (
                _,
                "NetworkPolicy"
                | "GlobalNetworkPolicy"
                | "StagedNetworkPolicy"
                | "StagedGlobalNetworkPolicy",
            ) if calico => {
                let mut src = Source::of(&object, api_version, kind, origin)?;
                let global = kind.ends_with("GlobalNetworkPolicy");
                if !global && src.namespace.is_none() {
                    src.namespace = Some("default".into());
                }
                if global {
                    src.namespace = None;
                }
                self.policies.push(model::calico(&src, object)?);
            }
            _ => self.ignored += 1,
        }
        Ok(())
    }

    /// Drops the second and later copies of one object (the same snapshot given twice, or a
    /// policy in two files): a Pod by namespace and name, a policy by kind, namespace and
    /// name (Calico's `projectcalico.org/v3` and `crd.projectcalico.org/v1` are one object);
    /// the first read is kept. Namespaces, Nodes and ServiceAccounts are kept by name already.
    /// How many were dropped.
    pub fn drop_duplicates(&mut self) -> usize {
        let before = self.inventory.pods.len() + self.policies.len();
        let pods = firsts(&self.inventory.pods, |p| {
            (!p.name.is_empty()).then_some((p.namespace.as_str(), p.name.as_str()))
        });
        let policies = firsts(&self.policies, |p| {
            let family = p.api_version.starts_with("networking.k8s.io");
            Some((
                family,
                p.kind.as_str(),
                p.namespace.as_deref(),
                p.name.as_str(),
            ))
        });
        let (mut pods, mut policies) = (pods.into_iter(), policies.into_iter());
        self.inventory.pods.retain(|_| pods.next().unwrap_or(true));
        self.policies.retain(|_| policies.next().unwrap_or(true));
        before - self.inventory.pods.len() - self.policies.len()
    }

    /// Adds what another collection read (from `origin`), after this one's.
    pub fn merge(&mut self, other: Collected, origin: &str) -> Result<(), PolicyError> {
        self.objects += other.objects;
        self.within_cap(origin)?;
        self.ignored += other.ignored;
        self.policies.extend(other.policies);
        self.tiers.extend(other.tiers);
        let inv = other.inventory;
        self.inventory.pods.extend(inv.pods);
        self.inventory.namespaces.extend(inv.namespaces);
        self.inventory.nodes.extend(inv.nodes);
        self.inventory.service_accounts.extend(inv.service_accounts);
        Ok(())
    }

    fn add_core(&mut self, src: &Source, object: CoreObject) -> Result<(), PolicyError> {
        let labels = object.metadata.labels.unwrap_or_default();
        let inv = &mut self.inventory;
        match src.kind.as_str() {
            "Namespace" => {
                inv.namespaces.insert(src.name.clone(), labels);
            }
            "Node" => {
                let windows = labels
                    .get("kubernetes.io/os")
                    .is_some_and(|os| os == "windows");
                inv.nodes.insert(src.name.clone(), windows);
            }
            "ServiceAccount" => {
                let ns = src.namespace.clone().unwrap_or_else(|| "default".into());
                inv.service_accounts.insert((ns, src.name.clone()), labels);
            }
            _ => {
                let spec = object.spec;
                inv.pods.push(Pod {
                    namespace: src.namespace.clone().unwrap_or_else(|| "default".into()),
                    name: src.name.clone(),
                    labels,
                    node: spec.node_name.unwrap_or_default(),
                    host_network: spec.host_network == Some(true),
                    phase: object.status.phase.clone().unwrap_or_default(),
                    service_account: spec
                        .service_account_name
                        .filter(|s| !s.is_empty())
                        .unwrap_or_else(|| "default".into()),
                    has_ip: object.status.pod_ip.is_some() || !object.status.pod_ips.is_empty(),
                    ipv4: std::iter::once(object.status.pod_ip.as_deref())
                        .chain(object.status.pod_ips.iter().map(|p| p.ip.as_deref()))
                        .flatten()
                        .find_map(|ip| ip.parse::<std::net::Ipv4Addr>().ok())
                        .map(u32::from),
                });
            }
        }
        Ok(())
    }

    /// Adds one item of a JSON list from its text (`list` is the list's apiVersion and item
    /// kind, for items without their own): a core object is read into only the fields the lint
    /// uses, never into a whole JSON tree.
    pub fn add_json(
        &mut self,
        text: &str,
        list: (&str, &str),
        origin: &str,
    ) -> Result<(), PolicyError> {
        let invalid = |e: serde_json::Error| PolicyError::Invalid {
            object: origin.to_owned(),
            problem: format!("an item of the list: {e}"),
        };
        // One pass over the text reads a core object with its type; only an item that is not
        // one (a policy) is read again, whole.
        let typed = serde_json::from_str::<CoreObject>(text);
        let head = match &typed {
            Ok(item) => (item.api_version.clone(), item.kind.clone()),
            // Another kind need not type these fields as a Pod does: a custom resource's
            // status is what its CRD's schema says.
            Err(_) => {
                let head: Head = serde_json::from_str(text).map_err(invalid)?;
                (head.api_version, head.kind)
            }
        };
        let (api_version, kind) = match &head.1 {
            Some(k) => (head.0.clone().unwrap_or_default(), k.clone()),
            None => (list.0.to_owned(), list.1.to_owned()),
        };
        if api_version == "v1" && CORE_KINDS.contains(&kind.as_str()) {
            self.count(origin)?;
            let item = typed.map_err(invalid)?;
            let m = &item.metadata;
            let src = Source::new(
                &api_version,
                &kind,
                m.name.as_deref(),
                m.namespace.as_deref(),
                origin,
            )?;
            return self.add_core(&src, item);
        }
        let mut v: Value = serde_json::from_str(text).map_err(invalid)?;
        if head.1.is_none() {
            v["kind"] = Value::String(kind);
            v["apiVersion"] = Value::String(api_version);
        }
        self.add(v, origin)
    }

    fn count(&mut self, origin: &str) -> Result<(), PolicyError> {
        self.objects += 1;
        self.within_cap(origin)
    }

    fn within_cap(&self, origin: &str) -> Result<(), PolicyError> {
        if self.objects > OBJECTS_CAP {
            return Err(PolicyError::Unreadable(format!(
                "{origin}: more than {OBJECTS_CAP} objects"
            )));
        }
        Ok(())
    }
}

/// Whether each item is the first with its key (one without a key always is).
fn firsts<'a, T, K: Eq + std::hash::Hash>(
    items: &'a [T],
    key: impl Fn(&'a T) -> Option<K>,
) -> Vec<bool> {
    let mut seen = foldhash::HashSet::default();
    items
        .iter()
        .map(|x| key(x).is_none_or(|k| seen.insert(k)))
        .collect()
}

/// The kinds whose labels and placement make the endpoints.
const CORE_KINDS: &[&str] = &["Pod", "Namespace", "Node", "ServiceAccount"];

/// An object's type, read alone when the object is not a core one.
#[derive(serde::Deserialize)]
struct Head {
    #[serde(rename = "apiVersion")]
    api_version: Option<String>,
    kind: Option<String>,
}

/// What the lint uses of a Pod, Namespace, Node or ServiceAccount, with the object's type;
/// other fields are skipped unread. A label value that is not a string is an error, as in
/// the API.
#[derive(serde::Deserialize, Default)]
struct CoreObject {
    #[serde(rename = "apiVersion")]
    api_version: Option<String>,
    kind: Option<String>,
    #[serde(default)]
    metadata: CoreMeta,
    #[serde(default)]
    spec: CoreSpec,
    #[serde(default)]
    status: CoreStatus,
}

#[derive(serde::Deserialize, Default)]
struct CoreMeta {
    name: Option<String>,
    namespace: Option<String>,
    labels: Option<BTreeMap<String, String>>,
}

#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct CoreSpec {
    node_name: Option<String>,
    host_network: Option<bool>,
    service_account_name: Option<String>,
}

#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct CoreStatus {
    phase: Option<String>,
    #[serde(rename = "podIP")]
    pod_ip: Option<String>,
    #[serde(rename = "podIPs", default)]
    pod_ips: Vec<PodIp>,
}

#[derive(serde::Deserialize, Default)]
struct PodIp {
    ip: Option<String>,
}

/// The most endpoints the report lists by their ACLs (the JSON and the text alike).
pub const WORST_ENDPOINTS: usize = 20;

/// What `lint policies` reports (`schema` 2: the two figures per policy, the endpoints' lists).
#[derive(Debug, serde::Serialize)]
pub struct Report {
    pub schema: u32,
    pub calico_version: String,
    pub windows_endpoints: u64,
    pub policies: Vec<cost::Row>,
    /// The Windows endpoints with the longest ACL lists, one per set of labels.
    pub endpoints: Vec<render::EndpointAcls>,
    pub findings: Vec<cost::Finding>,
}

/// Renders every policy and endpoint as Felix of `release` does and lists the findings,
/// costliest policy first.
pub fn lint(c: &Collected, release: felix::Release) -> Result<Report, PolicyError> {
    let name = felix::release_name(&release);
    let eps = Endpoints::of(&c.inventory);
    let mut renderer = felix::Renderer::new(&eps);
    // Which Windows endpoints each policy applies to is found on a second core while the
    // rules are rendered: neither reads what the other writes.
    let mut applies = Vec::new();
    let rendered: Vec<render::Rendered> = std::thread::scope(|s| {
        s.spawn(|| applies = render::applies(&eps, &c.policies));
        c.policies
            .iter()
            .map(|p| render::policy(&mut renderer, p))
            .collect()
    });
    let cluster = render::Cluster {
        policies: &c.policies,
        rendered: &rendered,
        tiers: &c.tiers,
        release,
    };
    let assembled = render::endpoints(&eps, &cluster, &applies);
    let mut policies = Vec::with_capacity(c.policies.len());
    let mut findings = Vec::new();
    for (i, ((p, r), classes)) in c.policies.iter().zip(&rendered).zip(&applies).enumerate() {
        let windows = if cluster.reaches_workloads(p) {
            classes.iter().map(|&k| eps.classes[k].windows).sum()
        } else {
            0
        };
        // The figures are what Felix programs: none where it loses the policy.
        let row = cost::row(p, r, windows, assembled.programmed[i]);
        findings.extend(cost::findings(&mut renderer, p, &row)?);
        policies.push(row);
    }
    let mut endpoints = assembled.endpoints;
    findings.extend(assembled.lost.iter().map(|l| lost_finding(c, l)));
    endpoints.truncate(WORST_ENDPOINTS);
    // Compared in place: a key of owned strings would be built at every comparison.
    policies.sort_by(|a, b| {
        b.hns_acls
            .cmp(&a.hns_acls)
            .then_with(|| (&a.kind, &a.namespace, &a.name).cmp(&(&b.kind, &b.namespace, &b.name)))
    });
    findings.sort_by_key(|f| std::cmp::Reverse(f.before.hns_acls.saturating_sub(f.after.hns_acls)));
    Ok(Report {
        schema: 2,
        calico_version: name,
        windows_endpoints: eps.windows_in(None),
        policies,
        endpoints,
        findings,
    })
}

fn named(p: &Policy) -> String {
    match &p.namespace {
        Some(ns) => format!("{} {ns}/{}", p.kind, p.name),
        None => format!("{} {}", p.kind, p.name),
    }
}

/// A defect of Felix's Windows code met on some endpoints, as a finding.
fn lost_finding(c: &Collected, l: &render::Lost) -> cost::Finding {
    let at = format!(
        "{} Windows endpoint(s), such as {}",
        l.endpoints,
        l.examples.join(", ")
    );
    let lost: Vec<String> = l
        .policies_lost
        .iter()
        .map(|&i| named(&c.policies[i]))
        .collect();
    let (message, text) = match l.code {
        "staged-policy-hides-later-policies" => (
            format!(
                "Felix on Windows creates no policy set for a staged policy, and stops at the missing set when it gathers the tier's rules (felix/dataplane/windows/policy_mgr.go:42-45, policysets.go:142-146 at v3.31.7): on {at}, tier {} loses {}",
                l.tier,
                lost.join(", ")
            ),
            "give the staged policy an order after the tier's enforced policies, or enforce or delete it".to_owned(),
        ),
        "unreachable-tier" => (
            format!(
                "no rule of tier {} passes, and its end-of-tier action is not Pass: on {at}, tier(s) {} after it are never reached",
                l.tier,
                l.tiers_lost.join(", ")
            ),
            "add a Pass rule (or defaultAction: Pass on the tier) where traffic should go on to the later tiers, or remove the later tiers' policies for these endpoints".to_owned(),
        ),
        _ => (
            format!(
                "a tier before default applies to {at}: Felix on Windows decides which endpoints to reprogram after a policy or IP set change by the endpoint's first tier only (felix/dataplane/windows/endpoint_mgr.go:259-273 at v3.31.7), so a change to a default-tier policy or its selectors' members reaches these endpoints only when something else reprograms them"
            ),
            "after changing a default-tier policy, restart CalicoFelix on the nodes of these endpoints, or keep their policies in one tier".to_owned(),
        ),
    };
    let (api_version, kind, namespace, name) = match l.policy.map(|i| &c.policies[i]) {
        Some(p) => (
            p.api_version.clone(),
            p.kind.clone(),
            p.namespace.clone(),
            p.name.clone(),
        ),
        None => (
            "projectcalico.org/v3".into(),
            "Tier".into(),
            None,
            l.tier.clone(),
        ),
    };
    cost::Finding {
        code: l.code,
        api_version,
        kind,
        namespace,
        name,
        rule: String::new(),
        message,
        suggestion: cost::Suggestion {
            text,
            rewrite: None,
        },
        before: cost::Figures::default(),
        after: cost::Figures::default(),
    }
}
