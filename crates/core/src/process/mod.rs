//! Processes, as the operating system has them. Other processes of ours, by
//! pid: is it still there, ask it to end, make it end — `stop` ends a server
//! this way, and the desktop app takes over from an instance that hung or is
//! slow to leave. Only pids read from our own lock and state files
//! (owner-only) reach here, and the operating system lets an account signal
//! its own processes only. And this process: starting a detached copy, being
//! asked to end, starting again in place, its descriptor limit and SIGPIPE.
//!
//! One file per platform (`unix.rs`, `windows.rs`); this one is the same
//! everywhere.

use std::process::Command;
use std::time::{Duration, Instant};

#[cfg(unix)]
#[path = "unix.rs"]
mod imp;
#[cfg(windows)]
#[path = "windows.rs"]
mod imp;

#[cfg(target_os = "linux")]
pub use imp::{stat, Stat};

/// Whether a process with this pid exists (a zombie counts as gone).
pub fn alive(pid: u32) -> bool {
    imp::alive(pid)
}

/// Ask the process to end: SIGTERM (which our processes answer with a
/// graceful shutdown); on Windows, `taskkill` without /F, which asks its
/// windows to close.
pub fn terminate(pid: u32) -> std::io::Result<()> {
    imp::terminate(pid)
}

/// End the process now: SIGKILL, or TerminateProcess.
pub fn kill(pid: u32) -> std::io::Result<()> {
    imp::kill(pid)
}

/// Whether the process `pid` runs this very program (the same executable
/// file) — so a pid read from a state file is signalled only when it is
/// another copy of us, never a process that merely took over a stale number.
/// A process of another account is never "the same": its executable cannot
/// be read.
pub fn same_program(pid: u32) -> bool {
    let Ok(me) = std::env::current_exe().and_then(std::fs::canonicalize) else {
        return false;
    };
    imp::executable(pid).is_some_and(|exe| exe == me)
}

/// Start `command`'s process detached from this one: in its own process
/// group (Unix) or without this console (Windows), so the terminal's Ctrl+C
/// and its closing do not reach it.
pub fn detach(command: &mut Command) {
    imp::detach(command)
}

/// Resolves when this process is asked to end: SIGTERM or SIGINT (Unix),
/// Ctrl+C (Windows). The handlers are registered when this is called, not
/// when it is first awaited: a signal sent right after start-up must end the
/// process cleanly rather than kill it.
pub fn asked_to_end() -> impl std::future::Future<Output = ()> {
    imp::asked_to_end()
}

/// Run this program again with `command`: in place of this process where the
/// platform can (Unix `exec`: the same pid, so whoever started it still has
/// it; it returns only on failure), else as a new process (Windows: `Ok`
/// means it started, and this one should end).
pub fn run_again(command: &mut Command) -> std::io::Result<()> {
    imp::run_again(command)
}

/// `local-mcp-server list | head -1`: when whoever reads the output stops,
/// end as other command-line tools do (SIGPIPE) instead of panicking in
/// `println!` — Rust starts every program with SIGPIPE ignored. For the
/// commands only: a serving engine keeps it ignored (its sockets report EPIPE
/// as an error), as does the stdio bridge, which must cancel a waiting call
/// first. Windows has no SIGPIPE.
pub fn end_quietly_when_the_reader_goes() {
    imp::end_quietly_when_the_reader_goes()
}

/// A server holds a descriptor per connection, waiting call and file: lift
/// the soft limit (often 1024) to the hard one the system allows, as servers
/// do, so many agents and pages (or a flood of connections) do not run it
/// out. Windows has no such per-process soft limit on sockets.
pub fn raise_descriptor_limit() {
    imp::raise_descriptor_limit()
}

/// Wait up to `patience` for `gone` to hold, checking every 50 ms; whether it did.
pub fn wait_until(patience: Duration, mut gone: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + patience;
    loop {
        if gone() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child process that is not this program and lives 30 s.
    fn another_program() -> std::process::Child {
        std::process::Command::new(if cfg!(windows) { "cmd" } else { "sleep" })
            .args(if cfg!(windows) {
                &["/C", "ping -n 30 127.0.0.1 >NUL"][..]
            } else {
                &["30"][..]
            })
            .spawn()
            .unwrap()
    }

    #[test]
    fn a_child_is_alive_until_it_is_killed_and_reaped() {
        let mut child = another_program();
        let pid = child.id();
        assert!(alive(pid));
        kill(pid).unwrap();
        child.wait().unwrap();
        assert!(!alive(pid), "a reaped child is gone");
    }

    #[test]
    fn only_a_copy_of_this_program_is_the_same_program() {
        // Another program (a pid a stale state file could name) is not.
        let mut other = another_program();
        assert!(!same_program(other.id()));
        kill(other.id()).unwrap();
        other.wait().unwrap();
        assert!(!same_program(other.id()), "nor a pid that is gone");
        // A copy of this test binary is.
        let mut copy = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "process::tests::a_copy_that_waits", "--ignored"])
            .env("LOCAL_MCP_TEST_WAIT", "1")
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let same = same_program(copy.id());
        let _ = kill(copy.id());
        copy.wait().unwrap();
        if cfg!(any(target_os = "linux", target_os = "macos", windows)) {
            assert!(same, "a copy of this program");
        }
        assert!(!same_program(0) && !same_program(u32::MAX));
    }

    /// What the copy in the test above runs: it waits to be killed.
    #[test]
    #[ignore = "run by only_a_copy_of_this_program_is_the_same_program in a child process"]
    fn a_copy_that_waits() {
        if std::env::var_os("LOCAL_MCP_TEST_WAIT").is_some() {
            std::thread::sleep(Duration::from_secs(30));
        }
    }

    /// A child's name, state and parent, read right when its name holds the
    /// characters that end the field (a program may name itself anything).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_processs_stat_is_read_whatever_its_name() {
        use std::os::unix::process::CommandExt;
        let dir = tempfile::tempdir().unwrap();
        let odd = dir.path().join("a) Z 1 (b");
        std::os::unix::fs::symlink("/bin/sleep", &odd).unwrap();
        // argv[0] says `sleep`, for a sleep that is one of a multi-call binary's programs;
        // the name in /proc comes from the file run.
        let mut child = std::process::Command::new(&odd)
            .arg0("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let running = stat(child.id()).unwrap();
        assert_eq!(
            (running.name.as_str(), running.parent),
            ("a) Z 1 (b", std::process::id())
        );
        assert!(!running.gone(), "{running:?}");
        kill(child.id()).unwrap();
        wait_until(Duration::from_secs(10), || stat(child.id()).is_some_and(|s| s.gone()));
        assert_eq!(stat(child.id()).map(|s| s.state), Some('Z'), "killed, not yet reaped");
        child.wait().unwrap();
        assert_eq!(stat(child.id()), None, "reaped: no such process");
    }

    #[test]
    fn pids_that_address_groups_are_refused() {
        #[cfg(unix)]
        {
            assert!(terminate(0).is_err());
            assert!(kill(u32::MAX).is_err(), "-1 would signal every process we may");
            assert!(!alive(0));
        }
        assert!(!alive(u32::MAX - 7));
    }
}
