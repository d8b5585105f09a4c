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
use std::time::{Duration, Instant};

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

/// A second launch: the running app gets this launch's arguments (it brings
/// its window forward, opens quick add…) and this process ends — over the
/// session bus before the toolkit starts where it can (`channel::hand`),
/// else through the single-instance plugin. If the running app does not
/// answer, it has hung: take over from it and start again.
pub(crate) fn hand_over(running: instance::State, lock_path: &Path, context: tauri::Context, attempt: u32) -> ExitCode {
    let pid = running.pid;
    // Handed over before the toolkit starts, when the running app holds its
    // channel (the usual case): no display opened for a launch that ends here.
    match crate::channel::hand(&context.config().identifier, HAND_OVER_PATIENCE) {
        crate::channel::Handed::Taken => return ExitCode::SUCCESS,
        crate::channel::Handed::NoAnswer(why) => return take_over_and_start_again(pid, &why, attempt),
        crate::channel::Handed::NotHere(why) => tracing::debug!("{why}; handing over through the plugin"),
    }
    if let Err(why) = crate::webview_helpers::open_display() {
        eprintln!("{why}");
        return ExitCode::from(3);
    }
    // The plugin's call waits for the answer with no bound of its own, and an
    // app that is stopped or wedged never answers: past our patience, end it
    // (the call then fails, and this start goes on from there).
    let answered = watchdog(HAND_OVER_PATIENCE, move || {
        let why = format!(
            "it did not take a launch's arguments in {} s",
            HAND_OVER_PATIENCE.as_secs()
        );
        if let Err(e) = instance::take_over(pid, "the running local-mcp", &why) {
            // The call would wait for ever on a process that is not ours to end.
            eprintln!("local-mcp: could not start: {e}");
            std::process::exit(1);
        }
    });
    let built = crate::plugins::builder().build(context);
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
        Err(e) => take_over_and_start_again(pid, &e.to_string(), attempt),
    }
}

/// The running app `pid` did not take a launch's arguments (`why`): end it
/// if it still runs, and start again in its place.
fn take_over_and_start_again(pid: u32, why: &str, attempt: u32) -> ExitCode {
    if process::alive(pid) {
        if let Err(refused) = instance::take_over(pid, "the running local-mcp", why) {
            eprintln!("local-mcp: could not start: {refused}");
            return ExitCode::FAILURE;
        }
    }
    relaunch(why, attempt)
}

/// How long a second launch waits for the running app to take its arguments.
const HAND_OVER_PATIENCE: Duration = Duration::from_secs(10);
/// How long the toolkit and the plugins may take to come up before this
/// start asks who holds the single-instance channel, and says it is slow.
const CHANNEL_PATIENCE: Duration = Duration::from_secs(20);
/// How long they may take when nothing else holds them up: past this the
/// toolkit has hung, and the start says so and ends.
pub(crate) const START_LIMIT: Duration = Duration::from_secs(120);
/// How often a late start asks again.
const LATE_CHECKS: Duration = Duration::from_secs(2);

/// Watch this start's toolkit and plugins come up (`tauri::Builder::build`)
/// until the returned flag is set. If they are late, ask who holds the
/// single-instance channel (`channel`): another local-mcp that does not
/// answer is ended, so that the plugin's call to it fails and this start
/// runs again (`relaunch`); another program is named and this start ends;
/// nobody means the start is slow, not blocked: it goes on, up to
/// `START_LIMIT`. Where the platform's channel names no owner (Windows,
/// macOS), a late start ends, naming the channel.
pub(crate) fn watch_start(identifier: String) -> Arc<AtomicBool> {
    let done = Arc::new(AtomicBool::new(false));
    let flag = done.clone();
    std::thread::spawn(move || {
        let started = Instant::now();
        std::thread::sleep(CHANNEL_PATIENCE);
        let mut ended = None;
        let mut said_slow = false;
        while !flag.load(Ordering::SeqCst) {
            let waited = started.elapsed();
            let holder = crate::channel::holder(&identifier);
            let ours = matches!(holder, crate::channel::Holder::Other { pid, .. } if process::same_program(pid));
            match late_start(holder, ours, ended, waited) {
                Late::TakeOver(pid) => {
                    let why = format!(
                        "it holds the single-instance channel and has not answered in {} s",
                        waited.as_secs()
                    );
                    let whose = format!(
                        "the owner of the desktop's single-instance channel ({identifier}.SingleInstance on the session bus)"
                    );
                    if let Err(e) = instance::take_over(pid, &whose, &why) {
                        eprintln!("local-mcp: could not start: {e}");
                        std::process::exit(1);
                    }
                    ended = Some(pid);
                }
                Late::GiveUp(why) => {
                    eprintln!("local-mcp: could not start: {why}");
                    std::process::exit(1);
                }
                Late::Wait(why) => {
                    if !said_slow {
                        said_slow = true;
                        tracing::warn!(
                            "the desktop toolkit has not come up in {} s ({why}); waiting (up to {} s)",
                            waited.as_secs(),
                            START_LIMIT.as_secs()
                        );
                    }
                }
            }
            std::thread::sleep(LATE_CHECKS);
        }
    });
    done
}

/// What a late start does next.
#[derive(Debug, PartialEq, Eq)]
enum Late {
    /// End this local-mcp, which holds the channel and does not answer.
    TakeOver(u32),
    /// End this start, saying why.
    GiveUp(String),
    /// Go on waiting: the start is slow, not blocked (why, for the log).
    Wait(String),
}

/// The decision of a start `waited` into its toolkit and plugins coming up,
/// having found `holder` on the channel (`ours`: it runs this program), and
/// ended `ended` before.
fn late_start(holder: crate::channel::Holder, ours: bool, ended: Option<u32>, waited: Duration) -> Late {
    use crate::channel::Holder;
    let secs = waited.as_secs();
    match holder {
        Holder::Other { pid, answers: false } if ended != Some(pid) => Late::TakeOver(pid),
        // Another program holds the channel: it answers the bus but not as local-mcp does.
        Holder::Other { pid, answers: true } if !ours => Late::GiveUp(format!(
            "the desktop's single-instance channel is held by process {pid}, which is not local-mcp and has not \
             taken this start's arguments in {secs} s; end it and start again"
        )),
        // Elsewhere the channel names no owner: a start still blocked is taken to be blocked by it.
        // (On Linux the plugin goes on without a bus it cannot reach, so the start is only slow.)
        Holder::Unknown(why) if cfg!(not(target_os = "linux")) => Late::GiveUp(format!(
            "the desktop's single-instance channel did not come up in {secs} s, and who holds it cannot be told \
             ({why}); end the other local-mcp and start again"
        )),
        _ if waited >= START_LIMIT => Late::GiveUp(format!(
            "the desktop toolkit (the display, the session bus) did not come up in {secs} s"
        )),
        // A holder that answers is running: it is not what holds this start up.
        Holder::Other { pid, answers: true } => Late::Wait(format!("the channel's owner, process {pid}, answers")),
        Holder::Other { pid, .. } => Late::Wait(format!("process {pid}, which held the channel, was ended")),
        Holder::Nobody | Holder::This => Late::Wait("nothing else holds the channel".into()),
        Holder::Unknown(why) => Late::Wait(why),
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channel::Holder;

    const LATE: Duration = Duration::from_secs(21);

    #[test]
    fn only_an_owner_that_does_not_answer_is_ended() {
        assert_eq!(
            late_start(Holder::Other { pid: 7, answers: false }, true, None, LATE),
            Late::TakeOver(7)
        );
        // One that answers is running: a start that is merely slow (its display late) must not end it.
        assert!(matches!(
            late_start(Holder::Other { pid: 7, answers: true }, true, None, LATE),
            Late::Wait(_)
        ));
        // Ended once already: not again.
        assert!(matches!(
            late_start(Holder::Other { pid: 7, answers: false }, true, Some(7), LATE),
            Late::Wait(_)
        ));
        assert!(matches!(late_start(Holder::Nobody, false, None, LATE), Late::Wait(_)));
        assert!(matches!(late_start(Holder::This, false, None, LATE), Late::Wait(_)));
    }

    /// Another program that holds the channel and answers pings, but never
    /// takes a launch's arguments: named at once, not blamed on the toolkit at 120 s.
    #[test]
    fn another_program_holding_the_channel_is_named() {
        match late_start(Holder::Other { pid: 7, answers: true }, false, None, LATE) {
            Late::GiveUp(why) => assert!(why.contains("held by process 7, which is not local-mcp"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_start_that_stays_late_gives_up_naming_what_it_waited_for() {
        let limit = START_LIMIT + Duration::from_secs(1);
        for holder in [
            Holder::Nobody,
            Holder::Other { pid: 7, answers: true },
            Holder::Unknown("no bus".into()),
        ] {
            match late_start(holder.clone(), true, None, limit) {
                Late::GiveUp(why) => assert!(why.contains("did not come up in 121 s"), "{holder:?}: {why}"),
                other => panic!("{holder:?}: {other:?}"),
            }
        }
        // An owner that does not answer is still ended first.
        assert_eq!(
            late_start(Holder::Other { pid: 7, answers: false }, true, None, limit),
            Late::TakeOver(7)
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn on_linux_a_bus_that_cannot_be_asked_is_a_slow_start() {
        assert!(matches!(
            late_start(Holder::Unknown("no bus".into()), false, None, LATE),
            Late::Wait(_)
        ));
    }
}
