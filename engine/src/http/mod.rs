//! The axum router: health, the JSON API, live events (SSE), the page, and
//! `/mcp` — all behind one security layer (Host, Origin, JSON-only writes,
//! body limit, bearer token).
//!
//! Handlers are thin: they parse, call the [`Queue`], and shape JSON. Every
//! failure leaves as `{"error":{"code","message"}}` with the right status.

mod api;
mod error;
mod mcp_errors;
mod openapi;
mod page;
pub mod security;
mod session;
mod sse;

use std::sync::Arc;

use axum::routing::{get, post};
use axum::Router;
use tokio_util::sync::CancellationToken;

use crate::mcp;
use crate::queue::Queue;

pub use error::{ApiJson, ApiPath, ApiQuery};
pub use security::Security;

/// The largest request body accepted anywhere (DESIGN §6).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub queue: Queue,
    pub security: Arc<Security>,
    pub tokens: Arc<crate::token::Tokens>,
    pub shutdown: CancellationToken,
}

/// Build the whole router for a running queue.
pub fn router(
    queue: Queue,
    security: Arc<Security>,
    tokens: Arc<crate::token::Tokens>,
    mcp_stateless: bool,
    shutdown: CancellationToken,
) -> Router {
    let state = AppState {
        queue: queue.clone(),
        security: security.clone(),
        tokens,
        shutdown: shutdown.clone(),
    };
    let mcp = tower::ServiceBuilder::new()
        .layer(mcp::DisconnectGuardLayer)
        .service(mcp::service(queue, mcp_stateless, MAX_BODY_BYTES, shutdown));
    Router::new()
        .route("/healthz", get(api::healthz))
        .route("/api/status", get(api::status))
        .route("/api/instructions", get(api::list).post(api::create))
        .route(
            "/api/instructions/{id}",
            get(api::get_one).patch(api::edit).delete(api::delete),
        )
        .route("/api/instructions/{id}/requeue", post(api::requeue))
        .route("/api/instructions/{id}/move", post(api::move_to))
        .route("/api/config", get(api::get_config).patch(api::patch_config))
        .route("/api/clients", get(api::clients))
        .route("/api/openapi.json", get(openapi::document))
        .route("/api/docs", get(openapi::docs))
        .route("/api/events", get(sse::events))
        .route(
            "/api/session",
            get(session::get).post(session::create).delete(session::delete),
        )
        .route("/api/token", get(session::token_state).post(session::change_token))
        .route("/", get(page::index))
        .route("/{*path}", get(page::asset))
        .fallback(error::not_found)
        .method_not_allowed_fallback(error::method_not_allowed)
        .with_state(state)
        .merge(
            Router::new()
                .nest_service("/mcp", mcp)
                .layer(axum::middleware::from_fn(mcp_errors::json_errors)),
        )
        .layer(axum::middleware::from_fn_with_state(security, security::guard))
}
