//! HNS through the HCN API of `computenetwork.dll`, loaded at run time: a static import would
//! stop the exe from starting on a host without the Containers feature (and under Wine).

use super::ffi::{export, system_dll, wide};
use crate::host::hns::{self, HnsEndpoint, HnsNetwork};
use crate::host::{HostError, HostResult};
use libloading::os::windows::{Library, Symbol};
use std::ffi::c_void;
use windows_sys::Win32::System::Com::CoTaskMemFree;
use windows_sys::core::{GUID, HRESULT, PCWSTR, PWSTR};

pub(super) type Enumerate = unsafe extern "system" fn(PCWSTR, *mut PWSTR, *mut PWSTR) -> HRESULT;
pub(super) type Open =
    unsafe extern "system" fn(*const GUID, *mut *mut c_void, *mut PWSTR) -> HRESULT;
pub(super) type Query =
    unsafe extern "system" fn(*const c_void, PCWSTR, *mut PWSTR, *mut PWSTR) -> HRESULT;
type Create =
    unsafe extern "system" fn(*const GUID, PCWSTR, *mut *mut c_void, *mut PWSTR) -> HRESULT;
pub(super) type Delete = unsafe extern "system" fn(*const GUID, *mut PWSTR) -> HRESULT;
pub(super) type Close = unsafe extern "system" fn(*const c_void) -> HRESULT;
pub(super) type Modify = unsafe extern "system" fn(*const c_void, PCWSTR, *mut PWSTR) -> HRESULT;

const QUERY: &str = r#"{"SchemaVersion":{"Major":2,"Minor":0},"Flags":0}"#;

/// The query for the endpoints of one network, as hcsshim's `ListEndpointsOfNetwork` makes it
/// (`hcn/hcnendpoint.go`: `Filter` is JSON text, `{"VirtualNetwork": <network id>}`), so HNS
/// answers with that network's endpoints, not every remote endpoint on the host.
pub fn endpoints_query(network_id: &str) -> String {
    let filter = serde_json::json!({ "VirtualNetwork": network_id }).to_string();
    serde_json::json!({
        "SchemaVersion": {"Major": 2, "Minor": 0},
        "Flags": 0,
        "Filter": filter,
    })
    .to_string()
}

/// The loaded HCN library.
pub struct Hcn {
    lib: Library,
}

impl Hcn {
    pub fn load() -> HostResult<Self> {
        let why = "; the Containers feature is not installed";
        let lib = system_dll("computenetwork.dll", "the Host Network Service", why)?;
        Ok(Self { lib })
    }

    fn sym<T>(&self, name: &[u8]) -> HostResult<Symbol<T>> {
        // SAFETY: each name is paired with the signature documented for it in computenetwork.h.
        unsafe {
            export(
                &self.lib,
                "computenetwork.dll",
                "the Host Network Service",
                name,
            )
        }
    }

    pub fn networks(&self) -> HostResult<Vec<HnsNetwork>> {
        let docs = self.documents("Network", QUERY)?;
        Ok(docs.iter().filter_map(hns::parse_network).collect())
    }

    pub fn endpoints(&self, network_id: &str) -> HostResult<Vec<HnsEndpoint>> {
        let docs = self.documents("Endpoint", &endpoints_query(network_id))?;
        Ok(docs
            .iter()
            .filter_map(hns::parse_endpoint)
            .filter(|e| e.network_id.eq_ignore_ascii_case(network_id))
            .collect())
    }

    /// The properties of each `HcnEnumerate<kind>s` lists: one deleted between the enumeration
    /// and the open is skipped.
    fn documents(&self, kind: &str, query: &str) -> HostResult<Vec<serde_json::Value>> {
        let name = format!("HcnEnumerate{kind}s\0");
        let op = format!("list HNS {}s", kind.to_lowercase());
        let mut out = Vec::new();
        for id in self.enumerate(name.as_bytes(), query, &op)? {
            match self.properties(kind, &id) {
                Err(HostError::NotFound { .. }) => {}
                other => out.push(other?),
            }
        }
        Ok(out)
    }

    pub fn create_network(&self, spec_json: &str, name: &str) -> HostResult<HnsNetwork> {
        let create: Symbol<Create> = self.sym(b"HcnCreateNetwork\0")?;
        let query: Symbol<Query> = self.sym(b"HcnQueryNetworkProperties\0")?;
        let close: Symbol<Close> = self.sym(b"HcnCloseNetwork\0")?;
        let settings = wide(spec_json);
        let zero = GUID::from_u128(0);
        let mut handle: *mut c_void = std::ptr::null_mut();
        let mut record: PWSTR = std::ptr::null_mut();
        // SAFETY: settings is NUL-terminated; a zero GUID lets HNS choose the id; the handle
        // and error record are out-pointers owned by this frame.
        let hr = unsafe { create(&zero, settings.as_ptr(), &mut handle, &mut record) };
        let op = format!("create HNS network {name}");
        let handle = opened(hr, record, handle, &close, &op)?;
        let doc = query_and_close(handle, &query, &close, "query the new HNS network")?;
        hns::parse_network(&doc).ok_or_else(|| HostError::Refused {
            what: "create HNS network".into(),
            reason: "HNS returned a network without an id or name".into(),
        })
    }

    pub fn delete_network(&self, id: &str) -> HostResult<()> {
        self.delete(b"HcnDeleteNetwork\0", id, "network")
    }

    pub fn delete_endpoint(&self, id: &str) -> HostResult<()> {
        self.delete(b"HcnDeleteEndpoint\0", id, "endpoint")
    }

    /// `HcnOpenNamespace`, `HcnModifyNamespace` with hcsshim's `RemoveNamespaceEndpoint`
    /// request (`hns::remove_namespace_endpoint_request`), `HcnCloseNamespace`.
    pub fn remove_namespace_endpoint(&self, namespace: &str, endpoint: &str) -> HostResult<()> {
        let modify: Symbol<Modify> = self.sym(b"HcnModifyNamespace\0")?;
        let op = format!("open HNS namespace {namespace}");
        let (handle, close) = self.open("Namespace", namespace, &op)?;
        let request = wide(&hns::remove_namespace_endpoint_request(endpoint));
        let mut record: PWSTR = std::ptr::null_mut();
        // SAFETY: handle is open until the close below; request is NUL-terminated.
        let hr = unsafe { modify(handle, request.as_ptr(), &mut record) };
        // SAFETY: handle came from the open above.
        unsafe { close(handle) };
        check(
            hr,
            record,
            &format!("remove HNS endpoint {endpoint} from namespace {namespace}"),
        )
    }

    /// `HcnDeleteNetwork` or `HcnDeleteEndpoint` (`HRESULT (REFGUID Id, PWSTR *ErrorRecord)`).
    fn delete(&self, symbol: &[u8], id: &str, what: &str) -> HostResult<()> {
        let delete: Symbol<Delete> = self.sym(symbol)?;
        let guid = parse_guid(id)?;
        let mut record: PWSTR = std::ptr::null_mut();
        // SAFETY: guid lives across the call; record is an out-pointer.
        let hr = unsafe { delete(&guid, &mut record) };
        check(hr, record, &format!("delete HNS {what} {id}"))
    }

    fn enumerate(&self, name: &[u8], query: &str, op: &str) -> HostResult<Vec<String>> {
        let enumerate: Symbol<Enumerate> = self.sym(name)?;
        let q = wide(query);
        let mut list: PWSTR = std::ptr::null_mut();
        let mut record: PWSTR = std::ptr::null_mut();
        // SAFETY: q is NUL-terminated; list and record are out-pointers freed below.
        let hr = unsafe { enumerate(q.as_ptr(), &mut list, &mut record) };
        // Every string HCN handed out is freed, whatever the outcome.
        let list = take_string(list);
        check(hr, record, op)?;
        let doc = parse_json(list)?;
        Ok(doc
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect())
    }

    /// `HcnOpen<kind>` of the object `id`: its handle, and `HcnClose<kind>` to close it.
    fn open(&self, kind: &str, id: &str, op: &str) -> HostResult<(*mut c_void, Symbol<Close>)> {
        let open: Symbol<Open> = self.sym(format!("HcnOpen{kind}\0").as_bytes())?;
        let close: Symbol<Close> = self.sym(format!("HcnClose{kind}\0").as_bytes())?;
        let guid = parse_guid(id)?;
        let mut handle: *mut c_void = std::ptr::null_mut();
        let mut record: PWSTR = std::ptr::null_mut();
        // SAFETY: guid lives across the call; handle and record are out-pointers.
        let hr = unsafe { open(&guid, &mut handle, &mut record) };
        Ok((opened(hr, record, handle, &close, op)?, close))
    }

    /// `HcnOpen<kind>`, `HcnQuery<kind>Properties`, `HcnClose<kind>` of the object `id`.
    fn properties(&self, kind: &str, id: &str) -> HostResult<serde_json::Value> {
        let query: Symbol<Query> = self.sym(format!("HcnQuery{kind}Properties\0").as_bytes())?;
        let (handle, close) = self.open(kind, id, &format!("open HNS object {id}"))?;
        query_and_close(handle, &query, &close, &format!("query HNS object {id}"))
    }
}

/// The handle an open or create gave, checked: beside an error record (hcsshim's
/// `checkForErrors` counts one as an error even with a successful HRESULT) it is closed.
fn opened(
    hr: HRESULT,
    record: PWSTR,
    handle: *mut c_void,
    close: &Symbol<Close>,
    op: &str,
) -> HostResult<*mut c_void> {
    if let Err(e) = check(hr, record, op) {
        if !handle.is_null() {
            // SAFETY: a handle the open or create gave, closed once; the object stays.
            unsafe { close(handle) };
        }
        return Err(e);
    }
    Ok(handle)
}

/// The properties of the open `handle`, closed after (closing deletes nothing).
fn query_and_close(
    handle: *mut c_void,
    query: &Symbol<Query>,
    close: &Symbol<Close>,
    op: &str,
) -> HostResult<serde_json::Value> {
    let q = wide(QUERY);
    let mut props: PWSTR = std::ptr::null_mut();
    let mut record: PWSTR = std::ptr::null_mut();
    // SAFETY: handle is open until the close below; props and record are out-pointers.
    let hr = unsafe { query(handle, q.as_ptr(), &mut props, &mut record) };
    // SAFETY: handle came from an open or create and is closed once.
    unsafe { close(handle) };
    let props = take_string(props);
    check(hr, record, op)?;
    parse_json(props)
}

/// `HNSCall` of vmcompute.dll, hcsshim's `hnsCall` entry point; the response is
/// CoTaskMemAlloc'd.
pub(super) type HnsCall = unsafe extern "system" fn(PCWSTR, PCWSTR, PCWSTR, *mut PWSTR) -> HRESULT;

/// vmcompute.dll, loaded at run time for HNS v1's `HNSCall`.
pub struct VmCompute {
    lib: Library,
}

impl VmCompute {
    pub fn load() -> HostResult<Self> {
        let lib = system_dll("vmcompute.dll", "HNS v1 (vmcompute.dll)", "")?;
        Ok(Self { lib })
    }

    /// The HNS service's version, as hcsshim's `GetGlobals` asks it: `GET /globals/version`.
    pub fn version(&self) -> HostResult<(u32, u32)> {
        self.get("/globals/version", "the HNS version", hns::parse_version)
    }

    /// HNS's policy lists, as hcsshim's `HNSListPolicyListRequest` asks them.
    pub fn policy_lists(&self) -> HostResult<Vec<serde_json::Value>> {
        self.get(
            "/policylists/",
            "the HNS policy lists",
            hns::parse_policy_lists,
        )
    }

    /// Every endpoint's HNS v1 `State`, as hcsshim's `HNSListEndpointRequest` (which Felix
    /// uses) asks them: `GET /endpoints/`.
    pub fn endpoint_states(&self) -> HostResult<std::collections::BTreeMap<String, u16>> {
        self.get(
            "/endpoints/",
            "the HNS v1 endpoints",
            hns::parse_v1_endpoint_states,
        )
    }

    /// `GET path` through `HNSCall`, its answer's text read by `parse`.
    fn get<T>(
        &self,
        path: &str,
        what: &str,
        parse: fn(&str) -> Result<T, String>,
    ) -> HostResult<T> {
        // SAFETY: HNSCall has the signature above (hcsshim's generated syscall wrapper).
        let call: Symbol<HnsCall> =
            unsafe { export(&self.lib, "vmcompute.dll", what, b"HNSCall\0") }?;
        let (method, path, object) = (wide("GET"), wide(path), wide(""));
        let mut response: PWSTR = std::ptr::null_mut();
        // SAFETY: three NUL-terminated strings and an out-pointer owned by this frame; the
        // response is freed by take_string whatever the outcome.
        let hr = unsafe {
            call(
                method.as_ptr(),
                path.as_ptr(),
                object.as_ptr(),
                &mut response,
            )
        };
        let answer = take_string(response);
        let op = format!("read {what}");
        if hr < 0 {
            return Err(HostError::Api {
                op,
                code: hr as u32,
                message: answer,
            });
        }
        parse(&answer).map_err(|reason| HostError::Refused { what: op, reason })
    }
}

/// A string HCN or HNSCall handed out, read and freed (CoTaskMem, per Microsoft's HCN
/// reference).
pub(super) fn take_string(p: PWSTR) -> String {
    let s = super::ffi::take_wide(p);
    // SAFETY: p came from CoTaskMemAlloc or is null (CoTaskMemFree's page: then no effect),
    // and is not used after this.
    unsafe { CoTaskMemFree(p as *const c_void) };
    s
}

fn parse_json(text: String) -> HostResult<serde_json::Value> {
    serde_json::from_str(&text).map_err(|e| HostError::Refused {
        what: "read an HNS answer".into(),
        reason: format!("not JSON ({e}): {text}"),
    })
}

/// The call's outcome (`hns::hcn_outcome`); frees the error record either way.
fn check(hr: HRESULT, record: PWSTR, op: &str) -> HostResult<()> {
    hns::hcn_outcome(hr, &take_string(record), op)
}

/// Parses `5c2a8a6e-0000-4000-8000-000000000001` (braces allowed) into a GUID.
fn parse_guid(id: &str) -> HostResult<GUID> {
    let hex: String = id.chars().filter(|c| c.is_ascii_hexdigit()).collect();
    let bad = || HostError::Refused {
        what: format!("HNS id {id}"),
        reason: "not a GUID".into(),
    };
    if hex.len() != 32 || id.trim_matches(['{', '}']).len() != 36 {
        return Err(bad());
    }
    u128::from_str_radix(&hex, 16)
        .map(GUID::from_u128)
        .map_err(|_| bad())
}
