//! A TCP listener on every address, bound with SO_EXCLUSIVEADDRUSE so no other program binds
//! the port beside it (Microsoft's "Using SO_REUSEADDR and SO_EXCLUSIVEADDRUSE"). A refused
//! bind names the holder when `GetExtendedTcpTable` can.

use crate::host::listen::{ListenError, ListenRefusal, refusal};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener};
use std::os::windows::io::FromRawSocket;
use windows_sys::Win32::Networking::WinSock::{
    AF_INET, AF_INET6, IN_ADDR, IN_ADDR_0, INVALID_SOCKET, IPPROTO_TCP, SO_EXCLUSIVEADDRUSE,
    SOCK_STREAM, SOCKADDR, SOCKADDR_IN, SOCKET, SOL_SOCKET, SOMAXCONN, WSA_FLAG_NO_HANDLE_INHERIT,
    WSA_FLAG_OVERLAPPED, WSADATA, WSAGetLastError, WSASocketW, WSAStartup, bind, closesocket,
    listen as wsa_listen, setsockopt,
};

/// Listens on `0.0.0.0:port`, the port held exclusively.
pub fn listen(port: u16) -> Result<TcpListener, ListenError> {
    // Once per process, never cleaned up (as std's sockets).
    static STARTED: std::sync::OnceLock<i32> = std::sync::OnceLock::new();
    // SAFETY: WSAStartup fills the WSADATA given.
    let started = *STARTED.get_or_init(|| unsafe {
        let mut data: WSADATA = std::mem::zeroed();
        WSAStartup(0x202, &mut data)
    });
    if started != 0 {
        return Err(failed("start Winsock", started));
    }
    let s = socket(AF_INET).map_err(|code| failed("make a socket", code))?;
    match exclusive_bind(s, port) {
        // SAFETY: `s` is a listening socket this function made and owns; std takes it over
        // and closes it when the listener drops.
        Ok(()) => Ok(unsafe { TcpListener::from_raw_socket(s as u64) }),
        Err((step, code)) => {
            // SAFETY: `s` is ours and not handed on.
            unsafe { closesocket(s) };
            let holder = || listener(port);
            Err(ListenError {
                refusal: if step == "bind" {
                    refusal(code, holder)
                } else {
                    ListenRefusal::Other
                },
                error: format!(
                    "{step} TCP port {port}: {}",
                    std::io::Error::from_raw_os_error(code)
                ),
            })
        }
    }
}

/// A new TCP socket of `family`, not inherited by children (as std's are), overlapped so that
/// std may use it; else the Winsock error.
fn socket(family: u16) -> Result<SOCKET, i32> {
    // SAFETY: a new socket of the documented family, type and protocol.
    let s = unsafe {
        WSASocketW(
            i32::from(family),
            SOCK_STREAM,
            IPPROTO_TCP,
            std::ptr::null(),
            0,
            WSA_FLAG_OVERLAPPED | WSA_FLAG_NO_HANDLE_INHERIT,
        )
    };
    // SAFETY: reads this thread's last Winsock error.
    (s != INVALID_SOCKET)
        .then_some(s)
        .ok_or_else(|| unsafe { WSAGetLastError() })
}

/// Sets the socket option `level`/`name` of `s` to the integer `value`; else the error.
fn set_option(s: SOCKET, level: i32, name: i32, value: i32) -> Result<(), i32> {
    // SAFETY: `s` is a valid socket; the value lives for the call, with its size.
    let rc = unsafe {
        setsockopt(
            s,
            level,
            name,
            (&value as *const i32).cast(),
            size_of::<i32>() as i32,
        )
    };
    // SAFETY: reads this thread's last Winsock error.
    (rc == 0)
        .then_some(())
        .ok_or_else(|| unsafe { WSAGetLastError() })
}

/// Binds `s` to the socket address `addr` (a SOCKADDR_IN or SOCKADDR_IN6); else the error.
fn bind_to<A>(s: SOCKET, addr: &A) -> Result<(), i32> {
    let size = size_of::<A>() as i32;
    // SAFETY: `s` is a valid socket; `addr` is a socket address of its size, alive.
    let rc = unsafe { bind(s, (addr as *const A).cast::<SOCKADDR>(), size) };
    // SAFETY: reads this thread's last Winsock error.
    (rc == 0)
        .then_some(())
        .ok_or_else(|| unsafe { WSAGetLastError() })
}

/// Sets SO_EXCLUSIVEADDRUSE, binds every address's `port` and listens; else the failed step.
fn exclusive_bind(s: SOCKET, port: u16) -> Result<(), (&'static str, i32)> {
    set_option(s, SOL_SOCKET, SO_EXCLUSIVEADDRUSE, 1)
        .map_err(|code| ("set SO_EXCLUSIVEADDRUSE on", code))?;
    bind_to(s, &sockaddr_in([0; 4], port)).map_err(|code| ("bind", code))?;
    // SAFETY: `s` is a valid, bound socket.
    if unsafe { wsa_listen(s, SOMAXCONN as i32) } != 0 {
        // SAFETY: reads this thread's last Winsock error.
        return Err(("listen on", unsafe { WSAGetLastError() }));
    }
    Ok(())
}

/// `ip:port` as a SOCKADDR_IN.
fn sockaddr_in(ip: [u8; 4], port: u16) -> SOCKADDR_IN {
    SOCKADDR_IN {
        sin_family: AF_INET,
        sin_port: port.to_be(),
        sin_addr: IN_ADDR {
            S_un: IN_ADDR_0 {
                S_addr: u32::from_ne_bytes(ip),
            },
        },
        sin_zero: [0; 8],
    }
}

fn failed(step: &str, code: i32) -> ListenError {
    ListenError {
        refusal: ListenRefusal::Other,
        error: format!("{step}: {}", std::io::Error::from_raw_os_error(code)),
    }
}

/// The listener on `port` (pid and address), from `GetExtendedTcpTable`
/// (`TCP_TABLE_OWNER_PID_LISTENER`), IPv4 then IPv6 (a dual-stack `[::]` holds the IPv4 port
/// too); `None` when none holds it or the tables cannot be read.
fn listener(port: u16) -> Option<(u32, SocketAddr)> {
    use windows_sys::Win32::NetworkManagement::IpHelper::{
        MIB_TCP6ROW_OWNER_PID, MIB_TCPROW_OWNER_PID,
    };
    let of = |p: u32| u16::from_be(p as u16);
    let v4 = rows::<MIB_TCPROW_OWNER_PID>(AF_INET).and_then(|rows| {
        let r = rows.iter().find(|r| of(r.dwLocalPort) == port)?;
        let ip = Ipv4Addr::from(r.dwLocalAddr.to_ne_bytes());
        Some((r.dwOwningPid, SocketAddr::from((ip, port))))
    });
    v4.or_else(|| {
        let rows = rows::<MIB_TCP6ROW_OWNER_PID>(AF_INET6)?;
        let r = rows.iter().find(|r| of(r.dwLocalPort) == port)?;
        let ip = Ipv6Addr::from(r.ucLocalAddr);
        Some((r.dwOwningPid, SocketAddr::from((ip, port))))
    })
}

/// The listener rows of `family`'s table: a u32 count, then the rows from offset 4.
fn rows<Row: Copy>(family: u16) -> Option<Vec<Row>> {
    use windows_sys::Win32::Foundation::ERROR_INSUFFICIENT_BUFFER;
    use windows_sys::Win32::NetworkManagement::IpHelper::TCP_TABLE_OWNER_PID_LISTENER;
    type GetTable =
        unsafe extern "system" fn(*mut core::ffi::c_void, *mut u32, i32, u32, i32, u32) -> u32;
    let lib = super::network::iphlpapi().ok()?;
    let get: libloading::os::windows::Symbol<GetTable> =
        super::network::resolve(&lib, b"GetExtendedTcpTable\0").ok()?;
    let buf = crate::host::network::with_growing_buffer(
        16 * 1024,
        4,
        ERROR_INSUFFICIENT_BUFFER,
        // SAFETY: the buffer is `size` bytes (rounded up to u64s), as the call is told.
        |buf, size| unsafe {
            get(
                buf.as_mut_ptr().cast(),
                size,
                0,
                u32::from(family),
                TCP_TABLE_OWNER_PID_LISTENER,
                0,
            )
        },
    )
    .ok()?;
    let bytes = buf.len() * 8;
    // SAFETY: the call filled the buffer with `family`'s table: a u32 count, then that many
    // rows from offset 4 (both row types hold u32s and byte arrays: 4-byte aligned); the count
    // is checked against the buffer's size before a row is read, and the rows are copied out.
    unsafe {
        let base = buf.as_ptr().cast::<u8>();
        let n = *(base.cast::<u32>()) as usize;
        if 4 + n.checked_mul(size_of::<Row>())? > bytes {
            return None;
        }
        Some(std::slice::from_raw_parts(base.add(4).cast::<Row>(), n).to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::{bind_to, set_option, sockaddr_in, socket};
    use crate::host::listen::ListenRefusal;
    use windows_sys::Win32::Networking::WinSock::{SO_REUSEADDR, SOL_SOCKET, closesocket};

    /// Binds a socket asking to share the address (SO_REUSEADDR) to `port`, as a hijacker.
    fn squat(port: u16) -> bool {
        let s = socket(super::AF_INET).expect("a socket");
        set_option(s, SOL_SOCKET, SO_REUSEADDR, 1).expect("SO_REUSEADDR");
        let bound = bind_to(s, &sockaddr_in([127, 0, 0, 1], port)).is_ok();
        // SAFETY: `s` was made here and is closed once.
        unsafe { closesocket(s) };
        bound
    }

    /// The port is ours alone: a second listen is refused as held by this process, a sharing
    /// squatter refused, and the port free once dropped.
    #[test]
    fn the_port_is_held_exclusively_and_a_second_bind_names_its_holder() {
        let first = super::listen(0).expect("listen");
        let port = first.local_addr().expect("addr").port();
        let again = super::listen(port).expect_err("the port is held");
        let ListenRefusal::Held { pid, .. } = again.refusal else {
            panic!("not held: {again:?}");
        };
        // Wine's listener table may not name the process; Windows' does.
        if std::env::var_os("CALICOCTL_WIN_TEST_UNDER_WINE").is_none() {
            assert_eq!(pid, Some(std::process::id()), "{again:?}");
        }
        assert!(
            !squat(port),
            "a squatter bound the port beside the listener"
        );
        drop(first);
        assert!(super::listen(port).is_ok(), "the port was not let go");
    }

    /// A dual-stack listener on `[::]` (IPV6_V6ONLY off), as a program would make it.
    fn dual_stack_listener() -> std::net::TcpListener {
        use std::os::windows::io::FromRawSocket;
        use windows_sys::Win32::Networking::WinSock::{
            AF_INET6, IPPROTO_IPV6, IPV6_V6ONLY, SOCKADDR_IN6, listen,
        };
        let s = socket(AF_INET6).expect("a socket");
        set_option(s, IPPROTO_IPV6, IPV6_V6ONLY, 0).expect("IPV6_V6ONLY off");
        let mut addr: SOCKADDR_IN6 = super::super::ffi::zeroed();
        addr.sin6_family = AF_INET6;
        bind_to(s, &addr).expect("bound to [::]");
        // SAFETY: a socket made, set and bound here, then handed to std, which closes it.
        unsafe {
            assert_eq!(listen(s, 16), 0, "listening");
            std::net::TcpListener::from_raw_socket(s as u64)
        }
    }

    /// A dual-stack listener on `[::]` holds the IPv4 port: refused as held and named.
    #[test]
    fn a_dual_stack_listener_on_ipv6_is_named_with_its_address() {
        let squatter = dual_stack_listener();
        let port = squatter.local_addr().expect("addr").port();
        let refused = super::listen(port).expect_err("the port is held");
        let ListenRefusal::Held { pid, at } = refused.refusal else {
            panic!("not held: {refused:?}");
        };
        // Named by its address (Wine's IPv6 table lists it; its pid only on Windows).
        assert!(at.is_some_and(|a| a.port() == port), "{refused:?}");
        if std::env::var_os("CALICOCTL_WIN_TEST_UNDER_WINE").is_none() {
            assert_eq!(pid, Some(std::process::id()), "{refused:?}");
        }
        drop(squatter);
    }
}
