//! `/api/queues`, `/api/hold`, `/api/release` and `/api/agents/stop`: the
//! person's hand on queues and agents. Handlers parse, call the
//! [`Queue`](crate::queue::Queue) and return typed bodies; routes and OpenAPI
//! entries are registered in [`routes`].

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
use super::{ApiJson, ApiPath, ApiQuery, AppState};
use crate::model::QueueName;
use crate::model::{QueueInfo, QueuePatch, QueueRecord};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(body::json(routes!(list, create)))
        .routes(body::json(routes!(get_one, update)))
        .routes(body::json(routes!(hold)))
        .routes(body::json(routes!(release)))
        .routes(body::json(routes!(stop_agent)))
        .routes(body::json(routes!(forget_agents)))
}

/// `{"items": […]}`
#[derive(Serialize, ToSchema)]
pub struct QueuesBody {
    pub items: Vec<QueueInfo>,
}

/// `{"item": …}`
#[derive(Serialize, ToSchema)]
pub struct QueueBody {
    pub item: QueueInfo,
}

#[derive(Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Include archived queues (default false).
    #[serde(default)]
    archived: bool,
}

/// List queues.
#[utoipa::path(get, path = "/api/queues", tag = "queues", params(ListQuery),
    responses((status = 200, description = "Queues, `default` first, with counts and waiting agents", body = QueuesBody),
        (status = 400, description = "Malformed request", body = ErrorBody)))]
async fn list(State(s): State<AppState>, ApiQuery(q): ApiQuery<ListQuery>) -> Result<Json<QueuesBody>> {
    Ok(Json(QueuesBody {
        items: s.queue.queues(q.archived).await?,
    }))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewQueue {
    /// 1–64 characters of a-z 0-9 . _ - (upper case is lowered)
    name: QueueName,
}

/// Create a queue.
#[utoipa::path(post, path = "/api/queues", tag = "queues", request_body = NewQueue,
    responses((status = 201, description = "Created (or restored from the archive)", body = QueueBody),
        (status = 400, description = "Not a valid queue name", body = ErrorBody),
        (status = 409, description = "A queue with that name exists", body = ErrorBody)))]
async fn create(State(s): State<AppState>, ApiJson(body): ApiJson<NewQueue>) -> Result<(StatusCode, Json<QueueBody>)> {
    let item = s.queue.create_queue(&body.name).await?;
    Ok((StatusCode::CREATED, Json(QueueBody { item })))
}

/// One queue.
#[utoipa::path(get, path = "/api/queues/{name}", tag = "queues", params(("name" = QueueName, Path, description = "Queue name")),
    responses((status = 200, description = "The queue", body = QueueBody),
        (status = 400, description = "Not a valid queue name", body = ErrorBody),
        (status = 404, description = "No such queue", body = ErrorBody)))]
async fn get_one(State(s): State<AppState>, ApiPath(name): ApiPath<QueueName>) -> Result<Json<QueueBody>> {
    Ok(Json(QueueBody {
        item: s.queue.queue_info(&name).await?,
    }))
}

/// Rename, archive or restore, hold or release a queue.
#[utoipa::path(patch, path = "/api/queues/{name}", tag = "queues", params(("name" = QueueName, Path, description = "Queue name")),
    request_body = QueuePatch,
    responses((status = 200, description = "The queue after the change", body = QueueBody),
        (status = 400, description = "Not a valid queue name", body = ErrorBody),
        (status = 404, description = "No such queue", body = ErrorBody),
        (status = 409, description = "The new name is taken, the queue still has pending instructions (archive), or it is `default` (never renamed or archived)", body = ErrorBody)))]
async fn update(
    State(s): State<AppState>,
    ApiPath(name): ApiPath<QueueName>,
    ApiJson(patch): ApiJson<QueuePatch>,
) -> Result<Json<QueueBody>> {
    Ok(Json(QueueBody {
        item: s.queue.update_queue(&name, patch).await?,
    }))
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HoldBody {
    /// One queue; absent: every queue.
    #[serde(default)]
    queue: Option<QueueName>,
}

/// `{"changed": […]}`
#[derive(Serialize, ToSchema)]
pub struct ChangedBody {
    /// The queues whose held state changed.
    pub changed: Vec<QueueRecord>,
}

/// Hold one queue or all of them.
#[utoipa::path(post, path = "/api/hold", tag = "queues", request_body = HoldBody,
    responses((status = 200, description = "Held: calls keep waiting and end as usual, nothing is delivered until release", body = ChangedBody),
        (status = 400, description = "Not a valid queue name", body = ErrorBody),
        (status = 404, description = "No such queue", body = ErrorBody)))]
async fn hold(State(s): State<AppState>, ApiJson(body): ApiJson<HoldBody>) -> Result<Json<ChangedBody>> {
    Ok(Json(ChangedBody {
        changed: s.queue.set_held(body.queue.as_ref(), true).await?,
    }))
}

/// Release one queue or all of them.
#[utoipa::path(post, path = "/api/release", tag = "queues", request_body = HoldBody,
    responses((status = 200, description = "Released: waiting calls are offered instructions at once", body = ChangedBody),
        (status = 400, description = "Not a valid queue name", body = ErrorBody),
        (status = 404, description = "No such queue", body = ErrorBody)))]
async fn release(State(s): State<AppState>, ApiJson(body): ApiJson<HoldBody>) -> Result<Json<ChangedBody>> {
    Ok(Json(ChangedBody {
        changed: s.queue.set_held(body.queue.as_ref(), false).await?,
    }))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StopBody {
    /// The agent to stop (its id as it calls: not blank, no control characters).
    #[schema(
        min_length = 1,
        max_length = 128,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$"
    )]
    agent_id: crate::model::AgentId,
    /// Its queue (default `default`).
    #[serde(default)]
    queue: Option<QueueName>,
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ForgetBody {
    /// The agent to forget; absent: every agent that is gone (not heard
    /// from for longer than the `agent_stale_after_seconds` setting).
    #[serde(default)]
    agent_id: Option<crate::model::AgentId>,
    /// Its queue; absent: every queue's.
    #[serde(default)]
    queue: Option<QueueName>,
}

/// `{"forgotten": [{queue, agent_id}…]}`
#[derive(Serialize, ToSchema)]
pub struct Forgotten {
    pub forgotten: Vec<crate::model::AgentRef>,
}

/// Forget agents: one, or every one that is gone. Their history stays
/// (what they took and reported); an agent that calls again is listed again.
#[utoipa::path(post, path = "/api/agents/forget", tag = "queues", request_body = ForgetBody,
    responses((status = 200, description = "The agents forgotten", body = Forgotten),
        (status = 400, description = "Invalid agent id or queue name", body = ErrorBody),
        (status = 409, description = "That agent is listening now: stop it first", body = ErrorBody)))]
async fn forget_agents(State(s): State<AppState>, ApiJson(body): ApiJson<ForgetBody>) -> Result<Json<Forgotten>> {
    let forgotten = s
        .queue
        .forget_agents(body.queue.as_ref(), body.agent_id.as_ref())
        .await?;
    Ok(Json(Forgotten { forgotten }))
}

/// End an agent's loop.
#[utoipa::path(post, path = "/api/agents/stop", tag = "queues", request_body = StopBody,
    responses((status = 204, description = "Its waiting call, or else its next call, returns result_type \"stop\" (once)"),
        (status = 400, description = "Invalid agent id or queue name", body = ErrorBody),
        (status = 404, description = "No such agent has called in that queue", body = ErrorBody)))]
async fn stop_agent(State(s): State<AppState>, ApiJson(body): ApiJson<StopBody>) -> Result<StatusCode> {
    let queue = body.queue.unwrap_or_else(QueueName::default_queue);
    s.queue.stop_agent(&queue, &body.agent_id).await?;
    Ok(StatusCode::NO_CONTENT)
}
