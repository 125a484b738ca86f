//! Raw setting values and where each came from, before they are parsed into types.

use std::collections::BTreeMap;
use std::fmt;

/// A setting's value as given, not yet parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Raw {
    Scalar(String),
    List(Vec<String>),
    Map(Vec<(String, String)>),
}

impl Raw {
    /// The value as one line of text, for error messages.
    pub fn display(&self) -> String {
        match self {
            Raw::Scalar(s) => s.clone(),
            Raw::List(v) => v.join(","),
            Raw::Map(m) => m
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(","),
        }
    }

    /// A value of `kind` from `--set` or the environment: a list comma-separated, a scalar
    /// without the blanks around it (no part of a value, as YAML drops them around a plain
    /// scalar).
    pub fn from_text(kind: super::spec::Kind, text: &str) -> Raw {
        match kind {
            super::spec::Kind::List => Raw::List(split_list(text)),
            _ => Raw::Scalar(text.trim().to_owned()),
        }
    }
}

/// The items of comma-separated text (as config.ps1 writes lists: `"10.96.0.10,10.96.0.11"`),
/// trimmed, empty items dropped.
pub fn split_list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Where a setting's value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// `--set KEY=VALUE` on the command line.
    Flag,
    /// An environment variable with the config.ps1 name.
    Env(&'static str),
    /// The config file, at this line.
    File(u64),
    /// Read from the Windows host (node name, container runtime, CNI directories).
    Host,
    /// Read from the cluster (backend, datastore, VNI, service CIDR, DNS, etcd endpoints).
    Cluster,
    /// The built-in default.
    Default,
}

/// Shown as its text (`file:12`, `env VXLAN_VNI`), in `config show` and in problems.
impl serde::Serialize for Source {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Flag => f.write_str("flag"),
            Source::Env(name) => write!(f, "env {name}"),
            Source::File(line) => write!(f, "file:{line}"),
            Source::Host => f.write_str("host"),
            Source::Cluster => f.write_str("cluster"),
            Source::Default => f.write_str("default"),
        }
    }
}

/// A raw value with its source.
#[derive(Clone, Debug)]
pub struct Sourced {
    pub raw: Raw,
    pub source: Source,
}

/// The settings one source gave, by dotted key.
pub type Layer = BTreeMap<&'static str, Sourced>;
