//! The desktop shell of local-mcp: it runs the engine in-process and wraps it
//! in a tray icon (one image per agent state), the queue window (the engine's
//! own page), a quick-add box and OS notifications. It only uses the engine's
//! public handle (URL, events, config); the engine knows nothing of Tauri.
//! When a headless `local-mcp-server` already holds the database, the shell
//! attaches to it instead (`attached.rs`): same window, tray and
//! notifications, fed by that server's page and event stream.

mod asks;
mod attached;
mod backend;
mod channel;
mod clipboard;
mod connect_menu;
mod deliveries;
mod follow;
mod instance;
mod needs;
mod notify;
mod own;
mod plugins;
mod prefs;
mod relaunch;
mod shell;
mod tray;
mod trim;
mod view;
mod webview_helpers;

mod windows;

use relaunch::{hand_over, leave_on_terminate, leaving, relaunch, watch_start, Held, RELAUNCH_VAR};

use engine::sync::MutexExt;
use engine::Engine;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use clap::{CommandFactory, FromArgMatches, Parser};
use tauri::{AppHandle, Manager, RunEvent};
use tauri_plugin_global_shortcut::GlobalShortcutExt;
use tauri_plugin_notification::NotificationExt as _;
use tokio_util::sync::CancellationToken;

pub use plugins::QUICK_ADD_SHORTCUT;
pub use shell::Shell;

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

/// What serves the queue this app shows: its own engine, or a headless
/// server that already held the database.
enum Started {
    Engine(Engine),
    Attached(engine::client::remote::Remote),
}

/// The app, from its command line to its event loop: each step below says
/// what it decides, and returns the exit code when the app ends there.
pub fn run() -> ExitCode {
    let attempt = std::env::var(RELAUNCH_VAR)
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .unwrap_or(0);
    // Single-threaded still: nothing else reads the environment.
    std::env::remove_var(RELAUNCH_VAR);
    webview_helpers::before_toolkit();
    let (cli, config) = match read_command_line() {
        Ok(read) => read,
        Err(code) => return code,
    };
    if let Some(code) = without_display() {
        return code;
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
            return hand_over(running, &lock_path.unwrap_or_default(), context, attempt);
        }
        Some(instance::Claim::Mine(held)) => Some(held),
        None => None,
    };
    let shutdown = CancellationToken::new();
    let started = match start_backend(config, &shutdown) {
        Ok(started) => started,
        Err(code) => return code,
    };
    // The display, where Tauri would open it (not beside the engine's start:
    // on two cores that slowed the engine's first answer): one that cannot be
    // opened is said plainly, with the engine stopped first.
    if let Err(why) = webview_helpers::open_display() {
        eprintln!("{why}");
        shutdown.cancel();
        if let Started::Engine(engine) = started {
            shell::stop(engine, &shutdown);
        }
        return ExitCode::from(3);
    }
    let started = Arc::new(Mutex::new(Some(started)));
    let toolkit_started = std::time::Instant::now();
    let channel_up = watch_start(context.config().identifier.clone());
    let app = plugins::builder()
        .setup(setup(started.clone(), held, cli, shutdown.clone()))
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
            let taken = started.lock_anyway().take();
            shutdown.cancel();
            if let Some(Started::Engine(engine)) = taken {
                shell::stop(engine, &shutdown);
            }
            return relaunch(&e.to_string(), attempt);
        }
    };
    app.run(move |handle, event| on_run_event(handle, event, &shutdown));
    ExitCode::SUCCESS
}

/// The command line: a client command runs here and ends the app (its exit
/// code); otherwise what to serve, and how the app opens.
fn read_command_line() -> Result<(Cli, engine::Config), ExitCode> {
    let mut command = engine::cli::help_per_command(Cli::command());
    let mut cli = match Cli::from_arg_matches(&command.clone().get_matches()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    match engine::cli::prelude("local-mcp", &cli.serve, &cli.address, cli.command.take(), &mut command) {
        engine::cli::Prelude::Serve(config) => Ok((cli, config)),
        engine::cli::Prelude::Exit(code) => Err(code),
    }
}

/// Without a display GTK would panic deep inside Tauri: say what to do instead.
fn without_display() -> Option<ExitCode> {
    let msg = view::missing_display(
        std::env::var("DISPLAY").ok().as_deref(),
        std::env::var("WAYLAND_DISPLAY").ok().as_deref(),
    )?;
    eprintln!("{msg}");
    Some(ExitCode::from(3))
}

/// The engine before the toolkit and the webview (agents reach /mcp while
/// they load, and nothing the engine does waits for them); or, when a
/// headless server serves this database already, that server to attach to.
fn start_backend(config: engine::Config, shutdown: &CancellationToken) -> Result<Started, ExitCode> {
    let db_path = config.db_path.clone();
    let connection_file = config.connection_file.clone();
    let servers_dir = config.servers_dir.clone();
    let api_token = config.api_token.clone();
    match tauri::async_runtime::block_on(engine::start(config, shutdown.clone())) {
        Ok(engine) => Ok(Started::Engine(engine)),
        // A headless server serves this database already: be its window and tray.
        Err(engine::Error::InUse(why)) => {
            match attached::attach_to(&db_path, connection_file, servers_dir, api_token) {
                Some(remote) => Ok(Started::Attached(remote)),
                None => {
                    eprintln!("local-mcp: could not start: {why}");
                    Err(ExitCode::from(engine::lock::EXIT_IN_USE))
                }
            }
        }
        Err(e) => {
            eprintln!("local-mcp: could not start: {e}");
            Err(ExitCode::FAILURE)
        }
    }
}

/// What the app does once its toolkit is up: the shell around what
/// `start_backend` started, the instance lock marked ready, the shortcut,
/// and the window or quick add the command line asked for.
fn setup(
    started: Arc<Mutex<Option<Started>>>,
    held: Option<instance::Instance>,
    cli: Cli,
    shutdown: CancellationToken,
) -> impl FnOnce(&mut tauri::App) -> Result<(), Box<dyn std::error::Error>> + Send + 'static {
    move |app| {
        let handle = app.handle().clone();
        // Before the engine's events are followed: a question's notification
        // is remembered, and its buttons answered, from the first one.
        app.manage(asks::Shown::default());
        let answering = handle.clone();
        if let Err(e) = app
            .notification()
            .on_action(move |performed| asks::on_action(&answering, performed))
        {
            tracing::warn!(error = %e, "notification buttons will not answer");
        }
        let shown = match started.lock_anyway().take() {
            Some(Started::Engine(engine)) => own::run_engine(app, engine),
            Some(Started::Attached(remote)) => attached::run_attached(app, remote, shutdown),
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
    }
}

/// The event loop's part: closing the last window keeps local-mcp in the
/// tray (only Quit exits), and leaving stops the engine.
fn on_run_event(handle: &AppHandle, event: RunEvent, shutdown: &CancellationToken) {
    match event {
        RunEvent::ExitRequested { code: None, api, .. } => api.prevent_exit(),
        RunEvent::ExitRequested { code: Some(_), .. } => leaving(handle),
        RunEvent::WindowEvent {
            event: tauri::WindowEvent::Destroyed,
            ..
        } => webview_helpers::window_destroyed(handle),
        RunEvent::Exit => {
            leaving(handle);
            shell::stop_engine(handle, shutdown);
        }
        _ => {}
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
