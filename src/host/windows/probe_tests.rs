//! What only a real node can say, recorded for the real-Windows workflow (job
//! `real-node-facts`, with CALICOCTL_WIN_PROBE_OUT): HNS's endpoint documents (attached, never
//! attached, remote; HCN and v1), `HcnDeleteEndpoint` on an endpoint in a namespace, and a
//! loopback connect's time. Without the variable it does nothing; it deletes what it makes.

use super::ffi::wide;
use super::hcn::{Close, Delete, Enumerate, HnsCall, Modify, Open, Query, take_string as take};
use libloading::os::windows::{Library, Symbol};
use serde_json::{Value, json};
use std::ffi::c_void;
use windows_sys::Win32::System::LibraryLoader::LOAD_LIBRARY_SEARCH_SYSTEM32;
use windows_sys::core::{GUID, HRESULT, PCWSTR, PWSTR};

type CreateEndpoint = unsafe extern "system" fn(
    *const c_void,
    *const GUID,
    PCWSTR,
    *mut *mut c_void,
    *mut PWSTR,
) -> HRESULT;
type CreateNamespace =
    unsafe extern "system" fn(*const GUID, PCWSTR, *mut *mut c_void, *mut PWSTR) -> HRESULT;

const V2: &str = r#"{"SchemaVersion":{"Major":2,"Minor":0},"Flags":0}"#;
const V2_DETAILED: &str = r#"{"SchemaVersion":{"Major":2,"Minor":0},"Flags":1}"#;

fn guid(id: &str) -> GUID {
    let hex: String = id.chars().filter(char::is_ascii_hexdigit).collect();
    GUID::from_u128(u128::from_str_radix(&hex, 16).unwrap_or(0))
}

/// An HRESULT and an error record, as recorded.
fn outcome(hr: HRESULT, record: PWSTR) -> Value {
    json!({"hresult": format!("0x{:08X}", hr as u32), "record": take(record)})
}

struct Hcn(Library);

impl Hcn {
    fn sym<T>(&self, name: &[u8]) -> Symbol<T> {
        // SAFETY: each name is paired with its signature from computenetwork.h.
        unsafe { self.0.get(name) }.expect("an HCN export")
    }

    fn enumerate(&self, query: &str) -> Vec<String> {
        let f: Symbol<Enumerate> = self.sym(b"HcnEnumerateEndpoints\0");
        let q = wide(query);
        let (mut list, mut record) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: q is NUL-terminated; the out-pointers are this frame's.
        unsafe { f(q.as_ptr(), &mut list, &mut record) };
        take(record);
        serde_json::from_str(&take(list)).unwrap_or_default()
    }

    /// Opens the object `id` with the open function `symbol`: its handle, or what HNS said.
    fn open(&self, symbol: &[u8], id: &str) -> Result<*mut c_void, Value> {
        let open: Symbol<Open> = self.sym(symbol);
        let g = guid(id);
        let (mut h, mut record) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: g lives across the call; the out-pointers are this frame's.
        let hr = unsafe { open(&g, &mut h, &mut record) };
        if hr < 0 || h.is_null() {
            return Err(outcome(hr, record));
        }
        take(record);
        Ok(h)
    }

    /// The endpoint's document as `HcnQueryEndpointProperties` answers `query`.
    fn endpoint(&self, id: &str, query: &str) -> Value {
        let props: Symbol<Query> = self.sym(b"HcnQueryEndpointProperties\0");
        let close: Symbol<Close> = self.sym(b"HcnCloseEndpoint\0");
        let h = match self.open(b"HcnOpenEndpoint\0", id) {
            Ok(h) => h,
            Err(e) => return json!({"open": e}),
        };
        let q = wide(query);
        let (mut doc, mut record) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: h is open until the close below.
        let hr = unsafe { props(h, q.as_ptr(), &mut doc, &mut record) };
        // SAFETY: h came from the open above.
        unsafe { close(h) };
        let doc = take(doc);
        json!({"query": outcome(hr, record), "document": serde_json::from_str::<Value>(&doc).unwrap_or(Value::String(doc))})
    }

    /// Makes an endpoint on the network `network` from `settings`; its id, or what HNS said.
    fn create_endpoint(&self, network: &str, settings: &Value) -> Result<String, Value> {
        let create: Symbol<CreateEndpoint> = self.sym(b"HcnCreateEndpoint\0");
        let close_net: Symbol<Close> = self.sym(b"HcnCloseNetwork\0");
        let close: Symbol<Close> = self.sym(b"HcnCloseEndpoint\0");
        let net = self.open(b"HcnOpenNetwork\0", network)?;
        let id = format!("{:032x}", rand_id());
        let eg = guid(&id);
        let s = wide(&settings.to_string());
        let (mut ep, mut record) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: net is open; eg and s live across the call.
        let hr = unsafe { create(net, &eg, s.as_ptr(), &mut ep, &mut record) };
        // SAFETY: net came from the open above.
        unsafe { close_net(net) };
        if !ep.is_null() {
            // SAFETY: ep came from the create; closing does not delete the endpoint.
            unsafe { close(ep) };
        }
        if hr < 0 {
            return Err(outcome(hr, record));
        }
        take(record);
        Ok(dashed(&id))
    }

    fn delete(&self, symbol: &[u8], id: &str) -> Value {
        let f: Symbol<Delete> = self.sym(symbol);
        let g = guid(id);
        let mut record = std::ptr::null_mut();
        // SAFETY: g lives across the call; record is this frame's.
        let hr = unsafe { f(&g, &mut record) };
        outcome(hr, record)
    }

    /// Makes a namespace and puts `endpoint` in it, as a container's start does; its id.
    fn namespace_with(&self, endpoint: &str) -> (String, Value) {
        let create: Symbol<CreateNamespace> = self.sym(b"HcnCreateNamespace\0");
        let modify: Symbol<Modify> = self.sym(b"HcnModifyNamespace\0");
        let close: Symbol<Close> = self.sym(b"HcnCloseNamespace\0");
        let id = format!("{:032x}", rand_id());
        let g = guid(&id);
        let s = wide(r#"{"SchemaVersion":{"Major":2,"Minor":0},"Type":"HostDefault"}"#);
        let (mut ns, mut record) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: g and s live across the call; the out-pointers are this frame's.
        let hr = unsafe { create(&g, s.as_ptr(), &mut ns, &mut record) };
        let made = outcome(hr, record);
        let add = json!({"ResourceType": "Endpoint", "RequestType": "Add",
            "Settings": {"EndpointId": endpoint}})
        .to_string();
        let a = wide(&add);
        let mut record = std::ptr::null_mut();
        let added = if ns.is_null() {
            json!(null)
        } else {
            // SAFETY: ns is open until the close below.
            let hr = unsafe { modify(ns, a.as_ptr(), &mut record) };
            let o = outcome(hr, record);
            // SAFETY: ns came from the create above.
            unsafe { close(ns) };
            o
        };
        (dashed(&id), json!({"create": made, "add_endpoint": added}))
    }
}

/// 32 hex digits as a GUID is written, `8-4-4-4-12`.
fn dashed(id: &str) -> String {
    let (a, b, c, d, e) = (&id[..8], &id[8..12], &id[12..16], &id[16..20], &id[20..]);
    format!("{a}-{b}-{c}-{d}-{e}")
}

/// A random id for what the probe makes (no RNG crate: the clock and the process id).
fn rand_id() -> u128 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    // The version nibble of a v4 GUID, so HNS takes it for one.
    (t ^ (u128::from(std::process::id()) << 64)) & !(0xF << 76) | (0x4 << 76)
}

/// HNS v1's list of every endpoint (`HNSCall GET /endpoints/`), as it answers.
fn v1_endpoints() -> Value {
    // SAFETY: vmcompute.dll is a system DLL, loaded from System32 only.
    let lib = unsafe { Library::load_with_flags("vmcompute.dll", LOAD_LIBRARY_SEARCH_SYSTEM32) }
        .expect("vmcompute.dll");
    // SAFETY: HNSCall has hcsshim's signature.
    let call: Symbol<HnsCall> = unsafe { lib.get(b"HNSCall\0") }.expect("HNSCall");
    let (m, p, o) = (wide("GET"), wide("/endpoints/"), wide(""));
    let mut answer = std::ptr::null_mut();
    // SAFETY: three NUL-terminated strings and an out-pointer of this frame.
    let hr = unsafe { call(m.as_ptr(), p.as_ptr(), o.as_ptr(), &mut answer) };
    let text = take(answer);
    json!({"hresult": format!("0x{:08X}", hr as u32),
        "answer": serde_json::from_str::<Value>(&text).unwrap_or(Value::String(text))})
}

/// How long a connect to a loopback port with no listener takes, and how it ends.
fn loopback_refusal() -> Value {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let started = std::time::Instant::now();
    let r = std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(10));
    json!({"port": port, "millis": started.elapsed().as_millis() as u64,
        "error_kind": r.err().map(|e| format!("{:?}", e.kind()))})
}

#[test]
fn what_a_real_node_says_is_recorded() {
    let Some(out) = std::env::var_os("CALICOCTL_WIN_PROBE_OUT") else {
        return;
    };
    let out = std::path::PathBuf::from(out);
    std::fs::create_dir_all(&out).expect("the output directory");
    // SAFETY: computenetwork.dll is a system DLL, loaded from System32 only.
    let hcn = Hcn(unsafe {
        Library::load_with_flags("computenetwork.dll", LOAD_LIBRARY_SEARCH_SYSTEM32)
    }
    .expect("computenetwork.dll: the runner has no Containers feature"));
    let nat = super::hcn::Hcn::load()
        .and_then(|h| h.networks())
        .expect("HNS networks")
        .into_iter()
        .find(|n| n.network_type.eq_ignore_ascii_case("NAT"))
        .expect("the runner's nat network (docker's)");
    let mut made = Vec::new();
    let mut facts = serde_json::Map::new();
    // A running container's endpoint, which the workflow started (docker on `nat`).
    let both = |id: &str| json!({"id": id, "flags0": hcn.endpoint(id, V2), "flags1": hcn.endpoint(id, V2_DETAILED)});
    let running: Vec<String> = hcn.enumerate(V2);
    let before = running.iter().map(|id| both(id)).collect();
    facts.insert("endpoints_before".into(), before);
    let never_attached = json!({"SchemaVersion": {"Major": 2, "Minor": 0},
        "Name": "cw-probe-pending", "HostComputeNetwork": nat.id});
    let remote = json!({"SchemaVersion": {"Major": 2, "Minor": 0},
        "Name": "cw-probe-remote", "HostComputeNetwork": nat.id, "Flags": 1,
        "IpConfigurations": [{"IpAddress": "192.0.2.77"}]});
    for (name, settings) in [("pending", never_attached.clone()), ("remote", remote)] {
        let v = match hcn.create_endpoint(&nat.id, &settings) {
            Ok(id) => {
                made.push(id.clone());
                both(&id)
            }
            Err(e) => json!({"create": e}),
        };
        facts.insert(name.into(), v);
    }
    facts.insert("hns_v1_endpoints".into(), v1_endpoints());
    // An endpoint in a namespace, deleted without leaving it first.
    let mut namespaced = json!(null);
    if let Ok(id) = hcn.create_endpoint(&nat.id, &never_attached) {
        let (ns, steps) = hcn.namespace_with(&id);
        let deleted = hcn.delete(b"HcnDeleteEndpoint\0", &id);
        namespaced = json!({"namespace": steps, "delete_while_in_it": deleted,
            "after": hcn.endpoint(&id, V2)});
        made.push(id);
        let gone = hcn.delete(b"HcnDeleteNamespace\0", &ns);
        namespaced["delete_namespace"] = gone;
    }
    facts.insert("delete_in_namespace".into(), namespaced);
    facts.insert("loopback_refused_connect".into(), loopback_refusal());
    for id in made {
        hcn.delete(b"HcnDeleteEndpoint\0", &id);
    }
    let text = serde_json::to_string_pretty(&Value::Object(facts)).expect("json");
    std::fs::write(out.join("hns-facts.json"), text).expect("write the facts");
}
