//! Reads `calico-windows.yaml` into a layer of raw values with their line numbers.
//! Keys are checked against the settings table here, so an unknown key is named with its line.

use super::layer::{Layer, Raw, Source, Sourced, split_list};
use super::problem::Problem;
use super::spec::{self, Kind};
use serde::Deserialize;
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

/// A YAML node as written. Floats keep no text of their own; see `scalar_text`.
#[derive(Debug)]
enum Node {
    Text(String),
    Float,
    Null,
    Seq(Vec<Spanned<Node>>),
    Map(Vec<(Spanned<String>, Spanned<Node>)>),
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct NodeVisitor;
        impl<'de> Visitor<'de> for NodeVisitor {
            type Value = Node;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a YAML value")
            }
            fn visit_str<E>(self, v: &str) -> Result<Node, E> {
                Ok(Node::Text(v.to_owned()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
                Ok(Node::Text(v.to_string()))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
                Ok(Node::Text(v.to_string()))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Node, E> {
                Ok(Node::Float)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
                Ok(Node::Text(v.to_string()))
            }
            fn visit_unit<E>(self) -> Result<Node, E> {
                Ok(Node::Null)
            }
            fn visit_none<E>(self) -> Result<Node, E> {
                Ok(Node::Null)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Node, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = a.next_element()? {
                    items.push(item);
                }
                Ok(Node::Seq(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Node, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = a.next_entry()? {
                    entries.push(entry);
                }
                Ok(Node::Map(entries))
            }
        }
        d.deserialize_any(NodeVisitor)
    }
}

/// Parses the file's text into the settings it gives and the problems found in it; a setting
/// with a problem is left out of the layer.
pub fn parse(text: &str) -> (Layer, Vec<Problem>) {
    // Repeated keys reach the reader, which names both lines (the library's own error only
    // advises its option).
    let mut options = serde_saphyr::Options::default();
    options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::PassThrough;
    let root: Spanned<Node> = match serde_saphyr::from_str_with_options(text, options) {
        Ok(root) => root,
        Err(e) => {
            let line = e.location().map(|l| l.line());
            // The library's own words advise its functions for several documents; the file
            // holds settings, one document.
            let mut inner = &e;
            while let serde_saphyr::Error::WithSnippet { error, .. } = inner {
                inner = error;
            }
            let text = if matches!(inner, serde_saphyr::Error::MultipleDocuments { .. }) {
                "one YAML document expected, and a second one (after a `---` line) is here: put every setting in one document".to_owned()
            } else {
                e.to_string()
            };
            return (Layer::new(), vec![Problem::syntax(line, text)]);
        }
    };
    let mut reader = Reader {
        text,
        layer: Layer::new(),
        problems: Vec::new(),
    };
    match root.value {
        Node::Null => {}
        Node::Map(entries) => reader.section("", &entries),
        _ => reader.problems.push(Problem::syntax(
            Some(root.referenced.line()),
            "the file must be a mapping of settings, like `backend: vxlan`".into(),
        )),
    }
    (reader.layer, reader.problems)
}

struct Reader<'a> {
    text: &'a str,
    layer: Layer,
    problems: Vec<Problem>,
}

impl Reader<'_> {
    fn section(&mut self, prefix: &str, entries: &[(Spanned<String>, Spanned<Node>)]) {
        let mut seen: std::collections::BTreeMap<&str, u64> = std::collections::BTreeMap::new();
        for (key, node) in entries {
            let line = key.referenced.line();
            let path = if prefix.is_empty() {
                key.value.clone()
            } else {
                format!("{prefix}.{}", key.value)
            };
            if let Some(first) = seen.insert(key.value.as_str(), line) {
                self.problems.push(Problem::new(
                    &path,
                    None,
                    Some(Source::File(line)),
                    format!(
                        "given twice, on line {first} and on line {line}: a YAML key may appear once in its mapping; keep the one you mean"
                    ),
                ));
                continue;
            }
            let section = prefix.is_empty() && spec::is_section(&path);
            match (spec::find(&path), &node.value) {
                (None, Node::Map(inner)) if section => self.section(&path, inner),
                (None, Node::Null) if section => {}
                (None, _) if section => self.problems.push(Problem::shape(
                    &path,
                    line,
                    "a mapping of settings; see docs/configuration.md",
                )),
                (None, _) => {
                    self.problems
                        .push(Problem::unknown_key(&path, None, Source::File(line)))
                }
                (Some(_), Node::Null) => {}
                (Some(setting), _) => match self.raw(setting.kind, node) {
                    Ok(raw) => {
                        self.layer.insert(
                            setting.key,
                            Sourced {
                                raw,
                                source: Source::File(line),
                            },
                        );
                    }
                    Err(expected) => {
                        self.problems
                            .push(Problem::shape(setting.key, line, expected))
                    }
                },
            }
        }
    }

    fn raw(&self, kind: Kind, node: &Spanned<Node>) -> Result<Raw, &'static str> {
        match (kind, &node.value) {
            (Kind::Scalar, Node::Text(_) | Node::Float) => Ok(Raw::Scalar(self.scalar_text(node)?)),
            (Kind::List, Node::Text(_) | Node::Float) => {
                Ok(Raw::List(split_list(&self.scalar_text(node)?)))
            }
            (Kind::List, Node::Seq(items)) => items
                .iter()
                .map(|item| self.scalar_text(item))
                .collect::<Result<_, _>>()
                .map(Raw::List),
            (Kind::Map, Node::Map(entries)) => entries
                .iter()
                .map(|(k, v)| Ok((k.value.clone(), self.scalar_text(v)?)))
                .collect::<Result<_, _>>()
                .map(Raw::Map),
            (Kind::Scalar, _) => Err("a single value"),
            (Kind::List, _) => Err("a list of values"),
            (Kind::Map, _) => Err("a mapping of NAME: value"),
        }
    }

    /// The text of a scalar. A plain scalar YAML reads as a float (`0E-20`) is taken verbatim
    /// from the source, so a MAC prefix or version never turns into a number.
    fn scalar_text(&self, node: &Spanned<Node>) -> Result<String, &'static str> {
        match &node.value {
            Node::Text(s) => Ok(s.clone()),
            Node::Null => Ok(String::new()),
            Node::Float => {
                let span = node.referenced.span();
                let start = span.byte_offset().ok_or("a value written as text")? as usize;
                let len = span.byte_len().ok_or("a value written as text")? as usize;
                self.text
                    .get(start..start + len)
                    .map(str::to_owned)
                    .ok_or("a value written as text")
            }
            Node::Seq(_) | Node::Map(_) => Err("a single value"),
        }
    }
}
