//! Listening on a host TCP port held for this process alone, and why a port could not be had.

use serde::{Deserialize, Serialize};
use std::net::SocketAddr;

/// Why a port could not be listened on, as the bind's error tells it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ListenRefusal {
    /// Another socket holds the port (WSAEADDRINUSE): its process and address (a dual-stack
    /// `[::]` holds the IPv4 port too), when `GetExtendedTcpTable` tells.
    Held {
        pid: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at: Option<SocketAddr>,
    },
    /// The port is in a range the system reserves (WSAEACCES, no listener: `netsh int ipv4
    /// show excludedportrange protocol=tcp`).
    Excluded,
    /// Anything else (no socket could be made, a listen that failed).
    #[serde(other)]
    Other,
}

impl ListenRefusal {
    /// Who holds the port, when told: `process 4242 listens on it at [::]:9095 (IPv6)`.
    pub fn holder(&self) -> Option<String> {
        let Self::Held { pid: Some(pid), at } = self else {
            return None;
        };
        let at = at.map_or_else(String::new, |a| {
            let family = if a.is_ipv6() { "IPv6" } else { "IPv4" };
            format!(" at {a} ({family})")
        });
        Some(format!("process {pid} listens on it{at}"))
    }
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

/// Windows' answer to a bind: `WSAEADDRINUSE` (10048) is a held port, `WSAEACCES` (10013) one
/// no socket holds, an excluded range (Microsoft's "Using SO_REUSEADDR and
/// SO_EXCLUSIVEADDRUSE"), unless `holder` names a listener after all.
pub fn refusal(code: i32, holder: impl FnOnce() -> Option<(u32, SocketAddr)>) -> ListenRefusal {
    const WSAEACCES: i32 = 10013;
    const WSAEADDRINUSE: i32 = 10048;
    let held = |(pid, at): (u32, SocketAddr)| ListenRefusal::Held {
        pid: Some(pid),
        at: Some(at),
    };
    match code {
        WSAEADDRINUSE => holder().map_or(
            ListenRefusal::Held {
                pid: None,
                at: None,
            },
            held,
        ),
        WSAEACCES => holder().map_or(ListenRefusal::Excluded, held),
        _ => ListenRefusal::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_port_and_an_excluded_one_are_told_apart_by_the_bind_error() {
        let v4: SocketAddr = "0.0.0.0:9095".parse().expect("addr");
        let v6: SocketAddr = "[::]:9095".parse().expect("addr");
        let held = |pid, at| ListenRefusal::Held {
            pid: Some(pid),
            at: Some(at),
        };
        assert_eq!(refusal(10048, || Some((4242, v4))), held(4242, v4));
        assert_eq!(
            refusal(10048, || None),
            ListenRefusal::Held {
                pid: None,
                at: None
            }
        );
        assert_eq!(refusal(10013, || None), ListenRefusal::Excluded);
        // A dual-stack listener on IPv6's every address holds the IPv4 port too.
        assert_eq!(refusal(10013, || Some((7, v6))), held(7, v6));
        assert_eq!(refusal(10055, || Some((7, v4))), ListenRefusal::Other);
    }

    /// The holder is named with its address and family; an older record has none.
    #[test]
    fn the_holder_is_named_with_its_address_and_family() {
        let at = |a: &str| ListenRefusal::Held {
            pid: Some(4242),
            at: Some(a.parse().expect("addr")),
        };
        assert_eq!(
            at("[::1]:9099").holder().as_deref(),
            Some("process 4242 listens on it at [::1]:9099 (IPv6)")
        );
        assert_eq!(
            at("0.0.0.0:9095").holder().as_deref(),
            Some("process 4242 listens on it at 0.0.0.0:9095 (IPv4)")
        );
        let old: ListenRefusal =
            serde_json::from_str(r#"{"kind":"held","pid":4242}"#).expect("old record");
        assert_eq!(old.holder().as_deref(), Some("process 4242 listens on it"));
        let kept = serde_json::to_string(&at("[::]:9095")).expect("json");
        assert_eq!(kept, r#"{"kind":"held","pid":4242,"at":"[::]:9095"}"#);
        assert_eq!(ListenRefusal::Excluded.holder(), None);
    }
}
