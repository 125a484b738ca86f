//! The probe image: agnhost, which the Kubernetes e2e suites run on Windows and Linux alike
//! (kubernetes/kubernetes `test/utils/image/manifest.go`, `configs[Agnhost]`;
//! `test/images/agnhost/BASEIMAGE`: `windows/amd64/1809` and `ltsc2022`, `ltsc2025` from 2.62,
//! kubernetes/kubernetes#136727, promoted by kubernetes/k8s.io#9057).
//! containerd picks the variant whose `os.version` is the node's build.

/// The image `verify` runs unless `--image` names another (a mirror, for air-gapped clusters).
pub const AGNHOST: &str = "registry.k8s.io/e2e-test-images/agnhost:2.62";

/// The Windows variants agnhost's manifest list carries (BASEIMAGE's keys), by the build
/// number the node's `node.kubernetes.io/windows-build` label holds (`10.0.20348`).
pub const WINDOWS_VARIANTS: &[(&str, &str)] = &[
    ("10.0.17763", "windows/amd64/1809"),
    ("10.0.20348", "windows/amd64/ltsc2022"),
    ("10.0.26100", "windows/amd64/ltsc2025"),
];

/// The annotation on a Windows probe pod naming the variant of the default image its node
/// runs (none for a mirror given by `--image`, taken at its word).
pub const VARIANT_ANNOTATION: &str = "calicoctl-win.projectcalico.org/image-variant";

/// The port netexec serves HTTP on (`--http-port`, its default 8080) and UDP on (`--udp-port`,
/// its default 8081). The UDP server must run: netexec's `/healthz` answers 200 only once it
/// started (`startUDPServer` sets `serverReady`), and the readiness probe asks `/healthz`.
pub const HTTP_PORT: i32 = 8080;
pub const UDP_PORT: i32 = 8081;

/// The default image's variant for this Windows build (the label's value, such as
/// `10.0.20348`); `None` for another image or a build it lacks.
pub fn variant(image: &str, windows_build: &str) -> Option<&'static str> {
    (image == AGNHOST)
        .then(|| WINDOWS_VARIANTS.iter().find(|(b, _)| *b == windows_build))
        .flatten()
        .map(|(_, v)| *v)
}

/// Whether the default image carries a variant for this Windows build. A mirror given by
/// `--image` is taken at its word.
pub fn carries_build(image: &str, windows_build: &str) -> bool {
    image != AGNHOST || variant(image, windows_build).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A mirror is taken at its word: every build, no variant named. The default image's
    /// variants are tests/cluster/verify_builds.rs's; its builds lacked, matrix_tests'.
    #[test]
    fn a_mirror_carries_every_build_and_names_no_variant() {
        assert!(carries_build("mirror.local/agnhost:2.62", "10.0.19042"));
        assert_eq!(variant("mirror.local/agnhost:2.62", "10.0.26100"), None);
    }
}
