//! What the shell keeps for its windows, tray and menu handlers (`Shell`,
//! managed by the app), made for an engine of its own or an attached
//! server, and how the own engine is stopped when the app leaves.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use engine::sync::MutexExt;
use engine::Engine;
use tauri::{AppHandle, Manager};
use tokio_util::sync::CancellationToken;

use crate::prefs;

/// What the shell keeps for its windows, tray and menu handlers.
pub struct Shell {
    pub page_url: url::Url,
    pub quick_url: url::Url,
    pub origin: url::Origin,
    pub mcp_url: String,
    /// The live token (the page can regenerate or remove it): read it when needed.
    pub credentials: Arc<engine::Credentials>,
    pub prefs: prefs::PrefsFile,
    pub(crate) engine: Mutex<Option<Engine>>,
    /// Set when a headless server already held the database at start: this
    /// app is that server's window and tray.
    pub attached: Option<engine::client::remote::Remote>,
    /// The database when it is not the default one: the stdio bridge and the
    /// Stop hooks this app writes are given it (`--db-path`).
    pub database: Option<String>,
}

pub(crate) fn shell_for(
    base: &str,
    token: Option<String>,
    attached: Option<engine::client::remote::Remote>,
) -> Result<Shell, Box<dyn std::error::Error>> {
    let page_url = url::Url::parse(&format!("{base}/"))?;
    Ok(Shell {
        quick_url: page_url.join("quick.html")?,
        origin: page_url.origin(),
        mcp_url: engine::mcp_url(base),
        credentials: Arc::new(engine::Credentials::new(token)),
        prefs: prefs::PrefsFile::load(),
        page_url,
        engine: Mutex::new(None),
        attached,
        database: None,
    })
}

/// Stop the app's own engine, if it has one, when the app leaves.
pub(crate) fn stop_engine(app: &AppHandle, shutdown: &CancellationToken) {
    shutdown.cancel();
    let Some(shell) = app.try_state::<Shell>() else {
        return;
    };
    let engine = shell.engine.lock_anyway().take();
    if let Some(engine) = engine {
        stop(engine, shutdown);
    }
}

/// Stop `engine` (its `shutdown` token) and wait for it, at most 6 s: its
/// waiting agents answered and its database closed.
pub(crate) fn stop(engine: Engine, shutdown: &CancellationToken) {
    shutdown.cancel();
    let _ =
        tauri::async_runtime::block_on(async { tokio::time::timeout(Duration::from_secs(6), engine.stopped()).await });
}
