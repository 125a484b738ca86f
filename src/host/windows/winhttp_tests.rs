//! The WinHTTP proxy read through `WinHttpGetDefaultProxyConfiguration` under Wine, from the
//! `WinHttpSettings` value in the layout Wine's dlls/winhttp/session.c reads.

use super::system::winhttp_proxy;
use crate::host::SystemProxy;

const CONNECTIONS: &str =
    r"Software\Microsoft\Windows\CurrentVersion\Internet Settings\Connections";

fn blob(proxy: &str, bypass: &str) -> Vec<u8> {
    let mut b = Vec::new();
    for v in [0x18u32, 0, 2] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    for s in [proxy, bypass] {
        b.extend_from_slice(&u32::try_from(s.len()).expect("short").to_le_bytes());
        b.extend_from_slice(s.as_bytes());
    }
    b
}

#[test]
fn the_machine_proxy_is_read_through_winhttp_and_its_strings_freed() {
    if std::env::var_os("CALICOCTL_WIN_TEST_UNDER_WINE").is_none() {
        // On a real Windows machine the test would change the machine's proxy.
        return;
    }
    let key = windows_registry::LOCAL_MACHINE
        .create(CONNECTIONS)
        .expect("Connections key");
    let before = winhttp_proxy().expect("read");
    if std::env::var_os("http_proxy").is_none() {
        // Wine's winhttp falls back to $http_proxy; Windows' does not.
        assert_eq!(before, None);
    }
    key.set_bytes(
        "WinHttpSettings",
        windows_registry::Type::Bytes,
        &blob("proxy.corp:8080", "<local>;*.corp.example"),
    )
    .expect("set");
    let read = winhttp_proxy();
    let _ = key.remove_value("WinHttpSettings");
    assert_eq!(
        read.expect("read"),
        Some(SystemProxy {
            proxy: "proxy.corp:8080".into(),
            bypass: Some("<local>;*.corp.example".into()),
        })
    );
    assert_eq!(winhttp_proxy().expect("read"), before);
}
