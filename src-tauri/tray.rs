//! The tray icon: an image for the most urgent agent state across queues, a
//! tooltip with the state, the pending count and held queues, and the menu
//! ("Needs you" ▸ from `needs`, pending per queue, hold or release all,
//! Connect ▸ from `connect_menu`). Updated from engine events (no
//! polling).

use engine::model::McpClient;
use engine::sync::MutexExt;
use tauri::image::Image;
use tauri::menu::{CheckMenuItem, Menu, MenuItem, PredefinedMenuItem, Submenu};
use tauri::tray::{MouseButton, MouseButtonState, TrayIcon, TrayIconBuilder, TrayIconEvent};
use tauri::{AppHandle, Manager, Wry};
use tauri_plugin_autostart::ManagerExt as _;
use tauri_plugin_clipboard_manager::ClipboardExt as _;

use engine::snippets;

use crate::shell::Shell;
use crate::view::{TrayIcon as Icon, TrayView};
use crate::{notify, windows};

pub const TRAY_ID: &str = "local-mcp";
pub const QUICK_ADD: &str = "quick-add";
pub const QUEUE_CLIPBOARD: &str = "queue-clipboard";
pub const OPEN: &str = "open";
pub const PHONE: &str = "phone";
pub const PENDING: &str = "pending";
pub const HOLD_ALL: &str = "hold-all";
/// Prefix of the "Copy MCP config" items; the client id follows.
pub const COPY_CONFIG: &str = "copy-config:";
pub const NOTIFY_CONSUMED: &str = "notify-consumed";
pub const NOTIFY_WAITING: &str = "notify-waiting";
pub const NOTIFY_REPORTED: &str = "notify-reported";
pub const AUTOSTART: &str = "autostart";
pub const LOG_FOLDER: &str = "log-folder";
pub const QUIT: &str = "quit";

/// The menu items that change after start-up.
pub struct TrayItems {
    pub pending: MenuItem<Wry>,
    /// Pending per queue: rebuilt when the lines change.
    pub queues: Submenu<Wry>,
    queue_labels: std::sync::Mutex<Vec<String>>,
    pub hold_all: MenuItem<Wry>,
}

/// What the menu last showed that its items act on, as `apply` left it
/// (managed by the app: the tray owns it, nobody else writes it).
#[derive(Default)]
struct Shown {
    /// Whether a queue is held: what "Hold all" / "Release all" toggles.
    any_held: std::sync::atomic::AtomicBool,
    /// The engine's log folder, as its last status said (own engine or attached server).
    log_dir: std::sync::Mutex<Option<String>>,
}

pub fn create(app: &AppHandle) -> tauri::Result<TrayItems> {
    app.manage(Shown::default());
    let prefs = app.state::<Shell>().prefs.get();
    let autostart = app.autolaunch().is_enabled().unwrap_or(false);
    let pending = MenuItem::with_id(app, PENDING, "Nothing pending", false, None::<&str>)?;
    let queues = Submenu::with_items(app, "Queues", false, &[])?;
    let hold_all = MenuItem::with_id(app, HOLD_ALL, "Hold all queues", true, None::<&str>)?;
    let copy_items = McpClient::ALL
        .iter()
        .map(|c| MenuItem::with_id(app, format!("{COPY_CONFIG}{}", c.id()), c.name(), true, None::<&str>))
        .collect::<tauri::Result<Vec<_>>>()?;
    let copy_refs: Vec<&dyn tauri::menu::IsMenuItem<Wry>> = copy_items.iter().map(|i| i as _).collect();
    let copy_config = Submenu::with_items(app, "Copy MCP config for", true, &copy_refs)?;
    let connect = crate::connect_menu::create(app)?;
    let needs = crate::needs::create(app)?;
    let menu = Menu::with_items(
        app,
        &[
            &needs,
            &MenuItem::with_id(
                app,
                QUICK_ADD,
                "Quick add…",
                true,
                Some(crate::plugins::QUICK_ADD_SHORTCUT),
            )?,
            &MenuItem::with_id(app, QUEUE_CLIPBOARD, "Queue clipboard", true, None::<&str>)?,
            &MenuItem::with_id(app, OPEN, "Open queue", true, None::<&str>)?,
            &MenuItem::with_id(app, PHONE, "Phone…", true, None::<&str>)?,
            &pending,
            &queues,
            &hold_all,
            &PredefinedMenuItem::separator(app)?,
            &connect,
            &copy_config,
            &CheckMenuItem::with_id(
                app,
                NOTIFY_CONSUMED,
                "Notify when an instruction is picked up",
                true,
                prefs.notify_consumed,
                None::<&str>,
            )?,
            &CheckMenuItem::with_id(
                app,
                NOTIFY_WAITING,
                "Notify when an agent is waiting",
                true,
                prefs.notify_waiting,
                None::<&str>,
            )?,
            &CheckMenuItem::with_id(
                app,
                NOTIFY_REPORTED,
                "Notify when an agent reports",
                true,
                prefs.notify_reported,
                None::<&str>,
            )?,
            &CheckMenuItem::with_id(app, AUTOSTART, "Start at login", true, autostart, None::<&str>)?,
            &MenuItem::with_id(app, LOG_FOLDER, "Open log folder", true, None::<&str>)?,
            &PredefinedMenuItem::separator(app)?,
            &MenuItem::with_id(app, QUIT, "Quit local-mcp", true, None::<&str>)?,
        ],
    )?;
    TrayIconBuilder::with_id(TRAY_ID)
        .icon(Image::from_bytes(Icon::Offline.png())?)
        .tooltip("local-mcp — starting")
        .menu(&menu)
        .show_menu_on_left_click(false)
        .on_menu_event(on_menu)
        .on_tray_icon_event(|tray, event| {
            // Windows reports both the press and the release: act on release only.
            if let TrayIconEvent::Click {
                button: MouseButton::Left,
                button_state: MouseButtonState::Up,
                ..
            } = event
            {
                windows::show_main(tray.app_handle());
            }
        })
        .build(app)?;
    Ok(TrayItems {
        pending,
        queues,
        queue_labels: std::sync::Mutex::default(),
        hold_all,
    })
}

fn copy_config(app: &AppHandle, shell: &Shell, id: &str) {
    let Some(client) = McpClient::from_id(id) else {
        return;
    };
    let program = snippets::bridge_program();
    let token = shell.credentials.token();
    let endpoint = snippets::Endpoint {
        mcp_url: &shell.mcp_url,
        queue: None,
        token: token.as_deref(),
        bridge_program: &program,
        database: shell.database.as_deref(),
    };
    match app.clipboard().write_text(snippets::snippet(client, &endpoint)) {
        Ok(()) => notify::send(app, &format!("MCP config for {} copied", client.name()), client.how()),
        Err(e) => tracing::warn!(error = %e, "could not copy the MCP config"),
    }
}

fn on_menu(app: &AppHandle, event: tauri::menu::MenuEvent) {
    let shell = app.state::<Shell>();
    if let Some(id) = event.id().as_ref().strip_prefix(COPY_CONFIG) {
        copy_config(app, &shell, id);
        return;
    }
    if crate::connect_menu::on_menu(app, event.id().as_ref()) || crate::needs::on_menu(app, event.id().as_ref()) {
        return;
    }
    match event.id().as_ref() {
        QUICK_ADD => windows::show_quick_add(app),
        QUEUE_CLIPBOARD => crate::clipboard::queue_clipboard(app),
        HOLD_ALL => {
            if let Some(backend) = crate::backend::Backend::of(app) {
                let hold = !app.state::<Shown>().any_held.load(std::sync::atomic::Ordering::Relaxed);
                tauri::async_runtime::spawn(async move {
                    if let Err(e) = backend.set_held(hold).await {
                        tracing::warn!(error = %e, "could not hold or release the queues");
                    }
                });
            }
        }
        OPEN => windows::show_main(app),
        // The page's Phone panel: start the listener, pair, revoke.
        PHONE => windows::show_main_at(app, Some("phone")),
        NOTIFY_CONSUMED => {
            shell.prefs.update(|p| p.notify_consumed = !p.notify_consumed);
        }
        NOTIFY_WAITING => {
            shell.prefs.update(|p| p.notify_waiting = !p.notify_waiting);
        }
        NOTIFY_REPORTED => {
            shell.prefs.update(|p| p.notify_reported = !p.notify_reported);
        }
        AUTOSTART => {
            let auto = app.autolaunch();
            let result = if auto.is_enabled().unwrap_or(false) {
                auto.disable()
            } else {
                auto.enable()
            };
            if let Err(e) = result {
                tracing::warn!(error = %e, "could not change start-at-login");
            }
        }
        LOG_FOLDER => {
            let dir = app.state::<Shown>().log_dir.lock_anyway().clone();
            match dir {
                Some(dir) => {
                    use tauri_plugin_opener::OpenerExt;
                    if let Err(e) = app.opener().open_path(&dir, None::<&str>) {
                        tracing::warn!(error = %e, "could not open the log folder {dir}");
                    }
                }
                None => notify::send(
                    app,
                    "No log files",
                    "This local-mcp does not write log files (LOCAL_MCP_LOG_DIR=off).",
                ),
            }
        }
        QUIT => app.exit(0),
        _ => {}
    }
}

/// Show just an icon and a tooltip (no status to show).
pub fn say(app: &AppHandle, icon: crate::view::TrayIcon, tooltip: &str) {
    let Some(tray): Option<TrayIcon> = app.tray_by_id(TRAY_ID) else {
        return;
    };
    if let Ok(image) = Image::from_bytes(icon.png()) {
        let _ = tray.set_icon(Some(image));
    }
    let _ = tray.set_tooltip(Some(tooltip));
}

/// Show a new view in the tray.
pub fn apply(app: &AppHandle, items: &TrayItems, view: &TrayView) {
    let Some(tray): Option<TrayIcon> = app.tray_by_id(TRAY_ID) else {
        return;
    };
    if let Ok(image) = Image::from_bytes(view.icon.png()) {
        let _ = tray.set_icon(Some(image));
    }
    let _ = tray.set_tooltip(Some(&view.tooltip));
    let _ = tray.set_title(view.title.as_deref());
    *crate::windows::ANSWERING.lock_anyway() = view.answer.clone();
    crate::needs::show(app, &view.asking);
    let _ = items.pending.set_text(&view.pending_label);
    let shown = app.state::<Shown>();
    shown
        .any_held
        .store(view.any_held, std::sync::atomic::Ordering::Relaxed);
    shown.log_dir.lock_anyway().clone_from(&view.log_dir);
    let _ = items.hold_all.set_text(if view.any_held {
        "Release all queues"
    } else {
        "Hold all queues"
    });
    let mut shown = items.queue_labels.lock_anyway();
    if *shown != view.queue_labels {
        if let Ok(old) = items.queues.items() {
            for item in old {
                let _ = items.queues.remove(&item);
            }
        }
        for label in &view.queue_labels {
            if let Ok(line) = MenuItem::new(app, label, false, None::<&str>) {
                let _ = items.queues.append(&line);
            }
        }
        let _ = items.queues.set_enabled(!view.queue_labels.is_empty());
        shown.clone_from(&view.queue_labels);
    }
}
