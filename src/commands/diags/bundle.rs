//! The zip's members as they are gathered, before redaction: each as its name and bytes, and
//! what could not be collected.

/// The members of the zip, in the order written: name and contents.
#[derive(Default)]
pub(super) struct Bundle {
    pub(super) members: Vec<(String, Vec<u8>)>,
    /// What could not be collected, each with why.
    pub(super) problems: Vec<String>,
    /// The members that are a file's tail cut at a line's start (`Redactor::redact_tail`).
    pub(super) tails: std::collections::BTreeSet<String>,
}

impl Bundle {
    pub(super) fn json(&mut self, name: &str, v: &impl serde::Serialize) {
        self.members.push((name.to_owned(), pretty(v)));
    }

    /// A section's value, or its error kept as a problem and written in its place.
    pub(super) fn section(&mut self, name: &str, v: anyhow::Result<impl serde::Serialize>) {
        match v {
            Ok(v) => self.json(name, &v),
            Err(e) => {
                let error = format!("{e:#}");
                self.problems.push(format!("{name}: {error}"));
                self.json(name, &NotCollected { error });
            }
        }
    }
}

/// A member as indented JSON.
pub(super) fn pretty(v: &impl serde::Serialize) -> Vec<u8> {
    let text =
        serde_json::to_string_pretty(v).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    text.into_bytes()
}

/// A section that could not be collected, in its place in the zip.
#[derive(serde::Serialize)]
struct NotCollected {
    error: String,
}
