//! Whether the operator can take this Windows node, judged before `migrate to-operator`
//! changes anything (the operator fails them only after the handover): the Installation it
//! validates before rendering (tigera/operator release-v1.44
//! `pkg/controller/installation/validation.go` `validateCustomResource`; an invalid one
//! renders nothing, `core_controller.go`), and the address its calico-node would advertise
//! (`nodeAddressAutodetectionV4`, `pkg/render/windows.go`; defaults in `fillDefaults`).

use super::migrate::Refusal;
use crate::cluster::installation::Installation;
use crate::host::InterfaceAddress;
use serde_json::Value;
use std::net::Ipv4Addr;

use crate::cluster::operator::SERVICES_ENDPOINT;

/// What the operator's validation of a Windows install would refuse, or `None`. `endpoint` is
/// the ConfigMap's host and port in the operator's namespace (`None`: no ConfigMap); `server`
/// is the API server's address as this node reaches it, and `service_cidrs` the config's: both
/// for the fix.
pub fn windows_config(
    inst: &Installation,
    (namespace, endpoint): (&str, Option<crate::cluster::operator::ServicesEndpoint>),
    server: &str,
    service_cidrs: &[String],
) -> Option<Refusal> {
    let w = &inst.windows_inputs;
    let mut missing = Vec::new();
    let mut fixes = Vec::new();
    let (host, port) = endpoint.clone().unwrap_or_default();
    let blank = |v: &Option<String>| v.as_deref().is_none_or(|s| s.trim().is_empty());
    let endpoint_missing = blank(&host) || blank(&port);
    if endpoint_missing {
        missing.push(match endpoint {
            None => format!("the ConfigMap {namespace}/{SERVICES_ENDPOINT} does not exist"),
            Some(_) => format!(
                "the ConfigMap {namespace}/{SERVICES_ENDPOINT} lacks KUBERNETES_SERVICE_HOST or KUBERNETES_SERVICE_PORT"
            ),
        });
        let (h, p) = host_and_port(server);
        fixes.push(format!(
            "kubectl -n {namespace} create configmap {SERVICES_ENDPOINT} --from-literal=KUBERNETES_SERVICE_HOST={h} --from-literal=KUBERNETES_SERVICE_PORT={p} (the address Windows nodes reach the API server at, not its Service's)"
        ));
    }
    let calico_cni = w.cni_type.as_deref().is_none_or(|t| t == "Calico");
    if calico_cni && w.service_cidrs.is_empty() {
        missing.push("spec.serviceCIDRs is empty".to_owned());
        let cidrs = service_cidrs
            .iter()
            .map(|c| format!("\"{c}\""))
            .collect::<Vec<_>>()
            .join(",");
        fixes.push(format!(
            "kubectl patch installation default --type merge -p '{{\"spec\":{{\"serviceCIDRs\":[{cidrs}]}}}}'"
        ));
    }
    if calico_cni
        && let Some((index, cidr, enc)) = &w.ipv4_pool
        && enc != "VXLAN"
        && enc != "None"
    {
        missing.push(format!(
            "the IPv4 pool {cidr} has encapsulation {}, which Calico for Windows does not support",
            if enc.is_empty() { "unset" } else { enc }
        ));
        fixes.push(format!(
            "make the pool {cidr} VXLAN, which every node of the cluster then uses: kubectl patch installation default --type json -p '[{{\"op\":\"replace\",\"path\":\"/spec/calicoNetwork/ipPools/{index}/encapsulation\",\"value\":\"VXLAN\"}}]'"
        ));
    }
    // Without the ConfigMap only the Windows controller stops (`windows_controller.go`
    // `GetK8sServiceEndPoint`): the core controller keeps the operator's own address
    // (`utils.go` `PopulateK8sServiceEndPoint`). An empty one it refuses, as it refuses the
    // rest, for every node (`core_controller.go` `Reconcile`: `validateCustomResource`).
    let whom = if endpoint.is_none() && missing.len() == 1 {
        "set TigeraStatus calico-windows Degraded and render nothing for Windows"
    } else {
        "set TigeraStatus calico Degraded and render nothing, for Linux nodes too"
    };
    (!missing.is_empty()).then(|| Refusal {
        code: "operator-windows-invalid",
        message: format!(
            "the operator would refuse its Installation with Windows on ({}), {whom}",
            missing.join("; ")
        ),
        fix: fixes.join("; "),
    })
}

/// `host` and `port` of an `https://host:port` address (443 when it has none).
fn host_and_port(server: &str) -> (String, String) {
    let rest = server
        .trim_start_matches("https://")
        .trim_start_matches("http://");
    let authority = rest.split('/').next().unwrap_or_default();
    match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => {
            (h.trim_matches(['[', ']']).to_owned(), p.to_owned())
        }
        _ => (authority.to_owned(), "443".to_owned()),
    }
}

/// calico-node's interfaces it never picks on Windows (projectcalico/calico v3.32.1
/// `node/pkg/lifecycle/startup/autodetection/autodetection_windows.go`
/// `DEFAULT_INTERFACES_TO_EXCLUDE`), matched anywhere in the name as Go's `MatchString` does.
const EXCLUDED: &[&str] = &[
    ".*cbr.*",
    ".*[Dd]ocker.*",
    ".*\\(nat\\).*",
    ".*Calico.*_ep",
    "Loopback.*",
];

/// How the operator's calico-node would find this node's address.
#[derive(Debug, PartialEq)]
enum Method {
    InternalIp,
    /// The first global unicast address, in calico-node's order, of an interface that
    /// `include` (if any) matches and no `exclude` does, within `cidrs` (if any).
    Enumerate {
        include: Vec<String>,
        exclude: Vec<String>,
        cidrs: Vec<ipnet::Ipv4Net>,
    },
    /// One this node cannot tell (`canReach`, or a method not known here).
    Unknown(String),
}

fn method(inst: &Installation) -> Method {
    let set = inst.windows_inputs.autodetection_v4.clone();
    let m = set.unwrap_or_else(|| match inst.provider.as_deref() {
        Some("EKS") => serde_json::json!({"canReach": "8.8.8.8"}),
        Some("DockerEnterprise") => serde_json::json!({"skipInterface": "^br-.*"}),
        _ => serde_json::json!({"firstFound": true}),
    });
    let text = |k: &str| m[k].as_str().filter(|s| !s.is_empty()).map(str::to_owned);
    let excluded = || EXCLUDED.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    if m["kubernetes"] == "NodeInternalIP" {
        return Method::InternalIp;
    }
    // Several patterns are given comma-separated (`autodetection_methods.go`:
    // `strings.Split(ifaceStr, ",")` for `interface=` and `skip-interface=`).
    let split = |v: String| v.split(',').map(str::to_owned).collect::<Vec<_>>();
    let by = |include, exclude, cidrs| Method::Enumerate {
        include,
        exclude,
        cidrs,
    };
    if let Some(i) = text("interface") {
        return by(split(i), Vec::new(), Vec::new());
    }
    if let Some(s) = text("skipInterface") {
        let mut exclude = excluded();
        exclude.extend(split(s));
        return by(Vec::new(), exclude, Vec::new());
    }
    // The CIDR method applies no exclusions (`autoDetectCIDRByCIDR`:
    // `FilteredEnumeration(nil, nil, cidrs, ...)`).
    if let Some(cidrs) = m["cidrs"].as_array() {
        let cidrs = cidrs.iter().filter_map(|c| c.as_str()?.parse().ok());
        return by(Vec::new(), Vec::new(), cidrs.collect());
    }
    if m["firstFound"] == true {
        return by(Vec::new(), excluded(), Vec::new());
    }
    Method::Unknown(m.to_string())
}

/// Go's `IP.IsGlobalUnicast` for IPv4.
fn global_unicast(ip: Ipv4Addr) -> bool {
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast())
}

/// The address an enumeration picks: calico-node walks the interfaces in reverse of the system's
/// order (`autodetection/interfaces.go` `GetInterfaces`) and takes the first global unicast
/// address within the CIDRs (`filtered.go` `FilteredEnumeration`).
fn enumerate(
    addresses: &[InterfaceAddress],
    include: &[String],
    exclude: &[String],
    cidrs: &[ipnet::Ipv4Net],
) -> Result<Option<(String, Ipv4Addr)>, String> {
    let any = |patterns: &[String]| -> Result<Option<regex::Regex>, String> {
        if patterns.is_empty() {
            return Ok(None);
        }
        regex::Regex::new(&format!("({})", patterns.join(")|(")))
            .map(Some)
            .map_err(|e| format!("the interface pattern is not valid: {e}"))
    };
    let (inc, exc) = (any(include)?, any(exclude)?);
    let mut order: Vec<&str> = Vec::new();
    for a in addresses {
        if !order.contains(&a.interface.as_str()) {
            order.push(&a.interface);
        }
    }
    for name in order.into_iter().rev() {
        if inc.as_ref().is_some_and(|r| !r.is_match(name))
            || exc.as_ref().is_some_and(|r| r.is_match(name))
        {
            continue;
        }
        let found = addresses.iter().filter(|a| a.interface == name).find(|a| {
            global_unicast(a.ip) && (cidrs.is_empty() || cidrs.iter().any(|c| c.contains(&a.ip)))
        });
        if let Some(a) = found {
            return Ok(Some((a.interface.clone(), a.ip)));
        }
    }
    Ok(None)
}

/// The operator's address detection would not pick the Node's InternalIP on this host: the
/// node would advertise another address after the handover and other nodes' VXLAN traffic go
/// there. `None` when it picks it.
pub fn autodetection(
    inst: &Installation,
    internal_ip: Option<Ipv4Addr>,
    addresses: &[InterfaceAddress],
) -> Option<Refusal> {
    let fix = "set the operator's detection to the Node's InternalIP, which calicoctl-win's node uses: kubectl patch installation default --type merge -p '{\"spec\":{\"calicoNetwork\":{\"nodeAddressAutodetectionV4\":{\"kubernetes\":\"NodeInternalIP\"}}}}' (it applies to every node the operator runs on; or give this node's adapter the method that finds it)".to_owned();
    let method = method(inst);
    if method == Method::InternalIp {
        return None;
    }
    let refuse = |why: String| {
        Some(Refusal {
            code: "address-autodetection",
            message: format!(
                "the operator's calico-node would not advertise this node's InternalIP: {why}"
            ),
            fix: fix.clone(),
        })
    };
    let Some(internal) = internal_ip else {
        return refuse("the Node has no InternalIP to compare with".into());
    };
    let picked = match &method {
        Method::Enumerate {
            include,
            exclude,
            cidrs,
        } => enumerate(addresses, include, exclude, cidrs),
        Method::Unknown(m) => Err(format!("its method {m} cannot be judged on this node")),
        Method::InternalIp => return None,
    };
    match picked {
        Ok(Some((_, ip))) if ip == internal => None,
        Ok(Some((interface, ip))) => refuse(format!(
            "its method ({}) picks {ip} on {interface}, not {internal}",
            shown(inst)
        )),
        Ok(None) => refuse(format!(
            "its method ({}) finds no address on this node",
            shown(inst)
        )),
        Err(why) => refuse(why),
    }
}

fn shown(inst: &Installation) -> String {
    inst.windows_inputs.autodetection_v4.as_ref().map_or(
        "firstFound, the operator's default".to_owned(),
        Value::to_string,
    )
}

#[cfg(test)]
#[path = "operator_readiness_tests.rs"]
mod tests;
