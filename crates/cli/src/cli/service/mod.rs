//! `service install | uninstall`: the background server started at login by
//! the platform's own service manager. What is the same everywhere is here:
//! write the file (atomically, keeping a person's mode), turn it on or off
//! with the manager, and say what to run by hand where no manager runs
//! (containers, WSL). What differs — the file, its text, the manager's
//! commands — is one file per platform: `systemd.rs` (Linux and other Unix),
//! `launchd.rs` (macOS), `windows.rs` (none written: the Task Scheduler, by
//! hand).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::daemon::serve_args;
use super::Failure;

mod launchd;
mod systemd;
#[cfg(windows)]
mod windows;

#[cfg(target_os = "macos")]
use launchd as platform;
#[cfg(not(any(target_os = "macos", windows)))]
use systemd as platform;
#[cfg(windows)]
use windows as platform;

/// What `service` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ServiceAction {
    /// Write the unit (or agent) and, unless --no-start, enable and start it
    Install,
    /// Stop and disable it, and remove the file
    Uninstall,
}

/// A platform's service manager, as `service` uses it.
pub(super) struct Manager {
    /// Where this account's unit or agent goes.
    pub file: PathBuf,
    /// The manager's command (`systemctl --user`, `launchctl`).
    pub command: &'static [&'static str],
    /// The file's text, to run `exe args…` at login.
    pub text: fn(&Path, &[String]) -> String,
    /// The manager's steps to turn the file on now (after writing it) and off (before removing it).
    pub on: fn(&Path) -> Vec<Vec<String>>,
    pub off: fn(&Path) -> Vec<Vec<String>>,
}

/// `service install | uninstall`.
pub fn service(action: ServiceAction, no_start: bool) -> Result<(), Failure> {
    let manager = platform::manager()?;
    let file = &manager.file;
    match action {
        ServiceAction::Install => {
            let exe = std::env::current_exe().map_err(|e| Failure(format!("cannot find this program: {e}"), 1))?;
            let args: Vec<String> = serve_args(&["service", "install", "--no-start"])
                .into_iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            let text = (manager.text)(&exe, &args);
            if let Some(dir) = file.parent() {
                crate::private_fs::create_dir_all(dir)
                    .map_err(|e| Failure(format!("cannot create {}: {e}", dir.display()), 1))?;
            }
            crate::private_fs::replace(file, text.as_bytes(), crate::private_fs::Mode::KeepExisting)
                .map_err(|e| Failure(format!("cannot write {}: {e}", file.display()), 1))?;
            println!("wrote {}", file.display());
            if no_start {
                return Ok(());
            }
            let steps = (manager.on)(file);
            run_manager(manager.command, &steps).map_err(|Failure(why, code)| {
                // Containers and WSL often have no user service manager running:
                // the file is there, say how to turn it on where there is one.
                let by_hand: Vec<String> = steps
                    .iter()
                    .map(|step| format!("{} {}", manager.command.join(" "), step.join(" ")))
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
                // Gone already from the manager's view is fine: the file goes either way.
                if let Err(Failure(message, _)) = run_manager(manager.command, &(manager.off)(file)) {
                    eprintln!("note: {message}");
                }
            }
            std::fs::remove_file(file).map_err(|e| Failure(format!("cannot remove {}: {e}", file.display()), 1))?;
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
