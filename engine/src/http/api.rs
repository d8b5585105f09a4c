//! JSON API handlers (DESIGN §5). Each parses, calls the queue, shapes JSON.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;

use super::{ApiJson, ApiQuery, AppState};
use crate::model::{MoveTo, RequeuePlace, SettingsPatch, StatusFilter};
use crate::{snippets, time, Result};

pub async fn healthz() -> Json<serde_json::Value> {
    Json(json!({ "status": "ok", "server_time": time::now() }))
}

pub async fn status(State(s): State<AppState>) -> Result<Response> {
    Ok(Json(s.queue.status().await?).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    #[serde(default)]
    status: StatusFilter,
    /// At most this many consumed instructions (newest first); pending ones are always all listed.
    limit: Option<u32>,
    /// Skip this many consumed instructions (for "show more").
    #[serde(default)]
    offset: u32,
}

pub async fn list(State(s): State<AppState>, ApiQuery(q): ApiQuery<ListQuery>) -> Result<Response> {
    let items = s.queue.list(q.status, q.limit, q.offset).await?;
    Ok(Json(json!({ "items": items })).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContentBody {
    content: String,
}

pub async fn create(State(s): State<AppState>, ApiJson(body): ApiJson<ContentBody>) -> Result<Response> {
    let item = s.queue.add(body.content).await?;
    Ok((StatusCode::CREATED, Json(json!({ "item": item }))).into_response())
}

pub async fn get_one(State(s): State<AppState>, Path(id): Path<String>) -> Result<Response> {
    let item = s.queue.get(id).await?;
    Ok(Json(json!({ "item": item })).into_response())
}

pub async fn edit(
    State(s): State<AppState>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<ContentBody>,
) -> Result<Response> {
    let item = s.queue.edit(id, body.content).await?;
    Ok(Json(json!({ "item": item })).into_response())
}

pub async fn delete(State(s): State<AppState>, Path(id): Path<String>) -> Result<StatusCode> {
    s.queue.delete(id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RequeueBody {
    #[serde(default)]
    to: RequeuePlace,
}

pub async fn requeue(
    State(s): State<AppState>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<RequeueBody>,
) -> Result<Response> {
    let item = s.queue.requeue(id, body.to).await?;
    Ok((StatusCode::CREATED, Json(json!({ "item": item }))).into_response())
}

pub async fn move_to(
    State(s): State<AppState>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<MoveTo>,
) -> Result<Response> {
    let items = s.queue.move_to(id, body).await?;
    Ok(Json(json!({ "items": items })).into_response())
}

pub async fn get_config(State(s): State<AppState>) -> Json<crate::model::Settings> {
    Json(s.queue.settings())
}

pub async fn patch_config(State(s): State<AppState>, ApiJson(patch): ApiJson<SettingsPatch>) -> Result<Response> {
    Ok(Json(s.queue.update_settings(patch).await?).into_response())
}

/// What the page shows a person connecting an agent. With a token required,
/// the snippets carry a placeholder: the page never reveals the token (the
/// tray and the CLI, which hold it, fill it in).
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
