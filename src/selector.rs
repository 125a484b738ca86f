//! Calico's selector language, as libcalico-go v3.31.7 reads it: the tokenizer
//! (`lib/selector/tokenizer/tokenizer.go`), the parser (`lib/selector/parser/parser.go`), the
//! evaluation of each node and the canonical form (`lib/selector/parser/ast.go`). Calico's own
//! test tables run against this module (tests/cli/calico_selector.rs). Unlike Calico, an error
//! says where in the selector it was found. A leaf: it uses nothing else of the crate.

use std::collections::BTreeSet;
use std::fmt;

/// The longest label Calico accepts (`tokenizer.MaxLabelLength`).
pub const MAX_LABEL_LENGTH: usize = 512;
/// The deepest parentheses accepted. Calico sets no limit (Go's stacks grow); ours bounds
/// the recursion of the parser, the evaluation and the canonical form, which a selector of
/// a few thousand `(` would otherwise overflow.
pub const MAX_NESTING: usize = 64;

/// One token, with the byte offset where it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub kind: Kind,
    pub at: usize,
}

/// The token kinds of Calico's tokenizer (`TokLabel` is `Label`, and so on).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Label(String),
    StringLiteral(String),
    LBrace,
    RBrace,
    Comma,
    Eq,
    Ne,
    In,
    Not,
    NotIn,
    Contains,
    StartsWith,
    EndsWith,
    All,
    Has(String),
    LParen,
    RParen,
    And,
    Or,
    Global,
    Eof,
}

/// A selector Calico would refuse: what is wrong and the byte offset where it was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} at position {at}")]
pub struct SelectorError {
    pub at: usize,
    pub message: String,
}

fn fail<T>(at: usize, message: impl Into<String>) -> Result<T, SelectorError> {
    Err(SelectorError {
        at,
        message: message.into(),
    })
}

fn identifier_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'/' | b'-')
}

fn skip_blanks(input: &[u8], mut at: usize) -> usize {
    while at < input.len() && matches!(input[at], b' ' | b'\t') {
        at += 1;
    }
    at
}

fn word_boundary(input: &[u8], at: usize) -> bool {
    at >= input.len() || !identifier_char(input[at])
}

/// `words` at `at`, blanks allowed between them ("not in" and "notin" alike), followed by a
/// word boundary; the offset after the last word.
fn cut_words(input: &[u8], at: usize, words: &[&str]) -> Option<usize> {
    if let [word] = words {
        // cutPrefixCheckBreak: the boundary right after the word.
        let end = at + word.len();
        return (input[at..].starts_with(word.as_bytes()) && word_boundary(input, end))
            .then_some(end);
    }
    let mut i = at;
    for word in words {
        if !input[i..].starts_with(word.as_bytes()) {
            return None;
        }
        i = skip_blanks(input, i + word.len());
    }
    // cutMultiWordPrefixCheckBreak checks the boundary after the trimmed remainder.
    word_boundary(input, i).then_some(i)
}

fn cut_identifier(input: &[u8], at: usize) -> Result<(String, usize), SelectorError> {
    let end = (at..input.len())
        .find(|&i| !identifier_char(input[i]))
        .unwrap_or(input.len());
    if end == at {
        return fail(at, "expected identifier");
    }
    if end - at > MAX_LABEL_LENGTH {
        return fail(
            at,
            format!("label longer than {MAX_LABEL_LENGTH} characters"),
        );
    }
    Ok((String::from_utf8_lossy(&input[at..end]).into_owned(), end))
}

/// The tokens of `selector`, ending with `Eof`, as Calico's `tokenizer.Tokenize` gives them.
pub fn tokenize(selector: &str) -> Result<Vec<Token>, SelectorError> {
    let input = selector.as_bytes();
    let mut tokens: Vec<Token> = Vec::new();
    let mut at = 0;
    let mut depth = 0usize;
    loop {
        at = skip_blanks(input, at);
        if at >= input.len() {
            tokens.push(Token {
                kind: Kind::Eof,
                at,
            });
            return Ok(tokens);
        }
        let after_label = matches!(
            tokens.last(),
            Some(Token {
                kind: Kind::Label(_),
                ..
            })
        );
        let (kind, next) = next_token(input, at, after_label)?;
        match kind {
            Kind::LParen => depth += 1,
            Kind::RParen => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > MAX_NESTING {
            return fail(at, format!("parentheses nested deeper than {MAX_NESTING}"));
        }
        tokens.push(Token { kind, at });
        at = next;
    }
}

fn next_token(input: &[u8], at: usize, after_label: bool) -> Result<(Kind, usize), SelectorError> {
    let rest = &input[at..];
    let two = |s: &str, kind: Kind, wanted: &str| {
        if rest.starts_with(s.as_bytes()) {
            Ok((kind, at + 2))
        } else {
            fail(at, format!("expected {wanted}"))
        }
    };
    Ok(match input[at] {
        b'(' => (Kind::LParen, at + 1),
        b')' => (Kind::RParen, at + 1),
        b'{' => (Kind::LBrace, at + 1),
        b'}' => (Kind::RBrace, at + 1),
        b',' => (Kind::Comma, at + 1),
        quote @ (b'"' | b'\'') => {
            let Some(len) = rest[1..].iter().position(|&c| c == quote) else {
                return fail(at, "unterminated string");
            };
            let value = String::from_utf8_lossy(&rest[1..1 + len]).into_owned();
            (Kind::StringLiteral(value), at + len + 2)
        }
        b'=' => two("==", Kind::Eq, "==")?,
        b'!' if rest.starts_with(b"!=") => (Kind::Ne, at + 2),
        b'!' => (Kind::Not, at + 1),
        b'&' => two("&&", Kind::And, "&&")?,
        b'|' => two("||", Kind::Or, "||")?,
        _ if after_label => operator(input, at)?,
        _ => function_or_label(input, at)?,
    })
}

fn operator(input: &[u8], at: usize) -> Result<(Kind, usize), SelectorError> {
    let spellings: [(&[&str], Kind); 5] = [
        (&["contains"], Kind::Contains),
        (&["starts", "with"], Kind::StartsWith),
        (&["ends", "with"], Kind::EndsWith),
        (&["not", "in"], Kind::NotIn),
        (&["in"], Kind::In),
    ];
    for (words, kind) in spellings {
        if let Some(next) = cut_words(input, at, words) {
            return Ok((kind, next));
        }
    }
    fail(
        at,
        "expected an operator after the label (==, !=, in, not in, contains, starts with, ends with)",
    )
}

fn function_or_label(input: &[u8], at: usize) -> Result<(Kind, usize), SelectorError> {
    let rest = &input[at..];
    let closing = |i: usize, name: &str| {
        let i = skip_blanks(input, i);
        if input.get(i) == Some(&b')') {
            Ok(i + 1)
        } else {
            fail(i, format!("no closing ')' after {name}("))
        }
    };
    if rest.starts_with(b"has(") {
        let start = skip_blanks(input, at + 4);
        let (label, end) = cut_identifier(input, start)?;
        return Ok((Kind::Has(label), closing(end, "has")?));
    }
    if rest.starts_with(b"all(") {
        return Ok((Kind::All, closing(at + 4, "all")?));
    }
    if rest.starts_with(b"global(") {
        return Ok((Kind::Global, closing(at + 7, "global")?));
    }
    let (label, end) = cut_identifier(input, at)?;
    Ok((Kind::Label(label), end))
}

/// A parsed selector.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Node {
    All,
    Global,
    Has(String),
    Eq(String, String),
    Ne(String, String),
    Contains(String, String),
    StartsWith(String, String),
    EndsWith(String, String),
    In(String, BTreeSet<String>),
    NotIn(String, BTreeSet<String>),
    Not(Box<Node>),
    And(Vec<Node>),
    Or(Vec<Node>),
}

/// Where a selector's labels come from.
pub trait Labels {
    fn label(&self, key: &str) -> Option<&str>;
}

impl Labels for std::collections::BTreeMap<String, String> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

/// Parses `selector` as Calico's `parser.Parse` does; an empty selector is `all()`.
pub fn parse(selector: &str) -> Result<Node, SelectorError> {
    let tokens = tokenize(selector)?;
    if tokens[0].kind == Kind::Eof {
        return Ok(Node::All);
    }
    let (node, rest) = or_expression(&tokens)?;
    if rest.len() != 1 {
        return fail(rest[0].at, "unexpected content at the end of the selector");
    }
    Ok(node)
}

type Parsed<'t> = Result<(Node, &'t [Token]), SelectorError>;

/// Operands of `operand` separated by `op`, as one node (`join` of them when there are two or
/// more).
fn chain<'t>(
    tokens: &'t [Token],
    op: Kind,
    operand: fn(&'t [Token]) -> Parsed<'t>,
    join: fn(Vec<Node>) -> Node,
) -> Parsed<'t> {
    let (first, mut rest) = operand(tokens)?;
    let mut nodes = vec![first];
    while rest[0].kind == op {
        let (next, after) = operand(&rest[1..])?;
        nodes.push(next);
        rest = after;
    }
    let node = if nodes.len() == 1 {
        nodes.remove(0)
    } else {
        join(nodes)
    };
    Ok((node, rest))
}

fn or_expression(tokens: &[Token]) -> Parsed<'_> {
    chain(tokens, Kind::Or, and_expression, Node::Or)
}

fn and_expression(tokens: &[Token]) -> Parsed<'_> {
    chain(tokens, Kind::And, operation, Node::And)
}

fn operation(mut tokens: &[Token]) -> Parsed<'_> {
    let mut negated = false;
    while tokens[0].kind == Kind::Not {
        negated = !negated;
        tokens = &tokens[1..];
    }
    let (node, rest) = match &tokens[0].kind {
        Kind::Has(label) => (Node::Has(label.clone()), &tokens[1..]),
        Kind::All => (Node::All, &tokens[1..]),
        Kind::Global => (Node::Global, &tokens[1..]),
        Kind::Label(label) => comparison(label, tokens)?,
        Kind::LParen => {
            let (inner, rest) = or_expression(&tokens[1..])?;
            if rest[0].kind != Kind::RParen {
                return fail(rest[0].at, "expected )");
            }
            (inner, &rest[1..])
        }
        Kind::Eof => return fail(tokens[0].at, "unexpected end of the selector"),
        other => return fail(tokens[0].at, format!("unexpected {}", describe(other))),
    };
    Ok((
        match (negated, node) {
            // `!(!x)` is `x`. Calico's parser keeps both negations here, and its String() then
            // prints `!!x`, which it parses back as `x` (it collapses leading `!`s): so the
            // canonical form would not parse back to itself. The meaning is the same.
            (true, Node::Not(inner)) => *inner,
            (true, node) => Node::Not(Box::new(node)),
            (false, node) => node,
        },
        rest,
    ))
}

fn comparison<'t>(label: &str, tokens: &'t [Token]) -> Parsed<'t> {
    if tokens.len() < 3 {
        return fail(
            tokens[1].at,
            "unexpected end of the selector looking for an operator",
        );
    }
    let (op, operand) = (&tokens[1], &tokens[2]);
    let value = || match &operand.kind {
        Kind::StringLiteral(v) => Ok(v.clone()),
        _ => fail(operand.at, "expected a quoted string"),
    };
    let l = label.to_owned();
    let node = match op.kind {
        Kind::Eq => Node::Eq(l, value()?),
        Kind::Ne => Node::Ne(l, value()?),
        Kind::Contains => Node::Contains(l, value()?),
        Kind::StartsWith => Node::StartsWith(l, value()?),
        Kind::EndsWith => Node::EndsWith(l, value()?),
        Kind::In | Kind::NotIn => return set(l, op.kind == Kind::In, tokens),
        _ => {
            return fail(
                op.at,
                format!("expected an operator, not {}", describe(&op.kind)),
            );
        }
    };
    Ok((node, &tokens[3..]))
}

fn set(label: String, is_in: bool, tokens: &[Token]) -> Parsed<'_> {
    if tokens[2].kind != Kind::LBrace {
        return fail(tokens[2].at, "expected a set literal: {\"a\", \"b\"}");
    }
    let mut rest = &tokens[3..];
    let mut values = BTreeSet::new();
    // Calico's loop: a string, then a comma or the end; so a trailing comma is accepted.
    while let Kind::StringLiteral(v) = &rest[0].kind {
        values.insert(v.clone());
        rest = &rest[1..];
        if rest[0].kind != Kind::Comma {
            break;
        }
        rest = &rest[1..];
    }
    if rest[0].kind != Kind::RBrace {
        return fail(rest[0].at, "expected }");
    }
    let node = if is_in {
        Node::In(label, values)
    } else {
        Node::NotIn(label, values)
    };
    Ok((node, &rest[1..]))
}

fn describe(kind: &Kind) -> String {
    match kind {
        Kind::Label(l) => format!("label {l:?}"),
        Kind::StringLiteral(s) => format!("string {s:?}"),
        Kind::Eof => "end of the selector".to_owned(),
        other => format!("{other:?}"),
    }
}

impl Node {
    /// Whether an endpoint with `labels` is selected (Calico's `Evaluate`).
    pub fn matches(&self, labels: &dyn Labels) -> bool {
        match self {
            Node::All | Node::Global => true,
            Node::Has(l) => labels.label(l).is_some(),
            Node::Eq(l, v) => labels.label(l) == Some(v),
            Node::Ne(l, v) => labels.label(l) != Some(v),
            Node::Contains(l, v) => labels.label(l).is_some_and(|x| x.contains(v.as_str())),
            Node::StartsWith(l, v) => labels.label(l).is_some_and(|x| x.starts_with(v.as_str())),
            Node::EndsWith(l, v) => labels.label(l).is_some_and(|x| x.ends_with(v.as_str())),
            Node::In(l, set) => labels.label(l).is_some_and(|x| set.contains(x)),
            Node::NotIn(l, set) => labels.label(l).is_none_or(|x| !set.contains(x)),
            Node::Not(n) => !n.matches(labels),
            Node::And(ns) => ns.iter().all(|n| n.matches(labels)),
            Node::Or(ns) => ns.iter().any(|n| n.matches(labels)),
        }
    }

    /// Whether `global()` appears anywhere in the selector.
    pub fn uses_global(&self) -> bool {
        match self {
            Node::Global => true,
            Node::Not(n) => n.uses_global(),
            Node::And(ns) | Node::Or(ns) => ns.iter().any(Node::uses_global),
            _ => false,
        }
    }

    /// The selector with `prefix` before every label name (Calico's `PrefixVisitor`).
    pub fn prefixed(&self, prefix: &str) -> Node {
        let p = |l: &String| format!("{prefix}{l}");
        match self {
            Node::All => Node::All,
            Node::Global => Node::Global,
            Node::Has(l) => Node::Has(p(l)),
            Node::Eq(l, v) => Node::Eq(p(l), v.clone()),
            Node::Ne(l, v) => Node::Ne(p(l), v.clone()),
            Node::Contains(l, v) => Node::Contains(p(l), v.clone()),
            Node::StartsWith(l, v) => Node::StartsWith(p(l), v.clone()),
            Node::EndsWith(l, v) => Node::EndsWith(p(l), v.clone()),
            Node::In(l, s) => Node::In(p(l), s.clone()),
            Node::NotIn(l, s) => Node::NotIn(p(l), s.clone()),
            Node::Not(n) => Node::Not(Box::new(n.prefixed(prefix))),
            Node::And(ns) => Node::And(ns.iter().map(|n| n.prefixed(prefix)).collect()),
            Node::Or(ns) => Node::Or(ns.iter().map(|n| n.prefixed(prefix)).collect()),
        }
    }

    /// The selector with every `all()` and `global()` replaced, as Calico's update processors
    /// replace them in the selector's text (`strings.Replace(sel, "all()", ...)`).
    pub fn replacing(&self, all: &Node, global: &Node) -> Node {
        let r = |n: &Node| n.replacing(all, global);
        match self {
            Node::All => all.clone(),
            Node::Global => global.clone(),
            Node::Not(n) => Node::Not(Box::new(r(n))),
            Node::And(ns) => Node::And(ns.iter().map(r).collect()),
            Node::Or(ns) => Node::Or(ns.iter().map(r).collect()),
            other => other.clone(),
        }
    }
}

fn quoted(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    let q = if s.contains('"') { '\'' } else { '"' };
    write!(f, "{q}{s}{q}")
}

fn joined_by(f: &mut fmt::Formatter<'_>, nodes: &[Node], op: &str) -> fmt::Result {
    f.write_str("(")?;
    for (i, n) in nodes.iter().enumerate() {
        if i > 0 {
            f.write_str(op)?;
        }
        write!(f, "{n}")?;
    }
    f.write_str(")")
}

/// Calico's canonical form (`Selector.String()`).
impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let labelled = |f: &mut fmt::Formatter<'_>, l: &str, op: &str, v: &str| {
            write!(f, "{l}{op}")?;
            quoted(f, v)
        };
        let set = |f: &mut fmt::Formatter<'_>, l: &str, op: &str, s: &BTreeSet<String>| {
            write!(f, "{l} {op} {{")?;
            for (i, v) in s.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                quoted(f, v)?;
            }
            f.write_str("}")
        };
        match self {
            Node::All => f.write_str("all()"),
            Node::Global => f.write_str("global()"),
            Node::Has(l) => write!(f, "has({l})"),
            Node::Eq(l, v) => labelled(f, l, " == ", v),
            Node::Ne(l, v) => labelled(f, l, " != ", v),
            Node::Contains(l, v) => labelled(f, l, " contains ", v),
            Node::StartsWith(l, v) => labelled(f, l, " starts with ", v),
            Node::EndsWith(l, v) => labelled(f, l, " ends with ", v),
            Node::In(l, s) => set(f, l, "in", s),
            Node::NotIn(l, s) => set(f, l, "not in", s),
            Node::Not(n) => write!(f, "!{n}"),
            Node::And(ns) => joined_by(f, ns, " && "),
            Node::Or(ns) => joined_by(f, ns, " || "),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the fuzz target: a negation of a parenthesised negation printed as `!!x`, which
    /// parses back as `x`.
    #[test]
    fn a_negated_negation_in_parentheses_has_a_canonical_form_that_parses_back_to_itself() {
        let sel = parse("!( !ha not in {'y', \"0x\"} )").expect("parse");
        let canonical = sel.to_string();
        assert_eq!(canonical, "ha not in {\"0x\", \"y\"}");
        assert_eq!(parse(&canonical).expect("again").to_string(), canonical);
        let labels: std::collections::BTreeMap<String, String> =
            [("ha".to_owned(), "y".to_owned())].into();
        assert!(!sel.matches(&labels));
        assert!(parse("!(!has(a))").expect("parse") == parse("has(a)").expect("parse"));
    }

    #[test]
    fn an_error_names_the_position_where_it_was_found() {
        let e = parse(r#"role == "web" && tier = "x""#).unwrap_err();
        assert_eq!(e.at, 22, "{e}");
        let e = parse(r#"role == "web" && (a == "b""#).unwrap_err();
        assert_eq!((e.at, e.message.as_str()), (26, "expected )"));
        let e = parse(r#"a in {"x", b}"#).unwrap_err();
        assert_eq!(e.at, 11);
        // Parentheses nested past the limit are refused, not a stack overflow.
        let ok = format!(
            "{}a == 'b'{}",
            "(".repeat(MAX_NESTING),
            ")".repeat(MAX_NESTING)
        );
        assert!(parse(&ok).expect("nesting at the limit parses").matches(
            &std::collections::BTreeMap::from([("a".to_owned(), "b".to_owned())])
        ));
        let deep = format!("{}a == 'b'", "(".repeat(100_000));
        let e = parse(&deep).unwrap_err();
        assert_eq!(e.at, MAX_NESTING, "{e}");
    }

    #[test]
    fn a_namespace_selector_is_prefixed_and_all_means_any_namespace() {
        let sel = parse("all() || team == 'a'")
            .expect("a valid selector")
            .prefixed("pcns.")
            .replacing(
                &Node::Has("projectcalico.org/namespace".into()),
                &Node::Global,
            );
        assert_eq!(
            sel.to_string(),
            r#"(has(projectcalico.org/namespace) || pcns.team == "a")"#
        );
    }
}
