//! `process` on Unix: signals by pid, `/proc` (Linux) and `proc_pidpath`
//! (macOS) for a process's executable, process groups, exec.

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
    if let Some(stat) = stat(p) {
        return !stat.gone();
    }
    true
}

/// What Linux's `/proc/<pid>/stat` says of a process.
#[cfg(target_os = "linux")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    /// Its name (`comm`: the executable's, cut at 15 bytes).
    pub name: String,
    /// Its state letter (`R`, `S`, `Z`…).
    pub state: char,
    /// Its parent's pid.
    pub parent: u32,
}

#[cfg(target_os = "linux")]
impl Stat {
    /// Exited: a zombie waiting to be reaped, or dead.
    pub fn gone(&self) -> bool {
        matches!(self.state, 'Z' | 'X')
    }
}

/// The process's `/proc/<pid>/stat`, if it exists and reads. The name sits
/// in parentheses and may hold spaces and parentheses itself: it ends at the
/// last `)`.
#[cfg(target_os = "linux")]
pub fn stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (name, rest) = text.split_once(" (")?.1.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let parent = fields.next()?.parse().ok()?;
    Some(Stat {
        name: name.to_owned(),
        state,
        parent,
    })
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

pub fn detach(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    command.process_group(0);
}

pub fn asked_to_end() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{signal, Signal, SignalKind};
    let term = signal(SignalKind::terminate()).ok();
    let interrupt = signal(SignalKind::interrupt()).ok();
    async move {
        let recv = |s: Option<Signal>| async move {
            match s {
                Some(mut s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = recv(term) => {}
            _ = recv(interrupt) => {}
        }
    }
}

pub fn run_again(command: &mut std::process::Command) -> std::io::Result<()> {
    use std::os::unix::process::CommandExt;
    Err(command.exec())
}

pub fn end_quietly_when_the_reader_goes() {
    // SAFETY: restores a signal's default disposition before any thread that
    // could be writing has started; no handler runs Rust code.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

pub fn raise_descriptor_limit() {
    // SAFETY: getrlimit/setrlimit read and write a plain struct we own.
    unsafe {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max {
            // macOS refuses more than OPEN_MAX for the soft limit.
            let wanted = if cfg!(target_os = "macos") {
                limit.rlim_max.min(10_240)
            } else {
                limit.rlim_max
            };
            limit.rlim_cur = wanted;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}
