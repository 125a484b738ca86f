//! Which proxy the client uses for the API server: the kubeconfig's `proxy-url`, else
//! `HTTPS_PROXY`, unless `NO_PROXY` names the server. kube 5 matches `NO_PROXY` against the
//! proxy's address instead of the server's, so this decision replaces its own.

use std::collections::BTreeMap;
use std::net::IpAddr;

fn var<'a>(env: &'a BTreeMap<String, String>, names: &[&str]) -> Option<&'a str> {
    names
        .iter()
        .find_map(|n| env.get(*n))
        .map(|v| v.trim())
        .filter(|v| !v.is_empty())
}

/// The proxy for `server` (a URL), or `None` to connect directly.
pub fn choose(
    server: &http::Uri,
    kubeconfig_proxy: Option<&str>,
    env: &BTreeMap<String, String>,
) -> Result<Option<http::Uri>, String> {
    let proxy = match kubeconfig_proxy.map(str::trim).filter(|p| !p.is_empty()) {
        Some(p) => p,
        None => match var(env, &["HTTPS_PROXY", "https_proxy"]) {
            Some(p) => p,
            None => return Ok(None),
        },
    };
    let host = server.host().unwrap_or_default();
    if var(env, &["NO_PROXY", "no_proxy"]).is_some_and(|np| bypass(np, host)) {
        return Ok(None);
    }
    proxy
        .parse::<http::Uri>()
        .map(Some)
        .map_err(|e| format!("the proxy URL {proxy:?} is not valid: {e}"))
}

/// Whether a `NO_PROXY` list names `host`: `*`, an IP, a CIDR, a domain (`example.com` and
/// `.example.com` both cover subdomains); ports and empty entries are ignored.
pub fn bypass(no_proxy: &str, host: &str) -> bool {
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    let ip: Option<IpAddr> = host.parse().ok();
    no_proxy
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .any(|entry| {
            if entry == "*" {
                return true;
            }
            if let Some((net, bits)) = entry.split_once('/') {
                return match (ip, net.parse::<IpAddr>(), bits.parse::<u32>()) {
                    (Some(ip), Ok(net), Ok(bits)) => u8::try_from(bits)
                        .ok()
                        .and_then(|b| ipnet::IpNet::new(net, b).ok())
                        .is_some_and(|n| n.contains(&ip)),
                    _ => false,
                };
            }
            if let Ok(e) = entry
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<IpAddr>()
            {
                return ip == Some(e);
            }
            // `host:port` entries: the port is not compared.
            let name = entry.rsplit_once(':').map_or(entry, |(h, _)| h);
            let domain = name
                .trim_start_matches('*')
                .trim_start_matches('.')
                .to_ascii_lowercase();
            !domain.is_empty() && (host == domain || host.ends_with(&format!(".{domain}")))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn no_proxy_names_the_server_not_the_proxy() {
        let server: http::Uri = "https://api.corp.example:6443".parse().expect("uri");
        let e = env(&[
            ("HTTPS_PROXY", "http://10.9.9.9:3128"),
            ("NO_PROXY", "10.0.0.0/8,,.corp.example,"),
        ]);
        assert_eq!(choose(&server, None, &e), Ok(None));
        let other: http::Uri = "https://1.2.3.4:6443".parse().expect("uri");
        assert_eq!(
            choose(&other, None, &e).map(|p| p.map(|u| u.to_string())),
            Ok(Some("http://10.9.9.9:3128/".into()))
        );
        assert_eq!(choose(&other, None, &env(&[])), Ok(None));
        assert!(choose(&other, Some("http://[bad"), &env(&[])).is_err());
    }

    #[test]
    fn entries() {
        assert!(bypass("*", "x"));
        assert!(bypass("10.0.0.0/8", "10.1.2.3"));
        assert!(!bypass("10.0.0.0/8", "11.1.2.3"));
        assert!(bypass("10.1.2.3", "10.1.2.3"));
        assert!(bypass("example.com", "api.example.com"));
        assert!(bypass(".example.com", "example.com"));
        assert!(bypass("localhost:6443", "localhost"));
        assert!(!bypass("ample.com", "example.com"));
        assert!(bypass("fd00::/8", "[fd00::1]"));
        assert!(!bypass("", "x"));
    }
}
