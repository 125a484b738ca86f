//! A stand-in for the IP helper functions calicoctl-win calls (`host/windows/network.rs`),
//! under Wine: Wine 8's iphlpapi lacks `InitializeIpForwardEntry` and `CreateIpForwardEntry2`,
//! and its tables are the Linux machine's, which a test must not change. The adapters and
//! routes live in the prefix (`../netstate.rs`), where the `computenetwork.dll` stand-in
//! changes them as creating the vSwitch does.
//!
//! Semantics follow Microsoft's netioapi reference:
//! - `GetAdaptersAddresses`: `ERROR_BUFFER_OVERFLOW` with the size needed when the buffer is
//!   too small (or null); only IPv4 (`AF_INET`, or `AF_UNSPEC` answered with IPv4) is kept here;
//!   `AF_INET` lists only the adapters with IPv4 enabled ("Return only IPv4 addresses
//!   associated with adapters with IPv4 enabled"), which carry `IP_ADAPTER_IPV4_ENABLED`: an
//!   adapter with IPv4 unbound (`"ipv4": false`, the one a vSwitch binds) is listed only for
//!   `AF_UNSPEC` with `GAA_FLAG_INCLUDE_ALL_INTERFACES` ("Return addresses for all NDIS
//!   interfaces");
//! - `GetIfTable2`: every interface, IPv4 bound or not (`MIB_IF_ROW2`: `Alias`, `Description`,
//!   the MAC, `Type`, `InterfaceGuid` the GUID `GetAdaptersAddresses` names, no filter
//!   module's interface), a table the caller frees with `FreeMibTable`;
//!   DNS servers unless `GAA_FLAG_SKIP_DNS_SERVER`, gateways only with
//!   `GAA_FLAG_INCLUDE_GATEWAYS`; an address is `IpDadStatePreferred` unless the state marks it
//!   `"preferred": false`; an adapter without an address (one bound to a vSwitch) lists none;
//! - `GetIpForwardTable2`: a table the caller frees with `FreeMibTable`; the tables handed
//!   out and not freed are counted (`IphlpStandinStats`), so a test fails on a leak;
//! - `InitializeIpForwardEntry`: lifetimes infinite; Loopback, AutoconfigureAddress, Publish
//!   and Immortal TRUE; SitePrefixLength, Metric and Protocol "illegal values" (which values
//!   is not documented: 255 and `u32::MAX` here, a guess); everything else zero;
//! - `CreateIpForwardEntry2`: `ERROR_NOT_FOUND` when no interface has the index,
//!   `ERROR_INVALID_PARAMETER` for a prefix over 32 bits, a non-IPv4 family or a metric or
//!   protocol left illegal, `ERROR_OBJECT_ALREADY_EXISTS` for a route already there (same
//!   destination, prefix, next hop and interface);
//! - `DeleteIpForwardEntry2`: `ERROR_NOT_FOUND` for a route that is not there;
//! - `GetIpInterfaceEntry` / `SetIpInterfaceEntry`: the row of an IPv4 interface by index
//!   (`ERROR_NOT_FOUND` for none); the metric kept in the state; a set row whose
//!   `SitePrefixLength` is not 0 is `ERROR_INVALID_PARAMETER` ("for IPv4 ... must be set to
//!   0"), so the row read back (which reports 32 here) must be changed before it is set;
//! - `InitializeUnicastIpAddressEntry`: lifetimes infinite, `OnLinkPrefixLength` an illegal
//!   value (255 here, which `CreateUnicastIpAddressEntry` refuses), the rest zero;
//! - `CreateUnicastIpAddressEntry`: `ERROR_NOT_FOUND` for an unknown index,
//!   `ERROR_OBJECT_ALREADY_EXISTS` for the address it has; an adapter holds one address in
//!   this stand-in, so a second, different one is `ERROR_NOT_SUPPORTED`.

#![allow(clippy::missing_safety_doc, non_snake_case)]

#[allow(dead_code)] // The vSwitch half is the computenetwork stand-in's.
#[path = "../../netstate.rs"]
mod netstate;

use serde_json::Value;
use std::collections::HashMap;
use std::ffi::c_void;
use std::net::Ipv4Addr;
use std::sync::Mutex;
use windows_sys::Win32::Foundation::{
    ERROR_ACCESS_DENIED, ERROR_BUFFER_OVERFLOW, ERROR_INVALID_PARAMETER, ERROR_NOT_FOUND,
    ERROR_NOT_SUPPORTED, ERROR_OBJECT_ALREADY_EXISTS,
};
use windows_sys::Win32::NetworkManagement::IpHelper::{
    GAA_FLAG_INCLUDE_ALL_INTERFACES, GAA_FLAG_INCLUDE_GATEWAYS, GAA_FLAG_SKIP_DNS_SERVER,
    IP_ADAPTER_ADDRESSES_LH, IP_ADAPTER_DHCP_ENABLED, IP_ADAPTER_DNS_SERVER_ADDRESS_XP,
    IP_ADAPTER_GATEWAY_ADDRESS_LH, IP_ADAPTER_IPV4_ENABLED, IP_ADAPTER_UNICAST_ADDRESS_LH,
    MIB_IF_ROW2, MIB_IF_TABLE2, MIB_IPFORWARD_ROW2, MIB_IPFORWARD_TABLE2, MIB_IPINTERFACE_ROW,
    MIB_UNICASTIPADDRESS_ROW,
};
use windows_sys::Win32::Networking::WinSock::{
    AF_INET, AF_UNSPEC, IN_ADDR, IN_ADDR_0, IpDadStatePreferred, IpDadStateTentative,
    MIB_IPPROTO_NETMGMT, SOCKADDR_IN, SOCKADDR_INET,
};

const ILLEGAL_SITE_PREFIX: u8 = 255;
const ILLEGAL_METRIC: u32 = u32::MAX;
const ILLEGAL_PROTOCOL: i32 = 0;
const IF_TYPE_ETHERNET_CSMACD: u32 = 6;
const IF_TYPE_SOFTWARE_LOOPBACK: u32 = 24;
const IF_OPER_STATUS_UP: i32 = 1;

/// Tables handed out by `GetIpForwardTable2` and not yet freed: address → the allocation.
static TABLES: Mutex<Option<HashMap<usize, Vec<u64>>>> = Mutex::new(None);

fn ip(v: &Value) -> Ipv4Addr {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(Ipv4Addr::UNSPECIFIED)
}

fn in_addr(ip: Ipv4Addr) -> IN_ADDR {
    IN_ADDR {
        S_un: IN_ADDR_0 {
            S_addr: u32::from_ne_bytes(ip.octets()),
        },
    }
}

fn sockaddr_in(ip: Ipv4Addr) -> SOCKADDR_IN {
    SOCKADDR_IN {
        sin_family: AF_INET,
        sin_port: 0,
        sin_addr: in_addr(ip),
        sin_zero: [0; 8],
    }
}

fn from_sockaddr(a: &SOCKADDR_INET) -> Option<Ipv4Addr> {
    // SAFETY: every variant starts with the family.
    if unsafe { a.si_family } != AF_INET {
        return None;
    }
    // SAFETY: an AF_INET address is a SOCKADDR_IN.
    Some(Ipv4Addr::from(
        unsafe { a.Ipv4.sin_addr.S_un.S_addr }.to_ne_bytes(),
    ))
}

fn adapters() -> Vec<Value> {
    netstate::load()["adapters"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Whether IPv4 is bound to the adapter: all but the one a vSwitch binds (`netstate.rs`).
fn ipv4_enabled(a: &Value) -> bool {
    a["ipv4"].as_bool() != Some(false)
}

/// The GUID the stand-in gives the adapter of `index`: `AdapterName` in
/// `GetAdaptersAddresses`, `InterfaceGuid` in `GetIfTable2`.
fn guid_text(index: u32) -> String {
    format!("{{00000000-0000-0000-0000-{index:012}}}")
}

fn routes() -> Vec<Value> {
    netstate::load()["routes"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// One adapter's block in the caller's buffer: the adapter, its one unicast address, up to
/// two DNS servers and one gateway with their socket addresses, and its strings.
#[repr(C)]
struct Block {
    adapter: IP_ADAPTER_ADDRESSES_LH,
    unicast: IP_ADAPTER_UNICAST_ADDRESS_LH,
    sockaddr: SOCKADDR_IN,
    dns: [IP_ADAPTER_DNS_SERVER_ADDRESS_XP; 2],
    dns_sa: [SOCKADDR_IN; 2],
    gateway: IP_ADAPTER_GATEWAY_ADDRESS_LH,
    gateway_sa: SOCKADDR_IN,
    friendly: [u16; 64],
    description: [u16; 64],
    suffix: [u16; 64],
    name: [u8; 40],
}

fn wide(to: &mut [u16; 64], text: &str) {
    for (d, s) in to.iter_mut().zip(text.encode_utf16().take(63)) {
        *d = s;
    }
}

/// The adapter's DNS servers and gateway in its block, as the flags ask.
///
/// # Safety
/// `b` is a block inside the caller's buffer.
unsafe fn fill_lists(b: &mut Block, a: &Value, flags: u32) {
    if flags & GAA_FLAG_SKIP_DNS_SERVER == 0 {
        let servers: Vec<Ipv4Addr> = a["dns"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|d| d.as_str()?.parse().ok())
            .take(2)
            .collect();
        for (i, ip) in servers.iter().enumerate() {
            b.dns_sa[i] = sockaddr_in(*ip);
            b.dns[i].Anonymous.Anonymous.Length =
                std::mem::size_of::<IP_ADAPTER_DNS_SERVER_ADDRESS_XP>() as u32;
            b.dns[i].Address.lpSockaddr = (&mut b.dns_sa[i] as *mut SOCKADDR_IN).cast();
            b.dns[i].Address.iSockaddrLength = std::mem::size_of::<SOCKADDR_IN>() as i32;
        }
        if servers.len() == 2 {
            b.dns[0].Next = &mut b.dns[1];
        }
        if !servers.is_empty() {
            b.adapter.FirstDnsServerAddress = &mut b.dns[0];
        }
    }
    if flags & GAA_FLAG_INCLUDE_GATEWAYS != 0
        && let Some(gw) = a["gateway"]
            .as_str()
            .and_then(|g| g.parse::<Ipv4Addr>().ok())
    {
        b.gateway_sa = sockaddr_in(gw);
        b.gateway.Anonymous.Anonymous.Length =
            std::mem::size_of::<IP_ADAPTER_GATEWAY_ADDRESS_LH>() as u32;
        b.gateway.Address.lpSockaddr = (&mut b.gateway_sa as *mut SOCKADDR_IN).cast();
        b.gateway.Address.iSockaddrLength = std::mem::size_of::<SOCKADDR_IN>() as i32;
        b.adapter.FirstGatewayAddress = &mut b.gateway;
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "system" fn GetAdaptersAddresses(
    family: u32,
    flags: u32,
    _reserved: *const c_void,
    out: *mut IP_ADAPTER_ADDRESSES_LH,
    size: *mut u32,
) -> u32 {
    if size.is_null() {
        return ERROR_INVALID_PARAMETER;
    }
    if family != u32::from(AF_INET) && family != u32::from(AF_UNSPEC) {
        return ERROR_NOT_SUPPORTED;
    }
    let all_interfaces =
        family == u32::from(AF_UNSPEC) && flags & GAA_FLAG_INCLUDE_ALL_INTERFACES != 0;
    let list: Vec<Value> = adapters()
        .into_iter()
        .filter(|a| ipv4_enabled(a) || all_interfaces)
        .collect();
    let need = (list.len() * std::mem::size_of::<Block>()) as u32;
    // SAFETY: size is a valid pointer (checked above).
    if out.is_null() || unsafe { *size } < need {
        unsafe { *size = need };
        return ERROR_BUFFER_OVERFLOW;
    }
    if !(out as usize).is_multiple_of(std::mem::align_of::<Block>()) {
        return ERROR_INVALID_PARAMETER;
    }
    let blocks = out.cast::<Block>();
    for (i, a) in list.iter().enumerate() {
        // SAFETY: the buffer holds list.len() blocks (checked above) and is aligned.
        let b = unsafe { &mut *blocks.add(i) };
        // SAFETY: every field is plain data or a pointer, for which zero is valid.
        *b = unsafe { std::mem::zeroed() };
        wide(&mut b.friendly, a["name"].as_str().unwrap_or_default());
        wide(
            &mut b.description,
            a["description"]
                .as_str()
                .or(a["name"].as_str())
                .unwrap_or_default(),
        );
        wide(&mut b.suffix, a["suffix"].as_str().unwrap_or_default());
        let index = a["index"].as_u64().unwrap_or(0) as u32;
        let guid = guid_text(index);
        b.name[..guid.len()].copy_from_slice(guid.as_bytes());
        let ad = &mut b.adapter;
        ad.Anonymous1.Anonymous.Length = std::mem::size_of::<IP_ADAPTER_ADDRESSES_LH>() as u32;
        ad.Anonymous1.Anonymous.IfIndex = index;
        ad.AdapterName = b.name.as_mut_ptr();
        ad.FriendlyName = b.friendly.as_mut_ptr();
        ad.Description = b.description.as_mut_ptr();
        ad.DnsSuffix = b.suffix.as_mut_ptr();
        let mac: Vec<u8> = a["mac"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|x| x.as_u64().map(|v| v as u8))
            .take(8)
            .collect();
        ad.PhysicalAddress[..mac.len()].copy_from_slice(&mac);
        ad.PhysicalAddressLength = mac.len() as u32;
        if a["dhcp"].as_bool() == Some(true) {
            ad.Anonymous2.Flags = IP_ADAPTER_DHCP_ENABLED;
        }
        if ipv4_enabled(a) {
            // SAFETY: Flags is the variant of this union the API fills.
            unsafe { ad.Anonymous2.Flags |= IP_ADAPTER_IPV4_ENABLED };
        }
        ad.Mtu = 1500;
        ad.IfType = if index == 1 {
            IF_TYPE_SOFTWARE_LOOPBACK
        } else {
            IF_TYPE_ETHERNET_CSMACD
        };
        ad.OperStatus = IF_OPER_STATUS_UP;
        ad.Ipv4Metric = a["metric"].as_u64().unwrap_or(25) as u32;
        if let Some(addr) = a["ip"].as_str().and_then(|s| s.parse::<Ipv4Addr>().ok()) {
            b.sockaddr = sockaddr_in(addr);
            b.unicast.Anonymous.Anonymous.Length =
                std::mem::size_of::<IP_ADAPTER_UNICAST_ADDRESS_LH>() as u32;
            b.unicast.Address.lpSockaddr = (&mut b.sockaddr as *mut SOCKADDR_IN).cast();
            b.unicast.Address.iSockaddrLength = std::mem::size_of::<SOCKADDR_IN>() as i32;
            b.unicast.OnLinkPrefixLength = a["prefix_len"].as_u64().unwrap_or(0) as u8;
            b.unicast.ValidLifetime = u32::MAX;
            b.unicast.PreferredLifetime = u32::MAX;
            b.unicast.LeaseLifetime = u32::MAX;
            b.unicast.DadState = if a["preferred"].as_bool() == Some(false) {
                IpDadStateTentative
            } else {
                IpDadStatePreferred
            };
            b.adapter.FirstUnicastAddress = &mut b.unicast;
        }
        // SAFETY: b is this adapter's block in the caller's buffer.
        unsafe { fill_lists(b, a, flags) };
        b.adapter.Next = if i + 1 < list.len() {
            // SAFETY: the next block is inside the buffer.
            unsafe { &mut (*blocks.add(i + 1)).adapter }
        } else {
            std::ptr::null_mut()
        };
    }
    0
}

fn row(r: &Value) -> MIB_IPFORWARD_ROW2 {
    // SAFETY: MIB_IPFORWARD_ROW2 is plain data.
    let mut row: MIB_IPFORWARD_ROW2 = unsafe { std::mem::zeroed() };
    row.InterfaceIndex = r["interface_index"].as_u64().unwrap_or(0) as u32;
    row.DestinationPrefix.Prefix.Ipv4 = sockaddr_in(ip(&r["destination"]));
    row.DestinationPrefix.PrefixLength = r["prefix_len"].as_u64().unwrap_or(0) as u8;
    row.NextHop.Ipv4 = sockaddr_in(ip(&r["next_hop"]));
    row.Metric = r["metric"].as_u64().unwrap_or(0) as u32;
    row.Protocol = MIB_IPPROTO_NETMGMT;
    row.ValidLifetime = u32::MAX;
    row.PreferredLifetime = u32::MAX;
    row.Immortal = true;
    row
}

#[unsafe(no_mangle)]
pub unsafe extern "system" fn GetIpForwardTable2(
    family: u16,
    table: *mut *mut MIB_IPFORWARD_TABLE2,
) -> u32 {
    if table.is_null() {
        return ERROR_INVALID_PARAMETER;
    }
    if family != AF_INET && family != AF_UNSPEC {
        return ERROR_NOT_SUPPORTED;
    }
    let rows: Vec<MIB_IPFORWARD_ROW2> = routes().iter().map(row).collect();
    let header = std::mem::offset_of!(MIB_IPFORWARD_TABLE2, Table);
    let bytes = header + rows.len().max(1) * std::mem::size_of::<MIB_IPFORWARD_ROW2>();
    let mut buf = vec![0u64; bytes.div_ceil(8)];
    let t = buf.as_mut_ptr().cast::<MIB_IPFORWARD_TABLE2>();
    // SAFETY: buf holds the header and every row, 8-aligned.
    unsafe {
        (*t).NumEntries = rows.len() as u32;
        let first = std::ptr::addr_of_mut!((*t).Table).cast::<MIB_IPFORWARD_ROW2>();
        std::ptr::copy_nonoverlapping(rows.as_ptr(), first, rows.len());
        *table = t;
    }
    if let Ok(mut live) = TABLES.lock() {
        live.get_or_insert_with(HashMap::new)
            .insert(t as usize, buf);
    }
    0
}

/// One adapter as an interface row: what `MIB_IF_ROW2` says of it (Microsoft's netioapi
/// reference), IPv4 bound or not; `HardwareInterface` for all but the loopback, never a
/// filter module's interface.
fn if_row(a: &Value) -> MIB_IF_ROW2 {
    // SAFETY: MIB_IF_ROW2 is plain data.
    let mut row: MIB_IF_ROW2 = unsafe { std::mem::zeroed() };
    let index = a["index"].as_u64().unwrap_or(0) as u32;
    row.InterfaceIndex = index;
    let tail = &guid_text(index)[25..37];
    row.InterfaceGuid.data4 = [0; 8];
    for (i, d) in row.InterfaceGuid.data4[2..].iter_mut().enumerate() {
        *d = u8::from_str_radix(&tail[2 * i..2 * i + 2], 16).unwrap_or(0);
    }
    for (d, c) in row.Alias.iter_mut().zip(
        a["name"]
            .as_str()
            .unwrap_or_default()
            .encode_utf16()
            .take(256),
    ) {
        *d = c;
    }
    let description = a["description"]
        .as_str()
        .or(a["name"].as_str())
        .unwrap_or_default();
    for (d, c) in row
        .Description
        .iter_mut()
        .zip(description.encode_utf16().take(256))
    {
        *d = c;
    }
    let mac: Vec<u8> = a["mac"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|x| x.as_u64().map(|v| v as u8))
        .take(8)
        .collect();
    row.PhysicalAddress[..mac.len()].copy_from_slice(&mac);
    row.PermanentPhysicalAddress[..mac.len()].copy_from_slice(&mac);
    row.PhysicalAddressLength = mac.len() as u32;
    row.Mtu = 1500;
    row.Type = if index == 1 {
        IF_TYPE_SOFTWARE_LOOPBACK
    } else {
        IF_TYPE_ETHERNET_CSMACD
    };
    // HardwareInterface (the first bit) for a NIC; FilterInterface (the second) never.
    row.InterfaceAndOperStatusFlags._bitfield = u8::from(index != 1);
    row.OperStatus = IF_OPER_STATUS_UP;
    row
}

/// The interface table: every adapter in the state, those with IPv4 unbound too. Wine's own
/// processes ask for it as well once the stand-in is loaded in their place.
#[unsafe(no_mangle)]
pub unsafe extern "system" fn GetIfTable2(table: *mut *mut MIB_IF_TABLE2) -> u32 {
    if table.is_null() {
        return ERROR_INVALID_PARAMETER;
    }
    let rows: Vec<MIB_IF_ROW2> = adapters().iter().map(if_row).collect();
    let header = std::mem::offset_of!(MIB_IF_TABLE2, Table);
    let bytes = header + rows.len().max(1) * std::mem::size_of::<MIB_IF_ROW2>();
    let mut buf = vec![0u64; bytes.div_ceil(8)];
    let t = buf.as_mut_ptr().cast::<MIB_IF_TABLE2>();
    // SAFETY: buf holds the header and every row, 8-aligned.
    unsafe {
        (*t).NumEntries = rows.len() as u32;
        let first = std::ptr::addr_of_mut!((*t).Table).cast::<MIB_IF_ROW2>();
        std::ptr::copy_nonoverlapping(rows.as_ptr(), first, rows.len());
        *table = t;
    }
    if let Ok(mut live) = TABLES.lock() {
        live.get_or_insert_with(HashMap::new)
            .insert(t as usize, buf);
    }
    0
}

#[unsafe(no_mangle)]
pub unsafe extern "system" fn FreeMibTable(memory: *const c_void) {
    if let Ok(mut live) = TABLES.lock()
        && let Some(map) = live.as_mut()
    {
        map.remove(&(memory as usize));
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "system" fn InitializeIpForwardEntry(r: *mut MIB_IPFORWARD_ROW2) {
    if r.is_null() {
        return;
    }
    // SAFETY: the caller passes a writable row; all-zero is a valid row.
    unsafe {
        *r = std::mem::zeroed();
        let r = &mut *r;
        r.ValidLifetime = u32::MAX;
        r.PreferredLifetime = u32::MAX;
        r.Loopback = true;
        r.AutoconfigureAddress = true;
        r.Publish = true;
        r.Immortal = true;
        r.SitePrefixLength = ILLEGAL_SITE_PREFIX;
        r.Metric = ILLEGAL_METRIC;
        r.Protocol = ILLEGAL_PROTOCOL;
    }
}

/// The route a row names, checked as CreateIpForwardEntry2 checks it.
fn requested(r: &MIB_IPFORWARD_ROW2) -> Result<Value, u32> {
    let dest = from_sockaddr(&r.DestinationPrefix.Prefix).ok_or(ERROR_INVALID_PARAMETER)?;
    let hop = from_sockaddr(&r.NextHop).unwrap_or(Ipv4Addr::UNSPECIFIED);
    if r.DestinationPrefix.PrefixLength > 32 {
        return Err(ERROR_INVALID_PARAMETER);
    }
    if !adapters()
        .iter()
        .any(|a| a["index"].as_u64() == Some(u64::from(r.InterfaceIndex)))
    {
        return Err(ERROR_NOT_FOUND);
    }
    Ok(netstate::route(
        dest,
        r.DestinationPrefix.PrefixLength,
        hop,
        r.InterfaceIndex,
        r.Metric,
    ))
}

fn same(a: &Value, b: &Value) -> bool {
    ["destination", "prefix_len", "next_hop", "interface_index"]
        .iter()
        .all(|k| a[k] == b[k])
}

#[unsafe(no_mangle)]
pub unsafe extern "system" fn CreateIpForwardEntry2(r: *const MIB_IPFORWARD_ROW2) -> u32 {
    if r.is_null() {
        return ERROR_INVALID_PARAMETER;
    }
    // SAFETY: the caller passes a readable row.
    let r = unsafe { &*r };
    if r.Metric == ILLEGAL_METRIC || r.Protocol == ILLEGAL_PROTOCOL {
        return ERROR_INVALID_PARAMETER;
    }
    let new = match requested(r) {
        Ok(v) => v,
        Err(e) => return e,
    };
    if from_sockaddr(&r.DestinationPrefix.Prefix)
        .is_some_and(|d| netstate::refused_route(d, r.DestinationPrefix.PrefixLength))
    {
        return ERROR_ACCESS_DENIED;
    }
    let mut state = netstate::load();
    let mut all: Vec<Value> = state["routes"].as_array().cloned().unwrap_or_default();
    if all.iter().any(|x| same(x, &new)) {
        return ERROR_OBJECT_ALREADY_EXISTS;
    }
    all.push(new);
    state["routes"] = Value::Array(all);
    match netstate::store(&state) {
        Ok(()) => 0,
        Err(e) => e
            .raw_os_error()
            .map_or(ERROR_INVALID_PARAMETER, |c| c as u32),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "system" fn DeleteIpForwardEntry2(r: *const MIB_IPFORWARD_ROW2) -> u32 {
    if r.is_null() {
        return ERROR_INVALID_PARAMETER;
    }
    // SAFETY: the caller passes a readable row.
    let gone = match requested(unsafe { &*r }) {
        Ok(v) => v,
        Err(e) => return e,
    };
    let mut state = netstate::load();
    let mut all: Vec<Value> = state["routes"].as_array().cloned().unwrap_or_default();
    let before = all.len();
    all.retain(|x| !same(x, &gone));
    if all.len() == before {
        return ERROR_NOT_FOUND;
    }
    state["routes"] = Value::Array(all);
    match netstate::store(&state) {
        Ok(()) => 0,
        Err(e) => e
            .raw_os_error()
            .map_or(ERROR_INVALID_PARAMETER, |c| c as u32),
    }
}

fn with_adapter(index: u32, f: impl FnOnce(&mut Value) -> u32) -> u32 {
    let mut state = netstate::load();
    let mut adapters: Vec<Value> = state["adapters"].as_array().cloned().unwrap_or_default();
    let Some(a) = adapters
        .iter_mut()
        .find(|a| a["index"].as_u64() == Some(u64::from(index)))
    else {
        return ERROR_NOT_FOUND;
    };
    let rc = f(a);
    if rc != 0 {
        return rc;
    }
    state["adapters"] = Value::Array(adapters);
    match netstate::store(&state) {
        Ok(()) => 0,
        Err(e) => e
            .raw_os_error()
            .map_or(ERROR_INVALID_PARAMETER, |c| c as u32),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "system" fn GetIpInterfaceEntry(row: *mut MIB_IPINTERFACE_ROW) -> u32 {
    if row.is_null() {
        return ERROR_INVALID_PARAMETER;
    }
    // SAFETY: the caller passes a writable row.
    let r = unsafe { &mut *row };
    if r.Family != AF_INET {
        return ERROR_NOT_SUPPORTED;
    }
    let Some(a) = adapters()
        .into_iter()
        .find(|a| a["index"].as_u64() == Some(u64::from(r.InterfaceIndex)))
    else {
        return ERROR_NOT_FOUND;
    };
    r.Metric = a["metric"].as_u64().unwrap_or(25) as u32;
    r.UseAutomaticMetric = a["automatic_metric"].as_bool() != Some(false);
    r.SitePrefixLength = 32;
    r.NlMtu = 1500;
    r.Connected = true;
    0
}

#[unsafe(no_mangle)]
pub unsafe extern "system" fn SetIpInterfaceEntry(row: *mut MIB_IPINTERFACE_ROW) -> u32 {
    if row.is_null() {
        return ERROR_INVALID_PARAMETER;
    }
    // SAFETY: the caller passes a readable row.
    let r = unsafe { &*row };
    if r.Family != AF_INET || r.SitePrefixLength != 0 {
        return ERROR_INVALID_PARAMETER;
    }
    let (metric, automatic) = (r.Metric, r.UseAutomaticMetric);
    with_adapter(r.InterfaceIndex, |a| {
        a["metric"] = metric.into();
        a["automatic_metric"] = automatic.into();
        0
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "system" fn InitializeUnicastIpAddressEntry(row: *mut MIB_UNICASTIPADDRESS_ROW) {
    if row.is_null() {
        return;
    }
    // SAFETY: the caller passes a writable row; all-zero is a valid row.
    unsafe {
        *row = std::mem::zeroed();
        (*row).ValidLifetime = u32::MAX;
        (*row).PreferredLifetime = u32::MAX;
        (*row).OnLinkPrefixLength = ILLEGAL_SITE_PREFIX;
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "system" fn CreateUnicastIpAddressEntry(
    row: *const MIB_UNICASTIPADDRESS_ROW,
) -> u32 {
    if row.is_null() {
        return ERROR_INVALID_PARAMETER;
    }
    // SAFETY: the caller passes a readable row.
    let r = unsafe { &*row };
    let Some(ip) = from_sockaddr(&r.Address) else {
        return ERROR_INVALID_PARAMETER;
    };
    if r.OnLinkPrefixLength > 32 {
        return ERROR_INVALID_PARAMETER;
    }
    let prefix = r.OnLinkPrefixLength;
    with_adapter(r.InterfaceIndex, |a| match a["ip"].as_str() {
        Some(have) if have == ip.to_string() => ERROR_OBJECT_ALREADY_EXISTS,
        Some(_) => ERROR_NOT_SUPPORTED,
        None => {
            a["ip"] = ip.to_string().into();
            a["prefix_len"] = prefix.into();
            0
        }
    })
}

/// Test-only: the routing tables handed out and not freed.
#[unsafe(no_mangle)]
pub extern "system" fn IphlpStandinStats() -> i64 {
    TABLES
        .lock()
        .map(|l| l.as_ref().map_or(0, |m| m.len() as i64))
        .unwrap_or(-1)
}
