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
//!
//! And it counts the answers on their way ([`Answers`]: every POST's
//! response until its body ends or is dropped), so a stop can let the
//! answers its waiting calls were just given go out before it ends the
//! streams (`mcp::service`).

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use crate::sync::MutexExt as _;
use crate::written::Written;
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio_util::sync::{CancellationToken, DropGuard};
use tokio_util::task::task_tracker::{TaskTracker, TaskTrackerToken};
use tower::{Layer, Service};

/// Cancelled when the client stops reading the response.
#[derive(Clone, Debug)]
pub struct ClientGone(pub CancellationToken);

/// What to do once the response is known to be written in full (`true`) or
/// cut off (`false`).
pub type Settle = Box<dyn FnOnce(bool) + Send>;

/// Where a tool call leaves the settlement of what its response carries.
#[derive(Clone, Default)]
pub struct Carried(Arc<Mutex<CarriedState>>);

#[derive(Default)]
struct CarriedState {
    settle: Option<Settle>,
    /// The instruction the answer carries: its id is in the answer's JSON.
    id: String,
    /// The response is gone (or finished): a settlement left now is cut off.
    closed: bool,
}

impl Carried {
    /// The response carries a delivery: settle it when the body ends or is
    /// dropped — at once, as cut off, if the response is already gone (the
    /// client left between the call's last check and its claim).
    pub fn carry(&self, id: String, settle: Settle) {
        let mut state = self.0.lock_anyway();
        if state.closed {
            drop(state);
            settle(false);
        } else {
            state.settle = Some(settle);
            state.id = id;
        }
    }

    /// The id of the instruction the response still owes its settlement for.
    fn carrying(&self) -> Option<String> {
        let state = self.0.lock_anyway();
        state.settle.is_some().then(|| state.id.clone())
    }

    fn take(&self) -> Option<Settle> {
        self.0.lock_anyway().settle.take()
    }

    fn settle(&self, complete: bool) {
        if let Some(settle) = self.take() {
            settle(complete);
        }
    }

    /// The response is gone: what it carries, or is given later, is cut off.
    fn close(&self) {
        let settle = {
            let mut state = self.0.lock_anyway();
            state.closed = true;
            state.settle.take()
        };
        if let Some(settle) = settle {
            settle(false);
        }
    }

    /// The answer was handed to hyper: settle it once it is on the socket.
    /// Every connection `crate::server` serves is watched; a response served
    /// some other way cannot say, and counts as written when handed over.
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

/// The responses to POSTs (tool calls above all) not yet ended: a stop
/// waits for them before it ends the streams, or a waiting call answered
/// by the stop would lose that answer to the cut (it did: agents saw "SSE
/// stream ended without a response", or waited on past the server's exit).
#[derive(Clone, Debug, Default)]
pub struct Answers(TaskTracker);

impl Answers {
    /// Wait until every answer on its way has ended (written, or its
    /// connection gone), at most `patience`; how many had not.
    pub async fn out(&self, patience: std::time::Duration) -> usize {
        self.0.close();
        match tokio::time::timeout(patience, self.0.wait()).await {
            Ok(()) => 0,
            Err(_) => self.0.len(),
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct DisconnectGuardLayer {
    answers: Answers,
}

impl DisconnectGuardLayer {
    /// A guard that counts its POSTs' responses in `answers`.
    pub fn counting(answers: Answers) -> Self {
        DisconnectGuardLayer { answers }
    }
}

impl<S> Layer<S> for DisconnectGuardLayer {
    type Service = DisconnectGuard<S>;
    fn layer(&self, inner: S) -> Self::Service {
        DisconnectGuard {
            inner,
            answers: self.answers.clone(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct DisconnectGuard<S> {
    inner: S,
    answers: Answers,
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
        // Owned by the request's future until the body exists, then by the
        // body: dropped with either before the end, the caller is gone.
        let owed = Owed {
            guard: Some(token.drop_guard()),
            carried,
            _on_its_way: (req.method() == http::Method::POST).then(|| self.answers.0.token()),
        };
        let fut = self.inner.call(req);
        Box::pin(async move {
            let response = fut.await?;
            Ok(response.map(|body| {
                let inner = axum::body::Body::new(body);
                axum::body::Body::new(GuardedBody { inner, owed, written })
            }))
        })
    }
}

/// What the end of a response owes: cancelling the "caller gone" token and
/// settling what it carries as cut off — unless it ended normally.
struct Owed {
    guard: Option<DropGuard>,
    carried: Carried,
    /// A POST's response counts in [`Answers`] until it ends.
    _on_its_way: Option<TaskTrackerToken>,
}

impl Drop for Owed {
    fn drop(&mut self) {
        // After a normal end this finds nothing left to settle; the token's
        // guard, unless disarmed, cancels it as it drops.
        self.carried.close();
    }
}

/// What an event of the response is to a settlement for instruction `id`:
/// `None` when it is no JSON-RPC response (a progress or log notification,
/// which may share the stream — in session mode another call's progress with
/// the same token, too — or a keep-alive); `Some(true)` for the answer, a
/// `result` that names the instruction; `Some(false)` for a response without
/// it (an error, or whatever the call was ended with instead).
fn answer_in(event: &[u8], id: &str) -> Option<bool> {
    #[derive(serde::Deserialize)]
    struct Message {
        method: Option<serde::de::IgnoredAny>,
        result: Option<serde::de::IgnoredAny>,
        error: Option<serde::de::IgnoredAny>,
    }
    let text = std::str::from_utf8(event).ok()?;
    // An SSE event's `data:` lines, or a plain JSON body. The answer can be
    // megabytes (inline images): it is read where it lies, copied only when
    // its data is split over several lines.
    let json: std::borrow::Cow<'_, str> = if text.trim_start().starts_with('{') {
        text.into()
    } else {
        let data: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        match data.as_slice() {
            [one] => (*one).into(),
            _ => data.join("\n").into(),
        }
    };
    let message: Message = serde_json::from_str(&json).ok()?;
    if message.method.is_some() || (message.result.is_none() && message.error.is_none()) {
        return None;
    }
    Some(message.result.is_some() && !id.is_empty() && json.contains(id))
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
    owed: Owed,
    /// The connection's flush watch (absent when not served by `crate::server`).
    written: Option<Written>,
}

impl Body for GuardedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        let carried = &this.owed.carried;
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(None) => {
                // Finished normally: nobody went away.
                if let Some(g) = this.owed.guard.take() {
                    g.disarm();
                }
                // Still carrying at the end, the stream ended without its answer
                // (the server stopped the call): never sent.
                carried.settle(false);
            }
            // The call's response, once the call has left what it carries.
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(id), Some(data)) = (carried.carrying(), frame.data_ref()) {
                    match answer_in(data, &id) {
                        Some(true) => carried.settle_when_written(this.written.as_ref()),
                        Some(false) => carried.settle(false),
                        None => {}
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

    /// A real hyper connection over an in-memory pipe of `pipe` bytes whose
    /// one response is a tool call's stream: the call leaves a settlement
    /// (its outcome comes out of the returned receiver), then the body sends
    /// what the test puts into `frames`, and signals `asked` each time hyper
    /// asks for a frame that is not there yet. Returns the client's end.
    struct Served {
        client: tokio::io::DuplexStream,
        frames: mpsc::UnboundedSender<Bytes>,
        outcome: mpsc::UnboundedReceiver<bool>,
        asked: Arc<Notify>,
    }

    async fn serve(pipe: usize) -> Served {
        let (mut client, server) = tokio::io::duplex(pipe);
        let (server, written) = Watched::new(server);
        let (settled, outcome) = mpsc::unbounded_channel();
        let (frames_tx, frames_rx) = mpsc::unbounded_channel::<Bytes>();
        let frames_rx = Arc::new(Mutex::new(Some(frames_rx)));
        let asked = Arc::new(Notify::new());
        let asked_body = asked.clone();
        let app = DisconnectGuardLayer::default().layer(tower::service_fn(
            move |req: http::Request<hyper::body::Incoming>| {
                let (settled, asked) = (settled.clone(), asked_body.clone());
                let mut frames = frames_rx.lock_anyway().take().expect("one request");
                async move {
                    let carried = req.extensions().get::<Carried>().expect("the guard's slot").clone();
                    carried.carry(
                        INSTRUCTION.to_owned(),
                        Box::new(move |sent| {
                            let _ = settled.send(sent);
                        }),
                    );
                    let body = futures::stream::poll_fn(move |cx| match frames.poll_recv(cx) {
                        Poll::Ready(Some(f)) => Poll::Ready(Some(Ok::<_, std::convert::Infallible>(f))),
                        Poll::Ready(None) => Poll::Ready(None),
                        Poll::Pending => {
                            asked.notify_one();
                            Poll::Pending
                        }
                    });
                    Ok::<_, std::convert::Infallible>(http::Response::new(axum::body::Body::from_stream(body)))
                }
            },
        ));
        let app = tower::ServiceExt::map_request(app, move |mut req: http::Request<hyper::body::Incoming>| {
            req.extensions_mut().insert(written.clone());
            req
        });
        tokio::spawn(
            hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(server), TowerToHyperService::new(app)),
        );
        client.write_all(b"GET /mcp HTTP/1.1\r\nhost: x\r\n\r\n").await.unwrap();
        Served {
            client,
            frames: frames_tx,
            outcome,
            asked,
        }
    }

    /// The instruction the tests' call delivers.
    const INSTRUCTION: &str = "0194d3a2-7c1e-7b3a-9f00-6a1f2e3d4c5b";

    fn answer(size: usize) -> Bytes {
        Bytes::from(format!(
            "data: {{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{\"text\":\"{INSTRUCTION} {}\"}}}}\n\n",
            "x".repeat(size)
        ))
    }

    async fn within<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
        tokio::time::timeout(Duration::from_secs(10), f)
            .await
            .unwrap_or_else(|_| panic!("waited 10 s for {what}"))
    }

    /// Read from the client until the settlement comes; how many bytes were read.
    async fn read_until_settled(s: &mut Served) -> (Option<bool>, usize) {
        let mut got = 0;
        let mut chunk = vec![0u8; 16 * 1024];
        let reading = async {
            loop {
                tokio::select! {
                    sent = s.outcome.recv() => return sent,
                    n = s.client.read(&mut chunk) => got += n.unwrap(),
                }
            }
        };
        let sent = within("the settlement once the client read", reading).await;
        (sent, got)
    }

    // A 200 KB answer into an 8 KiB pipe: more than the pipe holds, less than
    // hyper's write buffer, so hyper takes it in whole and asks for the next
    // frame while most of it has not been written.
    #[tokio::test]
    async fn an_answer_still_in_hypers_buffer_is_not_sent_until_it_reaches_the_socket() {
        let mut s = serve(8 * 1024).await;
        s.frames.send(answer(200_000)).unwrap();
        within("hyper to ask for the frame after the answer", s.asked.notified()).await;
        assert!(
            s.outcome.try_recv().is_err(),
            "settled while most of the answer was still in hyper's buffer"
        );
        // The client reads: the answer goes out, and only then is it sent.
        let (sent, got) = read_until_settled(&mut s).await;
        assert_eq!(sent, Some(true));
        // Written means in the pipe (the kernel's socket buffer, on a real connection): at most 8 KiB unread.
        assert!(got + 8 * 1024 >= 200_000, "settled when only {got} bytes had gone out");
    }

    #[tokio::test]
    async fn an_answer_whose_connection_ends_before_it_is_written_is_cut_off() {
        let mut s = serve(8 * 1024).await;
        s.frames.send(answer(200_000)).unwrap();
        within("hyper to ask for the frame after the answer", s.asked.notified()).await;
        drop(s.client);
        assert_eq!(
            within("the settlement after the client hung up", s.outcome.recv()).await,
            Some(false)
        );
    }

    #[tokio::test]
    async fn a_notification_before_the_answer_settles_nothing() {
        let mut s = serve(64 * 1024).await;
        // Another call's progress (session mode routes it by token) or this
        // call's own announcement, written out in full while the answer is
        // still being made.
        s.frames
            .send(Bytes::from_static(
                b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"t\",\"progress\":10}}\n\n",
            ))
            .unwrap();
        within("hyper to ask for the frame after the notification", s.asked.notified()).await;
        let mut chunk = vec![0u8; 4096];
        let n = within("the notification at the client", s.client.read(&mut chunk))
            .await
            .unwrap();
        assert!(n > 0);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(s.outcome.try_recv().is_err(), "a notification was taken for the answer");
        s.frames.send(answer(10)).unwrap();
        let (sent, _) = read_until_settled(&mut s).await;
        assert_eq!(sent, Some(true));
    }

    #[tokio::test]
    async fn a_stream_that_ends_without_the_answer_is_cut_off() {
        // The server stopping ends the call's stream with something else, or nothing.
        let mut s = serve(64 * 1024).await;
        s.frames
            .send(Bytes::from_static(
                b"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32603,\"message\":\"stopping\"}}\n\n",
            ))
            .unwrap();
        let (sent, _) = read_until_settled(&mut s).await;
        assert_eq!(sent, Some(false), "an error answered the call, not the instruction");

        let mut s = serve(64 * 1024).await;
        s.frames = mpsc::unbounded_channel().0; // the only sender goes: the stream ends
        let (sent, _) = read_until_settled(&mut s).await;
        assert_eq!(sent, Some(false), "an empty stream");
    }

    #[test]
    fn only_the_response_naming_the_instruction_is_its_answer() {
        let id = INSTRUCTION;
        let ours =
            format!("data: {{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{\"instruction\":{{\"id\":\"{id}\"}}}}}}\n\n");
        assert_eq!(answer_in(ours.as_bytes(), id), Some(true));
        let plain = format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{\"text\":\"{id}\"}}}}");
        assert_eq!(answer_in(plain.as_bytes(), id), Some(true), "a JSON (not SSE) response");
        // A response without it: the call was ended some other way.
        assert_eq!(
            answer_in(b"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n", id),
            Some(false)
        );
        assert_eq!(
            answer_in(
                b"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32603,\"message\":\"x\"}}\n\n",
                id
            ),
            Some(false)
        );
        // Not a response at all.
        let progress = format!("data: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"progressToken\":\"{id}\",\"progress\":1}}}}\n\n");
        assert_eq!(answer_in(progress.as_bytes(), id), None);
        assert_eq!(answer_in(b": keep-alive\n\n", id), None);
        assert_eq!(answer_in(b"data: \n\n", id), None);
        assert_eq!(answer_in(&[0xff, 0xfe], id), None);
    }

    #[test]
    fn a_delivery_left_after_its_response_is_gone_is_cut_off_at_once() {
        let carried = Carried::default();
        let owed = Owed {
            guard: Some(CancellationToken::new().drop_guard()),
            carried: carried.clone(),
            _on_its_way: None,
        };
        drop(owed);
        let (tx, rx) = std::sync::mpsc::channel();
        carried.carry(INSTRUCTION.to_owned(), Box::new(move |sent| tx.send(sent).unwrap()));
        assert_eq!(rx.try_recv(), Ok(false));
    }

    #[tokio::test]
    async fn a_request_dropped_before_its_response_cancels_and_cuts_off() {
        // The inner service never answers; the guard's future is dropped as
        // hyper drops it when the client leaves before the headers.
        let (slot_tx, slot_rx) = std::sync::mpsc::channel::<(ClientGone, Carried)>();
        let mut service = DisconnectGuardLayer::default().layer(tower::service_fn(move |req: http::Request<()>| {
            let gone = req.extensions().get::<ClientGone>().unwrap().clone();
            let carried = req.extensions().get::<Carried>().unwrap().clone();
            slot_tx.send((gone, carried)).unwrap();
            std::future::pending::<Result<http::Response<axum::body::Body>, std::convert::Infallible>>()
        }));
        let future = Service::call(&mut service, http::Request::new(()));
        let (gone, carried) = slot_rx.recv().unwrap();
        assert!(!gone.0.is_cancelled());
        drop(future);
        assert!(gone.0.is_cancelled(), "the waiting call learns its caller left");
        let (tx, rx) = std::sync::mpsc::channel();
        carried.carry(INSTRUCTION.to_owned(), Box::new(move |sent| tx.send(sent).unwrap()));
        assert_eq!(
            rx.try_recv(),
            Ok(false),
            "and what it claims after that is in doubt at once"
        );
    }
}
