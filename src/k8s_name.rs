//! Kubernetes' name grammar, once: what apimachinery's `pkg/util/validation/validation.go`
//! accepts as a DNS-1123 label, a DNS-1123 subdomain, a qualified name and a label value.
//! `NodeName` carries a node's name from the edge inward. A leaf: only `std` and serde.

/// `DNS1123LabelMaxLength`.
pub const LABEL_MAX: usize = 63;
/// `DNS1123SubdomainMaxLength`.
pub const SUBDOMAIN_MAX: usize = 253;
/// `qualifiedNameMaxLength`.
const QUALIFIED_NAME_MAX: usize = 63;

/// `dns1123LabelFmt`: `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 63 characters
/// (`IsDNS1123Label`).
pub fn is_label(s: &str) -> bool {
    s.len() <= LABEL_MAX && is_label_part(s)
}

/// `dns1123SubdomainFmt`: labels joined by '.', at most 253 characters in all
/// (`IsDNS1123Subdomain`).
pub fn is_subdomain(s: &str) -> bool {
    s.len() <= SUBDOMAIN_MAX && s.split('.').all(is_label_part)
}

/// A label inside a subdomain: the label grammar without its own length cap (apimachinery's
/// subdomain regexp caps only the whole).
fn is_label_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// `qualifiedNameFmt` without its prefix: `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, at most
/// 63 characters.
fn is_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= QUALIFIED_NAME_MAX
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || b"-_.".contains(c))
}

/// A label key (`IsQualifiedName`): an optional DNS-1123 subdomain prefix and '/', then a
/// name part.
pub fn is_qualified_name(s: &str) -> bool {
    match s.split_once('/') {
        Some((prefix, name)) => is_subdomain(prefix) && is_name_part(name),
        None => is_name_part(s),
    }
}

/// A label value (`IsValidLabelValue`): empty, or a name part.
pub fn is_label_value(s: &str) -> bool {
    s.is_empty() || is_name_part(s)
}

/// A Kubernetes node's name: a DNS-1123 subdomain (kubernetes/kubernetes
/// pkg/apis/core/validation/validation.go `ValidateNodeName`). Made once at the edge: `parse`
/// for what a user gives, `from_api` for the API server's. Serialized as the plain string.
#[derive(
    Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct NodeName(String);

impl NodeName {
    /// A name given from outside the API server: the config's `node.name`, `verify --node`,
    /// the `nodename` file calico-node writes, the services' `NODENAME`.
    pub fn parse(raw: &str) -> Result<Self, String> {
        if is_subdomain(raw) {
            Ok(Self(raw.to_owned()))
        } else {
            Err("allowed: a lower-case DNS-1123 name (a-z, 0-9, '-' and '.', at most 253 characters), equal to kubelet's node name".into())
        }
    }

    /// A name read from the API server (a Node's `metadata.name`, a pod's `spec.nodeName`),
    /// which validated it when the object was written.
    pub fn from_api(name: impl Into<String>) -> Self {
        Self(name.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Test fixtures' literal names (`"win-1".into()`).
#[cfg(test)]
impl From<&str> for NodeName {
    fn from(name: &str) -> Self {
        Self(name.to_owned())
    }
}

impl std::borrow::Borrow<str> for NodeName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<&NodeName> for String {
    fn from(n: &NodeName) -> String {
        n.0.clone()
    }
}

impl std::fmt::Display for NodeName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// apimachinery's own tables (`validation_test.go`: `TestIsDNS1123Label`,
    /// `TestIsDNS1123Subdomain`, `TestIsQualifiedName`, `TestIsValidLabelValue`), in part.
    #[test]
    fn the_grammar_is_apimachinerys() {
        // Each list's cases are split at '|'; a leading '|' gives the empty name.
        let cases = |list: &'static str| list.split('|');
        for good in cases("a|ab|abc|a1|a-1|a--1--2--b|0|01|1-2") {
            assert!(is_label(good), "{good}");
            assert!(is_subdomain(good), "{good}");
        }
        let long = "a".repeat(64);
        for bad in cases("|A|ABC|aBc|a.b|-1|1-|a_b|a b").chain([long.as_str()]) {
            assert!(!is_label(bad), "{bad:?}");
        }
        for good in cases("a.a|ab.b|a-1.b-2|0.a|a--1.b") {
            assert!(is_subdomain(good), "{good}");
        }
        let too_long = format!("{}.{}", "a".repeat(200), "b".repeat(60));
        for bad in cases("|A|a..b|.a|a.|a.-b|a-.b|a_b").chain([too_long.as_str()]) {
            assert!(!is_subdomain(bad), "{bad:?}");
        }
        let good = "simple|now-with-dashes|1-starts-with-num|1234|simple/simple|\
            now-with-dashes/simple|example.com/Uppercase_And.Dots|a.b/c_d";
        for good in cases(good) {
            assert!(is_qualified_name(good), "{good}");
        }
        let bad = "nospecialchars%^=@|cantendwithadash-|-cantstartwithadash-|only/one/slash|\
            Example.com/abc|example_com/abc|example.com/|/simple";
        for bad in cases(bad) {
            assert!(!is_qualified_name(bad), "{bad}");
        }
        for good in cases("|simple|now-with-dashes|1-starts-with-num|end-with-num-1") {
            assert!(is_label_value(good), "{good}");
        }
        let bad =
            "nospecialchars%^=@|Tama-nui-te-rā.is.Māori.sun|\\backslashes\\|-starts-with-dash";
        for bad in cases(bad) {
            assert!(!is_label_value(bad), "{bad}");
        }
    }
}
