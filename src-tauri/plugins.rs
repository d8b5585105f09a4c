//! The app with its plugins, as both a first launch and a relaunch build it
//! (`lib.rs`, `relaunch.rs`), and the global shortcut it registers.

use tauri_plugin_global_shortcut::ShortcutState;

use crate::windows;

/// The global shortcut that opens quick add.
pub const QUICK_ADD_SHORTCUT: &str = "CmdOrCtrl+Alt+Space";

/// The app with its plugins; the single-instance plugin first, so that a
/// second launch hands its arguments over and exits before the rest load.
pub(crate) fn builder() -> tauri::Builder<tauri::Wry> {
    tauri::Builder::default()
        .plugin(tauri_plugin_single_instance::init(|app, argv, _cwd| {
            // On the main thread, as the tray's menu does it, and answer the
            // second launch at once: a window built from the bus's thread
            // waits on the main loop, and the first one never came (an app
            // started hidden kept the second launch waiting forever).
            let handle = app.clone();
            // A second launch may only show the window or open quick add:
            // any program of this account can make that call on the session
            // bus, and queuing the clipboard from it would send whatever is
            // there (a password just copied) to the agents with no gesture of
            // the person's. So `--queue-clipboard` opens quick add, where the
            // person pastes and queues (issue 38, finding 7).
            let done = app.run_on_main_thread(move || {
                if argv.iter().any(|a| a == "--quick-add" || a == "--queue-clipboard") {
                    windows::show_quick_add(&handle);
                } else {
                    windows::show_main(&handle);
                }
            });
            if let Err(e) = done {
                tracing::warn!(error = %e, "could not act on a second launch");
            }
        }))
        .plugin(tauri_plugin_notification::init())
        .plugin(tauri_plugin_clipboard_manager::init())
        .plugin(tauri_plugin_opener::init())
        .plugin(tauri_plugin_window_state::Builder::default().build())
        .plugin(tauri_plugin_autostart::init(
            tauri_plugin_autostart::MacosLauncher::LaunchAgent,
            Some(vec!["--hidden"]),
        ))
        .plugin(
            tauri_plugin_global_shortcut::Builder::new()
                .with_handler(|app, _shortcut, event| {
                    if event.state() == ShortcutState::Pressed {
                        windows::show_quick_add(app);
                    }
                })
                .build(),
        )
}
