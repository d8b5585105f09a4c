//! `get_user_request`: hand the caller the next instruction, or wait for one.
//!
//! A thin adapter over [`Queue::get_user_request`]: it parses arguments,
//! merges the ways a caller can go away into one token, sends progress while
//! the call waits, and shapes the result: the JSON as the first text block,
//! then one image block per attached image and one embedded resource per
//! small text file. No `structuredContent` and no `outputSchema`: Claude
//! Code drops the image blocks of a result that carries structured content
//! (anthropics/claude-code#54737), and a structured copy of base64 data
//! blows its result cap. Errors a caller can fix become tool results with
//! `isError: true` (an agent's loop survives them); only internal failures
//! are protocol errors.

use std::future::Future;
use std::time::Duration;

use base64::Engine as _;
use futures::future::{BoxFuture, Either};
use rmcp::handler::server::common::schema_for_type;
use rmcp::model::{
    CallToolResponse, CallToolResult, ContentBlock as Content, JsonObject, ProgressNotification,
    ProgressNotificationParam, ProgressToken, ResourceContents, ServerJsonRpcMessage, ServerNotification, Tool,
    ToolAnnotations,
};
#[allow(deprecated)] // see `announce_wait`
use rmcp::model::{LoggingLevel, LoggingMessageNotification, LoggingMessageNotificationParam};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::{portable, tool_error};
use crate::mcp::disconnect::{Carried, ClientGone};
use crate::model::{AgentId, QueueName, UserRequestResult};
use crate::model::{Caller, Delivery};
use crate::queue::{Answer, Queue};

pub const NAME: &str = "get_user_request";

/// How often a waiting call reports progress when the caller asked for it
/// (clients that reset their timeout on progress can then wait longer).
pub const PROGRESS_EVERY: Duration = Duration::from_secs(10);

const TOOL_DESCRIPTION: &str = "Get the user's next instruction from their local-mcp queue. \
Returns at most one instruction (result_type \"instruction\"): act on it, then call this tool again. \
When the queue is empty the call waits for a server-controlled time and returns result_type \"empty\" \
or \"default_response\" with a `response` text to follow: call this tool again instead of ending your \
session, so you pick up the user's follow-up requests. Pass the same `agent_id` on every call; a new call \
with the same agent_id replaces an older call that is still waiting. Pass `report`, a short Markdown summary of \
what you did with the previous instruction (or a question for the user, with suggested answers in `options`), \
so the user can follow your work. If result_type is \"stop\", the user ended your session: stop calling this tool.";

/// Arguments of `get_user_request`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct Args {
    /// A stable name for this agent, e.g. "copilot-myrepo" (max 128 characters; default "default").
    #[schemars(length(max = 128))]
    pub agent_id: Option<String>,
    /// The queue to take from, for clients with one global configuration
    /// (1-64 of a-z 0-9 . _ -; default "default"). A queue in the server URL
    /// (/mcp/q/<name>) wins over this.
    #[schemars(length(min = 1, max = 64))]
    pub queue: Option<String>,
    /// Markdown for the user (at most 64 KiB): what you did since your previous
    /// call, typically the outcome of the last instruction, or a question.
    #[schemars(length(max = 65536))]
    pub report: Option<String>,
    /// Suggested answers to a question in `report` (at most 8, each at most
    /// 200 characters); the user can pick one with a click.
    #[schemars(length(max = 8))]
    pub options: Option<Vec<String>>,
}

/// The tool as listed by `tools/list`.
pub fn definition() -> Tool {
    let mut annotations = ToolAnnotations::new();
    annotations.title = Some("Get the user's next request".into());
    annotations.read_only_hint = Some(false);
    annotations.destructive_hint = Some(false);
    annotations.idempotent_hint = Some(false);
    annotations.open_world_hint = Some(false);
    Tool::new(NAME, TOOL_DESCRIPTION, portable(&schema_for_type::<Args>()))
        .with_title("Get the user's next request")
        .with_annotations(annotations)
}

/// What a call needs from the request it came in, however it was served
/// (by rmcp's handler, or by the direct path of `mcp::direct`).
pub struct Asked {
    /// The queue named by the URL the caller was configured with.
    pub queue_in_url: crate::Result<Option<QueueName>>,
    pub progress_token: Option<ProgressToken>,
    /// Cancelled when the caller has gone (rmcp's calls: or the server
    /// stops; the queue's wait watches the shutdown itself).
    pub gone: CancellationToken,
    /// Where the response's settlement is left (`mcp::disconnect`); none
    /// when not served over HTTP.
    pub carried: Option<Carried>,
    pub notify: Notify,
}

impl Asked {
    /// A call as rmcp's handler gets it: its token merged with the
    /// response-body guard's (session mode does not cancel on a hang-up).
    pub fn of(ctx: &RequestContext<RoleServer>) -> Self {
        let head = ctx.extensions.get::<http::request::Parts>();
        let guard = head
            .and_then(|parts| parts.extensions.get::<ClientGone>())
            .map(|g| g.0.clone());
        Asked {
            queue_in_url: crate::mcp::url_queue(head),
            progress_token: ctx.meta.get_progress_token(),
            gone: either_cancelled(&ctx.ct, guard),
            carried: head.and_then(|parts| parts.extensions.get::<Carried>()).cloned(),
            notify: Notify::Peer(ctx.peer.clone()),
        }
    }
}

/// Where a waiting call's notifications go.
pub enum Notify {
    /// rmcp's peer of the request.
    Peer(Peer<RoleServer>),
    /// The direct path's response stream: each message as its JSON text.
    /// `futures`' channel, not tokio's: tokio's lays out a block of 32
    /// slots and cache-padded ends (~1.3 KiB held by every waiting call).
    Stream(futures::channel::mpsc::Sender<String>),
}

impl Notify {
    /// Send one notification; `false` if it could not be (the caller left).
    async fn send(&self, notification: ServerNotification) -> bool {
        match self {
            Notify::Peer(peer) => peer.send_notification(notification).await.is_ok(),
            Notify::Stream(tx) => match crate::mcp::encode(&ServerJsonRpcMessage::notification(notification)) {
                Some(json) => futures::SinkExt::send(&mut tx.clone(), json).await.is_ok(),
                None => true,
            },
        }
    }
}

/// `arguments`: the call's, as sent (the rest of its parameters is the
/// tool's name).
///
/// What can be checked at once is, before the future exists: the future
/// holds only what the wait needs, since every waiting call keeps it (a
/// task is as large as its largest state) for as long as it waits.
pub fn call(
    queue: Queue,
    arguments: Option<JsonObject>,
    asked: Asked,
    caller: Caller,
) -> impl Future<Output = Result<CallToolResult, McpError>> + Send + 'static {
    // However the call ends, early included, its token ends with it: on
    // rmcp's path that ends the task that merged the caller's tokens
    // (`either_cancelled`), which would otherwise live as long as its
    // longest-lived parent; on the direct path it is the response guard's
    // own token, which nothing reads once the call has ended.
    let ends = asked.gone.clone().drop_guard();
    let Wanted {
        queue_name,
        agent_id,
        report,
    } = match read_arguments(arguments, asked.queue_in_url) {
        Ok(wanted) => wanted,
        Err(refused) => return Either::Left(std::future::ready(Ok(refused))),
    };
    let Asked {
        progress_token,
        gone,
        carried,
        notify,
        ..
    } = asked;
    let in_flight = queue.call_in_flight();
    Either::Right(async move {
        let (_ends, _in_flight) = (ends, in_flight);
        let silent = caller.silent;
        // The wait in a block of its own: its future is dropped before the
        // answer is shaped.
        let result = {
            let (waiting_tx, waiting_rx) = tokio::sync::oneshot::channel();
            // Pinned where it is made: a future moved into `tokio::pin!` keeps its
            // first place too (each waiting call held two copies, ~3 KiB each).
            let mut call = std::pin::pin!(queue.get_user_request(
                queue_name.as_ref(),
                agent_id.as_ref(),
                caller,
                report,
                gone.clone(),
                Some(waiting_tx),
            ));
            let mut waiting_rx = Some(waiting_rx);
            let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
            let started = tokio::time::Instant::now();
            let mut total = 0.0;
            loop {
                tokio::select! {
                    r = &mut call => break r,
                    w = async { waiting_rx.as_mut().expect("guarded").await }, if waiting_rx.is_some() => {
                        waiting_rx = None;
                        if let Ok(wait_seconds) = w {
                            total = f64::from(wait_seconds);
                            // A caller that negotiated in `_meta` gets no response
                            // head (so no keep-alives) before the first message, from
                            // rmcp or the direct path, and clients give up after
                            // 300 s of silence: one message now opens the SSE stream.
                            // Boxed, as the send below: what a send holds (a message,
                            // rmcp's peer's request) would otherwise be laid out in
                            // every waiting call's future, for its whole wait.
                            Box::pin(announce_wait(&notify, progress_token.clone(), wait_seconds, silent)).await;
                        }
                    }
                    _ = ticks.tick(), if progress_token.is_some() && waiting_rx.is_none() => {
                        if let Some(token) = progress_token.clone() {
                            let waited = started.elapsed().as_secs_f64().floor();
                            let param = ProgressNotificationParam::new(token, waited)
                                .with_total(total)
                                .with_message("waiting for the user's next instruction");
                            // A failed send means the caller left; `gone` covers that.
                            Box::pin(notify.send(ProgressNotification::new(param).into())).await;
                        }
                    }
                }
            }
        };

        answer(result.map(|(result, _outcome)| result), carried.as_ref(), &queue).await
    })
}

/// A call whose client takes tasks (it declared the extension in this
/// call's capabilities): answered at once — with what it can take now, or
/// else with a task its client polls (`mcp::tasks`). Nothing waits.
pub fn call_in_task(
    queue: Queue,
    arguments: Option<JsonObject>,
    asked: Asked,
    caller: Caller,
) -> BoxFuture<'static, Result<CallToolResponse, McpError>> {
    let Wanted {
        queue_name,
        agent_id,
        report,
    } = match read_arguments(arguments, asked.queue_in_url) {
        Ok(wanted) => wanted,
        Err(refused) => return Box::pin(std::future::ready(Ok(refused.into()))),
    };
    let carried = asked.carried;
    Box::pin(async move {
        let _in_flight = queue.call_in_flight();
        let answered = queue
            .get_user_request_or_task(queue_name.as_ref(), agent_id.as_ref(), caller, report)
            .await;
        match answered {
            Ok(Answer::Task(view)) => Ok(CallToolResponse::Task(crate::mcp::tasks::created(&view))),
            Ok(Answer::Now(result, _outcome)) => answer(Ok(result), carried.as_ref(), &queue).await.map(Into::into),
            Err(e) => answer(Err(e), carried.as_ref(), &queue).await.map(Into::into),
        }
    })
}

/// The tool's answer from the queue's. Boxed: made once a call has ended,
/// it would otherwise be laid out after the wait's state in every call.
fn answer(
    result: crate::Result<UserRequestResult>,
    carried: Option<&Carried>,
    queue: &Queue,
) -> BoxFuture<'static, Result<CallToolResult, McpError>> {
    match result {
        Ok(result) => {
            if let Some(item) = &result.instruction {
                settle_when_written(carried, queue, item.id.clone());
            }
            Box::pin(shape(result, queue.clone()))
        }
        Err(e) if e.is_internal() => {
            // The edge where a failure leaves the engine: log it here, once.
            e.log();
            Box::pin(std::future::ready(Err(McpError::internal_error(e.to_string(), None))))
        }
        Err(e) => Box::pin(std::future::ready(Ok(tool_error(&e.to_string())))),
    }
}

/// What a call asks of the queue.
struct Wanted {
    queue_name: Option<QueueName>,
    agent_id: Option<AgentId>,
    report: Option<(String, Vec<String>)>,
}

/// The call's arguments as the queue takes them, or the tool error (a
/// result the agent can act on) that refuses them.
// The error is the tool result the agent gets, built at most once per call.
#[allow(clippy::result_large_err)]
fn read_arguments(
    arguments: Option<JsonObject>,
    queue_in_url: crate::Result<Option<QueueName>>,
) -> Result<Wanted, CallToolResult> {
    let args: Args = match arguments {
        None => Args::default(),
        Some(map) => serde_json::from_value(serde_json::Value::Object(map))
            .map_err(|e| tool_error(&format!("invalid arguments: {e}")))?,
    };
    // The URL the client was configured with wins over what the model passes.
    let from_url = queue_in_url.map_err(|e| tool_error(&e.to_string()))?;
    let report = crate::model::report_args(args.report, args.options).map_err(|e| tool_error(&e.to_string()))?;
    // A blank queue or agent argument is none given.
    let queue_name = match from_url {
        Some(q) => Some(q),
        None => args
            .queue
            .as_deref()
            .map(str::trim)
            .filter(|q| !q.is_empty())
            .map(QueueName::new)
            .transpose()
            .map_err(|e| tool_error(&e.to_string()))?,
    };
    let agent_id = crate::model::agent_id(args.agent_id.as_deref()).map_err(|e| tool_error(&e.to_string()))?;
    Ok(Wanted {
        queue_name,
        agent_id,
        report,
    })
}

/// The result as content blocks: the JSON first, then the attachments that
/// ride inline, read from their delivery copies (inside the attachments
/// folder, never through a link: `Queue::attachment_file`). One that cannot
/// be read goes by path only (and its JSON says so).
pub(crate) async fn shape(mut result: UserRequestResult, queue: Queue) -> Result<CallToolResult, McpError> {
    let mut blocks = Vec::new();
    if let Some(instruction) = result.instruction.as_mut() {
        for a in instruction.attachments.iter_mut().filter(|a| a.inline) {
            match queue.attachment_file(a.id.clone(), true).await.map(|(_, bytes)| bytes) {
                Ok(bytes) if a.mime_type.starts_with("image/") => {
                    blocks.push(Content::image(
                        base64::engine::general_purpose::STANDARD.encode(bytes),
                        a.mime_type.clone(),
                    ));
                }
                Ok(bytes) => {
                    let text = String::from_utf8_lossy(&bytes).into_owned();
                    let uri = format!("{}{}", crate::mcp::catalog::ATTACHMENT_URI_PREFIX, a.id);
                    blocks.push(Content::resource(
                        ResourceContents::text(text, uri).with_mime_type(a.mime_type.clone()),
                    ));
                }
                Err(e) => {
                    tracing::warn!(path = %a.path, error = %e, "an attachment's delivery copy cannot be read; sent by path only");
                    a.inline = false;
                }
            }
        }
    }
    let json = serde_json::to_string(&result)
        .map_err(|e| McpError::internal_error(format!("could not encode the result: {e}"), None))?;
    blocks.insert(0, Content::text(json));
    Ok(CallToolResult::success(blocks))
}

/// The first message of a waiting call: progress 0 when the caller asked
/// for progress, otherwise a debug-level log line. Logging is deprecated
/// (SEP-2577) but valid in the 2025 revisions, and it is the one
/// notification that needs no token from the caller. A 2026-07-28 caller
/// gets log messages only if its request set `_meta.../logLevel` (SEP-2575,
/// "no notifications/message for requests that didn't set logLevel"): one
/// that set neither gets no first message (the known 2026 clients, Claude
/// Code and Copilot CLI, always send a progress token; the Python SDK 2.x
/// does not, and its wait ends inside its HTTP read timeout).
#[allow(deprecated)]
async fn announce_wait(notify: &Notify, token: Option<ProgressToken>, wait_seconds: u32, silent: bool) {
    let message = format!("queue empty: waiting up to {wait_seconds} s for the user's next instruction");
    // Such a call's wait is bounded by an HTTP read timeout instead
    // (`Caller::silent`): its response cannot begin before the answer.
    if silent {
        return;
    }
    let notification: ServerNotification = match token {
        Some(token) => {
            let param = ProgressNotificationParam::new(token, 0.0)
                .with_total(f64::from(wait_seconds))
                .with_message(message);
            ProgressNotification::new(param).into()
        }
        None => {
            let param = LoggingMessageNotificationParam::new(LoggingLevel::Debug, serde_json::Value::String(message))
                .with_logger("local-mcp");
            LoggingMessageNotification::new(param).into()
        }
    };
    if !notify.send(notification).await {
        tracing::debug!("could not announce a wait (caller gone?)");
    }
}

/// Have the response-body guard settle this delivery: `sent` once the
/// answer is written out in full, `in_doubt` if it is cut off. Without the
/// guard (not over HTTP) the claim stays open and the next start doubts it.
pub(crate) fn settle_when_written(carried: Option<&Carried>, queue: &Queue, id: String) {
    let Some(carried) = carried else {
        return;
    };
    let queue = queue.clone();
    carried.carry(
        id.clone(),
        Box::new(move |complete| {
            // Run from the body's poll or its drop: this only queues the settlement.
            queue.settle_delivery(id, if complete { Delivery::Sent } else { Delivery::InDoubt });
        }),
    );
}

/// One token for "this caller has gone", for a call rmcp serves: `first`,
/// rmcp's request token (cancel notification, stateless disconnect,
/// shutdown), or `guard`, the response-body drop guard's.
fn either_cancelled(first: &CancellationToken, guard: Option<CancellationToken>) -> CancellationToken {
    let gone = first.child_token();
    if let Some(guard) = guard {
        let gone = gone.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = guard.cancelled() => gone.cancel(),
                _ = gone.cancelled() => {}
            }
        });
    }
    gone
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every waiting call keeps its future for the whole wait, a thousand
    /// agents a thousand of them: what the future lays out is the memory of
    /// the server under load. Without a bound, one `match` on an awaited
    /// temporary or one future held beside another doubles it unseen
    /// (`docs/PERFORMANCE.md`, "A waiting call made small"). Sizes are the test build's, not release's.
    #[tokio::test]
    async fn a_waiting_call_lays_out_little() {
        let (tx, _rx) = futures::channel::mpsc::channel(2);
        let asked = Asked {
            queue_in_url: Ok(None),
            progress_token: None,
            gone: CancellationToken::new(),
            carried: None,
            notify: Notify::Stream(tx),
        };
        let facts = crate::queue::ServerFacts {
            url: "http://test".into(),
            version: "0".into(),
            started_at: crate::model::Timestamp::now(),
            requested_port: None,
            requested_port_holder: None,
            recovered: None,
            log_dir: None,
            database: None,
        };
        let store = local_mcp_core::store::Store::open_in_memory().unwrap();
        let queue = Queue::new(store, &Default::default(), facts, CancellationToken::new()).unwrap();
        let call = call(queue, None, asked, Caller::default());
        let size = std::mem::size_of_val(&call);
        // 5,608 bytes before the call checked its arguments first and boxed
        // what it shapes once the wait has ended; 2,576 after.
        assert!(size <= 3 * 1024, "get_user_request's future is {size} bytes");
    }
}
