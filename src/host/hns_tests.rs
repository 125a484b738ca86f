//! The HNS documents' tests: HCN's networks, endpoints and answers; HNS v1's version and lists.

use super::*;
use serde_json::json;

#[test]
fn reads_a_schema_2_network() {
    let doc = json!({
        "ID": "5c2a8a6e-0000-4000-8000-000000000001", "Name": "Calico", "Type": "Overlay",
        "Ipams": [{"Type": "Static", "Subnets": [{
            "IpAddressPrefix": "10.244.1.0/26",
            "Routes": [{"NextHop": "10.244.1.1", "DestinationPrefix": "0.0.0.0/0"}],
            "Policies": [{"Type": "VSID", "Settings": {"IsolationId": 4097}}]}]}],
        "Policies": [
            {"Type": "ProviderAddress", "Settings": {"ProviderAddress": "10.0.0.5"}},
            {"Type": "DrMacAddress", "Settings": {"Address": "0E-2A-0A-F4-01-01"}},
            {"Type": "NetAdapterName", "Settings": {"NetworkAdapterName": "Ethernet"}}]
    });
    let n = parse_network(&doc).expect("network");
    assert_eq!(n.vsid(), Some(4097));
    assert_eq!(n.subnets[0].gateway.as_deref(), Some("10.244.1.1"));
    assert_eq!(n.management_ip.as_deref(), Some("10.0.0.5"));
    assert_eq!(n.dr_mac.as_deref(), Some("0E-2A-0A-F4-01-01"));
    assert_eq!(n.adapter.as_deref(), Some("Ethernet"));
    // A missing type is NAT (HCN omits it), a missing id no network.
    let nat = parse_network(&json!({"ID": "x", "Name": "nat"})).expect("nat");
    assert_eq!(nat.network_type, "NAT");
    assert!(parse_network(&json!({"Name": "no id"})).is_none());
}

#[test]
fn a_subnet_without_a_default_route_is_refused_as_hnslib_does() {
    let bad = json!({"Name": "X", "Ipams": [{"Subnets": [{"IpAddressPrefix": "10.0.0.0/30", "Routes": []}]}]});
    assert!(validate_spec(&bad).unwrap_err().contains("10.0.0.0/30"));
    let good = json!({"Name": "X", "Ipams": [{"Subnets": [{"IpAddressPrefix": "10.0.0.0/30",
        "Routes": [{"NextHop": "10.0.0.1", "DestinationPrefix": "0.0.0.0/0"}]}]}]});
    assert_eq!(validate_spec(&good).as_deref(), Ok("X"));
    assert!(validate_spec(&json!({})).is_err());
}

/// hcsshim's `checkForErrors`: an error record is an error even with a successful HRESULT;
/// a missing network or endpoint is `NotFound`, 0x80070490 (ERROR_NOT_FOUND: deleted while
/// listed) too, as hcsshim's `IsNotFoundError` has it.
#[test]
fn hcn_outcomes_are_read_as_hcsshim_reads_them() {
    assert!(hcn_outcome(0, "", "open").is_ok());
    for (hr, record, want) in [
        (
            0,
            r#"{"Error":"bad settings"}"#,
            r#"message: "bad settings""#,
        ),
        (0, "not a document", r#"message: "not a document""#),
        (0x8007_0057, "", "code: 2147942487"),
        (HCN_E_NETWORK_ALREADY_EXISTS, "", "Exists"),
        (HCN_E_NETWORK_NOT_FOUND, "Network not found", "NotFound"),
        (HCN_E_ENDPOINT_NOT_FOUND, "Network not found", "NotFound"),
        (E_ELEMENT_NOT_FOUND, "Network not found", "NotFound"),
    ] {
        let e = hcn_outcome(hr as i32, record, "create").unwrap_err();
        let got = format!("{e:?}");
        assert!(got.contains(want), "{hr:#x} {record}: {got}");
    }
}

/// hcsshim's `hnsResponse` envelope (`hns_output`, `hns_list`, which every v1 answer goes
/// through): lists in `Output`, errors kept, none empty, capped.
#[test]
fn policy_lists_are_read_from_hnss_answer() {
    let one = r#"{"Success":true,"Output":[{"ID":"a","EndpointReferences":[],"Policies":[{"Type":"ELB"}]}]}"#;
    assert_eq!(parse_policy_lists(one).expect("lists")[0]["ID"], "a");
    assert_eq!(
        parse_policy_lists(r#"{"Success":true}"#).expect("none"),
        Vec::<Value>::new()
    );
    assert_eq!(
        parse_policy_lists(r#"{"Success":false,"Error":"Element not found."}"#),
        Err("Element not found.".to_owned())
    );
    assert!(parse_policy_lists(r#"{"Success":true,"Output":{"ID":"a"}}"#).is_err());
    let many = serde_json::json!({"Success": true,
        "Output": vec![serde_json::json!({}); MAX_POLICY_LISTS + 5]});
    assert_eq!(
        parse_policy_lists(&many.to_string()).expect("lists").len(),
        MAX_POLICY_LISTS
    );
}

/// The state comes from HNS v1 only (hcsshim: "dependent on HNS v1 api"): v2's is replaced;
/// with no v1 answer no endpoint has one.
#[test]
fn endpoint_states_are_hns_v1s() {
    let answer = r#"{"Success":true,"Output":[
        {"ID":"AAAA-1","VirtualNetwork":"n","State":1,"IsRemoteEndpoint":false},
        {"ID":"aaaa-2","VirtualNetwork":"n","State":3},
        {"ID":"aaaa-3","VirtualNetwork":"n"}]}"#;
    let states = parse_v1_endpoint_states(answer).expect("states");
    assert_eq!(states.get("aaaa-1"), Some(&1));
    assert_eq!(states.get("aaaa-3"), None);
    let ep = |id: &str, state: Option<u16>| {
        let doc = json!({"ID": id, "HostComputeNetwork": "n", "State": state});
        parse_endpoint(&doc).expect("endpoint")
    };
    // HCN v2 queried with default flags: no State, or one v1 disagrees with.
    let mut eps = vec![
        ep("aaaa-1", None),
        ep("AAAA-2", Some(1)),
        ep("aaaa-3", Some(3)),
    ];
    with_v1_states(&mut eps, Some(&states));
    let got: Vec<Option<u16>> = eps.iter().map(|e| e.state).collect();
    assert_eq!(got, [Some(1), Some(3), None]);
    with_v1_states(&mut eps, None);
    assert!(eps.iter().all(|e| e.state.is_none()));
}

/// hcsshim's `DSRVersion` ranges, at their edges.
#[test]
fn dsr_follows_hcsshims_version_ranges() {
    for (v, want) in [
        ((9, 2), false),
        ((9, 3), true),
        ((9, 9), true),
        ((10, 0), false),
        ((10, 1), false),
        ((10, 2), true),
        ((11, 0), true),
        ((15, 1), true),
        ((8, 9), false),
    ] {
        assert_eq!(dsr_supported(v), want, "{v:?}");
    }
}

#[test]
fn the_version_is_read_from_hnss_answer() {
    assert_eq!(
        parse_version(r#"{"Success":true,"Output":{"Major":13,"Minor":3}}"#),
        Ok((13, 3))
    );
    assert!(parse_version("no").is_err());
    assert!(parse_version(r#"{"Success":true,"Output":{"Major":-1,"Minor":3}}"#).is_err());
}

/// HCN's v2 document (hcsshim hcn/hcnendpoint.go `HostComputeEndpoint`): `Flags` bit 1 is
/// `EndpointFlagsRemoteEndpoint`; `State` is read when HNS gives one.
#[test]
fn the_remote_flag_and_the_state_are_read() {
    let v2 = json!({"ID": "e1", "Name": "pod", "HostComputeNetwork": "n1", "Flags": 1,
        "State": 3, "IpConfigurations": [{"IpAddress": "10.0.0.5", "PrefixLength": 24}]});
    let e = parse_endpoint(&v2).expect("endpoint");
    assert_eq!(
        (e.remote, e.state, e.ip.as_deref()),
        (true, Some(3), Some("10.0.0.5"))
    );
    let plain = json!({"ID": "e3", "HostComputeNetwork": "n1", "Flags": 2});
    let e = parse_endpoint(&plain).expect("endpoint");
    assert_eq!((e.remote, e.state, e.mac), (false, None, None));
    // `MacAddress`: kube-proxy gives remote endpoints one of its own making.
    let v2 = json!({"ID": "e4", "HostComputeNetwork": "n1", "Flags": 1,
        "MacAddress": "02-11-0a-f4-09-09"});
    assert_eq!(
        parse_endpoint(&v2).expect("endpoint").mac.as_deref(),
        Some("02-11-0a-f4-09-09")
    );
    let empty = json!({"ID": "e5", "HostComputeNetwork": "n1", "MacAddress": ""});
    assert_eq!(parse_endpoint(&empty).expect("endpoint").mac, None);
    assert_eq!(
        (1..=7).map(state_name).collect::<Vec<_>>(),
        [
            "Created",
            "Attached",
            "AttachedSharing",
            "Detached",
            "Degraded",
            "Destroyed",
            "unknown"
        ]
    );
}
