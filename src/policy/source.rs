//! Where an object came from and what it is, checked, and why input cannot be used.

use serde_json::Value;

/// The longest object name (a DNS subdomain).
pub const NAME_CAP: usize = crate::k8s_name::SUBDOMAIN_MAX;

/// Input `lint policies` cannot use.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("{object}: {problem}")]
    Invalid { object: String, problem: String },
    /// What cannot be read, naming the file or directory.
    #[error("{0}")]
    Unreadable(String),
}

impl crate::error::Diagnose for PolicyError {
    fn diagnose(&self) -> Option<crate::error::Diagnosis> {
        use crate::error::{Diagnosis, Exit, Kind};
        match self {
            Self::Invalid { .. } => Diagnosis::new(
                Exit::Usage,
                Kind::InvalidInput,
                "fix the object named, or leave it out of --from-file (a cap is lint's own: the object may be one Calico accepts, but lint cannot judge it)",
            ),
            Self::Unreadable(_) => Diagnosis::new(
                Exit::Usage,
                Kind::InputUnreadable,
                "--from-file takes YAML or JSON files, or directories of them (*.yaml, *.yml, *.json)",
            ),
        }
    }
}

/// Where an object came from and what it is, for errors that name it.
#[derive(Debug, Clone)]
pub struct Source {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    pub origin: String,
}

impl Source {
    /// The identity of `object`, checked: a name of at most 253 characters of a DNS subdomain.
    pub fn of(
        object: &Value,
        api_version: &str,
        kind: &str,
        origin: &str,
    ) -> Result<Self, PolicyError> {
        let field = |k: &str| {
            object
                .get("metadata")
                .and_then(|m| m.get(k))
                .and_then(Value::as_str)
        };
        Self::new(api_version, kind, field("name"), field("namespace"), origin)
    }

    /// The identity from its parts, checked as `of` checks it.
    pub fn new(
        api_version: &str,
        kind: &str,
        name: Option<&str>,
        namespace: Option<&str>,
        origin: &str,
    ) -> Result<Self, PolicyError> {
        let src = Source {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
            namespace: namespace.map(str::to_owned),
            name: name.unwrap_or_default().to_owned(),
            origin: origin.to_owned(),
        };
        for (what, v) in [
            ("name", Some(&src.name)),
            ("namespace", src.namespace.as_ref()),
        ] {
            let Some(v) = v else { continue };
            if !crate::k8s_name::is_subdomain(v) {
                return Err(src.invalid(format!(
                    "metadata.{what} {:?} is not a DNS subdomain of at most {NAME_CAP} characters",
                    v.chars().take(80).collect::<String>()
                )));
            }
        }
        Ok(src)
    }

    pub fn invalid(&self, problem: impl Into<String>) -> PolicyError {
        let ns = self
            .namespace
            .as_deref()
            .map(|n| format!("{n}/"))
            .unwrap_or_default();
        PolicyError::Invalid {
            object: format!(
                "{} {ns}{} ({}, {})",
                self.kind, self.name, self.api_version, self.origin
            ),
            problem: problem.into(),
        }
    }
}
