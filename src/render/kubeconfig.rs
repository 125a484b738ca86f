//! The kubeconfig calico-node, felix, confd and the CNI plugin use: one cluster with the CA
//! embedded (never `insecure-skip-tls-verify`), one service-account token user, one context.

use kube::config::{
    AuthInfo, Cluster, Context, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext,
};

/// Names in the file, as Calico's `calico-kube-config.template` has them.
const CLUSTER: &str = "kubernetes";
const USER: &str = "calico-windows";
const CONTEXT: &str = "calico-windows@kubernetes";

/// Where calico-node's token lives: beside its kubeconfig, which names it (`tokenFile`), read
/// again every minute (client-go `transport/token_source.go`, `NewCachedFileTokenSource`), so
/// a renewed token reaches the components without a restart.
pub fn token_path(kubeconfig: &str) -> String {
    format!("{kubeconfig}.token")
}

/// The kubeconfig text, its user's token in `token_file`. `ca_pem` is the CA certificate(s)
/// in PEM.
pub fn kubeconfig(server: &str, ca_pem: &str, token_file: &str, namespace: &str) -> String {
    let user = AuthInfo {
        token_file: Some(token_file.to_owned()),
        ..AuthInfo::default()
    };
    with_user(server, ca_pem, user, namespace)
}

/// A kubeconfig that carries its token inline: for a short-lived credential handed to another
/// machine whole (the installer's), not for calico-node's, which CalicoNode renews in its file.
pub fn kubeconfig_with_token(server: &str, ca_pem: &str, token: &str, namespace: &str) -> String {
    let user = AuthInfo {
        token: Some(secrecy::SecretString::from(token.to_owned())),
        ..AuthInfo::default()
    };
    with_user(server, ca_pem, user, namespace)
}

/// A kubeconfig of `server` with its CA embedded, `user`'s credential and `namespace`.
fn with_user(server: &str, ca_pem: &str, user: AuthInfo, namespace: &str) -> String {
    use base64::Engine;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem.as_bytes());
    let cluster = Cluster {
        server: Some(server.into()),
        certificate_authority_data: Some(ca),
        ..Cluster::default()
    };
    text_of(&document(cluster, user, Some(namespace)))
}

/// A kubeconfig as text: JSON, which is YAML too. kubectl, client-go and kube read it alike,
/// and every string is quoted, so no token or URL can break the syntax.
fn text_of(doc: &impl serde::Serialize) -> String {
    let mut text = serde_json::to_string_pretty(doc).unwrap_or_default();
    text.push('\n');
    text
}

/// The kubeconfig `text` with its current user's credential replaced by `token_file`, the
/// rest (server, CA, namespace) as it was: how a kept kubeconfig with an inline token moves
/// to a renewable one. `None` when it is not a kubeconfig with a current user.
pub fn with_token_file(text: &str, token_file: &str) -> Option<String> {
    let (mut doc, at) = current_user(text)?;
    doc["users"][at]["user"] = serde_json::json!({ "tokenFile": token_file });
    Some(text_of(&doc))
}

/// A kubeconfig of one cluster, one user and the context joining them, current.
pub fn document(cluster: Cluster, user: AuthInfo, namespace: Option<&str>) -> Kubeconfig {
    Kubeconfig {
        api_version: Some("v1".into()),
        kind: Some("Config".into()),
        clusters: vec![NamedCluster {
            name: CLUSTER.into(),
            cluster: Some(cluster),
            ..NamedCluster::default()
        }],
        auth_infos: vec![NamedAuthInfo {
            name: USER.into(),
            auth_info: Some(user),
            ..NamedAuthInfo::default()
        }],
        contexts: vec![NamedContext {
            name: CONTEXT.into(),
            context: Some(Context {
                cluster: CLUSTER.into(),
                user: Some(USER.into()),
                namespace: namespace.map(str::to_owned),
                ..Context::default()
            }),
            ..NamedContext::default()
        }],
        current_context: Some(CONTEXT.into()),
        ..Kubeconfig::default()
    }
}

/// The current context of a kubeconfig's text.
fn current_context(text: &str) -> Option<(serde_json::Value, serde_json::Value)> {
    let doc: serde_json::Value = serde_saphyr::from_str(text).ok()?;
    let name = doc["current-context"].as_str()?;
    let context = doc["contexts"]
        .as_array()?
        .iter()
        .find(|c| c["name"] == name)?["context"]
        .clone();
    Some((doc, context))
}

/// The namespace of the current context, if it names one.
pub fn namespace_of(text: &str) -> Option<String> {
    let (_, context) = current_context(text)?;
    context["namespace"]
        .as_str()
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
}

/// A kubeconfig's text as a document, and where its current context's user is in `users`.
fn current_user(text: &str) -> Option<(serde_json::Value, usize)> {
    let (doc, context) = current_context(text)?;
    let user = context["user"].as_str()?;
    let at = doc["users"]
        .as_array()?
        .iter()
        .position(|u| u["name"] == user)?;
    Some((doc, at))
}

/// Where the current context's user keeps its token: inline (`token`), in a file it names
/// (`tokenFile`), or both. No `Debug`: `inline` is a secret.
pub struct TokenSource {
    pub inline: Option<String>,
    pub file: Option<String>,
}

/// Where the current context's user in a kubeconfig's text keeps its token, from one parse of
/// the text; `None` when it has neither (an empty `token` or `tokenFile` counts as none).
pub fn token_source(text: &str) -> Option<TokenSource> {
    let (doc, at) = current_user(text)?;
    let field = |name: &str| {
        doc["users"][at]["user"][name]
            .as_str()
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    let source = TokenSource {
        inline: field("token"),
        file: field("tokenFile"),
    };
    (source.inline.is_some() || source.file.is_some()).then_some(source)
}

/// The token of the current context's user in a kubeconfig's text, if it has one inline.
pub fn token_of(text: &str) -> Option<String> {
    token_source(text)?.inline
}

/// The file the current context's user reads its token from (`tokenFile`), if it names one.
pub fn token_file_of(text: &str) -> Option<String> {
    token_source(text)?.file
}

/// Whether a kubeconfig's text reads its token from `token_path(kubeconfig)`, compared as
/// Windows compares paths (`/` as `\`, letters in any case).
pub fn names_token_path(text: &str, kubeconfig: &str) -> bool {
    let norm = |p: &str| p.replace('/', "\\").to_ascii_lowercase();
    token_file_of(text).is_some_and(|f| norm(&f) == norm(&token_path(kubeconfig)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// keep-token keeps a node whose config spelled the install root otherwise at install.
    #[test]
    fn the_token_file_is_named_as_windows_compares_paths() {
        let ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
        let at = |file: &str| kubeconfig("https://10.0.0.1:6443", ca, file, "calico-system");
        let ours = r"C:\CalicoWindows\calico-kube-config";
        for (file, named) in [
            (r"C:\CalicoWindows\calico-kube-config.token", true),
            (r"c:\calicowindows\calico-kube-config.token", true),
            ("c:/CalicoWindows/calico-kube-config.token", true),
            (r"C:\Other\calico-kube-config.token", false),
        ] {
            assert_eq!(names_token_path(&at(file), ours), named, "{file}");
        }
        let inline = at(r"C:\x").replace("tokenFile", "token");
        assert!(!names_token_path(&inline, ours));
    }

    #[test]
    fn the_kubeconfig_embeds_the_ca_and_reads_back_its_token() {
        let text = kubeconfig(
            "https://10.0.0.1:6443",
            "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
            r"C:\CalicoWindows\calico-kube-config.token",
            "calico-system",
        );
        assert!(!text.contains("insecure"));
        assert_eq!(namespace_of(&text).as_deref(), Some("calico-system"));
        assert!(text.contains("certificate-authority-data"));
        assert_eq!(token_of(&text), None);
        assert_eq!(
            token_file_of(&text).as_deref(),
            Some(r"C:\CalicoWindows\calico-kube-config.token")
        );
        // A YAML kubeconfig as kubectl writes it reads the same.
        let yaml = "apiVersion: v1\nclusters: []\ncontexts:\n- name: a\n  context:\n    user: u\ncurrent-context: a\nusers:\n- name: u\n  user:\n    token: abc\n";
        assert_eq!(token_of(yaml).as_deref(), Some("abc"));
        assert_eq!(token_of("not: [a, kubeconfig"), None);
        // An inline token moves to the file; the server and namespace stay.
        let moved = with_token_file(yaml, r"C:\x.token").expect("a kubeconfig");
        assert_eq!(token_of(&moved), None);
        assert_eq!(token_file_of(&moved).as_deref(), Some(r"C:\x.token"));
        assert!(!moved.contains("abc"));
        assert_eq!(with_token_file("not: [a, kubeconfig", "x"), None);
        // The current user's token or its file, not another user's.
        let doc = |user: &str| {
            format!(
                "contexts:\n- name: a\n  context:\n    user: u\ncurrent-context: a\nusers:\n- name: other\n  user:\n    token: not-this\n- name: u\n  user:\n{user}"
            )
        };
        // Both kept, and neither, are asserted by credentials.rs
        // `the_token_files_token_goes_first_and_the_inline_one_is_the_fallback`.
        let inline = |text: &str| token_source(text).and_then(|s| s.inline);
        let file = |text: &str| token_source(text).and_then(|s| s.file);
        assert_eq!(inline(&doc("    token: abc\n")).as_deref(), Some("abc"));
        assert_eq!(file(&doc("    token: abc\n")), None);
        // An empty tokenFile is none.
        assert!(token_source(&doc("    tokenFile: ''\n")).is_none());
    }
}
