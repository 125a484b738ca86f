//! Which cloud the node runs on, so that CalicoNode knows whether to restore the metadata
//! route: `Get-PlatformType` of Calico's scripts (reference §3.6), with short timeouts so that
//! bare metal, where nothing answers, never stalls the service.

use crate::host::HnsNetwork;
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Where the metadata services are (an empty URL is not probed), and how long a probe may take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Probes {
    /// EC2's instance metadata service (IMDSv1 and IMDSv2).
    pub ec2: String,
    /// GCE's metadata server.
    pub gce: String,
    pub timeout: Duration,
}

impl Default for Probes {
    fn default() -> Self {
        Self {
            ec2: "http://169.254.169.254".into(),
            gce: "http://metadata.google.internal".into(),
            timeout: Duration::from_secs(2),
        }
    }
}

/// The platform, shown as its word (`bare-metal`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Platform {
    Aks,
    Eks,
    Ec2,
    Gce,
    BareMetal,
}

impl Platform {
    /// Clouds whose metadata route the vSwitch drops and CalicoNode restores.
    pub fn needs_metadata_route(self) -> bool {
        matches!(self, Platform::Ec2 | Platform::Gce)
    }
}

impl std::fmt::Display for Platform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&super::endpoints::word_of(self))
    }
}

/// The platform the configuration names; `None` for `auto`, which probes.
pub fn configured(choice: crate::config::types::PlatformChoice) -> Option<Platform> {
    use crate::config::types::PlatformChoice as C;
    match choice {
        C::Auto => None,
        C::BareMetal => Some(Platform::BareMetal),
        C::Ec2 => Some(Platform::Ec2),
        C::Gce => Some(Platform::Gce),
        C::Eks => Some(Platform::Eks),
        C::Aks => Some(Platform::Aks),
    }
}

/// Whether the HNS networks are an AKS node's: Azure CNI's network is named `azure`
/// (Calico's `GetPlatformType`).
pub fn is_aks(networks: &[HnsNetwork]) -> bool {
    networks
        .iter()
        .any(|n| n.name.eq_ignore_ascii_case("azure"))
}

/// The first match wins, as in the scripts: an `azure` network (AKS), a `vpcbr*` network
/// (EKS), EC2's metadata service (IMDSv1, or IMDSv2 when v1 answers 401), GCE's.
pub fn detect(networks: &[HnsNetwork], probes: &Probes) -> Platform {
    if is_aks(networks) {
        return Platform::Aks;
    }
    if networks
        .iter()
        .any(|n| n.name.to_ascii_lowercase().starts_with("vpcbr"))
    {
        return Platform::Eks;
    }
    let t = probes.timeout;
    let hostname = "/latest/meta-data/local-hostname";
    match get(&probes.ec2, "GET", hostname, &[], t) {
        Some(r) if r.status == 200 => return Platform::Ec2,
        Some(r) if r.status == 401 => {
            let ttl = [("X-aws-ec2-metadata-token-ttl-seconds", "21600")];
            if let Some(token) = get(&probes.ec2, "PUT", "/latest/api/token", &ttl, t)
                .filter(|r| r.status == 200)
                .map(|r| r.body.trim().to_owned())
            {
                let auth = [("X-aws-ec2-metadata-token", token.as_str())];
                if get(&probes.ec2, "GET", hostname, &auth, t).is_some_and(|r| r.status == 200) {
                    return Platform::Ec2;
                }
            }
        }
        _ => {}
    }
    let flavor = [("Metadata-Flavor", "Google")];
    let gce = get(
        &probes.gce,
        "GET",
        "/computeMetadata/v1/instance/hostname",
        &flavor,
        t,
    );
    if gce.is_some_and(|r| r.status == 200 && r.google) {
        return Platform::Gce;
    }
    Platform::BareMetal
}

struct Response {
    status: u16,
    body: String,
    /// The answer carried `Metadata-Flavor: Google`, as GCE's server's do.
    google: bool,
}

/// One plain-HTTP request to `base` (`http://host[:port]`); `None` when nothing answered
/// within `timeout` (name lookup, connect and read are each bounded by it).
fn get(
    base: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    timeout: Duration,
) -> Option<Response> {
    let authority = base.strip_prefix("http://")?.trim_end_matches('/');
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (h, p.parse().ok()?),
        None => (authority, 80),
    };
    let start = Instant::now();
    let addr = crate::net::resolve(host, port, timeout)?.ok()??;
    let left = timeout.checked_sub(start.elapsed())?;
    let mut stream = TcpStream::connect_timeout(&addr, left).ok()?;
    stream.set_read_timeout(Some(timeout)).ok()?;
    stream.set_write_timeout(Some(timeout)).ok()?;
    // Metadata is small: 64 KiB is plenty, and the whole answer comes within twice the timeout.
    let request = crate::http1::request(method, path, authority, headers);
    let raw = crate::http1::exchange(&mut stream, &request, 64 * 1024, start + timeout * 2).ok()?;
    let answer = crate::http1::parse(&raw)?;
    Some(Response {
        status: answer.code,
        google: answer.header("metadata-flavor") == Some("Google"),
        body: answer.body,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;

    /// A metadata server on loopback: answers each request with `respond(request text)`.
    pub fn serve(respond: impl Fn(&str) -> Option<String> + Send + 'static) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut s) = stream else { continue };
                let mut buf = [0u8; 4096];
                let n = s.read(&mut buf).unwrap_or(0);
                let req = String::from_utf8_lossy(&buf[..n]).into_owned();
                match respond(&req) {
                    Some(answer) => {
                        let _ = s.write_all(answer.as_bytes());
                    }
                    // Never answer: keep the connection open until the client gives up.
                    None => std::thread::sleep(Duration::from_secs(5)),
                }
            }
        });
        base
    }

    pub fn http(status: &str, extra: &str, body: &str) -> String {
        format!(
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n{body}",
            body.len()
        )
    }

    /// A loopback port where nothing listens.
    pub fn closed() -> String {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let a = l.local_addr().expect("addr");
        drop(l);
        format!("http://{a}")
    }

    fn probes(ec2: String, gce: String) -> Probes {
        Probes {
            ec2,
            gce,
            timeout: Duration::from_millis(300),
        }
    }

    /// EC2 is found by IMDSv2 where v1 is off (a token PUT first). (By IMDSv1: supervise
    /// `on_ec2_the_metadata_route_is_ensured_on_every_start`.)
    #[test]
    fn ec2_with_imdsv2_only() {
        let v2_only = serve(|req| {
            Some(if req.starts_with("PUT /latest/api/token") {
                assert!(req.contains("X-aws-ec2-metadata-token-ttl-seconds: 21600"));
                http("200 OK", "", "AQAEtoken==")
            } else if req.contains("X-aws-ec2-metadata-token: AQAEtoken==") {
                http("200 OK", "", "ip-10-0-0-5.ec2.internal")
            } else {
                http("401 Unauthorized", "", "")
            })
        });
        let found = detect(&[], &probes(v2_only, closed()));
        assert_eq!(found, Platform::Ec2);
    }

    #[test]
    fn gce_needs_the_flavor_header_both_ways() {
        let gce = serve(|req| {
            Some(if req.contains("Metadata-Flavor: Google") {
                http(
                    "200 OK",
                    "Metadata-Flavor: Google\r\n",
                    "win-1.c.project.internal",
                )
            } else {
                http("403 Forbidden", "", "")
            })
        });
        assert_eq!(detect(&[], &probes(closed(), gce)), Platform::Gce);
        // A server that answers 200 without the header is not GCE's.
        let impostor = serve(|_| Some(http("200 OK", "", "x")));
        assert_eq!(
            detect(&[], &probes(closed(), impostor)),
            Platform::BareMetal
        );
    }

    #[test]
    fn bare_metal_is_found_quickly_when_nothing_answers() {
        let silent = serve(|_| None);
        let start = Instant::now();
        assert_eq!(
            detect(&[], &probes(silent.clone(), silent)),
            Platform::BareMetal
        );
        // Two probes that each give up after their timeout (0.3 s here), not a stall.
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn aks_and_eks_are_known_by_their_networks() {
        let net = |name: &str| HnsNetwork {
            id: "1".into(),
            name: name.into(),
            network_type: "L2Bridge".into(),
            subnets: vec![],
            management_ip: None,
            dr_mac: None,
            adapter: None,
        };
        let p = probes(closed(), closed());
        assert_eq!(detect(&[net("azure")], &p), Platform::Aks);
        assert_eq!(detect(&[net("vpcbr0a1b2c")], &p), Platform::Eks);
    }
}
