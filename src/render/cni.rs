//! The CNI config (`10-calico.conf`) from a template with Calico's placeholder names.

use super::error::RenderError;
use super::facts::HostFacts;
use super::template::{self, Fill};
use crate::config::Config;
use crate::config::types::{Backend, ContainerRuntime};
use serde_json::Value;
use std::collections::BTreeMap;

/// The template shipped with calicoctl-win.
pub const BUILT_IN_TEMPLATE: &str = include_str!("../../templates/cni.conf.template");

/// The `cniVersion` a CNI template (a release's `cni.conf.template`) gives, read as text: the
/// template has placeholders where JSON has values, so it is no JSON document yet. `None` when
/// it names none, or one that is not a version (digits and dots, at most 16).
pub fn cni_version_in(template: &str) -> Option<String> {
    let at = template.find("\"cniVersion\"")? + "\"cniVersion\"".len();
    let rest = template[at..].trim_start().strip_prefix(':')?.trim_start();
    let value = rest.strip_prefix('"')?.split('"').next()?;
    (!value.is_empty()
        && value.len() <= 16
        && value.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
    .then(|| value.to_owned())
}

/// Calico's template with the `cniVersion` of the release's own `cni.conf.template`
/// (`from_release`), else of `CalicoVersion::cni_version`; unchanged for an unknown release.
pub fn built_in_template(
    version: Option<&crate::release::version::CalicoVersion>,
    from_release: Option<&str>,
) -> std::borrow::Cow<'static, str> {
    const SHIPPED: &str = "\"cniVersion\": \"0.3.1\"";
    let wanted =
        from_release.or_else(|| version.map(crate::release::version::CalicoVersion::cni_version));
    match wanted {
        Some(v) if v != "0.3.1" => BUILT_IN_TEMPLATE
            .replacen(SHIPPED, &format!("\"cniVersion\": \"{v}\""), 1)
            .into(),
        _ => BUILT_IN_TEMPLATE.into(),
    }
}

/// The value of every placeholder Calico's `Install-CNIPlugin` fills.
fn placeholders(c: &Config, facts: &HostFacts) -> BTreeMap<&'static str, Fill> {
    let text = |s: &str| Fill::Text(s.to_owned());
    let opt = |v: Option<String>| Fill::Text(v.unwrap_or_default());
    let tls = c.etcd.tls.as_ref();
    BTreeMap::from([
        (
            "NODENAME_FILE",
            text(c.install_root.join("nodename").as_str()),
        ),
        (
            "KUBECONFIG",
            // calico-node's own, as `calico.psm1` fills `__KUBECONFIG__` with
            // `$env:KUBECONFIG` at every release; CalicoNode renews its token.
            match &c.kubeconfig {
                Some(k) => text(k.as_str()),
                None => Fill::Missing("a kubeconfig path: set kubeconfig"),
            },
        ),
        // The first CIDR fills the template; `expand_service_cidrs` adds the others.
        (
            "K8S_SERVICE_CIDR",
            match c.service_cidrs.first() {
                Some(cidr) => text(&cidr.to_string()),
                None => Fill::Missing("a service CIDR: set service_cidrs"),
            },
        ),
        (
            "DNS_NAME_SERVERS",
            Fill::List(c.dns.servers.iter().map(ToString::to_string).collect()),
        ),
        ("DATASTORE_TYPE", text(&c.datastore.to_string())),
        ("DSR_SUPPORT", Fill::Bool(facts.os_build.supports_dsr())),
        (
            "ETCD_ENDPOINTS",
            text(&super::env::joined(&c.etcd.endpoints)),
        ),
        ("ETCD_KEY_FILE", opt(tls.map(|t| t.key_file.to_string()))),
        ("ETCD_CERT_FILE", opt(tls.map(|t| t.cert_file.to_string()))),
        (
            "ETCD_CA_CERT_FILE",
            opt(tls.map(|t| t.ca_cert_file.to_string())),
        ),
        ("IPAM_TYPE", text(&c.cni.ipam_type.to_string())),
        // An empty mode means L2Bridge (windows-bgp) to the Calico CNI plugin.
        (
            "MODE",
            text(if c.backend == Backend::Vxlan {
                "vxlan"
            } else {
                ""
            }),
        ),
        ("VNI", Fill::Number(u64::from(c.vxlan.vni.get()))),
        ("MAC_PREFIX", text(&c.vxlan.mac_prefix.to_string())),
        (
            "ROUTE_TYPE",
            text(match c.container_runtime {
                ContainerRuntime::Containerd => "SDNROUTE",
                ContainerRuntime::Docker => "ROUTE",
            }),
        ),
    ])
}

/// Renders the CNI config. `template_name` names the template in errors.
pub fn render(
    c: &Config,
    facts: &HostFacts,
    template: &str,
    template_name: &str,
) -> Result<String, RenderError> {
    let filled = template::fill(template, &placeholders(c, facts)).map_err(|source| {
        RenderError::Template {
            template: template_name.to_owned(),
            source,
        }
    })?;
    let not_json = |message: String| RenderError::NotJson {
        template: template_name.to_owned(),
        message,
    };
    let mut doc: Value = serde_json::from_str(&filled).map_err(|e| not_json(e.to_string()))?;
    let Some(obj) = doc.as_object_mut() else {
        return Err(not_json("the top level is not an object".into()));
    };
    // Settings Calico's template hard-codes are applied to the parsed document, so they take
    // effect with the user's own template too.
    obj.insert(
        "windows_use_single_network".into(),
        Value::Bool(c.windows_use_single_network),
    );
    // The group the plugin's libcalico-go reads (`cni-plugin/pkg/types/types.go`
    // `calico_api_group`, which `CreateClient` sets as `CALICO_API_GROUP`), as the operator
    // writes it into its CNI config (tigera/operator master 40788b9b6 `pkg/render/node.go`).
    if let Some(g) = facts.api_group_pin() {
        obj.insert("calico_api_group".into(), Value::String(g.to_owned()));
    }
    if let Some(dns) = obj.get_mut("DNS").and_then(Value::as_object_mut) {
        dns.insert(
            "Search".into(),
            c.dns
                .search
                .iter()
                .map(|d| Value::String(d.to_string()))
                .collect(),
        );
    }
    expand_service_cidrs(
        obj,
        &c.service_cidrs
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
    );
    Ok(format!("{doc:#}\n"))
}

/// Puts every service CIDR in the OutBoundNAT exceptions and gives each its own route policy.
fn expand_service_cidrs(obj: &mut serde_json::Map<String, Value>, cidrs: &[String]) {
    let (Some(first), Some(Value::Array(policies))) = (cidrs.first(), obj.get_mut("policies"))
    else {
        return;
    };
    let mut expanded = Vec::with_capacity(policies.len() + cidrs.len());
    for policy in policies.drain(..) {
        let value = policy.get("Value");
        let is_route = value
            .and_then(|v| v.get("DestinationPrefix"))
            .and_then(Value::as_str)
            == Some(first);
        if is_route {
            for cidr in cidrs {
                let mut copy = policy.clone();
                copy["Value"]["DestinationPrefix"] = Value::String(cidr.clone());
                expanded.push(copy);
            }
            continue;
        }
        // OutBoundNAT's `ExceptionList`: what Calico's template writes
        // (node/windows-packaging/CalicoWindows/cni.conf.template:52 at v3.30.7) and all its
        // plugin reads (cni-plugin/internal/pkg/utils/winpol/windows_policy.go:74); the plugin
        // itself sets HNS v2's `Exceptions` from it (:91), so a written `Exceptions` is unread.
        let mut policy = policy;
        let list = policy
            .get_mut("Value")
            .and_then(|v| v.get_mut("ExceptionList"));
        if let Some(Value::Array(items)) = list
            && items.iter().any(|i| i.as_str() == Some(first))
        {
            items.retain(|i| !i.as_str().is_some_and(|s| cidrs.iter().any(|c| c == s)));
            items.extend(cidrs.iter().cloned().map(Value::String));
        }
        expanded.push(policy);
    }
    *policies = expanded;
}

#[cfg(test)]
mod release_template_tests {
    use super::*;

    /// A release's template is read as text (its placeholders are no JSON yet).
    #[test]
    fn the_cni_version_of_a_release_template_is_read_as_text() {
        let t = "{\n  \"name\": \"Calico\",\n  \"cniVersion\":  \"1.0.0\",\n  \"vni\": __VNI__\n}";
        assert_eq!(cni_version_in(t).as_deref(), Some("1.0.0"));
        assert_eq!(cni_version_in("{}"), None);
        assert_eq!(cni_version_in(r#"{"cniVersion": "1.0.0; rm"}"#), None);
        let built = built_in_template(None, Some("0.4.0"));
        assert!(built.contains(r#""cniVersion": "0.4.0""#), "{built}");
    }
}
