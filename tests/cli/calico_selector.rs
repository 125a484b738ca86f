//! Calico's own selector tests (tests/calico-selector/, verbatim from v3.31.7) run against our
//! parser, evaluator, canonical form and Kubernetes selector conversion. The Go tables are read
//! from the copied source by a small reader of Go literals, not transcribed by hand.

use std::collections::BTreeMap;

use calicoctl_win::selector::{self, Kind};

#[derive(Debug, Clone)]
enum Go {
    Str(String),
    Ident(String),
    Call(String, Vec<Go>),
    Composite(String, Vec<(Option<Go>, Go)>),
}

impl Go {
    fn str(&self) -> &str {
        match self {
            Go::Str(s) => s,
            other => panic!("expected a string, got {other:?}"),
        }
    }
    fn elements(&self) -> &[(Option<Go>, Go)] {
        match self {
            Go::Composite(_ty, e) => e,
            other => panic!("expected a composite literal, got {other:?}"),
        }
    }
    /// The type a composite literal names (`[]map[string]string`, empty when untyped).
    fn type_name(&self) -> &str {
        match self {
            Go::Composite(ty, _) => ty,
            _ => "",
        }
    }
    fn is_nil(&self) -> bool {
        matches!(self, Go::Ident(i) if i == "nil")
    }
    /// A `map[string]string{..}` (or an untyped `{..}` of key: value) as a map.
    fn string_map(&self) -> BTreeMap<String, String> {
        self.elements()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_ref().expect("a key").str().to_owned(),
                    v.str().to_owned(),
                )
            })
            .collect()
    }
    /// The element keyed `field` of a struct literal.
    fn field(&self, field: &str) -> Option<&Go> {
        self.elements().iter().find_map(|(k, v)| match k {
            Some(Go::Ident(name)) if name == field => Some(v),
            _ => None,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Lex {
    Str(String),
    Word(String),
    Punct(char),
}

fn lex(src: &str) -> Vec<Lex> {
    let b = src.as_bytes();
    let (mut i, mut out) = (0, Vec::new());
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if src[i..].starts_with("//") {
            i += src[i..].find('\n').unwrap_or(src.len() - i);
        } else if c == b'`' {
            let end = i + 1 + src[i + 1..].find('`').expect("closed raw string");
            out.push(Lex::Str(src[i + 1..end].to_owned()));
            i = end + 1;
        } else if c == b'"' {
            let mut s = String::new();
            i += 1;
            while b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                    s.push(match b[i] {
                        b'n' => '\n',
                        b't' => '\t',
                        other => other as char,
                    });
                    i += 1;
                } else {
                    let ch = src[i..].chars().next().expect("a character");
                    s.push(ch);
                    i += ch.len_utf8();
                }
            }
            out.push(Lex::Str(s));
            i += 1;
        } else if c.is_ascii_alphanumeric() || c == b'_' || c == b'.' {
            let end = (i..b.len())
                .find(|&j| !(b[j].is_ascii_alphanumeric() || b[j] == b'_' || b[j] == b'.'))
                .unwrap_or(b.len());
            out.push(Lex::Word(src[i..end].to_owned()));
            i = end;
        } else {
            out.push(Lex::Punct(c as char));
            i += 1;
        }
    }
    out
}

struct Reader {
    toks: Vec<Lex>,
    at: usize,
}

impl Reader {
    fn peek(&self) -> &Lex {
        &self.toks[self.at]
    }
    fn punct(&mut self, c: char) -> bool {
        if self.peek() == &Lex::Punct(c) {
            self.at += 1;
            true
        } else {
            false
        }
    }
    fn value(&mut self) -> Go {
        let mut v = self.primary();
        while self.punct('+') {
            let rhs = self.primary();
            v = Go::Str(format!("{}{}", v.str(), rhs.str()));
        }
        v
    }
    fn primary(&mut self) -> Go {
        if let Lex::Str(s) = self.peek().clone() {
            self.at += 1;
            return Go::Str(s);
        }
        let mut ty = String::new();
        loop {
            match self.peek().clone() {
                // An anonymous struct type: its field list is part of the type, not a literal.
                Lex::Word(w) if w == "struct" => {
                    ty.push_str("struct");
                    self.at += 1;
                    let mut depth = 0;
                    loop {
                        match self.peek() {
                            Lex::Punct('{') => depth += 1,
                            Lex::Punct('}') => depth -= 1,
                            _ => {}
                        }
                        self.at += 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    continue;
                }
                Lex::Word(w) => ty.push_str(&w),
                Lex::Punct(c @ ('[' | ']' | '&' | '*')) => ty.push(c),
                _ => break,
            }
            self.at += 1;
        }
        if self.punct('{') {
            return Go::Composite(ty, self.elements('}'));
        }
        if self.punct('(') {
            let args = self.elements(')').into_iter().map(|(_, v)| v).collect();
            return call(ty, args);
        }
        Go::Ident(ty)
    }
    fn elements(&mut self, close: char) -> Vec<(Option<Go>, Go)> {
        let mut out = Vec::new();
        while !self.punct(close) {
            let first = self.value();
            let element = if self.punct(':') {
                (Some(first), self.value())
            } else {
                (None, first)
            };
            out.push(element);
            self.punct(',');
        }
        out
    }
}

fn call(name: String, args: Vec<Go>) -> Go {
    if name == "strings.Repeat" {
        let Go::Ident(n) = &args[1] else {
            panic!("a count")
        };
        return Go::Str(args[0].str().repeat(n.parse().expect("a number")));
    }
    Go::Call(name, args)
}

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/tests/calico-selector/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    fs_err::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The value assigned by `var <name> = ...` in a Go file.
fn go_var(src: &str, name: &str) -> Go {
    let start = src
        .find(&format!("var {name} "))
        .unwrap_or_else(|| panic!("var {name}"));
    let eq = start + src[start..].find('=').expect("=");
    Reader {
        toks: lex(&src[eq + 1..]),
        at: 0,
    }
    .value()
}

#[test]
fn calicos_selector_table_matches_and_refuses_as_calico_does() {
    let src = fixture("parser_test.go");
    let tests = go_var(&src, "selectorTests");
    assert_eq!(tests.elements().len(), 58, "the whole table was read");
    let mut checked = 0;
    for (_, t) in tests.elements() {
        let e = t.elements();
        let text = e[0].1.str();
        let sel = selector::parse(text).unwrap_or_else(|err| panic!("{text:?}: {err}"));
        let canonical = selector::parse(&sel.to_string()).expect("the canonical form parses");
        for (labels, want) in [(&e[1].1, true), (&e[2].1, false)] {
            for (_, l) in labels.elements() {
                assert!(matches!(l.type_name(), "" | "map[string]string"), "{l:?}");
                let labels = l.string_map();
                assert_eq!(sel.matches(&labels), want, "{text:?} against {labels:?}");
                assert_eq!(canonical.matches(&labels), want, "{sel} against {labels:?}");
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 98, "every labels map of the table was evaluated");

    let bad = go_var(&src, "badSelectors");
    assert_eq!(bad.elements().len(), 26);
    for (_, s) in bad.elements() {
        assert!(
            selector::parse(s.str()).is_err(),
            "{:?} must be refused",
            s.str()
        );
    }
}

#[test]
fn calicos_canonical_forms_are_ours() {
    let table = go_var(&fixture("parser_test.go"), "canonicalisationTests");
    assert!(table.elements().len() > 10);
    for (_, t) in table.elements() {
        let e = t.elements();
        let (input, expected) = (e[0].1.str(), e[1].1.str());
        let canonical = selector::parse(input).expect("parses").to_string();
        assert_eq!(canonical, expected, "{input:?}");
        let again = selector::parse(&canonical).expect("round trip").to_string();
        assert_eq!(again, canonical);
    }
}

fn kind_named(name: &str, value: Option<&Go>) -> Kind {
    let v = || value.expect("a value").str().to_owned();
    match name.trim_start_matches("tokenizer.Tok") {
        "Label" => Kind::Label(v()),
        "StringLiteral" => Kind::StringLiteral(v()),
        "LBrace" => Kind::LBrace,
        "RBrace" => Kind::RBrace,
        "Comma" => Kind::Comma,
        "Eq" => Kind::Eq,
        "Ne" => Kind::Ne,
        "In" => Kind::In,
        "Not" => Kind::Not,
        "NotIn" => Kind::NotIn,
        "Contains" => Kind::Contains,
        "StartsWith" => Kind::StartsWith,
        "EndsWith" => Kind::EndsWith,
        "All" => Kind::All,
        "Has" => Kind::Has(v()),
        "LParen" => Kind::LParen,
        "RParen" => Kind::RParen,
        "And" => Kind::And,
        "Or" => Kind::Or,
        "Global" => Kind::Global,
        "EOF" => Kind::Eof,
        other => panic!("unknown token kind {other}"),
    }
}

#[test]
fn calicos_tokenizer_table_tokenizes_as_calico_does() {
    let table = go_var(&fixture("tokenizer_test.go"), "tokenTests");
    assert!(table.elements().len() > 40);
    for (_, t) in table.elements() {
        let e = t.elements();
        let input = e[0].1.str();
        let got = selector::tokenize(input);
        if e[1].1.is_nil() {
            assert!(got.is_err(), "{input:?} must be refused, got {got:?}");
            continue;
        }
        let want: Vec<Kind> = e[1]
            .1
            .elements()
            .iter()
            .map(|(_, tok)| {
                let Some(Go::Ident(kind)) = tok.field("Kind") else {
                    panic!("{tok:?}")
                };
                kind_named(kind, tok.field("Value"))
            })
            .collect();
        let got: Vec<Kind> = got
            .unwrap_or_else(|err| panic!("{input:?}: {err}"))
            .into_iter()
            .map(|t| t.kind)
            .collect();
        assert_eq!(got, want, "{input:?}");
    }
}

fn label_selector(go: &Go) -> Option<serde_json::Value> {
    if go.is_nil() {
        return None;
    }
    let mut out = serde_json::Map::new();
    if let Some(m) = go.field("MatchLabels") {
        out.insert(
            "matchLabels".into(),
            serde_json::to_value(m.string_map()).unwrap(),
        );
    }
    if let Some(exprs) = go.field("MatchExpressions") {
        let list: Vec<_> = exprs
            .elements()
            .iter()
            .map(|(_, r)| {
                let Some(Go::Ident(op)) = r.field("Operator") else {
                    panic!("{r:?}")
                };
                let values: Vec<&str> = r
                    .field("Values")
                    .map(|v| v.elements().iter().map(|(_, s)| s.str()).collect())
                    .unwrap_or_default();
                serde_json::json!({
                    "key": r.field("Key").unwrap().str(),
                    "operator": op.trim_start_matches("metav1.LabelSelectorOp"),
                    "values": values,
                })
            })
            .collect();
        out.insert("matchExpressions".into(), list.into());
    }
    Some(out.into())
}

#[test]
fn calicos_kubernetes_selector_conversion_table_converts_as_calico_does() {
    let src = fixture("conversion_selector_table_test.go");
    let toks = lex(&src);
    let mut entries = 0;
    for start in (0..toks.len()).filter(|&i| toks[i] == Lex::Word("Entry".into())) {
        let mut r = Reader {
            toks: toks.clone(),
            at: start,
        };
        let Go::Call(name, args) = r.value() else {
            panic!("an Entry call")
        };
        assert_eq!(name, "Entry");
        let input = label_selector(&args[1]);
        let Go::Ident(kind) = &args[2] else {
            panic!("a selector type")
        };
        let converted = match kind.as_str() {
            "SelectorPod" => calicoctl_win::policy::k8s::pod_selector(input.as_ref()),
            "SelectorNamespace" => calicoctl_win::policy::k8s::namespace_selector(input.as_ref()),
            other => panic!("{other}"),
        }
        .expect("converts");
        assert_eq!(converted, args[3].str(), "{}", args[0].str());
        entries += 1;
    }
    assert!(entries >= 9, "{entries} entries read");
}
