//! The direct path: a stateless `tools/call` of `get_user_request`,
//! answered here instead of by a service of rmcp's own.
//!
//! rmcp 3.9 serves each stateless request with a service built for it — a
//! task, a one-shot transport and channels whose first blocks are sized for
//! its largest message — held for as long as the call lasts. A waiting call
//! is nearly all this server holds (an agent's call waits for minutes, one
//! per agent): with this path and two fixes beside it, 1,000 waiting calls
//! went from ~73 to ~34 KiB each (`docs/PERFORMANCE.md`).
//!
//! Only a request rmcp would serve as it is takes this path: one JSON-RPC
//! request calling `get_user_request`, whose media types, protocol version
//! (header, and `_meta` for callers that name it there) and SEP-2243
//! headers rmcp would accept without a word. Anything else — another
//! method, another tool, a header or version rmcp refuses or must check —
//! goes to rmcp unchanged, with its body. The answer is what rmcp sends:
//! the same messages (rmcp's own types, serialised by serde, the result
//! shaped for the caller's revision), as SSE with the same headers and
//! keep-alives; the response head goes at once, or — for a caller that
//! names its version in `_meta`, whose status rmcp takes from the first
//! message — with the call's first message.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::IntoResponse as _;
use futures::future::BoxFuture;
use futures::{FutureExt as _, SinkExt as _, StreamExt as _};
use http::{header, HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use rmcp::model::GetMeta as _;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientJsonRpcMessage, ClientRequest, ProtocolVersion, RequestId,
    RequestMetaObject, ServerJsonRpcMessage, ServerResult,
};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::{ErrorData as McpError, ServerHandler as _};
use tokio_util::sync::CancellationToken;
use tower::{Service, ServiceExt as _};

use super::client_limits::Asking;
use super::disconnect::{Carried, ClientGone};
use super::tools::get_user_request::{self, Asked, Notify};
use super::{encode, LocalMcp};

type Rmcp = StreamableHttpService<LocalMcp, LocalSessionManager>;

/// `/mcp`: the direct path when it applies (stateless mode), rmcp otherwise
/// — and, in session mode, a session rmcp no longer knows served statelessly
/// (`super::forgotten`).
#[derive(Clone)]
pub struct Mcp {
    rmcp: Rmcp,
    direct: Option<Arc<Direct>>,
    forgotten: Option<super::forgotten::Forgotten>,
}

/// What the direct path answers with.
pub struct Direct {
    handler: LocalMcp,
    /// Ends every answer's stream once a stop has let the answers out
    /// (`mcp::service`): the call itself ends with the stop's start, in
    /// the queue's wait, and answers.
    streams_end: CancellationToken,
    max_body_bytes: usize,
    keep_alive: Duration,
    /// Calls in flight, for the client's `notifications/cancelled` (`cancels`).
    in_flight: Arc<super::cancels::InFlight>,
}

impl Mcp {
    /// `direct`: `Some` in stateless mode; `forgotten`: `Some` in session mode.
    pub fn new(rmcp: Rmcp, direct: Option<Direct>, forgotten: Option<super::forgotten::Forgotten>) -> Self {
        Mcp {
            rmcp,
            direct: direct.map(Arc::new),
            forgotten,
        }
    }
}

impl Direct {
    pub fn new(handler: LocalMcp, streams_end: CancellationToken, max_body_bytes: usize, keep_alive: Duration) -> Self {
        Direct {
            handler,
            streams_end,
            max_body_bytes,
            keep_alive,
            in_flight: Arc::default(),
        }
    }
}

impl Service<Request<Body>> for Mcp {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // rmcp's service is always ready, and is cloned for each call.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        // A task's poll comes every few seconds, for as long as the agent
        // waits: its connection is closed after the answer, so that waiting
        // through a task holds nothing between polls (Claude Code reuses one
        // kept-alive connection per server otherwise, and reconnects as needed).
        let polls = request
            .headers()
            .get("mcp-method")
            .and_then(|m| m.to_str().ok())
            .is_some_and(|m| m.starts_with("tasks/"));
        let answered = self.route(request);
        if !polls {
            return answered;
        }
        Box::pin(answered.map(|answer| {
            answer.map(|mut response| {
                response
                    .headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
                response
            })
        }))
    }
}

impl Mcp {
    fn route(&mut self, request: Request<Body>) -> BoxFuture<'static, Result<Response<Body>, Infallible>> {
        let rmcp = self.rmcp.clone();
        let head = match &self.direct {
            Some(_) if request.method() == Method::POST => head_fits(request.headers()),
            _ => None,
        };
        match (&self.direct, head, &self.forgotten) {
            (Some(direct), Some(version), _) => Box::pin(direct.clone().serve(request, version, rmcp)),
            (_, _, Some(forgotten)) => {
                let forgotten = forgotten.clone();
                Box::pin(async move {
                    match forgotten.unknown(request).await {
                        Ok(request) => Ok(forgotten.serve(request).await),
                        Err(request) => to_rmcp(rmcp, request).await,
                    }
                })
            }
            _ => Box::pin(to_rmcp(rmcp, request)),
        }
    }
}

async fn to_rmcp(rmcp: Rmcp, request: Request<Body>) -> Result<Response<Body>, Infallible> {
    Ok(rmcp.oneshot(request).await?.map(Body::new))
}

impl Direct {
    /// `version`: the `MCP-Protocol-Version` of a head that fits ([`head_fits`]).
    async fn serve(
        self: Arc<Self>,
        request: Request<Body>,
        version: Option<ProtocolVersion>,
        rmcp: Rmcp,
    ) -> Result<Response<Body>, Infallible> {
        let (head, body) = request.into_parts();
        let bytes = match axum::body::to_bytes(body, self.max_body_bytes).await {
            Ok(bytes) => bytes,
            Err(e) => return Ok(unreadable(&e, self.max_body_bytes)),
        };
        // A cancel of one of our calls: ended here; rmcp still answers it (202).
        self.in_flight.cancel_named_in(&bytes, user_agent(&head.headers));
        match fits(
            version,
            &head.headers,
            &bytes,
            &self.handler.supported_protocol_versions(),
        ) {
            Some(call) => Ok(self.answer(call, head).await),
            None => to_rmcp(rmcp, Request::from_parts(head, Body::from(bytes))).await,
        }
    }

    /// Run the call in a task of its own (as rmcp does: its end is decided
    /// by its tokens, never by dropping it half-way) and answer with its
    /// messages as they come.
    async fn answer(&self, call: Call, head: http::request::Parts) -> Response<Body> {
        let Call {
            id,
            params,
            meta,
            revision,
            negotiated,
        } = call;
        // What rmcp's handler does to a result for the caller's revision.
        let shape_for_revision = if revision.as_str() >= ProtocolVersion::V_2026_07_28.as_str() {
            ServerResult::fill_missing_cache_hints
        } else {
            ServerResult::strip_result_type_for_legacy_peer
        };
        let caller = self.handler.clients.caller(&Asking {
            meta: &meta,
            initialized: None,
            head: Some(&head),
        });
        // The response-body guard's token (`mcp::disconnect`) as it is: no
        // task merging it with the server's shutdown, which the queue's wait
        // watches itself.
        let connection_gone = match head.extensions.get::<ClientGone>() {
            Some(guard) => guard.0.clone(),
            None => self.streams_end.child_token(),
        };
        // Gone with the connection, or cancelled by its client's notification.
        let gone = connection_gone.child_token();
        let registered = self.in_flight.register(
            &serde_json::to_value(&id).unwrap_or_default(),
            user_agent(&head.headers),
            gone.clone(),
        );
        // A call sends at most two messages before its answer can wait.
        let (mut tx, mut rx) = futures::channel::mpsc::channel::<String>(2);
        let asked = Asked {
            queue_in_url: super::url_queue(Some(&head)),
            progress_token: meta.get_progress_token(),
            gone,
            carried: head.extensions.get::<Carried>().cloned(),
            notify: Notify::Stream(tx.clone()),
        };
        let queue = self.handler.queue.clone();
        let send = move |outcome: Result<CallToolResponse, McpError>| {
            let json = message_of(outcome, id, shape_for_revision);
            async move {
                drop(registered);
                if let Some(json) = json {
                    // Fails only if the caller has gone, which settled the call.
                    let _ = tx.send(json).await;
                }
            }
        };
        if caller.tasks {
            // Answered at once, with what it can take or a task: nothing waits.
            tokio::spawn(get_user_request::call_in_task(queue, params.arguments, asked, caller).then(send));
        } else {
            let call = get_user_request::call(queue, params.arguments, asked, caller);
            // The call's future goes into the task as it is, followed by the
            // send: awaited inside an `async` block it would be moved and held
            // twice (that block's upvar and its awaited copy) for the whole wait.
            tokio::spawn(call.then(move |outcome| send(outcome.map(Into::into))));
        }
        // Like rmcp: a caller that negotiated in `_meta` gets its response
        // head with the first message (a dropped request before it is the
        // caller gone: `disconnect`); any other gets it at once.
        let first = if negotiated {
            match rx.next().await {
                Some(first) => Some(first),
                None => {
                    return (StatusCode::INTERNAL_SERVER_ERROR, "the call ended without an answer").into_response();
                }
            }
        } else {
            None
        };
        let events = futures::stream::iter(first)
            .chain(rx)
            // Compact JSON holds no line breaks: one `data:` line, as rmcp writes it.
            .map(|json| Ok::<_, Infallible>(Event::default().data(json)))
            .take_until(self.streams_end.clone().cancelled_owned());
        let mut response = Sse::new(events)
            .keep_alive(KeepAlive::new().interval(self.keep_alive))
            .into_response();
        response
            .headers_mut()
            .insert("x-accel-buffering", HeaderValue::from_static("no"));
        response
    }
}

/// The JSON-RPC message that answers request `id` with `outcome`, shaped
/// for the caller's revision.
fn message_of(
    outcome: Result<CallToolResponse, McpError>,
    id: RequestId,
    shape_for_revision: fn(&mut ServerResult),
) -> Option<String> {
    let message = match outcome {
        Ok(response) => {
            let mut result = ServerResult::from(response);
            shape_for_revision(&mut result);
            ServerJsonRpcMessage::response(result, id.clone())
        }
        Err(error) => ServerJsonRpcMessage::error(error, Some(id.clone())),
    };
    encode(&message).or_else(|| {
        let error = McpError::internal_error("the answer could not be encoded", None);
        encode(&ServerJsonRpcMessage::error(error, Some(id)))
    })
}

/// The call in `body` sent with `headers`, if it is one this path answers
/// as rmcp would; `header_version`: what [`head_fits`] found in a head that
/// fits; `supported`: the protocol versions the server takes.
fn fits(
    header_version: Option<ProtocolVersion>,
    headers: &HeaderMap,
    body: &[u8],
    supported: &[ProtocolVersion],
) -> Option<Call> {
    let ClientJsonRpcMessage::Request(request) = serde_json::from_slice(body).ok()? else {
        return None;
    };
    let id = request.id;
    let mut request = request.request;
    // Where rmcp's handlers find it (`RequestContext::meta`).
    let meta = std::mem::take(request.get_meta_mut());
    let ClientRequest::CallToolRequest(call) = request else {
        return None;
    };
    if call.params.name != get_user_request::NAME {
        return None;
    }
    let v2026 = ProtocolVersion::V_2026_07_28;
    let inline = meta.protocol_version();
    match (&inline, &header_version) {
        // A 2025 caller: rmcp's legacy stateless path.
        (None, None) => {}
        (None, Some(h)) if h.as_str() < v2026.as_str() => {}
        // A 2026-07-28 caller: the version named twice, the same, one
        // this server supports, with every `_meta` key it requires.
        (Some(v), Some(h)) if v == h && meta.missing_required_keys(&v2026).is_empty() && supported.contains(v) => {}
        _ => return None,
    }
    // SEP-2243: from 2026-07-28 on, `Mcp-Method` and `Mcp-Name` must
    // name what the body does (our tool's schema asks for no `Mcp-Param-*`).
    if header_version
        .as_ref()
        .is_some_and(|h| h.as_str() >= ProtocolVersion::STANDARD_HEADERS.as_str())
        && !(only_value(headers, "mcp-method") == Some("tools/call")
            && only_value(headers, "mcp-name") == Some(get_user_request::NAME))
    {
        return None;
    }
    let negotiated = inline.is_some();
    let revision = inline.or(header_version).unwrap_or(ProtocolVersion::V_2025_03_26);
    Some(Call {
        id,
        params: call.params,
        meta,
        revision,
        negotiated,
    })
}

/// A `tools/call` of `get_user_request` this path answers.
struct Call {
    id: RequestId,
    params: CallToolRequestParams,
    meta: RequestMetaObject,
    /// The caller's protocol revision, as rmcp's handler reads it: `_meta`'s,
    /// else the header's, else 2025-03-26.
    revision: ProtocolVersion,
    /// Whether the caller named its version in `_meta` (rmcp's per-request
    /// negotiation).
    negotiated: bool,
}

/// Whether the request's head is one rmcp would accept without a word, and
/// the `MCP-Protocol-Version` it names (one rmcp knows): `None` when rmcp
/// must see it. Stricter than rmcp where that is simpler (a quality
/// parameter in `Accept`, a repeated version header): such a request goes
/// to rmcp.
fn head_fits(headers: &HeaderMap) -> Option<Option<ProtocolVersion>> {
    let (mut json, mut sse) = (false, false);
    for value in headers.get_all(header::ACCEPT) {
        for entry in value.to_str().ok()?.split(',') {
            let essence = entry.trim();
            if essence.contains(';') {
                return None;
            }
            json |= essence.eq_ignore_ascii_case("application/json");
            sse |= essence.eq_ignore_ascii_case("text/event-stream");
        }
    }
    let content_type = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
    let essence = content_type.split_once(';').map_or(content_type, |(e, _)| e).trim();
    if !(json && sse && essence.eq_ignore_ascii_case("application/json")) {
        return None;
    }
    if headers.keys().any(|name| name.as_str().starts_with("mcp-param-")) {
        return None;
    }
    match headers.get_all("mcp-protocol-version").iter().count() {
        0 => Some(None),
        1 => {
            let named = only_value(headers, "mcp-protocol-version")?;
            let known = ProtocolVersion::KNOWN_VERSIONS.iter().find(|k| k.as_str() == named)?;
            Some(Some(known.clone()))
        }
        _ => None,
    }
}

/// The client's `User-Agent` (empty when it sends none).
fn user_agent(headers: &HeaderMap) -> &str {
    headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

/// The header's one value, as text.
fn only_value<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    let mut values = headers.get_all(name).iter();
    let value = values.next()?;
    values.next().is_none().then(|| value.to_str().ok()).flatten()
}

/// A body that could not be read: rmcp's answers to one too large and to
/// a read that failed (the caller went mid-body).
fn unreadable(error: &axum::Error, max_bytes: usize) -> Response<Body> {
    let too_large = std::error::Error::source(error).is_some_and(|e| e.is::<http_body_util::LengthLimitError>());
    if too_large {
        (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("Payload Too Large: request body exceeds {max_bytes} bytes"),
        )
            .into_response()
    } else {
        (
            StatusCode::BAD_REQUEST,
            format!("Bad Request: the body could not be read: {error}"),
        )
            .into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    const BOTH: &str = "application/json, text/event-stream";

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in pairs {
            h.append(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        h
    }

    fn call(tool: &str, meta: Option<Value>) -> Vec<u8> {
        let mut params = json!({"name": tool, "arguments": {"agent_id": "a"}});
        if let Some(meta) = meta {
            params["_meta"] = meta;
        }
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params})
            .to_string()
            .into_bytes()
    }

    fn meta_2026() -> Value {
        json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2.1.330"},
            "progressToken": "p",
        })
    }

    /// The call the direct path finds in a request, as `Mcp::call` and `serve` look.
    fn found(h: &[(&str, &str)], body: &[u8], supported: &[ProtocolVersion]) -> Option<Call> {
        let h = headers(h);
        fits(head_fits(&h)?, &h, body, supported)
    }

    fn taken(h: &[(&str, &str)], body: &[u8]) -> bool {
        found(h, body, ProtocolVersion::KNOWN_VERSIONS).is_some()
    }

    #[test]
    fn a_plain_call_of_the_tool_is_answered_directly() {
        let plain = [("accept", BOTH), ("content-type", "application/json")];
        assert!(taken(&plain, &call("get_user_request", None)));
        assert!(taken(
            &[
                ("accept", "text/event-stream"),
                ("accept", "application/json"),
                ("content-type", "application/json; charset=utf-8"),
                ("mcp-protocol-version", "2025-06-18"),
            ],
            &call("get_user_request", None)
        ));
        // Claude Code 2.1's requests: the version in `_meta` and in the
        // headers, the method and the tool named in headers too.
        let v2026 = [
            ("accept", BOTH),
            ("content-type", "application/json"),
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "get_user_request"),
        ];
        let found = found(
            &v2026,
            &call("get_user_request", Some(meta_2026())),
            ProtocolVersion::KNOWN_VERSIONS,
        )
        .expect("taken");
        assert_eq!(found.id, RequestId::Number(7));
        // `_meta` is where the handler reads it, as rmcp hands it over.
        assert!(found.meta.get_progress_token().is_some());
        assert_eq!(found.meta.client_info().map(|c| c.name), Some("claude-code".to_owned()));
        assert_eq!(found.params.arguments.unwrap()["agent_id"], "a");
    }

    #[test]
    fn whatever_rmcp_must_judge_goes_to_rmcp() {
        let ok = [("accept", BOTH), ("content-type", "application/json")];
        let with = |extra: &[(&'static str, &'static str)]| -> Vec<(&'static str, &'static str)> {
            ok.iter().chain(extra).copied().collect()
        };
        let tool = call("get_user_request", None);
        // Other methods, other tools, batches, notifications, broken JSON.
        assert!(!taken(&ok, &call("other_tool", None)));
        assert!(!taken(&ok, br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#));
        assert!(!taken(
            &ok,
            format!("[{}]", String::from_utf8(tool.clone()).unwrap()).as_bytes()
        ));
        assert!(!taken(
            &ok,
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
        ));
        assert!(!taken(&ok, b"{not json"));
        // Media types rmcp refuses, or weighs.
        assert!(!taken(
            &[("accept", "application/json"), ("content-type", "application/json")],
            &tool
        ));
        assert!(!taken(
            &[("accept", "*/*"), ("content-type", "application/json")],
            &tool
        ));
        assert!(!taken(
            &[
                ("accept", "application/json, text/event-stream;q=0"),
                ("content-type", "application/json")
            ],
            &tool
        ));
        assert!(!taken(&[("accept", BOTH), ("content-type", "text/plain")], &tool));
        assert!(!taken(&[("accept", BOTH)], &tool));
        // Versions rmcp refuses, repeats, and a 2026 request without its `_meta`.
        assert!(!taken(&with(&[("mcp-protocol-version", "1999-01-01")]), &tool));
        assert!(!taken(
            &with(&[
                ("mcp-protocol-version", "2025-06-18"),
                ("mcp-protocol-version", "2025-06-18")
            ]),
            &tool
        ));
        let v2026 = [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "get_user_request"),
        ];
        assert!(!taken(&with(&v2026), &tool));
        // `_meta` naming another version than the header, or lacking a key.
        let mut other = meta_2026();
        other["io.modelcontextprotocol/protocolVersion"] = json!("2025-11-25");
        assert!(!taken(&with(&v2026), &call("get_user_request", Some(other))));
        let mut lacking = meta_2026();
        lacking
            .as_object_mut()
            .unwrap()
            .remove("io.modelcontextprotocol/clientCapabilities");
        assert!(!taken(&with(&v2026), &call("get_user_request", Some(lacking))));
        assert!(!taken(&ok, &call("get_user_request", Some(meta_2026()))));
        // A version the server does not take.
        assert!(found(
            &with(&v2026),
            &call("get_user_request", Some(meta_2026())),
            &[ProtocolVersion::V_2025_06_18]
        )
        .is_none());
        // SEP-2243 headers that disagree with the body, repeat, or are missing.
        let v = |method: &'static str, name: &'static str| {
            with(&[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", method),
                ("mcp-name", name),
            ])
        };
        let m = call("get_user_request", Some(meta_2026()));
        assert!(taken(&v("tools/call", "get_user_request"), &m));
        assert!(!taken(&v("tools/list", "get_user_request"), &m));
        assert!(!taken(&v("tools/call", "other_tool"), &m));
        assert!(!taken(
            &with(&[("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call")]),
            &m
        ));
        let mut twice = v("tools/call", "get_user_request");
        twice.push(("mcp-name", "get_user_request"));
        assert!(!taken(&twice, &m));
        // `Mcp-Param-*` headers are checked against a schema: rmcp's.
        assert!(!taken(&with(&[("mcp-param-agent", "a")]), &tool));
    }
}
