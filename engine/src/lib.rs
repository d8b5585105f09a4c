//! local-mcp's engine: a durable queue of a person's instructions, handed one
//! at a time to AI agents through the MCP tool `get_user_request`, with a JSON
//! API and live events for the page. No GUI dependency: the headless
//! `local-mcp-server` and the desktop shell both embed it through [`start`].
//!
//! Module map (one concern each): [`config`] · [`store`] (all SQL) ·
//! [`queue`] (the rules) · [`events`] · [`mcp`] · [`http`] · [`server`].

pub mod cli;
pub mod config;
pub mod connection;
pub mod error;
pub mod events;
pub mod http;
pub mod mcp;
pub mod model;
pub mod queue;
pub mod server;
pub mod snippets;
pub mod store;
pub mod time;
pub mod token;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::broadcast;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use config::Config;
pub use error::{Error, Result};
pub use events::{Event, EventKind};
pub use queue::Queue;

pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A running engine.
pub struct Engine {
    /// `http://host:port`, without a trailing slash; MCP is at `{url}/mcp`.
    pub url: String,
    pub addr: SocketAddr,
    /// Set when the configured port was taken and another was used: that port.
    pub port_fallback_from: Option<u16>,
    pub queue: Queue,
    security: Arc<http::Security>,
    connection_file: Option<PathBuf>,
    shutdown: CancellationToken,
    task: JoinHandle<()>,
}

impl Engine {
    /// The MCP endpoint agents connect to.
    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.url)
    }

    /// The bearer token agents must send, if one is required (it can change
    /// while serving: read it when needed, don't keep it).
    pub fn api_token(&self) -> Option<String> {
        self.security.token()
    }

    /// The page-session cookie (name, value) that signs a window in when a
    /// token is required, so an embedding shell never hands the token to the page.
    pub fn page_session_cookie(&self) -> Option<(&'static str, String)> {
        self.security.session_cookie()
    }

    /// The live security settings (token), for an embedding shell that must
    /// read the current token later (e.g. for "copy MCP config").
    pub fn security(&self) -> Arc<http::Security> {
        self.security.clone()
    }

    /// Domain events as they happen (instruction changes, status, config).
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.queue.bus().subscribe()
    }

    /// Ask the engine to stop (same as cancelling the token given to [`start`]).
    pub fn shutdown(&self) {
        self.shutdown.cancel();
    }

    /// Wait until the server has stopped, then withdraw the connection-info file.
    pub async fn stopped(self) {
        let _ = self.task.await;
        if let Some(path) = &self.connection_file {
            connection::remove_if_ours(path, std::process::id());
        }
    }
}

/// Open the database, migrate, bind, and serve until `shutdown` is cancelled.
pub async fn start(config: Config, shutdown: CancellationToken) -> Result<Engine> {
    let (token, token_source) = match (&config.api_token, &config.token_file) {
        (Some(t), _) => (Some(t.clone()), token::Source::Fixed),
        (None, Some(path)) => (token::read_file(path)?, token::Source::File(path.clone())),
        (None, None) => (None, token::Source::Unmanaged),
    };
    if !config.host.is_loopback() && token.is_none() {
        return Err(Error::Invalid(format!(
            "refusing to serve on {} without an API token: anyone on the network could read and feed \
             your agents. Set API_TOKEN, or bind 127.0.0.1",
            config.host
        )));
    }
    let db_path = config.db_path.clone();
    let store = tokio::task::spawn_blocking(move || store::Store::open(&db_path))
        .await
        .map_err(|e| Error::internal("opening the database failed", e))??;
    tracing::info!(path = %config.db_path.display(), "database ready");

    let (listener, port_fallback_from) = server::bind(config.host, config.port, config.port_fallback).await?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::internal("reading the bound address", e))?;
    let url = format!("http://{}:{}", server::url_host(addr.ip()), addr.port());

    let facts = queue::ServerFacts {
        url: url.clone(),
        version: VERSION.into(),
        started_at: time::now(),
        requested_port: port_fallback_from,
    };
    let queue = Queue::new(store, &config.settings, facts, shutdown.clone())?;
    let security = Arc::new(http::Security::new(config.host, addr.port(), token));
    let tokens = Arc::new(token::Tokens::new(
        token_source,
        security.clone(),
        !config.host.is_loopback(),
    ));
    tracing::info!(
        tool = mcp::TOOL_NAME,
        mode = if config.mcp_stateless { "stateless" } else { "sessions" },
        token = security.token_required(),
        "MCP endpoint registered at {url}/mcp"
    );
    if let Some(path) = &config.connection_file {
        let info = connection::ConnectionInfo {
            url: url.clone(),
            mcp_url: format!("{url}/mcp"),
            port: addr.port(),
            token: security.token(),
            version: VERSION.into(),
            tools: vec![mcp::TOOL_NAME.into()],
            pid: std::process::id(),
            started_at: time::now(),
        };
        // Not fatal: the server works without it, only discovery does not.
        match connection::write(path, &info) {
            Ok(()) => tracing::info!(path = %path.display(), "connection info published"),
            Err(e) => tracing::warn!("{e}"),
        }
        tokens.publish_to(path.clone(), info);
    }
    let router = http::router(
        queue.clone(),
        security.clone(),
        tokens,
        config.mcp_stateless,
        shutdown.clone(),
    );
    let task = tokio::spawn(server::serve(listener, router, shutdown.clone()));
    tracing::info!(%url, "local-mcp engine serving");
    Ok(Engine {
        url,
        addr,
        port_fallback_from,
        queue,
        security,
        connection_file: config.connection_file,
        shutdown,
        task,
    })
}
