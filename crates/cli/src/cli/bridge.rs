//! The stdio bridge: MCP over stdin/stdout (newline-delimited JSON-RPC),
//! forwarded to the running app's `/mcp`, for clients that only launch stdio
//! servers (e.g. Claude Desktop).
//!
//! Each message from the client becomes one POST; the answer — JSON, or an
//! SSE stream of progress/log notifications ending with the response — is
//! written back line by line. stdout carries protocol only (logs go to
//! stderr). Two promises:
//!
//! - **A restart of the app is invisible.** A request whose connection fails,
//!   or whose stream ends before its answer, is sent again once the app is
//!   back (the connection-info file is read again, so a new port is found);
//!   a lost session (404) is re-opened by replaying the client's `initialize`.
//! - **A client that leaves cancels its wait.** When stdin closes, every
//!   request in flight is dropped, which closes its HTTP connection; the
//!   server then cancels the wait without consuming anything. A
//!   `notifications/cancelled` drops that one request the same way.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use crate::client::target::{http_client, root_cause, Source, Target};
use crate::sync::MutexExt as _;
use crate::Result;

/// How long to keep retrying while the app is away (restarting, or not yet
/// started) before answering the client with an error.
pub const RECONNECT_FOR: Duration = Duration::from_secs(120);
const BACKOFF_MAX: Duration = Duration::from_secs(2);
/// After stdin closes, how long requests other than tool calls may still finish.
const FINISH_GRACE: Duration = Duration::from_secs(2);
const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
/// The id of a replayed `initialize` (its answer is not the client's).
const REPLAY_ID: &str = "local-mcp-bridge:reinitialize";

/// The client session this bridge serves: the id its client gave the
/// stdio servers it starts, or else this bridge's own (one client process).
fn client_session() -> String {
    crate::model::CLIENT_SESSION_VARIABLES
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()))
        .unwrap_or_else(|| format!("bridge-{}", uuid::Uuid::new_v4()))
}

/// Run the bridge until stdin closes, as an agent of `queue` (default `default`).
pub async fn run(source: Source, queue: Option<String>) -> Result<()> {
    let queue = crate::model::queue_or_default(queue.as_deref())?;
    let (out, mut lines_out) = mpsc::unbounded_channel::<String>();
    // One writer: whole lines, never interleaved.
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(mut line) = lines_out.recv().await {
            line.push('\n');
            if stdout.write_all(line.as_bytes()).await.is_err() || stdout.flush().await.is_err() {
                break;
            }
        }
    });
    let bridge = Arc::new(Bridge {
        source,
        queue,
        http: http_client()?,
        out,
        state: Mutex::default(),
        inflight: Mutex::default(),
        client_session: client_session(),
    });
    match bridge.source.resolve() {
        Ok(t) => tracing::info!("bridging stdio to {}", t.queue_url(&bridge.queue)),
        Err(e) => tracing::warn!("{e}; requests will wait up to {RECONNECT_FOR:?} for it"),
    }

    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    loop {
        match stdin.next_line().await {
            Ok(Some(line)) if line.trim().is_empty() => {}
            Ok(Some(line)) => Arc::clone(&bridge).dispatch(&line),
            Ok(None) => break,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read stdin; stopping");
                break;
            }
        }
    }
    tracing::info!("stdin closed: the client is gone; cancelling its requests");
    bridge.finish().await;
    bridge.end_session().await;
    drop(bridge);
    let _ = tokio::time::timeout(Duration::from_secs(1), writer).await;
    Ok(())
}

struct Bridge {
    source: Source,
    /// The queue this bridge's agent takes from: it picks the endpoint URL.
    queue: crate::model::QueueName,
    http: reqwest::Client,
    out: mpsc::UnboundedSender<String>,
    state: Mutex<State>,
    /// Requests in flight, by their JSON-RPC id (as JSON text), and whether each is a tool call.
    inflight: Mutex<HashMap<String, (AbortHandle, bool)>>,
    /// The client session this bridge serves (see `model::CLIENT_SESSION_HEADER`).
    client_session: String,
}

#[derive(Default)]
struct State {
    target: Option<Target>,
    session_id: Option<String>,
    protocol_version: Option<String>,
    /// The client's `initialize`, replayed when the server has lost the session.
    initialize: Option<Value>,
}

/// Where an answer goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sink {
    Client,
    Discard,
}

enum Outcome {
    Done,
    SessionLost,
}

enum Failed {
    /// Worth retrying: the app is away or the stream broke.
    Away(String),
    /// Retrying would not help.
    Fatal(String),
}

impl Bridge {
    fn send(&self, message: Value) {
        let _ = self.out.send(message.to_string());
    }

    fn dispatch(self: Arc<Self>, line: &str) {
        let message: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                self.send(error_response(&Value::Null, -32700, &format!("parse error: {e}")));
                return;
            }
        };
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if method == "notifications/cancelled" {
            if let Some(id) = message.pointer("/params/requestId") {
                self.abort(&id.to_string());
            }
        }
        if method == "initialize" {
            self.state.lock_anyway().initialize = Some(message.clone());
        }
        let id = message.get("id").filter(|id| !id.is_null()).cloned();
        match id {
            Some(id) if !method.is_empty() => {
                let key = id.to_string();
                // Held across spawn and insert, so a fast task's removal comes after the insert.
                let mut inflight = self.inflight.lock_anyway();
                let this = Arc::clone(&self);
                let task_key = key.clone();
                let task = tokio::spawn(async move {
                    let result = this.forward(&message, Sink::Client).await;
                    this.inflight.lock_anyway().remove(&task_key);
                    if let Err(text) = result {
                        tracing::warn!("{text}");
                        this.send(error_response(&id, -32603, &text));
                    }
                });
                inflight.insert(key, (task.abort_handle(), method == "tools/call"));
            }
            // Notifications, and answers to requests the server made.
            _ => {
                tokio::spawn(async move {
                    if let Err(text) = self.forward(&message, Sink::Discard).await {
                        tracing::warn!("could not forward {method:?}: {text}");
                    }
                });
            }
        }
    }

    fn abort(&self, key: &str) {
        if let Some((task, _)) = self.inflight.lock_anyway().remove(key) {
            tracing::debug!(id = key, "request cancelled by the client");
            task.abort();
        }
    }

    /// The client closed stdin (MCP's stdio shutdown): its tool calls are
    /// dropped at once — a wait must not go on to consume an instruction
    /// nobody will read — while quick requests already sent (a script piping
    /// `initialize` and `tools/list`) get a moment to be answered.
    async fn finish(&self) {
        self.inflight.lock_anyway().retain(|_, (task, tool_call)| {
            if *tool_call {
                task.abort();
            }
            !*tool_call
        });
        let deadline = Instant::now() + FINISH_GRACE;
        while Instant::now() < deadline && self.inflight.lock_anyway().values().any(|(t, _)| !t.is_finished()) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        for (_, (task, _)) in self.inflight.lock_anyway().drain() {
            task.abort();
        }
    }

    fn target(&self) -> Result<Target> {
        if let Some(t) = self.state.lock_anyway().target.clone() {
            return Ok(t);
        }
        let t = self.source.resolve()?;
        self.state.lock_anyway().target = Some(t.clone());
        Ok(t)
    }

    /// Send `message` until it gets through, the app stays away too long, or it cannot succeed.
    async fn forward(&self, message: &Value, sink: Sink) -> Result<(), String> {
        let mut away_since: Option<Instant> = None;
        let mut backoff = Duration::from_millis(100);
        loop {
            let failure = match self.attempt(message, sink).await {
                Ok(Outcome::Done) => {
                    if away_since.is_some() {
                        tracing::info!("local-mcp is back");
                    }
                    return Ok(());
                }
                Ok(Outcome::SessionLost) => match self.reinitialize().await {
                    Ok(()) => continue,
                    Err(f) => f,
                },
                Err(f) => f,
            };
            match failure {
                Failed::Fatal(text) => return Err(text),
                Failed::Away(why) => {
                    let since = *away_since.get_or_insert_with(|| {
                        tracing::warn!("local-mcp is away ({why}); retrying for up to {RECONNECT_FOR:?}");
                        Instant::now()
                    });
                    if since.elapsed() >= RECONNECT_FOR {
                        return Err(format!("local-mcp is not reachable: {why}"));
                    }
                    // It may come back on another port: read the connection-info file again.
                    self.state.lock_anyway().target = None;
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(BACKOFF_MAX);
                }
            }
        }
    }

    /// One POST of `message`, its answer relayed to `sink`.
    async fn attempt(&self, message: &Value, sink: Sink) -> Result<Outcome, Failed> {
        let target = self.target().map_err(|e| match e {
            // Another account's server on the port: waiting will not make it ours.
            crate::Error::Forbidden(text) => Failed::Fatal(text),
            e => Failed::Away(e.to_string()),
        })?;
        let (session, version) = {
            let state = self.state.lock_anyway();
            (state.session_id.clone(), state.protocol_version.clone())
        };
        let mut request = self
            .http
            .post(target.queue_url(&self.queue))
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream")
            .body(message.to_string());
        if let Some(token) = &target.token {
            request = request.bearer_auth(token);
        }
        if let Some(session) = &session {
            request = request.header(SESSION_HEADER, session);
        }
        if let Some(version) = &version {
            request = request.header(VERSION_HEADER, version);
        }
        // Which client session this is: the client's own, where it gave us one.
        request = request.header(crate::model::CLIENT_SESSION_HEADER, &self.client_session);
        let response = request.send().await.map_err(|e| Failed::Away(root_cause(&e)))?;
        let status = response.status();
        if status == reqwest::StatusCode::NOT_FOUND && session.is_some() {
            tracing::info!("local-mcp no longer knows this session (restarted?); opening a new one");
            self.state.lock_anyway().session_id = None;
            return Ok(Outcome::SessionLost);
        }
        if let Some(id) = response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()) {
            self.state.lock_anyway().session_id = Some(id.to_owned());
        }
        let expects_answer = message.get("id").is_some_and(|id| !id.is_null()) && message.get("method").is_some();
        if status == reqwest::StatusCode::ACCEPTED || (status.is_success() && !expects_answer) {
            return Ok(Outcome::Done);
        }
        let is_sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("text/event-stream"));
        if !status.is_success() {
            let text = response.text().await.unwrap_or_default();
            // The server's own JSON-RPC error is the client's answer.
            if let Ok(v) = serde_json::from_str::<Value>(&text) {
                if v.get("jsonrpc").is_some() {
                    self.relay(v, sink);
                    return Ok(Outcome::Done);
                }
            }
            let hint = if status == reqwest::StatusCode::UNAUTHORIZED {
                " (the token is missing or wrong: check the connection-info file, or pass --token)"
            } else {
                ""
            };
            return Err(Failed::Fatal(format!(
                "local-mcp answered HTTP {status}: {}{hint}",
                text.trim()
            )));
        }
        let wanted = message.get("id");
        if !is_sse {
            let v: Value = response
                .json()
                .await
                .map_err(|e| Failed::Away(format!("reading the answer failed: {}", root_cause(&e))))?;
            self.relay(v, sink);
            return Ok(Outcome::Done);
        }
        let mut events = sse_stream::SseStream::from_bytes_stream(response.bytes_stream());
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| Failed::Away(format!("the answer stream broke: {e}")))?;
            let Some(data) = event.data.filter(|d| !d.trim().is_empty()) else {
                continue;
            };
            let v: Value = match serde_json::from_str(&data) {
                Ok(v) => v,
                Err(e) => {
                    tracing::warn!(error = %e, "skipping an event that is not JSON");
                    continue;
                }
            };
            let answered = is_answer(&v, wanted);
            self.relay(v, sink);
            if answered {
                return Ok(Outcome::Done);
            }
        }
        Err(Failed::Away("the answer stream ended before the answer".into()))
    }

    /// Write a message from the server to the client, noting what the bridge must remember.
    fn relay(&self, v: Value, sink: Sink) {
        if let Some(version) = v.pointer("/result/protocolVersion").and_then(Value::as_str) {
            self.state.lock_anyway().protocol_version = Some(version.to_owned());
        }
        if sink == Sink::Client {
            self.send(v);
        }
    }

    /// Open a new session by replaying the client's `initialize`.
    async fn reinitialize(&self) -> Result<(), Failed> {
        let mut init = self
            .state
            .lock_anyway()
            .initialize
            .clone()
            .ok_or_else(|| Failed::Fatal("the server lost the session before it was initialized".into()))?;
        init["id"] = json!(REPLAY_ID);
        match self.attempt(&init, Sink::Discard).await? {
            Outcome::Done => {}
            Outcome::SessionLost => return Err(Failed::Away("re-initializing the session failed".into())),
        }
        let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        self.attempt(&initialized, Sink::Discard).await.map(|_| ())
    }

    /// Tell the server a session is over (best effort, brief).
    async fn end_session(&self) {
        let (session, target) = {
            let state = self.state.lock_anyway();
            (state.session_id.clone(), state.target.clone())
        };
        let (Some(session), Some(target)) = (session, target) else {
            return;
        };
        let mut request = self
            .http
            .delete(target.queue_url(&self.queue))
            .header(SESSION_HEADER, session)
            .timeout(Duration::from_secs(2));
        if let Some(token) = &target.token {
            request = request.bearer_auth(token);
        }
        let _ = request.send().await;
    }
}

/// Whether `v` is the response to the request with id `wanted`.
fn is_answer(v: &Value, wanted: Option<&Value>) -> bool {
    wanted.is_some() && v.get("id") == wanted && (v.get("result").is_some() || v.get("error").is_some())
}

fn error_response(id: &Value, code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_matches_its_request_id_only() {
        let id = json!(7);
        assert!(is_answer(&json!({"jsonrpc":"2.0","id":7,"result":{}}), Some(&id)));
        assert!(is_answer(
            &json!({"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"x"}}),
            Some(&id)
        ));
        assert!(!is_answer(&json!({"jsonrpc":"2.0","id":"7","result":{}}), Some(&id)));
        assert!(!is_answer(
            &json!({"jsonrpc":"2.0","method":"notifications/progress","params":{}}),
            Some(&id)
        ));
        assert!(!is_answer(&json!({"jsonrpc":"2.0","id":7,"result":{}}), None));
    }
}
