//! Each check's observation judged into a verdict: passed, or failed with a finding that names
//! its layer (a `health::judge` code), one sentence and the next step.

use super::dial::{Answer, reached};
use super::matrix::{CheckId, Role};
use crate::health::judge::{Code, Finding};
use serde::Serialize;

/// A probe pod as the run last saw it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodState {
    pub name: String,
    pub node: String,
    pub ip: Option<String>,
    pub phase: String,
    pub ready: bool,
    /// The container's waiting reason and message (`ContainerCreating`, `ErrImagePull: ...`).
    pub waiting: Option<String>,
    /// The pod's events, newest last (`FailedCreatePodSandBox: ...`).
    pub events: Vec<String>,
    /// Why kube-scheduler placed it on no node, while it says so (`scheduling`).
    pub unschedulable: Option<String>,
}

/// What a policy check saw: the traffic changed after so long, or never within the wait.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    Within { ms: u64 },
    Never { waited_ms: u64, last: Answer },
}

/// A check's result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "result")]
pub enum Outcome {
    Pass,
    Fail {
        finding: Finding,
    },
    /// Not run: the check `by` failed under it, so this one could not be judged.
    #[serde(rename = "not-run")]
    Blocked {
        by: CheckId,
    },
    Skipped {
        why: String,
    },
    /// Not run: the run was stopped (Ctrl-C, a termination signal, or its lease lost, which
    /// the report's `lease_lost` then says) before this check was judged. No layer is blamed.
    Stopped,
    /// Not run: the run's deadline (`--timeout`) came before this check was judged, or cut
    /// its wait. No layer is blamed.
    TimedOut,
}

/// One named check with its result, the time it took and, for a check that dials, how many
/// dials it made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Verdict {
    pub check: CheckId,
    #[serde(flatten)]
    pub outcome: Outcome,
    pub took_ms: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub attempts: u32,
    /// The policy checks: from the policy's creation (deletion) to the first dial refused
    /// (answered) after it, counted to when that dial was sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
}

/// A failing check and the node's own findings that bear on its layer (`node_health::join`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Explained {
    pub check: CheckId,
    pub by: Vec<Finding>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The waiting reasons of a container whose image or container does not run (the kubelet's:
/// `pkg/kubelet/images/types.go` `ErrImagePull`, `ErrImagePullBackOff`, `ErrInvalidImageName`;
/// `pkg/kubelet/container/sync_result.go` `ErrCrashLoopBackOff`, `ErrCreateContainer`,
/// `ErrRunContainer`).
const IMAGE_REASONS: &[&str] = &[
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "CrashLoopBackOff",
    "CreateContainerError",
    "RunContainerError",
];

/// Whether the pod's container waits for a reason of the image's or the container's.
pub fn image_fault(p: &PodState) -> bool {
    p.waiting
        .as_deref()
        .is_some_and(|w| IMAGE_REASONS.iter().any(|r| w.starts_with(r)))
}

/// Whether the pod's image is being pulled: its container waits (`ContainerCreating`) and the
/// kubelet said `Pulling` without `Pulled` yet (`pkg/kubelet/events/event.go`: `PullingImage`,
/// `PulledImage`, emitted by `pkg/kubelet/images/image_manager.go` `EnsureImageExists`).
pub fn pulling(p: &PodState) -> bool {
    let said = |r: &str| p.events.iter().any(|e| e.starts_with(r));
    let creating = p
        .waiting
        .as_deref()
        .is_some_and(|w| w.starts_with("ContainerCreating"));
    creating && said("Pulling:") && !said("Pulled:")
}

/// Whether the pod can be dialled from and to: it runs, has an address and is Ready (the
/// server's readiness is the kubelet-probe check's, so the server needs to run only).
pub fn usable(p: &PodState) -> bool {
    p.ip.is_some() && p.phase == "Running" && (p.ready || Role::Server.is(&p.name))
}

/// The probe image is present on every node: no pull failed, and none lasted longer than
/// its limit (`pulling`: the pods still pulling when the limit came).
pub fn image_pull(states: &[PodState], pulling: &[&PodState], limit_s: u64) -> Outcome {
    if let Some(p) = pulling.first() {
        return fail(
            Code::TrafficImage,
            &p.name,
            format!(
                "probe pod {} on {} was still pulling its image after {limit_s} s (--pull-timeout); events: {}",
                p.name,
                p.node,
                p.events.join(" | ")
            ),
            format!(
                "pull the image on {} first ('crictl pull IMAGE'), give --pull-timeout more, or --image a mirror nearer the node",
                p.node
            ),
        );
    }
    match states.iter().find(|p| {
        p.waiting
            .as_deref()
            .is_some_and(|w| w.contains("ImagePull") || w.starts_with("InvalidImageName"))
    }) {
        Some(p) => pods(std::slice::from_ref(p)),
        None => Outcome::Pass,
    }
}

fn fail(code: Code, subject: &str, message: String, next: String) -> Outcome {
    Outcome::Fail {
        finding: Finding::new(code, subject, message, next),
    }
}

/// Every probe pod has an address and runs. A pod that does not is the CNI plugin's and
/// IPAM's fault, or the image's when its container waits for a pull.
pub fn pods(states: &[PodState]) -> Outcome {
    let Some(p) = states.iter().find(|p| !usable(p)) else {
        return Outcome::Pass;
    };
    let waiting = p.waiting.clone().unwrap_or_else(|| p.phase.clone());
    let events = if p.events.is_empty() {
        String::new()
    } else {
        format!("; events: {}", p.events.join(" | "))
    };
    if let Some(why) = &p.unschedulable {
        return unscheduled(p, why);
    }
    if image_fault(p) {
        return fail(
            Code::TrafficImage,
            &p.name,
            format!("probe pod {} on {} could not pull or run its image ({waiting}){events}", p.name, p.node),
            "give a reachable mirror of agnhost with --image, one carrying the node's Windows build".into(),
        );
    }
    fail(
        Code::TrafficCni,
        &p.name,
        format!(
            "probe pod {} on {} has no address, never ran or is not Ready ({waiting}){events}",
            p.name, p.node
        ),
        format!(
            "on {}: 'calicoctl-win status' (CalicoNode running, ipam-capacity, endpoint-stuck) and the CNI log under the install root",
            p.node
        ),
    )
}

/// A probe pod kube-scheduler placed on no node: the scheduler's, not the network's. Its
/// words name the filter that left no node (`0/3 nodes are available: 1 node(s) had
/// untolerated taint {...}`; kubernetes `pkg/scheduler/framework/types.go`, `FitError.Error`).
fn unscheduled(p: &PodState, why: &str) -> Outcome {
    fail(
        Code::TrafficScheduling,
        &p.name,
        format!(
            "probe pod {} was not scheduled on {}: {why:.400}",
            p.name, p.node
        ),
        format!(
            "'kubectl describe node {n}' (its taints, its pods against its capacity) and 'kubectl get events -n NAMESPACE --field-selector reason=FailedScheduling': free or untaint {n}, then verify again",
            n = p.node
        ),
    )
}

/// The server became Ready: the kubelet on its node reached it (`/healthz`, port 8080).
pub fn kubelet_probe(server: &PodState) -> Outcome {
    if server.ready {
        return Outcome::Pass;
    }
    fail(
        Code::TrafficFirewall,
        &server.name,
        format!(
            "the kubelet on {} never reached its own pod {} ({}) with the readiness probe",
            server.node,
            server.name,
            server.ip.as_deref().unwrap_or("no address")
        ),
        format!(
            "on {}: the host firewall and the HNS endpoint's ACLs must let the host reach its pods ('Get-NetFirewallRule -Enabled True -Direction Inbound', 'calicoctl-win status')",
            server.node
        ),
    )
}

/// Where a dialling check failed: the layer it tests.
fn layer(id: CheckId) -> Code {
    match id {
        CheckId::WindowsToLinux | CheckId::LinuxToWindows | CheckId::WindowsToWindows => {
            Code::TrafficOverlay
        }
        CheckId::ClusterIp | CheckId::ApiServer => Code::TrafficKubeProxy,
        CheckId::DnsService | CheckId::DnsKubernetes => Code::TrafficDns,
        CheckId::Egress => Code::TrafficEgress,
        CheckId::PodToPod | CheckId::PolicyApplied | CheckId::PolicyRemoved => Code::TrafficPolicy,
        CheckId::PodAddress => Code::TrafficCni,
        CheckId::ImagePull => Code::TrafficImage,
        CheckId::ApiToPods => Code::TrafficControlPlane,
        CheckId::KubeletProbe => Code::TrafficFirewall,
    }
}

fn next_step(id: CheckId, node: &str) -> String {
    match layer(id) {
        Code::TrafficOverlay => format!(
            "allow UDP 4789 between the nodes; on {node}: 'calicoctl-win status' (vni-hns, vni-cluster: the VNI must match Felix's; address-mismatch: the node's BGP address against its InternalIP)"
        ),
        Code::TrafficKubeProxy => format!(
            "on {node}: kube-proxy must run on the Calico network and program a load balancer for the ClusterIP ('Get-HnsPolicyList'; 'calicoctl-win status': kube-proxy)"
        ),
        Code::TrafficDns => Code::TrafficDns.remedy().into(),
        Code::TrafficEgress => Code::TrafficEgress.remedy().into(),
        _ => format!(
            "on {node}: 'calicoctl-win status' (felix-unhealthy, endpoint-stuck) and Felix's log for the pods' endpoints"
        ),
    }
}

/// The next step of an overlay failure seen from the Linux peer: its calico-node pod
/// (`k8s-app=calico-node`: tigera/operator release-v1.44 `pkg/controller/utils/component.go`,
/// projectcalico/calico v3.32.1 `manifests/calico.yaml`), then the Windows node.
fn linux_peer_step(node: &str) -> String {
    format!(
        "allow UDP 4789 between the nodes; on {node}: its calico-node pod must be Ready ('kubectl get pods -A -l k8s-app=calico-node --field-selector spec.nodeName={node}') and its log say why not ('kubectl logs -n NAMESPACE POD -c calico-node'); on the Windows node: 'calicoctl-win status' (vni-hns, vni-cluster: the VNI must match Felix's; address-mismatch: the node's BGP address against its InternalIP)"
    )
}

/// A dialling check: the client reached what it should.
pub fn dial(id: CheckId, from: &PodState, what: &str, a: &Answer, expect: Option<&str>) -> Outcome {
    if reached(a, expect) {
        return Outcome::Pass;
    }
    let why = match a {
        Answer::Reached(bodies) => format!("another answered: {}", bodies.join(", ")),
        Answer::Failed(errors) => errors.join("; "),
        Answer::Unresolved(e) => e.clone(),
        Answer::NoProxy(e) => return no_proxy(from, e),
    };
    // A name that did not resolve (or whose lookup never returned) is DNS's, whatever the
    // check tests beyond it; the egress check's name is outside the cluster.
    let code = match a {
        Answer::Unresolved(_) if id != CheckId::Egress => Code::TrafficDns,
        _ => layer(id),
    };
    let next = if code == Code::TrafficDns {
        next_step(CheckId::DnsService, &from.node)
    } else if code == Code::TrafficOverlay && from.name == Role::Linux.pod_name() {
        linux_peer_step(&from.node)
    } else {
        next_step(id, &from.node)
    };
    let message = format!("{} on {} did not reach {what}: {why}", from.name, from.node);
    fail(code, &from.name, message, next)
}

/// The API server could not reach the pod through its pod proxy: the control plane's path to
/// the pod network, not the overlay between nodes (the baseline check, and a client lost later).
pub fn no_proxy(from: &PodState, e: &str) -> Outcome {
    fail(
        Code::TrafficControlPlane,
        &from.name,
        format!(
            "the API server could not reach probe pod {} on {} ({}) through its pod proxy: {e}",
            from.name,
            from.node,
            from.ip.as_deref().unwrap_or("no address")
        ),
        format!(
            "the API server must reach pod addresses on {}: its route to the pod network (the control plane's own node or network), UDP 4789 to the node, and no firewall between; 'kubectl get --raw /api/v1/namespaces/NAMESPACE/pods/{}:8080/proxy/healthz' asks the same",
            from.node, from.name
        ),
    )
}

/// The API server reached the Linux client through its pod proxy but not the Windows server:
/// the overlay between the OSes is broken (the API server sits on a Linux node).
pub fn no_overlay_to(server: &PodState, linux: &PodState, e: &str) -> Outcome {
    fail(
        Code::TrafficOverlay,
        &server.name,
        format!(
            "the API server reached probe pod {} on {} but not {} on {} ({}) through its pod proxy: {e}",
            linux.name,
            linux.node,
            server.name,
            server.node,
            server.ip.as_deref().unwrap_or("no address")
        ),
        next_step(CheckId::WindowsToLinux, &server.node),
    )
}

/// The deny-ingress policy took effect (the client was refused) or was removed (traffic came
/// back) within the wait.
pub fn policy(id: CheckId, from: &PodState, c: &Change) -> Outcome {
    let Change::Never { waited_ms, last } = c else {
        return Outcome::Pass;
    };
    if let Answer::NoProxy(e) = last {
        return no_proxy(from, e);
    }
    let what = if id == CheckId::PolicyApplied {
        "the server still answered with the deny-ingress NetworkPolicy in place"
    } else {
        "the server was still refused after the NetworkPolicy was deleted"
    };
    fail(
        Code::TrafficPolicy,
        Role::Server.pod_name(),
        format!("{what} for {} s", waited_ms / 1000),
        next_step(id, &from.node),
    )
}

#[cfg(test)]
#[path = "judge_tests.rs"]
mod tests;
