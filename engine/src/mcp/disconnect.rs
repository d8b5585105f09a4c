//! A response-body drop guard for `/mcp`.
//!
//! In session mode rmcp does not cancel a tool call when the client hangs up
//! (only stateless mode does, in rmcp 3.9), so a departed agent's wait would go
//! on and could consume an instruction nobody reads. This layer puts a
//! [`ClientGone`] token into each request's extensions and cancels it when the
//! response body is dropped before it finished — which is what hyper does
//! when the connection closes.
//!
//! The same guard settles deliveries: a tool call that claimed an
//! instruction leaves a [`Carried`] settlement in the request's extensions,
//! run with `true` when the response body has been written to its end and
//! with `false` when it is dropped before (the connection broke, the server
//! stopped) — `sent` or `in_doubt` (`queue::delivery`).

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use crate::sync::MutexExt as _;
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio_util::sync::{CancellationToken, DropGuard};
use tower::{Layer, Service};

/// Cancelled when the client stops reading the response.
#[derive(Clone, Debug)]
pub struct ClientGone(pub CancellationToken);

/// What to do once the response is known to be written in full (`true`) or
/// cut off (`false`).
pub type Settle = Box<dyn FnOnce(bool) + Send>;

/// Where a tool call leaves the settlement of what its response carries.
#[derive(Clone, Default)]
pub struct Carried(Arc<Mutex<Option<Settle>>>);

impl Carried {
    /// The response carries a delivery: settle it when the body ends or is dropped.
    pub fn carry(&self, settle: Settle) {
        *self.0.lock_anyway() = Some(settle);
    }

    fn is_carrying(&self) -> bool {
        self.0.lock_anyway().is_some()
    }

    fn settle(&self, complete: bool) {
        let settle = self.0.lock_anyway().take();
        if let Some(settle) = settle {
            settle(complete);
        }
    }
}

impl std::fmt::Debug for Carried {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Carried")
    }
}

#[derive(Clone, Copy, Debug, Default)]
pub struct DisconnectGuardLayer;

impl<S> Layer<S> for DisconnectGuardLayer {
    type Service = DisconnectGuard<S>;
    fn layer(&self, inner: S) -> Self::Service {
        DisconnectGuard { inner }
    }
}

#[derive(Clone, Debug)]
pub struct DisconnectGuard<S> {
    inner: S,
}

impl<S, ReqBody, ResBody> Service<http::Request<ReqBody>> for DisconnectGuard<S>
where
    S: Service<http::Request<ReqBody>, Response = http::Response<ResBody>> + Send,
    S::Future: Send + 'static,
    ResBody: Body<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<axum::BoxError>,
{
    type Response = http::Response<axum::body::Body>;
    type Error = S::Error;
    type Future = Pin<Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: http::Request<ReqBody>) -> Self::Future {
        let token = CancellationToken::new();
        let carried = Carried::default();
        req.extensions_mut().insert(ClientGone(token.clone()));
        req.extensions_mut().insert(carried.clone());
        let fut = self.inner.call(req);
        Box::pin(async move {
            let response = fut.await?;
            Ok(response.map(|body| {
                let inner = axum::body::Body::new(body);
                axum::body::Body::new(GuardedBody {
                    inner,
                    guard: Some(token.drop_guard()),
                    carried,
                    handed_over: false,
                })
            }))
        })
    }
}

/// A body that cancels its token, and settles what it carries as cut off,
/// if dropped before the end of the stream.
///
/// The answer is the last event of a tool call's stream, but the stream
/// ends a moment after it (rmcp closes it when the call's task finishes),
/// and a client that has its answer may hang up in that moment. So the
/// delivery counts as written once hyper, having taken the event that
/// carries it, asks for more: it only asks when that event is in its write
/// buffer and the buffer has room, which for a large answer means most of
/// it went out to the socket. Dropped before that, it was cut off.
struct GuardedBody {
    inner: axum::body::Body,
    guard: Option<DropGuard>,
    carried: Carried,
    /// The event carrying the delivery was handed to hyper.
    handed_over: bool,
}

impl Drop for GuardedBody {
    fn drop(&mut self) {
        // After a normal end this finds nothing left to settle.
        self.carried.settle(false);
    }
}

impl Body for GuardedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        if this.handed_over {
            // Asked for more after the carrying event: it was taken in.
            this.carried.settle(true);
        }
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(None) => {
                // Finished normally: nobody went away, and what it carried was written out.
                if let Some(g) = this.guard.take() {
                    g.disarm();
                }
                this.carried.settle(true);
            }
            // An event (not a keep-alive comment) after the call settled what it carries: the answer.
            Poll::Ready(Some(Ok(frame))) if this.carried.is_carrying() => {
                if frame.data_ref().is_some_and(|d| !d.starts_with(b":")) {
                    this.handed_over = true;
                }
            }
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
