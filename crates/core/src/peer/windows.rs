//! Windows: the TCP table with owning process ids (`GetExtendedTcpTable`,
//! `TCP_TABLE_OWNER_PID_*`, IPv4 and IPv6) names the process holding the
//! other end of a connection, or the listening socket; that process's token
//! (`OpenProcess` for `PROCESS_QUERY_LIMITED_INFORMATION`, `OpenProcessToken`,
//! `GetTokenInformation(TokenUser)`) names its user's SID, which is compared
//! with ours. An account is its SID, kept inline (at most 68 bytes) so it is
//! `Copy` like a uid. A process this account may not open — another
//! account's, unless we run elevated — is an owner that cannot be told, and
//! the guard refuses it unless it sends the token (never a guess).
//!
//! Verified: built for `x86_64-pc-windows-gnu` on this project's Linux CI
//! (`npm run check:platforms`), where the engine's unit and integration
//! tests also run under Wine 8: `peer`'s test (a real connection and
//! listener are this process's SID; a socket nobody has is an error), the
//! SID tests below, and the HTTP tests whose clients pass the guard as the
//! same account. Under Wine a listening socket is held by `wineserver`, not
//! by the process (no owning pid), so there the listener half is skipped
//! (`docs/PLATFORMS.md`). Another real account was not tried: the release
//! workflow's Windows job runs these tests on a real Windows runner.

use std::io::{Error, ErrorKind, Result};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use windows_sys::Win32::Foundation::{CloseHandle, ERROR_INSUFFICIENT_BUFFER, HANDLE, NO_ERROR};
use windows_sys::Win32::NetworkManagement::IpHelper::{
    GetExtendedTcpTable, MIB_TCP6ROW_OWNER_PID, MIB_TCPROW_OWNER_PID, TCP_TABLE_CLASS, TCP_TABLE_OWNER_PID_CONNECTIONS,
    TCP_TABLE_OWNER_PID_LISTENER,
};
use windows_sys::Win32::Networking::WinSock::{AF_INET, AF_INET6};
use windows_sys::Win32::Security::{
    GetLengthSid, GetTokenInformation, LookupAccountSidW, TokenUser, SECURITY_MAX_SID_SIZE, TOKEN_QUERY, TOKEN_USER,
};
use windows_sys::Win32::System::Threading::{
    GetCurrentProcess, OpenProcess, OpenProcessToken, PROCESS_QUERY_LIMITED_INFORMATION,
};

const SID_MAX: usize = SECURITY_MAX_SID_SIZE as usize;

/// An account of this machine: its security identifier's bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Account {
    len: u8,
    sid: [u8; SID_MAX],
}

impl Account {
    /// The null SID (S-1-0-0): no process runs as it, for failing closed.
    pub const NOBODY: Account = {
        let mut sid = [0u8; SID_MAX];
        sid[0] = 1; // revision
        sid[1] = 1; // one sub-authority (0); the authority is 0
        Account { len: 12, sid }
    };

    /// The SID's bytes, for an access control entry (`private_fs`).
    pub fn sid_bytes(&self) -> &[u8] {
        &self.sid[..self.len as usize]
    }

    /// A SID's bytes (revision, sub-authority count, 6-byte authority,
    /// 4 bytes per sub-authority), when they are one.
    fn from_bytes(bytes: &[u8]) -> Option<Account> {
        let count = *bytes.get(1)? as usize;
        if bytes.len() != 8 + 4 * count || bytes.len() > SID_MAX || bytes[0] != 1 {
            return None;
        }
        let mut sid = [0u8; SID_MAX];
        sid[..bytes.len()].copy_from_slice(bytes);
        Some(Account {
            len: bytes.len() as u8,
            sid,
        })
    }
}

/// The SID's string form, as `ConvertSidToStringSidW` writes it: `S-1-5-21-…`.
impl std::fmt::Display for Account {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let b = &self.sid[..self.len as usize];
        let authority = b[2..8].iter().fold(0u64, |a, &x| (a << 8) | u64::from(x));
        if authority >> 32 == 0 {
            write!(f, "S-{}-{authority}", b[0])?;
        } else {
            write!(f, "S-{}-0x{authority:012X}", b[0])?;
        }
        for sub in b[8..].chunks_exact(4) {
            write!(f, "-{}", u32::from_le_bytes([sub[0], sub[1], sub[2], sub[3]]))?;
        }
        Ok(())
    }
}

impl std::fmt::Debug for Account {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Account({self})")
    }
}

/// A handle closed when dropped.
struct Handle(HANDLE);

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: a real handle we opened and nobody else closes.
        unsafe { CloseHandle(self.0) };
    }
}

pub fn me() -> Result<Account> {
    // SAFETY: the pseudo-handle of this process needs no closing.
    token_account(unsafe { GetCurrentProcess() })
}

/// One TCP socket of the table, as far as this module cares.
#[derive(Debug)]
struct Row {
    local: SocketAddr,
    remote: SocketAddr,
    pid: u32,
}

pub fn connection(local: SocketAddr, remote: SocketAddr) -> Result<Account> {
    // Windows names a live connection's process at once. Wine lists a socket
    // under no process (pid 0) until that process first uses it, which a
    // client does straight after connecting: look again, briefly.
    for attempt in 1..=5 {
        let pid = connection_pid(local, remote)?;
        if pid != 0 || attempt == 5 {
            return process_account(pid, || connection_pid(local, remote));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    unreachable!("the last attempt returns")
}

fn connection_pid(local: SocketAddr, remote: SocketAddr) -> Result<u32> {
    for &family in families(local.ip(), remote.ip()) {
        let rows = sockets(family, TCP_TABLE_OWNER_PID_CONNECTIONS)?;
        if let Some(row) = rows.iter().find(|r| same(r.local, local) && same(r.remote, remote)) {
            return Ok(row.pid);
        }
    }
    Err(Error::new(ErrorKind::NotFound, "no such connection in the TCP table"))
}

pub fn listener(addr: SocketAddr) -> Result<Account> {
    let pid = listener_pid(addr)?;
    process_account(pid, || listener_pid(addr))
}

fn listener_pid(addr: SocketAddr) -> Result<u32> {
    for &family in families(addr.ip(), addr.ip()) {
        let rows = sockets(family, TCP_TABLE_OWNER_PID_LISTENER)?;
        let found = rows.iter().find(|r| {
            r.local.port() == addr.port() && (r.local.ip().is_unspecified() || r.local.ip() == addr.ip().to_canonical())
        });
        if let Some(row) = found {
            return Ok(row.pid);
        }
    }
    Err(Error::new(ErrorKind::NotFound, "nothing listens there"))
}

/// The tables to look in, likeliest first: IPv4 addresses belong to an IPv4
/// socket, or to a dual-stack IPv6 one (listed with IPv4-mapped addresses).
/// One table read at a time: Wine builds each by walking every process's
/// descriptors, which takes it tens of milliseconds.
fn families(a: IpAddr, b: IpAddr) -> &'static [u16] {
    if a.to_canonical().is_ipv4() && b.to_canonical().is_ipv4() {
        &[AF_INET, AF_INET6]
    } else {
        &[AF_INET6]
    }
}

fn same(a: SocketAddr, b: SocketAddr) -> bool {
    a.port() == b.port() && a.ip().to_canonical() == b.ip().to_canonical()
}

/// One family's TCP sockets of one class (connections, or listeners), with their owning processes.
fn sockets(family: u16, class: TCP_TABLE_CLASS) -> Result<Vec<Row>> {
    // Ports are in network order in the low 16 bits of a DWORD.
    let port = |dw: u32| u16::from_be(dw as u16);
    Ok(if family == AF_INET {
        table::<MIB_TCPROW_OWNER_PID>(family, class)?
            .into_iter()
            .map(|r| Row {
                local: SocketAddr::new(
                    IpAddr::V4(Ipv4Addr::from(r.dwLocalAddr.to_ne_bytes())),
                    port(r.dwLocalPort),
                ),
                remote: SocketAddr::new(
                    IpAddr::V4(Ipv4Addr::from(r.dwRemoteAddr.to_ne_bytes())),
                    port(r.dwRemotePort),
                ),
                pid: r.dwOwningPid,
            })
            .collect()
    } else {
        table::<MIB_TCP6ROW_OWNER_PID>(family, class)?
            .into_iter()
            .map(|r| Row {
                local: SocketAddr::new(
                    IpAddr::V6(Ipv6Addr::from(r.ucLocalAddr)).to_canonical(),
                    port(r.dwLocalPort),
                ),
                remote: SocketAddr::new(
                    IpAddr::V6(Ipv6Addr::from(r.ucRemoteAddr)).to_canonical(),
                    port(r.dwRemotePort),
                ),
                pid: r.dwOwningPid,
            })
            .collect()
    })
}

/// The rows of one family's `MIB_TCP(6)TABLE_OWNER_PID`: a DWORD count, then the rows.
fn table<R: Copy>(family: u16, class: TCP_TABLE_CLASS) -> Result<Vec<R>> {
    let mut size = 0u32;
    for _ in 0..8 {
        // u32s: the table's alignment (every field is a DWORD or bytes).
        let mut buf = vec![0u32; (size as usize).div_ceil(4).max(1)];
        let mut len = (buf.len() * 4) as u32;
        // SAFETY: `buf` holds `len` bytes; the call writes at most that many
        // and sets `len` to what it needs when that is not enough.
        let rc = unsafe { GetExtendedTcpTable(buf.as_mut_ptr().cast(), &mut len, 0, u32::from(family), class, 0) };
        if rc == ERROR_INSUFFICIENT_BUFFER {
            size = len + 1024; // room for sockets opened meanwhile
            continue;
        }
        if rc != NO_ERROR {
            return Err(Error::from_raw_os_error(rc as i32));
        }
        let bytes = len.min((buf.len() * 4) as u32) as usize;
        let count = buf[0] as usize;
        let row = std::mem::size_of::<R>();
        if 4 + count * row > bytes {
            return Err(Error::new(ErrorKind::InvalidData, "a TCP table shorter than its count"));
        }
        let base = buf.as_ptr().cast::<u8>();
        // SAFETY: each row lies inside the bytes written (checked above);
        // the rows are plain data, read unaligned to be safe.
        return Ok((0..count)
            .map(|i| unsafe { std::ptr::read_unaligned(base.add(4 + i * row).cast::<R>()) })
            .collect());
    }
    Err(Error::other("the TCP table kept growing while it was read"))
}

/// The user of the process `pid`, from its token. The pid was read from the
/// TCP table before the process was opened: had that process ended and its
/// pid gone to another meanwhile, the handle would be the other's. An open
/// handle keeps its pid from being given again, so once it is open the
/// table is asked again (`still`): the same pid there means the process
/// held is the socket's.
fn process_account(pid: u32, still: impl Fn() -> Result<u32>) -> Result<Account> {
    if pid == 0 {
        // The idle process: sockets closing (TIME_WAIT) are listed under it;
        // under Wine, a listening socket (wineserver holds it).
        return Err(Error::other("no process holds that socket"));
    }
    // SAFETY: a plain call; a null handle is its failure.
    let process = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    if process.is_null() {
        let e = Error::last_os_error();
        return Err(Error::new(
            e.kind(),
            format!("cannot open process {pid} to read its account: {e}"),
        ));
    }
    let process = Handle(process);
    if still()? != pid {
        return Err(Error::other("the socket changed hands while its owner was looked up"));
    }
    token_account(process.0).map_err(|e| Error::new(e.kind(), format!("cannot read the account of process {pid}: {e}")))
}

/// The user SID in a process's token.
fn token_account(process: HANDLE) -> Result<Account> {
    let mut token: HANDLE = std::ptr::null_mut();
    // SAFETY: `token` receives a handle we then own.
    if unsafe { OpenProcessToken(process, TOKEN_QUERY, &mut token) } == 0 {
        return Err(Error::last_os_error());
    }
    let token = Handle(token);
    // TOKEN_USER (a pointer and a DWORD) followed by the SID it points to:
    // 16 + 68 bytes at most; u64s for the pointer's alignment.
    let mut buf = [0u64; 16];
    let mut len = 0u32;
    // SAFETY: `buf` holds the size passed; on success it starts with a TOKEN_USER.
    let ok = unsafe {
        GetTokenInformation(
            token.0,
            TokenUser,
            buf.as_mut_ptr().cast(),
            std::mem::size_of_val(&buf) as u32,
            &mut len,
        )
    };
    if ok == 0 {
        return Err(Error::last_os_error());
    }
    // SAFETY: filled by the call above; the SID it points to lies in `buf`,
    // and GetLengthSid gives its length.
    let bytes = unsafe {
        let user = &*buf.as_ptr().cast::<TOKEN_USER>();
        let sid = user.User.Sid;
        std::slice::from_raw_parts(sid.cast::<u8>(), GetLengthSid(sid) as usize)
    };
    Account::from_bytes(bytes).ok_or_else(|| Error::new(ErrorKind::InvalidData, "the token's user is not a SID"))
}

/// `DOMAIN\name`, from the account database.
pub fn name(account: Account) -> Option<String> {
    let mut sid = account.sid;
    let (mut name, mut domain) = ([0u16; 256], [0u16; 256]);
    let (mut name_len, mut domain_len) = (name.len() as u32, domain.len() as u32);
    let mut kind = 0;
    // SAFETY: each buffer's length is passed with it; the call writes the
    // names' lengths (without the terminating null) on success.
    let ok = unsafe {
        LookupAccountSidW(
            std::ptr::null(),
            sid.as_mut_ptr().cast(),
            name.as_mut_ptr(),
            &mut name_len,
            domain.as_mut_ptr(),
            &mut domain_len,
            &mut kind,
        )
    };
    if ok == 0 {
        return None;
    }
    let name = String::from_utf16_lossy(&name[..(name_len as usize).min(name.len())]);
    let domain = String::from_utf16_lossy(&domain[..(domain_len as usize).min(domain.len())]);
    Some(if domain.is_empty() {
        name
    } else {
        format!("{domain}\\{name}")
    })
}

/// Whether this runs under Wine (its ntdll exports `wine_get_version`), for
/// tests of what Wine does differently.
#[cfg(test)]
pub fn under_wine() -> bool {
    use windows_sys::Win32::System::LibraryLoader::{GetModuleHandleA, GetProcAddress};
    // SAFETY: ntdll is loaded in every process; both calls only look up names.
    unsafe {
        let ntdll = GetModuleHandleA(c"ntdll.dll".as_ptr().cast());
        !ntdll.is_null() && GetProcAddress(ntdll, c"wine_get_version".as_ptr().cast()).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::super::describe;
    use super::*;

    #[test]
    fn a_sid_reads_as_windows_writes_it() {
        // LocalSystem: S-1-5-18.
        let system = Account::from_bytes(&[1, 1, 0, 0, 0, 0, 0, 5, 18, 0, 0, 0]).unwrap();
        assert_eq!(system.to_string(), "S-1-5-18");
        assert_eq!(Account::NOBODY.to_string(), "S-1-0-0");
        assert_ne!(system, Account::NOBODY);
        let who = describe(system);
        assert!(who.ends_with("(S-1-5-18)") && who.contains("SYSTEM"), "{who}");
        // Not a SID: a count that does not match the length, or too long.
        assert!(Account::from_bytes(&[1, 2, 0, 0, 0, 0, 0, 5, 18, 0, 0, 0]).is_none());
        assert!(Account::from_bytes(&[1, 15, 0, 0, 0, 0, 0, 5]).is_none());
    }

    #[test]
    fn this_process_runs_as_a_user_sid() {
        let me = me().unwrap();
        // A user's SID (S-1-5-21-…), never the null SID, and named.
        assert!(me.to_string().starts_with("S-1-5-21-"), "{me}");
        assert!(describe(me).ends_with(&format!("({me})")));
    }
}
