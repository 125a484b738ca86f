//! A panic in a handler (a test's set-up the fake cannot apply, such as a `mergeOnto` of an
//! object that is not there) answered as a 500 that names the request and the panic, and
//! recorded once in `State::panics`. Without this, hyper drops the connection (the client
//! sees an unexplained EOF) and the state's lock, poisoned by the guard the handler held,
//! fails every later request and `FakeApi::lock` with a PoisonError that hides the message.

use super::State;
use super::serve::Reply;
use std::sync::{Arc, Mutex};

/// The handler's answer to `req`, or a 500 naming its panic.
pub async fn answer(req: hyper::Request<hyper::body::Incoming>, st: &Arc<Mutex<State>>) -> Reply {
    let asked = format!("{} {}", req.method(), req.uri().path());
    let state = st.clone();
    // Run as a task of its own, whose panic tokio catches and hands back as a JoinError.
    let done = tokio::spawn(async move { super::serve::handle(req, &state).await }).await;
    match done {
        Ok(reply) => reply,
        Err(e) => {
            let said = match e.try_into_panic() {
                Ok(p) => p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_else(|| "a panic with no message".to_owned()),
                Err(e) => e.to_string(),
            };
            let what = format!("the fake API server's handler panicked at {asked}: {said}");
            super::lock_state(st).panics.push(what.clone());
            super::serve::status(
                hyper::StatusCode::INTERNAL_SERVER_ERROR,
                "InternalError",
                &what,
            )
        }
    }
}
