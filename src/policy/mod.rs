//! Calico network policy as Felix renders it on Windows: the selector language, the labels of
//! an endpoint, policies from either API, and what each costs in HNS rules (`lint policies`).

pub mod cost;
pub mod endpoints;
pub mod input;
pub mod k8s;
pub mod model;
pub mod selector;

use std::collections::BTreeMap;

use serde_json::Value;

use endpoints::{Endpoints, Inventory, Pod};
use model::Policy;

/// The most objects one lint reads (files and cluster alike).
pub const OBJECTS_CAP: usize = 2_000_000;
/// The longest object name (a DNS subdomain).
pub const NAME_CAP: usize = 253;

/// Input `lint policies` cannot use.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("{object}: {problem}")]
    Invalid { object: String, problem: String },
    #[error("cannot read {path}: {cause}")]
    Unreadable { path: String, cause: String },
}

impl crate::error::Diagnose for PolicyError {
    fn diagnose(&self) -> Option<crate::error::Diagnosis> {
        use crate::error::{Diagnosis, Exit, Kind};
        match self {
            Self::Invalid { .. } => Diagnosis::new(
                Exit::Usage,
                Kind::InvalidInput,
                "fix the object named (Calico would refuse it too), or leave it out of --from-file",
            ),
            Self::Unreadable { .. } => Diagnosis::new(
                Exit::Usage,
                Kind::InputUnreadable,
                "--from-file takes YAML or JSON files, or directories of them (*.yaml, *.yml, *.json)",
            ),
        }
    }
}

/// Where an object came from and what it is, for errors that name it.
#[derive(Debug, Clone)]
pub struct Source {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    pub origin: String,
}

impl Source {
    /// The identity of `object`, checked: a name of at most 253 characters of a DNS subdomain.
    pub fn of(
        object: &Value,
        api_version: &str,
        kind: &str,
        origin: &str,
    ) -> Result<Self, PolicyError> {
        let meta = object.get("metadata");
        let field = |k: &str| {
            meta.and_then(|m| m.get(k))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let src = Source {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
            namespace: field("namespace"),
            name: field("name").unwrap_or_default(),
            origin: origin.to_owned(),
        };
        for (what, v) in [
            ("name", Some(&src.name)),
            ("namespace", src.namespace.as_ref()),
        ] {
            let Some(v) = v else { continue };
            let ok = !v.is_empty()
                && v.len() <= NAME_CAP
                && v.bytes().all(|b| {
                    b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.'
                });
            if !ok {
                return Err(src.invalid(format!(
                    "metadata.{what} {:?} is not a DNS subdomain of at most {NAME_CAP} characters",
                    v.chars().take(80).collect::<String>()
                )));
            }
        }
        Ok(src)
    }

    pub fn invalid(&self, problem: impl Into<String>) -> PolicyError {
        let ns = self
            .namespace
            .as_deref()
            .map(|n| format!("{n}/"))
            .unwrap_or_default();
        PolicyError::Invalid {
            object: format!(
                "{} {ns}{} ({}, {})",
                self.kind, self.name, self.api_version, self.origin
            ),
            problem: problem.into(),
        }
    }
}

/// The objects read: what the endpoints are and the policies.
#[derive(Debug, Default)]
pub struct Collected {
    pub inventory: Inventory,
    pub policies: Vec<Policy>,
    pub objects: usize,
    /// Objects of kinds the lint does not use.
    pub ignored: usize,
}

fn string_map(
    src: &Source,
    field: &str,
    v: Option<&Value>,
) -> Result<BTreeMap<String, String>, PolicyError> {
    let Some(map) = v.filter(|v| !v.is_null()) else {
        return Ok(BTreeMap::new());
    };
    let map = map
        .as_object()
        .ok_or_else(|| src.invalid(format!("{field} is not a map")))?;
    map.iter()
        .map(|(k, v)| match v.as_str() {
            Some(s) => Ok((k.clone(), s.to_owned())),
            None => Err(src.invalid(format!("{field}.{k} is not a string"))),
        })
        .collect()
}

impl Collected {
    /// Adds one object (a `List` adds its items).
    pub fn add(&mut self, mut object: Value, origin: &str) -> Result<(), PolicyError> {
        self.objects += 1;
        if self.objects > OBJECTS_CAP {
            return Err(PolicyError::Unreadable {
                path: origin.to_owned(),
                cause: format!("more than {OBJECTS_CAP} objects"),
            });
        }
        let text = |o: &Value, k: &str| o.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        let (api_version, kind) = (text(&object, "apiVersion"), text(&object, "kind"));
        if let (true, Some(Value::Array(items))) =
            (kind.ends_with("List"), object.get_mut("items").map(Value::take))
        {
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
                self.add_core(&src, &object)?;
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

    /// Adds what another collection read (from `origin`), after this one's.
    pub fn merge(&mut self, other: Collected, origin: &str) -> Result<(), PolicyError> {
        self.objects += other.objects;
        if self.objects > OBJECTS_CAP {
            return Err(PolicyError::Unreadable {
                path: origin.to_owned(),
                cause: format!("more than {OBJECTS_CAP} objects"),
            });
        }
        self.ignored += other.ignored;
        self.policies.extend(other.policies);
        let inv = other.inventory;
        self.inventory.pods.extend(inv.pods);
        self.inventory.namespaces.extend(inv.namespaces);
        self.inventory.nodes.extend(inv.nodes);
        self.inventory.service_accounts.extend(inv.service_accounts);
        Ok(())
    }

    fn add_core(&mut self, src: &Source, object: &Value) -> Result<(), PolicyError> {
        let labels = string_map(src, "metadata.labels", object.pointer("/metadata/labels"))?;
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
                let s = |p: &str| {
                    object
                        .pointer(p)
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned()
                };
                let sa = s("/spec/serviceAccountName");
                inv.pods.push(Pod {
                    namespace: src.namespace.clone().unwrap_or_else(|| "default".into()),
                    labels,
                    node: s("/spec/nodeName"),
                    host_network: object.pointer("/spec/hostNetwork").and_then(Value::as_bool)
                        == Some(true),
                    phase: s("/status/phase"),
                    service_account: if sa.is_empty() { "default".into() } else { sa },
                });
            }
        }
        Ok(())
    }
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
