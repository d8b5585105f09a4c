//! Starting again and leaving: a second launch hands its arguments to the
//! running app (or takes over from one that hangs), a start that cannot go on
//! runs again in a fresh process, and an app on its way out says so, so a new
//! start waits for it instead of handing it arguments it would drop
//! (`instance` holds the lock and its phases; `docs/RELIABILITY.md`, "One
//! desktop app").

use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use engine::process;
use engine::sync::MutexExt;
use tauri::{AppHandle, Manager};

use crate::instance;

/// This app's hold on the desktop lock, for the exit to say it is leaving.
pub(crate) struct Held(pub(crate) Mutex<Option<instance::Instance>>);

/// Set on the copy of the app that `relaunch` starts: how many starts
/// came before it.
pub(crate) const RELAUNCH_VAR: &str = "LOCAL_MCP_RELAUNCH";
/// Starts tried before giving up (the first and three relaunches, over ~2 s of pauses).
pub(crate) const STARTS: u32 = 4;

/// A second launch: the single-instance plugin gives the running app this
/// launch's arguments (it brings its window forward, opens quick add…) and
/// ends this process. If the running app does not answer, it has hung: take
/// over from it and start again.
pub(crate) fn hand_over(running: instance::State, lock_path: &Path, context: tauri::Context, attempt: u32) -> ExitCode {
    // The plugin's call waits for the answer with no bound of its own, and an
    // app that is stopped or wedged never answers: past our patience, end it
    // (the call then fails, and this start goes on from there).
    let pid = running.pid;
    let answered = watchdog(HAND_OVER_PATIENCE, move || {
        let why = format!(
            "it did not take a launch's arguments in {} s",
            HAND_OVER_PATIENCE.as_secs()
        );
        if let Err(e) = instance::take_over(pid, &why) {
            // The call would wait for ever on a process that is not ours to end.
            eprintln!("local-mcp: could not start: {e}");
            std::process::exit(1);
        }
    });
    let built = crate::builder().build(context);
    answered.store(true, Ordering::SeqCst);
    match built {
        // Not reached when the hand-over worked: the plugin exits the process.
        // Here nobody held the channel: the app has left it on its way out
        // (start again, which waits for it to be gone), or never had one.
        Ok(_) => match instance::read_state(lock_path) {
            Some(now) if now == running && process::alive(running.pid) => {
                eprintln!(
                    "local-mcp is already running (process {}), and it offers no way to be shown: \
                     open its window from the tray",
                    running.pid
                );
                ExitCode::FAILURE
            }
            _ => relaunch("the running local-mcp was leaving", attempt),
        },
        Err(e) => {
            if process::alive(running.pid) {
                if let Err(refused) = instance::take_over(running.pid, &e.to_string()) {
                    eprintln!("local-mcp: could not start: {refused}");
                    return ExitCode::FAILURE;
                }
            }
            relaunch(&e.to_string(), attempt)
        }
    }
}

/// How long a second launch waits for the running app to take its arguments.
const HAND_OVER_PATIENCE: Duration = Duration::from_secs(10);
/// How long this app's own single-instance channel may take to come up: the
/// bus name is held by a process that neither answers nor leaves (not one of
/// ours by the desktop lock: another copy of the app, with other settings).
pub(crate) const CHANNEL_PATIENCE: Duration = Duration::from_secs(20);

/// Run `on_timeout` on a thread of its own unless the returned flag is set
/// within `patience`.
pub(crate) fn watchdog(patience: Duration, on_timeout: impl FnOnce() + Send + 'static) -> Arc<AtomicBool> {
    let done = Arc::new(AtomicBool::new(false));
    let flag = done.clone();
    std::thread::spawn(move || {
        std::thread::sleep(patience);
        if !flag.load(Ordering::SeqCst) {
            on_timeout();
        }
    });
    done
}

/// Start this app again in a fresh process (a Tauri app is built once per
/// process), with the same arguments, after a pause that grows each time.
pub(crate) fn relaunch(why: &str, attempt: u32) -> ExitCode {
    // The count comes from the environment: any number must do no harm.
    if attempt.saturating_add(1) >= STARTS {
        eprintln!(
            "local-mcp: could not start: {why} (tried {} times)",
            attempt.saturating_add(1)
        );
        return ExitCode::FAILURE;
    }
    tracing::warn!(attempt, "starting again: {why}");
    std::thread::sleep(Duration::from_millis(250 << attempt));
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            eprintln!("local-mcp: could not start: {why}; and cannot find this program to try again: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut again = std::process::Command::new(exe);
    again
        .args(std::env::args_os().skip(1))
        .env(RELAUNCH_VAR, (attempt + 1).to_string());
    // Unix: in place, the same pid, so whoever started this app (a launcher, a test) still has it.
    match engine::process::run_again(&mut again) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("local-mcp: could not start: {why}; and could not start again: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The app is on its way out: a start from now on waits for it to be gone
/// instead of handing it arguments it would drop.
pub(crate) fn leaving(app: &AppHandle) {
    if let Some(held) = app.try_state::<Held>() {
        if let Some(held) = held.0.lock_anyway().as_mut() {
            held.mark(instance::Phase::Leaving);
        }
    }
    tauri_plugin_single_instance::destroy(app);
}

/// SIGTERM (a logout, `kill`, a new start taking over) or Ctrl+C in its
/// terminal quits like the tray's Quit: waiting agents are answered and the
/// database is closed.
pub(crate) async fn leave_on_terminate(app: AppHandle) {
    engine::process::asked_to_end().await;
    tracing::info!("asked to end: quitting");
    app.exit(0);
}
