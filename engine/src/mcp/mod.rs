//! The MCP server: one tool, `get_user_request`, over rmcp's streamable HTTP
//! transport, nested at `/mcp` in the engine's router.
//!
//! The handler is a thin adapter over [`Queue::get_user_request`]: it parses
//! arguments, merges the ways a caller can go away into one token, sends
//! progress while the call waits, and shapes the result (structured content
//! plus the same JSON as text). Errors a caller can fix become tool results
//! with `isError: true`; only internal failures are protocol errors.

mod catalog;
mod disconnect;
mod logs;

use std::sync::Arc;
use std::time::Duration;

use rmcp::handler::server::common::{schema_for_output, schema_for_type};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams, GetPromptResponse,
    Implementation, ListPromptsResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ProgressToken, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig, Tool, ToolAnnotations,
};
#[allow(deprecated)] // see `announce_wait` and `logs`
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam, SetLevelRequestParams};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::model::{UserRequestResult, MAX_WAIT_SECONDS};
use crate::queue::Queue;
use crate::Error;

use disconnect::ClientGone;
pub use disconnect::DisconnectGuardLayer;

pub const TOOL_NAME: &str = "get_user_request";

/// How often a waiting call reports progress when the caller asked for it
/// (clients that reset their timeout on progress can then wait longer).
pub const PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// What every client is told at `initialize` (DESIGN §4 rule 8).
pub const SERVER_INSTRUCTIONS: &str = "local-mcp is the user's instruction queue. \
Call the `get_user_request` tool to receive the user's next instruction, act on it fully, then call \
`get_user_request` again. Do not end your session when the queue is empty: the tool waits for new \
instructions and then returns an empty or default response; keep calling it to stay available. \
Pass a stable `agent_id` that names you (for example `claude-code-myproject`) so the user can see who is listening.";

const TOOL_DESCRIPTION: &str = "Get the user's next instruction from their local-mcp queue. \
Returns at most one instruction (result_type \"instruction\"): act on it, then call this tool again. \
When the queue is empty the call waits for a server-controlled time and returns result_type \"empty\" \
or \"default_response\" with a `response` text to follow: call this tool again instead of ending your \
session, so you pick up the user's follow-up requests. Pass the same `agent_id` on every call; a new call \
with the same agent_id replaces an older call that is still waiting.";

/// Arguments of `get_user_request`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct GetUserRequestArgs {
    /// A stable name for this agent, e.g. "copilot-myrepo" (max 128 characters; default "default").
    #[schemars(length(max = 128))]
    pub agent_id: Option<String>,
}

/// The tool as listed by `tools/list`.
pub fn tool() -> Tool {
    let mut annotations = ToolAnnotations::new();
    annotations.title = Some("Get the user's next request".into());
    annotations.read_only_hint = Some(false);
    annotations.destructive_hint = Some(false);
    annotations.idempotent_hint = Some(false);
    annotations.open_world_hint = Some(false);
    Tool::new(
        TOOL_NAME,
        TOOL_DESCRIPTION,
        portable(&schema_for_type::<GetUserRequestArgs>()),
    )
    .with_title("Get the user's next request")
    .with_raw_output_schema(portable(&schema_for_output::<UserRequestResult>()))
    .with_annotations(annotations)
}

/// Formats JSON Schema defines; validators warn about (or, strict, reject)
/// any other, such as schemars' `uint64`.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// The schema without non-standard `format`s (the `minimum: 0` that
/// schemars writes beside `uint64` keeps the meaning).
fn portable(schema: &serde_json::Map<String, serde_json::Value>) -> Arc<serde_json::Map<String, serde_json::Value>> {
    fn clean(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(map) => {
                if map
                    .get("format")
                    .and_then(|f| f.as_str())
                    .is_some_and(|f| !STANDARD_FORMATS.contains(&f))
                {
                    map.remove("format");
                }
                map.values_mut().for_each(clean);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(clean),
            _ => {}
        }
    }
    let mut value = serde_json::Value::Object(schema.clone());
    clean(&mut value);
    match value {
        serde_json::Value::Object(map) => Arc::new(map),
        _ => Arc::new(schema.clone()),
    }
}

/// The rmcp server handler; one is built per request (stateless) or per session.
#[derive(Clone)]
pub struct LocalMcp {
    queue: Queue,
    /// Session mode: queue changes can be sent as log messages between requests.
    sessions: bool,
    log: Arc<logs::QueueLog>,
}

impl LocalMcp {
    pub fn new(queue: Queue, sessions: bool) -> Self {
        LocalMcp {
            queue,
            sessions,
            log: Arc::default(),
        }
    }

    async fn get_user_request(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let args: GetUserRequestArgs = match request.arguments {
            None => GetUserRequestArgs::default(),
            Some(map) => match serde_json::from_value(serde_json::Value::Object(map)) {
                Ok(args) => args,
                Err(e) => return Ok(tool_error(&format!("invalid arguments: {e}"))),
            },
        };

        let gone = caller_gone_token(&ctx);
        let (waiting_tx, waiting_rx) = tokio::sync::oneshot::channel();
        let call = self
            .queue
            .get_user_request(args.agent_id.as_deref(), gone.clone(), Some(waiting_tx));
        tokio::pin!(call);
        let progress_token = ctx.meta.get_progress_token();
        let mut waiting_rx = Some(waiting_rx);
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
        let started = tokio::time::Instant::now();
        let mut total = 0.0;
        let result = loop {
            tokio::select! {
                r = &mut call => break r,
                w = async { waiting_rx.as_mut().expect("guarded").await }, if waiting_rx.is_some() => {
                    waiting_rx = None;
                    if let Ok(wait_seconds) = w {
                        total = f64::from(wait_seconds);
                        // rmcp's stateless transport sends no HTTP headers (so no
                        // keep-alives) until the handler emits a first message; a
                        // silent wait would hit clients' 300 s read timeout. One
                        // message now opens the SSE stream.
                        self.announce_wait(&ctx, progress_token.clone(), wait_seconds).await;
                    }
                }
                _ = ticks.tick(), if progress_token.is_some() && waiting_rx.is_none() => {
                    if let Some(token) = progress_token.clone() {
                        let waited = started.elapsed().as_secs_f64().floor();
                        let param = ProgressNotificationParam::new(token, waited)
                            .with_total(total)
                            .with_message("waiting for the user's next instruction");
                        // A failed send means the caller left; `gone` covers that.
                        let _ = ctx.peer.notify_progress(param).await;
                    }
                }
            }
        };
        // Ends the task that merged the caller's tokens.
        gone.cancel();

        match result {
            Ok((result, _outcome)) => match serde_json::to_value(&result) {
                Ok(value) => Ok(CallToolResult::structured(value)),
                Err(e) => Err(McpError::internal_error(
                    format!("could not encode the result: {e}"),
                    None,
                )),
            },
            Err(Error::Internal(message)) => Err(McpError::internal_error(message, None)),
            Err(e) => Ok(tool_error(&e.to_string())),
        }
    }
}

impl LocalMcp {
    /// The first message of a waiting call: progress 0 when the caller asked
    /// for progress, otherwise a debug-level log line. Logging is deprecated for
    /// a future protocol revision (SEP-2577) but valid in every version clients
    /// negotiate today, and it is the one notification that needs no token
    /// from the caller; when it goes, this must become another first message.
    #[allow(deprecated)]
    async fn announce_wait(&self, ctx: &RequestContext<RoleServer>, token: Option<ProgressToken>, wait_seconds: u32) {
        let message = format!("queue empty: waiting up to {wait_seconds} s for the user's next instruction");
        let sent = match token {
            Some(token) => {
                let param = ProgressNotificationParam::new(token, 0.0)
                    .with_total(f64::from(wait_seconds))
                    .with_message(message);
                ctx.peer.notify_progress(param).await
            }
            None => {
                let param =
                    LoggingMessageNotificationParam::new(LoggingLevel::Debug, serde_json::Value::String(message))
                        .with_logger("local-mcp");
                ctx.peer.notify_logging_message(param).await
            }
        };
        if let Err(e) = sent {
            tracing::debug!(error = %e, "could not announce a wait (caller gone?)");
        }
    }
}

fn tool_error(message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.to_owned())])
}

/// One token for "this caller has gone": rmcp's request token (cancel
/// notification, stateless disconnect, shutdown) or, in session mode, our
/// response-body drop guard.
fn caller_gone_token(ctx: &RequestContext<RoleServer>) -> CancellationToken {
    let gone = ctx.ct.child_token();
    let guard = ctx
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<ClientGone>())
        .map(|g| g.0.clone());
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

impl ServerHandler for LocalMcp {
    // `logging` is declared because waiting calls announce themselves with a
    // log line (see `announce_wait`) and sessions can follow queue changes (`logs`).
    #[allow(deprecated)]
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_prompts()
                .enable_logging()
                .build(),
        )
        .with_server_info(
            Implementation::new("local-mcp", env!("CARGO_PKG_VERSION")).with_title("local-mcp instruction queue"),
        )
        .with_instructions(SERVER_INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(vec![tool()]))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(ListResourcesResult::with_all_items(catalog::resources()))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        catalog::read(&self.queue, &request.uri).await.map(Into::into)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(ListPromptsResult::with_all_items(catalog::prompts()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let agent_id = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("agent_id"))
            .and_then(|v| v.as_str());
        catalog::get_prompt(&request.name, agent_id).map(Into::into)
    }

    #[allow(deprecated)]
    async fn set_level(&self, request: SetLevelRequestParams, ctx: RequestContext<RoleServer>) -> Result<(), McpError> {
        if self.sessions {
            self.log.set_level(request.level, &self.queue, ctx.peer.clone());
        }
        Ok(())
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == TOOL_NAME).then(tool)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if request.name != TOOL_NAME {
            return Err(McpError::invalid_params(
                format!("unknown tool {:?}; the only tool is {TOOL_NAME}", request.name),
                None,
            ));
        }
        self.get_user_request(request, ctx).await.map(Into::into)
    }
}

/// Session idle limit: above the longest possible wait, because rmcp's idle
/// timer is not reset while a call waits (STACK.md), and a session closed
/// mid-wait would break the agent's loop.
const SESSION_IDLE: Duration = Duration::from_secs(MAX_WAIT_SECONDS as u64 + 600);

/// The `/mcp` service. Host/Origin checks are done for every route by the
/// HTTP layer, so rmcp's own (which cover `/mcp` only) are switched off here
/// to keep one rule in one place.
pub fn service(
    queue: Queue,
    stateless: bool,
    max_body_bytes: usize,
    shutdown: CancellationToken,
) -> StreamableHttpService<LocalMcp, LocalSessionManager> {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(!stateless)
        // Always answer tool calls as SSE: keep-alives flow during long waits
        // and a caller hanging up is noticed (DESIGN §4 transport).
        .with_json_response(false)
        .with_sse_keep_alive(Some(Duration::from_secs(15)))
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_max_request_body_bytes(max_body_bytes)
        .with_cancellation_token(shutdown.child_token());
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(SESSION_IDLE);
    StreamableHttpService::new(
        move || Ok(LocalMcp::new(queue.clone(), !stateless)),
        Arc::new(sessions),
        config,
    )
}
