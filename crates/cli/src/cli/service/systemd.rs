//! The service on Linux (and any Unix but macOS): a systemd user unit in
//! `$XDG_CONFIG_HOME/systemd/user`, turned on with `systemctl --user`.
//!
//! Verified: the unit's text by the test below and by
//! `daemon::service_install_writes_a_unit_systemd_accepts` (`npm test`:
//! `systemd-analyze verify` reads what `service install` wrote).

use std::path::Path;

use super::Manager;
use crate::cli::Failure;
use crate::lock::EXIT_IN_USE;

const UNIT: &str = "local-mcp.service";

#[cfg_attr(any(target_os = "macos", windows), allow(dead_code))]
pub(super) fn manager() -> Result<Manager, Failure> {
    let base = directories::BaseDirs::new().ok_or_else(|| Failure("no home folder here".into(), 1))?;
    Ok(Manager {
        file: base.config_dir().join("systemd/user").join(UNIT),
        command: &["systemctl", "--user"],
        text: unit,
        on: |_| {
            vec![
                vec!["daemon-reload".into()],
                vec!["enable".into(), "--now".into(), UNIT.into()],
            ]
        },
        off: |_| vec![vec!["disable".into(), "--now".into(), UNIT.into()]],
    })
}

/// The systemd user unit that runs `exe args…` at login.
pub fn unit(exe: &Path, args: &[String]) -> String {
    let mut exec = quote(&exe.to_string_lossy());
    for a in args {
        exec.push(' ');
        exec.push_str(&quote(a));
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

fn quote(word: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unit_runs_this_program_with_its_flags_and_does_not_retry_a_second_engine() {
        let unit = unit(
            Path::new("/opt/local mcp/local-mcp-server"),
            &["--port".into(), "9000".into(), "100%".into()],
        );
        assert!(
            unit.contains("ExecStart=\"/opt/local mcp/local-mcp-server\" --port 9000 \"100%%\"\n"),
            "{unit}"
        );
        assert!(unit.contains("RestartPreventExitStatus=4"));
        assert!(unit.contains("WantedBy=default.target"));
    }
}
