//! `GET /`: the landing page of the headless server. It names the MCP URL and
//! the API so a person who opens the address sees something useful; the full
//! queue manager page replaces it (see the UI issue).

use axum::extract::State;
use axum::response::Html;

use super::AppState;

pub async fn index(State(s): State<AppState>) -> Html<String> {
    let url = &s.queue.facts().url;
    let esc = |t: &str| {
        t.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
    };
    Html(format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>local-mcp</title></head>\
         <body><h1>local-mcp</h1><p>MCP endpoint: <code>{mcp}</code></p>\
         <p>API: <a href=\"/api/status\">/api/status</a>, <a href=\"/api/instructions\">/api/instructions</a>, \
         <a href=\"/healthz\">/healthz</a></p></body></html>",
        mcp = esc(&format!("{url}/mcp")),
    ))
}
