//! The shell around the desktop's own engine (the usual case; `attached.rs`
//! is the other): its `Shell`, the tray, the engine's events followed, and
//! what the start itself has to tell the person.

use engine::sync::MutexExt;
use engine::Engine;
use tauri::Manager;

use crate::follow::follow_engine;
use crate::shell::{shell_for, Shell};
use crate::{notify, tray, view};

/// The shell around the desktop's own engine.
pub(crate) fn run_engine(app: &mut tauri::App, engine: Engine) -> Result<(), Box<dyn std::error::Error>> {
    let handle = app.handle().clone();
    let shell = shell_for(&engine.url, None, None)?;
    let shell = Shell {
        credentials: engine.credentials(),
        database: engine.queue.facts().database.clone(),
        ..shell
    };
    let fallback = engine.port_fallback_from;
    let holder = engine.queue.facts().requested_port_holder.clone();
    let recovered = engine.queue.facts().recovered.clone();
    let events = engine.subscribe();
    let mcp_url = engine.mcp_url();
    *shell.engine.lock_anyway() = Some(engine);
    app.manage(shell);
    let items = tray::create(&handle)?;
    tauri::async_runtime::spawn(follow_engine(handle.clone(), items, events));
    if let Some(r) = recovered {
        let (title, body) = view::recovery_notification(&r.moved_to);
        notify::send(&handle, &title, &body);
    }
    if let Some(port) = fallback {
        let (title, body) = view::port_fallback_notification(port, holder.as_deref(), &mcp_url);
        notify::send(&handle, &title, &body);
    }
    Ok(())
}
