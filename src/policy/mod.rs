//! Calico network policy as Felix renders it on Windows (its selectors: `crate::selector`): the
//! labels of an endpoint, policies from either API, and what each costs in HNS rules (`lint policies`).

pub mod cost;
pub mod endpoints;
pub mod input;
pub mod k8s;
pub mod model;
mod source;

use std::collections::BTreeMap;

use serde_json::Value;

use endpoints::{Endpoints, Inventory, Pod};
use model::Policy;
pub use source::{NAME_CAP, PolicyError, Source};

/// The most objects one lint reads (files and cluster alike).
pub const OBJECTS_CAP: usize = 2_000_000;
/// The objects read: what the endpoints are and the policies.
#[derive(Debug, Default)]
pub struct Collected {
    pub inventory: Inventory,
    pub policies: Vec<Policy>,
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
            ("networking.k8s.io/v1", "NetworkPolicy") => {
                let src = Source::of(&object, api_version, kind, origin)?;
                self.policies.push(model::kubernetes(&src, &object)?);
            }
            (_, "NetworkPolicy" | "GlobalNetworkPolicy") if calico => {
                let mut src = Source::of(&object, api_version, kind, origin)?;
                if kind == "NetworkPolicy" && src.namespace.is_none() {
                    src.namespace = Some("default".into());
                }
                if kind == "GlobalNetworkPolicy" {
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
        use std::collections::HashSet;
        let before = self.inventory.pods.len() + self.policies.len();
        let mut pods = HashSet::new();
        self.inventory
            .pods
            .retain(|p| p.name.is_empty() || pods.insert((p.namespace.clone(), p.name.clone())));
        let mut policies = HashSet::new();
        self.policies.retain(|p| {
            let family = if p.api_version.starts_with("networking.k8s.io") {
                "kubernetes"
            } else {
                "calico"
            };
            policies.insert((family, p.kind.clone(), p.namespace.clone(), p.name.clone()))
        });
        before - self.inventory.pods.len() - self.policies.len()
    }

    /// Adds what another collection read (from `origin`), after this one's.
    pub fn merge(&mut self, other: Collected, origin: &str) -> Result<(), PolicyError> {
        self.objects += other.objects;
        self.within_cap(origin)?;
        self.ignored += other.ignored;
        self.policies.extend(other.policies);
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
                    phase: object.status.phase.unwrap_or_default(),
                    service_account: spec
                        .service_account_name
                        .filter(|s| !s.is_empty())
                        .unwrap_or_else(|| "default".into()),
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
        let head: Head = serde_json::from_str(text).map_err(invalid)?;
        let (api_version, kind) = match &head.kind {
            Some(k) => (head.api_version.clone().unwrap_or_default(), k.clone()),
            None => (list.0.to_owned(), list.1.to_owned()),
        };
        if api_version == "v1" && CORE_KINDS.contains(&kind.as_str()) {
            self.count(origin)?;
            let core: CoreObject = serde_json::from_str(text).map_err(invalid)?;
            let m = &core.metadata;
            let src = Source::new(
                &api_version,
                &kind,
                m.name.as_deref(),
                m.namespace.as_deref(),
                origin,
            )?;
            return self.add_core(&src, core);
        }
        let mut v: Value = serde_json::from_str(text).map_err(invalid)?;
        if head.kind.is_none() {
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

/// The kinds whose labels and placement make the endpoints.
const CORE_KINDS: &[&str] = &["Pod", "Namespace", "Node", "ServiceAccount"];

/// An object's type, read before the rest.
#[derive(serde::Deserialize)]
struct Head {
    #[serde(rename = "apiVersion")]
    api_version: Option<String>,
    kind: Option<String>,
}

/// What the lint uses of a Pod, Namespace, Node or ServiceAccount; other fields are skipped
/// unread. A label value that is not a string is an error, as in the API.
#[derive(serde::Deserialize, Default)]
struct CoreObject {
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
struct CoreStatus {
    phase: Option<String>,
}

/// What `lint policies` reports.
#[derive(Debug, serde::Serialize)]
pub struct Report {
    pub windows_endpoints: u64,
    pub policies: Vec<cost::Estimate>,
    pub findings: Vec<cost::Finding>,
}

/// Estimates every policy and lists the findings, costliest policy first.
pub fn lint(c: &Collected) -> Result<Report, PolicyError> {
    let eps = Endpoints::of(&c.inventory);
    let mut cache = cost::Cache::default();
    let mut policies = Vec::with_capacity(c.policies.len());
    let mut findings = Vec::new();
    for p in &c.policies {
        let e = cost::estimate(&mut cache, &eps, p);
        findings.extend(cost::findings(&mut cache, &eps, p, &e)?);
        policies.push(e);
    }
    let key = |e: &cost::Estimate| {
        (
            std::cmp::Reverse(e.estimated_rules),
            e.kind.clone(),
            e.namespace.clone(),
            e.name.clone(),
        )
    };
    policies.sort_by_key(key);
    findings.sort_by_key(|f| {
        std::cmp::Reverse(f.estimated_rules.saturating_sub(f.estimated_rules_after))
    });
    Ok(Report {
        windows_endpoints: eps.windows_in(None),
        policies,
        findings,
    })
}
