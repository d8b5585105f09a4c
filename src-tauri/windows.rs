//! The two windows: the queue (the engine's own page) and quick add (a small
//! always-on-top box, also served by the engine). Neither gets Tauri IPC: they
//! talk to the engine over HTTP like any browser. Navigation is held to the
//! engine's origin; other links open in the system browser.

use engine::sync::MutexExt;
use tauri::webview::Cookie;
use tauri::{AppHandle, Manager, WebviewUrl, WebviewWindow, WebviewWindowBuilder};
use tauri_plugin_window_state::{StateFlags, WindowExt};

use crate::shell::Shell;
use crate::view::{main_window_may_load, quick_add_nav, QuickAddNav};

pub const MAIN: &str = "main";
pub const QUICK_ADD: &str = "quick-add";

/// Show the queue window, creating it if needed.
pub fn show_main(app: &AppHandle) {
    show_main_at(app, None);
}

/// Show the queue window at one of the page's panels (`phone`: the page
/// opens the panel its address's fragment names).
pub fn show_main_at(app: &AppHandle, panel: Option<&str>) {
    if let Some(w) = app.get_webview_window(MAIN) {
        let _ = w.unminimize();
        let _ = w.show();
        let _ = w.set_focus();
        if let Some(panel) = panel.filter(|p| p.bytes().all(|b| b.is_ascii_lowercase())) {
            let _ = w.eval(format!("location.hash = '{panel}'"));
        }
        return;
    }
    if let Err(e) = create_main(app, panel) {
        tracing::error!(error = %e, "could not open the queue window");
    }
}

fn create_main(app: &AppHandle, panel: Option<&str>) -> tauri::Result<()> {
    let began = std::time::Instant::now();
    let shell = app.state::<Shell>();
    let origin = shell.origin.clone();
    let opener = app.clone();
    let new_tabs = app.clone();
    // Start on the shell's placeholder page: the session cookie must be in
    // place before the first request to the engine.
    let window = WebviewWindowBuilder::new(app, MAIN, WebviewUrl::App("index.html".into()))
        .title("local-mcp")
        .inner_size(760.0, 820.0)
        .min_inner_size(360.0, 420.0)
        .on_navigation(move |url| {
            if main_window_may_load(url, &origin) {
                return true;
            }
            use tauri_plugin_opener::OpenerExt;
            if let Err(e) = opener.opener().open_url(url.as_str(), None::<&str>) {
                tracing::warn!(error = %e, "could not open a link in the system browser");
            }
            false
        })
        // Links in agents' reports open in a new tab (`target="_blank"`): in the
        // desktop that is the system browser, never a window of ours.
        .on_new_window(move |url, _features| {
            use tauri_plugin_opener::OpenerExt;
            tracing::info!(%url, "a link for a new window: the system browser opens it");
            if matches!(url.scheme(), "http" | "https" | "mailto") {
                if let Err(e) = new_tabs.opener().open_url(url.as_str(), None::<&str>) {
                    tracing::warn!(error = %e, "could not open a link in the system browser");
                }
            }
            tauri::webview::NewWindowResponse::Deny
        })
        .build()?;
    let built = began.elapsed();
    let _ = window.restore_state(StateFlags::all());
    sign_in(&window, &shell);
    let signed_in = began.elapsed();
    let mut page = shell.page_url.clone();
    page.set_fragment(panel);
    window.navigate(page)?;
    tracing::debug!(
        built_ms = built.as_millis() as u64,
        signed_in_ms = signed_in.as_millis() as u64,
        navigating_ms = began.elapsed().as_millis() as u64,
        "the queue window is built"
    );
    crate::webview_helpers::window_created(app);
    Ok(())
}

/// With a token required, give the window the page-session cookie so the page
/// never asks for (or sees) the token.
fn sign_in(window: &WebviewWindow, shell: &Shell) {
    let Some(spec) = shell.credentials.session_cookie() else {
        return;
    };
    // The engine spells the cookie's attributes (one place for the page's
    // sign-in and this one); the window needs only the host added.
    let Ok(mut cookie) = Cookie::parse(spec) else {
        tracing::warn!("the engine's session cookie did not parse; the page will ask for the token");
        return;
    };
    cookie.set_domain(shell.page_url.host_str().unwrap_or("127.0.0.1").to_owned());
    if let Err(e) = window.set_cookie(cookie) {
        tracing::warn!(error = %e, "could not sign the window in; the page will ask for the token");
    }
}

/// Show the quick-add box (fresh, focused, on top).
/// The question quick add answers while an agent waits on one: (report id,
/// agent id), kept in step with the tray.
pub static ANSWERING: std::sync::Mutex<Option<(String, String)>> = std::sync::Mutex::new(None);

pub fn show_quick_add(app: &AppHandle) {
    // While an agent waits on a question, quick add answers it.
    let answering = ANSWERING.lock_anyway().clone();
    show_quick_add_for(app, answering);
}

/// Quick add answering the question `answering` (report id, agent id), or
/// queuing for anyone with `None`.
pub fn show_quick_add_for(app: &AppHandle, answering: Option<(String, String)>) {
    let shell = app.state::<Shell>();
    let mut url = shell.quick_url.clone();
    // Answering, it shows the question and its suggested answers above the box.
    let size = tauri::LogicalSize::new(480.0, if answering.is_some() { 300.0 } else { 170.0 });
    if let Some((report, agent)) = answering {
        url.query_pairs_mut()
            .append_pair("reply", &report)
            .append_pair("agent", &agent);
    }
    if let Some(w) = app.get_webview_window(QUICK_ADD) {
        let _ = w.set_size(size);
        let _ = w.navigate(url);
        let _ = w.show();
        let _ = w.set_focus();
        return;
    }
    let origin = shell.origin.clone();
    let handle = app.clone();
    let built = WebviewWindowBuilder::new(app, QUICK_ADD, WebviewUrl::App("index.html".into()))
        .title("Quick add · local-mcp")
        .inner_size(size.width, size.height)
        .resizable(false)
        .always_on_top(true)
        .skip_taskbar(true)
        .center()
        .on_navigation(move |url| match quick_add_nav(url, &origin) {
            QuickAddNav::Allow => true,
            QuickAddNav::Done | QuickAddNav::Cancel => {
                let h = handle.clone();
                // Destroyed, not hidden: a webview kept for next time holds its
                // web process (tens of MiB) all day. Outside the navigation
                // callback, which webviews dislike re-entering.
                let _ = handle.run_on_main_thread(move || {
                    if let Some(w) = h.get_webview_window(QUICK_ADD) {
                        let _ = w.destroy();
                    }
                });
                false
            }
            QuickAddNav::Refuse => url.scheme() == "tauri" || url.host_str() == Some("tauri.localhost"),
        })
        .build();
    match built {
        Ok(w) => {
            sign_in(&w, &shell);
            let _ = w.navigate(url);
            let _ = w.set_focus();
        }
        Err(e) => tracing::error!(error = %e, "could not open the quick-add window"),
    }
}
