//! The service on macOS: a launchd agent in `~/Library/LaunchAgents`,
//! loaded with `launchctl`.
//!
//! Verified: the agent's text by the test below (on every platform); the
//! macOS path through `service` is type-checked by `npm run check:platforms`
//! for both Apple targets, never run here (no macOS).

use std::path::Path;

use super::Manager;
use crate::cli::Failure;

const LABEL: &str = "dev.local-mcp.server";

#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub(super) fn manager() -> Result<Manager, Failure> {
    let base = directories::BaseDirs::new().ok_or_else(|| Failure("no home folder here".into(), 1))?;
    Ok(Manager {
        file: base
            .home_dir()
            .join("Library/LaunchAgents")
            .join(format!("{LABEL}.plist")),
        command: &["launchctl"],
        text: plist,
        on: |file| vec![vec!["load".into(), "-w".into(), file.display().to_string()]],
        off: |file| vec![vec!["unload".into(), "-w".into(), file.display().to_string()]],
    })
}

/// The launchd agent that runs `exe args…` at login.
pub fn plist(exe: &Path, args: &[String]) -> String {
    let escape = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    let mut program = format!("    <string>{}</string>\n", escape(&exe.to_string_lossy()));
    for a in args {
        program.push_str(&format!("    <string>{}</string>\n", escape(a)));
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n\
         <plist version=\"1.0\">\n<dict>\n  <key>Label</key>\n  <string>{LABEL}</string>\n  \
         <key>ProgramArguments</key>\n  <array>\n{program}  </array>\n  <key>RunAtLoad</key>\n  <true/>\n  \
         <key>KeepAlive</key>\n  <dict>\n    <key>SuccessfulExit</key>\n    <false/>\n  </dict>\n</dict>\n</plist>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agent_runs_this_program_with_its_flags_escaped() {
        let plist = plist(
            Path::new("/usr/local/bin/local-mcp-server"),
            &["--host".into(), "a&b".into()],
        );
        assert!(plist.contains("<string>/usr/local/bin/local-mcp-server</string>"));
        assert!(plist.contains("<string>a&amp;b</string>"));
        assert!(plist.contains("<key>RunAtLoad</key>"));
    }
}
