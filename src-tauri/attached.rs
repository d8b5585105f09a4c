//! The app as the window and tray of a headless `local-mcp-server` that
//! already holds the database: found by the database's lock (`attach_to`),
//! fed by that server's page and event stream (`run_attached`), its page
//! sessions made for that server's instance.

use std::sync::Arc;

use tauri::Manager;
use tokio_util::sync::CancellationToken;

use crate::follow::follow_engine;
use crate::shell::{shell_for, Shell};
use crate::{tray, view};

/// The shell as the window and tray of a headless server that already
/// holds the database: its page, its event stream, the tooltip says whose.
pub(crate) fn run_attached(
    app: &mut tauri::App,
    remote: engine::client::remote::Remote,
    shutdown: CancellationToken,
) -> Result<(), Box<dyn std::error::Error>> {
    tracing::info!(url = %remote.base, "a local-mcp server already serves this database; attaching to it");
    let handle = app.handle().clone();
    let shell = shell_for(&remote.base, remote.token.clone(), Some(remote.clone()))?;
    // Its page sessions are that server's own (its instance is in the
    // cookie's name and MAC): the window's cookie is made for it.
    let instance = tauri::async_runtime::block_on(remote_instance(&remote));
    app.manage(Shell {
        database: remote.db.as_deref().and_then(engine::config::named_database),
        credentials: Arc::new(engine::Credentials::for_instance(remote.token.clone(), instance)),
        ..shell
    });
    let items = tray::create(&handle)?;
    let (tx, events) = tokio::sync::broadcast::channel(256);
    let gone_app = handle.clone();
    let base = remote.base.clone();
    tauri::async_runtime::spawn(remote.follow(
        tx,
        // Back again: the status sent on reconnecting redraws the tray.
        move |gone| {
            if gone {
                tray::say(&gone_app, view::TrayIcon::Offline, &view::attached_gone(&base));
            }
        },
        shutdown,
    ));
    tauri::async_runtime::spawn(follow_engine(handle, items, events));
    Ok(())
}

/// The instance id of the server `remote` (empty when it cannot be read: the
/// window's page then asks for the token, if one is required).
async fn remote_instance(remote: &engine::client::remote::Remote) -> String {
    let target = engine::client::target::Target {
        base: remote.base.clone(),
        token: remote.token.clone(),
        db: remote.db.clone(),
    };
    match engine::client::Client::new(target) {
        Ok(client) => match client.status().await {
            Ok(status) => status.server.instance,
            Err(e) => {
                tracing::warn!(error = ?e, "cannot read the attached server's status");
                String::new()
            }
        },
        Err(_) => String::new(),
    }
}

/// The server that holds `db` (its lock file names its URL), with the token
/// it publishes (in the running servers' list, or the `connection_file`
/// named) or else the one configured here.
pub(crate) fn attach_to(
    db: &std::path::Path,
    connection_file: Option<std::path::PathBuf>,
    servers_dir: Option<std::path::PathBuf>,
    api_token: Option<String>,
) -> Option<engine::client::remote::Remote> {
    use engine::client::target::Source;
    let base = engine::lock::holder(db)?.url?;
    // What it published, when it describes this server, carries the token it requires;
    // else the configured one. `resolve` also refuses a server another account runs.
    let target = Source::new(None, None, connection_file, db.to_owned(), servers_dir, None)
        .and_then(|source| source.resolve())
        .ok()
        .filter(|t| t.base == base)
        .map_or_else(
            || {
                Source::Fixed {
                    url: base,
                    token: api_token,
                }
                .resolve()
            },
            Ok,
        )
        .map_err(|e| tracing::warn!(error = %e, "cannot attach to the server that holds the database"))
        .ok()?;
    Some(engine::client::remote::Remote {
        base: target.base,
        token: target.token,
        db: Some(db.to_owned()),
    })
}
