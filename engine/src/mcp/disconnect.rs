//! A response-body drop guard for `/mcp`.
//!
//! In session mode rmcp does not cancel a tool call when the client hangs up
//! (only stateless mode does, in rmcp 3.9), so a departed agent's wait would go
//! on and could consume an instruction nobody reads. This layer puts a
//! [`ClientGone`] token into each request's extensions and cancels it when the
//! response body is dropped before it finished — which is what hyper does
//! when the connection closes.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio_util::sync::{CancellationToken, DropGuard};
use tower::{Layer, Service};

/// Cancelled when the client stops reading the response.
#[derive(Clone, Debug)]
pub struct ClientGone(pub CancellationToken);

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
        req.extensions_mut().insert(ClientGone(token.clone()));
        let fut = self.inner.call(req);
        Box::pin(async move {
            let response = fut.await?;
            Ok(response.map(|body| {
                let inner = axum::body::Body::new(body);
                axum::body::Body::new(GuardedBody {
                    inner,
                    guard: Some(token.drop_guard()),
                })
            }))
        })
    }
}

/// A body that cancels its token if dropped before the end of the stream.
struct GuardedBody {
    inner: axum::body::Body,
    guard: Option<DropGuard>,
}

impl Body for GuardedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        if let Poll::Ready(None) = polled {
            // Finished normally: nobody went away.
            if let Some(g) = this.guard.take() {
                g.disarm();
            }
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
