//! Merges the layers (flag > env > file > default) and parses each setting into its type,
//! collecting every problem instead of stopping at the first.

use super::layer::{Layer, Raw, Source, Sourced, split_list};
use super::problem::Problem;
use super::spec::{self, DefaultValue};
use super::types::Setting;
use std::collections::{BTreeMap, BTreeSet};

/// One effective setting as `config show` reports it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Shown {
    pub value: serde_json::Value,
    pub source: Source,
}

/// Reads typed settings out of the merged layers.
pub struct Resolver {
    merged: BTreeMap<&'static str, Sourced>,
    pub shown: BTreeMap<&'static str, Shown>,
    pub problems: Vec<Problem>,
    /// Keys whose value was rejected; cross-field checks that involve them are skipped.
    pub failed: BTreeSet<&'static str>,
}

/// A config.ps1 placeholder such as `<your service cidr>`, never a real value.
pub fn is_placeholder(s: &str) -> bool {
    s.starts_with('<') && s.ends_with('>')
}

impl Resolver {
    /// Layers in order of precedence, highest first; built-in defaults are added last.
    pub fn new(layers: Vec<Layer>) -> Self {
        let mut merged = BTreeMap::new();
        for layer in layers {
            for (k, v) in layer {
                merged.entry(k).or_insert(v);
            }
        }
        for s in spec::SETTINGS {
            let raw = match s.default {
                DefaultValue::Value(v) => Raw::Scalar(v.to_owned()),
                DefaultValue::List(v) => Raw::List(v.iter().map(|s| (*s).to_owned()).collect()),
                DefaultValue::Unset | DefaultValue::Derived(_) => continue,
            };
            merged.entry(s.key).or_insert(Sourced {
                raw,
                source: Source::Default,
            });
        }
        Self {
            merged,
            shown: BTreeMap::new(),
            problems: Vec::new(),
            failed: BTreeSet::new(),
        }
    }

    /// Records how `config show` reports `key`.
    fn show(&mut self, key: &'static str, value: serde_json::Value, source: Source) {
        self.shown.insert(key, Shown { value, source });
    }

    /// The source of a key's value, if it has one.
    pub fn source(&self, key: &str) -> Option<Source> {
        self.merged.get(key).map(|s| s.source.clone())
    }

    fn reject(&mut self, key: &'static str, value: &str, source: &Source, message: String) {
        self.failed.insert(key);
        self.problems.push(Problem::new(
            key,
            Some(value.to_owned()),
            Some(source.clone()),
            message,
        ));
    }

    fn parse_text<T: Setting>(
        &mut self,
        key: &'static str,
        text: &str,
        source: &Source,
    ) -> Option<T> {
        if is_placeholder(text) {
            self.reject(
                key,
                text,
                source,
                "is a config.ps1 placeholder, not a value; set the real value".into(),
            );
            return None;
        }
        match T::parse(text) {
            Ok(v) => Some(v),
            Err(why) => {
                self.reject(key, text, source, why);
                None
            }
        }
    }

    /// A single value; empty or unset is `None`.
    pub fn opt<T: Setting>(&mut self, key: &'static str) -> Option<T> {
        let Some(Sourced { raw, source }) = self.merged.get(key).cloned() else {
            self.show(key, serde_json::Value::Null, Source::Default);
            return None;
        };
        // Every layer gives a key the shape its table entry has (the file's reader refuses
        // another, `Problem::shape`): a scalar here.
        let text = raw.display();
        let value = (!text.is_empty())
            .then(|| self.parse_text::<T>(key, &text, &source))
            .flatten();
        let shown = value.as_ref().map_or(serde_json::Value::Null, T::shown);
        self.show(key, shown, source);
        value
    }

    /// A single required value whose default is the table's `Value`.
    pub fn req<T: Setting>(&mut self, key: &'static str) -> T {
        self.one(key, || builtin_default(key))
    }

    /// A single required value; `derived` supplies the default when the table says `Derived`.
    /// On a bad value the problem is recorded and the default stands in, so checking goes on.
    pub fn one<T: Setting>(&mut self, key: &'static str, derived: impl FnOnce() -> T) -> T {
        let given = self.merged.contains_key(key);
        let problems_before = self.problems.len();
        match self.opt::<T>(key) {
            Some(v) => v,
            None => {
                if given && self.problems.len() == problems_before {
                    let source = self.source(key).unwrap_or(Source::Default);
                    self.reject(key, "", &source, "must not be empty".into());
                }
                let fallback = derived();
                if !given {
                    self.show(key, fallback.shown(), Source::Default);
                }
                fallback
            }
        }
    }

    /// A list; each bad item is a problem of its own.
    pub fn list<T: Setting>(&mut self, key: &'static str) -> Vec<T> {
        let Some(Sourced { raw, source }) = self.merged.get(key).cloned() else {
            self.show(key, serde_json::json!([]), Source::Default);
            return Vec::new();
        };
        let items = match raw {
            Raw::List(items) => items,
            other => split_list(&other.display()),
        };
        let values: Vec<T> = items
            .iter()
            .filter_map(|t| self.parse_text::<T>(key, t, &source))
            .collect();
        let shown = values.iter().map(T::shown).collect();
        self.show(key, serde_json::Value::Array(shown), source);
        values
    }

    /// A mapping of names to values (extra environment).
    pub fn map(&mut self, key: &'static str) -> Vec<(String, String)> {
        let Some(Sourced { raw, source }) = self.merged.get(key).cloned() else {
            self.show(key, serde_json::json!({}), Source::Default);
            return Vec::new();
        };
        let Raw::Map(entries) = raw else {
            unreachable!("{key}: only the file and --set KEY.NAME give a mapping, as a mapping");
        };
        let shown = entries
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect();
        self.show(key, serde_json::Value::Object(shown), source);
        entries
    }

    /// Like `opt`, but a key that was never given takes the derived default; an explicit
    /// empty value stays `None` so a check can say why it is needed.
    pub fn opt_or<T: Setting>(
        &mut self,
        key: &'static str,
        derived: impl FnOnce() -> T,
    ) -> Option<T> {
        if self.merged.contains_key(key) {
            return self.opt(key);
        }
        let v = derived();
        self.show(key, v.shown(), Source::Default);
        Some(v)
    }
}

/// The built-in default of a key whose table entry is a `Value`: every such default parses
/// (`built_in_defaults_follow_the_quickstart`).
pub fn builtin_default<T: Setting>(key: &str) -> T {
    let text = match spec::find(key).map(|s| s.default) {
        Some(DefaultValue::Value(v)) => v,
        _ => "",
    };
    T::parse(text).unwrap_or_else(|e| panic!("built-in default of {key} does not parse: {e}"))
}
