//! `process` on Windows: process handles (`OpenProcess`, exit codes,
//! `QueryFullProcessImageNameW`, `TerminateProcess`), `taskkill` to ask,
//! creation flags to detach.

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

pub fn detach(command: &mut std::process::Command) {
    use std::os::windows::process::CommandExt;
    const DETACHED_PROCESS: u32 = 0x0000_0008;
    const CREATE_NEW_PROCESS_GROUP: u32 = 0x0000_0200;
    command.creation_flags(DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP);
}

pub fn asked_to_end() -> impl std::future::Future<Output = ()> {
    async {
        // A program without a console cannot be sent Ctrl+C: then it is never asked this way.
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

pub fn run_again(command: &mut std::process::Command) -> std::io::Result<()> {
    command.spawn().map(drop)
}

pub fn end_quietly_when_the_reader_goes() {}

pub fn raise_descriptor_limit() {}
