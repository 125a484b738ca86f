//! The matrix: which probe pods go where and which checks run between them, planned from the
//! cluster's nodes (`NodeFacts`). Every probe pod runs agnhost's `netexec`: the server on the
//! node under test, a client beside it, one on a Linux node and one on another Windows node.

use super::image;
use crate::k8s_name::NodeName;
use k8s_openapi::api::core::v1::{Taint, Toleration};
use serde::Serialize;

/// A node's operating system, as its `kubernetes.io/os` label says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Os {
    Windows,
    Linux,
}

/// What the plan needs to know about a node.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeFacts {
    pub name: NodeName,
    pub os: Os,
    /// `node.kubernetes.io/windows-build` (such as `10.0.20348`), Windows nodes only.
    pub windows_build: Option<String>,
    /// The Ready condition is True and the node is not cordoned.
    pub usable: bool,
    /// It carries `node-role.kubernetes.io/control-plane`: a Linux worker is preferred.
    pub control_plane: bool,
    /// Its taints (`spec.taints`), each judged against the probe pods' tolerations.
    pub taints: Vec<Taint>,
    /// Why calicoctl-win's Calico on it is not known good, when it is not: its
    /// `CalicoWindowsReady` condition not True, or its heartbeat stale (Windows nodes).
    pub calico_unready: Option<String>,
}

/// The probe pods, by their part in the matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// On the node under test, behind the Service, with the readiness probe.
    Server,
    /// On the node under test, beside the server.
    Local,
    /// On a Linux node.
    Linux,
    /// On another Windows node.
    Remote,
}

impl Role {
    /// The pod's name (and its hostname, which netexec's `/hostname` answers).
    pub fn pod_name(self) -> &'static str {
        match self {
            Role::Server => "server",
            Role::Local => "client-local",
            Role::Linux => "client-linux",
            Role::Remote => "client-windows",
        }
    }

    /// Whether a pod's name is this role's: its name, alone or with a run's tag (`objects::Names`).
    pub fn is(self, pod: &str) -> bool {
        pod.strip_prefix(self.pod_name())
            .is_some_and(|t| t.is_empty() || t.starts_with('-'))
    }
}

/// The label every object of a run carries, its value the run's id: the clean-up and the sweep
/// delete by it, the Service and the policy select by it.
pub const RUN_LABEL: &str = "calicoctl-win.projectcalico.org/verify-run";

/// A run's names: its id (`RUN_LABEL`'s value) and its objects' names' tag: none in a
/// namespace of its own, `-ID` in a namespace given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Names {
    pub id: String,
    pub tag: String,
}

impl Names {
    pub fn new(id: &str, given: bool) -> Self {
        Self {
            id: id.to_owned(),
            tag: if given {
                format!("-{id}")
            } else {
                String::new()
            },
        }
    }

    /// An object's name: `base` and the run's tag.
    pub fn of(&self, base: &str) -> String {
        format!("{base}{}", self.tag)
    }

    /// The label selector of the run's objects.
    pub fn selector(&self) -> String {
        format!("{RUN_LABEL}={}", self.id)
    }

    /// The run's Lease: `calicoctl-win-verify-ID`.
    pub fn lease(&self) -> String {
        format!("calicoctl-win-verify-{}", self.id)
    }
}

/// One probe pod, placed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    pub role: Role,
    pub node: NodeName,
    pub os: Os,
    pub windows_build: Option<String>,
}

/// The named checks, in the order they run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckId {
    /// The probe image present on every node (its pull has a limit of its own).
    ImagePull,
    PodAddress,
    /// The API server reaches the server pod through its pod proxy: the baseline every check
    /// asked through the proxy stands on.
    ApiToPods,
    KubeletProbe,
    PodToPod,
    WindowsToLinux,
    LinuxToWindows,
    WindowsToWindows,
    ClusterIp,
    ApiServer,
    DnsService,
    DnsKubernetes,
    Egress,
    PolicyApplied,
    PolicyRemoved,
}

impl CheckId {
    pub fn word(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    }
}

/// Where a check's client dials.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "value")]
pub enum Target {
    /// Every probe pod (the pod-address check: each got an address and runs).
    Pods,
    /// A probe pod's address, port 8080.
    Pod(Role),
    /// The Service's ClusterIP, port 80 (kube-proxy's load balancer).
    ServiceIp,
    /// The Service by its name (cluster DNS, then the ClusterIP).
    ServiceName,
    /// The `kubernetes` Service's ClusterIP, port 443.
    ApiServerIp,
    /// `kubernetes.default` by name, port 443.
    KubernetesName,
    /// An address outside the cluster (`--egress HOST:PORT`).
    External(String),
}

/// One check of the matrix: a client pod dials a target (the kubelet's probe has no client).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    pub id: CheckId,
    pub from: Option<Role>,
    pub to: Target,
}

/// A check the matrix could not place, with the reason.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Skipped {
    pub id: CheckId,
    pub why: String,
}

/// A peer chosen to carry a client pod: its part and its node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Peer {
    pub role: Role,
    pub node: NodeName,
}

/// The plan for one Windows node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Matrix {
    pub node: NodeName,
    pub pods: Vec<Placement>,
    pub checks: Vec<Check>,
    pub skipped: Vec<Skipped>,
}

impl Matrix {
    /// The peers chosen: the client pods placed on other nodes.
    pub fn peers(&self) -> Vec<Peer> {
        self.pods
            .iter()
            .filter(|p| matches!(p.role, Role::Linux | Role::Remote))
            .map(|p| Peer {
                role: p.role,
                node: p.node.clone(),
            })
            .collect()
    }
}

/// Why no matrix can be planned for the node.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlanError {
    #[error("node {0} is not in the cluster")]
    NoSuchNode(String),
    #[error("node {0} is not a Windows node")]
    NotWindows(String),
    #[error("node {0} has no node.kubernetes.io/windows-build label")]
    NoBuild(String),
    #[error("node {node} runs Windows build {build}, for which {image} has no variant")]
    BuildNotCarried {
        node: String,
        build: String,
        image: String,
    },
    #[error("node {0} is not Ready, or is cordoned")]
    NotUsable(String),
    /// Pod Security admission refused a probe pod: the namespace's enforce label asks what
    /// the pods cannot meet (kubernetes `staging/src/k8s.io/pod-security-admission/
    /// admission/admission.go`, `EvaluatePod`: a 403 "violates PodSecurity \"LEVEL:VERSION\"").
    #[error(
        "Pod Security admission refused the probe pods in namespace {namespace} (pod-security.kubernetes.io/enforce={level}): {message}"
    )]
    PodSecurity {
        namespace: String,
        level: String,
        message: String,
    },
    /// The run's Lease, the probe pods' owner, refused after the run's namespace was made:
    /// the namespace deleted at once (by its uid), or why not.
    #[error(
        "making the run's Lease (the probe pods' owner) in namespace {namespace} failed: {cause}; {}",
        namespace_fate(namespace, deleted)
    )]
    OwnerNotMade {
        namespace: String,
        cause: String,
        deleted: Result<(), String>,
    },
    /// The node under test carries a `NoExecute` taint the probe pods do not tolerate: no
    /// probe pod could run there, and every check would fail and blame the network.
    #[error(
        "node {node} carries taint {taint}, which the probe pods do not tolerate: kube-scheduler places no pod on it, and a pod there is refused by the kubelet and evicted by the taint manager"
    )]
    Tainted {
        node: String,
        taint: String,
        key: String,
    },
    /// The run's Lease refused at its first renewal, or at every renewal until it would run
    /// out; `fate` says what became of what the run made.
    #[error("the run's lease on {lease} could not be renewed: {cause}; {fate}")]
    LeaseLost {
        lease: String,
        cause: String,
        fate: String,
    },
    /// The sweep of the namespaces killed runs left was refused (403) by RBAC or an admission
    /// webhook; `hint` says which, and the right or the webhook (`sweep::refused_hint`).
    #[error("the sweep of the namespaces killed verify runs left was refused: {cause}")]
    SweepRefused { cause: String, hint: String },
    #[error("node {node} was waited for {waited_s} s and is not ready: {missing}")]
    NeverReady {
        node: String,
        waited_s: u64,
        missing: String,
    },
}

/// What became of a namespace whose run could not make its Lease.
fn namespace_fate(ns: &str, deleted: &Result<(), String>) -> String {
    match deleted {
        Ok(()) => format!(
            "namespace {ns}, which held nothing else of this run, was deleted at once (by its uid)"
        ),
        Err(why) => format!(
            "deleting namespace {ns} failed too ({why}): the next verify run deletes it once it is older than any run ('kubectl delete namespace {ns}' now)"
        ),
    }
}

impl crate::error::Diagnose for PlanError {
    fn diagnose(&self) -> Option<crate::error::Diagnosis> {
        use crate::error::{Diagnosis, Exit, Kind};
        let failed = |hint: String| Diagnosis::new(Exit::Failed, Kind::Failed, hint);
        match self {
            PlanError::NotUsable(n) => failed(format!(
                "make node {n} Ready and uncordon it ('kubectl uncordon {n}'), then verify it"
            )),
            PlanError::Tainted { node, key, .. } => failed(format!(
                "see what set the taint ('kubectl describe node {node}'): a node shut down or out of service, or being removed, is not one to verify; a taint set by hand comes off with 'kubectl taint nodes {node} {key}:NoExecute-', then run verify again"
            )),
            PlanError::NeverReady { node, .. } => Diagnosis::new(
                Exit::Timeout,
                Kind::Timeout,
                format!(
                    "look at 'kubectl describe node {node}' (kubelet's Ready) and 'calicoctl-win status' on the node (Calico's services), then run 'calicoctl-win verify'"
                ),
            ),
            PlanError::PodSecurity { namespace, .. } => failed(format!(
                "the probe pods meet Pod Security's restricted profile as of Kubernetes 1.25 (Windows pods exempt from Linux's controls): look at namespace {namespace}'s pod-security.kubernetes.io/enforce and enforce-version labels ('kubectl get namespace {namespace} --show-labels'), or run verify in a namespace enforcing restricted"
            )),
            PlanError::OwnerNotMade { .. } => failed(
                "look at the cause (a missing right to create leases, an admission webhook, a quota), then run 'calicoctl-win verify' again".into(),
            ),
            PlanError::LeaseLost { .. } => failed(
                "the renewal needs 'update' on the run's Lease (with --namespace, 'calicoctl-win fleet rbac --identity verify' grants it): give the identity that right, or look at the cause (an admission webhook, the API server), then run 'calicoctl-win verify' again".into(),
            ),
            PlanError::SweepRefused { hint, .. } => {
                Diagnosis::new(Exit::Failed, Kind::ClusterRefused, hint.clone())
            }
            PlanError::BuildNotCarried { .. } => Diagnosis::new(
                Exit::Usage,
                Kind::Usage,
                "give --image a mirror of agnhost built for the node's Windows build",
            ),
            _ => Diagnosis::new(
                Exit::Usage,
                Kind::Usage,
                "name a Windows node of the cluster with --node ('kubectl get nodes -l kubernetes.io/os=windows')",
            ),
        }
    }
}

/// Plans the matrix for `node` from the cluster's nodes.
pub fn plan(
    node: &NodeName,
    nodes: &[NodeFacts],
    image: &str,
    egress: Option<&str>,
) -> Result<Matrix, PlanError> {
    let this = under_test(node, nodes, image)?;
    let mut pods = vec![placed(Role::Server, this), placed(Role::Local, this)];
    let mut skipped = Vec::new();
    let linux = peer(nodes, |n| n.os == Os::Linux, |_| None);
    match &linux {
        Ok(n) => pods.push(placed(Role::Linux, n)),
        Err(why) => {
            let why = format!("no Linux node can run the probe pods{why}");
            skipped.push(skip(CheckId::WindowsToLinux, &why));
            skipped.push(skip(CheckId::LinuxToWindows, &why));
        }
    }
    let windows = peer(
        nodes,
        |n| n.os == Os::Windows && n.name != *node,
        |n| windows_unfit(n, image),
    );
    match windows {
        Ok(n) => pods.push(placed(Role::Remote, n)),
        Err(why) => skipped.push(skip(
            CheckId::WindowsToWindows,
            &format!("no other Windows node can run the probe pods{why}"),
        )),
    }
    let has = |r: Role| pods.iter().any(|p| p.role == r);
    let checks = checks(has(Role::Linux), has(Role::Remote), egress);
    if egress.is_none() {
        skipped.push(skip(CheckId::Egress, "no --egress address was given"));
    }
    skipped.sort_by_key(|s| s.id);
    Ok(Matrix {
        node: node.clone(),
        pods,
        checks,
        skipped,
    })
}

fn under_test<'a>(
    node: &NodeName,
    nodes: &'a [NodeFacts],
    image: &str,
) -> Result<&'a NodeFacts, PlanError> {
    let this = nodes
        .iter()
        .find(|n| n.name == *node)
        .ok_or_else(|| PlanError::NoSuchNode(node.to_string()))?;
    if this.os != Os::Windows {
        return Err(PlanError::NotWindows(node.to_string()));
    }
    let build = this
        .windows_build
        .as_deref()
        .ok_or_else(|| PlanError::NoBuild(node.to_string()))?;
    if !image::carries_build(image, build) {
        return Err(PlanError::BuildNotCarried {
            node: node.to_string(),
            build: build.to_owned(),
            image: image.to_owned(),
        });
    }
    if !this.usable {
        return Err(PlanError::NotUsable(node.to_string()));
    }
    if let Some(t) = untolerated(&this.taints, &admitted_tolerations()) {
        return Err(PlanError::Tainted {
            node: node.to_string(),
            taint: taint_text(t),
            key: t.key.clone(),
        });
    }
    Ok(this)
}

/// The most nodes a skipped check's reason names.
const NAMED: usize = 5;

/// The peer among the nodes `kind` takes: one that can run a probe pod (`unfit`), a worker
/// before a control-plane node, then by name; else why none can (each node passed over, with
/// its reason, after a colon; nothing when there is none of the kind).
fn peer(
    nodes: &[NodeFacts],
    kind: impl Fn(&NodeFacts) -> bool,
    other: impl Fn(&NodeFacts) -> Option<String>,
) -> Result<&NodeFacts, String> {
    let mut of_kind: Vec<&NodeFacts> = nodes.iter().filter(|n| kind(n)).collect();
    of_kind.sort_by(|a, b| (a.control_plane, &a.name).cmp(&(b.control_plane, &b.name)));
    let mut passed_over = Vec::new();
    for n in of_kind {
        match unfit(n).or_else(|| other(n)) {
            None => return Ok(n),
            Some(why) => passed_over.push(format!("{} ({why})", n.name)),
        }
    }
    if passed_over.is_empty() {
        return Err(" (the cluster has none)".into());
    }
    let more = passed_over.len().saturating_sub(NAMED);
    passed_over.truncate(NAMED);
    if more > 0 {
        passed_over.push(format!("{more} more"));
    }
    Err(format!(": {}", passed_over.join("; ")))
}

/// Why a node cannot carry a peer's probe pod: not Ready or cordoned, or any `NoSchedule` or
/// `NoExecute` taint (a node kept for others, such as EKS Fargate's
/// `eks.amazonaws.com/compute-type=fargate:NoSchedule`, runs no pod of ours).
fn unfit(n: &NodeFacts) -> Option<String> {
    if !n.usable {
        return Some("not Ready, or cordoned".into());
    }
    untolerated(&n.taints, &[]).map(|t| format!("taint {} not tolerated", taint_text(t)))
}

/// A taint as `kubectl taint` writes it: `KEY=VALUE:EFFECT`, or `KEY:EFFECT` without a value.
fn taint_text(t: &Taint) -> String {
    match t.value.as_deref().filter(|v| !v.is_empty()) {
        Some(v) => format!("{}={v}:{}", t.key, t.effect),
        None => format!("{}:{}", t.key, t.effect),
    }
}

/// The probe pods' tolerations once admitted: theirs and the `not-ready`/`unreachable`
/// `NoExecute` ones for 300 s (kubernetes
/// `plugin/pkg/admission/defaulttolerationseconds/admission.go`, `Admit`).
fn admitted_tolerations() -> Vec<Toleration> {
    let mut all = tolerations();
    for key in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ] {
        all.push(Toleration {
            key: Some(key.into()),
            operator: Some("Exists".into()),
            effect: Some("NoExecute".into()),
            toleration_seconds: Some(300),
            ..Default::default()
        });
    }
    all
}

/// Why another Windows node cannot carry the remote client: a build the image lacks, or its
/// Calico not known good (a peer whose own networking is broken would fail the check and
/// blame the node under test).
fn windows_unfit(n: &NodeFacts, image: &str) -> Option<String> {
    match n.windows_build.as_deref() {
        None => return Some("no node.kubernetes.io/windows-build label".into()),
        Some(b) if !image::carries_build(image, b) => {
            return Some(format!("Windows build {b}, which the image lacks"));
        }
        Some(_) => {}
    }
    n.calico_unready.clone()
}

/// The probe pods' tolerations: any `NoSchedule` taint (the pod is placed by name), no
/// `NoExecute` one.
pub fn tolerations() -> Vec<Toleration> {
    vec![Toleration {
        operator: Some("Exists".into()),
        effect: Some("NoSchedule".into()),
        ..Default::default()
    }]
}

/// The first `NoSchedule` or `NoExecute` taint the tolerations do not tolerate (kubernetes
/// `pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go`, `Filter`;
/// `staging/src/k8s.io/api/core/v1/toleration.go` `ToleratesTaint`). Every toleration given is
/// one of `admitted_tolerations`, all `Exists`: an empty effect or key matches any.
pub fn untolerated<'a>(taints: &'a [Taint], tolerations: &[Toleration]) -> Option<&'a Taint> {
    let tolerates = |t: &Toleration, taint: &Taint| {
        let effect = t.effect.as_deref().unwrap_or_default();
        let key = t.key.as_deref().unwrap_or_default();
        (effect.is_empty() || effect == taint.effect) && (key.is_empty() || key == taint.key)
    };
    taints
        .iter()
        .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
        .find(|taint| !tolerations.iter().any(|t| tolerates(t, taint)))
}

fn placed(role: Role, n: &NodeFacts) -> Placement {
    Placement {
        role,
        node: n.name.clone(),
        os: n.os,
        windows_build: n.windows_build.clone(),
    }
}

fn skip(id: CheckId, why: &str) -> Skipped {
    Skipped {
        id,
        why: why.to_owned(),
    }
}

fn checks(linux: bool, remote: bool, egress: Option<&str>) -> Vec<Check> {
    let c = |id, from: Option<Role>, to| Check { id, from, to };
    let local = Some(Role::Local);
    let mut out = vec![
        c(CheckId::ImagePull, None, Target::Pods),
        c(CheckId::PodAddress, None, Target::Pods),
        c(CheckId::ApiToPods, None, Target::Pod(Role::Server)),
        c(CheckId::KubeletProbe, None, Target::Pod(Role::Server)),
        c(CheckId::PodToPod, local, Target::Pod(Role::Server)),
    ];
    if linux {
        out.push(c(CheckId::WindowsToLinux, local, Target::Pod(Role::Linux)));
        out.push(c(
            CheckId::LinuxToWindows,
            Some(Role::Linux),
            Target::Pod(Role::Server),
        ));
    }
    if remote {
        out.push(c(
            CheckId::WindowsToWindows,
            Some(Role::Remote),
            Target::Pod(Role::Server),
        ));
    }
    out.push(c(CheckId::ClusterIp, local, Target::ServiceIp));
    out.push(c(CheckId::ApiServer, local, Target::ApiServerIp));
    out.push(c(CheckId::DnsService, local, Target::ServiceName));
    out.push(c(CheckId::DnsKubernetes, local, Target::KubernetesName));
    if let Some(addr) = egress {
        out.push(c(CheckId::Egress, local, Target::External(addr.to_owned())));
    }
    out.push(c(CheckId::PolicyApplied, local, Target::Pod(Role::Server)));
    out.push(c(CheckId::PolicyRemoved, local, Target::Pod(Role::Server)));
    out
}

#[cfg(test)]
#[path = "matrix_tests.rs"]
mod tests;

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Cluster(#[from] crate::cluster::ClusterError),
}
