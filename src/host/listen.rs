//! Listening on a TCP port of the host, the port held for this process alone, and why a
//! port could not be had.

use serde::{Deserialize, Serialize};

/// Why a port could not be listened on, as the bind's error tells it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ListenRefusal {
    /// Another socket holds the port (WSAEADDRINUSE): `pid` is its process, when the host
    /// can tell (`GetExtendedTcpTable`'s listeners).
    Held { pid: Option<u32> },
    /// The port is in a range the system keeps from every program (WSAEACCES with no
    /// listener on it: `netsh int ipv4 show excludedportrange protocol=tcp`, the ranges
    /// Hyper-V and WinNAT reserve).
    Excluded,
    /// Anything else (no socket could be made, a listen that failed).
    #[serde(other)]
    Other,
}

/// A port that could not be listened on: why, and what the system said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListenError {
    pub refusal: ListenRefusal,
    pub error: String,
}

impl std::fmt::Display for ListenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.error)
    }
}

/// Windows' answer to a bind (Winsock error codes, winerror.h): a port another socket holds
/// (`WSAEADDRINUSE`, 10048) or one the bind is denied (`WSAEACCES`, 10013). Microsoft's
/// "Using SO_REUSEADDR and SO_EXCLUSIVEADDRUSE" (Winsock) gives a second bind with
/// SO_EXCLUSIVEADDRUSE to a wildcard address WSAEADDRINUSE whatever the first socket set,
/// so WSAEACCES is a port no socket holds: an excluded range. `holder` names the listener
/// on the port, asked only when it is needed; a denied bind whose port a listener does hold
/// after all is that listener's.
pub fn refusal(code: i32, holder: impl FnOnce() -> Option<u32>) -> ListenRefusal {
    const WSAEACCES: i32 = 10013;
    const WSAEADDRINUSE: i32 = 10048;
    match code {
        WSAEADDRINUSE => ListenRefusal::Held { pid: holder() },
        WSAEACCES => match holder() {
            Some(pid) => ListenRefusal::Held { pid: Some(pid) },
            None => ListenRefusal::Excluded,
        },
        _ => ListenRefusal::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_port_and_an_excluded_one_are_told_apart_by_the_bind_error() {
        assert_eq!(
            refusal(10048, || Some(4242)),
            ListenRefusal::Held { pid: Some(4242) }
        );
        assert_eq!(refusal(10048, || None), ListenRefusal::Held { pid: None });
        assert_eq!(refusal(10013, || None), ListenRefusal::Excluded);
        assert_eq!(
            refusal(10013, || Some(7)),
            ListenRefusal::Held { pid: Some(7) }
        );
        assert_eq!(refusal(10055, || Some(7)), ListenRefusal::Other);
    }
}
