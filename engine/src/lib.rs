//! local-mcp's engine: a durable queue of a person's instructions, handed one
//! at a time to AI agents through the MCP tool `get_user_request`, with a JSON
//! API and live events for the page. No GUI dependency: the headless
//! `local-mcp-server` and the desktop shell both embed it through [`start`].
//!
//! # Layout
//! Each module owns one concern, and imports only from the layers below it
//! (`tests/it/layers.rs` checks this; `docs/ARCHITECTURE.md` has the map):
//!
//! 0. `error`, [`time`], `sync` (a lock past a panic), [`private_fs`] (the
//!    one way files are created), `paths` (the file places), `peer` (who owns
//!    a local socket), [`process`] (our other processes, by pid), `markdown`,
//!    `media` (what an upload is).
//! 1. [`model`] — the nouns, plain data, each checked once; the settings are
//!    declared there once.
//! 2. [`config`] (flags, environment, file) and `store` (SQLite: every SQL statement).
//! 3. `events` (the domain events and their bus), `auth` (the token and the
//!    page session), `connection_info` (the connection-info file), [`lock`]
//!    (one engine per database), [`snippets`], [`client_files`] (our entry in
//!    MCP clients' own files), `export` (the history as a file).
//! 4. `queue` — the rules: what a person or an agent can do to the queue.
//! 5. `mcp` (the tools, resources, prompt) and [`client`] (a running
//!    engine's API, typed: found, called, its answers and events decoded).
//! 6. [`cli`] (parses and prints: the commands, the stdio bridge) and `http`
//!    (the guard, the API, SSE, the page, and `/mcp` nested).
//! 7. `server` (bind and serve); this file, above them all, wires them together.
//!
//! Only what the binaries, the desktop shell and the tests use is public.

// The workspace's crates, lowest first (`docs/ARCHITECTURE.md`, "Crates"):
// what the binaries, the desktop shell and the tests use is public here.
pub use local_mcp_cli::{cli, client};
pub use local_mcp_clients::{client_files, snippets};
pub use local_mcp_core::{config, lock, model, private_fs, process, sync, time};
use local_mcp_core::{connection_info, error, media, paths, peer, store};
use local_mcp_queue::{events, queue};
use local_mcp_serve::{auth, http, mcp, phone, server};

mod heap;
pub use heap::keep_arena_tops;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::broadcast;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use auth::Credentials;
pub use config::{Config, ServeArgs};
pub use error::{Error, Result};
pub use events::{Event, EventData, EventKind};
pub use http::{mcp_url, MAX_BODY_BYTES};
pub use media::png_from_rgba;
pub use paths::{default_desktop_instance, default_desktop_prefs};
pub use queue::{Queue, ServerFacts};
pub use store::{Db, Durability, Store};

pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A running engine.
pub struct Engine {
    /// `http://host:port`, without a trailing slash; MCP is at `{url}/mcp`.
    pub url: String,
    pub addr: SocketAddr,
    /// Set when the configured port was taken and another was used: that port.
    pub port_fallback_from: Option<u16>,
    pub queue: Queue,
    credentials: Arc<Credentials>,
    /// The connection-info files it published (withdrawn when it stops).
    connection_files: Vec<PathBuf>,
    shutdown: CancellationToken,
    task: JoinHandle<()>,
    /// Held until the server has stopped (`stopped` drops it last).
    lock: lock::DbLock,
}

impl Engine {
    /// The MCP endpoint agents connect to.
    pub fn mcp_url(&self) -> String {
        mcp_url(&self.url)
    }

    /// The bearer token agents must send, if one is required (it can change
    /// while serving: read it when needed, don't keep it).
    pub fn api_token(&self) -> Option<String> {
        self.credentials.token()
    }

    /// The live credentials, for an embedding shell: the `Set-Cookie` value
    /// that signs its window in (so the page never sees the token), and the
    /// current token for "copy MCP config".
    pub fn credentials(&self) -> Arc<Credentials> {
        self.credentials.clone()
    }

    /// Domain events as they happen (instruction changes, status, config).
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.queue.bus().subscribe()
    }

    /// Ask the engine to stop (same as cancelling the token given to [`start`]).
    pub fn shutdown(&self) {
        self.shutdown.cancel();
    }

    /// Wait until the server has stopped and what its connections left is
    /// settled, then withdraw the connection-info files.
    pub async fn stopped(self) {
        let _ = self.task.await;
        self.queue.finish_settling().await;
        for path in &self.connection_files {
            connection_info::remove_if_ours(path, std::process::id());
        }
        drop(self.lock);
    }
}

/// Open the database, migrate, bind, and serve until `shutdown` is cancelled.
pub async fn start(config: Config, shutdown: CancellationToken) -> Result<Engine> {
    let (token, token_origin) =
        auth::TokenOrigin::from_config(config.api_token.as_deref(), config.token_file.as_deref())?;
    if !config.host.is_loopback() && token.is_none() {
        return Err(Error::Invalid(format!(
            "refusing to serve on {} without an API token: anyone on the network could read and feed \
             your agents. Set API_TOKEN, or bind 127.0.0.1",
            config.host
        )));
    }
    // Before the database is touched: a second engine must not even look.
    let mut lock = lock::DbLock::acquire(&config.db_path)?;
    let db_path = config.db_path.clone();
    let (store, recovered) = tokio::task::spawn_blocking(move || store::Store::open_or_recover(&db_path))
        .await
        .map_err(|e| Error::Startup(format!("opening the database failed: {e}")))??;
    tracing::info!(path = %config.db_path.display(), "database ready");

    let (listener, port_fallback_from) = server::bind(config.host, config.port, config.port_fallback).await?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::Startup(format!("reading the bound address failed: {e}")))?;
    let url = format!("http://{}:{}", server::url_host(addr.ip()), addr.port());
    lock.publish(&url);

    let facts = server_facts(&config, &url, port_fallback_from, recovered);
    let queue = Queue::new(store, &config.settings, facts, shutdown.clone())?;
    // Files a crash left between writing an upload and committing its row.
    if let Err(e) = queue.sweep_files().await {
        e.log();
    }
    // Claims whose answer nobody saw written (a crash, a stop mid-answer) are in doubt.
    queue.doubt_open_claims().await?;
    let credentials = Arc::new(Credentials::for_instance(token, queue.instance().to_owned()));
    let tokens = Arc::new(auth::Tokens::new(
        token_origin,
        credentials.clone(),
        !config.host.is_loopback(),
    ));
    tracing::info!(
        tools = ?mcp::tool_names(),
        mode = if config.mcp_stateless { "stateless" } else { "sessions" },
        token = credentials.token_required(),
        "MCP endpoint registered at {}", mcp_url(&url)
    );
    let connection_files = publish_connection_info(&config, &url, addr.port(), &credentials, &tokens);
    let task = serve(
        listener,
        addr.port(),
        &config,
        &queue,
        credentials.clone(),
        tokens,
        &shutdown,
    );
    tracing::info!(%url, "local-mcp engine serving");
    Ok(Engine {
        url,
        addr,
        port_fallback_from,
        queue,
        credentials,
        connection_files,
        shutdown,
        task,
        lock,
    })
}

/// What the status tells of this server.
fn server_facts(
    config: &Config,
    url: &str,
    port_fallback_from: Option<u16>,
    recovered: Option<store::Recovery>,
) -> queue::ServerFacts {
    queue::ServerFacts {
        url: url.to_owned(),
        version: VERSION.into(),
        started_at: model::Timestamp::now(),
        requested_port: port_fallback_from,
        requested_port_holder: port_fallback_from.and_then(|port| other_account_on(SocketAddr::new(config.host, port))),
        recovered: recovered.map(|r| model::RecoveryNotice {
            moved_to: r.moved_to,
            reason: r.reason,
            at: r.at,
        }),
        log_dir: config.log_dir.as_ref().map(|d| d.display().to_string()),
        database: config::named_database(&config.db_path),
    }
}

/// Write the connection-info files — this database's entry among the
/// running servers, and the file asked for — and keep them in step with
/// token changes; their paths (removed when the engine stops). Not fatal:
/// the server works without them, only discovery does not.
fn publish_connection_info(
    config: &Config,
    url: &str,
    port: u16,
    credentials: &Credentials,
    tokens: &auth::Tokens,
) -> Vec<PathBuf> {
    let connection_files: Vec<PathBuf> = config
        .servers_dir
        .clone()
        .map(|dir| connection_info::Registry::new(dir).entry(&config.db_path))
        .into_iter()
        .chain(config.connection_file.clone())
        .collect();
    if connection_files.is_empty() {
        return connection_files;
    }
    let info = connection_info::ConnectionInfo {
        url: url.to_owned(),
        mcp_url: mcp_url(url),
        port,
        token: credentials.token(),
        version: VERSION.into(),
        tools: mcp::tool_names(),
        pid: std::process::id(),
        started_at: time::now(),
        db_path: Some(paths::canonical(&config.db_path)),
    };
    for path in &connection_files {
        match connection_info::write(path, &info) {
            Ok(()) => tracing::info!(path = %path.display(), "connection info published"),
            Err(e) => e.log(),
        }
    }
    tokens.publish_to(connection_files.clone(), info);
    connection_files
}

/// The guard, the router and the accept loop, serving until `shutdown`;
/// and the memory a burst of requests took given back after it.
fn serve(
    listener: tokio::net::TcpListener,
    port: u16,
    config: &Config,
    queue: &Queue,
    credentials: Arc<Credentials>,
    tokens: Arc<auth::Tokens>,
    shutdown: &CancellationToken,
) -> JoinHandle<()> {
    let (settings, told) = (queue.clone(), queue.clone());
    let guard = Arc::new(
        http::Guard::new(config.host, port, credentials.clone())
            .same_user_only(
                same_user_account(),
                Arc::new(move || settings.setting(|s| s.same_user_only)),
            )
            .on_refused(Arc::new(move |path, user_agent| told.note_refused(path, user_agent))),
    );
    let phone = phone::Phone::new(queue.clone(), phone::tls::dir_beside(&config.db_path), shutdown.clone());
    let state = http::AppState {
        queue: queue.clone(),
        guard: guard.clone(),
        credentials,
        tokens,
        mcp_stateless: config.mcp_stateless,
        shutdown: shutdown.clone(),
        phone: phone.clone(),
    };
    let phone_router = http::phone_router(state.clone());
    phone.set_listen(Arc::new(move |listener, tls, stop| {
        tokio::spawn(server::serve_tls(listener, tls, phone_router.clone(), stop));
    }));
    let router = http::router(state);
    let accepted = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let serving = server::serve(listener, router, guard, accepted.clone(), shutdown.clone());
    let task = tokio::spawn(async move {
        serving.await;
        // The phone listener's router holds the state, which holds the phone: let go, so the
        // queue and its database connection are dropped with the engine.
        phone.forget_listen();
    });
    heap::give_back();
    tokio::spawn(heap::give_back_after_bursts(accepted, shutdown.clone()));
    task
}

/// The account this engine runs as, for refusing other accounts' loopback
/// connections; `None` (with a warning) where the platform cannot tell.
fn same_user_account() -> Option<peer::Account> {
    if !peer::supported() {
        tracing::warn!(
            "this platform cannot tell which account a local connection comes from: other accounts \
             on this machine can reach local-mcp unless you require a token (Settings → Access token)"
        );
        return None;
    }
    match peer::me() {
        Ok(me) => Some(me),
        Err(e) => {
            tracing::warn!(error = %e, "cannot tell which account this is; other accounts are refused unless they send the token");
            // Fail closed: an account no socket can have.
            Some(peer::Account::NOBODY)
        }
    }
}

/// Who holds a port we wanted, when it is another account: agents configured
/// for that port would talk to a stranger's server, which the person must hear.
fn other_account_on(addr: SocketAddr) -> Option<String> {
    let owner = peer::listener_owner(addr).ok()?;
    if peer::me().ok() == Some(owner) {
        return None;
    }
    let who = peer::describe(owner);
    tracing::warn!(
        port = addr.port(),
        "port {} is held by another account's server ({who}): agents configured for port {} would reach \
         another account's server — point them at this one's URL",
        addr.port(),
        addr.port()
    );
    Some(who)
}
