//! Why rendering failed, with its exit code and hint.

use super::template;

/// A rendering failure; nothing is written when one occurs.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("cannot fill the CNI template {template}")]
    Template {
        template: String,
        #[source]
        source: template::TemplateError,
    },
    #[error("the CNI config rendered from {template} is not valid JSON: {message}")]
    NotJson { template: String, message: String },
    #[error("cni.conf_filename {0:?} is the name of another rendered file")]
    NameClash(String),
}

impl crate::error::Diagnose for RenderError {
    fn diagnose(&self) -> Option<crate::error::Diagnosis> {
        let hint = match self {
            Self::Template { .. } | Self::NotJson { .. } => {
                "check the template given in cni.template, or unset it to use the built-in template"
            }
            Self::NameClash(_) => "set cni.conf_filename to another name, like 10-calico.conf",
        };
        crate::error::Diagnosis::new(
            crate::error::Exit::Usage,
            crate::error::Kind::InvalidTemplate,
            hint,
        )
    }
}
