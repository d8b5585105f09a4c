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
//! run with `true` once the event carrying the answer has been written to the
//! socket (`crate::written`) and with `false` when the body is dropped or the
//! connection ends before (the client went, the server stopped) — `sent` or
//! `in_doubt` (`queue::delivery`).

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use crate::sync::MutexExt as _;
use crate::written::Written;
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

    fn take(&self) -> Option<Settle> {
        self.0.lock_anyway().take()
    }

    fn settle(&self, complete: bool) {
        if let Some(settle) = self.take() {
            settle(complete);
        }
    }

    /// The answer was handed to hyper: settle it once it is on the socket,
    /// or at once where the connection cannot say (not served by
    /// `crate::server`, as in some tests).
    fn settle_when_written(&self, written: Option<&Written>) {
        match (self.take(), written) {
            (Some(settle), Some(written)) => written.after_flush(settle),
            (Some(settle), None) => settle(true),
            (None, _) => {}
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
        let written = req.extensions().get::<Written>().cloned();
        let fut = self.inner.call(req);
        Box::pin(async move {
            let response = fut.await?;
            Ok(response.map(|body| {
                let inner = axum::body::Body::new(body);
                axum::body::Body::new(GuardedBody {
                    inner,
                    guard: Some(token.drop_guard()),
                    carried,
                    written,
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
/// delivery is settled from the event that carries it, not from the end:
/// once that event is handed to hyper, the connection's [`Written`] handle
/// settles it at the next flush of the socket — when hyper's buffer,
/// answer included, has gone to the kernel — or as cut off if the
/// connection ends first. (hyper asks the body for more while the answer
/// may still sit in its buffer, so being asked is not enough: a kill at
/// that moment lost answers already marked `sent`.)
struct GuardedBody {
    inner: axum::body::Body,
    guard: Option<DropGuard>,
    carried: Carried,
    /// The connection's flush watch (absent when not served by `crate::server`).
    written: Option<Written>,
    /// Without a flush watch: the event carrying the delivery was handed to hyper.
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
            // No flush watch: asked for more after the carrying event, it was taken in.
            this.carried.settle(true);
        }
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(None) => {
                // Finished normally: nobody went away; what it carried goes out with the end.
                if let Some(g) = this.guard.take() {
                    g.disarm();
                }
                this.carried.settle_when_written(this.written.as_ref());
            }
            // An event (not a keep-alive comment) after the call settled what it carries: the answer.
            Poll::Ready(Some(Ok(frame))) if this.carried.is_carrying() => {
                if frame.data_ref().is_some_and(|d| !d.starts_with(b":")) {
                    match &this.written {
                        Some(written) => this.carried.settle_when_written(Some(written)),
                        None => this.handed_over = true,
                    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::written::Watched;
    use hyper_util::rt::TokioIo;
    use hyper_util::service::TowerToHyperService;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio::sync::{mpsc, Notify};

    /// A real hyper connection over an in-memory pipe of 8 KiB that carries a
    /// response whose answer event is 200 KB — more than the pipe holds, less
    /// than hyper's write buffer, so hyper takes it in whole and asks for the
    /// next frame while most of it has not been written. Returns the client's
    /// end, the settlement's outcome, and a signal that hyper asked for more.
    async fn serve_an_answer() -> (tokio::io::DuplexStream, mpsc::UnboundedReceiver<bool>, Arc<Notify>) {
        let (mut client, server) = tokio::io::duplex(8 * 1024);
        let (server, written) = Watched::new(server);
        let (settled, outcome) = mpsc::unbounded_channel();
        let asked_again = Arc::new(Notify::new());
        let asked = asked_again.clone();
        let app = DisconnectGuardLayer.layer(tower::service_fn(move |req: http::Request<hyper::body::Incoming>| {
            let (settled, asked) = (settled.clone(), asked.clone());
            async move {
                let carried = req.extensions().get::<Carried>().expect("the guard's slot").clone();
                carried.carry(Box::new(move |sent| {
                    let _ = settled.send(sent);
                }));
                let mut answer = Some(Bytes::from(format!("data: {}\n\n", "x".repeat(200_000))));
                // The answer, then a stream that stays open, as rmcp's does for a moment.
                let frames = futures::stream::poll_fn(move |_| match answer.take() {
                    Some(a) => Poll::Ready(Some(Ok::<_, std::convert::Infallible>(a))),
                    None => {
                        asked.notify_one();
                        Poll::Pending
                    }
                });
                Ok::<_, std::convert::Infallible>(http::Response::new(axum::body::Body::from_stream(frames)))
            }
        }));
        let app = tower::ServiceExt::map_request(app, move |mut req: http::Request<hyper::body::Incoming>| {
            req.extensions_mut().insert(written.clone());
            req
        });
        tokio::spawn(
            hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(server), TowerToHyperService::new(app)),
        );
        client.write_all(b"GET /mcp HTTP/1.1\r\nhost: x\r\n\r\n").await.unwrap();
        (client, outcome, asked_again)
    }

    async fn within<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
        tokio::time::timeout(Duration::from_secs(10), f)
            .await
            .unwrap_or_else(|_| panic!("waited 10 s for {what}"))
    }

    #[tokio::test]
    async fn an_answer_still_in_hypers_buffer_is_not_sent_until_it_reaches_the_socket() {
        let (mut client, mut outcome, asked_again) = serve_an_answer().await;
        within("hyper to ask for the frame after the answer", asked_again.notified()).await;
        assert!(
            outcome.try_recv().is_err(),
            "settled while most of the answer was still in hyper's buffer"
        );
        // The client reads: the answer goes out, and only then is it sent.
        let mut got = 0;
        let mut chunk = vec![0u8; 16 * 1024];
        let reading = async {
            loop {
                tokio::select! {
                    sent = outcome.recv() => return sent,
                    n = client.read(&mut chunk) => got += n.unwrap(),
                }
            }
        };
        assert_eq!(within("the settlement once the client read", reading).await, Some(true));
        // Written means in the pipe (the kernel's socket buffer, on a real connection): at most 8 KiB unread.
        assert!(got + 8 * 1024 >= 200_000, "settled when only {got} bytes had gone out");
    }

    #[tokio::test]
    async fn an_answer_whose_connection_ends_before_it_is_written_is_cut_off() {
        let (client, mut outcome, asked_again) = serve_an_answer().await;
        within("hyper to ask for the frame after the answer", asked_again.notified()).await;
        drop(client);
        assert_eq!(
            within("the settlement after the client hung up", outcome.recv()).await,
            Some(false)
        );
    }
}
