//! A stand-in for the firewall objects of `hnetcfg.dll` under Wine, whose own
//! `INetFwRules` answers E_NOTIMPL. It serves `HNetCfg.FwPolicy2` (`INetFwPolicy2::Rules`)
//! and `HNetCfg.FWRule` (`INetFwRule`'s name, description, protocol (any number), local ports,
//! direction (in 1, out 2), action, profiles, enabled, remote addresses, application name
//! (the program's path, empty for every program: Microsoft's INetFwRule::ApplicationName
//! page), remote addresses kept as Windows keeps them: an IPv4 subnet in mask notation, a
//! single address bare (`stored_remote_addresses`)) with the semantics of Microsoft's reference for
//! INetFwRules: `Item` of an unknown name fails with HRESULT_FROM_WIN32(ERROR_FILE_NOT_FOUND),
//! and of a name several rules have gives the first (which one, Microsoft's Item page does not
//! say); `Add` does not check names (Windows keeps rules of one name side by side: its Add page
//! overwrites only a rule "with the same rule identifier", which INetFwRule does not set, and
//! PowerShell's New-NetFirewallRule page makes only `-Name`, the ID, unique, not the
//! `-DisplayName` that is INetFwRule's Name); `Remove` of a name several rules have removes
//! every one of them (a guess, the harmful one: Microsoft's Remove page says only that it
//! "removes a rule from the collection"), and of an unknown name succeeds ("has no effect"),
//! a name matched exactly (the page says nothing of case: the conservative reading);
//! LocalAddresses, RemotePorts, InterfaceTypes, EdgeTraversal, Grouping, ServiceName and
//! Interfaces are kept as set, and a new rule's read back as Windows' defaults
//! (`Fields::with_defaults`); a rule object has INetFwRule2 (EdgeTraversalOptions, one value
//! with EdgeTraversal) and INetFwRule3 (its app container properties), `rule3.rs`, unless
//! `rule-interfaces.json` says `1`: then INetFwRule alone (`OldRule`), as Wine's own.
//! `get__NewEnum` enumerates every rule, in the order added, as `IDispatch` VARIANTs (its page:
//! "an object supporting IEnumVARIANT that can be used to iterate through all the rules in the
//! collection"). Rules live in the prefix's `C:\calicoctl-win-firewall\rules.json`.
//! `INetFwPolicy2::LocalPolicyModifyState` answers `NET_FW_MODIFY_STATE_OK` (local rules take
//! effect), or the number in `modify-state.json` beside it (GP_OVERRIDE 1, INBOUND_BLOCKED 2:
//! icftypes.h), a test's way of putting the node under a Group Policy override.
//! `SetLocalPorts`/`SetRemotePorts` are refused unless the protocol is TCP or UDP, and
//! `SetEdgeTraversal(true)` on an outbound rule (`ports_allowed`, `edge_traversal_allowed`).
//! Every other method answers E_NOTIMPL (`generated.rs`).

#![allow(non_snake_case, clippy::missing_safety_doc)]

mod generated;
mod rule3;

use rule3::{interfaces_variant, names_in};

use serde_json::{Value, json};
use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::Mutex;
use windows::Win32::Foundation::{
    CLASS_E_CLASSNOTAVAILABLE, CLASS_E_NOAGGREGATION, E_INVALIDARG, E_NOTIMPL, E_POINTER, S_FALSE,
    S_OK, VARIANT_FALSE, VARIANT_TRUE,
};
use windows::Win32::NetworkManagement::WindowsFirewall::*;
use windows::Win32::System::Com::*;
use windows::Win32::System::Ole::{IEnumVARIANT, IEnumVARIANT_Impl};
use windows::Win32::System::Variant::{VARIANT, VT_DISPATCH};
use windows::core::{BSTR, GUID, HRESULT, IUnknown, Interface, implement};

/// HRESULT_FROM_WIN32(ERROR_FILE_NOT_FOUND): what `INetFwRules::Item` answers for no rule.
const NOT_FOUND: HRESULT = HRESULT(0x8007_0002_u32 as i32);
/// CLSID_NetFwPolicy2 and CLSID_NetFwRule (netfw.h).
const CLSID_POLICY: GUID = GUID::from_u128(0xe2b3c97f_6ae1_41ac_817a_f6f92166d7dd);
const CLSID_RULE: GUID = GUID::from_u128(0x2c5bc43e_3369_4c33_ab0c_be9469677af4);

static FILE_LOCK: Mutex<()> = Mutex::new(());

/// A rule's fields.
#[derive(Clone, Debug, Default)]
pub struct Fields {
    name: String,
    description: String,
    protocol: i32,
    local_ports: String,
    direction: i32,
    action: i32,
    profiles: i32,
    enabled: bool,
    remote_addresses: String,
    application_name: String,
    local_addresses: String,
    remote_ports: String,
    interface_types: String,
    /// `NET_FW_EDGE_TRAVERSAL_TYPE`: INetFwRule's EdgeTraversal and INetFwRule2's
    /// EdgeTraversalOptions are one property (the enumeration's page: `_DENY` and `_ALLOW`
    /// are "the same as setting the EdgeTraversal property" false and true).
    edge_traversal: i32,
    grouping: String,
    service_name: String,
    /// INetFwRule::Interfaces, friendly names; none is every interface.
    interfaces: Vec<String>,
    /// INetFwRule3's properties, none set on a new rule.
    local_app_package_id: String,
    local_user_owner: String,
    local_user_authorized_list: String,
    remote_user_authorized_list: String,
    remote_machine_authorized_list: String,
    secure_flags: i32,
}

impl Fields {
    /// A new rule's: every property unset, the ones with a documented default at it
    /// (`with_defaults`).
    fn new() -> Self {
        Self::default().with_defaults()
    }

    /// The properties Windows reads back from a rule that did not set them, where they are
    /// empty: LocalAddresses `*` (Microsoft's INetFwRule::LocalAddresses page: "\"*\" is the
    /// default value"), RemotePorts `*` (its page says only "optional"; `*` is any port, as
    /// for addresses), InterfaceTypes `All` (its page: "Acceptable values ... are
    /// \"RemoteAccess\", \"Wireless\", \"Lan\", and \"All\""; RemotePorts and InterfaceTypes
    /// give no default, so `*` and `All` are guesses, as `host::Unset` says); EdgeTraversal false ("New rules
    /// have the EdgeTraversal property disabled by default", its page), Grouping and
    /// ServiceName empty ("This property is optional"), as `Default` has them.
    fn with_defaults(mut self) -> Self {
        for (field, default) in [
            (&mut self.local_addresses, "*"),
            (&mut self.remote_ports, "*"),
            (&mut self.interface_types, "All"),
        ] {
            if field.is_empty() {
                *field = default.into();
            }
        }
        self
    }

    fn to_json(&self) -> Value {
        json!({"Name": self.name, "Description": self.description, "Protocol": self.protocol,
            "LocalPorts": self.local_ports, "Direction": self.direction, "Action": self.action,
            "Profiles": self.profiles, "Enabled": self.enabled,
            "RemoteAddresses": self.remote_addresses, "ApplicationName": self.application_name,
            "LocalAddresses": self.local_addresses, "RemotePorts": self.remote_ports,
            "InterfaceTypes": self.interface_types, "EdgeTraversal": self.edge_traversal,
            "Grouping": self.grouping, "ServiceName": self.service_name,
            "Interfaces": self.interfaces, "LocalAppPackageId": self.local_app_package_id,
            "LocalUserOwner": self.local_user_owner,
            "LocalUserAuthorizedList": self.local_user_authorized_list,
            "RemoteUserAuthorizedList": self.remote_user_authorized_list,
            "RemoteMachineAuthorizedList": self.remote_machine_authorized_list,
            "SecureFlags": self.secure_flags})
    }

    fn from_json(v: &Value) -> Self {
        let s = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
        let n = |k: &str| {
            v[k].as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .unwrap_or(0)
        };
        Self {
            name: s("Name"),
            description: s("Description"),
            protocol: n("Protocol"),
            local_ports: s("LocalPorts"),
            direction: n("Direction"),
            action: n("Action"),
            profiles: n("Profiles"),
            enabled: v["Enabled"].as_bool().unwrap_or(false),
            remote_addresses: s("RemoteAddresses"),
            application_name: s("ApplicationName"),
            local_addresses: s("LocalAddresses"),
            remote_ports: s("RemotePorts"),
            interface_types: s("InterfaceTypes"),
            edge_traversal: n("EdgeTraversal"),
            grouping: s("Grouping"),
            service_name: s("ServiceName"),
            interfaces: v["Interfaces"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|n| n.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
            local_app_package_id: s("LocalAppPackageId"),
            local_user_owner: s("LocalUserOwner"),
            local_user_authorized_list: s("LocalUserAuthorizedList"),
            remote_user_authorized_list: s("RemoteUserAuthorizedList"),
            remote_machine_authorized_list: s("RemoteMachineAuthorizedList"),
            secure_flags: n("SecureFlags"),
        }
        .with_defaults()
    }
}

fn file() -> PathBuf {
    PathBuf::from(r"C:\calicoctl-win-firewall\rules.json")
}

fn load() -> Vec<Fields> {
    let text = std::fs::read_to_string(file()).unwrap_or_else(|_| "[]".into());
    serde_json::from_str::<Vec<Value>>(&text)
        .unwrap_or_default()
        .iter()
        .map(Fields::from_json)
        .collect()
}

fn save(rules: &[Fields]) -> windows::core::Result<()> {
    let doc = Value::Array(rules.iter().map(Fields::to_json).collect());
    let path = file();
    let io = |_| windows::core::Error::from(HRESULT(0x8007_001F_u32 as i32));
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    std::fs::write(&path, doc.to_string()).map_err(io)
}

fn add(rule: &INetFwRule) -> windows::core::Result<()> {
    // SAFETY: reading the properties of a live rule object.
    let mut fields = unsafe {
        Fields {
            name: rule.Name()?.to_string(),
            description: rule.Description()?.to_string(),
            protocol: rule.Protocol()?,
            local_ports: rule.LocalPorts()?.to_string(),
            direction: rule.Direction()?.0,
            action: rule.Action()?.0,
            profiles: rule.Profiles()?,
            enabled: rule.Enabled()? != VARIANT_FALSE,
            remote_addresses: rule.RemoteAddresses()?.to_string(),
            application_name: rule.ApplicationName()?.to_string(),
            local_addresses: rule.LocalAddresses()?.to_string(),
            remote_ports: rule.RemotePorts()?.to_string(),
            interface_types: rule.InterfaceTypes()?.to_string(),
            edge_traversal: i32::from(rule.EdgeTraversal()? != VARIANT_FALSE),
            grouping: rule.Grouping()?.to_string(),
            service_name: rule.ServiceName()?.to_string(),
            interfaces: names_in(&rule.Interfaces()?)?,
            ..Fields::default()
        }
        .with_defaults()
    };
    rule3::add_newer(rule, &mut fields)?;
    // Test-only: rules named in `refuse.json` are refused with E_ACCESSDENIED, the HRESULT of
    // a refused access (HRESULT_FROM_WIN32(ERROR_ACCESS_DENIED), winerror.h). Which code a
    // locked-down node's firewall would give is a guess, not read from Microsoft's reference.
    let refused = std::fs::read_to_string(file().with_file_name("refuse.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Vec<String>>(&t).ok())
        .is_some_and(|names| names.iter().any(|n| n.eq_ignore_ascii_case(&fields.name)));
    if refused {
        return Err(windows::core::Error::from(HRESULT(0x8007_0005_u32 as i32)));
    }
    let _g = FILE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let mut rules = load();
    rules.push(fields);
    save(&rules)
}

/// What Windows keeps of `INetFwRule::RemoteAddresses`, and reads back. Microsoft's
/// INetFwRule::put_RemoteAddresses page: "A subnet can be specified using either the subnet
/// mask or network prefix notation. If neither a subnet mask not a network prefix is
/// specified, the subnet mask defaults to 255.255.255.255"; MS-FASP 2.2.x FW_IPV4_SUBNET keeps
/// an IPv4 subnet as an address and a mask (no prefix length). So each IPv4 token is kept as
/// address and mask and read back in mask notation (`10.0.0.0/8` as `10.0.0.0/255.0.0.0`),
/// one of mask 255.255.255.255 (`/32`, or none) as the bare address. Anything else (IPv6, a
/// range, a keyword, `*`, a prefix of 0, whose mask FW_IPV4_SUBNET calls invalid) as written.
pub fn stored_remote_addresses(text: &str) -> String {
    use std::net::Ipv4Addr;
    let token = |t: &str| {
        let (a, suffix) = t.split_once('/').unwrap_or((t, ""));
        let Ok(ip) = a.parse::<Ipv4Addr>() else {
            return t.to_owned();
        };
        let mask = if suffix.is_empty() {
            Some(u32::MAX)
        } else if let Ok(p) = suffix.parse::<u32>() {
            (1..=32).contains(&p).then(|| u32::MAX << (32 - p))
        } else {
            suffix.parse::<Ipv4Addr>().ok().map(u32::from)
        };
        match mask {
            Some(u32::MAX) => ip.to_string(),
            Some(m) if m != 0 => format!("{ip}/{}", Ipv4Addr::from(m)),
            _ => t.to_owned(),
        }
    };
    text.split(',')
        .map(|t| token(t.trim()))
        .collect::<Vec<_>>()
        .join(",")
}

/// `SetLocalPorts` and `SetRemotePorts` refused unless the rule's protocol is TCP (6) or UDP
/// (17): Microsoft's INetFwRule::RemotePorts page, "The Protocol property must be set before
/// the RemotePorts property or an error will be returned", and its LocalPorts page likewise
/// for local ports; a rule of another protocol has no ports. E_INVALIDARG, the error
/// unnamed there.
fn ports_allowed(rule: &Fields) -> windows::core::Result<()> {
    if matches!(rule.protocol, 6 | 17) {
        Ok(())
    } else {
        Err(E_INVALIDARG.into())
    }
}

/// `NET_FW_EDGE_TRAVERSAL_TYPE_ALLOW` (icftypes.h).
const EDGE_ALLOW: i32 = 1;

/// `SetEdgeTraversal(true)` refused on an outbound rule (direction 2): [MS-FASP] 2.2.35
/// (FW_RULE_FLAGS_ROUTEABLE_ADDRS_TRAVERSE, the edge traversal flag, and its _DEFER_APP and
/// _DEFER_USER forms, which INetFwRule2's EdgeTraversalOptions sets): it is valid only on
/// inbound rules. Edge traversal off is always accepted.
fn edge_traversal_allowed(
    rule: &Fields,
    enabled: windows::Win32::Foundation::VARIANT_BOOL,
) -> windows::core::Result<()> {
    if enabled != VARIANT_FALSE && rule.direction == 2 {
        Err(E_INVALIDARG.into())
    } else {
        Ok(())
    }
}

fn remove(name: &str) -> windows::core::Result<()> {
    let _g = FILE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let mut rules = load();
    // By the exact name: Microsoft's Remove page says nothing of case, and of a name not in
    // the collection that removing it "has no effect"; the conservative reading is that a
    // name in another case is not in it.
    rules.retain(|r| r.name != name);
    save(&rules)
}

/// What `LocalPolicyModifyState` answers: OK unless a test wrote another state.
fn local_policy_modify_state() -> NET_FW_MODIFY_STATE {
    std::fs::read_to_string(file().with_file_name("modify-state.json"))
        .ok()
        .and_then(|t| t.trim().parse::<i32>().ok())
        .map_or(NET_FW_MODIFY_STATE_OK, NET_FW_MODIFY_STATE)
}

fn item(name: &str) -> windows::core::Result<INetFwRule> {
    let _g = FILE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    match load()
        .into_iter()
        .find(|r| r.name.eq_ignore_ascii_case(name))
    {
        Some(f) => rule_object(f).cast(),
        None => Err(NOT_FOUND.into()),
    }
}

/// A rule object of today's Windows: INetFwRule3, and INetFwRule2 and INetFwRule with it.
#[implement(INetFwRule3)]
pub struct Rule(Mutex<Fields>);

/// A rule object with INetFwRule alone, as on Windows before 7 (INetFwRule2's and
/// INetFwRule3's pages: Windows 7 / Server 2008 R2 and Windows 8 / Server 2012 on) and as
/// Wine's own hnetcfg.dll makes one (dlls/hnetcfg/policy.c, `netfw_rule_QueryInterface`:
/// INetFwRule, IDispatch and IUnknown, E_NOINTERFACE for the rest).
#[implement(INetFwRule)]
pub struct OldRule(Mutex<Fields>);

/// The rule object: `Rule`, or `OldRule` while `rule-interfaces.json` beside the rules says
/// `1` (a test's way of playing a Windows without INetFwRule2 and INetFwRule3).
fn rule_object(fields: Fields) -> IUnknown {
    let old = std::fs::read_to_string(file().with_file_name("rule-interfaces.json"))
        .is_ok_and(|t| t.trim() == "1");
    if old {
        OldRule(Mutex::new(fields)).into()
    } else {
        Rule(Mutex::new(fields)).into()
    }
}

/// The rules as they were when `get__NewEnum` was asked, and the next one's place.
#[implement(IEnumVARIANT)]
pub struct Enum(Mutex<(Vec<Fields>, usize)>);

fn new_enum() -> windows::core::IUnknown {
    let _g = FILE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    Enum(Mutex::new((load(), 0))).into()
}

impl IEnumVARIANT_Impl for Enum_Impl {
    /// Up to `celt` rules, each a VT_DISPATCH VARIANT the caller clears; S_FALSE when fewer
    /// were left (IEnumVARIANT::Next's contract).
    fn Next(&self, celt: u32, rgvar: *mut VARIANT, fetched: *mut u32) -> HRESULT {
        if rgvar.is_null() {
            return E_POINTER;
        }
        let mut g = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let mut n = 0u32;
        while n < celt && g.1 < g.0.len() {
            let Ok(dispatch) = rule_object(g.0[g.1].clone()).cast::<IDispatch>() else {
                return E_POINTER;
            };
            let mut v = VARIANT::default();
            // SAFETY: a fresh VARIANT given its type and an owned IDispatch, which the
            // caller's VariantClear releases; rgvar has room for celt VARIANTs.
            unsafe {
                let inner = &mut *v.Anonymous.Anonymous;
                inner.vt = VT_DISPATCH;
                inner.Anonymous.pdispVal = std::mem::ManuallyDrop::new(Some(dispatch));
                rgvar.add(n as usize).write(v);
            }
            g.1 += 1;
            n += 1;
        }
        if !fetched.is_null() {
            // SAFETY: checked non-null; the caller's count.
            unsafe { fetched.write(n) };
        }
        if n == celt { S_OK } else { S_FALSE }
    }

    fn Skip(&self, celt: u32) -> HRESULT {
        let mut g = self.0.lock().unwrap_or_else(|p| p.into_inner());
        g.1 = g.1.saturating_add(celt as usize).min(g.0.len());
        S_OK
    }

    fn Reset(&self) -> windows::core::Result<()> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).1 = 0;
        Ok(())
    }

    fn Clone(&self) -> windows::core::Result<IEnumVARIANT> {
        let g = self.0.lock().unwrap_or_else(|p| p.into_inner());
        Ok(Enum(Mutex::new((g.0.clone(), g.1))).into())
    }
}

impl Rule_Impl {
    fn get(&self) -> Fields {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set(&self, f: impl FnOnce(&mut Fields)) -> windows::core::Result<()> {
        f(&mut self.0.lock().unwrap_or_else(|p| p.into_inner()));
        Ok(())
    }
}

impl OldRule_Impl {
    fn get(&self) -> Fields {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set(&self, f: impl FnOnce(&mut Fields)) -> windows::core::Result<()> {
        f(&mut self.0.lock().unwrap_or_else(|p| p.into_inner()));
        Ok(())
    }
}

#[implement(INetFwRules)]
pub struct Rules;

#[implement(INetFwPolicy2)]
pub struct Policy;

#[implement(IClassFactory)]
struct Factory(GUID);

impl IClassFactory_Impl for Factory_Impl {
    fn CreateInstance(
        &self,
        outer: windows::core::Ref<IUnknown>,
        riid: *const GUID,
        ppv: *mut *mut c_void,
    ) -> windows::core::Result<()> {
        if ppv.is_null() || riid.is_null() {
            return Err(E_POINTER.into());
        }
        if outer.is_some() {
            return Err(CLASS_E_NOAGGREGATION.into());
        }
        let unknown: IUnknown = if self.0 == CLSID_POLICY {
            Policy.into()
        } else {
            rule_object(Fields::new())
        };
        // SAFETY: riid and ppv were checked above; query sets *ppv or null.
        unsafe { unknown.query(riid, ppv).ok() }
    }

    fn LockServer(&self, _lock: windows::core::BOOL) -> windows::core::Result<()> {
        Ok(())
    }
}

/// COM's entry: the class factory of the policy or of a rule.
#[unsafe(no_mangle)]
pub unsafe extern "system" fn DllGetClassObject(
    clsid: *const GUID,
    riid: *const GUID,
    ppv: *mut *mut c_void,
) -> HRESULT {
    if clsid.is_null() || riid.is_null() || ppv.is_null() {
        return E_POINTER;
    }
    // SAFETY: checked non-null above.
    let clsid = unsafe { *clsid };
    if clsid != CLSID_POLICY && clsid != CLSID_RULE {
        return CLASS_E_CLASSNOTAVAILABLE;
    }
    let factory: IClassFactory = Factory(clsid).into();
    // SAFETY: riid and ppv are valid; query sets *ppv or null.
    unsafe { factory.query(riid, ppv) }
}

#[unsafe(no_mangle)]
pub extern "system" fn DllCanUnloadNow() -> HRESULT {
    S_FALSE
}

// Used by the generated E_NOTIMPL answers and the rule getters.
const _: (HRESULT, windows::Win32::Foundation::VARIANT_BOOL) = (E_NOTIMPL, VARIANT_TRUE);
