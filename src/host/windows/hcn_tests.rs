//! The HNS contract against hcn.rs under Wine, through the stand-in `computenetwork.dll`
//! (tools/wine/computenetwork, CALICOCTL_WIN_HCN_STANDIN). Every HCN string and handle is freed.

use super::WindowsHost;
use super::ffi::wide;
use crate::host::contract::{self, unique};
use crate::host::{Hns, HostError};
use libloading::os::windows::{Library, Symbol};
use std::sync::Mutex;
use windows_sys::Win32::System::LibraryLoader::LOAD_LIBRARY_SEARCH_SYSTEM32;
use windows_sys::core::{HRESULT, PCWSTR};

/// The stand-in's counters are per process: its tests take turns.
static TURN: Mutex<()> = Mutex::new(());

fn standin() -> Option<Library> {
    std::env::var_os("CALICOCTL_WIN_HCN_STANDIN")?;
    // SAFETY: the stand-in's initialisation has no preconditions; it is the DLL hcn.rs loads.
    Some(
        unsafe { Library::load_with_flags("computenetwork.dll", LOAD_LIBRARY_SEARCH_SYSTEM32) }
            .expect(
                "CALICOCTL_WIN_HCN_STANDIN is set but the stand-in computenetwork.dll is missing",
            ),
    )
}

/// The stand-in and this test's turn; `None` without the stand-in.
fn turn() -> Option<(Library, std::sync::MutexGuard<'static, ()>)> {
    let lib = standin()?;
    Some((lib, TURN.lock().unwrap_or_else(|p| p.into_inner())))
}

/// Asks the stand-in to count its string frees before main, while this process has one thread
/// (Wine's allocator crashes otherwise: tools/wine/computenetwork/src/spy.rs), via `.CRT$XCU`.
#[used]
#[unsafe(link_section = ".CRT$XCU")]
static COUNT_FREES_BEFORE_MAIN: extern "C" fn() = count_frees;

extern "C" fn count_frees() {
    if std::env::var_os("CALICOCTL_WIN_HCN_STANDIN").is_none() {
        return;
    }
    // A missing stand-in is said by `standin` in each test; nothing panics before main.
    // SAFETY: the stand-in's initialisation has no preconditions.
    let Ok(lib) =
        (unsafe { Library::load_with_flags("computenetwork.dll", LOAD_LIBRARY_SEARCH_SYSTEM32) })
    else {
        return;
    };
    type CountFrees = unsafe extern "system" fn() -> HRESULT;
    // SAFETY: the export has this signature (tools/wine/computenetwork/src/lib.rs).
    let hr = match unsafe { lib.get::<CountFrees>(b"HcnStandinCountFrees\0") } {
        // SAFETY: it takes no arguments.
        Ok(f) => unsafe { f() },
        Err(_) => -1,
    };
    if hr < 0 {
        eprintln!("the stand-in computenetwork.dll does not count frees ({hr:#x})");
    }
    // The stand-in pins itself once its spy is registered.
    std::mem::forget(lib);
}

/// Strings handed out and not freed, handles open.
fn stats(lib: &Library) -> (i64, i64) {
    type Stats = unsafe extern "system" fn(*mut i64, *mut i64) -> HRESULT;
    // SAFETY: the export has this signature (tools/wine/computenetwork/src/lib.rs).
    let f: Symbol<Stats> = unsafe { lib.get(b"HcnStandinStats\0") }.expect("stats export");
    let (mut live, mut open) = (0, 0);
    // SAFETY: both are valid out-pointers.
    let hr = unsafe { f(&mut live, &mut open) };
    assert_eq!(
        hr, 0,
        "the stand-in's counters ({hr:#x}: frees not counted)"
    );
    (live, open)
}

/// Adds an endpoint to the stand-in's network `net`, as the CNI plugin would.
fn add_endpoint(lib: &Library, net: &str, name: &str, ip: &str) {
    type Add = unsafe extern "system" fn(PCWSTR, PCWSTR, PCWSTR) -> HRESULT;
    // SAFETY: the export has this signature.
    let add: Symbol<Add> = unsafe { lib.get(b"HcnStandinAddEndpoint\0") }.expect("export");
    let (net, name, ip) = (wide(net), wide(name), wide(ip));
    // SAFETY: three NUL-terminated strings that outlive the call.
    assert_eq!(unsafe { add(net.as_ptr(), name.as_ptr(), ip.as_ptr()) }, 0);
}

/// A NAT network named after `prefix`, made.
fn nat(h: &WindowsHost, prefix: &str) -> crate::host::HnsNetwork {
    let spec = serde_json::json!({"SchemaVersion": {"Major": 2, "Minor": 0},
        "Name": unique(prefix), "Type": "NAT"});
    h.hns_create_network(&spec.to_string()).expect("create")
}

/// Writes the stand-in's knob `path`, its directory made.
fn knob<'a>(path: &'a str, text: &str) -> &'a std::path::Path {
    let path = std::path::Path::new(path);
    std::fs::create_dir_all(path.parent().expect("dir")).expect("dir");
    std::fs::write(path, text).expect("write");
    path
}

fn switch(lib: &Library, name: &[u8]) {
    // SAFETY: the test switches take no arguments.
    let f: Symbol<unsafe extern "system" fn()> = unsafe { lib.get(name) }.expect("switch export");
    // SAFETY: as above.
    unsafe { f() };
}

#[test]
fn the_hns_contract_holds_through_hcn_with_nothing_leaked() {
    let Some((lib, _turn)) = turn() else { return };
    let h = WindowsHost::new();
    let before = stats(&lib);
    contract::hns(&h, &unique("External-"), &|id, name, ip| {
        add_endpoint(&lib, id, name, ip)
    });
    assert_eq!(
        stats(&lib),
        before,
        "HCN strings not freed or handles not closed"
    );
}

#[test]
fn a_network_gone_between_listing_and_opening_is_skipped() {
    let Some((lib, _turn)) = turn() else { return };
    let before = stats(&lib);
    switch(&lib, b"HcnStandinGhost\0");
    WindowsHost::new()
        .hns_networks()
        .expect("a vanished network does not fail the list");
    assert_eq!(stats(&lib), before, "strings or handles leaked");
}

#[test]
fn an_error_record_with_a_successful_result_is_an_error() {
    let Some((lib, _turn)) = turn() else { return };
    let before = stats(&lib);
    switch(&lib, b"HcnStandinRecordOnSuccess\0");
    let err = WindowsHost::new()
        .hns_networks()
        .expect_err("the record counts");
    assert!(
        matches!(&err, HostError::Api { message, .. } if message.contains("warning HCN wrote")),
        "{err}"
    );
    // HNS refuses what it cannot take, with its code and record.
    let bad = r#"{"SchemaVersion":{"Major":2,"Minor":0},"Name":"bad","Type":"Bogus"}"#;
    let err = WindowsHost::new()
        .hns_create_network(bad)
        .expect_err("unknown type");
    assert!(
        matches!(&err, HostError::Api { code: 0x803B_000B, message, .. } if message.contains("Invalid network type")),
        "{err}"
    );
    assert_eq!(stats(&lib), before, "strings or handles leaked");
}

/// A network HNS refuses (E_ACCESSDENIED with its error record; the stand-in's `refuse.json`,
/// as a locked-down node answers) keeps the operation, the record's text and the HRESULT.
#[test]
fn a_refused_network_keeps_its_hresult_and_record() {
    let Some((lib, _turn)) = turn() else { return };
    let before = stats(&lib);
    let name = unique("Refused-");
    let refuse = knob(
        r"C:\calicoctl-win-hcn\refuse.json",
        &serde_json::json!([name]).to_string(),
    );
    let doc =
        format!(r#"{{"SchemaVersion":{{"Major":2,"Minor":0}},"Name":"{name}","Type":"NAT"}}"#);
    let err = WindowsHost::new()
        .hns_create_network(&doc)
        .expect_err("refused");
    std::fs::remove_file(refuse).expect("remove");
    let text = err.to_string();
    assert_eq!(err.os_code(), Some(0x8007_0005), "{text}");
    assert!(
        text.contains(&name) && text.ends_with("Access is denied. (HRESULT 0x80070005)"),
        "{text}"
    );
    assert_eq!(stats(&lib), before, "strings or handles leaked");
}

/// Objects the stand-in has opened since it was loaded.
fn opens(lib: &Library) -> i64 {
    type Opens = unsafe extern "system" fn(*mut i64) -> HRESULT;
    // SAFETY: the export has this signature (tools/wine/computenetwork/src/lib.rs).
    let f: Symbol<Opens> = unsafe { lib.get(b"HcnStandinOpens\0") }.expect("opens export");
    let mut n = 0;
    // SAFETY: a valid out-pointer.
    assert_eq!(unsafe { f(&mut n) }, 0);
    n
}

/// The endpoints of one network are asked of HNS with hcsshim's filter
/// (`ListEndpointsOfNetwork`: `{"VirtualNetwork": id}`), so a listing opens that network's
/// endpoints only, not every remote endpoint of every other network at every poll.
#[test]
fn the_endpoints_of_one_network_are_listed_with_a_filter() {
    let Some((lib, _turn)) = turn() else { return };
    let h = WindowsHost::new();
    let (ours, other) = (nat(&h, "Ours-"), nat(&h, "Other-"));
    add_endpoint(&lib, &ours.id, "pod-a", "10.9.0.2");
    for i in 0..5 {
        add_endpoint(
            &lib,
            &other.id,
            &format!("remote-{i}"),
            &format!("10.9.1.{}", i + 2),
        );
    }
    let before = opens(&lib);
    let listed = h.hns_endpoints(&ours.id).expect("list");
    let opened = opens(&lib) - before;
    for n in [&ours, &other] {
        h.hns_delete_network(&n.id).expect("delete");
    }
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(
        opened, 1,
        "every endpoint was opened, not only the network's own"
    );
}

/// The HNS version is asked as hcsshim's `GetGlobals` asks it (`HNSCall GET /globals/version`
/// of vmcompute.dll, here the stand-in built as vmcompute.dll): the answer's `Output` read,
/// and a refusal kept with HNS's words.
#[test]
fn the_hns_version_is_read_through_hnscall() {
    let Some(_turn) = turn() else { return };
    let knob = knob(
        r"C:\calicoctl-win-hcn\version.json",
        r#"{"Major":9,"Minor":2}"#,
    );
    let h = WindowsHost::new();
    let read = h.hns_version();
    std::fs::remove_file(knob).expect("remove");
    assert_eq!(read.expect("version"), (9, 2));
    let err = h.hns_version().expect_err("no version");
    assert!(err.to_string().contains("no version.json"), "{err}");
}

/// An endpoint's HNS v1 `State` (read through `HNSCall`) and remote flag (HCN `Flags` bit 1)
/// are listed, and it is deleted alone.
#[test]
fn an_endpoints_state_and_remote_flag_are_read_and_it_is_deleted_alone() {
    let Some((lib, _turn)) = turn() else { return };
    type SetState = unsafe extern "system" fn(PCWSTR, u32, u32) -> HRESULT;
    // SAFETY: the export has this signature.
    let set: Symbol<SetState> = unsafe { lib.get(b"HcnStandinEndpointState\0") }.expect("export");
    let h = WindowsHost::new();
    let n = nat(&h, "States-");
    for (name, ip, state, flags) in [
        ("stuck_Calico", "10.9.0.2", 1, 0),
        ("remote_x", "10.9.1.2", 3, 1),
    ] {
        add_endpoint(&lib, &n.id, name, ip);
        let name = wide(name);
        // SAFETY: a NUL-terminated string that outlives the call.
        assert_eq!(unsafe { set(name.as_ptr(), state, flags) }, 0);
    }
    let eps = h.hns_endpoints(&n.id).expect("endpoints");
    let stuck = eps
        .iter()
        .find(|e| e.name == "stuck_Calico")
        .expect("stuck");
    let remote = eps.iter().find(|e| e.name == "remote_x").expect("remote");
    assert_eq!((stuck.state, stuck.remote), (Some(1), false), "{eps:?}");
    assert_eq!((remote.state, remote.remote), (Some(3), true), "{eps:?}");
    h.hns_delete_endpoint(&stuck.id).expect("delete");
    let left = h.hns_endpoints(&n.id).expect("endpoints");
    h.hns_delete_network(&n.id).expect("delete the network");
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0].name, "remote_x");
}

/// An endpoint still in a pod's namespace is read with it (`HostComputeNamespace`), taken out
/// of it as hcsshim's `RemoveNamespaceEndpoint` asks (`HcnModifyNamespace`), then deleted; no
/// string or handle is left.
#[test]
fn an_endpoint_is_taken_out_of_its_namespace_before_it_is_deleted() {
    let Some((lib, _turn)) = turn() else { return };
    type InNamespace = unsafe extern "system" fn(PCWSTR, PCWSTR) -> HRESULT;
    // SAFETY: the export has this signature.
    let put: Symbol<InNamespace> =
        unsafe { lib.get(b"HcnStandinEndpointNamespace\0") }.expect("export");
    let before = stats(&lib);
    let h = WindowsHost::new();
    let n = nat(&h, "Namespaced-");
    let ns = "0f0e0d0c-0b0a-4009-8807-060504030201";
    add_endpoint(&lib, &n.id, "pod_Calico", "10.9.2.2");
    let (nm, nsw) = (wide("pod_Calico"), wide(ns));
    // SAFETY: NUL-terminated strings that outlive the call.
    assert_eq!(unsafe { put(nm.as_ptr(), nsw.as_ptr()) }, 0);
    let ep = h.hns_endpoints(&n.id).expect("endpoints").remove(0);
    assert_eq!(ep.namespace.as_deref(), Some(ns), "{ep:?}");
    h.hns_remove_namespace_endpoint(ns, &ep.id)
        .expect("taken out");
    let again = h.hns_endpoints(&n.id).expect("endpoints").remove(0);
    assert_eq!(again.namespace, None);
    let err = h
        .hns_remove_namespace_endpoint(ns, &ep.id)
        .expect_err("not in it any more");
    assert!(matches!(err, HostError::NotFound { .. }), "{err}");
    h.hns_delete_endpoint(&ep.id).expect("delete");
    h.hns_delete_network(&n.id).expect("delete the network");
    assert_eq!(stats(&lib), before, "strings or handles leaked");
}

/// HNS's policy lists are asked as hcsshim's `HNSListPolicyListRequest` asks them
/// (`HNSCall GET /policylists/`): none, then the ones HNS holds.
#[test]
fn the_policy_lists_are_read_through_hnscall() {
    let Some(_turn) = turn() else { return };
    let h = WindowsHost::new();
    assert_eq!(
        h.hns_policy_lists().expect("none"),
        Vec::<serde_json::Value>::new()
    );
    let knob = knob(
        r"C:\calicoctl-win-hcn\policylists.json",
        r#"[{"ID":"5c2a8a6e-0000-4000-8000-000000000001","EndpointReferences":["/endpoints/x"],"Policies":[{"Type":"ELB"}]}]"#,
    );
    let read = h.hns_policy_lists();
    std::fs::remove_file(knob).expect("remove");
    let lists = read.expect("lists");
    assert_eq!(lists.len(), 1, "{lists:?}");
    assert_eq!(lists[0]["Policies"][0]["Type"], "ELB");
}

/// The HNS contract where HNS must not be disturbed (real Windows too): a NAT network is made,
/// listed, refused by name twice, deleted; HNS answers its version.
#[test]
fn a_nat_network_lives_and_dies_on_this_host() {
    let real = crate::host::contract::on_windows::real_host();
    if !real && standin().is_none() {
        return;
    }
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let h = WindowsHost::new();
    let name = unique("calicoctl-win-ci-");
    let spec = serde_json::json!({"SchemaVersion": {"Major": 2, "Minor": 0}, "Name": name,
        "Type": "NAT", "Ipams": [{"Type": "Static", "Subnets": [{
            "IpAddressPrefix": "192.168.254.0/24",
            "Routes": [{"NextHop": "192.168.254.1", "DestinationPrefix": "0.0.0.0/0"}]}]}]})
    .to_string();
    let n = h.hns_create_network(&spec).expect("create");
    let checks = || {
        assert_eq!(n.name, name);
        let listed = h.hns_networks().expect("list");
        assert!(listed.iter().any(|l| l.id == n.id), "{listed:?}");
        assert!(matches!(
            h.hns_create_network(&spec),
            Err(HostError::Exists { .. })
        ));
        assert!(h.hns_endpoints(&n.id).expect("endpoints").is_empty());
    };
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(checks));
    h.hns_delete_network(&n.id).expect("delete");
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
    assert!(matches!(
        h.hns_delete_network(&n.id),
        Err(HostError::NotFound { .. })
    ));
    if real {
        let v = h.hns_version().expect("HNS answers its version");
        assert!(v.0 >= 7, "{v:?}");
    }
}
