//! A stand-in for `computenetwork.dll` (the Host Compute Network API) under Wine, which has
//! no HNS. It implements the functions calicoctl-win's `host/windows/hcn.rs` loads, with HCN's
//! documented semantics where they are documented (Microsoft's HCN reference: "HCN Error
//! Code", `HcnCreateNetwork`, `HcnEnumerateNetworks`, ...), and says where it guesses:
//!
//! - documents are schema 2.0 JSON; a query or settings that is not JSON is
//!   `HCN_E_INVALID_JSON`; settings without `SchemaVersion.Major == 2`, a `Name` or a known
//!   `Type` are `HCN_E_INVALID_NETWORK` / `HCN_E_INVALID_NETWORK_TYPE`; a subnet without a
//!   prefix is `HCN_E_INVALID_SUBNET`; a second network of one name is
//!   `HCN_E_NETWORK_ALREADY_EXISTS`; an unknown id is `HCN_E_NETWORK_NOT_FOUND` /
//!   `HCN_E_ENDPOINT_NOT_FOUND`;
//! - a failure writes an error record; its shape (`{"Success":false,"Error":..,"ErrorCode":..}`)
//!   is a guess after hcsshim's reading of HCN results;
//! - deleting a network deletes its endpoints (as HNS does);
//! - a network that needs the vSwitch (L2Bridge, L2Tunnel, Overlay, Transparent) creates it
//!   when it is the first: the host's address moves to `vEthernet (Ethernet)` and the routes
//!   of the physical adapter are dropped (`../netstate.rs`, shared with the iphlpapi stand-in);
//!   deleting the last one removes it. Such a network is answered with a `ProviderAddress`
//!   policy, the management IP (the host's address), as HNS answers for a network bound to a
//!   NIC; other types with 127.0.0.1;
//! - state lives in `C:\calicoctl-win-hcn\` of the Wine prefix, one JSON file per object;
//! - every string handed out comes from `CoTaskMemAlloc`. A malloc spy counts which of them
//!   the caller frees, once a test process asked for it with `HcnStandinCountFrees` before its
//!   second thread started (`spy.rs` says why). Handles opened and closed are counted too.
//!   `HcnStandinStats` reports both, so a test fails on a leak; it refuses while frees are not
//!   counted.
//!
//! - a query's `Filter` (a JSON object as a string, hcsshim's `HostComputeQuery.Filter`) keeps
//!   the objects whose fields equal its values (GUIDs compared without case); `VirtualNetwork`
//!   matches an endpoint's `HostComputeNetwork`, as hcsshim's `ListEndpointsOfNetwork` relies on
//!   (`hcn/hcnendpoint.go`: "Once query can convert schema, change to {HostComputeNetwork:..}");
//!
//! - built a second time as `vmcompute.dll`, it answers the HNS v1 `HNSCall` for
//!   `GET /globals/version` as hcsshim's `hnsCall` reads it (`{"Success":true,"Output":
//!   {"Major":..,"Minor":..}}`), with the version a test wrote to `version.json` in the state
//!   directory; without one, and for any other call, `{"Success":false,"Error":..}`. The
//!   version is the test's, never a claim about a real HNS;
//!
//! Test-only exports: `HcnStandinCountFrees`, `HcnStandinStats`, `HcnStandinOpens` (objects
//! opened so far),
//! `HcnStandinAddEndpoint`, `HcnStandinGhost` (lists an
//! id that does not exist, as a network deleted between enumeration and open),
//! `HcnStandinRecordOnSuccess` (the next call succeeds but writes an error record).

#![allow(clippy::missing_safety_doc)]

#[allow(dead_code)] // The routes half is the iphlpapi stand-in's.
#[path = "../../netstate.rs"]
mod netstate;
mod spy;

use serde_json::{Value, json};
use std::collections::HashSet;
use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use windows_sys::Win32::System::Com::CoTaskMemAlloc;
use windows_sys::core::{GUID, HRESULT, PCWSTR, PWSTR};

const S_OK: HRESULT = 0;
const E_POINTER: HRESULT = 0x8000_4003_u32 as HRESULT;
const E_OUTOFMEMORY: HRESULT = 0x8007_000E_u32 as HRESULT;
/// winerror.h: "Object is not registered".
const CO_E_OBJNOTREG: HRESULT = 0x8004_01FB_u32 as HRESULT;
const HCN_E_NETWORK_NOT_FOUND: u32 = 0x803B_0001;
const HCN_E_ENDPOINT_NOT_FOUND: u32 = 0x803B_0002;
const HCN_E_INVALID_NETWORK: u32 = 0x803B_000A;
const HCN_E_INVALID_NETWORK_TYPE: u32 = 0x803B_000B;
const HCN_E_NETWORK_ALREADY_EXISTS: u32 = 0x803B_0010;
const HCN_E_INVALID_JSON: u32 = 0x803B_001B;
const HCN_E_INVALID_SUBNET: u32 = 0x803B_0032;

/// Network types of the HCN schema (`NetworkMode`).
/// The types whose networks sit on the vSwitch.
const VSWITCH_TYPES: &[&str] = &["L2Bridge", "L2Tunnel", "Overlay", "Transparent"];

fn on_vswitch(doc: &Value) -> bool {
    doc["Type"]
        .as_str()
        .is_some_and(|t| VSWITCH_TYPES.contains(&t))
}

const TYPES: &[&str] = &[
    "NAT",
    "ICS",
    "Transparent",
    "L2Bridge",
    "L2Tunnel",
    "Overlay",
    "Private",
    "Internal",
    "Mirrored",
];

static OPEN_HANDLES: AtomicI64 = AtomicI64::new(0);
/// Every object opened since the DLL was loaded: how a test sees what a listing had to open.
static OPENS: AtomicI64 = AtomicI64::new(0);
static NEXT_ID: AtomicU64 = AtomicU64::new(1);
static GHOST: AtomicBool = AtomicBool::new(false);
static RECORD_ON_SUCCESS: AtomicBool = AtomicBool::new(false);
/// The strings handed out and not yet freed (addresses).
static LIVE: Mutex<Option<HashSet<usize>>> = Mutex::new(None);

fn root() -> PathBuf {
    PathBuf::from(r"C:\calicoctl-win-hcn")
}

/// Test-only: the names of networks HcnCreateNetwork refuses (`refuse.json`, a JSON list), as
/// a locked-down node would.
fn refused(name: &str) -> bool {
    std::fs::read_to_string(root().join("refuse.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Vec<String>>(&t).ok())
        .is_some_and(|names| names.iter().any(|n| n == name))
}

fn dir(kind: &str) -> PathBuf {
    root().join(kind)
}

/// An object's document, or `None`.
fn load(kind: &str, id: &str) -> Option<Value> {
    let text = std::fs::read_to_string(dir(kind).join(format!("{id}.json"))).ok()?;
    serde_json::from_str(&text).ok()
}

fn store(kind: &str, id: &str, doc: &Value) -> std::io::Result<()> {
    std::fs::create_dir_all(dir(kind))?;
    let tmp = dir(kind).join(format!("{id}.tmp"));
    std::fs::write(&tmp, doc.to_string())?;
    std::fs::rename(tmp, dir(kind).join(format!("{id}.json")))
}

fn all(kind: &str) -> Vec<Value> {
    let Ok(entries) = std::fs::read_dir(dir(kind)) else {
        return Vec::new();
    };
    let mut out: Vec<Value> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .filter_map(|t| serde_json::from_str(&t).ok())
        .collect();
    out.sort_by(|a, b| a["ID"].as_str().cmp(&b["ID"].as_str()));
    out
}

fn guid_text(g: &GUID) -> String {
    format!(
        "{:08x}-{:04x}-{:04x}-{:02x}{:02x}-{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
        g.data1,
        g.data2,
        g.data3,
        g.data4[0],
        g.data4[1],
        g.data4[2],
        g.data4[3],
        g.data4[4],
        g.data4[5],
        g.data4[6],
        g.data4[7]
    )
}

fn new_id() -> String {
    let n = NEXT_ID.fetch_add(1, Ordering::SeqCst);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        (t >> 32) as u32,
        (t >> 16) as u16,
        (t & 0xfff) as u16,
        (n >> 48) as u16 & 0xfff,
        n & 0xffff_ffff_ffff
    )
}

unsafe fn read_wide(p: PCWSTR) -> Option<String> {
    if p.is_null() {
        return None;
    }
    let mut n = 0;
    // SAFETY: the caller passes a NUL-terminated UTF-16 string.
    while unsafe { *p.add(n) } != 0 {
        n += 1;
    }
    // SAFETY: n units were just read.
    Some(String::from_utf16_lossy(unsafe {
        std::slice::from_raw_parts(p, n)
    }))
}

/// A string for the caller, from CoTaskMemAlloc, counted until it is freed.
fn hand_out(text: &str) -> Result<PWSTR, HRESULT> {
    let wide: Vec<u16> = text.encode_utf16().chain(std::iter::once(0)).collect();
    // SAFETY: CoTaskMemAlloc has no preconditions; the block is filled below.
    let p = unsafe { CoTaskMemAlloc(wide.len() * 2) } as *mut u16;
    if p.is_null() {
        return Err(E_OUTOFMEMORY);
    }
    // SAFETY: p holds wide.len() units.
    unsafe { std::ptr::copy_nonoverlapping(wide.as_ptr(), p, wide.len()) };
    if let Ok(mut live) = LIVE.lock() {
        live.get_or_insert_with(HashSet::new).insert(p as usize);
    }
    Ok(p)
}

/// Called by the spy when the caller frees a block.
pub(crate) fn freed(p: usize) {
    if let Ok(mut live) = LIVE.lock()
        && let Some(set) = live.as_mut()
    {
        set.remove(&p);
    }
}

/// Sets the out-pointer to a new string; a null out-pointer is `E_POINTER`.
unsafe fn put(out: *mut PWSTR, text: &str) -> HRESULT {
    if out.is_null() {
        return E_POINTER;
    }
    match hand_out(text) {
        // SAFETY: out is a valid out-pointer (checked above).
        Ok(p) => unsafe {
            *out = p;
            S_OK
        },
        Err(hr) => hr,
    }
}

/// A failure: the HRESULT and its error record.
unsafe fn fail(record: *mut PWSTR, code: u32, message: &str) -> HRESULT {
    if !record.is_null() {
        let doc = json!({"Success": false, "Error": message, "ErrorCode": code});
        // SAFETY: record is a valid out-pointer.
        unsafe { put(record, &doc.to_string()) };
    }
    code as HRESULT
}

/// Success, with an error record when a test asked for one.
unsafe fn ok(record: *mut PWSTR) -> HRESULT {
    if !record.is_null() {
        if RECORD_ON_SUCCESS.swap(false, Ordering::SeqCst) {
            let doc = json!({"Success": true, "Error": "a warning HCN wrote on success"});
            // SAFETY: record is a valid out-pointer.
            return unsafe { put(record, &doc.to_string()) };
        }
        // SAFETY: record is a valid out-pointer.
        unsafe { *record = std::ptr::null_mut() };
    }
    S_OK
}

/// A query or settings document: JSON, or `HCN_E_INVALID_JSON`.
unsafe fn document(p: PCWSTR, record: *mut PWSTR) -> Result<Value, HRESULT> {
    // SAFETY: the caller passes a NUL-terminated string or null.
    let text = unsafe { read_wide(p) }.unwrap_or_default();
    serde_json::from_str(&text).map_err(|e| unsafe {
        fail(
            record,
            HCN_E_INVALID_JSON,
            &format!("Invalid JSON document string: {e}"),
        )
    })
}

/// An open handle: the kind and id of the object.
struct Handle {
    kind: &'static str,
    id: String,
}

fn open_handle(kind: &'static str, id: String) -> *mut c_void {
    OPEN_HANDLES.fetch_add(1, Ordering::SeqCst);
    OPENS.fetch_add(1, Ordering::SeqCst);
    Box::into_raw(Box::new(Handle { kind, id })).cast()
}

/// Whether `doc` has every field of `filter` (the query's `Filter`, itself JSON text) at its
/// value; `VirtualNetwork` is an endpoint's network (v1's name for `HostComputeNetwork`).
fn passes(filter: &Value, doc: &Value) -> bool {
    filter.as_object().into_iter().flatten().all(|(k, want)| {
        let field = if k == "VirtualNetwork" {
            "HostComputeNetwork"
        } else {
            k
        };
        match (doc[field].as_str(), want.as_str()) {
            (Some(have), Some(want)) => have.eq_ignore_ascii_case(want),
            _ => &doc[field] == want,
        }
    })
}

unsafe fn enumerate(kind: &str, query: PCWSTR, out: *mut PWSTR, record: *mut PWSTR) -> HRESULT {
    let query = match unsafe { document(query, record) } {
        Ok(q) => q,
        Err(hr) => return hr,
    };
    let filter = match query["Filter"].as_str().filter(|f| !f.is_empty()) {
        None => Value::Null,
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(f) => f,
            Err(e) => unsafe {
                return fail(
                    record,
                    HCN_E_INVALID_JSON,
                    &format!("Invalid query filter: {e}"),
                );
            },
        },
    };
    let mut ids: Vec<String> = all(kind)
        .iter()
        .filter(|d| passes(&filter, d))
        .filter_map(|d| d["ID"].as_str().map(str::to_owned))
        .collect();
    if kind == "networks" && GHOST.swap(false, Ordering::SeqCst) {
        ids.insert(0, "0badc0de-0000-4000-8000-000000000000".into());
    }
    let hr = unsafe { put(out, &json!(ids).to_string()) };
    if hr != S_OK {
        return hr;
    }
    unsafe { ok(record) }
}

unsafe fn open(
    kind: &'static str,
    id: *const GUID,
    out: *mut *mut c_void,
    record: *mut PWSTR,
) -> HRESULT {
    if id.is_null() || out.is_null() {
        return E_POINTER;
    }
    // SAFETY: id points to a GUID.
    let id = guid_text(unsafe { &*id });
    if load(kind, &id).is_none() {
        let (code, what) = not_found(kind);
        return unsafe { fail(record, code, what) };
    }
    // SAFETY: out is a valid out-pointer.
    unsafe { *out = open_handle(kind, id) };
    unsafe { ok(record) }
}

fn not_found(kind: &str) -> (u32, &'static str) {
    if kind == "networks" {
        (HCN_E_NETWORK_NOT_FOUND, "The network was not found")
    } else {
        (HCN_E_ENDPOINT_NOT_FOUND, "The endpoint was not found")
    }
}

unsafe fn query(handle: *const c_void, q: PCWSTR, out: *mut PWSTR, record: *mut PWSTR) -> HRESULT {
    if handle.is_null() {
        return E_POINTER;
    }
    if let Err(hr) = unsafe { document(q, record) } {
        return hr;
    }
    // SAFETY: handle came from an open or create of this DLL and is not closed.
    let h = unsafe { &*(handle as *const Handle) };
    let Some(mut doc) = load(h.kind, &h.id) else {
        let (code, what) = not_found(h.kind);
        return unsafe { fail(record, code, what) };
    };
    // An endpoint's `State` is an HNS v1 field (hcsshim internal/hns/hnsendpoint.go: "dependent
    // on HNS v1 api"): the v2 answer leaves it out, and only `HNSCall GET /endpoints/` gives it.
    if h.kind == "endpoints"
        && let Some(o) = doc.as_object_mut()
    {
        o.remove("State");
    }
    let hr = unsafe { put(out, &doc.to_string()) };
    if hr != S_OK {
        return hr;
    }
    unsafe { ok(record) }
}

unsafe fn close(handle: *const c_void) -> HRESULT {
    if handle.is_null() {
        return E_POINTER;
    }
    // SAFETY: handle came from open_handle and is closed once.
    drop(unsafe { Box::from_raw(handle as *mut Handle) });
    OPEN_HANDLES.fetch_sub(1, Ordering::SeqCst);
    S_OK
}

/// The settings checked as HNS checks a new network; the document to store.
fn checked_network(mut doc: Value, id: String) -> Result<Value, (u32, String)> {
    if doc["SchemaVersion"]["Major"].as_u64() != Some(2) {
        return Err((
            HCN_E_INVALID_NETWORK,
            "SchemaVersion 2.0 is required".into(),
        ));
    }
    let name = doc["Name"].as_str().unwrap_or_default().to_owned();
    if name.is_empty() {
        return Err((HCN_E_INVALID_NETWORK, "The network has no Name".into()));
    }
    let ty = doc["Type"].as_str().unwrap_or_default();
    if !TYPES.contains(&ty) {
        return Err((
            HCN_E_INVALID_NETWORK_TYPE,
            format!("Invalid network type {ty:?}"),
        ));
    }
    for ipam in doc["Ipams"].as_array().into_iter().flatten() {
        for s in ipam["Subnets"].as_array().into_iter().flatten() {
            let prefix = s["IpAddressPrefix"].as_str().unwrap_or_default();
            let valid = prefix.split_once('/').is_some_and(|(a, p)| {
                a.parse::<std::net::Ipv4Addr>().is_ok() && p.parse::<u8>().is_ok_and(|p| p <= 32)
            });
            if !valid {
                return Err((
                    HCN_E_INVALID_SUBNET,
                    format!("Invalid subnet prefix {prefix:?}"),
                ));
            }
        }
    }
    if all("networks")
        .iter()
        .any(|n| n["Name"].as_str() == Some(name.as_str()))
    {
        return Err((
            HCN_E_NETWORK_ALREADY_EXISTS,
            "A network with this name already exists".into(),
        ));
    }
    doc["ID"] = json!(id);
    let management = if on_vswitch(&doc) {
        let named = doc["Policies"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["Type"] == "NetAdapterName")
            .and_then(|p| p["Settings"]["NetworkAdapterName"].as_str());
        netstate::create_vswitch(named)
            .map_err(|e| (0x8007_0005, format!("cannot create the vSwitch: {e}")))?
    } else {
        std::net::Ipv4Addr::LOCALHOST
    };
    let mut policies: Vec<Value> = doc["Policies"].as_array().cloned().unwrap_or_default();
    policies.push(
        json!({"Type": "ProviderAddress", "Settings": {"ProviderAddress": management.to_string()}}),
    );
    doc["Policies"] = json!(policies);
    Ok(doc)
}

#[unsafe(no_mangle)]
pub unsafe extern "system" fn HcnEnumerateNetworks(
    q: PCWSTR,
    out: *mut PWSTR,
    record: *mut PWSTR,
) -> HRESULT {
    unsafe { enumerate("networks", q, out, record) }
}

#[unsafe(no_mangle)]
pub unsafe extern "system" fn HcnEnumerateEndpoints(
    q: PCWSTR,
    out: *mut PWSTR,
    record: *mut PWSTR,
) -> HRESULT {
    unsafe { enumerate("endpoints", q, out, record) }
}

#[unsafe(no_mangle)]
pub unsafe extern "system" fn HcnOpenNetwork(
    id: *const GUID,
    out: *mut *mut c_void,
    record: *mut PWSTR,
) -> HRESULT {
    unsafe { open("networks", id, out, record) }
}

#[unsafe(no_mangle)]
pub unsafe extern "system" fn HcnOpenEndpoint(
    id: *const GUID,
    out: *mut *mut c_void,
    record: *mut PWSTR,
) -> HRESULT {
    unsafe { open("endpoints", id, out, record) }
}

#[unsafe(no_mangle)]
pub unsafe extern "system" fn HcnQueryNetworkProperties(
    h: *const c_void,
    q: PCWSTR,
    out: *mut PWSTR,
    record: *mut PWSTR,
) -> HRESULT {
    unsafe { query(h, q, out, record) }
}

#[unsafe(no_mangle)]
pub unsafe extern "system" fn HcnQueryEndpointProperties(
    h: *const c_void,
    q: PCWSTR,
    out: *mut PWSTR,
    record: *mut PWSTR,
) -> HRESULT {
    unsafe { query(h, q, out, record) }
}

#[unsafe(no_mangle)]
pub unsafe extern "system" fn HcnCloseNetwork(h: *const c_void) -> HRESULT {
    unsafe { close(h) }
}

#[unsafe(no_mangle)]
pub unsafe extern "system" fn HcnCloseEndpoint(h: *const c_void) -> HRESULT {
    unsafe { close(h) }
}

#[unsafe(no_mangle)]
pub unsafe extern "system" fn HcnCreateNetwork(
    id: *const GUID,
    settings: PCWSTR,
    out: *mut *mut c_void,
    record: *mut PWSTR,
) -> HRESULT {
    if id.is_null() || out.is_null() {
        return E_POINTER;
    }
    let doc = match unsafe { document(settings, record) } {
        Ok(d) => d,
        Err(hr) => return hr,
    };
    // SAFETY: id points to a GUID; the zero GUID lets HNS choose.
    let given = guid_text(unsafe { &*id });
    let id = if given == "00000000-0000-0000-0000-000000000000" {
        new_id()
    } else {
        given
    };
    if refused(doc["Name"].as_str().unwrap_or_default()) {
        // E_ACCESSDENIED, the HRESULT of a refused access (winerror.h), with an error record
        // of the stand-in's shape. Which code HNS gives a caller a node's policy refuses is a
        // guess, not read from Microsoft's HCN reference.
        return unsafe { fail(record, 0x8007_0005, "Access is denied.") };
    }
    let doc = match checked_network(doc, id.clone()) {
        Ok(d) => d,
        Err((code, message)) => return unsafe { fail(record, code, &message) },
    };
    if let Err(e) = store("networks", &id, &doc) {
        return unsafe {
            fail(
                record,
                0x8007_0005,
                &format!("cannot keep the network: {e}"),
            )
        };
    }
    // SAFETY: out is a valid out-pointer.
    unsafe { *out = open_handle("networks", id) };
    unsafe { ok(record) }
}

#[unsafe(no_mangle)]
pub unsafe extern "system" fn HcnDeleteNetwork(id: *const GUID, record: *mut PWSTR) -> HRESULT {
    if id.is_null() {
        return E_POINTER;
    }
    // SAFETY: id points to a GUID.
    let id = guid_text(unsafe { &*id });
    if std::fs::remove_file(dir("networks").join(format!("{id}.json"))).is_err() {
        return unsafe { fail(record, HCN_E_NETWORK_NOT_FOUND, "The network was not found") };
    }
    // HNS deletes a network's endpoints with it.
    for e in all("endpoints") {
        if e["HostComputeNetwork"]
            .as_str()
            .is_some_and(|n| n.eq_ignore_ascii_case(&id))
            && let Some(eid) = e["ID"].as_str()
        {
            let _ = std::fs::remove_file(dir("endpoints").join(format!("{eid}.json")));
        }
    }
    if !all("networks").iter().any(on_vswitch) && netstate::delete_vswitch().is_err() {
        return unsafe { fail(record, 0x8007_0005, "cannot remove the vSwitch") };
    }
    unsafe { ok(record) }
}

/// `HcnDeleteEndpoint(REFGUID Id, PWSTR *ErrorRecord)` (Microsoft's HCN reference, "HcnDeleteEndpoint"):
/// `HCN_E_ENDPOINT_NOT_FOUND` for an id HNS does not have.
#[unsafe(no_mangle)]
pub unsafe extern "system" fn HcnDeleteEndpoint(id: *const GUID, record: *mut PWSTR) -> HRESULT {
    if id.is_null() {
        return E_POINTER;
    }
    // SAFETY: id points to a GUID.
    let id = guid_text(unsafe { &*id });
    if std::fs::remove_file(dir("endpoints").join(format!("{id}.json"))).is_err() {
        return unsafe {
            fail(
                record,
                HCN_E_ENDPOINT_NOT_FOUND,
                "The endpoint was not found",
            )
        };
    }
    unsafe { ok(record) }
}

/// `HcnOpenNamespace(REFGUID Id, PHCN_NAMESPACE Namespace, PWSTR *ErrorRecord)`: a namespace a
/// test made (`HcnStandinEndpointNamespace`).
#[unsafe(no_mangle)]
pub unsafe extern "system" fn HcnOpenNamespace(
    id: *const GUID,
    out: *mut *mut c_void,
    record: *mut PWSTR,
) -> HRESULT {
    unsafe { open("namespaces", id, out, record) }
}

#[unsafe(no_mangle)]
pub unsafe extern "system" fn HcnCloseNamespace(h: *const c_void) -> HRESULT {
    unsafe { close(h) }
}

/// `HcnModifyNamespace(HCN_NAMESPACE Namespace, PCWSTR Settings, PWSTR *ErrorRecord)` with
/// hcsshim's `ModifyNamespaceSettingRequest` (hcn/hcnnamespace.go): `ResourceType` `Endpoint`,
/// `RequestType` `Add` or `Remove`, `Settings` `{"EndpointId": ..}`; an endpoint not in the
/// namespace cannot be removed from it (`HCN_E_ENDPOINT_NOT_FOUND`, the stand-in's guess).
#[unsafe(no_mangle)]
pub unsafe extern "system" fn HcnModifyNamespace(
    h: *const c_void,
    settings: PCWSTR,
    record: *mut PWSTR,
) -> HRESULT {
    if h.is_null() {
        return E_POINTER;
    }
    let request = match unsafe { document(settings, record) } {
        Ok(d) => d,
        Err(hr) => return hr,
    };
    // SAFETY: h came from HcnOpenNamespace and is not closed.
    let ns = unsafe { &*(h as *const Handle) }.id.clone();
    let endpoint = request["Settings"]["EndpointId"]
        .as_str()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let Some(mut e) = load("endpoints", &endpoint) else {
        return unsafe {
            fail(
                record,
                HCN_E_ENDPOINT_NOT_FOUND,
                "The endpoint was not found",
            )
        };
    };
    let in_ns = e["HostComputeNamespace"]
        .as_str()
        .is_some_and(|n| n.eq_ignore_ascii_case(&ns));
    match (
        request["ResourceType"].as_str(),
        request["RequestType"].as_str(),
    ) {
        (Some("Endpoint"), Some("Remove")) if in_ns => {
            if let Some(o) = e.as_object_mut() {
                o.remove("HostComputeNamespace");
            }
        }
        (Some("Endpoint"), Some("Add")) => e["HostComputeNamespace"] = json!(ns),
        (Some("Endpoint"), Some("Remove")) => {
            return unsafe {
                fail(
                    record,
                    HCN_E_ENDPOINT_NOT_FOUND,
                    "The endpoint is not in the namespace",
                )
            };
        }
        _ => return unsafe { fail(record, HCN_E_INVALID_JSON, "Unknown namespace request") },
    }
    if store("endpoints", &endpoint, &e).is_err() {
        return 0x8007_0005_u32 as HRESULT;
    }
    unsafe { ok(record) }
}

/// Test-only: makes the namespace `ns` and puts the endpoints named `name` in it, as a
/// container's start does (their `HostComputeNamespace`).
#[unsafe(no_mangle)]
pub unsafe extern "system" fn HcnStandinEndpointNamespace(name: PCWSTR, ns: PCWSTR) -> HRESULT {
    // SAFETY: the caller passes NUL-terminated strings or null.
    let (Some(name), Some(ns)) = (unsafe { (read_wide(name), read_wide(ns)) }) else {
        return E_POINTER;
    };
    let ns = ns.to_ascii_lowercase();
    if store("namespaces", &ns, &json!({"ID": ns})).is_err() {
        return 0x8007_0005_u32 as HRESULT;
    }
    for mut e in all("endpoints") {
        if e["Name"] != name.as_str() {
            continue;
        }
        let Some(id) = e["ID"].as_str().map(str::to_owned) else {
            continue;
        };
        e["HostComputeNamespace"] = json!(ns);
        if store("endpoints", &id, &e).is_err() {
            return 0x8007_0005_u32 as HRESULT;
        }
    }
    S_OK
}

/// Test-only: registers the malloc spy that counts the caller's frees. A process calls it
/// while it has one thread: Wine's allocator cannot take a spy registered during an
/// allocation (`spy.rs`). The spy's `CoRegisterMallocSpy` result: `S_OK`, or its error.
#[unsafe(no_mangle)]
pub unsafe extern "system" fn HcnStandinCountFrees() -> HRESULT {
    spy::register()
}

/// Test-only: strings handed out and not freed, and handles open; `CO_E_OBJNOTREG` while
/// frees are not counted (`HcnStandinCountFrees` was not called or failed), for then every
/// string would look leaked.
#[unsafe(no_mangle)]
pub unsafe extern "system" fn HcnStandinStats(
    live_strings: *mut i64,
    open_handles: *mut i64,
) -> HRESULT {
    if live_strings.is_null() || open_handles.is_null() {
        return E_POINTER;
    }
    if !spy::registered() {
        return CO_E_OBJNOTREG;
    }
    let live = LIVE
        .lock()
        .map(|l| l.as_ref().map_or(0, HashSet::len))
        .unwrap_or(0);
    // SAFETY: both are valid out-pointers.
    unsafe {
        *live_strings = live as i64;
        *open_handles = OPEN_HANDLES.load(Ordering::SeqCst);
    }
    S_OK
}

/// Test-only: attaches an endpoint to a network, as the CNI plugin does for a pod.
/// A stored (v2) endpoint as HNS v1 lists it.
fn v1_endpoint(e: &Value) -> Value {
    let mut v1 = json!({
        "ID": e["ID"],
        "Name": e["Name"],
        "VirtualNetwork": e["HostComputeNetwork"],
        "IPAddress": e["IpConfigurations"][0]["IpAddress"],
        "IsRemoteEndpoint": e["Flags"].as_u64().unwrap_or(0) & 1 == 1,
    });
    if let Some(state) = e.get("State") {
        v1["State"] = state.clone();
    }
    v1
}

/// vmcompute.dll's `HNSCall(method, path, object, response)`.
#[unsafe(no_mangle)]
pub unsafe extern "system" fn HNSCall(
    method: PCWSTR,
    path: PCWSTR,
    _object: PCWSTR,
    response: *mut PWSTR,
) -> HRESULT {
    if response.is_null() {
        return E_POINTER;
    }
    // SAFETY: the caller passes NUL-terminated strings or null.
    let (method, path) = unsafe { (read_wide(method), read_wide(path)) };
    let version = std::fs::read_to_string(root().join("version.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok());
    let answer = match (method.as_deref(), path.as_deref(), version) {
        (Some("GET"), Some("/globals/version"), Some(v)) => json!({"Success": true, "Output": v}),
        (Some("GET"), Some("/globals/version"), None) => {
            json!({"Success": false, "Error": "the stand-in has no version.json"})
        }
        // hcsshim internal/hns/hnspolicylist.go `HNSListPolicyListRequest`: the lists the
        // test left in policylists.json, none without it.
        (Some("GET"), Some("/policylists/"), _) => {
            let lists = std::fs::read_to_string(root().join("policylists.json"))
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                .unwrap_or_else(|| json!([]));
            json!({"Success": true, "Output": lists})
        }
        // hcsshim internal/hns/hnsendpoint.go `HNSListEndpointRequest`: every endpoint as HNS
        // v1 writes it (`ID`, `Name`, `VirtualNetwork`, `IPAddress`, `IsRemoteEndpoint`,
        // `State`), the state a test gave with `HcnStandinEndpointState`.
        (Some("GET"), Some("/endpoints/"), _) => {
            let list: Vec<Value> = all("endpoints").iter().map(v1_endpoint).collect();
            json!({"Success": true, "Output": list})
        }
        _ => json!({"Success": false, "Error": "not implemented by the stand-in"}),
    };
    unsafe { put(response, &answer.to_string()) }
}

#[unsafe(no_mangle)]
pub unsafe extern "system" fn HcnStandinOpens(opens: *mut i64) -> HRESULT {
    if opens.is_null() {
        return E_POINTER;
    }
    // SAFETY: a valid out-pointer.
    unsafe { *opens = OPENS.load(Ordering::SeqCst) };
    S_OK
}

#[unsafe(no_mangle)]
pub unsafe extern "system" fn HcnStandinAddEndpoint(
    network: PCWSTR,
    name: PCWSTR,
    ip: PCWSTR,
) -> HRESULT {
    let (Some(network), Some(name), Some(ip)) =
        (unsafe { (read_wide(network), read_wide(name), read_wide(ip)) })
    else {
        return E_POINTER;
    };
    if load("networks", &network).is_none() {
        return HCN_E_NETWORK_NOT_FOUND as HRESULT;
    }
    let id = new_id();
    let doc = json!({"ID": id, "Name": name, "HostComputeNetwork": network,
        "SchemaVersion": {"Major": 2, "Minor": 0},
        "IpConfigurations": [{"IpAddress": ip, "PrefixLength": 24}]});
    match store("endpoints", &id, &doc) {
        Ok(()) => S_OK,
        Err(_) => 0x8007_0005_u32 as HRESULT,
    }
}

/// Test-only: gives the endpoints named `name` a `State` (hcsshim internal/hns/hnsendpoint.go
/// `EndpointState`, answered by HNS v1 only) and HCN `Flags` (hcsshim hcn/hcnendpoint.go:
/// `EndpointFlagsRemoteEndpoint = 1`, another host's endpoint).
#[unsafe(no_mangle)]
pub unsafe extern "system" fn HcnStandinEndpointState(
    name: PCWSTR,
    state: u32,
    flags: u32,
) -> HRESULT {
    // SAFETY: the caller passes a NUL-terminated string or null.
    let Some(name) = (unsafe { read_wide(name) }) else {
        return E_POINTER;
    };
    let mut found = false;
    for mut e in all("endpoints") {
        if e["Name"] != name.as_str() {
            continue;
        }
        let Some(id) = e["ID"].as_str().map(str::to_owned) else {
            continue;
        };
        e["State"] = json!(state);
        e["Flags"] = json!(flags);
        if store("endpoints", &id, &e).is_err() {
            return 0x8007_0005_u32 as HRESULT;
        }
        found = true;
    }
    if found {
        S_OK
    } else {
        HCN_E_ENDPOINT_NOT_FOUND as HRESULT
    }
}

/// Test-only: the next network enumeration lists an id that does not exist.
#[unsafe(no_mangle)]
pub extern "system" fn HcnStandinGhost() {
    GHOST.store(true, Ordering::SeqCst);
}

/// Test-only: the next successful call also writes an error record.
#[unsafe(no_mangle)]
pub extern "system" fn HcnStandinRecordOnSuccess() {
    RECORD_ON_SUCCESS.store(true, Ordering::SeqCst);
}
