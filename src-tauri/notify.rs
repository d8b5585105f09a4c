//! OS notifications, through tauri-plugin-notification.

use tauri::AppHandle;
use tauri_plugin_notification::NotificationExt;

pub fn send(app: &AppHandle, title: &str, body: &str) {
    if let Err(e) = app.notification().builder().title(title).body(body).show() {
        tracing::warn!(error = %e, "could not show a notification");
    }
}

/// Show a notification as `id`, in place of the one shown as `id` before
/// (closed first: the plugin sends no `replaces_id`, so a server would
/// otherwise show both).
pub fn replace(app: &AppHandle, id: i32, title: &str, body: &str) {
    let notifications = app.notification();
    if let Err(e) = notifications.remove_active(vec![id]) {
        tracing::debug!(error = %e, "could not close an earlier notification");
    }
    if let Err(e) = notifications.builder().id(id).title(title).body(body).show() {
        tracing::warn!(error = %e, "could not show a notification");
    }
}
