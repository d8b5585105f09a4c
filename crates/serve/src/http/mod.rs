//! The axum router: health, the JSON API, live events (SSE), the page, and
//! `/mcp` — all behind one guard (the account, Host, Origin, cross-site
//! writes, the bearer token), each route with its own body policy (its
//! limit and types, `body.rs`).
//!
//! Each route module (`instructions`, `queues`, `reports`, `settings`, `status`, `session`, `sse`)
//! owns its handlers, their typed bodies and their OpenAPI entries, and
//! registers them in its `routes()`, each with its body policy; [`router`]
//! merges those, so the router and the OpenAPI document come from one list. Handlers are thin: they
//! parse, call the [`Queue`], and return a typed body. Every failure leaves
//! as `{"error":{"code","message"}}` with the right status.

mod attachments;
mod backup;
mod body;
mod client_files;
mod error;
mod export;
mod extract;
mod import;
mod instructions;
mod lookups;
mod mcp_errors;
mod openapi;
mod page;
mod phone;
mod phone_gate;
mod queues;
mod reports;
mod security;
mod session;
mod settings;
mod sse;
mod status;
mod templates;

use std::sync::Arc;

use axum::routing::get;
use axum::Router;
use tokio_util::sync::CancellationToken;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

use crate::auth::{Credentials, Tokens};
use crate::mcp;
use crate::queue::Queue;

pub use error::error_response;
pub use extract::{ApiJson, ApiPath, ApiQuery};
pub use phone_gate::Trust;
pub use security::{Admission, Guard, Peer, CONTENT_SECURITY_POLICY};

/// The largest request body accepted anywhere: far above any instruction
/// (64 KiB), far below what could hurt.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

pub use crate::model::MCP_PATH;

/// The MCP endpoint under a base URL such as `http://127.0.0.1:8000`.
pub fn mcp_url(base: &str) -> String {
    format!("{base}{MCP_PATH}")
}

/// What every handler can reach, and what the router is built from.
#[derive(Clone)]
pub struct AppState {
    pub queue: Queue,
    pub guard: Arc<Guard>,
    pub credentials: Arc<Credentials>,
    pub tokens: Arc<Tokens>,
    pub mcp_stateless: bool,
    pub shutdown: CancellationToken,
    /// The phone listener (off until the person starts it).
    pub phone: Arc<crate::phone::Phone>,
}

/// Every documented route, with its OpenAPI document.
fn api() -> (Router<AppState>, utoipa::openapi::OpenApi) {
    let (router, doc) = OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .merge(status::routes())
        .merge(client_files::routes())
        .merge(backup::routes())
        .merge(export::routes())
        .merge(import::routes())
        .merge(instructions::routes())
        .merge(attachments::routes())
        .merge(queues::routes())
        .merge(reports::routes())
        .merge(settings::routes())
        .merge(templates::routes())
        .merge(sse::routes())
        .merge(session::routes())
        .merge(phone::routes())
        .split_for_parts();
    (router, openapi::finish(doc))
}

/// Build the whole router for a running queue.
pub fn router(state: AppState) -> Router {
    let (disconnect_guard, mcp) = mcp::service(
        state.queue.clone(),
        state.mcp_stateless,
        MAX_BODY_BYTES,
        state.shutdown.clone(),
    );
    let mcp = tower::ServiceBuilder::new()
        .layer(axum::middleware::from_fn(mcp_errors::middleware))
        .layer(disconnect_guard)
        .service(mcp);
    let (api, doc) = api();
    // Served as written once: the document never changes while serving.
    let doc = bytes::Bytes::from(serde_json::to_vec(&doc).unwrap_or_default());
    // What is not an API area: the documents, the page and MCP. They take
    // JSON bodies as most routes do; set on this router once its routes and
    // answers for a missing route or method are in place, so it covers them.
    let rest = Router::new()
        .route(
            "/api/openapi.json",
            get(move || async move { ([(axum::http::header::CONTENT_TYPE, "application/json")], doc) }),
        )
        .route("/api/docs", get(page::api_docs))
        .route("/", get(page::index))
        .route("/{*path}", get(page::asset))
        // `/mcp` is the default queue's endpoint, `/mcp/q/<name>` another queue's;
        // the route's parameter is read once and rides on the request (`mcp::named_queue`).
        .route_service(MCP_PATH, mcp.clone())
        .route_service(&format!("{MCP_PATH}/"), mcp.clone())
        .route_service(
            &format!("{MCP_PATH}/q/{{queue}}"),
            tower::ServiceBuilder::new()
                .layer(axum::middleware::from_fn(mcp::named_queue))
                .service(mcp),
        )
        .fallback(error::not_found)
        .method_not_allowed_fallback(error::method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(
            body::BodyPolicy::JSON,
            body::enforce,
        ));
    api.merge(rest)
        .with_state(state.clone())
        .layer(axum::middleware::from_fn_with_state(state.guard, security::guard))
}

/// What the phone listener serves: the same API and page, no MCP and no
/// API documents, behind the listener's own gate (`crate::phone`), which
/// decides what a phone may reach. The loopback guard is not in front of
/// it: its token and page session count for nothing here.
pub fn phone_router(state: AppState) -> Router {
    let (api, _) = api();
    let rest = Router::new()
        .route("/", get(page::index))
        .route("/{*path}", get(page::asset))
        .fallback(error::not_found)
        .method_not_allowed_fallback(error::method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(
            body::BodyPolicy::JSON,
            body::enforce,
        ));
    let routes = api
        .merge(rest)
        .with_state(state.clone())
        .layer(axum::Extension(phone::OnPhoneListener));
    // The gate around the routing, not inside it: it takes the listener's
    // secret prefix off the path before the routes see it.
    let gated = tower::ServiceBuilder::new()
        .layer(axum::middleware::from_fn_with_state(state.phone, phone_gate::gate))
        .service(routes);
    Router::new().fallback_service(gated)
}
