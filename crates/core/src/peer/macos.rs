//! macOS: the kernel's list of TCP protocol control blocks, the sysctl
//! `net.inet.tcp.pcblist_n` (what `netstat` reads; any account may read it).
//! Each PCB comes with its socket, and the socket with the uid of the
//! process that created it (`so_uid`) — the same fact Linux's socket table
//! gives, so the behaviour is Linux's: another account's connection is
//! named and refused, its squatting server is named. One read walks the
//! whole table (a few hundred records on a desktop: well under a
//! millisecond), once per connection.
//!
//! The records' layouts are xnu's `struct xinpcb_n` (`bsd/netinet/in_pcb.h`)
//! and `struct xsocket_n` (`bsd/sys/socketvar.h`), both under
//! `#pragma pack(4)` and unchanged in the fields read here since macOS 10.6;
//! every record starts with its length and kind and is padded to 8 bytes.
//! The offsets below were checked by compiling those declarations with gcc
//! (LP64, the same packing) and printing `offsetof`.
//!
//! Verified: on this project's Linux CI, type-checked for
//! `aarch64-apple-darwin` and `x86_64-apple-darwin` (`npm run
//! check:platforms`), and the parser's unit tests run on Linux against
//! tables laid out as the kernel writes them. On a Mac — the release
//! workflow's macOS job — `cargo test -p local-mcp-engine --lib peer` also
//! runs `peer`'s test with a real connection and listener. Another real
//! account has not been tried on a Mac.

use std::io::{Error, ErrorKind, Result};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// An account of this machine: a uid.
#[cfg(target_os = "macos")]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Account(u32);

#[cfg(target_os = "macos")]
impl Account {
    /// An account no socket can have (uid -1 is never assigned), for failing closed.
    pub const NOBODY: Account = Account(u32::MAX);
}

#[cfg(target_os = "macos")]
impl std::fmt::Display for Account {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "uid {}", self.0)
    }
}

/// Record kinds (`XSO_*` in socketvar.h).
const XSO_SOCKET: u32 = 0x001;
const XSO_INPCB: u32 = 0x010;
/// `struct xinpgen`, which opens and closes the list.
const XINPGEN_LEN: usize = 24;

/// `struct xinpcb_n`: ports (network order), `inp_vflag`, the addresses
/// (16-byte unions: an IPv4 address is their last 4 bytes).
mod inpcb {
    pub const FPORT: usize = 16;
    pub const LPORT: usize = 18;
    pub const VFLAG: usize = 44;
    pub const FADDR: usize = 48;
    pub const LADDR: usize = 64;
    pub const MIN_LEN: usize = 80;
    pub const INP_IPV4: u8 = 0x1;
    pub const INP_IPV6: u8 = 0x2;
}

/// `struct xsocket_n`: `so_options` (SO_ACCEPTCONN marks a listener) and `so_uid`.
mod socket {
    pub const OPTIONS: usize = 20;
    pub const UID: usize = 64;
    pub const MIN_LEN: usize = 68;
    pub const SO_ACCEPTCONN: u32 = 0x2;
}

/// One TCP socket of the table, as far as this module cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Pcb {
    pub local: SocketAddr,
    pub remote: SocketAddr,
    pub listening: bool,
    pub uid: u32,
}

/// The table read back from the sysctl's bytes. A record that does not fit
/// is an error (a layout this code does not know), never skipped.
pub(super) fn parse(buf: &[u8]) -> Result<Vec<Pcb>> {
    let unreadable = |what: &str| Error::new(ErrorKind::InvalidData, format!("an unreadable TCP table: {what}"));
    let head = u32_at(buf, 0).ok_or_else(|| unreadable("no header"))? as usize;
    let mut at = round_up_8(head);
    let mut found = Vec::new();
    let mut addresses: Option<(SocketAddr, SocketAddr)> = None;
    let mut socket: Option<(u32, u32)> = None;
    while let (Some(len), Some(kind)) = (u32_at(buf, at), u32_at(buf, at + 4)) {
        let len = len as usize;
        if len <= XINPGEN_LEN {
            break; // the closing xinpgen
        }
        let record = buf
            .get(at..at + len)
            .ok_or_else(|| unreadable("a record runs past the end"))?;
        match kind {
            XSO_INPCB => addresses = Some(pcb_addresses(record).ok_or_else(|| unreadable("a short PCB"))?),
            XSO_SOCKET => {
                if record.len() < socket::MIN_LEN {
                    return Err(unreadable("a short socket"));
                }
                let options = u32_at(record, socket::OPTIONS).unwrap_or_default();
                socket = Some((options, u32_at(record, socket::UID).unwrap_or_default()));
            }
            _ => {}
        }
        // A PCB's records come together (the PCB, its socket, its buffers,
        // its TCP state): pair the two that matter as soon as both are seen.
        if let (Some((local, remote)), Some((options, uid))) = (addresses, socket) {
            found.push(Pcb {
                local,
                remote,
                listening: options & socket::SO_ACCEPTCONN != 0,
                uid,
            });
            addresses = None;
            socket = None;
        }
        at += round_up_8(len);
    }
    Ok(found)
}

/// (local, remote) of an `xinpcb_n` record.
fn pcb_addresses(record: &[u8]) -> Option<(SocketAddr, SocketAddr)> {
    if record.len() < inpcb::MIN_LEN {
        return None;
    }
    let vflag = record[inpcb::VFLAG];
    let address = |offset: usize| -> Option<IpAddr> {
        let bytes: [u8; 16] = record.get(offset..offset + 16)?.try_into().ok()?;
        Some(if vflag & inpcb::INP_IPV6 != 0 {
            IpAddr::V6(Ipv6Addr::from(bytes)).to_canonical()
        } else if vflag & inpcb::INP_IPV4 != 0 {
            IpAddr::V4(Ipv4Addr::new(bytes[12], bytes[13], bytes[14], bytes[15]))
        } else {
            return None;
        })
    };
    let port = |offset: usize| u16::from_be_bytes([record[offset], record[offset + 1]]);
    Some((
        SocketAddr::new(address(inpcb::LADDR)?, port(inpcb::LPORT)),
        SocketAddr::new(address(inpcb::FADDR)?, port(inpcb::FPORT)),
    ))
}

fn u32_at(buf: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(buf.get(at..at + 4)?.try_into().ok()?))
}

/// The kernel's ROUNDUP64: every record is padded to 8 bytes.
fn round_up_8(len: usize) -> usize {
    len.max(1).div_ceil(8) * 8
}

fn same(a: SocketAddr, b: SocketAddr) -> bool {
    a.port() == b.port() && a.ip().to_canonical() == b.ip().to_canonical()
}

/// The connected socket whose local end is `local` and remote end `remote`.
pub(super) fn find_connection(table: &[Pcb], local: SocketAddr, remote: SocketAddr) -> Option<u32> {
    table
        .iter()
        .find(|p| !p.listening && same(p.local, local) && same(p.remote, remote))
        .map(|p| p.uid)
}

/// The socket listening on `addr`'s port, on `addr` or on every address.
pub(super) fn find_listener(table: &[Pcb], addr: SocketAddr) -> Option<u32> {
    table
        .iter()
        .find(|p| {
            p.listening
                && p.local.port() == addr.port()
                && (p.local.ip().is_unspecified() || p.local.ip() == addr.ip().to_canonical())
        })
        .map(|p| p.uid)
}

#[cfg(target_os = "macos")]
pub fn me() -> Result<Account> {
    // SAFETY: geteuid cannot fail and touches no memory of ours.
    Ok(Account(unsafe { libc::geteuid() }))
}

#[cfg(target_os = "macos")]
pub fn connection(local: SocketAddr, remote: SocketAddr) -> Result<Account> {
    find_connection(&parse(&pcblist()?)?, local, remote)
        .map(Account)
        .ok_or_else(|| Error::new(ErrorKind::NotFound, "no such connection in the kernel's TCP table"))
}

#[cfg(target_os = "macos")]
pub fn listener(addr: SocketAddr) -> Result<Account> {
    find_listener(&parse(&pcblist()?)?, addr)
        .map(Account)
        .ok_or_else(|| Error::new(ErrorKind::NotFound, "nothing listens there"))
}

/// The sysctl's bytes, read with room for sockets opened meanwhile.
#[cfg(target_os = "macos")]
fn pcblist() -> Result<Vec<u8>> {
    let name = c"net.inet.tcp.pcblist_n";
    for _ in 0..5 {
        let mut len = 0usize;
        // SAFETY: a size query (null buffer) into a usize we own.
        let rc = unsafe { libc::sysctlbyname(name.as_ptr(), std::ptr::null_mut(), &mut len, std::ptr::null_mut(), 0) };
        if rc != 0 {
            return Err(Error::last_os_error());
        }
        len += len / 8 + 4096;
        let mut buf = vec![0u8; len];
        // SAFETY: the buffer is `len` bytes long and the kernel writes at most `len`.
        let rc = unsafe {
            libc::sysctlbyname(
                name.as_ptr(),
                buf.as_mut_ptr().cast(),
                &mut len,
                std::ptr::null_mut(),
                0,
            )
        };
        if rc == 0 {
            buf.truncate(len);
            return Ok(buf);
        }
        let e = Error::last_os_error();
        if e.raw_os_error() != Some(libc::ENOMEM) {
            return Err(e);
        }
    }
    Err(Error::other("the kernel's TCP table kept growing while it was read"))
}

/// The account's name (the directory service through getpwuid_r).
#[cfg(target_os = "macos")]
pub fn name(account: Account) -> Option<String> {
    // SAFETY: passwd is plain data; getpwuid_r writes its strings into `buf`
    // and sets `result` to `&pwd` or null; the name is read before `buf` goes.
    unsafe {
        let mut pwd: libc::passwd = std::mem::zeroed();
        let mut buf = vec![0 as libc::c_char; 4096];
        let mut result = std::ptr::null_mut();
        let rc = libc::getpwuid_r(account.0, &mut pwd, buf.as_mut_ptr(), buf.len(), &mut result);
        if rc != 0 || result.is_null() || pwd.pw_name.is_null() {
            return None;
        }
        Some(std::ffi::CStr::from_ptr(pwd.pw_name).to_string_lossy().into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table as the kernel writes it: the opening xinpgen, then per PCB an
    /// `xinpcb_n`, an `xsocket_n`, two `xsockbuf_n`, an `xsockstat_n` and an
    /// `xtcpcb_n` (each padded to 8 bytes), then the closing xinpgen.
    /// One socket: its IP version, local address and port, remote address and port, listening, owner.
    type Socket = (u8, [u8; 16], u16, [u8; 16], u16, bool, u32);

    fn table(pcbs: &[Socket]) -> Vec<u8> {
        fn record(out: &mut Vec<u8>, kind: u32, len: usize, fill: impl FnOnce(&mut [u8])) {
            let mut r = vec![0u8; len];
            r[0..4].copy_from_slice(&(len as u32).to_ne_bytes());
            r[4..8].copy_from_slice(&kind.to_ne_bytes());
            fill(&mut r);
            r.resize(round_up_8(len), 0xee); // padding the parser must skip
            out.extend(r);
        }
        let mut out = Vec::new();
        let head = |out: &mut Vec<u8>| {
            let mut h = vec![0u8; XINPGEN_LEN];
            h[0..4].copy_from_slice(&(XINPGEN_LEN as u32).to_ne_bytes());
            out.extend(h);
        };
        head(&mut out);
        for &(vflag, laddr, lport, faddr, fport, listening, uid) in pcbs {
            record(&mut out, XSO_INPCB, 104, |r| {
                r[inpcb::FPORT..inpcb::FPORT + 2].copy_from_slice(&fport.to_be_bytes());
                r[inpcb::LPORT..inpcb::LPORT + 2].copy_from_slice(&lport.to_be_bytes());
                r[inpcb::VFLAG] = vflag;
                r[inpcb::FADDR..inpcb::FADDR + 16].copy_from_slice(&faddr);
                r[inpcb::LADDR..inpcb::LADDR + 16].copy_from_slice(&laddr);
            });
            record(&mut out, XSO_SOCKET, 100, |r| {
                let options: u32 = if listening { socket::SO_ACCEPTCONN | 0x4 } else { 0x4 };
                r[socket::OPTIONS..socket::OPTIONS + 4].copy_from_slice(&options.to_ne_bytes());
                r[socket::UID..socket::UID + 4].copy_from_slice(&uid.to_ne_bytes());
            });
            record(&mut out, 0x002, 36, |_| {});
            record(&mut out, 0x004, 36, |_| {});
            record(&mut out, 0x008, 332, |_| {});
            record(&mut out, 0x020, 148, |_| {});
        }
        head(&mut out);
        out
    }

    fn v4(a: [u8; 4]) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[12..].copy_from_slice(&a);
        b
    }

    fn v6(a: &str) -> [u8; 16] {
        a.parse::<Ipv6Addr>().unwrap().octets()
    }

    #[test]
    fn a_kernel_table_gives_each_socket_its_addresses_state_and_uid() {
        let lo = v4([127, 0, 0, 1]);
        let bytes = table(&[
            // Ours: a listener on 127.0.0.1:8000 and the connection it accepted.
            (inpcb::INP_IPV4, lo, 8000, [0; 16], 0, true, 501),
            (inpcb::INP_IPV4, lo, 8000, lo, 50123, false, 501),
            // Another account's client end of that connection.
            (inpcb::INP_IPV4, lo, 50123, lo, 8000, false, 502),
            // A dual-stack listener of another account on every address.
            (inpcb::INP_IPV4 | inpcb::INP_IPV6, [0; 16], 9000, [0; 16], 0, true, 502),
            // An IPv6 connection, and an IPv4 one through a dual-stack socket.
            (inpcb::INP_IPV6, v6("::1"), 50200, v6("::1"), 9000, false, 501),
            (
                inpcb::INP_IPV6,
                v6("::ffff:127.0.0.1"),
                50300,
                v6("::ffff:127.0.0.1"),
                9000,
                false,
                503,
            ),
        ]);
        let table = parse(&bytes).unwrap();
        assert_eq!(table.len(), 6, "{table:?}");
        let at = |s: &str| s.parse::<SocketAddr>().unwrap();
        assert_eq!(
            table[2],
            Pcb {
                local: at("127.0.0.1:50123"),
                remote: at("127.0.0.1:8000"),
                listening: false,
                uid: 502
            }
        );
        // The guard's question: who holds the client end of this connection.
        assert_eq!(
            find_connection(&table, at("127.0.0.1:50123"), at("127.0.0.1:8000")),
            Some(502)
        );
        assert_eq!(find_connection(&table, at("[::1]:50200"), at("[::1]:9000")), Some(501));
        assert_eq!(
            find_connection(&table, at("127.0.0.1:50300"), at("127.0.0.1:9000")),
            Some(503)
        );
        assert_eq!(
            find_connection(&table, at("127.0.0.1:50124"), at("127.0.0.1:8000")),
            None
        );
        // The CLI's question: who listens on the port (a listener, not a connection on it).
        assert_eq!(find_listener(&table, at("127.0.0.1:8000")), Some(501));
        assert_eq!(find_listener(&table, at("127.0.0.1:9000")), Some(502));
        assert_eq!(find_listener(&table, at("[::1]:9000")), Some(502));
        assert_eq!(find_listener(&table, at("127.0.0.1:9001")), None);
    }

    #[test]
    fn a_table_that_does_not_fit_is_an_error_not_a_guess() {
        let lo = v4([127, 0, 0, 1]);
        let mut bytes = table(&[(inpcb::INP_IPV4, lo, 8000, lo, 50123, false, 501)]);
        bytes.truncate(XINPGEN_LEN + 40); // cut inside the first PCB
        assert!(parse(&bytes).is_err());
        assert!(parse(&[1, 2]).is_err());
        // An empty table (opening and closing xinpgen) is no sockets.
        assert_eq!(parse(&table(&[])).unwrap(), vec![]);
    }
}
