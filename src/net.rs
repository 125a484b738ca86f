//! Small network helpers shared by the layers that open plain sockets.

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

/// The first address of `host`, looked up within `timeout` (`None`: the lookup took longer; the
/// resolver cannot be cancelled, so its thread is left to finish on its own).
pub fn resolve(
    host: &str,
    port: u16,
    timeout: Duration,
) -> Option<std::io::Result<Option<SocketAddr>>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let host = host.to_owned();
    std::thread::spawn(move || {
        let _ = tx.send(
            (host.as_str(), port)
                .to_socket_addrs()
                .map(|mut a| a.next()),
        );
    });
    rx.recv_timeout(timeout).ok()
}
