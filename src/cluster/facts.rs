//! What the cluster says about Calico: namespace, datastore, version, IP pools, IPAM, Felix,
//! the backend, kube-dns, the service CIDR, this node, and what the identity may do.

use super::calico_api::{Group, Kind, read_locks};
use super::{Cluster, ClusterError};
use crate::config::Raw;
use crate::k8s_name::NodeName;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Service};
use kube::Api;
use kube::api::{DynamicObject, ListParams, PostParams};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// One Calico IP pool.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IpPool {
    pub name: String,
    pub cidr: String,
    pub block_size: u8,
    pub ipip_mode: String,
    pub vxlan_mode: String,
    pub nat_outgoing: bool,
    pub ipv6: bool,
    /// Which nodes the pool serves (Calico's selector syntax; `all()` when unset).
    pub node_selector: String,
    pub disabled: bool,
}

/// The default FelixConfiguration's settings that matter on Windows (unset when absent).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Felix {
    pub vxlan_enabled: Option<bool>,
    /// `vxlanVNI` as the FelixConfiguration sets it; `vni()` is the one Felix uses.
    pub vxlan_vni: Option<u32>,
    pub vxlan_port: Option<u16>,
    pub ipip_enabled: Option<bool>,
    pub wireguard_enabled: Option<bool>,
}

/// The VNI Felix uses when its FelixConfiguration sets none (projectcalico/calico v3.31.7
/// felix/config/config_params.go:351, `VXLANVNI int \`config:"int;4096"\``).
pub const FELIX_DEFAULT_VNI: u32 = 4096;

impl Felix {
    /// The VXLAN VNI Felix uses: `vxlanVNI`, else its default (applied here only).
    pub fn vni(&self) -> u32 {
        self.vxlan_vni.unwrap_or(FELIX_DEFAULT_VNI)
    }
}

/// A permission the identity was asked about.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Permission {
    pub verb: String,
    /// The API group, `""` for the core group.
    pub group: String,
    /// The resource, `serviceaccounts/token` for a subresource.
    pub resource: String,
    /// The object's name, when the right is for named objects.
    pub name: Option<String>,
    pub namespace: Option<String>,
    pub allowed: bool,
}

impl Permission {
    /// Anything in the cluster (`*` on `*` in every group): what cluster-admin may do.
    pub fn anything() -> Self {
        Self {
            verb: "*".into(),
            group: "*".into(),
            resource: "*".into(),
            name: None,
            namespace: None,
            allowed: false,
        }
    }

    /// `create serviceaccounts/token calico-node in calico-system`.
    pub fn describe(&self) -> String {
        let group = if self.group.is_empty() {
            String::new()
        } else {
            format!(".{}", self.group)
        };
        let mut out = format!("{} {}{group}", self.verb, self.resource);
        if let Some(n) = &self.name {
            out.push_str(&format!(" {n}"));
        }
        if let Some(ns) = &self.namespace {
            out.push_str(&format!(" in {ns}"));
        }
        out
    }
}

/// Everything the cluster checks look at.
#[derive(Clone, Debug, Serialize)]
pub struct ClusterFacts {
    pub server: String,
    /// `calico-system` for operator installs, else `kube-system`.
    pub namespace: String,
    /// `kubernetes` or `etcdv3`; `None` when Calico is not found.
    pub datastore: Option<String>,
    /// The etcd endpoints in the `calico-config` ConfigMap (etcd datastore only).
    pub etcd_endpoints: Vec<String>,
    pub calico_version: Option<String>,
    /// The API group Calico's resources are served in (`cluster::calico_api`).
    pub calico_api: Group,
    /// ClusterInformation's `datastoreReady`: `false` while the datastore is locked (a
    /// datastore migration copying resources).
    pub datastore_ready: Option<bool>,
    /// Each Calico group's lock, which decides the group this node's components must be
    /// pinned to (`calico_api::Locks::pin`); the default (nothing served) on etcd.
    pub calico_locks: super::calico_api::Locks,
    /// The cluster's `DatastoreMigration`, if any.
    pub datastore_migration: Option<super::calico_api::Migration>,
    /// Why the DatastoreMigrations could not be read, when they could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub datastore_migration_unreadable: Option<String>,
    /// The operator's Installation `default`, the parts that decide where and how it runs
    /// Calico on Windows; `None` without one.
    pub installation: Option<super::installation::Installation>,
    pub ip_pools: Vec<IpPool>,
    pub strict_affinity: Option<bool>,
    pub felix: Felix,
    /// `vxlan` or `windows-bgp` as Calico's quickstart detects it; `None` when IPIP makes it
    /// undecidable or Calico is not found.
    pub backend: Option<String>,
    pub service_cidrs: Vec<String>,
    pub dns_ip: Option<String>,
    /// This node's name (the config's `node.name`) and whether its Node object exists.
    pub node: NodeName,
    pub node_exists: bool,
    /// The Node's labels, for the IP pools' node selectors.
    pub node_labels: BTreeMap<String, String>,
    /// The pods kubelet schedules on the node at most (`status.capacity.pods`, its maxPods).
    pub node_max_pods: Option<u64>,
    /// The Node's first IPv4 `InternalIP` (`status.addresses`), as kubelet posts it.
    pub node_internal_ip: Option<std::net::Ipv4Addr>,
    /// The Calico Node's `spec.bgp.ipv4Address` without its prefix: on the Kubernetes
    /// datastore the Node's annotation `projectcalico.org/IPv4Address` (libcalico-go v3.31.0
    /// `lib/backend/k8s/resources/node.go`), which Felix sends VXLAN to
    /// (`felix/calc/vxlan_resolver.go`).
    pub node_bgp_ipv4: Option<std::net::Ipv4Addr>,
    /// What the identity may do, one access review per right; `None` when not asked (only the
    /// `rbac` check asks).
    pub permissions: Option<Vec<Permission>>,
    /// The Node as read, whose readiness and cordon are judged from this one read.
    #[serde(skip)]
    pub node_object: Option<Node>,
}

impl ClusterFacts {
    /// The Node's `status.nodeInfo`, when it was read.
    fn node_info(&self) -> Option<&k8s_openapi::api::core::v1::NodeSystemInfo> {
        self.node_object
            .as_ref()?
            .status
            .as_ref()?
            .node_info
            .as_ref()
    }

    /// kube-proxy's version as the Node reports it (`status.nodeInfo.kubeProxyVersion`); the
    /// kubelet may leave it empty (kubernetes `DisableNodeKubeProxyVersion`).
    pub fn kube_proxy_version(&self) -> Option<String> {
        Some(self.node_info()?.kube_proxy_version.clone()).filter(|v| !v.is_empty())
    }

    /// The container runtime's version as the Node reports it
    /// (`status.nodeInfo.containerRuntimeVersion`, `containerd://1.7.20`).
    pub fn runtime_version(&self) -> Option<String> {
        Some(self.node_info()?.container_runtime_version.clone()).filter(|v| !v.is_empty())
    }
}

/// Whether a read of the cluster asks for the identity's rights (`preflight`, `install`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rights {
    Ask,
    Skip,
    /// Neither the rights nor what only the checks, install and migrate judge by (the
    /// operator's Installation, the IPAMConfig's strict affinity): `status`'s one look.
    Look,
}

fn spec<'a>(o: &'a DynamicObject, key: &str) -> Option<&'a Value> {
    o.data.get("spec").and_then(|s| s.get(key))
}

/// Calico's namespace: `calico-system` for operator installs (it exists), else `kube-system`.
pub fn calico_namespace(c: &Cluster) -> Result<String, ClusterError> {
    let namespaces: Api<Namespace> = Api::all(c.client.clone());
    let ns = "calico-system";
    let found = c.call_opt("get", &format!("namespaces/{ns}"), namespaces.get(ns))?;
    Ok(found.map_or("kube-system", |_| ns).to_owned())
}

/// The etcd endpoints in Calico's `calico-config` ConfigMap (empty for the Kubernetes
/// datastore).
pub fn etcd_endpoints(c: &Cluster, namespace: &str) -> Result<Vec<String>, ClusterError> {
    let config_map = c.get_in::<ConfigMap>(namespace, "calico-config")?;
    Ok(config_map
        .and_then(|m| m.data)
        .and_then(|d| {
            d.get("etcd_endpoints")
                .map(|e| crate::config::split_list(e))
        })
        .unwrap_or_default())
}

/// Reads the facts; `node` is this node's name.
pub fn gather(c: &Cluster, node: &NodeName, rights: Rights) -> Result<ClusterFacts, ClusterError> {
    gather_knowing(c, node, rights, None)
}

/// `gather`, with the Node already read by the caller (`Some`).
pub fn gather_knowing(
    c: &Cluster,
    node: &NodeName,
    rights: Rights,
    known: Option<Node>,
) -> Result<ClusterFacts, ClusterError> {
    let namespace = calico_namespace(c)?;
    let info = calico_default(c, Kind::ClusterInformation)?;
    let etcd_endpoints = etcd_endpoints(c, &namespace)?;
    let datastore = datastore_of(info.as_ref(), &etcd_endpoints);
    let calico_version = info.as_ref().and_then(version_of);
    let datastore_ready = info
        .as_ref()
        .and_then(|i| spec(i, "datastoreReady"))
        .and_then(Value::as_bool);
    let migration = super::calico_api::read_migration(c);
    let ip_pools = ip_pools(c)?;
    let strict_affinity = strict_affinity(c, rights)?;
    let felix = felix(c)?;
    let backend = detect_backend(&felix, &ip_pools, info.is_some());
    let node_object = match known {
        Some(n) => Some(n),
        None => super::node::get(c, node)?,
    };
    let node_exists = node_object.is_some();
    let node_labels = node_object
        .as_ref()
        .and_then(|n| n.metadata.labels.clone())
        .unwrap_or_default();
    let node_max_pods = node_object
        .as_ref()
        .and_then(|n| n.status.as_ref()?.capacity.as_ref()?.get("pods"))
        .and_then(|q| q.0.parse::<u64>().ok());
    let node_internal_ip = node_object.as_ref().and_then(super::node::internal_ip);
    let node_bgp_ipv4 = node_object.as_ref().and_then(super::node::bgp_ipv4);
    let permissions = match rights {
        Rights::Ask => Some(permissions(
            c,
            &namespace,
            datastore.as_deref() == Some("etcdv3"),
        )?),
        Rights::Skip | Rights::Look => None,
    };
    Ok(ClusterFacts {
        server: c.server.clone(),
        installation: match rights {
            Rights::Look => None,
            _ => super::installation::read(c)?,
        },
        calico_api: c.calico_group()?,
        datastore_ready,
        // Each group's lock on the Kubernetes datastore (`datastoreReady` read); none on etcd.
        calico_locks: match datastore.as_deref() {
            Some("kubernetes") => read_locks(c, (c.calico_group()?, datastore_ready))?,
            _ => Default::default(),
        },
        datastore_migration: migration.as_ref().ok().cloned().flatten(),
        datastore_migration_unreadable: migration.err().map(|e| e.to_string()),
        service_cidrs: service_cidrs(c)?,
        dns_ip: dns_ip(c)?,
        namespace,
        datastore,
        etcd_endpoints,
        calico_version,
        ip_pools,
        strict_affinity,
        felix,
        backend,
        node: node.clone(),
        node_exists,
        node_labels,
        node_max_pods,
        node_internal_ip,
        node_bgp_ipv4,
        node_object,
        permissions,
    })
}

/// The datastore: etcd where calico-config names etcd endpoints, else the ClusterInformation's
/// `datastoreType` (kubernetes when unset); `None` without Calico.
fn datastore_of(info: Option<&DynamicObject>, etcd_endpoints: &[String]) -> Option<String> {
    match (info, !etcd_endpoints.is_empty()) {
        (_, true) => Some("etcdv3".to_owned()),
        (Some(i), false) => Some(
            spec(i, "datastoreType")
                .and_then(Value::as_str)
                .unwrap_or("kubernetes")
                .to_owned(),
        ),
        (None, false) => None,
    }
}

/// The IPAMConfig's strict affinity, unless the read is status's look, which does not judge it.
fn strict_affinity(c: &Cluster, rights: Rights) -> Result<Option<bool>, ClusterError> {
    Ok(match rights {
        Rights::Look => None,
        _ => calico_default(c, Kind::IpamConfig)?
            .and_then(|o| spec(&o, "strictAffinity").and_then(Value::as_bool)),
    })
}

/// ClusterInformation's `calicoVersion`, when Calico is installed and says one (a `get` of
/// `clusterinformations/default` only).
pub fn calico_version(c: &Cluster) -> Result<Option<String>, ClusterError> {
    Ok(calico_default(c, Kind::ClusterInformation)?
        .as_ref()
        .and_then(version_of))
}

fn version_of(info: &DynamicObject) -> Option<String> {
    spec(info, "calicoVersion")?.as_str().map(str::to_owned)
}

/// Calico's cluster-wide object `default` of a kind, if it exists.
fn calico_default(c: &Cluster, kind: Kind) -> Result<Option<DynamicObject>, ClusterError> {
    let ar = c.calico_resource(kind)?;
    let api: Api<DynamicObject> = Api::all_with(c.client.clone(), &ar);
    c.call_opt("get", &format!("{}/default", ar.plural), api.get("default"))
}

fn ip_pools(c: &Cluster) -> Result<Vec<IpPool>, ClusterError> {
    let api: Api<DynamicObject> =
        Api::all_with(c.client.clone(), &c.calico_resource(Kind::IpPool)?);
    Ok(
        c.call_opt("list", "ippools", api.list(&ListParams::default()))?
            .map(|l| l.items.iter().map(ip_pool).collect::<Vec<_>>())
            .unwrap_or_default(),
    )
}

/// FelixConfiguration `default`'s VXLAN, IPIP and WireGuard settings.
fn felix(c: &Cluster) -> Result<Felix, ClusterError> {
    Ok(calico_default(c, Kind::FelixConfiguration)?
        .map(|o| Felix {
            vxlan_enabled: spec(&o, "vxlanEnabled").and_then(Value::as_bool),
            vxlan_vni: spec(&o, "vxlanVNI")
                .and_then(Value::as_u64)
                .and_then(|v| u32::try_from(v).ok()),
            vxlan_port: spec(&o, "vxlanPort")
                .and_then(Value::as_u64)
                .and_then(|v| u16::try_from(v).ok()),
            ipip_enabled: spec(&o, "ipipEnabled").and_then(Value::as_bool),
            wireguard_enabled: spec(&o, "wireguardEnabled").and_then(Value::as_bool),
        })
        .unwrap_or_default())
}

/// The kube-dns service's cluster IP.
fn dns_ip(c: &Cluster) -> Result<Option<String>, ClusterError> {
    let dns = c.get_in::<Service>("kube-system", "kube-dns")?;
    Ok(dns.and_then(|s| s.spec.and_then(|s| s.cluster_ip)))
}

/// The service CIDRs of the `kubernetes` ServiceCIDR (Kubernetes 1.33 and later).
fn service_cidrs(c: &Cluster) -> Result<Vec<String>, ClusterError> {
    let api = c.dynamic(("networking.k8s.io", "v1", "ServiceCIDR", "servicecidrs"));
    Ok(
        c.call_opt("get", "servicecidrs/kubernetes", api.get("kubernetes"))?
            .and_then(|o| spec(&o, "cidrs").cloned())
            .and_then(|v| serde_json::from_value::<Vec<String>>(v).ok())
            .unwrap_or_default(),
    )
}

/// Whether the identity may make every call of `rights::INSTALLER`: one access review per verb
/// and named object.
fn permissions(c: &Cluster, namespace: &str, etcd: bool) -> Result<Vec<Permission>, ClusterError> {
    use super::rights::{Scope, in_group, installer};
    let mut permissions = Vec::new();
    for right in &in_group(&installer(etcd), c.calico_group()?) {
        let ns = match right.scope {
            Scope::Cluster => None,
            Scope::Calico => Some(namespace.to_owned()),
            Scope::KubeSystem => Some("kube-system".to_owned()),
            Scope::TigeraOperator => Some("tigera-operator".to_owned()),
        };
        let names: Vec<Option<&str>> = if right.names.is_empty() {
            vec![None]
        } else {
            right.names.iter().map(|n| Some(*n)).collect()
        };
        for verb in right.verbs {
            for name in &names {
                let asked = Permission {
                    verb: (*verb).into(),
                    group: right.group.into(),
                    resource: right.resource.into(),
                    name: name.map(str::to_owned),
                    namespace: ns.clone(),
                    allowed: false,
                };
                let allowed = can_i(c, &asked)?;
                permissions.push(Permission { allowed, ..asked });
            }
        }
    }
    Ok(permissions)
}

/// What Calico's datastore is doing, judged once for preflight, status and the fleet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatastoreState {
    /// Its one sentence (the migration's phase, or the lock).
    pub sentence: String,
    /// A migration under way or a locked datastore: Calico's components pause meanwhile.
    pub under_way: bool,
}

impl ClusterFacts {
    /// A migration before `Complete`, else `datastoreReady: false` (locked for another
    /// reason), else a finished migration.
    pub fn datastore_state(&self) -> Option<DatastoreState> {
        let (sentence, under_way) = match (&self.datastore_migration, self.datastore_ready) {
            (Some(m), _) if m.under_way() => (m.sentence(), true),
            (_, Some(false)) => (
                "the datastore is locked (ClusterInformation datastoreReady: false): Calico's components pause until it is unlocked".to_owned(),
                true,
            ),
            (Some(m), _) => (m.sentence(), false),
            (None, _) => return None,
        };
        Some(DatastoreState {
            sentence,
            under_way,
        })
    }

    /// The settings these facts fill when the user left them unset, by config key.
    pub fn settings(&self) -> BTreeMap<&'static str, Raw> {
        let mut out = BTreeMap::new();
        let ipv4 = |s: &&String| !s.contains(':');
        let scalars = [
            ("backend", self.backend.clone()),
            ("datastore", self.datastore.clone()),
            ("vxlan.vni", self.felix.vxlan_vni.map(|v| v.to_string())),
        ];
        for (key, value) in scalars {
            if let Some(v) = value {
                out.insert(key, Raw::Scalar(v));
            }
        }
        let lists = [
            (
                "service_cidrs",
                self.service_cidrs
                    .iter()
                    .filter(ipv4)
                    .cloned()
                    .collect::<Vec<_>>(),
            ),
            (
                "dns.servers",
                self.dns_ip.iter().filter(ipv4).cloned().collect(),
            ),
            ("etcd.endpoints", self.etcd_endpoints.clone()),
        ];
        for (key, items) in lists {
            if !items.is_empty() {
                out.insert(key, Raw::List(items));
            }
        }
        out
    }
}

fn ip_pool(o: &DynamicObject) -> IpPool {
    let text = |k: &str, default: &str| {
        spec(o, k)
            .and_then(Value::as_str)
            .unwrap_or(default)
            .to_owned()
    };
    let cidr = text("cidr", "");
    let ipv6 = cidr.contains(':');
    IpPool {
        name: o.metadata.name.clone().unwrap_or_default(),
        block_size: spec(o, "blockSize")
            .and_then(Value::as_u64)
            .and_then(|b| u8::try_from(b).ok())
            .unwrap_or(if ipv6 { 122 } else { 26 }),
        ipip_mode: text("ipipMode", "Never"),
        vxlan_mode: text("vxlanMode", "Never"),
        nat_outgoing: spec(o, "natOutgoing")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        ipv6,
        cidr,
        node_selector: text("nodeSelector", "all()"),
        disabled: spec(o, "disabled")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    }
}

/// Calico's quickstart detection (`GetBackendType`): FelixConfiguration's vxlanEnabled, else
/// the IPv4 pools' vxlanMode. IPIP anywhere leaves it undecided (Windows has no IPIP).
pub fn detect_backend(felix: &Felix, pools: &[IpPool], calico_found: bool) -> Option<String> {
    if !calico_found || felix.ipip_enabled == Some(true) {
        return None;
    }
    let on = encapsulation_on;
    match felix.vxlan_enabled {
        Some(true) => Some("vxlan".into()),
        Some(false) => Some("windows-bgp".into()),
        None if pools.iter().any(|p| on(&p.ipip_mode)) => None,
        None if pools.iter().any(|p| on(&p.vxlan_mode)) => Some("vxlan".into()),
        None => Some("windows-bgp".into()),
    }
}

/// Whether the identity may do `p` (a SelfSubjectAccessReview).
pub fn can_i(c: &Cluster, p: &Permission) -> Result<bool, ClusterError> {
    let api: Api<SelfSubjectAccessReview> = Api::all(c.client.clone());
    let (resource, subresource) = match p.resource.split_once('/') {
        Some((r, s)) => (r.to_owned(), Some(s.to_owned())),
        None => (p.resource.clone(), None),
    };
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                verb: Some(p.verb.clone()),
                group: Some(p.group.clone()),
                resource: Some(resource),
                subresource,
                name: p.name.clone(),
                namespace: p.namespace.clone(),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let answer = c.call(
        "create",
        "selfsubjectaccessreviews",
        api.create(&PostParams::default(), &review),
    )?;
    Ok(answer.status.is_some_and(|s| s.allowed))
}

/// Whether an IP pool's `ipipMode` or `vxlanMode` turns the encapsulation on (`Always` or
/// `CrossSubnet`; `Never` or empty is off).
pub fn encapsulation_on(mode: &str) -> bool {
    mode == "Always" || mode == "CrossSubnet"
}
