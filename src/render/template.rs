//! Fills `__NAME__` placeholders in a JSON template, aware of JSON string context:
//! a value inside a string literal is escaped, a whole-string placeholder of a number or a
//! boolean becomes that JSON value, and a bare list becomes comma-separated JSON strings.

use std::collections::BTreeMap;

/// A value for one placeholder.
#[derive(Clone, Debug, PartialEq)]
pub enum Fill {
    Text(String),
    Number(u64),
    Bool(bool),
    /// Rendered bare as `"a","b"` (Calico's `[__DNS_NAME_SERVERS__]`), inside a string as `a,b`.
    List(Vec<String>),
    /// The setting behind this placeholder has no value; using the placeholder is an error.
    Missing(&'static str),
}

/// Why a template could not be filled.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TemplateError {
    #[error("unknown placeholder(s) {}; known: {}", .unknown.join(", "), .known.join(", "))]
    Unknown {
        unknown: Vec<String>,
        known: Vec<String>,
    },
    #[error("placeholder __{name}__ needs {why}")]
    Missing { name: String, why: &'static str },
}

fn json_string(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

fn escaped(s: &str) -> String {
    let quoted = json_string(s);
    quoted[1..quoted.len() - 1].to_owned()
}

impl Fill {
    fn in_string(&self) -> String {
        match self {
            Fill::Text(s) => escaped(s),
            Fill::List(items) => escaped(&items.join(",")),
            _ => self.bare(),
        }
    }

    fn bare(&self) -> String {
        match self {
            Fill::Text(s) => json_string(s),
            Fill::Number(n) => n.to_string(),
            Fill::Bool(b) => b.to_string(),
            Fill::List(items) => items
                .iter()
                .map(|s| json_string(s))
                .collect::<Vec<_>>()
                .join(","),
            Fill::Missing(_) => String::new(),
        }
    }

    fn whole_string(&self) -> String {
        match self {
            Fill::Number(_) | Fill::Bool(_) => self.bare(),
            _ => format!("\"{}\"", self.in_string()),
        }
    }
}

/// A placeholder occurrence: byte range and whether it sits inside a JSON string.
struct Occurrence {
    start: usize,
    end: usize,
    name: String,
    /// Inside a string literal; `whole` when the literal is exactly `"__NAME__"`.
    in_string: bool,
    whole: bool,
}

fn scan(template: &str) -> Vec<Occurrence> {
    let b = template.as_bytes();
    let mut found = Vec::new();
    let mut in_string = false;
    let mut string_start = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' if in_string => {
                i += 2;
                continue;
            }
            b'"' => {
                in_string = !in_string;
                string_start = i;
            }
            b'_' if b.get(i + 1) == Some(&b'_') => {
                if let Some(len) = placeholder_len(&b[i..]) {
                    let end = i + len;
                    let whole = in_string && string_start + 1 == i && b.get(end) == Some(&b'"');
                    found.push(Occurrence {
                        start: if whole { i - 1 } else { i },
                        end: if whole { end + 1 } else { end },
                        name: template[i + 2..end - 2].to_owned(),
                        in_string,
                        whole,
                    });
                    if whole {
                        in_string = false;
                        i = end + 1;
                    } else {
                        i = end;
                    }
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    found
}

/// Length of `__NAME__` at the start of `b` (NAME: A-Z, 0-9, _ ; starting with a letter).
fn placeholder_len(b: &[u8]) -> Option<usize> {
    if !b.starts_with(b"__") || !b.get(2)?.is_ascii_uppercase() {
        return None;
    }
    let mut j = 2;
    while j < b.len() {
        if b[j..].starts_with(b"__")
            && !b
                .get(j + 2)
                .is_some_and(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        {
            return Some(j + 2);
        }
        if !(b[j].is_ascii_uppercase() || b[j].is_ascii_digit() || b[j] == b'_') {
            return None;
        }
        j += 1;
    }
    None
}

/// Fills every placeholder. Unknown placeholders and placeholders without a value are errors.
pub fn fill(
    template: &str,
    values: &BTreeMap<&'static str, Fill>,
) -> Result<String, TemplateError> {
    let occurrences = scan(template);
    let mut unknown: Vec<String> = occurrences
        .iter()
        .filter(|o| !values.contains_key(o.name.as_str()))
        .map(|o| format!("__{}__", o.name))
        .collect();
    unknown.dedup();
    if !unknown.is_empty() {
        let known = values.keys().map(|k| format!("__{k}__")).collect();
        return Err(TemplateError::Unknown { unknown, known });
    }
    let mut out = String::with_capacity(template.len());
    let mut at = 0;
    for o in &occurrences {
        let value = &values[o.name.as_str()];
        if let Fill::Missing(why) = value {
            return Err(TemplateError::Missing {
                name: o.name.clone(),
                why,
            });
        }
        out.push_str(&template[at..o.start]);
        out.push_str(&match (o.whole, o.in_string) {
            (true, _) => value.whole_string(),
            (false, true) => value.in_string(),
            (false, false) => value.bare(),
        });
        at = o.end;
    }
    out.push_str(&template[at..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values() -> BTreeMap<&'static str, Fill> {
        BTreeMap::from([
            ("PATH", Fill::Text("C:\\Calico \"W\"".into())),
            ("VNI", Fill::Number(4096)),
            ("KUBECONFIG", Fill::Missing("a kubeconfig path")),
        ])
    }

    /// A bare number (`__VNI__`), a whole-string boolean (`"__DSR_SUPPORT__"`) and a bare list
    /// (`[__DNS_NAME_SERVERS__]`) are every golden's (tests/golden, Calico's own template).
    #[test]
    fn values_are_escaped_and_typed_by_context() {
        let t = r#"{"p": "__PATH__", "q": "x-__PATH__", "w": "__VNI__"}"#;
        let out = fill(t, &values()).expect("fills");
        let v: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
        assert_eq!(v["p"], "C:\\Calico \"W\"");
        assert_eq!(v["q"], "x-C:\\Calico \"W\"");
        assert_eq!(v["w"], 4096);
    }

    /// An unknown placeholder is named; one without a value is an error, not an empty string.
    #[test]
    fn unknown_and_valueless_placeholders_are_errors() {
        let err = fill(r#"{"a": "__NOPE__", "b": "__VNI__"}"#, &values()).unwrap_err();
        assert!(
            matches!(&err, TemplateError::Unknown { unknown, .. } if unknown == &vec!["__NOPE__".to_string()])
        );
        let err = fill(r#"{"k": "__KUBECONFIG__"}"#, &values()).unwrap_err();
        let why = "a kubeconfig path";
        let name = "KUBECONFIG".into();
        assert_eq!(err, TemplateError::Missing { name, why });
    }

    #[test]
    fn escaped_quotes_do_not_confuse_string_tracking() {
        let out = fill(r#"{"a": "say \"hi\" __VNI__", "b": __VNI__}"#, &values()).expect("fills");
        assert_eq!(out, r#"{"a": "say \"hi\" 4096", "b": 4096}"#);
    }
}
