//! The webview's helper processes end with the last window. WebKitGTK
//! keeps its network process for as long as the web context lives, and on
//! Linux Tauri keeps the context for the app's whole life (a context made
//! anew per window leaked a network process each: tauri-apps/tauri#14626).
//! For an app that sits in the tray all day with its windows closed, that
//! process is tens of MiB held for nothing; once no window is left, it is
//! ended (SIGTERM), and WebKit starts a new one when a window opens again.
//! Windows (WebView2) and macOS (WKWebView) end theirs themselves.

use std::time::Duration;

use tauri::{AppHandle, Manager};

/// How long after the last window closed: a window opened right away (quick
/// add closing as the queue opens) keeps the process it would reuse.
const AFTER: Duration = Duration::from_secs(2);

/// Call when a window is destroyed: once no window is left, end the
/// webview's helper processes that outlive them.
pub fn window_destroyed(app: &AppHandle) {
    if !app.webview_windows().is_empty() {
        return;
    }
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        tokio::time::sleep(AFTER).await;
        if app.webview_windows().is_empty() {
            end_network_process();
        }
    });
}

#[cfg(target_os = "linux")]
fn end_network_process() {
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        // `comm` is cut at 15 bytes: "WebKitNetworkPr".
        let ours = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            let Some((name, rest)) = stat.split_once(" (").and_then(|(_, r)| r.rsplit_once(')')) else {
                return false;
            };
            let parent = rest.split_whitespace().nth(1).and_then(|p| p.parse::<u32>().ok());
            name.starts_with("WebKitNetwork") && parent == Some(me)
        });
        if ours {
            tracing::debug!(pid, "no window left: ending the webview's network process");
            if let Err(e) = engine::process::terminate(pid) {
                tracing::debug!(pid, error = %e, "could not end the webview's network process");
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn end_network_process() {}
