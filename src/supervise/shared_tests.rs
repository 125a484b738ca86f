//! What the endpoint's tests share (`metrics_server`, `diags_server`, `diags_review`).

/// Requests the stop when dropped: a failed assertion stops the server too.
pub struct StopOnDrop<'a>(pub &'a crate::duration::Stop);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.request();
    }
}

/// A token shaped as a ServiceAccount token is (a JWT), whose payload says `sub`.
pub fn jwt(sub: &str) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let header = b64.encode(br#"{"alg":"RS256","kid":"k"}"#);
    let payload = b64.encode(format!(r#"{{"sub":"{sub}"}}"#));
    format!("{header}.{payload}.c2lnbmF0dXJl")
}
