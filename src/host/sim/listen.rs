//! The simulated host's TCP listeners on the loopback, refused as Windows refuses an exclusive
//! wildcard bind (WSAEADDRINUSE when held; WSAEACCES in an excluded range).

use super::state::SimSettings;
use crate::host::listen::{ListenError, ListenRefusal, refusal};
use std::net::{Ipv4Addr, SocketAddr, TcpListener};

const IN_USE: &str = "Only one usage of each socket address (protocol/network address/port) is normally permitted. (os error 10048)";
const DENIED: &str = "An attempt was made to access a socket in a way forbidden by its access permissions. (os error 10013)";

/// Listens on the loopback's `port`, unless the settings give it to another program or an
/// excluded range; a port a real socket holds here is refused as held too.
pub fn listen(settings: &SimSettings, port: u16) -> Result<TcpListener, ListenError> {
    let holder = || {
        let at = SocketAddr::from((Ipv4Addr::UNSPECIFIED, port));
        settings.tcp_listeners.get(&port).map(|pid| (*pid, at))
    };
    let excluded = settings
        .excluded_tcp_ports
        .iter()
        .any(|(first, last)| (*first..=*last).contains(&port));
    let refused = |code: i32, error: &str| ListenError {
        refusal: refusal(code, holder),
        error: error.to_owned(),
    };
    if holder().is_some() {
        return Err(refused(10048, IN_USE));
    }
    if excluded {
        return Err(refused(10013, DENIED));
    }
    TcpListener::bind(("127.0.0.1", port)).map_err(|e| match e.kind() {
        std::io::ErrorKind::AddrInUse => refused(10048, IN_USE),
        _ => ListenError {
            refusal: ListenRefusal::Other,
            error: e.to_string(),
        },
    })
}
