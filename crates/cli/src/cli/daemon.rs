//! Running the server in the background: `start` (detach, return once it
//! answers), `stop` (graceful: SIGTERM, wait for the database lock to be
//! let go), `restart` (`service install | uninstall`, so it starts at login,
//! is `service/`); and `restore`, the one command that works on the database itself, offline,
//! holding its lock.
//!
//! The database lock (`crate::lock`) is the authority on what runs: a
//! running engine holds it, and its lock file names the pid and URL. A pid
//! from anywhere else could belong to another program by now.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::Failure;
use crate::config::ServeArgs;
use crate::lock::{self, Holder, EXIT_IN_USE};

/// How long `start` waits for the server to answer, and `stop` for it to end.
const START_TIMEOUT: Duration = Duration::from_secs(60);
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// Exit code of `stop` when nothing runs (the same as every command's "not running").
const NOT_RUNNING: u8 = 3;

/// The database this configuration serves.
fn database(serve: &ServeArgs) -> Result<PathBuf, Failure> {
    serve
        .resolve()
        .map(|(config, _)| config.db_path)
        .map_err(|e| Failure(e.to_string(), 2))
}

/// This program's arguments without the daemon words: what the background
/// server (or the service) is started with, so its flags are the same.
pub(super) fn serve_args(drop: &[&str]) -> Vec<std::ffi::OsString> {
    let mut dropped = Vec::new();
    std::env::args_os()
        .skip(1)
        .filter(|a| {
            let word = a.to_string_lossy();
            if let Some(d) = drop.iter().find(|d| **d == word && !dropped.contains(*d)) {
                dropped.push(*d);
                false
            } else {
                true
            }
        })
        .collect()
}

fn running_message(h: &Holder) -> String {
    format!(
        "local-mcp is already running (pid {}{}) on this database",
        h.pid,
        h.url.as_deref().map(|u| format!(", {u}")).unwrap_or_default()
    )
}

/// `start`: serve in the background; return once `/healthz` answers.
pub fn start(serve: &ServeArgs) -> Result<(), Failure> {
    let db = database(serve)?;
    if let Some(h) = lock::holder(&db) {
        return Err(Failure(running_message(&h), EXIT_IN_USE));
    }
    let exe = std::env::current_exe().map_err(|e| Failure(format!("cannot find this program: {e}"), 1))?;
    // Its stderr until it is up (its log files take over from there): said if
    // it fails to start. An unnamed file in the database's folder (never the
    // shared temp folder): nobody else can open or plant it.
    let folder = db
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    crate::paths::private_dir(folder).map_err(|e| Failure(format!("cannot create {}: {e}", folder.display()), 1))?;
    let mut early = crate::private_fs::anonymous_in(folder)
        .map_err(|e| Failure(format!("cannot make a file for the server's first output: {e}"), 1))?;
    let err_file = early
        .try_clone()
        .map_err(|e| Failure(format!("cannot make a file for the server's first output: {e}"), 1))?;
    let mut command = Command::new(exe);
    command
        .args(serve_args(&["start", "restart"]))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err_file);
    crate::process::detach(&mut command);
    let mut child = command
        .spawn()
        .map_err(|e| Failure(format!("cannot start the server: {e}"), 1))?;
    let started = Instant::now();
    let outcome = loop {
        if let Ok(Some(status)) = child.try_wait() {
            let said = read_back(&mut early);
            let code = match status.code() {
                Some(c) if c == i32::from(EXIT_IN_USE) => EXIT_IN_USE,
                _ => 1,
            };
            break Err(Failure(
                format!("the server did not start ({status}):\n{}", said.trim_end()),
                code,
            ));
        }
        if let Some(url) = lock::holder(&db).filter(|h| h.pid == child.id()).and_then(|h| h.url) {
            if healthy(&url) {
                println!(
                    "local-mcp-server started (pid {}): the page at {url}/ · agents at {url}{}",
                    child.id(),
                    crate::model::MCP_PATH
                );
                println!("Next, connect an agent: local-mcp-server connect claude-code (or vscode, cursor, …; `connect` lists them)");
                break Ok(());
            }
        }
        if started.elapsed() > START_TIMEOUT {
            let _ = child.kill();
            break Err(Failure(
                format!(
                    "the server did not answer within {} s; stopped it",
                    START_TIMEOUT.as_secs()
                ),
                1,
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    outcome
}

fn healthy(base: &str) -> bool {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
        return false;
    };
    rt.block_on(async {
        let Ok(client) = crate::client::target::http_client() else {
            return false;
        };
        client
            .get(format!("{base}/healthz"))
            .timeout(Duration::from_secs(2))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
    })
}

/// `stop` without an agent: end the background server of this database
/// gracefully (its waiting calls answered). The tray app is not a
/// background server: quitting it from here takes `--app`, so a `stop` that
/// forgot its agent's name cannot quit the person's app.
pub fn stop(serve: &ServeArgs, app: bool) -> Result<(), Failure> {
    let db = database(serve)?;
    let Some(holder) = lock::holder(&db) else {
        return Err(Failure(
            format!(
                "local-mcp is not running on {}: nothing to stop (`stop AGENT` ends an agent's loop)",
                db.display()
            ),
            NOT_RUNNING,
        ));
    };
    let what = if holder.is_desktop_app() {
        if !app {
            return Err(Failure(
                format!(
                    "the tray app (local-mcp, pid {}) serves {}, not a background server: quit it from its \
                     tray menu (Quit), or run `stop --app` to quit it from here. To end an agent's loop, \
                     name it: `stop AGENT`",
                    holder.pid,
                    db.display()
                ),
                1,
            ));
        }
        "the tray app (local-mcp"
    } else {
        // `--app` asks for the tray app: a background server is not one.
        if app {
            return Err(Failure(
                format!(
                    "no tray app serves {}: the background server does (local-mcp-server, pid {});                      `stop` without --app stops it",
                    db.display(),
                    holder.pid
                ),
                1,
            ));
        }
        "the background server (local-mcp-server"
    };
    terminate(holder.pid)?;
    let started = Instant::now();
    while lock::holder(&db).is_some_and(|h| h.pid == holder.pid) {
        if started.elapsed() > STOP_TIMEOUT {
            return Err(Failure(
                format!("pid {} is still running after {} s", holder.pid, STOP_TIMEOUT.as_secs()),
                1,
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // The lock goes with the engine's stop; the process ends a moment later
    // (its runtime and log writer wind down). "Stopped" means gone.
    let left = STOP_TIMEOUT.saturating_sub(started.elapsed());
    if !crate::process::wait_until(left, || !crate::process::alive(holder.pid)) {
        return Err(Failure(
            format!("pid {} let go of the database but is still running", holder.pid),
            1,
        ));
    }
    println!(
        "stopped {what}, pid {}) of {}; the agents that were waiting got their answer",
        holder.pid,
        db.display()
    );
    Ok(())
}

/// Ask the process to end: SIGTERM, which the server answers with a graceful
/// shutdown (waiting calls answered, the database closed).
fn terminate(pid: u32) -> Result<(), Failure> {
    crate::process::terminate(pid).map_err(|e| Failure(format!("cannot signal pid {pid}: {e}"), 1))
}

/// `restart`: stop what runs (if anything), then start.
pub fn restart(serve: &ServeArgs) -> Result<(), Failure> {
    match stop(serve, false) {
        Ok(()) => {}
        Err(Failure(_, NOT_RUNNING)) => {}
        Err(e) => return Err(e),
    }
    start(serve)
}

/// What a child wrote into `file` (from its start).
fn read_back(file: &mut std::fs::File) -> String {
    use std::io::{Read, Seek};
    let mut said = String::new();
    if file.seek(std::io::SeekFrom::Start(0)).is_ok() {
        let _ = file.read_to_string(&mut said);
    }
    said
}

/// `restore FILE`: with no engine on this database (its lock is taken for
/// the while, so none can start meanwhile), put the backup in its place.
pub fn restore(serve: &ServeArgs, file: &Path) -> Result<(), Failure> {
    let db = database(serve)?;
    let _lock = lock::DbLock::acquire(&db).map_err(|e| match lock::holder(&db) {
        // What to do first; the details after.
        Some(h) => Failure(
            format!(
                "local-mcp is running on {} (pid {}{}): stop it first (`local-mcp-server stop`), then restore",
                db.display(),
                h.pid,
                h.url.as_deref().map(|u| format!(", {u}")).unwrap_or_default()
            ),
            EXIT_IN_USE,
        ),
        None => Failure(format!("cannot restore into {}: {e}", db.display()), EXIT_IN_USE),
    })?;
    let restored = crate::store::restore(file, &db).map_err(|e| Failure(e.to_string(), 1))?;
    println!(
        "restored {} ({} instructions) to {}",
        file.display(),
        restored.instructions,
        db.display()
    );
    if let Some(aside) = restored.replaced {
        println!("what it replaced is in {}", aside.display());
    }
    if restored.held > 0 {
        println!(
            "its {} pending instructions are held: no agent gets them until you release them \
             (`release --imported`, or the page)",
            restored.held
        );
    }
    Ok(())
}
