//! Each code's remedy, as docs/findings.md gives it in its remedy column (a test keeps the two
//! the same). A judge whose fix is the same for every finding of its code gives this one; a
//! judge whose fix names what it found (a service, the node, an adapter, a VNI, a command)
//! gives that, and this is its general form.

use super::finding::Code;

impl Code {
    /// What fixes a finding of this code.
    pub fn remedy(self) -> &'static str {
        match self {
            Code::UnderWay => {
                "let the command finish, then run calicoctl-win status again; a run cut off is finished or undone by the command the finding names"
            }
            Code::ServiceNotRunning => {
                "Start-Service the service; its log is in the install root's logs directory"
            }
            Code::ServiceDrift => "calicoctl-win reconfigure registers it as the config wants",
            Code::RouteMissing => {
                "Restart-Service CalicoNode -Force: its start restores the route; calico-node.log says why it did not"
            }
            Code::NetworkMissing => {
                "Restart-Service CalicoNode -Force (it makes the networks), and read calico-node.log"
            }
            Code::EndpointStuck
            | Code::EndpointStale
            | Code::EndpointRemoteStale
            | Code::EndpointOldAddress
            | Code::PodNoEndpoint => "calicoctl-win repair",
            Code::EndpointUnknown => {
                "none needed: repair keeps it; if no program on the node made it, remove it yourself (Remove-HnsEndpoint)"
            }
            Code::EndpointsUnjudged => {
                "run calicoctl-win status again once the cluster can be read; 'calicoctl-win repair --dry-run' judges them alike"
            }
            Code::HnsRestartFailed => "Start-Service the service named",
            Code::FileDrift => {
                "calicoctl-win reconfigure writes it as the config renders it (an administrator's change is lost: make it in the config instead)"
            }
            Code::FelixUnhealthy => {
                "read calico-felix.log; Restart-Service CalicoFelix once the cause is gone"
            }
            Code::VniHns => "calicoctl-win reconfigure --drain makes the network again",
            Code::VniCluster => {
                "set vxlan.vni to the cluster's VNI (or leave it unset: the cluster's is used), or change the cluster's FelixConfiguration vxlanVNI first"
            }
            Code::NodeNotReady => {
                "read kubelet's log on this node and 'kubectl describe node NODE': calicoctl-win does not make a node Ready"
            }
            Code::NodeCordoned => "kubectl uncordon NODE, once it is meant to take pods",
            Code::ClusterUnreadable => {
                "check that this node reaches the API server and that the kubeconfig's identity may read it ('calicoctl-win preflight' says which right is missing), then run status again"
            }
            Code::IpamCapacity => {
                "lower kubelet's maxPods to what the block holds, or give the pool a larger block (preflight's block-capacity says how)"
            }
            Code::Token => {
                "as the fix for its cause says (the renewal, the clock, the ServiceAccount, the Node); where only a new token helps, 'calicoctl-win fetch kubeconfig --kubeconfig installer.kubeconfig'"
            }
            Code::KubeProxy => {
                "calicoctl-win preflight: its kube-proxy check says what Calico needs (docs/commands/preflight.md)"
            }
            Code::DirAccess => "calicoctl-win preflight --fix",
            Code::AdminKubeconfig => {
                "remove it: install needs only the installer's short-lived kubeconfig ('calicoctl-win fetch installer-kubeconfig')"
            }
            Code::HostUnreadable => {
                "run calicoctl-win status again as an administrator; if it stays, read calico-node.log and the System event log (HNS, the Service Control Manager)"
            }
            Code::AddressMismatch => {
                "Restart-Service CalicoNode -Force for the BGP address; for a network, set vxlan.adapter to the adapter that holds the node's address, then 'calicoctl-win reconfigure --drain' makes the networks again"
            }
            Code::AdapterDrift => {
                "Restart-Service CalicoNode -Force: its start puts back what the vSwitch dropped, and sets Calico_ep's metric above the LAN's (docs/network-identity.md)"
            }
            Code::NotInstalled => "calicoctl-win install",
            Code::ApiGroup => {
                "calicoctl-win reconfigure sets the unlocked group for calico-node, Felix, confd and the CNI plugin; a release before v3.32.0 is replaced by v3.32.0 or later"
            }
            metrics @ (Code::FelixMetricsRule
            | Code::MetricsEndpointDown
            | Code::MetricsNotScraped
            | Code::DiagsReviewRefused
            | Code::MetricsPortExcluded) => metrics_remedy(metrics),
            other => said_remedy(other),
        }
    }
}

/// The remedy of a code status says beside its sections, or `fleet status` gives a node's
/// row; that of `verify` for another.
fn said_remedy(code: Code) -> &'static str {
    match code {
        Code::EndpointStateUnknown => {
            "none needed: no such endpoint is called stuck; 'Get-HnsEndpoint' shows what HNS holds, and 'calicoctl-win verify' proves the node's pods pass traffic"
        }
        Code::NodeValueMalformed => {
            "run calicoctl-win reconfigure on the node: it writes its annotations again; CalicoNode sets its condition again within five minutes"
        }
        Code::CalicoDegraded => {
            "on the node: 'calicoctl-win status' names each finding with its fix (its codes: docs/findings.md)"
        }
        Code::ConditionUnknown => {
            "on the node: Get-Service CalicoNode and read calico-node.log: a running CalicoNode that reaches the API server sets its condition every five minutes"
        }
        Code::ConditionMissing => {
            "install Calico on the node with calicoctl-win ('calicoctl-win install'), or Start-Service CalicoNode where it is installed"
        }
        Code::CodesUnknown => "upgrade calicoctl-win on the node",
        Code::TrafficFails => {
            "on the node: 'calicoctl-win verify' names the failing layer and its next step; the condition's message holds the last run's"
        }
        Code::TrafficUnjudged => {
            "read the fleet DaemonSet pod's log on the node ('kubectl logs' of its calicoctl-win container): it says why its scheduled verify did not run or publish (the turn, a refused call, the image)"
        }
        Code::ConfigNotFleets => {
            "give the node the fleet's config: 'calicoctl-win reconfigure' with it on the node, or the fleet's Plan (docs/commands/fleet.md)"
        }
        traffic => traffic_remedy(traffic),
    }
}

/// The remedy of a code of the metrics ports; none for another.
fn metrics_remedy(code: Code) -> &'static str {
    match code {
        Code::FelixMetricsRule => {
            "if no HostProcess Felix runs on the node any more: Remove-NetFirewallRule -DisplayName 'Calico Prometheus Ports (calico-managed rule)'"
        }
        Code::MetricsEndpointDown => {
            "stop the program that listens on metrics.port ('Get-NetTCPConnection -LocalPort PORT -State Listen' names it), or set another metrics.port and run 'calicoctl-win reconfigure'"
        }
        Code::MetricsNotScraped => {
            "put the addresses the scrapes come from in metrics.source_ranges and run 'calicoctl-win reconfigure': the subnet of the nodes the Prometheus pods run on (their pods' IP pool has natOutgoing), or the pods' range where it has not or natOutgoingExclusions is IPPoolsAndHostIPs"
        }
        Code::DiagsReviewRefused => {
            "apply 'calicoctl-win fleet rbac --identity diags --calico-namespace NS' (its ClusterRole calicoctl-win-diags-review lets calico-node create tokenreviews), or set metrics.diags: false"
        }
        Code::MetricsPortExcluded => {
            "set a metrics.port outside the ranges 'netsh int ipv4 show excludedportrange protocol=tcp' lists (Hyper-V and WinNAT reserve them) and run 'calicoctl-win reconfigure'"
        }
        _ => "",
    }
}

/// The remedy of a code `verify` gives (`traffic-*`, `verify-lease-lost`); none for another.
fn traffic_remedy(code: Code) -> &'static str {
    match code {
        Code::TrafficCni => {
            "on the node: 'calicoctl-win status' (CalicoNode running, ipam-capacity, endpoint-stuck) and the CNI log under the install root"
        }
        Code::TrafficScheduling => {
            "'kubectl describe node NODE' (its taints, its pods against its capacity) and the pod's FailedScheduling event: free or untaint the node, then verify again"
        }
        Code::TrafficImage => {
            "--image a reachable mirror built for the node's Windows build, or more --pull-timeout"
        }
        Code::TrafficOverlay => {
            "allow UDP 4789 between the nodes; on the node: 'calicoctl-win status' (vni-hns, vni-cluster, address-mismatch)"
        }
        Code::TrafficControlPlane => {
            "let the API server reach the pod network: its route to the pods, UDP 4789 to the node, no firewall between"
        }
        Code::TrafficKubeProxy => {
            "on the node: kube-proxy must run on the Calico network and program a load balancer for the ClusterIP ('Get-HnsPolicyList')"
        }
        Code::TrafficDns => {
            "the cluster DNS pods and their Service (kube-system/kube-dns) and the pod's DNS server (kubelet's --cluster-dns)"
        }
        Code::TrafficPolicy => {
            "on the node: 'calicoctl-win status' (felix-unhealthy, endpoint-stuck) and Felix's log for the pods' endpoints"
        }
        Code::TrafficFirewall => {
            "on the node: the host firewall and the HNS endpoint's ACLs must let the host reach its pods"
        }
        Code::TrafficEgress => {
            "the IPPool's natOutgoing and the outbound firewall of the node and its network"
        }
        // cluster-autoscaler utils/taints/taints.go `MarkToBeDeleted`: the taint's value is
        // `fmt.Sprint(time.Now().Unix())`, so its age tells a stale taint from a live scale-down.
        Code::NodeBeingRemoved => {
            "'kubectl get node NODE -o yaml': a deletionTimestamp means the node is going away (the change stays; nothing on the node to fix); a ToBeDeletedByClusterAutoscaler taint is set by a scale-down in progress: its value is the Unix time the autoscaler set it; only when that is long past and the autoscaler's status (ConfigMap kube-system/cluster-autoscaler-status, its events) shows no scale-down of this node is the taint stale, and then it is removed with 'kubectl taint node NODE ToBeDeletedByClusterAutoscaler-', then verify again"
        }
        Code::VerifyLeaseLost => {
            "run 'calicoctl-win verify' again; if it recurs: a refused renewal needs 'update' on the run's namespace (with --namespace, on leases there, which 'calicoctl-win fleet rbac --identity verify' grants), a Lease deleted means another run judged it run out (the API server stopped answering this run's renewals), an API server that stopped answering is the control plane's to look at"
        }
        _ => "",
    }
}
