//! The words and pieces the shapes of secrets are built of.

/// What replaces a secret.
pub const REDACTED: &str = "<redacted>";

/// The names of a value that is a secret, as a regex alternation: a name ending in one of
/// these (`token`, `FOO_TOKEN`, `DB_PASSWORD`, `FOO_API_KEY`, `client-key-data`) or holding
/// `secret` as a word (`AWS_SECRET_ACCESS_KEY`, `client_secret`, `--secret-file`). A name that
/// merely begins with one (`token_expires`, `secretName`, `passwordless`) is no secret's.
pub(super) const NAMES: &str = r"(?:token|password|passwd|passphrase|api[_-]?key|access[_-]?key|private[_-]?key|key-data|etcd[_-]?key|credentials?|secret(?:[_-][A-Za-z0-9_-]*)?)";

/// A value in `\"` (JSON inside a JSON string) after its opening `\"`, to its closing one: the
/// outer string's escapes (`\n`, `\\`), and the inner one's escapes escaped again (`\\\"`, a
/// quote in the value; `\\\\`, a backslash), a `'` among them.
pub(super) const ESCAPED: &str = r#"(?:[^"\\\r\n]|\\[^"\\\r\n]|\\\\(?:\\.|[^"\\\r\n]))+"#;

/// Comment lines after a flow list's `,` (YAML 1.2 6.6: a comment runs to its line's end).
pub(super) const FLOW_COMMENTS: &str = r"(?:#[^\r\n]*\r?\n\s*)*";

/// A value in `\\\"` (JSON in a JSON string in a JSON string) after its opening `\\\"`, to
/// its closing one: a quote in the value is `\\\\\\\"` (seven backslashes), a backslash's
/// run of four or more.
pub(super) const TWICE_ESCAPED: &str =
    r#"(?:[^"\\\r\n]|\\{1,2}[^"\\\r\n]|\\{4,}[^"\\\r\n]|\\{7}")+"#;
