//! rmcp answers some transport errors on `/mcp` in plain text (an unsupported
//! `MCP-Protocol-Version`, a wrong `Accept`, a missing session). Every error
//! from us is JSON: this rewrites those as a JSON-RPC error with `id: null`,
//! which is what MCP clients parse, keeping the status and the message.
//! It is a layer on the `/mcp` routes ([`middleware`], in `http/mod.rs`).

use axum::body::{to_bytes, Body};
use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use serde_json::json;

use super::body::is_json;

/// Plain-text error bodies are a line or two; anything longer is cut.
const MAX_TEXT: usize = 16 * 1024;

/// The layer: `/mcp`'s answers, with [`json_errors`] applied.
pub async fn middleware(req: Request, next: Next) -> Response {
    let sent_json = is_json(req.headers());
    json_errors(sent_json, next.run(req).await).await
}

/// `/mcp`'s `response` with any plain-text error made JSON; `sent_json`:
/// whether the request declared a JSON body.
pub async fn json_errors(sent_json: bool, mut response: Response) -> Response {
    // The body policy lets only JSON writes through, so a 415 from rmcp on
    // one means the body did not parse: a JSON-RPC parse error, 400.
    if response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE && sent_json {
        *response.status_mut() = StatusCode::BAD_REQUEST;
        return rewrite(response, -32700).await;
    }
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) || is_json(response.headers()) {
        return response;
    }
    let code = match status {
        // A session the server does not know (expired, or from before a restart).
        StatusCode::NOT_FOUND => -32001,
        StatusCode::METHOD_NOT_ALLOWED => -32601,
        s if s.is_server_error() => -32603,
        _ => -32600,
    };
    rewrite(response, code).await
}

/// The response's text as the message of a JSON-RPC error with `code`.
async fn rewrite(response: Response, code: i64) -> Response {
    let status = response.status();
    let (mut parts, body) = response.into_parts();
    let text = to_bytes(body, MAX_TEXT).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let message = match text.trim() {
        "" => status.canonical_reason().unwrap_or("error").to_owned(),
        t => t.to_owned(),
    };
    let body = json!({ "jsonrpc": "2.0", "id": null, "error": { "code": code, "message": message } });
    parts.headers.remove(header::CONTENT_LENGTH);
    parts
        .headers
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Response::from_parts(parts, Body::from(body.to_string()))
}
