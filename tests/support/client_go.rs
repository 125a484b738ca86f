//! How client-go reads a kubeconfig's `tokenFile`, for showing that a token written over the
//! file reaches Felix, confd and the CNI plugin without a restart. Modelled on kubernetes/
//! client-go v0.33.0 `transport/token_source.go`: `NewCachedFileTokenSource` reads the file
//! and keeps the token for `period` (a minute) less `leeway` (10 s); `tokenSourceTransport`
//! resets a token older than a request that got 401 (`ResetTokenOlderThan`), so the next
//! request reads the file again; a file that cannot be read keeps the cached token.

use std::path::PathBuf;
use std::time::Duration;

const PERIOD: Duration = Duration::from_secs(60);
const LEEWAY: Duration = Duration::from_secs(10);

/// One client's token source, on a clock the test moves (seconds).
pub struct FileTokenSource {
    path: PathBuf,
    /// The cached token and when it was read.
    cached: Option<(String, u64)>,
    pub now: u64,
}

impl FileTokenSource {
    pub fn new(path: PathBuf) -> Self {
        Self {
            path,
            cached: None,
            now: 0,
        }
    }

    /// `cachingTokenSource.Token`: the cached token while `expiry - leeway` is after now,
    /// else the file read again (the cached one kept when it cannot be read).
    pub fn token(&mut self) -> Option<String> {
        if let Some((t, at)) = &self.cached
            && at + (PERIOD - LEEWAY).as_secs() > self.now
        {
            return Some(t.clone());
        }
        match fs_err::read_to_string(&self.path).map(|t| t.trim().to_owned()) {
            Ok(t) if !t.is_empty() => {
                self.cached = Some((t.clone(), self.now));
                Some(t)
            }
            _ => self.cached.as_ref().map(|(t, _)| t.clone()),
        }
    }

    /// A request: the token the server is sent, and whether it was accepted; a 401 resets the
    /// cached token (read before this request) as `tokenSourceTransport.RoundTrip` does.
    pub fn request(&mut self, accepts: impl Fn(&str) -> bool) -> (Option<String>, bool) {
        let token = self.token();
        let ok = token.as_deref().is_some_and(&accepts);
        if !ok {
            self.cached = None;
        }
        (token, ok)
    }
}
