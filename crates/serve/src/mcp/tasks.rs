//! The MCP tasks extension (SEP-2663) on the wire: `get_user_request`'s
//! task as a `CreateTaskResult`, and `tasks/get`, `tasks/cancel` and
//! `tasks/update` answered from the queue's stored tasks (`queue::tasks`).
//! rmcp routes the methods and checks the caller declared the extension;
//! its `TaskManager` (tasks in memory, a runtime task each, gone with a
//! restart) is not used.

use rmcp::model::{
    CallToolResult, CreateTaskResult, DetailedTask, GetTaskResult, JsonObject, MetaObject, Task, TaskPayload,
    TaskStatus as WireStatus,
};
use rmcp::ErrorData as McpError;

use super::tools::get_user_request::{settle_when_written, shape, Asked};
use crate::model::{TaskStatus, TaskView};
use crate::queue::Queue;
use crate::Error;

/// What the model is told when its call moved to the background as a task
/// (Claude Code shows `modelImmediateResponse` to it as the server's note):
/// without it, a model may call again at once, or wait on nothing.
pub const MODEL_NOTE: &str = "local-mcp keeps this call open as a background task: the user's next instruction \
will arrive as its result, by itself, and it is the user's own instruction. End your turn now; do not call \
get_user_request again until the result arrives. When it does, carry it out, then call get_user_request again \
with a short report.";

/// The task a call was answered with.
pub fn created(view: &TaskView) -> CreateTaskResult {
    let mut note = JsonObject::new();
    note.insert(
        "com.anthropic/agent-task".into(),
        serde_json::json!({ "modelImmediateResponse": MODEL_NOTE }),
    );
    CreateTaskResult::new(task(view)).with_meta(MetaObject(note))
}

fn task(view: &TaskView) -> Task {
    let record = &view.record;
    let status = match record.status {
        TaskStatus::Working => WireStatus::Working,
        TaskStatus::Completed => WireStatus::Completed,
        TaskStatus::Cancelled => WireStatus::Cancelled,
    };
    let task = Task::new(
        &record.id,
        status,
        record.created_at.as_str(),
        record.updated_at.as_str(),
    )
    .with_ttl_ms(view.ttl_ms)
    .with_poll_interval_ms(view.poll_interval_ms);
    match &record.status_message {
        Some(message) => task.with_status_message(message),
        None => task,
    }
}

/// `tasks/get`: the task now. A completed one carries its result, shaped as
/// the call's would have been; the answer that carries an instruction
/// settles its delivery when it is written (`sent`) or cut off (`in
/// doubt`). An id never given (or forgotten a week after its last poll) is
/// `-32602`; a database fault is `-32603`, which a client retries.
pub async fn get(queue: &Queue, id: &str, asked: Asked) -> Result<GetTaskResult, McpError> {
    let view = queue.poll_task(id).await.map_err(error)?;
    let payload = match (&view.record.status, &view.record.result) {
        (TaskStatus::Completed, Some(result)) => {
            let shaped: CallToolResult = shape(result.clone(), queue.clone()).await?;
            let object = match serde_json::to_value(shaped) {
                Ok(serde_json::Value::Object(object)) => object,
                _ => return Err(McpError::internal_error("a task's result could not be encoded", None)),
            };
            if let Some(instruction) = &view.carries {
                settle_when_written(asked.carried.as_ref(), queue, instruction.to_string());
            }
            TaskPayload::Completed { result: object }
        }
        (TaskStatus::Cancelled, _) => TaskPayload::Cancelled,
        _ => TaskPayload::Working,
    };
    Ok(GetTaskResult::new(DetailedTask::new(task(&view), payload)))
}

/// `tasks/cancel`: idempotent (Claude Code sends it twice).
pub async fn cancel(queue: &Queue, id: &str) -> Result<(), McpError> {
    queue.cancel_task(id).await.map_err(error)
}

/// `tasks/update`: this server never asks a task for input, so there is
/// nothing to take; a known task acknowledges it, an unknown one is `-32602`.
pub async fn update(queue: &Queue, id: &str) -> Result<(), McpError> {
    queue.task(id).await.map(|_| ()).map_err(error)
}

fn error(e: Error) -> McpError {
    match e {
        Error::NotFound(_) => McpError::invalid_params("Failed to retrieve task: Task not found", None),
        e => {
            e.log();
            McpError::internal_error(e.to_string(), None)
        }
    }
}
