//! JSON API handlers (DESIGN §5). Each parses, calls the queue, shapes JSON.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;

use utoipa::{IntoParams, ToSchema};

use super::openapi::{ClientsBody, ErrorBody, Health, ItemBody, ItemsBody};
use super::{ApiJson, ApiPath, ApiQuery, AppState};
use crate::model::{MoveTo, RequeuePlace, Settings, SettingsPatch, StatusFilter};
use crate::queue::StatusSnapshot;
use crate::{snippets, time, Result};

/// Liveness check.
#[utoipa::path(get, path = "/healthz", tag = "server",
    responses((status = 200, description = "The server is up", body = Health)))]
pub async fn healthz() -> Json<serde_json::Value> {
    Json(json!({ "status": "ok", "server_time": time::now() }))
}

/// Server, agents and queue at a glance.
#[utoipa::path(get, path = "/api/status", tag = "server",
    responses((status = 200, description = "Server, agents and queue counts", body = StatusSnapshot)))]
pub async fn status(State(s): State<AppState>) -> Result<Response> {
    Ok(Json(s.queue.status().await?).into_response())
}

#[derive(Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// pending, consumed or all (default)
    #[serde(default)]
    #[param(inline)]
    status: StatusFilter,
    /// At most this many consumed instructions (newest first); pending ones are always all listed.
    #[param(value_type = Option<i64>, minimum = 0, maximum = 4294967295_i64)]
    limit: Option<u32>,
    /// Skip this many consumed instructions (for "show more").
    #[serde(default)]
    #[param(value_type = Option<i64>, minimum = 0, maximum = 4294967295_i64)]
    offset: u32,
}

/// List instructions.
#[utoipa::path(get, path = "/api/instructions", tag = "instructions", params(ListQuery),
    responses((status = 200, description = "Pending instructions (all of them, next first), then consumed ones (newest first)", body = ItemsBody), (status = 400, description = "Malformed request", body = ErrorBody)))]
pub async fn list(State(s): State<AppState>, ApiQuery(q): ApiQuery<ListQuery>) -> Result<Response> {
    let items = s.queue.list(q.status, q.limit, q.offset).await?;
    Ok(Json(json!({ "items": items })).into_response())
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ContentBody {
    /// The instruction text: not blank, no NUL, at most 64 KiB (65,536 bytes) of UTF-8
    #[schema(min_length = 1, pattern = "^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$")]
    content: String,
}

/// Queue an instruction.
#[utoipa::path(post, path = "/api/instructions", tag = "instructions", request_body = ContentBody,
    responses((status = 201, description = "Queued at the back", body = ItemBody), (status = 400, description = "Malformed request", body = ErrorBody),
        (status = 413, description = "Too large", body = ErrorBody), (status = 422, description = "Blank or invalid content", body = ErrorBody)))]
pub async fn create(State(s): State<AppState>, ApiJson(body): ApiJson<ContentBody>) -> Result<Response> {
    let item = s.queue.add(body.content).await?;
    Ok((StatusCode::CREATED, Json(json!({ "item": item }))).into_response())
}

/// One instruction.
#[utoipa::path(get, path = "/api/instructions/{id}", tag = "instructions", params(("id" = String, Path, description = "Instruction id")),
    responses((status = 200, description = "The instruction", body = ItemBody), (status = 404, description = "No such instruction", body = ErrorBody)))]
pub async fn get_one(State(s): State<AppState>, ApiPath(id): ApiPath<String>) -> Result<Response> {
    let item = s.queue.get(id).await?;
    Ok(Json(json!({ "item": item })).into_response())
}

/// Edit a pending instruction.
#[utoipa::path(patch, path = "/api/instructions/{id}", tag = "instructions", params(("id" = String, Path, description = "Instruction id")),
    request_body = ContentBody,
    responses((status = 200, description = "Edited", body = ItemBody), (status = 404, description = "No such instruction", body = ErrorBody),
        (status = 409, description = "Already delivered to an agent: it can no longer change", body = ErrorBody)))]
pub async fn edit(
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<ContentBody>,
) -> Result<Response> {
    let item = s.queue.edit(id, body.content).await?;
    Ok(Json(json!({ "item": item })).into_response())
}

/// Delete a pending instruction.
#[utoipa::path(delete, path = "/api/instructions/{id}", tag = "instructions", params(("id" = String, Path, description = "Instruction id")),
    responses((status = 204, description = "Deleted"), (status = 404, description = "No such instruction", body = ErrorBody),
        (status = 409, description = "Already delivered to an agent", body = ErrorBody)))]
pub async fn delete(State(s): State<AppState>, ApiPath(id): ApiPath<String>) -> Result<StatusCode> {
    s.queue.delete(id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RequeueBody {
    #[serde(default)]
    to: RequeuePlace,
}

/// Send a delivered instruction again.
#[utoipa::path(post, path = "/api/instructions/{id}/requeue", tag = "instructions", params(("id" = String, Path, description = "A consumed instruction's id")),
    request_body = RequeueBody,
    responses((status = 201, description = "A pending copy, at the front unless `to` says back", body = ItemBody),
        (status = 404, description = "No such instruction", body = ErrorBody), (status = 409, description = "Still pending", body = ErrorBody)))]
pub async fn requeue(
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<RequeueBody>,
) -> Result<Response> {
    let item = s.queue.requeue(id, body.to).await?;
    Ok((StatusCode::CREATED, Json(json!({ "item": item }))).into_response())
}

/// Reorder a pending instruction.
#[utoipa::path(post, path = "/api/instructions/{id}/move", tag = "instructions", params(("id" = String, Path, description = "A pending instruction's id")),
    request_body = MoveTo,
    responses((status = 200, description = "All pending instructions in their new order", body = ItemsBody),
        (status = 404, description = "No such instruction", body = ErrorBody), (status = 409, description = "Not pending", body = ErrorBody)))]
pub async fn move_to(
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<MoveTo>,
) -> Result<Response> {
    let items = s.queue.move_to(id, body).await?;
    Ok(Json(json!({ "items": items })).into_response())
}

/// Read the settings.
#[utoipa::path(get, path = "/api/config", tag = "settings",
    responses((status = 200, description = "The runtime settings", body = Settings)))]
pub async fn get_config(State(s): State<AppState>) -> Json<crate::model::Settings> {
    Json(s.queue.settings())
}

/// Change some settings.
#[utoipa::path(patch, path = "/api/config", tag = "settings", request_body = SettingsPatch,
    responses((status = 200, description = "The settings after the change", body = Settings), (status = 422, description = "Out of range", body = ErrorBody)))]
pub async fn patch_config(State(s): State<AppState>, ApiJson(patch): ApiJson<SettingsPatch>) -> Result<Response> {
    Ok(Json(s.queue.update_settings(patch).await?).into_response())
}

/// What the page shows a person connecting an agent. With a token required,
/// the snippets carry a placeholder: the page never reveals the token (the
/// tray and the CLI, which hold it, fill it in).
#[utoipa::path(get, path = "/api/clients", tag = "server",
    responses((status = 200, description = "The MCP configuration each client expects", body = ClientsBody)))]
pub async fn clients(State(s): State<AppState>) -> Json<serde_json::Value> {
    let mcp_url = format!("{}/mcp", s.queue.facts().url);
    let program = snippets::bridge_program();
    let endpoint = snippets::Endpoint {
        mcp_url: &mcp_url,
        token: s.security.token_required().then_some(TOKEN_PLACEHOLDER),
        bridge_program: &program,
    };
    Json(json!({ "mcp_url": mcp_url, "clients": snippets::all(&endpoint) }))
}

const TOKEN_PLACEHOLDER: &str = "<your API token>";
