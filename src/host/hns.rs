//! HNS networks and endpoints as the tool sees them, read from HCN's schema 2.0 documents.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

use super::error::HostResult;

/// One subnet of an HNS network.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HnsSubnet {
    pub prefix: String,
    pub gateway: Option<String>,
    /// The VXLAN network identifier (VSID policy); for Calico's network, the VNI.
    pub vsid: Option<u32>,
}

/// An HNS network.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HnsNetwork {
    pub id: String,
    pub name: String,
    /// `Overlay`, `L2Bridge`, `NAT` ...; HCN omits the type of NAT networks.
    #[serde(rename = "type")]
    pub network_type: String,
    pub subnets: Vec<HnsSubnet>,
    pub management_ip: Option<String>,
    pub dr_mac: Option<String>,
    pub adapter: Option<String>,
}

impl HnsNetwork {
    /// The VSID of the first subnet that has one.
    pub fn vsid(&self) -> Option<u32> {
        self.subnets.iter().find_map(|s| s.vsid)
    }
}

/// An HNS endpoint (a pod's or the host's interface on a network); the simulated host keeps
/// its endpoints as such in its state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HnsEndpoint {
    pub id: String,
    pub name: String,
    pub network_id: String,
    pub ip: Option<String>,
    /// An endpoint of another host (VXLAN's remote endpoints): HCN's `Flags` bit 1 (hcsshim
    /// hcn/hcnendpoint.go `EndpointFlagsRemoteEndpoint`).
    #[serde(default)]
    pub remote: bool,
    /// The endpoint's `State` (hcsshim internal/hns/hnsendpoint.go `EndpointState`).
    pub state: Option<u16>,
    /// The HCN namespace it is in (`HostComputeNamespace`, hcsshim hcn/hcnendpoint.go).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The provider address of an Overlay endpoint (projectcalico/calico v3.31.0
    /// `cni-plugin/pkg/dataplane/windows/dataplane_windows.go`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider_address: Option<String>,
    /// The endpoint's `MacAddress` as its maker gave it (`installed::endpoints`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
}

/// The Host Network Service.
pub trait Hns {
    /// Every HNS network; `Unavailable` when HNS is missing.
    fn hns_networks(&self) -> HostResult<Vec<HnsNetwork>>;
    fn hns_endpoints(&self, network_id: &str) -> HostResult<Vec<HnsEndpoint>>;
    /// Creates a network from an HCN schema-2.0 JSON document; a taken name is refused.
    fn hns_create_network(&self, spec_json: &str) -> HostResult<HnsNetwork>;
    /// Deletes a network and its endpoints.
    fn hns_delete_network(&self, id: &str) -> HostResult<()>;
    /// Deletes one endpoint (`HcnDeleteEndpoint`); `NotFound` when there is none with `id`.
    fn hns_delete_endpoint(&self, id: &str) -> HostResult<()>;
    /// Takes an endpoint out of its HCN namespace (hcsshim hcn/hcnnamespace.go
    /// `RemoveNamespaceEndpoint`); `NotFound` without such a namespace or endpoint.
    fn hns_remove_namespace_endpoint(&self, namespace: &str, endpoint: &str) -> HostResult<()>;
    /// HNS's (major, minor) version: hcsshim's `GetGlobals` (`HNSCall GET /globals/version`).
    fn hns_version(&self) -> HostResult<(u32, u32)>;
    /// HNS's policy lists (kube-proxy's load balancers) through HNS v1's
    /// `GET /policylists/` (hcsshim internal/hns/hnspolicylist.go), at most `MAX_POLICY_LISTS`.
    fn hns_policy_lists(&self) -> HostResult<Vec<serde_json::Value>>;
}

/// The name of an endpoint state number (`EndpointState`, hcsshim internal/hns/hnsendpoint.go).
pub fn state_name(state: u16) -> &'static str {
    match state {
        1 => "Created",
        2 => "Attached",
        3 => "AttachedSharing",
        4 => "Detached",
        5 => "Degraded",
        6 => "Destroyed",
        _ => "unknown",
    }
}

/// HCN's "network not found" (`HCN_E_NETWORK_NOT_FOUND`, winerror.h).
pub const HCN_E_NETWORK_NOT_FOUND: u32 = 0x803B_0001;
/// HCN's "endpoint not found" (`HCN_E_ENDPOINT_NOT_FOUND`).
pub const HCN_E_ENDPOINT_NOT_FOUND: u32 = 0x803B_0002;
/// `HRESULT_FROM_WIN32(ERROR_NOT_FOUND)` for an object deleted since listed (hcsshim
/// `hcn.IsNotFoundError`).
pub const E_ELEMENT_NOT_FOUND: u32 = 0x8007_0490;
/// HCN's "a network with this name already exists" (`HCN_E_NETWORK_ALREADY_EXISTS`).
pub const HCN_E_NETWORK_ALREADY_EXISTS: u32 = 0x803B_0010;

/// The outcome of an HCN call, as hcsshim's `checkForErrors` reads it: a failed HRESULT or a
/// non-empty error record is an error; a missing network or endpoint is `NotFound`.
pub fn hcn_outcome(hr: i32, record: &str, op: &str) -> Result<(), crate::host::HostError> {
    use crate::host::HostError;
    if hr >= 0 && record.is_empty() {
        return Ok(());
    }
    // HRESULTs are compared as the bit patterns winerror.h writes.
    let code = hr as u32;
    if matches!(
        code,
        HCN_E_NETWORK_NOT_FOUND | HCN_E_ENDPOINT_NOT_FOUND | E_ELEMENT_NOT_FOUND
    ) {
        return Err(HostError::not_found(format!("{op}: the HNS object")));
    }
    if code == HCN_E_NETWORK_ALREADY_EXISTS {
        return Err(HostError::exists(format!("{op}: a network of that name")));
    }
    // An error record's `Error` text (HNS's JSON result), else the record as it came.
    let said = serde_json::from_str::<Value>(record)
        .ok()
        .and_then(|v| v["Error"].as_str().map(str::to_owned))
        .filter(|e| !e.is_empty());
    Err(HostError::Api {
        op: op.to_owned(),
        code,
        message: match said {
            Some(text) => text,
            None if record.is_empty() => "HNS reported an error".into(),
            None => record.to_owned(),
        },
    })
}

/// The adapter a network document binds (its `NetAdapterName` policy), before HNS made it.
pub fn document_adapter(doc: &Value) -> Option<String> {
    policy_setting(doc, "NetAdapterName", "NetworkAdapterName")
}

/// The policy of type `ty` in `v`'s `Policies`.
fn policy<'a>(v: &'a Value, ty: &str) -> Option<&'a Value> {
    v.get("Policies")?
        .as_array()?
        .iter()
        .find(|p| p.get("Type").and_then(Value::as_str) == Some(ty))
}

/// The text setting `key` of `v`'s policy of type `ty`.
fn policy_setting(v: &Value, ty: &str, key: &str) -> Option<String> {
    let setting = policy(v, ty)?.get("Settings")?.get(key)?;
    setting.as_str().map(str::to_owned)
}

/// The subnets of every IPAM of a network document.
fn subnets(doc: &Value) -> impl Iterator<Item = &Value> {
    let ipams = doc
        .get("Ipams")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    ipams
        .filter_map(|ipam| ipam.get("Subnets").and_then(Value::as_array))
        .flatten()
}

/// A subnet's route to `0.0.0.0/0`.
fn default_route(subnet: &Value) -> Option<&Value> {
    let routes = subnet.get("Routes").and_then(Value::as_array);
    routes
        .into_iter()
        .flatten()
        .find(|r| r.get("DestinationPrefix").and_then(Value::as_str) == Some("0.0.0.0/0"))
}

/// Reads a network from an HCN (schema 2.0) JSON document; `None` without an id or a name.
pub fn parse_network(doc: &Value) -> Option<HnsNetwork> {
    // hcsshim tags it `ID` (hcn/hcnnetwork.go), Microsoft's HCN JSON schema writes `Id`, and
    // Go's decoder takes either: both are read, as for endpoints.
    let id = str_field(doc, &["ID", "Id"])?;
    let name = str_field(doc, &["Name"])?;
    let network_type = str_field(doc, &["Type"]).unwrap_or_else(|| "NAT".to_owned());
    let subnets = subnets(doc).filter_map(parse_v2_subnet).collect();
    Some(HnsNetwork {
        id,
        name,
        network_type,
        subnets,
        management_ip: policy_setting(doc, "ProviderAddress", "ProviderAddress"),
        dr_mac: policy_setting(doc, "DrMacAddress", "Address"),
        adapter: document_adapter(doc),
    })
}

fn parse_v2_subnet(s: &Value) -> Option<HnsSubnet> {
    let vsid = policy(s, "VSID")
        .and_then(|p| p.pointer("/Settings/IsolationId"))
        .and_then(Value::as_u64)
        .and_then(|v| u32::try_from(v).ok());
    Some(HnsSubnet {
        prefix: str_field(s, &["IpAddressPrefix"])?,
        gateway: default_route(s).and_then(|r| str_field(r, &["NextHop"])),
        vsid,
    })
}

/// Reads an endpoint from an HCN (schema 2.0) JSON document, what `HcnQueryEndpointProperties`
/// answers the query `windows::hcn` sends (hcsshim hcn/hcnendpoint.go `HostComputeEndpoint`).
pub fn parse_endpoint(doc: &Value) -> Option<HnsEndpoint> {
    let ip = doc
        .get("IpConfigurations")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .and_then(|c| str_field(c, &["IpAddress"]));
    let flags = doc.get("Flags").and_then(Value::as_u64).unwrap_or(0);
    Some(HnsEndpoint {
        id: str_field(doc, &["ID", "Id"])?,
        name: str_field(doc, &["Name"]).unwrap_or_default(),
        network_id: str_field(doc, &["HostComputeNetwork"])?,
        ip,
        remote: flags & 1 == 1,
        state: doc
            .get("State")
            .and_then(Value::as_u64)
            .and_then(|s| u16::try_from(s).ok()),
        namespace: str_field(doc, &["HostComputeNamespace"]).filter(|n| !n.is_empty()),
        provider_address: endpoint_provider_address(doc),
        mac: str_field(doc, &["MacAddress"]).filter(|m| !m.is_empty()),
    })
}

/// The endpoint's provider address: HCN's `ProviderAddress` policy, or HNS v1's `PA`.
fn endpoint_provider_address(doc: &Value) -> Option<String> {
    policy_setting(doc, "ProviderAddress", "ProviderAddress")
        .or_else(|| policy(doc, "PA")?.get("PA")?.as_str().map(str::to_owned))
}

fn str_field(v: &Value, keys: &[&str]) -> Option<String> {
    keys.iter()
        .find_map(|k| v.get(*k).and_then(Value::as_str))
        .map(str::to_owned)
}

/// Parses and checks a network document before creation; returns it and the network's name.
pub fn checked_spec(spec_json: &str) -> Result<(Value, String), crate::host::HostError> {
    let refused = |reason: String| crate::host::HostError::refused("create HNS network", reason);
    let doc: Value =
        serde_json::from_str(spec_json).map_err(|e| refused(format!("invalid JSON: {e}")))?;
    let name = validate_spec(&doc).map_err(refused)?;
    Ok((doc, name))
}

/// Checks a network document as hnslib's `Create()` does: a name, each subnet a default route.
pub fn validate_spec(doc: &Value) -> Result<String, String> {
    let name = str_field(doc, &["Name"]).ok_or("the network document has no Name")?;
    for s in subnets(doc) {
        let prefix = str_field(s, &["IpAddressPrefix"]).ok_or("a subnet has no IpAddressPrefix")?;
        if default_route(s).is_none_or(|r| str_field(r, &["NextHop"]).is_none_or(|h| h.is_empty()))
        {
            return Err(format!(
                "subnet {prefix} needs a 0.0.0.0/0 route with a NextHop"
            ));
        }
    }
    Ok(name)
}

/// Whether HNS of this version does Direct Server Return (hcsshim `hcn/hcnglobals.go`,
/// `DSRVersion`: 9.3 up to 10.0, and 10.2 on).
pub fn dsr_supported(version: (u32, u32)) -> bool {
    match version {
        (9, minor) => minor >= 3,
        (10, minor) => minor >= 2,
        (major, _) => major > 10,
    }
}

/// The `Output` of an HNS v1 answer (hcsshim internal/hns/hnsfuncs.go `hnsResponse`).
pub fn hns_output(answer: &str) -> Result<Value, String> {
    let mut doc: Value = serde_json::from_str(answer).map_err(|e| format!("not JSON ({e})"))?;
    if doc["Success"].as_bool() != Some(true) {
        return Err(doc["Error"]
            .as_str()
            .map_or_else(|| format!("HNS did not succeed: {answer}"), str::to_owned));
    }
    Ok(doc["Output"].take())
}

/// The most policy lists kept for diags.
pub const MAX_POLICY_LISTS: usize = 10_000;

/// The policy lists of an answer to `GET /policylists/` (hcsshim `HNSListPolicyListRequest`),
/// at most `MAX_POLICY_LISTS`.
pub fn parse_policy_lists(answer: &str) -> Result<Vec<Value>, String> {
    let mut lists = hns_list(answer, "policy lists")?;
    lists.truncate(MAX_POLICY_LISTS);
    Ok(lists)
}

/// The list an HNS v1 answer gives (`what`), none when its `Output` is absent.
fn hns_list(answer: &str, what: &str) -> Result<Vec<Value>, String> {
    match hns_output(answer)? {
        Value::Array(list) => Ok(list),
        Value::Null => Ok(Vec::new()),
        other => Err(format!("{what} are not a list: {other}")),
    }
}

/// The `HcnModifyNamespace` request that takes `endpoint` out of a namespace, as hcsshim
/// hcn/hcnnamespace.go `RemoveNamespaceEndpoint` writes it.
pub fn remove_namespace_endpoint_request(endpoint: &str) -> String {
    serde_json::json!({
        "ResourceType": "Endpoint",
        "RequestType": "Remove",
        "Settings": {"EndpointId": endpoint},
    })
    .to_string()
}

/// The most endpoints whose v1 state is kept.
pub const MAX_V1_ENDPOINTS: usize = 65_536;

/// Each endpoint's `State` by its lower-case id from HNS v1's `GET /endpoints/`, as Felix
/// reads it (projectcalico/calico felix/dataplane/windows/endpoint_mgr.go
/// `RefreshHnsEndpointCache`). An endpoint without one is left out.
pub fn parse_v1_endpoint_states(answer: &str) -> Result<BTreeMap<String, u16>, String> {
    Ok(hns_list(answer, "endpoints")?
        .iter()
        .take(MAX_V1_ENDPOINTS)
        .filter_map(|e| {
            let id = str_field(e, &["ID", "Id"])?.to_ascii_lowercase();
            let state = e
                .get("State")?
                .as_u64()
                .and_then(|s| u16::try_from(s).ok())?;
            Some((id, state))
        })
        .collect())
}

/// Gives each endpoint its HNS v1 state, the only source of it; none without a v1 answer.
pub fn with_v1_states(endpoints: &mut [HnsEndpoint], states: Option<&BTreeMap<String, u16>>) {
    for e in endpoints {
        e.state = states.and_then(|s| s.get(&e.id.to_ascii_lowercase()).copied());
    }
}

/// The version in HNS v1's answer to `GET /globals/version`
/// (`{"Success":true,"Output":{"Major":13,"Minor":3}}`; hcsshim's `hnsCall`).
pub fn parse_version(answer: &str) -> Result<(u32, u32), String> {
    let output = hns_output(answer)?;
    let part = |k: &str| {
        output[k]
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| format!("no {k} in {answer}"))
    };
    Ok((part("Major")?, part("Minor")?))
}

#[cfg(test)]
#[path = "hns_tests.rs"]
mod hns_tests;
