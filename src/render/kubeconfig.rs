//! The kubeconfig calico-node, felix, confd and the CNI plugin use: one cluster with the CA
//! embedded (never `insecure-skip-tls-verify`), one service-account token user, one context.

use serde_json::json;

/// Names in the file, as Calico's `calico-kube-config.template` has them.
const CLUSTER: &str = "kubernetes";
const USER: &str = "calico-windows";
const CONTEXT: &str = "calico-windows@kubernetes";

/// The kubeconfig text. `ca_pem` is the CA certificate(s) in PEM.
pub fn kubeconfig(server: &str, ca_pem: &str, token: &str, namespace: &str) -> String {
    use base64::Engine;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem.as_bytes());
    let doc = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CLUSTER, "cluster": {"server": server, "certificate-authority-data": ca}}],
        "users": [{"name": USER, "user": {"token": token}}],
        "contexts": [{"name": CONTEXT, "context": {"cluster": CLUSTER, "user": USER, "namespace": namespace}}],
        "current-context": CONTEXT,
    });
    // A JSON document is a YAML document; kubectl, client-go and kube read it alike, and
    // serde_json quotes every string, so no token or URL can break the syntax.
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}

/// The token of the current context's user in a kubeconfig's text, if it has one.
pub fn token_of(text: &str) -> Option<String> {
    let doc: serde_json::Value = serde_saphyr::from_str(text).ok()?;
    let context = doc["current-context"].as_str()?;
    let user = doc["contexts"]
        .as_array()?
        .iter()
        .find(|c| c["name"] == context)?["context"]["user"]
        .as_str()?
        .to_owned();
    doc["users"]
        .as_array()?
        .iter()
        .find(|u| u["name"] == user.as_str())?["user"]["token"]
        .as_str()
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kubeconfig_embeds_the_ca_and_reads_back_its_token() {
        let text = kubeconfig(
            "https://10.0.0.1:6443",
            "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
            "tok.en.x",
            "calico-system",
        );
        assert!(!text.contains("insecure"));
        assert!(text.contains("certificate-authority-data"));
        assert_eq!(token_of(&text).as_deref(), Some("tok.en.x"));
        // A YAML kubeconfig as kubectl writes it reads the same.
        let yaml = "apiVersion: v1\nclusters: []\ncontexts:\n- name: a\n  context:\n    user: u\ncurrent-context: a\nusers:\n- name: u\n  user:\n    token: abc\n";
        assert_eq!(token_of(yaml).as_deref(), Some("abc"));
        assert_eq!(token_of("not: [a, kubeconfig"), None);
    }
}
