//! The probe image: agnhost, the image the Kubernetes e2e suites run on Windows and Linux
//! alike, and the Windows Server builds it is published for.
//!
//! kubernetes/kubernetes: `test/utils/image/manifest.go` (`configs[Agnhost]`, agnhost 2.52 from
//! the promoter's e2e registry `registry.k8s.io/e2e-test-images`); `test/images/agnhost/BASEIMAGE`
//! lists the variants of the manifest list: `linux/amd64`, `linux/arm64`, ... and
//! `windows/amd64/1809` and `windows/amd64/ltsc2022` only. A Windows container must match its
//! host's build under process isolation, so a Windows node on any other build gets no probe
//! pod from this image (its pull would fail with "no matching manifest"): `verify` says so and
//! names `--image` for a mirror built for that build, instead of waiting for a pull that cannot
//! succeed.

/// The image `verify` runs unless `--image` names another (a mirror, for air-gapped clusters).
pub const AGNHOST: &str = "registry.k8s.io/e2e-test-images/agnhost:2.52";

/// The Windows Server builds agnhost's manifest list carries (BASEIMAGE's `windows/amd64/1809`
/// and `windows/amd64/ltsc2022`), as the build number the node's
/// `node.kubernetes.io/windows-build` label starts with (`10.0.17763`, `10.0.20348`).
pub const WINDOWS_BUILDS: &[(&str, &str)] = &[
    ("10.0.17763", "Windows Server 2019 (1809)"),
    ("10.0.20348", "Windows Server 2022 (ltsc2022)"),
];

/// The port netexec serves HTTP on (`--http-port`, its default 8080) and UDP on (`--udp-port`,
/// its default 8081). The UDP server must run: netexec's `/healthz` answers 200 only once it
/// started (`startUDPServer` sets `serverReady`), and the readiness probe asks `/healthz`.
pub const HTTP_PORT: i32 = 8080;
pub const UDP_PORT: i32 = 8081;

/// Whether the default image carries a variant for this Windows build (the label's value, such
/// as `10.0.20348`). A mirror given by `--image` is taken at its word.
pub fn carries_build(image: &str, windows_build: &str) -> bool {
    image != AGNHOST || WINDOWS_BUILDS.iter().any(|(b, _)| *b == windows_build)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_image_carries_2019_and_2022_only() {
        assert!(carries_build(AGNHOST, "10.0.17763"));
        assert!(carries_build(AGNHOST, "10.0.20348"));
        assert!(!carries_build(AGNHOST, "10.0.26100"));
        assert!(carries_build("mirror.local/agnhost:2.52", "10.0.26100"));
    }
}
