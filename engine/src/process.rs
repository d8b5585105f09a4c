//! Other processes of ours, by pid: is it still there, ask it to end, make
//! it end. `stop` ends a server this way, and the desktop app takes over from
//! an instance that hung or is slow to leave. Only pids read from our own
//! lock and state files (owner-only) reach here, and the operating system
//! lets an account signal its own processes only.

use std::time::{Duration, Instant};

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

#[cfg(unix)]
mod imp {
    fn pid(pid: u32) -> std::io::Result<libc::pid_t> {
        // 0 and negative pids address process groups: never ours to signal.
        libc::pid_t::try_from(pid)
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("pid {pid} is out of range")))
    }

    fn signal(p: u32, sig: libc::c_int) -> std::io::Result<()> {
        let p = pid(p)?;
        // SAFETY: kill(2) takes plain integers and touches no memory of ours.
        if unsafe { libc::kill(p, sig) } == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }

    pub fn alive(p: u32) -> bool {
        if signal(p, 0).is_err_and(|e| e.raw_os_error() == Some(libc::ESRCH)) || pid(p).is_err() {
            return false;
        }
        // A zombie (exited, not yet reaped by its parent) holds no lock and serves nothing.
        #[cfg(target_os = "linux")]
        if let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) {
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next());
            return !matches!(state, Some("Z" | "X"));
        }
        true
    }

    pub fn terminate(p: u32) -> std::io::Result<()> {
        signal(p, libc::SIGTERM)
    }

    pub fn kill(p: u32) -> std::io::Result<()> {
        signal(p, libc::SIGKILL)
    }

    /// The executable `p` runs, as the kernel knows it.
    #[cfg(target_os = "linux")]
    pub fn executable(p: u32) -> Option<std::path::PathBuf> {
        let p = pid(p).ok()?;
        let exe = std::fs::read_link(format!("/proc/{p}/exe")).ok()?;
        // A binary replaced on disk while it runs (an update) reads "… (deleted)".
        let text = exe.to_str()?;
        Some(text.strip_suffix(" (deleted)").unwrap_or(text).into())
    }

    #[cfg(target_os = "macos")]
    pub fn executable(p: u32) -> Option<std::path::PathBuf> {
        use std::os::unix::ffi::OsStrExt;
        let p = pid(p).ok()?;
        let mut buf = vec![0u8; libc::PROC_PIDPATHINFO_MAXSIZE as usize];
        // SAFETY: the buffer is writable for the length given.
        let n = unsafe { libc::proc_pidpath(p, buf.as_mut_ptr().cast(), buf.len() as u32) };
        if n <= 0 {
            return None;
        }
        buf.truncate(n as usize);
        std::fs::canonicalize(std::ffi::OsStr::from_bytes(&buf)).ok()
    }

    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    pub fn executable(_: u32) -> Option<std::path::PathBuf> {
        None
    }
}

#[cfg(windows)]
mod imp {
    use windows_sys::Win32::Foundation::{CloseHandle, HANDLE, STILL_ACTIVE};
    use windows_sys::Win32::System::Threading::{
        GetExitCodeProcess, OpenProcess, QueryFullProcessImageNameW, TerminateProcess, PROCESS_NAME_WIN32,
        PROCESS_QUERY_LIMITED_INFORMATION, PROCESS_TERMINATE,
    };

    /// An open process handle, closed when dropped.
    struct Process(HANDLE);

    impl Process {
        fn open(pid: u32, access: u32) -> std::io::Result<Process> {
            // SAFETY: OpenProcess takes plain values; a null handle is its failure.
            let handle = unsafe { OpenProcess(access, 0, pid) };
            if handle.is_null() {
                Err(std::io::Error::last_os_error())
            } else {
                Ok(Process(handle))
            }
        }
    }

    impl Drop for Process {
        fn drop(&mut self) {
            // SAFETY: the handle came from OpenProcess and is closed once.
            unsafe { CloseHandle(self.0) };
        }
    }

    pub fn alive(pid: u32) -> bool {
        let Ok(process) = Process::open(pid, PROCESS_QUERY_LIMITED_INFORMATION) else {
            return false;
        };
        let mut code = 0u32;
        // SAFETY: a live handle and a valid out-pointer.
        let ok = unsafe { GetExitCodeProcess(process.0, &mut code) } != 0;
        ok && code == STILL_ACTIVE as u32
    }

    /// The executable `pid` runs (another account's process cannot be opened).
    pub fn executable(pid: u32) -> Option<std::path::PathBuf> {
        use std::os::windows::ffi::OsStringExt;
        let process = Process::open(pid, PROCESS_QUERY_LIMITED_INFORMATION).ok()?;
        let mut buf = vec![0u16; 32_768];
        let mut len = buf.len() as u32;
        // SAFETY: a live handle; the buffer holds `len` UTF-16 units and `len` is updated.
        let ok = unsafe { QueryFullProcessImageNameW(process.0, PROCESS_NAME_WIN32, buf.as_mut_ptr(), &mut len) } != 0;
        if !ok {
            return None;
        }
        buf.truncate(len as usize);
        std::fs::canonicalize(std::ffi::OsString::from_wide(&buf)).ok()
    }

    pub fn terminate(pid: u32) -> std::io::Result<()> {
        let status = std::process::Command::new("taskkill")
            .args(["/PID", &pid.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()?;
        if status.success() {
            Ok(())
        } else {
            Err(std::io::Error::other(format!("taskkill could not end pid {pid}")))
        }
    }

    pub fn kill(pid: u32) -> std::io::Result<()> {
        let process = Process::open(pid, PROCESS_TERMINATE)?;
        // SAFETY: a live handle opened with PROCESS_TERMINATE.
        if unsafe { TerminateProcess(process.0, 1) } != 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
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
