//! The desktop shell of local-mcp: it runs the engine in-process and wraps it
//! in a tray icon (one image per agent state), the queue window (the engine's
//! own page), a quick-add box and OS notifications. It only uses the engine's
//! public handle (URL, events, config); the engine knows nothing of Tauri.
//! When a headless `local-mcp-server` already holds the database, the shell
//! attaches to it instead (`attached.rs`): same window, tray and
//! notifications, fed by that server's page and event stream.

mod attached;
mod backend;
mod channel;
mod clipboard;
mod connect_menu;
mod instance;
mod notify;
mod prefs;
mod relaunch;
mod tray;
mod trim;
mod view;
mod webview_helpers;

mod windows;

use relaunch::{hand_over, leave_on_terminate, leaving, relaunch, watch_start, Held, RELAUNCH_VAR};

use engine::sync::MutexExt;
use std::collections::HashSet;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::{CommandFactory, FromArgMatches, Parser};
use engine::EventData;
use engine::{Engine, EventKind};
use tauri::{AppHandle, Manager, RunEvent};
use tauri_plugin_global_shortcut::{GlobalShortcutExt, ShortcutState};
use tokio_util::sync::CancellationToken;

/// The global shortcut that opens quick add.
pub const QUICK_ADD_SHORTCUT: &str = "CmdOrCtrl+Alt+Space";

#[derive(Parser, Debug)]
#[command(
    name = "local-mcp",
    version,
    about = "local-mcp: your instruction queue for AI agents, in the tray"
)]
struct Cli {
    #[command(flatten)]
    serve: engine::config::ServeArgs,
    /// Where the commands find the running instance (global: before or after the command).
    #[command(flatten)]
    address: engine::cli::ServerAddress,
    /// Open the quick-add box (in the running instance, if there is one)
    #[arg(long)]
    quick_add: bool,
    /// Open quick add to queue what the clipboard holds: paste (Ctrl+V), then
    /// Queue — a launch never queues by itself (the tray's Queue clipboard does, on a click)
    #[arg(long)]
    queue_clipboard: bool,
    /// Start in the tray without opening the queue window (used at login)
    #[arg(long)]
    hidden: bool,
    /// Talk to the running local-mcp instead of starting one (`stdio` is the bridge for stdio-only clients)
    #[command(subcommand)]
    command: Option<engine::cli::Command>,
}

/// What the shell keeps for its windows, tray and menu handlers.
pub struct Shell {
    pub page_url: url::Url,
    pub quick_url: url::Url,
    pub origin: url::Origin,
    pub mcp_url: String,
    /// The live token (the page can regenerate or remove it): read it when needed.
    pub credentials: Arc<engine::Credentials>,
    pub prefs: prefs::PrefsFile,
    engine: Mutex<Option<Engine>>,
    /// Set when a headless server already held the database at start: this
    /// app is that server's window and tray.
    pub attached: Option<engine::client::remote::Remote>,
    /// The database when it is not the default one: the stdio bridge and the
    /// Stop hooks this app writes are given it (`--db-path`).
    pub database: Option<String>,
}

/// What serves the queue this app shows: its own engine, or a headless
/// server that already held the database.
enum Started {
    Engine(Engine),
    Attached(engine::client::remote::Remote),
}

pub fn run() -> ExitCode {
    let attempt = std::env::var(RELAUNCH_VAR)
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .unwrap_or(0);
    // Single-threaded still: nothing else reads the environment.
    std::env::remove_var(RELAUNCH_VAR);
    webview_helpers::before_toolkit();
    let mut command = engine::cli::help_per_command(Cli::command());
    let mut cli = match Cli::from_arg_matches(&command.clone().get_matches()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let config = match engine::cli::prelude("local-mcp", &cli.serve, &cli.address, cli.command.take(), &mut command) {
        engine::cli::Prelude::Serve(config) => config,
        engine::cli::Prelude::Exit(code) => return code,
    };
    // Without a display GTK would panic deep inside Tauri; say what to do instead.
    if let Some(msg) = view::missing_display(
        std::env::var("DISPLAY").ok().as_deref(),
        std::env::var("WAYLAND_DISPLAY").ok().as_deref(),
    ) {
        eprintln!("{msg}");
        return ExitCode::from(3);
    }

    // Which app is the app: this one, or one that runs already.
    let lock_path = engine::default_desktop_instance();
    let claim = match lock_path.as_deref().map(instance::claim) {
        Some(Ok(claim)) => Some(claim),
        Some(Err(e)) => {
            eprintln!("local-mcp: could not start: {e}");
            return ExitCode::FAILURE;
        }
        // No config folder (no home): the single-instance plugin alone decides.
        None => None,
    };
    let context = tauri::generate_context!();
    let held = match claim {
        Some(instance::Claim::Running(running)) => {
            let lock_path = lock_path.unwrap_or_default();
            return hand_over(running, &lock_path, context, attempt);
        }
        Some(instance::Claim::Mine(held)) => Some(held),
        None => None,
    };

    // The engine before the toolkit and the webview: agents reach /mcp while
    // they load, and nothing the engine does waits for them.
    let shutdown = CancellationToken::new();
    let db_path = config.db_path.clone();
    let connection_file = config.connection_file.clone();
    let servers_dir = config.servers_dir.clone();
    let api_token = config.api_token.clone();
    let started = match tauri::async_runtime::block_on(engine::start(config, shutdown.clone())) {
        Ok(engine) => Started::Engine(engine),
        // A headless server serves this database already: be its window and tray.
        Err(engine::Error::InUse(why)) => {
            match attached::attach_to(&db_path, connection_file, servers_dir, api_token) {
                Some(remote) => Started::Attached(remote),
                None => {
                    eprintln!("local-mcp: could not start: {why}");
                    return ExitCode::from(engine::lock::EXIT_IN_USE);
                }
            }
        }
        Err(e) => {
            eprintln!("local-mcp: could not start: {e}");
            return ExitCode::FAILURE;
        }
    };
    // The display, where Tauri would open it (not beside the engine's start:
    // on two cores that slowed the engine's first answer by 10-20 ms): one
    // that cannot be opened is said plainly, with the engine stopped first.
    if let Err(why) = webview_helpers::open_display() {
        eprintln!("{why}");
        shutdown.cancel();
        if let Started::Engine(engine) = started {
            stop(engine, &shutdown);
        }
        return ExitCode::from(3);
    }
    let started = Arc::new(Mutex::new(Some(started)));
    let in_setup = started.clone();
    let setup_shutdown = shutdown.clone();
    let toolkit_started = std::time::Instant::now();
    let channel_up = watch_start(context.config().identifier.clone());
    let app = builder()
        .setup(move |app| {
            let handle = app.handle().clone();
            let shown = match in_setup.lock_anyway().take() {
                Some(Started::Engine(engine)) => run_engine(app, engine),
                Some(Started::Attached(remote)) => attached::run_attached(app, remote, setup_shutdown.clone()),
                None => Err("the engine was not there to show".into()),
            };
            if let Err(e) = shown {
                // An error returned from setup is a panic in Tauri: say it and leave.
                eprintln!("local-mcp: could not start: {e}");
                handle.exit(1);
                return Ok(());
            }
            app.manage(Held(Mutex::new(held)));
            if let Some(held) = app.state::<Held>().0.lock_anyway().as_mut() {
                held.mark(instance::Phase::Ready);
            }
            tauri::async_runtime::spawn(leave_on_terminate(handle.clone()));
            if let Err(e) = handle.global_shortcut().register(QUICK_ADD_SHORTCUT) {
                tracing::warn!(error = %e, "could not register the quick-add shortcut {QUICK_ADD_SHORTCUT}; use the tray menu");
            }
            if !cli.hidden && !cli.queue_clipboard {
                windows::show_main(&handle);
            } else {
                webview_helpers::started_hidden(&handle);
            }
            // As over the channel: a launch opens quick add, never queues by itself.
            if cli.quick_add || cli.queue_clipboard {
                windows::show_quick_add(&handle);
            }
            Ok(())
        })
        .build(context);
    channel_up.store(true, Ordering::SeqCst);
    tracing::info!(
        ms = toolkit_started.elapsed().as_millis() as u64,
        ok = app.is_ok(),
        "the desktop toolkit and plugins are up"
    );
    let app = match app {
        Ok(app) => app,
        Err(e) => {
            // The single-instance channel is held by an app that no longer
            // answers (one that just left, whose name the bus has not dropped
            // yet): start again, with this engine stopped first.
            shutdown.cancel();
            let taken = started.lock_anyway().take();
            if let Some(Started::Engine(engine)) = taken {
                stop(engine, &shutdown);
            }
            return relaunch(&e.to_string(), attempt);
        }
    };
    app.run(move |handle, event| match event {
        // Closing the last window keeps local-mcp in the tray; only Quit exits.
        RunEvent::ExitRequested { code: None, api, .. } => api.prevent_exit(),
        RunEvent::ExitRequested { code: Some(_), .. } => leaving(handle),
        RunEvent::WindowEvent {
            event: tauri::WindowEvent::Destroyed,
            ..
        } => webview_helpers::window_destroyed(handle),
        RunEvent::Exit => {
            leaving(handle);
            stop_engine(handle, &shutdown);
        }
        _ => {}
    });
    ExitCode::SUCCESS
}

/// The app with its plugins; the single-instance plugin first, so that a
/// second launch hands its arguments over and exits before the rest load.
fn builder() -> tauri::Builder<tauri::Wry> {
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

/// The shell around the desktop's own engine.
fn run_engine(app: &mut tauri::App, engine: Engine) -> Result<(), Box<dyn std::error::Error>> {
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

fn stop_engine(app: &AppHandle, shutdown: &CancellationToken) {
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
fn stop(engine: Engine, shutdown: &CancellationToken) {
    shutdown.cancel();
    let _ =
        tauri::async_runtime::block_on(async { tokio::time::timeout(Duration::from_secs(6), engine.stopped()).await });
}

/// React to engine events: tray on every status change, notifications on
/// consumption (and, if wanted, when an agent starts waiting on an empty queue).
pub(crate) async fn follow_engine(
    app: AppHandle,
    items: tray::TrayItems,
    mut events: tokio::sync::broadcast::Receiver<std::sync::Arc<engine::Event>>,
) {
    let mut listening = HashSet::new();
    let mut faulty = false;
    loop {
        let event = match events.recv().await {
            Ok(e) => e,
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        };
        let prefs = app.state::<Shell>().prefs.get();
        match (&event.kind, &event.data) {
            (EventKind::StatusChanged, EventData::Status(status)) => {
                tray::LOG_DIR.lock_anyway().clone_from(&status.server.log_dir);
                let mut tray_view = view::tray_view(status);
                if let Some(remote) = &app.state::<Shell>().attached {
                    tray_view = view::attached(tray_view, &remote.base);
                }
                tray::apply(&app, &items, &tray_view);
                // Once per fault, when it starts: the tooltip carries it after that.
                match (&status.server.storage_fault, faulty) {
                    (Some(fault), false) => {
                        let (title, body) = view::storage_fault_notification(fault);
                        notify::send(&app, &title, &body);
                        faulty = true;
                    }
                    (None, true) => faulty = false,
                    _ => {}
                }
                for agent in view::newly_waiting(&mut listening, status) {
                    if prefs.notify_waiting {
                        let (title, body) = view::waiting_notification(&agent);
                        notify::send(&app, &title, &body);
                    }
                }
            }
            (EventKind::ReportCreated, EventData::Report(report)) if prefs.notify_reported => {
                let (title, body) = view::report_notification(&report.agent_id, &report.content);
                notify::send(&app, &title, &body);
            }
            (EventKind::InstructionUpdated, EventData::Instruction(item))
                if item.delivery == Some(engine::model::Delivery::InDoubt) =>
            {
                let agent = item.consumed_by_agent_id.as_deref().unwrap_or("An agent");
                let (title, body) = view::in_doubt_notification(agent, &item.content);
                notify::send(&app, &title, &body);
            }
            (EventKind::InstructionConsumed, EventData::Instruction(item)) if prefs.notify_consumed => {
                let agent = item.consumed_by_agent_id.as_deref().unwrap_or("An agent");
                let (title, body) = view::consumed_notification(agent, &item.content, event.pending_count.unwrap_or(0));
                notify::send(&app, &title, &body);
            }
            _ => {}
        }
    }
}

/// Another process for a test: a copy of this test binary that runs only the
/// ignored test `test` (which reads `var` to know it is that copy), its
/// output dropped. Used where a test needs a second process to hold a lock
/// or a bus name.
#[cfg(test)]
pub(crate) fn test_child(test: &str, var: &str, value: impl AsRef<std::ffi::OsStr>) -> std::process::Child {
    std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--ignored", "--nocapture"])
        .env(var, value)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap()
}
