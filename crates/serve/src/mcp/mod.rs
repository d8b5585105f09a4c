//! The MCP server over rmcp's streamable HTTP transport, nested at `/mcp` in
//! the engine's router: the tools (`tools/`, one file each), the read-only
//! resources and the prompt (`catalog`), queue changes as log messages for
//! sessions (`logs`), and the guard that notices a departed caller in session
//! mode (`disconnect`). It reaches the queue only through [`Queue`].

mod cancels;
mod catalog;
pub mod client_limits;
mod direct;
mod disconnect;
mod forgotten;
mod logs;
mod tasks;
mod tools;

use std::sync::Arc;
use std::time::Duration;

#[allow(deprecated)] // see `logs`
use rmcp::model::SetLevelRequestParams;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, GetPromptRequestParams, GetPromptResponse, Implementation,
    ListPromptsResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::model::{
    CancelTaskParams, DiscoverResult, GetTaskParams, GetTaskResult, InitializeRequestParams, InitializeResult,
    ServerJsonRpcMessage, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use tokio_util::sync::CancellationToken;

use crate::model::{QueueName, MAX_WAIT_SECONDS};
use crate::queue::Queue;

pub use disconnect::DisconnectGuardLayer;
pub use tools::names as tool_names;

/// What the person tells the agent to start its loop (kept with the snippets).
pub use crate::snippets::START_SENTENCE;

/// What every client is told at `initialize`: how to use the tool in a loop.
pub const SERVER_INSTRUCTIONS: &str = "local-mcp is the user's instruction queue. \
Call the `get_user_request` tool to receive the user's next instruction, act on it fully, then call \
`get_user_request` again. Do not end your session when the queue is empty: the tool waits for new \
instructions and then returns an empty or default response; keep calling it to stay available. \
Pass a stable `agent_id` that names you (for example `claude-code-myproject`) so the user can see who is listening, \
and a short `report` of what you did with the previous instruction so the user can follow your work.";

/// The rmcp server handler; one is built per request (stateless) or per session.
#[derive(Clone)]
pub struct LocalMcp {
    queue: Queue,
    /// Session mode: queue changes can be sent as log messages between requests.
    sessions: bool,
    log: Arc<logs::QueueLog>,
    /// Shared by every handler of the service: which client a stateless call is.
    clients: Arc<client_limits::Seen>,
}

impl LocalMcp {
    pub fn new(queue: Queue, sessions: bool, clients: Arc<client_limits::Seen>) -> Self {
        LocalMcp {
            queue,
            sessions,
            log: Arc::default(),
            clients,
        }
    }
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
                .enable_tasks()
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
        Ok(ListToolsResult::with_all_items(tools::all()))
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
        ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let queue = url_queue(ctx.extensions.get())
            .map_err(|e| McpError::invalid_params(e.to_string(), None))?
            .unwrap_or_else(QueueName::default_queue);
        catalog::read(&self.queue, &queue, &request.uri).await.map(Into::into)
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
            let queue = url_queue(ctx.extensions.get())
                .map_err(|e| McpError::invalid_params(e.to_string(), None))?
                .unwrap_or_else(QueueName::default_queue)
                .into_string();
            self.log.set_level(request.level, &self.queue, queue, ctx.peer.clone());
        }
        Ok(())
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        self.clients
            .started(&client_limits::Asking::of(&ctx, self.sessions), &request.client_info);
        ctx.peer.set_peer_info(request.clone());
        // The tasks extension is the 2026-07-28 revision's (a caller declares
        // it per call, in `_meta`): a 2025 `initialize` is not offered it.
        self.negotiate_initialize(&request).map(|mut result| {
            if let Some(extensions) = result.capabilities.extensions.as_mut() {
                extensions.remove(rmcp::model::TASKS_EXTENSION_ID);
                if extensions.is_empty() {
                    result.capabilities.extensions = None;
                }
            }
            result
        })
    }

    /// The 2026-07-28 opening (Claude Code 2.1 sends it instead of
    /// `initialize`): the client names itself in the request's `_meta`.
    async fn discover(&self, ctx: RequestContext<RoleServer>) -> Result<DiscoverResult, McpError> {
        if let Some(info) = ctx.meta.client_info() {
            self.clients
                .started(&client_limits::Asking::of(&ctx, self.sessions), &info);
        }
        Ok(DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        ))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        tasks::get(&self.queue, &request.task_id, tools::get_user_request::Asked::of(&ctx)).await
    }

    async fn cancel_task(&self, request: CancelTaskParams, _ctx: RequestContext<RoleServer>) -> Result<(), McpError> {
        tasks::cancel(&self.queue, &request.task_id).await
    }

    async fn update_task(&self, request: UpdateTaskParams, _ctx: RequestContext<RoleServer>) -> Result<(), McpError> {
        tasks::update(&self.queue, &request.task_id).await
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools::all().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let caller = self.clients.caller(&client_limits::Asking::of(&ctx, self.sessions));
        tools::call(&self.queue, request, ctx, caller).await
    }
}

/// The queue the route `/mcp/q/{queue}` matched, as its parameter said it
/// (checked, or the error naming the rule). Put on the request by
/// [`named_queue`]; absent on plain `/mcp`.
#[derive(Clone)]
struct EndpointQueue(Result<QueueName, String>);

/// The `/mcp/q/{queue}` route's parameter, read once and kept on the
/// request for the MCP handlers (rmcp hands them the request's parts).
pub async fn named_queue(
    axum::extract::Path(raw): axum::extract::Path<String>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let named = QueueName::new(&raw).map_err(|e| e.to_string());
    request.extensions_mut().insert(EndpointQueue(named));
    next.run(request).await
}

/// The queue named by the URL the caller was configured with:
/// `/mcp/q/<name>`, or `None` for plain `/mcp`. Identity comes from the
/// configuration, not from the model (`docs/ARCHITECTURE.md`, "Queues and targets").
pub fn url_queue(head: Option<&http::request::Parts>) -> crate::Result<Option<QueueName>> {
    match head.and_then(|parts| parts.extensions.get::<EndpointQueue>()) {
        None => Ok(None),
        Some(EndpointQueue(Ok(name))) => Ok(Some(name.clone())),
        Some(EndpointQueue(Err(rule))) => Err(crate::Error::Invalid(rule.clone())),
    }
}

/// `message` as JSON text; `None` (logged) if it cannot be: rmcp's
/// messages are maps with string keys, so this is not expected.
pub(crate) fn encode(message: &ServerJsonRpcMessage) -> Option<String> {
    serde_json::to_string(message)
        .inspect_err(|e| tracing::error!(error = %e, "an MCP message could not be encoded"))
        .ok()
}

/// Session idle limit: above the longest possible wait, because rmcp's idle
/// timer is not reset while a call waits (SSE pings do not count as
/// activity in rmcp 3.9), and a session closed
/// mid-wait would break the agent's loop.
const SESSION_IDLE: Duration = Duration::from_secs(MAX_WAIT_SECONDS as u64 + 600);

/// How often an SSE answer that is still waiting sends a keep-alive.
const SSE_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// How long a stop lets the answers on their way go out before it ends
/// every stream. A waiting call answers as soon as the stop begins (its
/// wait watches it), so this bounds only a client that reads slowly.
const ANSWERS_OUT_WITHIN: Duration = Duration::from_secs(3);

/// The `/mcp` service and the guard in front of it: rmcp's, with
/// `get_user_request` answered directly in stateless mode (`direct`).
/// Host/Origin checks are done for every route by the HTTP layer, so rmcp's
/// own (which cover `/mcp` only) are switched off here to keep one rule in
/// one place.
///
/// A stop (`shutdown`) runs in two steps: every waiting call is answered
/// (the queue's waits end with it) and those answers go out; only then are
/// the streams ended — rmcp's sessions and the direct answers — so no call
/// is cut off without its answer.
pub fn service(
    queue: Queue,
    stateless: bool,
    max_body_bytes: usize,
    shutdown: CancellationToken,
) -> (DisconnectGuardLayer, direct::Mcp) {
    let answers = disconnect::Answers::default();
    let streams_end = CancellationToken::new();
    tokio::spawn({
        let (answers, streams_end) = (answers.clone(), streams_end.clone());
        async move {
            shutdown.cancelled().await;
            let left = answers.out(ANSWERS_OUT_WITHIN).await;
            if left > 0 {
                tracing::warn!(
                    left,
                    "answers still on their way {ANSWERS_OUT_WITHIN:?} into the stop: ending them"
                );
            }
            streams_end.cancel();
        }
    });
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(!stateless)
        // Always answer tool calls as SSE: keep-alives flow during long waits
        // and a caller hanging up is noticed.
        .with_json_response(false)
        .with_sse_keep_alive(Some(SSE_KEEP_ALIVE))
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_max_request_body_bytes(max_body_bytes)
        .with_cancellation_token(streams_end.child_token());
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(SESSION_IDLE);
    let sessions = Arc::new(sessions);
    let clients = Arc::new(client_limits::Seen::default());
    let direct = stateless.then(|| {
        let handler = LocalMcp::new(queue.clone(), false, clients.clone());
        direct::Direct::new(handler, streams_end, max_body_bytes, SSE_KEEP_ALIVE)
    });
    // Session mode: a session this server does not know (it restarted) is
    // served by a stateless service of the same handlers.
    let forgotten = (!stateless).then(|| {
        let (queue, clients) = (queue.clone(), clients.clone());
        forgotten::Forgotten::new(
            sessions.clone(),
            StreamableHttpService::new(
                move || Ok(LocalMcp::new(queue.clone(), false, clients.clone())),
                Arc::default(),
                config.clone().with_legacy_session_mode(false),
            ),
        )
    });
    // A handler per session (or stateless request): each has its own log level.
    let rmcp = StreamableHttpService::new(
        move || Ok(LocalMcp::new(queue.clone(), !stateless, clients.clone())),
        sessions,
        config,
    );
    (
        DisconnectGuardLayer::counting(answers),
        direct::Mcp::new(rmcp, direct, forgotten),
    )
}
