//! "Queue clipboard": one click on the tray queues what the clipboard holds
//! — an image, text, or both — as one instruction in the default queue, and
//! a notification says what was queued. The screenshot → agent path. A
//! launch (`local-mcp --queue-clipboard` bound to a key) opens quick add
//! instead, for the person to paste and queue: a launch can come from any
//! program of the account (`lib.rs`, the single-instance channel).

use tauri::AppHandle;
use tauri_plugin_clipboard_manager::ClipboardExt as _;

use engine::model::Upload;

use crate::backend::Backend;
use crate::{notify, view};

/// Read the clipboard now (on this thread: the clipboard is the desktop's),
/// then queue it off the UI thread.
pub fn queue_clipboard(app: &AppHandle) {
    let clipboard = app.clipboard();
    let text = clipboard.read_text().ok().filter(|t| !t.trim().is_empty());
    let image = clipboard
        .read_image()
        .ok()
        .map(|i| (i.width(), i.height(), i.rgba().to_vec()))
        .filter(|(w, h, _)| *w > 0 && *h > 0);
    let (Some(backend), app) = (Backend::of(app), app.clone()) else {
        return;
    };
    tauri::async_runtime::spawn(async move {
        let size = image.as_ref().map(|(w, h, _)| (*w, *h));
        let outcome = match (image, text.clone()) {
            (None, None) => Err("The clipboard holds no image or text.".to_owned()),
            (image, text) => queue_it(&backend, image, text).await,
        };
        let (title, body) =
            view::clipboard_notification(size, text.as_deref(), outcome.as_ref().err().map(String::as_str));
        notify::send(&app, &title, &body);
    });
}

async fn queue_it(backend: &Backend, image: Option<(u32, u32, Vec<u8>)>, text: Option<String>) -> Result<(), String> {
    let mut uploads = Vec::new();
    if let Some((w, h, rgba)) = image {
        let png = tokio::task::spawn_blocking(move || engine::png_from_rgba(w, h, rgba))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        uploads.push(Upload {
            name: "clipboard.png".into(),
            bytes: png.into(),
        });
    }
    backend
        .add(text.unwrap_or_default(), uploads)
        .await
        .map_err(|e| e.to_string())
}
