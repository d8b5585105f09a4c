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
use local_mcp_serve::{auth, http, mcp, server};

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

    let facts = queue::ServerFacts {
        url: url.clone(),
        version: VERSION.into(),
        started_at: time::now(),
        requested_port: port_fallback_from,
        requested_port_holder: port_fallback_from.and_then(|port| other_account_on(SocketAddr::new(config.host, port))),
        recovered: recovered.map(|r| model::RecoveryNotice {
            moved_to: r.moved_to,
            reason: r.reason,
            at: r.at,
        }),
        log_dir: config.log_dir.as_ref().map(|d| d.display().to_string()),
        database: config::named_database(&config.db_path),
    };
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
    // This database's entry among the running servers, and the file asked for.
    let connection_files: Vec<PathBuf> = config
        .servers_dir
        .clone()
        .map(|dir| connection_info::Registry::new(dir).entry(&config.db_path))
        .into_iter()
        .chain(config.connection_file.clone())
        .collect();
    if !connection_files.is_empty() {
        let info = connection_info::ConnectionInfo {
            url: url.clone(),
            mcp_url: mcp_url(&url),
            port: addr.port(),
            token: credentials.token(),
            version: VERSION.into(),
            tools: mcp::tool_names(),
            pid: std::process::id(),
            started_at: time::now(),
            db_path: Some(paths::canonical(&config.db_path)),
        };
        // Not fatal: the server works without it, only discovery does not.
        for path in &connection_files {
            match connection_info::write(path, &info) {
                Ok(()) => tracing::info!(path = %path.display(), "connection info published"),
                Err(e) => e.log(),
            }
        }
        tokens.publish_to(connection_files.clone(), info);
    }
    let me = same_user_account();
    let settings = queue.clone();
    let told = queue.clone();
    let guard = Arc::new(
        http::Guard::new(config.host, addr.port(), credentials.clone())
            .same_user_only(me, Arc::new(move || settings.setting(|s| s.same_user_only)))
            .on_refused(Arc::new(move |path, user_agent| told.note_refused(path, user_agent))),
    );
    let router = http::router(http::AppState {
        queue: queue.clone(),
        guard: guard.clone(),
        credentials: credentials.clone(),
        tokens,
        mcp_stateless: config.mcp_stateless,
        shutdown: shutdown.clone(),
    });
    let task = tokio::spawn(server::serve(listener, router, guard, shutdown.clone()));
    tracing::info!(%url, "local-mcp engine serving");
    give_back_start_up_heap();
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

/// Start-up builds and drops far more than serving keeps (the OpenAPI
/// document and its schemas, the migration, the router): glibc keeps the
/// freed pages resident until asked to give them back. Measured on the
/// headless server: anonymous memory after start 3.8 -> 2.2 MiB.
fn give_back_start_up_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages to the system, and glibc's
    // allocator locks each arena while it does.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Let each glibc arena keep up to 2 MiB of free memory at its top before
/// giving pages back, and serve blocks under 1 MiB from the arenas. glibc's
/// default trim threshold (128 KiB) sits just under what claims free between
/// two of theirs: under many agents each arena's top crossed it over and
/// over, and each crossing was an `madvise(MADV_DONTNEED)` — a TLB shootdown
/// on every core — then page faults to zero the same pages again (`strace`:
/// 6,137 such calls for 4,000 claims by 64 agents, 63 with this setting;
/// claims/s with 64 agents 5.3–6.0k → 7.6–8.2k, same hour). Setting either
/// value ends glibc's own adjustment of both, so both are set, in its ratio
/// (trim = 2 × mmap). At most 2 MiB per arena stays resident after a burst;
/// start-up's heap is still given back whole (`give_back_start_up_heap`
/// trims regardless of the threshold).
///
/// A process-wide setting, so a program's `main` calls it before its threads
/// start (the headless server and the desktop app both do), not [`start`].
pub fn keep_arena_tops() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt sets integers that glibc's allocator reads; calling it
    // while other threads allocate is allowed (it takes the main arena's lock).
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 2 << 20);
    }
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
