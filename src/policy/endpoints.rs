//! The endpoints Felix would hold and the labels Calico gives each: libcalico-go v3.31.7
//! `lib/backend/k8s/conversion/workload_endpoint_default.go` (the pod's labels, its namespace,
//! orchestrator and service account) and `conversion.go` (`NamespaceToProfile`,
//! `ServiceAccountToProfile`: the namespace's labels as `pcns.*`, the service account's as
//! `pcsa.*`, each with `projectcalico.org/name`), which the endpoint inherits under its own.
//! Endpoints with the same labels are one class, so each selector is evaluated once per class.

use std::collections::BTreeMap;

use foldhash::{HashMap, HashMapExt};

use super::model::{NAMESPACE_LABEL, SERVICE_ACCOUNT_LABEL};
use crate::selector::Node;

/// What the lint needs of a pod.
#[derive(Debug, Clone)]
pub struct Pod {
    pub namespace: String,
    /// Its name; empty when the object had none.
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub node: String,
    pub host_network: bool,
    pub phase: String,
    pub service_account: String,
    /// Whether the pod has an address yet (`status.podIP`, `status.podIPs`).
    pub has_ip: bool,
    /// Its IPv4 address, the one Felix on Windows puts in IP sets.
    pub ipv4: Option<u32>,
}

/// Pods, namespaces, nodes and service accounts, as read.
#[derive(Debug, Default)]
pub struct Inventory {
    pub pods: Vec<Pod>,
    pub namespaces: HashMap<String, BTreeMap<String, String>>,
    /// Each node and whether it is labelled `kubernetes.io/os=windows`.
    pub nodes: HashMap<String, bool>,
    pub service_accounts: HashMap<(String, String), BTreeMap<String, String>>,
}

/// Labels sorted by key: a selector looks each up by binary search, without hashing.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LabelSet(Vec<(String, String)>);

impl LabelSet {
    pub fn new(labels: HashMap<String, String>) -> Self {
        let mut v: Vec<(String, String)> = labels.into_iter().collect();
        v.sort_unstable();
        LabelSet(v)
    }
}

impl crate::selector::Labels for LabelSet {
    fn label(&self, key: &str) -> Option<&str> {
        self.0
            .binary_search_by(|(k, _)| k.as_str().cmp(key))
            .ok()
            .map(|i| self.0[i].1.as_str())
    }
}

/// Endpoints with one set of labels.
#[derive(Debug)]
pub struct Class {
    pub labels: LabelSet,
    /// How many of them are on Windows nodes.
    pub windows: u64,
    /// How many have an IPv4 address: each is one member of Calico's IP sets.
    pub all: u64,
    /// Those addresses (for a rule's `nets` intersected with its selector).
    pub ips: Vec<u32>,
    /// A Windows endpoint of the class, `namespace/name`, to name it in the report.
    pub example: Option<String>,
}

/// The cluster's endpoints, by class and namespace.
#[derive(Debug, Default)]
pub struct Endpoints {
    pub classes: Vec<Class>,
    /// The classes with each label and value: a selector that requires one (`k == "v"` alone
    /// or in a top-level `&&`) is evaluated only against the classes that have it.
    postings: HashMap<(String, String), Vec<usize>>,
    windows: u64,
    windows_by_namespace: HashMap<String, u64>,
}

/// The count of endpoints a selector matches: all of them, and those on Windows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Matched {
    pub all: u64,
    pub windows: u64,
}

fn is_endpoint(p: &Pod) -> bool {
    // IsValidCalicoWorkloadEndpoint and IsFinished: scheduled, not host-networked, not done;
    // and a pod without an address yet is no endpoint (libcalico-go v3.31.7
    // lib/backend/syncersv1/updateprocessors/workloadendpointprocessor.go:51-57: an endpoint
    // without IP networks is not passed on).
    !p.host_network
        && !p.node.is_empty()
        && !matches!(p.phase.as_str(), "Succeeded" | "Failed" | "Completed")
        && p.has_ip
}

fn labels_of(inv: &Inventory, p: &Pod) -> HashMap<String, String> {
    let mut l = HashMap::new();
    if let Some(ns) = inv.namespaces.get(&p.namespace) {
        l.extend(ns.iter().map(|(k, v)| (format!("pcns.{k}"), v.clone())));
    }
    l.insert("pcns.projectcalico.org/name".into(), p.namespace.clone());
    let sa = &p.service_account;
    if let Some(labels) = inv.service_accounts.get(&(p.namespace.clone(), sa.clone())) {
        l.extend(labels.iter().map(|(k, v)| (format!("pcsa.{k}"), v.clone())));
    }
    l.insert("pcsa.projectcalico.org/name".into(), sa.clone());
    l.extend(p.labels.iter().map(|(k, v)| (k.clone(), v.clone())));
    l.insert(NAMESPACE_LABEL.into(), p.namespace.clone());
    l.insert("projectcalico.org/orchestrator".into(), "k8s".into());
    // Set at any length (workloadendpointprocessor.go:139-148 at v3.31.7).
    if !sa.is_empty() {
        l.insert(SERVICE_ACCOUNT_LABEL.into(), sa.clone());
    }
    l
}

impl Endpoints {
    /// The endpoints of `inv`'s pods, grouped by their labels.
    pub fn of(inv: &Inventory) -> Self {
        let mut out = Endpoints::default();
        let mut index: HashMap<LabelSet, usize> = HashMap::new();
        // A pod's labels as an endpoint follow from its namespace, service account and own
        // labels: pods alike in those (a workload's replicas) are given the first one's class.
        let mut alike: HashMap<(&str, &str, &BTreeMap<String, String>), usize> = HashMap::new();
        for p in inv.pods.iter().filter(|p| is_endpoint(p)) {
            let windows = u64::from(inv.nodes.get(&p.node).copied().unwrap_or(false));
            let key = (p.namespace.as_str(), p.service_account.as_str(), &p.labels);
            let i = match alike.get(&key) {
                Some(&i) => i,
                None => {
                    let labels = LabelSet::new(labels_of(inv, p));
                    let i = out.class_of(labels, &mut index);
                    alike.insert(key, i);
                    i
                }
            };
            let class = &mut out.classes[i];
            class.windows += windows;
            if let Some(ip) = p.ipv4 {
                class.all += 1;
                class.ips.push(ip);
            }
            if windows == 1 && class.example.is_none() {
                class.example = Some(format!("{}/{}", p.namespace, p.name));
            }
            out.windows += windows;
            // The namespace is copied once, not once a pod.
            match out.windows_by_namespace.get_mut(&p.namespace) {
                Some(n) => *n += windows,
                None => {
                    out.windows_by_namespace
                        .insert(p.namespace.clone(), windows);
                }
            }
        }
        out
    }

    /// The class of endpoints with `labels`, added when new.
    fn class_of(&mut self, labels: LabelSet, index: &mut HashMap<LabelSet, usize>) -> usize {
        if let Some(&i) = index.get(&labels) {
            return i;
        }
        let i = self.classes.len();
        for (k, v) in &labels.0 {
            self.postings
                .entry((k.clone(), v.clone()))
                .or_default()
                .push(i);
        }
        self.classes.push(Class {
            labels: labels.clone(),
            windows: 0,
            all: 0,
            ips: Vec::new(),
            example: None,
        });
        index.insert(labels, i);
        i
    }

    /// Windows endpoints in a namespace, or in the cluster for `None`.
    pub fn windows_in(&self, namespace: Option<&str>) -> u64 {
        match namespace {
            Some(ns) => self.windows_by_namespace.get(ns).copied().unwrap_or(0),
            None => self.windows,
        }
    }

    /// The postings of one label and value (sorted class indices; empty when none has it).
    fn posting(&self, key: &str, value: &str) -> &[usize] {
        // A lookup by a borrowed pair: the map's key is owned, so build it once per call.
        self.postings
            .get(&(key.to_owned(), value.to_owned()))
            .map_or(&[][..], Vec::as_slice)
    }

    /// The classes `selector` matches, sorted. Equalities, `in` sets and their negations
    /// inside a top-level `&&` are answered from the postings with integers; every other term
    /// is evaluated on the classes the positive ones leave.
    pub fn select(&self, selector: &Node) -> Vec<usize> {
        let mut terms: Vec<&Node> = Vec::new();
        flatten_and(selector, &mut terms);
        // The positive term with the fewest classes, from the postings.
        let mut best: Option<(usize, Vec<usize>)> = None;
        for (t, term) in terms.iter().enumerate() {
            let list: Option<Vec<usize>> = match term {
                Node::Eq(k, v) => Some(self.posting(k, v).to_vec()),
                Node::In(k, vs) => {
                    let mut l: Vec<usize> = vs
                        .iter()
                        .flat_map(|v| self.posting(k, v).iter().copied())
                        .collect();
                    l.sort_unstable();
                    l.dedup();
                    Some(l)
                }
                _ => None,
            };
            if let Some(l) = list
                && best.as_ref().is_none_or(|(_, b)| l.len() < b.len())
            {
                best = Some((t, l));
            }
        }
        let (skip, mut out) = match best {
            Some((t, l)) => (Some(t), l),
            None => (None, (0..self.classes.len()).collect()),
        };
        for (t, term) in terms.iter().enumerate() {
            if Some(t) == skip || out.is_empty() {
                continue;
            }
            match term {
                Node::All => {}
                Node::Eq(k, v) => keep_in(&mut out, self.posting(k, v)),
                Node::Ne(k, v) => drop_in(&mut out, self.posting(k, v)),
                Node::NotIn(k, vs) => {
                    for v in vs {
                        drop_in(&mut out, self.posting(k, v));
                    }
                }
                other => out.retain(|&i| other.matches(&self.classes[i].labels)),
            }
        }
        out
    }

    /// The endpoints `selector` matches.
    pub fn matched(&self, selector: &Node) -> Matched {
        let mut m = Matched::default();
        for i in self.select(selector) {
            let c = &self.classes[i];
            m.all += c.all;
            m.windows += c.windows;
        }
        m
    }

    /// How many of the addresses `selector` matches lie in `nets` (`iputils.IntersectCIDRs`
    /// of the IP set's /32s with the rule's networks).
    pub fn matched_in(&self, selector: &Node, nets: &[super::model::Net]) -> u64 {
        let mut n = 0u64;
        for i in self.select(selector) {
            let c = &self.classes[i];
            n += c
                .ips
                .iter()
                .filter(|ip| nets.iter().any(|net| net.contains(**ip)))
                .count() as u64;
        }
        n
    }

    /// The classes with Windows endpoints that `selector` matches.
    pub fn windows_classes_matching(&self, selector: &Node) -> Vec<usize> {
        let mut out = self.select(selector);
        out.retain(|&i| self.classes[i].windows > 0);
        out
    }
}

/// A selector's terms under nested top-level `&&`s.
fn flatten_and<'n>(n: &'n Node, out: &mut Vec<&'n Node>) {
    match n {
        Node::And(terms) => terms.iter().for_each(|t| flatten_and(t, out)),
        other => out.push(other),
    }
}

/// Keeps the sorted `list`'s entries that are in the sorted `posting`.
fn keep_in(list: &mut Vec<usize>, posting: &[usize]) {
    list.retain(|i| posting.binary_search(i).is_ok());
}

/// Drops the sorted `list`'s entries that are in the sorted `posting`.
fn drop_in(list: &mut Vec<usize>, posting: &[usize]) {
    if !posting.is_empty() {
        list.retain(|i| posting.binary_search(i).is_err());
    }
}
