//! The OpenAPI document of the HTTP API, generated from the handlers'
//! annotations and the model types (utoipa), served at `/api/openapi.json`;
//! `/api/docs` renders it (a local page: no CDN).

use axum::response::{IntoResponse, Redirect, Response};
use axum::Json;
use serde::Serialize;
use utoipa::{OpenApi, ToSchema};

use crate::model::Instruction;
use crate::snippets::Target;

/// `{"item": …}`
#[derive(Serialize, ToSchema)]
pub struct ItemBody {
    pub item: Instruction,
}

/// `{"items": […]}`
#[derive(Serialize, ToSchema)]
pub struct ItemsBody {
    pub items: Vec<Instruction>,
}

/// Every error: `{"error": {"code", "message"}}`.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Serialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable, machine-readable: not_found, conflict, invalid_request, payload_too_large, unauthorized, forbidden, …
    pub code: String,
    /// For people.
    pub message: String,
}

#[derive(Serialize, ToSchema)]
pub struct Health {
    /// Always "ok".
    pub status: String,
    pub server_time: String,
}

#[derive(Serialize, ToSchema)]
pub struct SessionState {
    pub token_required: bool,
    pub authenticated: bool,
}

#[derive(Serialize, ToSchema)]
pub struct ClientsBody {
    pub mcp_url: String,
    #[schema(value_type = Vec<Object>)]
    pub clients: Vec<Target>,
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "local-mcp HTTP API",
        description = "The queue of a person's instructions for AI agents. Agents take instructions through the MCP \
            tool `get_user_request` at `/mcp` (not described here); this API is what the page, the CLI and scripts \
            use. When the server has a token, send `Authorization: Bearer <token>`. Writes take JSON only."
    ),
    paths(
        super::api::healthz,
        super::api::status,
        super::api::list,
        super::api::create,
        super::api::get_one,
        super::api::edit,
        super::api::delete,
        super::api::requeue,
        super::api::move_to,
        super::api::get_config,
        super::api::patch_config,
        super::api::clients,
        super::sse::events,
        super::session::get,
        super::session::create,
        super::session::delete,
        super::session::token_state,
        super::session::change_token,
    ),
    tags(
        (name = "instructions", description = "Queue, edit, reorder, delete and send again"),
        (name = "settings", description = "Runtime settings"),
        (name = "server", description = "Health, status and client configuration"),
        (name = "events", description = "Live changes"),
        (name = "session", description = "The page's sign-in when a token is required"),
    )
)]
pub struct ApiDoc;

pub async fn document() -> Response {
    Json(ApiDoc::openapi()).into_response()
}

/// The docs page is a static page of the UI.
pub async fn docs() -> Redirect {
    Redirect::to("/api.html")
}
