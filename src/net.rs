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

/// The proxy variables (`HTTPS_PROXY`, `HTTP_PROXY`, `NO_PROXY`) that say what a WinHTTP
/// proxy setting says, for the clients here, which read those variables. WinHTTP's grammar
/// (`WINHTTP_PROXY_INFO`): proxies separated by `;` or spaces, each `host:port` (every scheme)
/// or `scheme=host:port`; the bypass list the same, with `*.example.com` and `10.*` wildcards
/// and `<local>` (names without a dot), which `NO_PROXY` cannot say and is left out.
pub fn winhttp_proxy_env(p: &crate::host::SystemProxy) -> Vec<(&'static str, String)> {
    let words = |s: &str| -> Vec<String> {
        s.split(|c: char| c == ';' || c == ',' || c.is_whitespace())
            .map(str::trim)
            .filter(|w| !w.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let url = |addr: &str| {
        if addr.contains("://") {
            addr.to_owned()
        } else {
            format!("http://{addr}")
        }
    };
    let (mut http, mut https) = (None, None);
    for entry in words(&p.proxy) {
        match entry.split_once('=') {
            Some((scheme, addr)) if scheme.eq_ignore_ascii_case("http") => {
                http = http.or(Some(url(addr)));
            }
            Some((scheme, addr)) if scheme.eq_ignore_ascii_case("https") => {
                https = https.or(Some(url(addr)));
            }
            Some(_) => {}
            None => {
                http = http.or(Some(url(&entry)));
                https = https.or(Some(url(&entry)));
            }
        }
    }
    let bypass: Vec<String> = p
        .bypass
        .as_deref()
        .map(words)
        .unwrap_or_default()
        .into_iter()
        .filter(|e| !e.eq_ignore_ascii_case("<local>"))
        .map(|e| no_proxy_entry(&e))
        .collect();
    let mut out = Vec::new();
    if let Some(v) = https {
        out.push(("HTTPS_PROXY", v));
    }
    if let Some(v) = http {
        out.push(("HTTP_PROXY", v));
    }
    if !out.is_empty() && !bypass.is_empty() {
        out.push(("NO_PROXY", bypass.join(",")));
    }
    out
}

/// A WinHTTP bypass entry as `NO_PROXY` says it: `*.example.com` is `.example.com`, an
/// address with trailing `*` octets a CIDR (`10.*` is `10.0.0.0/8`).
fn no_proxy_entry(entry: &str) -> String {
    if let Some(domain) = entry.strip_prefix("*.") {
        return format!(".{domain}");
    }
    let octets: Vec<&str> = entry.split('.').collect();
    let fixed = octets
        .iter()
        .take_while(|o| o.parse::<u8>().is_ok())
        .count();
    if (1..4).contains(&fixed)
        && octets.len() > fixed
        && octets.len() <= 4
        && octets[fixed..].iter().all(|o| *o == "*")
    {
        let mut net: Vec<&str> = octets[..fixed].to_vec();
        net.resize(4, "0");
        return format!("{}/{}", net.join("."), fixed * 8);
    }
    entry.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::SystemProxy;

    fn env(proxy: &str, bypass: Option<&str>) -> Vec<(&'static str, String)> {
        winhttp_proxy_env(&SystemProxy {
            proxy: proxy.into(),
            bypass: bypass.map(str::to_owned),
        })
    }

    #[test]
    fn one_proxy_serves_every_scheme_and_the_bypass_list_becomes_no_proxy() {
        assert_eq!(
            env(
                "proxy.corp:8080",
                Some("<local>;*.corp.example;10.*;192.168.1.*;api.internal")
            ),
            vec![
                ("HTTPS_PROXY", "http://proxy.corp:8080".to_owned()),
                ("HTTP_PROXY", "http://proxy.corp:8080".to_owned()),
                (
                    "NO_PROXY",
                    ".corp.example,10.0.0.0/8,192.168.1.0/24,api.internal".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn per_scheme_proxies_and_separators_as_winhttp_allows() {
        assert_eq!(
            env("http=p1:80 https=p2:443;ftp=p3:21", None),
            vec![
                ("HTTPS_PROXY", "http://p2:443".to_owned()),
                ("HTTP_PROXY", "http://p1:80".to_owned()),
            ]
        );
        assert_eq!(env("  ", Some("*")), vec![]);
        // A whole address and a plain name stay as they are.
        assert_eq!(no_proxy_entry("10.1.2.3"), "10.1.2.3");
        assert_eq!(no_proxy_entry("10.1.*.5"), "10.1.*.5");
        assert_eq!(no_proxy_entry("*"), "*");
    }
}
