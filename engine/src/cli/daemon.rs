//! Running the server in the background: `start` (detach, return once it
//! answers), `stop` (graceful: SIGTERM, wait for the database lock to be
//! let go), `restart`, and `service install | uninstall` (a systemd user
//! unit on Linux, a launchd agent on macOS) so it starts at login; and
//! `restore`, the one command that works on the database itself, offline,
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
fn serve_args(drop: &[&str]) -> Vec<std::ffi::OsString> {
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
                    "local-mcp-server started (pid {}): the page at {url}/ · agents at {}",
                    child.id(),
                    format!("{url}{}", crate::model::MCP_PATH)
                );
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

/// `stop` without an agent: end the server of this database gracefully.
pub fn stop(serve: &ServeArgs) -> Result<(), Failure> {
    let db = database(serve)?;
    let Some(holder) = lock::holder(&db) else {
        return Err(Failure("local-mcp is not running on this database".into(), NOT_RUNNING));
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
    println!("local-mcp stopped (pid {})", holder.pid);
    Ok(())
}

/// Ask the process to end: SIGTERM, which the server answers with a graceful
/// shutdown (waiting calls answered, the database closed).
fn terminate(pid: u32) -> Result<(), Failure> {
    crate::process::terminate(pid).map_err(|e| Failure(format!("cannot signal pid {pid}: {e}"), 1))
}

/// `restart`: stop what runs (if anything), then start.
pub fn restart(serve: &ServeArgs) -> Result<(), Failure> {
    match stop(serve) {
        Ok(()) => {}
        Err(Failure(_, NOT_RUNNING)) => {}
        Err(e) => return Err(e),
    }
    start(serve)
}

/// `restore FILE`: with no engine on this database (its lock is taken for
/// the while, so none can start meanwhile), put the backup in its place.
pub fn restore(serve: &ServeArgs, file: &Path) -> Result<(), Failure> {
    let db = database(serve)?;
    let _lock = lock::DbLock::acquire(&db)
        .map_err(|e| Failure(format!("{e}. Stop it first (`stop`), then restore"), EXIT_IN_USE))?;
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
    Ok(())
}

/// What `service` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ServiceAction {
    /// Write the unit (or agent) and, unless --no-start, enable and start it
    Install,
    /// Stop and disable it, and remove the file
    Uninstall,
}

/// The systemd user unit that runs `exe args…` at login.
pub fn systemd_unit(exe: &Path, args: &[String]) -> String {
    let mut exec = quote_systemd(&exe.to_string_lossy());
    for a in args {
        exec.push(' ');
        exec.push_str(&quote_systemd(a));
    }
    format!(
        "[Unit]\n\
         Description=local-mcp: the instruction queue for AI coding agents (headless server)\n\
         After=network.target\n\
         \n\
         [Service]\n\
         Type=simple\n\
         ExecStart={exec}\n\
         Restart=on-failure\n\
         RestartSec=2\n\
         # Another engine on the same database is not a failure to retry.\n\
         RestartPreventExitStatus={EXIT_IN_USE}\n\
         \n\
         [Install]\n\
         WantedBy=default.target\n"
    )
}

fn quote_systemd(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-=:@+,".contains(c))
    {
        word.to_owned()
    } else {
        format!(
            "\"{}\"",
            word.replace('\\', "\\\\").replace('"', "\\\"").replace('%', "%%")
        )
    }
}

/// The launchd agent that runs `exe args…` at login (macOS).
pub fn launchd_plist(exe: &Path, args: &[String]) -> String {
    let escape = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    let mut program = format!("    <string>{}</string>\n", escape(&exe.to_string_lossy()));
    for a in args {
        program.push_str(&format!("    <string>{}</string>\n", escape(a)));
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n\
         <plist version=\"1.0\">\n<dict>\n  <key>Label</key>\n  <string>{LAUNCHD_LABEL}</string>\n  \
         <key>ProgramArguments</key>\n  <array>\n{program}  </array>\n  <key>RunAtLoad</key>\n  <true/>\n  \
         <key>KeepAlive</key>\n  <dict>\n    <key>SuccessfulExit</key>\n    <false/>\n  </dict>\n</dict>\n</plist>\n"
    )
}

const LAUNCHD_LABEL: &str = "dev.local-mcp.server";
const SYSTEMD_UNIT: &str = "local-mcp.service";

/// Where the unit (or agent) goes for this account.
fn service_file() -> Result<PathBuf, Failure> {
    let base = directories::BaseDirs::new().ok_or_else(|| Failure("no home folder here".into(), 1))?;
    if cfg!(target_os = "macos") {
        Ok(base
            .home_dir()
            .join("Library/LaunchAgents")
            .join(format!("{LAUNCHD_LABEL}.plist")))
    } else if cfg!(windows) {
        Err(Failure(
            "on Windows, start it at login with the Task Scheduler: \
             schtasks /Create /SC ONLOGON /TN local-mcp /TR \"<path>\\local-mcp-server.exe\" (see the README)"
                .into(),
            1,
        ))
    } else {
        Ok(base.config_dir().join("systemd/user").join(SYSTEMD_UNIT))
    }
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

/// `service install | uninstall`.
pub fn service(action: ServiceAction, no_start: bool) -> Result<(), Failure> {
    let file = service_file()?;
    let manager: &[&str] = if cfg!(target_os = "macos") {
        &["launchctl"]
    } else {
        &["systemctl", "--user"]
    };
    match action {
        ServiceAction::Install => {
            let exe = std::env::current_exe().map_err(|e| Failure(format!("cannot find this program: {e}"), 1))?;
            let args: Vec<String> = serve_args(&["service", "install", "--no-start"])
                .into_iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            let text = if cfg!(target_os = "macos") {
                launchd_plist(&exe, &args)
            } else {
                systemd_unit(&exe, &args)
            };
            if let Some(dir) = file.parent() {
                crate::private_fs::create_dir_all(dir)
                    .map_err(|e| Failure(format!("cannot create {}: {e}", dir.display()), 1))?;
            }
            crate::private_fs::replace(&file, text.as_bytes(), crate::private_fs::Mode::KeepExisting)
                .map_err(|e| Failure(format!("cannot write {}: {e}", file.display()), 1))?;
            println!("wrote {}", file.display());
            if no_start {
                return Ok(());
            }
            let steps: Vec<Vec<String>> = if cfg!(target_os = "macos") {
                vec![vec!["load".into(), "-w".into(), file.display().to_string()]]
            } else {
                vec![
                    vec!["daemon-reload".into()],
                    vec!["enable".into(), "--now".into(), SYSTEMD_UNIT.into()],
                ]
            };
            run_manager(manager, &steps).map_err(|Failure(why, code)| {
                // Containers and WSL often have no user service manager running:
                // the file is there, say how to turn it on where there is one.
                let by_hand: Vec<String> = steps
                    .iter()
                    .map(|step| format!("{} {}", manager.join(" "), step.join(" ")))
                    .collect();
                Failure(
                    format!(
                        "{why}\nthe service file is written; turn it on where your user's service manager runs: {}",
                        by_hand.join(" && ")
                    ),
                    code,
                )
            })?;
            println!("enabled: local-mcp-server starts at login (and now)");
            Ok(())
        }
        ServiceAction::Uninstall => {
            if !file.exists() {
                return Err(Failure(
                    format!("no service installed ({} does not exist)", file.display()),
                    1,
                ));
            }
            if !no_start {
                let steps: Vec<Vec<String>> = if cfg!(target_os = "macos") {
                    vec![vec!["unload".into(), "-w".into(), file.display().to_string()]]
                } else {
                    vec![vec!["disable".into(), "--now".into(), SYSTEMD_UNIT.into()]]
                };
                // Gone already from the manager's view is fine: the file goes either way.
                if let Err(Failure(message, _)) = run_manager(manager, &steps) {
                    eprintln!("note: {message}");
                }
            }
            std::fs::remove_file(&file).map_err(|e| Failure(format!("cannot remove {}: {e}", file.display()), 1))?;
            println!("removed {}", file.display());
            Ok(())
        }
    }
}

fn run_manager(manager: &[&str], steps: &[Vec<String>]) -> Result<(), Failure> {
    for step in steps {
        let output = Command::new(manager[0])
            .args(&manager[1..])
            .args(step)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| Failure(format!("cannot run {}: {e}", manager[0]), 1))?;
        if !output.status.success() {
            return Err(Failure(
                format!(
                    "`{} {}` failed: {}",
                    manager.join(" "),
                    step.join(" "),
                    String::from_utf8_lossy(&output.stderr).trim()
                ),
                1,
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unit_runs_this_program_with_its_flags_and_does_not_retry_a_second_engine() {
        let unit = systemd_unit(
            Path::new("/opt/local mcp/local-mcp-server"),
            &["--port".into(), "9000".into()],
        );
        assert!(
            unit.contains("ExecStart=\"/opt/local mcp/local-mcp-server\" --port 9000\n"),
            "{unit}"
        );
        assert!(unit.contains("RestartPreventExitStatus=4"));
        assert!(unit.contains("WantedBy=default.target"));
        let plist = launchd_plist(Path::new("/usr/local/bin/local-mcp-server"), &[]);
        assert!(plist.contains("<string>/usr/local/bin/local-mcp-server</string>"));
        assert!(plist.contains("<key>RunAtLoad</key>"));
    }
}
