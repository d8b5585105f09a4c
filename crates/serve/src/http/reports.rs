//! `/api/reports`: what agents reported, newest first, and answering one.
//! Handlers parse, call the [`Queue`](crate::queue::Queue) and return typed
//! bodies; routes and OpenAPI entries are registered in [`routes`].

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::body;
use super::error::ErrorBody;
use super::error::Result;
use super::instructions::ItemBody;
use super::{ApiJson, ApiPath, ApiQuery, AppState};
use crate::model::QueueName;
use crate::model::Report;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(body::json(routes!(list)))
        .routes(body::json(routes!(reply)))
}

/// `{"items": […]}`
#[derive(Serialize, ToSchema)]
pub struct ReportsBody {
    pub items: Vec<Report>,
}

#[derive(Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Only this agent's reports.
    agent_id: Option<crate::model::AgentId>,
    /// Only this queue's reports.
    queue: Option<QueueName>,
    /// Only reports created before this time (the `created_at` of the last one seen: the next page).
    before: Option<String>,
    /// At most this many (default 50, at most 500).
    #[param(value_type = Option<i64>, minimum = 0, maximum = 4294967295_i64)]
    limit: Option<u32>,
}

/// List reports, newest first.
#[utoipa::path(get, path = "/api/reports", tag = "reports", params(ListQuery),
    responses((status = 200, description = "Reports, newest first", body = ReportsBody),
        (status = 400, description = "Malformed request", body = ErrorBody)))]
async fn list(State(s): State<AppState>, ApiQuery(q): ApiQuery<ListQuery>) -> Result<Json<ReportsBody>> {
    let queue = q.queue;
    let limit = q.limit.unwrap_or(50).min(500);
    let items = s.queue.reports(queue, q.agent_id, q.before, limit).await?;
    Ok(Json(ReportsBody { items }))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplyBody {
    /// The answer: an option's text or anything typed (same rules as an instruction)
    #[schema(min_length = 1, pattern = "^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$")]
    content: String,
}

/// Answer a report.
#[utoipa::path(post, path = "/api/reports/{id}/reply", tag = "reports", params(("id" = String, Path, description = "Report id")),
    request_body = ReplyBody,
    responses((status = 201, description = "Queued at the front of the report's queue, for the agent that wrote it", body = ItemBody),
        (status = 400, description = "Blank content or a NUL character", body = ErrorBody),
        (status = 404, description = "No such report", body = ErrorBody),
        (status = 413, description = "Too large", body = ErrorBody)))]
async fn reply(
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<ReplyBody>,
) -> Result<(StatusCode, Json<ItemBody>)> {
    let item = s.queue.reply(id, body.content).await?;
    Ok((StatusCode::CREATED, Json(ItemBody { item })))
}
