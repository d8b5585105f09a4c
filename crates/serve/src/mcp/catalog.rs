//! The read-only resources and the prompt: `local-mcp://status`,
//! `local-mcp://queue` (pending instructions, JSON), `local-mcp://reports`,
//! `local-mcp://attachments/<id>` (an attachment's delivery copy) and
//! `agent-loop`, which tells a model how to work through the queue.

use rmcp::model::{
    GetPromptResult, Prompt, PromptArgument, PromptMessage, ReadResourceResult, Resource, ResourceContents, Role,
};
use rmcp::ErrorData as McpError;
use serde_json::json;

use super::tools::get_user_request::NAME as TOOL_NAME;
use crate::model::{Listing, QueueName};
use crate::queue::Queue;
use crate::Error;

pub const STATUS_URI: &str = "local-mcp://status";
pub const QUEUE_URI: &str = "local-mcp://queue";
pub const REPORTS_URI: &str = "local-mcp://reports";
/// `local-mcp://attachments/<id>`: the copy of an attachment agents get.
pub const ATTACHMENT_URI_PREFIX: &str = "local-mcp://attachments/";
pub const LOOP_PROMPT: &str = "agent-loop";

const JSON: &str = "application/json";

pub fn resources() -> Vec<Resource> {
    vec![
        Resource::new(STATUS_URI, "status")
            .with_title("local-mcp status")
            .with_description("Server, agents and queue counts, as the page shows them")
            .with_mime_type(JSON),
        Resource::new(QUEUE_URI, "queue")
            .with_title("Pending instructions")
            .with_description(
                "Your queue's instructions waiting to be picked up, next first (read-only: taking one is get_user_request)",
            )
            .with_mime_type(JSON),
        Resource::new(REPORTS_URI, "reports")
            .with_title("Latest reports")
            .with_description("The newest report of each agent of your queue: what it did, or what it asked")
            .with_mime_type(JSON),
    ]
}

/// Read a resource for a caller connected to `caller_queue`.
pub async fn read(queue: &Queue, caller_queue: &QueueName, uri: &str) -> Result<ReadResourceResult, McpError> {
    if let Some(id) = uri.strip_prefix(ATTACHMENT_URI_PREFIX) {
        return read_attachment(queue, id, uri).await;
    }
    let value = match uri {
        STATUS_URI => serde_json::to_value(queue.status().await.map_err(internal)?),
        QUEUE_URI => {
            queue.ensure_queue(caller_queue).await.map_err(internal)?;
            let items = queue
                .list(Listing::pending().in_queue(caller_queue))
                .await
                .map_err(internal)?;
            let info = queue.queue_info(caller_queue).await.map_err(internal)?;
            Ok(json!({ "queue": caller_queue, "held": info.held, "pending_count": items.len(), "items": items }))
        }
        REPORTS_URI => {
            let items = queue.latest_reports(caller_queue.clone()).await.map_err(internal)?;
            Ok(json!({ "queue": caller_queue, "items": items }))
        }
        _ => {
            return Err(McpError::resource_not_found(
                format!("no resource {uri:?}; there are {STATUS_URI}, {QUEUE_URI} and {REPORTS_URI}"),
                None,
            ))
        }
    }
    .map_err(|e| McpError::internal_error(format!("could not encode {uri}: {e}"), None))?;
    let text = serde_json::to_string_pretty(&value).unwrap_or_default();
    Ok(ReadResourceResult::new(vec![
        ResourceContents::text(text, uri).with_mime_type(JSON)
    ]))
}

/// An attachment's delivery copy: an image as base64, text as text.
async fn read_attachment(queue: &Queue, id: &str, uri: &str) -> Result<ReadResourceResult, McpError> {
    let (attachment, bytes) = match queue.attachment_file(id.to_owned(), true).await {
        Ok(found) => found,
        Err(Error::NotFound(m)) => return Err(McpError::resource_not_found(m, None)),
        Err(e) => return Err(internal(e)),
    };
    let mime = attachment.delivery.mime_type;
    let contents = if attachment.kind == "image" {
        use base64::Engine as _;
        ResourceContents::blob(base64::engine::general_purpose::STANDARD.encode(bytes), uri)
    } else {
        ResourceContents::text(String::from_utf8_lossy(&bytes), uri)
    };
    Ok(ReadResourceResult::new(vec![contents.with_mime_type(mime)]))
}

fn internal(e: Error) -> McpError {
    e.log();
    McpError::internal_error(e.to_string(), None)
}

pub fn prompts() -> Vec<Prompt> {
    vec![Prompt::new(
        LOOP_PROMPT,
        Some("How to work through the user's local-mcp queue: get an instruction, do it, ask again"),
        Some(vec![PromptArgument::new("agent_id")
            .with_description("A stable name for you, e.g. claude-code-myrepo (default: default)")
            .with_required(false)]),
    )
    .with_title("Work through the user's queue")]
}

pub fn get_prompt(name: &str, agent_id: Option<&str>) -> Result<GetPromptResult, McpError> {
    if name != LOOP_PROMPT {
        return Err(McpError::invalid_params(
            format!("no prompt {name:?}; the only prompt is {LOOP_PROMPT}"),
            None,
        ));
    }
    let agent_id = agent_id.filter(|a| !a.trim().is_empty()).unwrap_or("default");
    let text = format!(
        "You are connected to local-mcp, the user's queue of instructions for you.\n\n\
         Work in a loop:\n\
         1. Call the `{TOOL_NAME}` tool with {{\"agent_id\": \"{agent_id}\"}} — always the same agent_id.\n\
         2. If `result_type` is \"instruction\", carry out `instruction.content` completely, as if the user had \
            typed it to you now.\n\
         3. Call the tool again with the same agent_id and a short Markdown `report` of what you did (or a \
            question for the user, with suggested answers in `options`).\n\
         4. If `result_type` is \"empty\" or \"default_response\", nothing is queued yet: follow `response` if \
            there is one, then go back to step 1.\n\
         5. If `result_type` is \"stop\", the user ended the session: stop calling the tool.\n\n\
         Do not end your session because the queue is empty: the call waits for the user, and the user may \
         queue a follow-up at any moment. Stop only when the user tells you to."
    );
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
        .with_description("The local-mcp agent loop"))
}
