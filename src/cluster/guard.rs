//! Every answer of the API server is bounded and checked before kube reads it: a body longer
//! than `BODY_CAP` is an error while it is read, and a successful answer that is not JSON (a
//! proxy's login page, a load balancer's text) is said as such, with its status, content type
//! and first bytes, not as a connection failure.

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::BodyExt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The most one answer of the API server may hold (docs/security.md): the largest the tool
/// reads is a list of one node's pods or of the cluster's IP pools.
pub const BODY_CAP: usize = 8 << 20;
/// How much of an answer that is not JSON is shown.
const SHOWN: usize = 200;

/// An answer that is not what an API server sends.
#[derive(Debug, thiserror::Error)]
#[error(
    "{what} was answered with {status} and content type {content_type}, not JSON: it begins {first:?}"
)]
pub struct NotJson {
    pub what: String,
    pub status: u16,
    pub content_type: String,
    /// The first bytes, lossily decoded; `{:?}` escapes them.
    pub first: String,
}

/// An answer longer than the cap.
#[derive(Debug, thiserror::Error)]
#[error("an answer of the API server is longer than {} MiB, the most calicoctl-win reads", .cap >> 20)]
pub struct TooLong {
    pub cap: usize,
}

/// The layer kube's client stack gets: answers capped at `BODY_CAP`.
#[derive(Clone, Copy)]
pub struct GuardLayer;

impl<S> tower_layer::Layer<S> for GuardLayer {
    type Service = Guard<S>;
    fn layer(&self, inner: S) -> Guard<S> {
        Guard { inner }
    }
}

#[derive(Clone)]
pub struct Guard<S> {
    inner: S,
}

/// An answer that ended before the length it announced.
#[derive(Debug, thiserror::Error)]
#[error("the answer was cut off after {got} of the {announced} bytes it announced ({cause})")]
pub struct Truncated {
    pub got: u64,
    pub announced: u64,
    pub cause: String,
}

/// A body read only up to the cap, whose errors say what went wrong with the answer.
pub struct Checked<B> {
    inner: B,
    read: u64,
    cap: u64,
    announced: Option<u64>,
}

impl<B> http_body::Body for Checked<B>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        let too_long =
            |cap: u64| Poll::Ready(Some(Err(Box::new(TooLong { cap: cap as usize }) as _)));
        if this.announced.is_some_and(|n| n > this.cap) {
            return too_long(this.cap);
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                this.read += frame.data_ref().map_or(0, |d| d.len() as u64);
                if this.read > this.cap {
                    return too_long(this.cap);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => {
                let e: BoxError = e.into();
                Poll::Ready(Some(Err(match this.announced {
                    Some(announced) if this.read < announced => Box::new(Truncated {
                        got: this.read,
                        announced,
                        cause: e.to_string(),
                    }),
                    _ => e,
                })))
            }
            other => other.map(|o| o.map(|r| r.map_err(Into::into))),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

fn is_json(content_type: &str) -> bool {
    let media = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    media == "application/json" || media.ends_with("+json")
}

/// A pod proxy path (`/api/v1/namespaces/NS/pods/NAME[:PORT]/proxy/...`): the answer is the
/// pod's, in whatever media type it writes (agnhost netexec's `/dial` writes JSON as Go's
/// `text/plain` sniffing names it), capped like any other.
fn is_pod_proxy(path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    matches!(
        parts.as_slice(),
        ["", "api", "v1", "namespaces", _, "pods", _, "proxy", ..]
    )
}

/// Up to `SHOWN` bytes of a body, as text with nothing hidden.
pub(crate) async fn first_bytes<B>(mut body: B) -> String
where
    B: http_body::Body<Data = Bytes> + Send + Unpin,
{
    // Frames are as large as one read of the connection (hyper's buffer), never the body.
    let mut out = Vec::new();
    while out.len() < SHOWN {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    out.extend_from_slice(&data);
                }
            }
            _ => break,
        }
    }
    out.truncate(SHOWN);
    String::from_utf8_lossy(&out).into_owned()
}

impl<S, ReqBody, B> tower_service::Service<Request<ReqBody>> for Guard<S>
where
    S: tower_service::Service<Request<ReqBody>, Response = Response<B>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    B: http_body::Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<Checked<B>>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<ReqBody>) -> Self::Future {
        let what = format!("{} {}", req.method(), req.uri().path());
        let proxied = is_pod_proxy(req.uri().path());
        let answer = self.inner.call(req);
        Box::pin(async move {
            let (parts, body) = answer.await.map_err(Into::into)?.into_parts();
            let content_type = parts
                .headers
                .get(http::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("none")
                .to_owned();
            // An error status is kube's to read (a Status, or the text of a 404 for an API
            // group the server does not have); a success must be JSON.
            if parts.status.is_success() && !is_json(&content_type) && !proxied {
                return Err(Box::new(NotJson {
                    what,
                    status: parts.status.as_u16(),
                    content_type,
                    first: first_bytes(body).await,
                }) as BoxError);
            }
            let announced = parts
                .headers
                .get(http::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse().ok());
            let checked = Checked {
                inner: body,
                read: 0,
                cap: BODY_CAP as u64,
                announced,
            };
            Ok(Response::from_parts(parts, checked))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// JSON by its media type; only a pod proxy's answer may be other than JSON.
    #[test]
    fn json_is_recognised_by_its_media_type_and_a_pod_proxy_by_its_path() {
        assert!(is_pod_proxy(
            "/api/v1/namespaces/n/pods/client-local:8080/proxy/dial"
        ));
        assert!(!is_pod_proxy("/api/v1/namespaces/n/pods/client-local"));
        assert!(!is_pod_proxy("/api/v1/namespaces/n/services/s:80/proxy/x"));
        assert!(!is_pod_proxy("/apis/x/v1/namespaces/n/pods/p/proxy/y"));
        for ok in [
            "application/json",
            "application/json; charset=utf-8",
            "application/merge-patch+json",
        ] {
            assert!(is_json(ok), "{ok}");
        }
        for not in ["text/html; charset=utf-8", "text/plain", "none", ""] {
            assert!(!is_json(not), "{not}");
        }
    }
}
