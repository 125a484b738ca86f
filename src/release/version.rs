//! Calico release versions, what each release's Windows binary expects on its command line,
//! and where a release records its own version.
//!
//! The facts come from Calico's service scripts at the release tags (projectcalico/calico,
//! `node/windows-packaging/CalicoWindows/{node,felix,confd}/*-service.ps1`):
//! - the token refresher (`-monitor-token`) runs only inside a HostProcess container from
//!   v3.27.5, v3.28.1 and v3.29.0 (4821bf2338): calicoctl-win's services never are, so it
//!   starts it on no release;
//! - v3.31.0 (e6599598ec, PR #10866): `calico-node.exe -startup -complete-startup`; without the
//!   flag the node keeps the NetworkUnavailable condition;
//! - release-v3.33 (#12225, #12909): one `calico.exe` driven by subcommands: `component node
//!   startup --complete-startup`, `component felix`, `component confd --confdir=DIR`,
//!   `component node monitor-token`.

use std::fmt;
use std::io::Read;

/// Which Calico binary the release ships.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Binary {
    /// `calico-node.exe` (v3.2x to v3.32).
    CalicoNode,
    /// `calico.exe` (v3.33 and later).
    Calico,
}

impl Binary {
    pub fn file_name(self) -> &'static str {
        match self {
            Self::CalicoNode => "calico-node.exe",
            Self::Calico => "calico.exe",
        }
    }
}

/// A Calico release version, `MAJOR.MINOR.PATCH`; a pre-release suffix (`-0.dev`, `-rc1`) is
/// kept for display and sorts before the release itself.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CalicoVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
    /// The pre-release suffix (`0.dev`); `None` for a release, which sorts after them all.
    pre: Option<String>,
}

impl CalicoVersion {
    pub const fn new(major: u32, minor: u32, patch: u32) -> Self {
        Self {
            major,
            minor,
            patch,
            pre: None,
        }
    }

    /// `3.31.0`, `v3.31.0`, `3.33.0-0.dev`; two parts (`3.31`) mean `.0`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim();
        let t = t.strip_prefix(['v', 'V']).unwrap_or(t);
        let (num, pre) = match t.split_once(['-', '+']) {
            Some((n, p)) => (n, Some(p)),
            None => (t, None),
        };
        let bad = || format!("{text:?} is not a Calico version: write it like 3.31.0");
        let parts: Vec<&str> = num.split('.').collect();
        if !(2..=3).contains(&parts.len()) {
            return Err(bad());
        }
        let n = |s: &str| -> Result<u32, String> {
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || s.len() > 6 {
                return Err(bad());
            }
            s.parse().map_err(|_| bad())
        };
        let pre = match pre {
            Some(p)
                if !p.is_empty()
                    && p.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-') =>
            {
                Some(p.to_owned())
            }
            Some(_) => return Err(bad()),
            None => None,
        };
        Ok(Self {
            major: n(parts[0])?,
            minor: n(parts[1])?,
            patch: parts.get(2).map_or(Ok(0), |p| n(p))?,
            pre,
        })
    }

    /// A release as a person names one on the command line: all three numbers, `3.30.2` (or
    /// `v3.30.2`, a pre-release `3.34.0-0.dev`); `3.30` names no release.
    pub fn parse_release(text: &str) -> Result<Self, String> {
        let v = Self::parse(text)?;
        let numbers = text.trim().trim_start_matches(['v', 'V']).split(['-', '+']);
        if numbers.take(1).flat_map(|n| n.split('.')).count() != 3 {
            return Err(format!(
                "{text:?} names no release: give all three numbers, like {}.{}.0 (the release page lists them)",
                v.major, v.minor
            ));
        }
        Ok(v)
    }

    /// The `cniVersion` this release's own `cni.conf.template` gives
    /// (`node/windows-packaging/CalicoWindows/cni.conf.template` at its tag): `1.0.0` from
    /// v3.31.7 (e345d10438, #13378), v3.32.2 (d335386428, #13379) and 3.33 (556b0a0c94,
    /// #13380); `0.3.1` before, v3.32.0 and v3.32.1 included.
    pub fn cni_version(&self) -> &'static str {
        let v = (self.major, self.minor, self.patch);
        let one = v >= (3, 33, 0)
            || (v.0, v.1) == (3, 32) && v.2 >= 2
            || (v.0, v.1) == (3, 31) && v.2 >= 7;
        if one { "1.0.0" } else { "0.3.1" }
    }

    /// Whether this release's CNI plugin accepts a config of CNI spec `spec`: 0.4.0 and 1.0.0
    /// from v3.23.0 (`cni-plugin/pkg/plugin/plugin.go` `version.PluginSupports("0.1.0",
    /// "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0")`; v3.22's stops at 0.3.1).
    pub fn accepts_cni_spec(&self, spec: &str) -> bool {
        match spec {
            "0.3.1" => true,
            "0.4.0" | "1.0.0" => self.at_least(3, 23),
            _ => false,
        }
    }

    /// Whether this release reads Calico's resources from `projectcalico.org/v3` CRDs where
    /// the cluster serves no `crd.projectcalico.org`: libcalico-go's discovery of the group
    /// (`libcalico-go/lib/backend/k8s/discovery.go`) is in v3.32.0 and not in v3.31.7.
    pub fn reads_v3_crds(&self) -> bool {
        self.at_least(3, 32)
    }

    /// Whether this release's components can be told the API group: `CALICO_API_GROUP`
    /// (`libcalico-go/lib/apiconfig/apiconfig.go` `CalicoAPIGroup`, read by calico-node,
    /// Felix and confd through `LoadClientConfig`) and the CNI config's `calico_api_group`
    /// (`cni-plugin/pkg/types/types.go` `NetConf.CalicoAPIGroup`) are in v3.32.0, in neither
    /// file at v3.31.7.
    pub fn reads_api_group_pin(&self) -> bool {
        self.at_least(3, 32)
    }

    fn at_least(&self, major: u32, minor: u32) -> bool {
        (self.major, self.minor) >= (major, minor)
    }

    /// What this release's binary is called and which start-up flags it knows.
    pub fn features(&self) -> Features {
        Features {
            binary: if self.at_least(3, 33) {
                Binary::Calico
            } else {
                Binary::CalicoNode
            },
            complete_startup: self.at_least(3, 31),
        }
    }
}

impl PartialOrd for CalicoVersion {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for CalicoVersion {
    /// By number, a release after its pre-releases (`is_none`), pre-releases by their suffix.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        fn key(v: &CalicoVersion) -> (u32, u32, u32, bool, Option<&str>) {
            (v.major, v.minor, v.patch, v.pre.is_none(), v.pre.as_deref())
        }
        key(self).cmp(&key(other))
    }
}

impl fmt::Display for CalicoVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if let Some(p) = &self.pre {
            write!(f, "-{p}")?;
        }
        Ok(())
    }
}

/// How a release's binary is run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Features {
    pub binary: Binary,
    /// `-complete-startup` / `--complete-startup` after startup (v3.31 and later).
    pub complete_startup: bool,
}

impl Features {
    /// What is known from the binary's name alone, for an install of unknown version: only
    /// `calico.exe` (v3.33 and later) tells; `calico-node.exe` is run with the flags every
    /// release knows, because a flag a release lacks makes it exit with "flag provided but
    /// not defined".
    pub fn of_binary(binary: Binary) -> Self {
        match binary {
            Binary::Calico => CalicoVersion::new(3, 33, 0).features(),
            Binary::CalicoNode => Features {
                binary,
                complete_startup: false,
            },
        }
    }
}

/// What Calico's build links into every binary (`lib.Makefile`: `LDFLAGS=-X
/// github.com/projectcalico/calico/pkg/buildinfo.Version=...`), followed by `vX.Y.Z`.
const BUILDINFO_MARKER: &[u8] = b"buildinfo.Version=";

/// The version recorded in a Calico binary's Go build information, read in blocks (the
/// binary is about 70 MB and is never held whole); `None` when it records none.
pub fn read_binary_version(mut f: impl Read) -> std::io::Result<Option<CalicoVersion>> {
    let mut buf = vec![0u8; 1 << 16];
    let mut scan = VersionScan::default();
    while !scan.decided() {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        scan.feed(&buf[..n]);
    }
    Ok(scan.finish())
}

/// The longest version text read after the marker (`v3.31.2-0.dev-123-gabcdef012345` is 31).
const VERSION_TEXT_CAP: usize = 64;

/// Finds the version in a binary's bytes block by block, in the pass that writes them; the
/// first marker decides (`None` if the text after it is not a version).
#[derive(Debug, Default)]
pub struct VersionScan {
    state: Scan,
}

#[derive(Debug)]
enum Scan {
    /// No marker yet: the last bytes seen, where a marker split across two blocks begins.
    Searching(Vec<u8>),
    /// After the marker: the version text so far.
    Reading(Vec<u8>),
    Decided(Option<CalicoVersion>),
}

impl Default for Scan {
    fn default() -> Self {
        Self::Searching(Vec::new())
    }
}

fn is_version_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'+')
}

impl VersionScan {
    /// Whether the version is known (or known to be unreadable): more bytes change nothing.
    pub fn decided(&self) -> bool {
        matches!(self.state, Scan::Decided(_))
    }

    /// The next block of the binary.
    pub fn feed(&mut self, block: &[u8]) {
        match &mut self.state {
            Scan::Decided(_) => {}
            Scan::Searching(tail) => {
                tail.extend_from_slice(block);
                match memchr::memmem::find(tail, BUILDINFO_MARKER) {
                    Some(at) => {
                        let rest = tail.split_off(at + BUILDINFO_MARKER.len());
                        self.state = Scan::Reading(Vec::new());
                        self.feed(&rest);
                    }
                    // Keep what a marker split by the next block could begin with.
                    None => {
                        let cut = tail.len().saturating_sub(BUILDINFO_MARKER.len() - 1);
                        tail.drain(..cut);
                    }
                }
            }
            Scan::Reading(text) => {
                let end = block.iter().position(|&b| !is_version_byte(b));
                text.extend_from_slice(&block[..end.unwrap_or(block.len())]);
                if end.is_some() || text.len() > VERSION_TEXT_CAP {
                    self.state = Scan::Decided(Self::parse(text));
                }
            }
        }
    }

    fn parse(text: &[u8]) -> Option<CalicoVersion> {
        if text.len() > VERSION_TEXT_CAP {
            return None;
        }
        std::str::from_utf8(text)
            .ok()
            .and_then(|t| CalicoVersion::parse(t).ok())
    }

    /// The version, once the whole binary was fed (a version may run to its last byte).
    pub fn finish(self) -> Option<CalicoVersion> {
        match self.state {
            Scan::Decided(v) => v,
            Scan::Reading(text) => Self::parse(&text),
            Scan::Searching(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    /// The `cniVersion` of each release's own template, read with `git show
    /// TAG:node/windows-packaging/CalicoWindows/cni.conf.template` in projectcalico/calico;
    /// 3.32.2 and 3.33 from the commits that changed it (d335386428 on release-v3.32,
    /// 556b0a0c94 on master), which no tag held yet when this was read.
    const RELEASE_TEMPLATES: &[(&str, &str)] = &[
        ("3.29.7", "0.3.1"),
        ("3.30.7", "0.3.1"),
        ("3.31.6", "0.3.1"),
        ("3.31.7", "1.0.0"),
        ("3.32.0", "0.3.1"),
        ("3.32.1", "0.3.1"),
        ("3.32.2", "1.0.0"),
        ("3.33.0", "1.0.0"),
    ];

    #[test]
    fn each_release_renders_its_own_templates_cni_version() {
        for (release, cni) in RELEASE_TEMPLATES {
            let v = CalicoVersion::parse(release).expect("version");
            assert_eq!(v.cni_version(), *cni, "{release}");
        }
    }

    use super::*;

    fn v(s: &str) -> CalicoVersion {
        CalicoVersion::parse(s).expect("version")
    }

    /// The version bytes already in memory record.
    fn version_in(bytes: &[u8]) -> Option<CalicoVersion> {
        let mut scan = VersionScan::default();
        scan.feed(bytes);
        scan.finish()
    }

    /// `version.PluginSupports` in `cni-plugin/pkg/plugin/plugin.go`, read at each tag: v3.22.0
    /// "0.1.0".."0.3.1"; v3.23.0, v3.24.0, v3.26.0 and every later one read (to v3.32.1) add
    /// "0.4.0" and "1.0.0".
    #[test]
    fn the_plugin_accepts_the_spec_versions_of_its_release() {
        assert!(v("3.22.5").accepts_cni_spec("0.3.1"));
        assert!(!v("3.22.5").accepts_cni_spec("1.0.0"));
        assert!(!v("3.22.5").accepts_cni_spec("0.4.0"));
        for r in ["3.23.0", "3.26.0", "3.32.1"] {
            assert!(v(r).accepts_cni_spec("1.0.0"), "{r}");
            assert!(v(r).accepts_cni_spec("0.4.0"), "{r}");
        }
        assert!(!v("3.32.1").accepts_cni_spec("2.0.0"));
    }

    #[test]
    fn versions_parse_with_or_without_v_and_order_pre_releases_first() {
        assert_eq!(v("v3.31.0"), CalicoVersion::new(3, 31, 0));
        assert_eq!(v("3.31"), CalicoVersion::new(3, 31, 0));
        assert_eq!(v("3.33.0-0.dev").to_string(), "3.33.0-0.dev");
        assert!(v("3.33.0-0.dev") < v("3.33.0"));
        assert!(v("3.30.9") < v("3.31.0"));
        assert!(v("3.9.0") < v("3.10.0"));
        for bad in [
            "",
            "3",
            "three.1",
            "3.31.0.1",
            "3..1",
            "3.31.0-",
            "3.31.x",
            "3.31.0-a b",
        ] {
            assert!(CalicoVersion::parse(bad).is_err(), "{bad:?}");
        }
        // On the command line a release has all three numbers.
        assert!(CalicoVersion::parse("3.30").is_ok());
        let e = CalicoVersion::parse_release("3.30").expect_err("two numbers");
        assert!(e.contains("like 3.30.0"), "{e}");
        for good in ["3.30.2", "v3.31.0", "3.34.0-0.dev"] {
            assert!(CalicoVersion::parse_release(good).is_ok(), "{good}");
        }
    }

    /// v3.27.3, v3.30.2, v3.31.0 and v3.33.0 are tests/lifecycle/releases.rs
    /// `each_release_is_started_with_its_own_command_lines`.
    #[test]
    fn each_release_gets_the_flags_its_service_scripts_use() {
        let f = |s: &str| v(s).features();
        // v3.32: still calico-node.exe, with -complete-startup.
        assert!(f("3.32.1").complete_startup && f("3.32.1").binary == Binary::CalicoNode);
        assert_eq!(f("3.34.0-0.dev").binary, Binary::Calico);
        // Unknown version: only the flags every calico-node.exe knows.
        assert!(!Features::of_binary(Binary::CalicoNode).complete_startup);
        assert!(Features::of_binary(Binary::Calico).complete_startup);
    }

    #[test]
    fn the_scan_finds_the_version_wherever_the_blocks_split_it() {
        let bytes =
            b"MZ..buildinfo.Versio buildinfo.Version=v3.31.2-0.dev \"-X buildinfo.Version=v1.0.0";
        let scan = |block: usize| {
            let mut s = VersionScan::default();
            for chunk in bytes.chunks(block) {
                s.feed(chunk);
            }
            s.finish()
        };
        for block in 1..=bytes.len() {
            assert_eq!(scan(block), Some(v("3.31.2-0.dev")), "blocks of {block}");
        }
        // The first marker decides, even when its text is no version.
        assert_eq!(
            version_in(b"buildinfo.Version=(devel) buildinfo.Version=v3.1.0"),
            None
        );
        // A version may end the file; a marker may be the last thing in it.
        assert_eq!(version_in(b"buildinfo.Version=v3.28.1"), Some(v("3.28.1")));
        assert_eq!(version_in(b"xx buildinfo.Version="), None);
        // Version text without an end is not read without bound.
        let mut long = b"buildinfo.Version=v3.1.0-".to_vec();
        long.extend(std::iter::repeat_n(b'a', 1 << 20));
        let mut s = VersionScan::default();
        for chunk in long.chunks(1 << 16) {
            s.feed(chunk);
        }
        assert!(s.decided());
        assert_eq!(s.finish(), None);
    }
}
