//! A problem found in the configuration: which key, which value, where it came from, what is allowed.

use super::layer::Source;
use std::fmt;

/// One thing wrong with the configuration.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Problem {
    /// The dotted key, when the problem concerns one setting.
    pub key: Option<String>,
    /// The offending value as given.
    pub value: Option<String>,
    /// Where the value came from (`file:12`, `env VXLAN_VNI`, ...).
    pub source: Option<Source>,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl Problem {
    pub fn new(
        key: &str,
        value: Option<String>,
        source: Option<Source>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            key: Some(key.to_owned()),
            value,
            source,
            message: message.into(),
        }
    }

    pub fn syntax(line: Option<u64>, message: String) -> Self {
        let message = message
            .strip_prefix("error: ")
            .map(str::to_owned)
            .unwrap_or(message);
        Self {
            key: None,
            value: None,
            source: line.map(Source::File),
            message: format!("not valid YAML: {message}"),
        }
    }

    /// A key no setting has (in the file or a `--set`), with the closest known one.
    pub fn unknown_key(path: &str, value: Option<String>, source: Source) -> Self {
        let hint = match super::spec::closest(path) {
            Some(k) => format!("unknown key; did you mean `{k}`? (see docs/configuration.md)"),
            None => "unknown key (see docs/configuration.md for every key)".to_owned(),
        };
        Self::new(path, value, Some(source), hint)
    }

    pub fn shape(key: &str, line: u64, expected: &str) -> Self {
        Self::new(
            key,
            None,
            Some(Source::File(line)),
            format!("expected {expected}"),
        )
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(key) = &self.key {
            f.write_str(key)?;
            if let Some(v) = &self.value {
                write!(f, " = {v:?}")?;
            }
        } else {
            f.write_str("config file")?;
        }
        if let Some(s) = &self.source {
            write!(f, " ({s})")?;
        }
        write!(f, ": {}", self.message)
    }
}
