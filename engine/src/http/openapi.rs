//! The OpenAPI document of the HTTP API, generated from the handlers'
//! annotations and the model types (utoipa), served at `/api/openapi.json`;
//! `/api/docs` renders it (a local page: no CDN).

use axum::response::{IntoResponse, Redirect, Response};
use axum::Json;
use serde::Serialize;
use utoipa::openapi::path::Operation;
use utoipa::openapi::{RefOr, Response as DocResponse, Schema};
use utoipa::{Modify, OpenApi, ToSchema};

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

/// One server-sent event on `/api/events` (its `data` is the JSON described in the README).
#[derive(Serialize, ToSchema)]
pub struct ServerSentEvent {
    /// instruction.created | instruction.updated | instruction.deleted | instruction.consumed |
    /// config.updated | status.changed | stream.reset
    pub event: String,
    /// `{"type","timestamp","data"[,"pending_count"]}` as JSON text.
    pub data: String,
    /// The event-log id (absent on status.changed).
    pub id: Option<String>,
    /// Reconnect delay in milliseconds.
    pub retry: Option<u64>,
}

/// The answers every operation can give, added to each so the document is
/// complete: the security layer's (403 foreign Host/Origin, 401 token, 413,
/// 415) and, where there are path, query or body inputs, 400 and 422.
struct CommonResponses;

fn error_ref(description: &str) -> RefOr<DocResponse> {
    let json: serde_json::Value = serde_json::json!({
        "description": description,
        "content": { "application/json": { "schema": { "$ref": "#/components/schemas/ErrorBody" } } }
    });
    serde_json::from_value(json).expect("a valid response object")
}

impl Modify for CommonResponses {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        for item in doc.paths.paths.values_mut() {
            let ops: [&mut Option<Operation>; 4] = [&mut item.get, &mut item.post, &mut item.patch, &mut item.delete];
            for op in ops.into_iter().flatten() {
                let has_body = op.request_body.is_some();
                let has_params = op.parameters.as_ref().is_some_and(|p| !p.is_empty());
                let responses = &mut op.responses.responses;
                let mut add = |status: &str, description: &str| {
                    responses
                        .entry(status.to_owned())
                        .or_insert_with(|| error_ref(description));
                };
                add("403", "A foreign Host (DNS rebinding) or Origin (another web page)");
                add("401", "A token is required and was missing or wrong");
                if has_body || has_params {
                    add("400", "Malformed path, query or JSON body");
                }
                if has_body {
                    add("413", "Body over 1 MiB, or an instruction over 64 KiB");
                    add("415", "The body is not Content-Type: application/json");
                    add(
                        "422",
                        "Well-formed JSON of the wrong shape (unknown field, wrong type, out of range)",
                    );
                }
            }
        }
        // Exactly one of the three: a shape utoipa cannot derive from the struct.
        if let Some(components) = doc.components.as_mut() {
            let move_to: RefOr<Schema> = serde_json::from_value(serde_json::json!({
                "description": "Where to move a pending instruction: exactly one of before_id, after_id or to.",
                "oneOf": [
                    { "type": "object", "required": ["before_id"], "additionalProperties": false,
                      "properties": { "before_id": { "type": "string", "minLength": 1 } } },
                    { "type": "object", "required": ["after_id"], "additionalProperties": false,
                      "properties": { "after_id": { "type": "string", "minLength": 1 } } },
                    { "type": "object", "required": ["to"], "additionalProperties": false,
                      "properties": { "to": { "$ref": "#/components/schemas/RequeuePlace" } } }
                ]
            }))
            .expect("a valid schema");
            components.schemas.insert("MoveTo".into(), move_to);
        }
    }
}

#[derive(OpenApi)]
#[openapi(
    modifiers(&CommonResponses),
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
