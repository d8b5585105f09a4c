//! `/api/instructions`: list, queue, read, edit, delete, send again and
//! reorder. Each handler parses, calls the [`Queue`](crate::queue::Queue) and
//! returns a typed body; its route and OpenAPI entry are registered in
//! [`routes`], the one list.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::attachments::UPLOAD_BODY;
use super::body;
use super::error::ErrorBody;
use super::error::Result;
use super::{ApiJson, ApiPath, ApiQuery, AppState};
use crate::model::Timestamp;
use crate::model::{AgentId, InstructionId, QueueName};
use crate::model::{
    HistoryFilter, Instruction, InstructionPatch, Listing, MoveTo, NewInstruction, RequeuePlace, StatusFilter,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(body::with(UPLOAD_BODY, routes!(list, create)))
        .routes(body::json(routes!(get_one, edit, delete)))
        .routes(body::json(routes!(requeue)))
        .routes(body::json(routes!(move_to)))
        .routes(body::json(routes!(release_held)))
}

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
    /// Only this queue's instructions.
    queue: Option<QueueName>,
    /// Only instructions addressed to this agent id.
    target: Option<AgentId>,
    /// Delivered ones only: every word must appear in the instruction or its report
    /// (as a word or the start of one; case and accents ignored).
    #[param(max_length = 200)]
    q: Option<String>,
    /// Delivered ones only: taken by this agent.
    agent: Option<String>,
    /// Delivered ones only: at or after this time (RFC 3339) or date (`2026-11-24`).
    since: Option<Timestamp>,
    /// Delivered ones only: before this time or date.
    until: Option<Timestamp>,
}

/// List instructions.
#[utoipa::path(get, path = "/api/instructions", tag = "instructions", params(ListQuery),
    responses((status = 200, description = "Pending instructions (all of them, next first), then consumed ones (newest first)", body = ItemsBody), (status = 400, description = "Malformed request", body = ErrorBody)))]
async fn list(State(s): State<AppState>, ApiQuery(q): ApiQuery<ListQuery>) -> Result<Json<ItemsBody>> {
    let listing = Listing {
        status: q.status,
        limit: q.limit,
        offset: q.offset,
        queue: q.queue,
        target: q.target,
        history: HistoryFilter {
            search: q.q.as_deref().map(crate::model::search_query).transpose()?.flatten(),
            agent: q.agent,
            since: q.since,
            until: q.until,
        },
    };
    let items = s.queue.list(listing).await?;
    Ok(Json(ItemsBody { items }))
}

/// Queue an instruction: JSON, or a `multipart/form-data` form with files.
#[utoipa::path(post, path = "/api/instructions", tag = "instructions",
    request_body(content(
        (NewInstruction = "application/json"),
        (super::attachments::NewInstructionForm = "multipart/form-data"),
    )),
    responses((status = 201, description = "Queued at the back of its queue (created if new)", body = ItemBody),
        (status = 400, description = "Malformed request, blank content without files, a NUL character, or an unreadable image", body = ErrorBody),
        (status = 413, description = "Too large: the text, more than 8 files or 20 MiB, or an image over 50 megapixels or 65,535 pixels on a side", body = ErrorBody),
        (status = 415, description = "A file that is not an accepted image or UTF-8 text", body = ErrorBody),
        (status = 422, description = "A JSON body of the wrong shape", body = ErrorBody)))]
async fn create(State(s): State<AppState>, req: axum::extract::Request) -> axum::response::Response {
    use axum::extract::FromRequest;
    use axum::response::IntoResponse;
    let created: super::error::Result<_> = if super::attachments::is_multipart(req.headers()) {
        match super::attachments::read_form(req).await {
            Ok((new, uploads)) => s.queue.add_with_files(new, uploads).await.map_err(Into::into),
            Err(e) => Err(e),
        }
    } else {
        match ApiJson::<NewInstruction>::from_request(req, &()).await {
            Ok(ApiJson(body)) => s.queue.add(body).await.map_err(Into::into),
            Err(rejection) => return rejection,
        }
    };
    match created {
        Ok(item) => (StatusCode::CREATED, Json(ItemBody { item })).into_response(),
        Err(e) => e.into_response(),
    }
}

/// One instruction.
#[utoipa::path(get, path = "/api/instructions/{id}", tag = "instructions", params(("id" = InstructionId, Path, description = "Instruction id")),
    responses((status = 200, description = "The instruction", body = ItemBody), (status = 404, description = "No such instruction", body = ErrorBody)))]
async fn get_one(State(s): State<AppState>, ApiPath(id): ApiPath<InstructionId>) -> Result<Json<ItemBody>> {
    let item = s.queue.get(id).await?;
    Ok(Json(ItemBody { item }))
}

/// Edit a pending instruction: its text, queue or target.
#[utoipa::path(patch, path = "/api/instructions/{id}", tag = "instructions", params(("id" = InstructionId, Path, description = "Instruction id")),
    request_body = InstructionPatch,
    responses((status = 200, description = "Edited", body = ItemBody), (status = 404, description = "No such instruction", body = ErrorBody),
        (status = 409, description = "Already delivered to an agent: it can no longer change", body = ErrorBody)))]
async fn edit(
    State(s): State<AppState>,
    ApiPath(id): ApiPath<InstructionId>,
    ApiJson(body): ApiJson<InstructionPatch>,
) -> Result<Json<ItemBody>> {
    let item = s.queue.edit(id, body).await?;
    Ok(Json(ItemBody { item }))
}

/// Delete a pending instruction.
#[utoipa::path(delete, path = "/api/instructions/{id}", tag = "instructions", params(("id" = InstructionId, Path, description = "Instruction id")),
    responses((status = 204, description = "Deleted"), (status = 404, description = "No such instruction", body = ErrorBody),
        (status = 409, description = "Already delivered to an agent", body = ErrorBody)))]
async fn delete(State(s): State<AppState>, ApiPath(id): ApiPath<InstructionId>) -> Result<StatusCode> {
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
#[utoipa::path(post, path = "/api/instructions/{id}/requeue", tag = "instructions", params(("id" = InstructionId, Path, description = "A consumed instruction's id")),
    request_body = RequeueBody,
    responses((status = 201, description = "A pending copy, at the front unless `to` says back", body = ItemBody),
        (status = 404, description = "No such instruction", body = ErrorBody), (status = 409, description = "Still pending", body = ErrorBody)))]
async fn requeue(
    State(s): State<AppState>,
    ApiPath(id): ApiPath<InstructionId>,
    ApiJson(body): ApiJson<RequeueBody>,
) -> Result<(StatusCode, Json<ItemBody>)> {
    let item = s.queue.requeue(id, body.to).await?;
    Ok((StatusCode::CREATED, Json(ItemBody { item })))
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReleaseHeld {
    /// One queue's; absent: every queue's.
    #[serde(default)]
    queue: Option<QueueName>,
}

/// Release the pending instructions held since an import or a restore: from
/// now on they go to agents like any other.
#[utoipa::path(post, path = "/api/instructions/release", tag = "instructions",
    request_body = ReleaseHeld,
    responses((status = 200, description = "The instructions released, as they are now", body = ItemsBody),
        (status = 400, description = "Not a valid queue name", body = ErrorBody)))]
async fn release_held(State(s): State<AppState>, ApiJson(body): ApiJson<ReleaseHeld>) -> Result<Json<ItemsBody>> {
    let items = s.queue.release_held(body.queue.as_ref()).await?;
    Ok(Json(ItemsBody { items }))
}

/// Reorder a pending instruction.
#[utoipa::path(post, path = "/api/instructions/{id}/move", tag = "instructions", params(("id" = InstructionId, Path, description = "A pending instruction's id")),
    request_body = MoveTo,
    responses((status = 200, description = "Its queue's pending instructions in their new order", body = ItemsBody),
        (status = 404, description = "No such instruction", body = ErrorBody), (status = 409, description = "Not pending", body = ErrorBody)))]
async fn move_to(
    State(s): State<AppState>,
    ApiPath(id): ApiPath<InstructionId>,
    ApiJson(body): ApiJson<MoveTo>,
) -> Result<Json<ItemsBody>> {
    let items = s.queue.move_to(id, body).await?;
    Ok(Json(ItemsBody { items }))
}
