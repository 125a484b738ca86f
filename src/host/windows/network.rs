//! IPv4 addresses and routes through the IP helper API.

use super::ffi::{export, system_dll, take_wide, wide_until_nul, zeroed};
use crate::host::{Adapter, AdapterAddress, HostError, HostResult, InterfaceAddress, Route};
use libloading::os::windows::{Library, Symbol};
use std::net::Ipv4Addr;
use windows_sys::Win32::Foundation::{
    ERROR_BUFFER_OVERFLOW, ERROR_NOT_FOUND, ERROR_OBJECT_ALREADY_EXISTS,
};
use windows_sys::Win32::NetworkManagement::IpHelper::{
    FreeMibTable, GAA_FLAG_INCLUDE_GATEWAYS, GAA_FLAG_SKIP_ANYCAST, GAA_FLAG_SKIP_MULTICAST,
    GetAdaptersAddresses, GetIfTable2, GetIpForwardTable2, IF_TYPE_ETHERNET_CSMACD,
    IP_ADAPTER_ADDRESSES_LH, IP_ADAPTER_DHCP_ENABLED, MIB_IF_TABLE2, MIB_IPFORWARD_ROW2,
    MIB_IPFORWARD_TABLE2, MIB_IPINTERFACE_ROW, MIB_UNICASTIPADDRESS_ROW,
};
use windows_sys::Win32::Networking::WinSock::{
    AF_INET, IN_ADDR, IN_ADDR_0, IpDadStatePreferred, IpPrefixOriginManual, IpSuffixOriginManual,
    MIB_IPPROTO_NETMGMT, SOCKADDR, SOCKADDR_IN, SOCKADDR_INET,
};

fn win32(op: &str, code: u32) -> HostError {
    HostError::io(op, std::io::Error::from_raw_os_error(code as i32))
}

fn ipv4(a: &IN_ADDR) -> Ipv4Addr {
    // SAFETY: every variant of IN_ADDR's union is the same four bytes.
    Ipv4Addr::from(unsafe { a.S_un.S_addr }.to_ne_bytes())
}

fn sockaddr(ip: Ipv4Addr) -> SOCKADDR_INET {
    SOCKADDR_INET {
        Ipv4: SOCKADDR_IN {
            sin_family: AF_INET,
            sin_port: 0,
            sin_addr: IN_ADDR {
                S_un: IN_ADDR_0 {
                    S_addr: u32::from_ne_bytes(ip.octets()),
                },
            },
            sin_zero: [0; 8],
        },
    }
}

/// The IPv4 address `sa` holds, if it is one.
///
/// # Safety
/// `sa` is null or points to a SOCKADDR of its family that is alive.
unsafe fn ipv4_at(sa: *const SOCKADDR) -> Option<Ipv4Addr> {
    let sa = sa as *const SOCKADDR_IN;
    // SAFETY: as the caller promises; read as SOCKADDR_IN only once its family says AF_INET.
    (!sa.is_null() && unsafe { (*sa).sin_family } == AF_INET)
        .then(|| ipv4(unsafe { &(*sa).sin_addr }))
}

/// Every adapter's IPv4 addresses.
pub fn addresses() -> HostResult<Vec<InterfaceAddress>> {
    Ok(adapters()?
        .into_iter()
        .flat_map(|a| {
            a.addresses.into_iter().map(move |x| InterfaceAddress {
                interface: a.name.clone(),
                index: a.index,
                ip: x.ip,
                prefix_len: x.prefix_len,
            })
        })
        .collect())
}

/// The IPv4 addresses of a list of socket addresses (`FirstDnsServerAddress`,
/// `FirstGatewayAddress`: each node's `Address` and `Next`).
///
/// # Safety
/// `first` is null or the head of a list GetAdaptersAddresses filled, still alive.
unsafe fn ipv4_list<T>(
    first: *const T,
    addr: impl Fn(&T) -> (*const SOCKADDR, *const T),
) -> Vec<Ipv4Addr> {
    let mut out = Vec::new();
    let mut at = first;
    while !at.is_null() {
        // SAFETY: the caller's list, alive; each node points to a SOCKADDR of its family.
        let (sa, next) = addr(unsafe { &*at });
        // SAFETY: as above.
        out.extend(unsafe { ipv4_at(sa) });
        at = next;
    }
    out
}

/// A NUL-terminated ANSI string, or empty for null.
///
/// # Safety
/// `p` is null or points to a NUL-terminated string that is alive.
unsafe fn ansi(p: *const u8) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: as the caller promises.
    unsafe { std::ffi::CStr::from_ptr(p.cast()) }
        .to_string_lossy()
        .into_owned()
}

/// Every adapter with IPv4 enabled, with its IPv4 configuration (`GetAdaptersAddresses`,
/// `AF_INET`): not a vSwitch's physical adapter.
pub fn adapters() -> HostResult<Vec<Adapter>> {
    let flags = GAA_FLAG_SKIP_ANYCAST | GAA_FLAG_SKIP_MULTICAST | GAA_FLAG_INCLUDE_GATEWAYS;
    let buf = crate::host::with_growing_buffer(16 * 1024, 4, ERROR_BUFFER_OVERFLOW, |buf, size| {
        // SAFETY: buf holds at least `size` bytes, 8-aligned as IP_ADAPTER_ADDRESSES requires.
        unsafe {
            GetAdaptersAddresses(
                u32::from(AF_INET),
                flags,
                std::ptr::null(),
                buf.as_mut_ptr().cast(),
                size,
            )
        }
    })
    .map_err(|code| win32("list network adapters", code))?;
    let mut out = Vec::new();
    let mut adapter = buf.as_ptr() as *const IP_ADAPTER_ADDRESSES_LH;
    while !adapter.is_null() {
        // SAFETY: the list was filled by GetAdaptersAddresses inside buf, which is alive.
        let a = unsafe { &*adapter };
        // SAFETY: the Length/IfIndex variant is the one GetAdaptersAddresses fills.
        let index = unsafe { a.Anonymous1.Anonymous.IfIndex };
        let mut addresses = Vec::new();
        let mut unicast = a.FirstUnicastAddress;
        while !unicast.is_null() {
            // SAFETY: as above; each address points to a SOCKADDR of the adapter's family.
            let u = unsafe { &*unicast };
            // SAFETY: as above.
            if let Some(ip) = unsafe { ipv4_at(u.Address.lpSockaddr) } {
                addresses.push(AdapterAddress {
                    ip,
                    prefix_len: u.OnLinkPrefixLength,
                    preferred: u.DadState == IpDadStatePreferred,
                });
            }
            unicast = u.Next;
        }
        let len = (a.PhysicalAddressLength as usize).min(a.PhysicalAddress.len());
        // SAFETY: both lists were filled by GetAdaptersAddresses inside buf.
        let dns_servers =
            unsafe { ipv4_list(a.FirstDnsServerAddress, |d| (d.Address.lpSockaddr, d.Next)) };
        // SAFETY: as above.
        let gateways =
            unsafe { ipv4_list(a.FirstGatewayAddress, |g| (g.Address.lpSockaddr, g.Next)) };
        out.push(Adapter {
            name: take_wide(a.FriendlyName),
            index,
            description: take_wide(a.Description),
            mac: mac_text(&a.PhysicalAddress[..len]),
            addresses,
            // SAFETY: Flags is the variant GetAdaptersAddresses fills.
            dhcp: unsafe { a.Anonymous2.Flags } & IP_ADAPTER_DHCP_ENABLED != 0,
            gateways,
            dns_servers,
            dns_suffix: take_wide(a.DnsSuffix),
            metric: a.Ipv4Metric,
            // SAFETY: AdapterName is a NUL-terminated ANSI string inside buf, or null.
            guid: unsafe { ansi(a.AdapterName) },
        });
        adapter = a.Next;
    }
    Ok(out)
}

/// A MAC address as Windows writes it, `00-15-5D-00-00-04`.
fn mac_text(bytes: &[u8]) -> String {
    let octets: Vec<String> = bytes.iter().map(|b| format!("{b:02X}")).collect();
    octets.join("-")
}

/// `FilterInterface` in `MIB_IF_ROW2`'s `InterfaceAndOperStatusFlags`, the second bit
/// (netioapi.h: `HardwareInterface : 1; FilterInterface : 1; ...`).
const FILTER_INTERFACE: u8 = 0b10;

/// Every Ethernet interface, IPv4 bound or not: `GetIfTable2` rows of
/// `IF_TYPE_ETHERNET_CSMACD` with a MAC, filter modules left out.
pub fn ethernet_interfaces() -> HostResult<Vec<Adapter>> {
    let mut table: *mut MIB_IF_TABLE2 = std::ptr::null_mut();
    // SAFETY: table is an out-pointer freed with FreeMibTable below.
    let rc = unsafe { GetIfTable2(&mut table) };
    if rc != 0 {
        return Err(win32("list the network interfaces", rc));
    }
    // SAFETY: the table holds NumEntries rows starting at Table.
    let rows = unsafe {
        std::slice::from_raw_parts((*table).Table.as_ptr(), (*table).NumEntries as usize)
    };
    let out = rows
        .iter()
        .filter(|r| {
            r.Type == IF_TYPE_ETHERNET_CSMACD
                && r.PhysicalAddressLength == 6
                && r.InterfaceAndOperStatusFlags._bitfield & FILTER_INTERFACE == 0
        })
        .map(|r| {
            let g = &r.InterfaceGuid;
            let g = windows::core::GUID::from_values(g.data1, g.data2, g.data3, g.data4);
            Adapter {
                name: wide_until_nul(&r.Alias),
                index: r.InterfaceIndex,
                description: wide_until_nul(&r.Description),
                mac: mac_text(&r.PhysicalAddress[..6]),
                addresses: Vec::new(),
                dhcp: false,
                gateways: Vec::new(),
                dns_servers: Vec::new(),
                dns_suffix: String::new(),
                metric: 0,
                // As GetAdaptersAddresses' AdapterName writes it: `{XXXXXXXX-...}`.
                guid: format!("{{{g:?}}}"),
            }
        })
        .collect();
    // SAFETY: table came from GetIfTable2 and is not used after this.
    unsafe { FreeMibTable(table.cast()) };
    Ok(out)
}

pub fn routes() -> HostResult<Vec<Route>> {
    let mut table: *mut MIB_IPFORWARD_TABLE2 = std::ptr::null_mut();
    // SAFETY: table is an out-pointer freed with FreeMibTable below.
    let rc = unsafe { GetIpForwardTable2(AF_INET, &mut table) };
    if rc != 0 {
        return Err(win32("read the routing table", rc));
    }
    // SAFETY: the table holds NumEntries rows starting at Table.
    let rows = unsafe {
        std::slice::from_raw_parts((*table).Table.as_ptr(), (*table).NumEntries as usize)
    };
    let out = rows
        .iter()
        .map(|r| Route {
            // SAFETY: an AF_INET table holds IPv4 addresses.
            destination: ipv4(unsafe { &r.DestinationPrefix.Prefix.Ipv4.sin_addr }),
            prefix_len: r.DestinationPrefix.PrefixLength,
            // SAFETY: as above.
            next_hop: ipv4(unsafe { &r.NextHop.Ipv4.sin_addr }),
            interface_index: r.InterfaceIndex,
            metric: r.Metric,
        })
        .collect();
    // SAFETY: table came from GetIpForwardTable2 and is not used after this.
    unsafe { FreeMibTable(table.cast()) };
    Ok(out)
}

type InitializeRow = unsafe extern "system" fn(*mut MIB_IPFORWARD_ROW2);
type CreateRow = unsafe extern "system" fn(*const MIB_IPFORWARD_ROW2) -> u32;

/// iphlpapi.dll loaded at call time for the functions Wine 8 lacks, so a missing one is an
/// error, not an abort.
pub(super) fn iphlpapi() -> HostResult<Library> {
    system_dll("iphlpapi.dll", "the IP helper API", "")
}

pub(super) fn resolve<T>(lib: &Library, name: &[u8]) -> HostResult<Symbol<T>> {
    // SAFETY: each name is paired with the signature documented for it in netioapi.h.
    unsafe { export(lib, "iphlpapi.dll", "adding routes", name) }
}

/// The row naming `route` (`InitializeIpForwardEntry`, then interface, prefix and next hop).
fn route_row(lib: &Library, route: &Route) -> HostResult<MIB_IPFORWARD_ROW2> {
    let initialize: Symbol<InitializeRow> = resolve(lib, b"InitializeIpForwardEntry\0")?;
    let mut row: MIB_IPFORWARD_ROW2 = zeroed();
    // SAFETY: row is a writable MIB_IPFORWARD_ROW2.
    unsafe { initialize(&mut row) };
    row.InterfaceIndex = route.interface_index;
    row.DestinationPrefix.Prefix = sockaddr(route.destination);
    row.DestinationPrefix.PrefixLength = route.prefix_len;
    row.NextHop = sockaddr(route.next_hop);
    Ok(row)
}

pub fn add_route(route: &Route) -> HostResult<()> {
    let lib = iphlpapi()?;
    let create: Symbol<CreateRow> = resolve(&lib, b"CreateIpForwardEntry2\0")?;
    let mut row = route_row(&lib, route)?;
    row.Metric = route.metric;
    row.Protocol = MIB_IPPROTO_NETMGMT;
    // SAFETY: row is fully initialised.
    match unsafe { create(&row) } {
        0 => Ok(()),
        ERROR_OBJECT_ALREADY_EXISTS => Err(HostError::Exists {
            what: format!("route {}/{}", route.destination, route.prefix_len),
        }),
        ERROR_NOT_FOUND => Err(HostError::NotFound {
            what: format!(
                "interface {} for route {}/{}",
                route.interface_index, route.destination, route.prefix_len
            ),
        }),
        other => Err(win32(&format!("add {}", route.describe()), other)),
    }
}

/// Deletes a test's route (`DeleteIpForwardEntry2`); the Host trait deletes none.
#[cfg(test)]
pub(crate) fn delete_route(route: &Route) -> HostResult<()> {
    type DeleteRow = unsafe extern "system" fn(*const MIB_IPFORWARD_ROW2) -> u32;
    let lib = iphlpapi()?;
    let delete: Symbol<DeleteRow> = resolve(&lib, b"DeleteIpForwardEntry2\0")?;
    let row = route_row(&lib, route)?;
    // SAFETY: row names the route by the members the call reads.
    match unsafe { delete(&row) } {
        0 => Ok(()),
        other => Err(win32(&format!("delete {}", route.describe()), other)),
    }
}

type InterfaceRowCall = unsafe extern "system" fn(*mut MIB_IPINTERFACE_ROW) -> u32;
type InitializeAddress = unsafe extern "system" fn(*mut MIB_UNICASTIPADDRESS_ROW);
type CreateAddress = unsafe extern "system" fn(*const MIB_UNICASTIPADDRESS_ROW) -> u32;

/// Sets an interface's IPv4 metric (`GetIpInterfaceEntry`, `SetIpInterfaceEntry` with
/// `UseAutomaticMetric` off and `SitePrefixLength` 0).
pub fn set_interface_metric(index: u32, metric: u32) -> HostResult<()> {
    let lib = iphlpapi()?;
    let get: Symbol<InterfaceRowCall> = resolve(&lib, b"GetIpInterfaceEntry\0")?;
    let set: Symbol<InterfaceRowCall> = resolve(&lib, b"SetIpInterfaceEntry\0")?;
    // The family and index say which row to read.
    let mut row: MIB_IPINTERFACE_ROW = zeroed();
    row.Family = AF_INET;
    row.InterfaceIndex = index;
    let what = format!("set the metric of interface {index}");
    // SAFETY: row is a writable MIB_IPINTERFACE_ROW.
    match unsafe { get(&mut row) } {
        0 => {}
        ERROR_NOT_FOUND => {
            return Err(HostError::NotFound {
                what: format!("interface {index}"),
            });
        }
        other => return Err(win32(&what, other)),
    }
    row.Metric = metric;
    row.UseAutomaticMetric = false;
    row.SitePrefixLength = 0;
    // SAFETY: row is the interface's row as read, changed in documented fields.
    match unsafe { set(&mut row) } {
        0 => Ok(()),
        other => Err(win32(&what, other)),
    }
}

/// Adds a manual IPv4 address (`CreateUnicastIpAddressEntry`, netioapi).
pub fn add_address(index: u32, ip: Ipv4Addr, prefix_len: u8) -> HostResult<()> {
    let lib = iphlpapi()?;
    let initialize: Symbol<InitializeAddress> =
        resolve(&lib, b"InitializeUnicastIpAddressEntry\0")?;
    let create: Symbol<CreateAddress> = resolve(&lib, b"CreateUnicastIpAddressEntry\0")?;
    let mut row: MIB_UNICASTIPADDRESS_ROW = zeroed();
    // SAFETY: row is a writable MIB_UNICASTIPADDRESS_ROW.
    unsafe { initialize(&mut row) };
    row.Address = sockaddr(ip);
    row.InterfaceIndex = index;
    row.OnLinkPrefixLength = prefix_len;
    row.PrefixOrigin = IpPrefixOriginManual;
    row.SuffixOrigin = IpSuffixOriginManual;
    row.DadState = IpDadStatePreferred;
    // SAFETY: row is fully initialised.
    match unsafe { create(&row) } {
        0 => Ok(()),
        ERROR_OBJECT_ALREADY_EXISTS => Err(HostError::Exists {
            what: format!("address {ip} on interface {index}"),
        }),
        ERROR_NOT_FOUND => Err(HostError::NotFound {
            what: format!("interface {index}"),
        }),
        other => Err(win32(
            &format!("add {ip}/{prefix_len} to interface {index}"),
            other,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where Wine 8's iphlpapi lacks the functions, adding a route is an error naming them.
    #[test]
    fn a_missing_route_function_is_an_error_not_an_abort() {
        let lib = iphlpapi().expect("iphlpapi.dll loads");
        if resolve::<CreateRow>(&lib, b"CreateIpForwardEntry2\0").is_ok()
            && resolve::<InitializeRow>(&lib, b"InitializeIpForwardEntry\0").is_ok()
        {
            return;
        }
        let err = add_route(&Route {
            destination: Ipv4Addr::new(169, 254, 169, 254),
            prefix_len: 32,
            next_hop: Ipv4Addr::new(127, 0, 0, 1),
            interface_index: 1,
            metric: 0,
        })
        .expect_err("no route function");
        assert!(
            matches!(&err, HostError::Unavailable { reason, .. } if reason.contains("is missing from iphlpapi.dll")),
            "{err}"
        );
    }
}
