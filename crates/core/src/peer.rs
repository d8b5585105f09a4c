//! Which account owns the other end of a local TCP connection.
//!
//! Loopback is not a trust boundary between the accounts of one machine: any
//! of them can connect to 127.0.0.1. The guard asks [`owner`] about each
//! loopback peer (once per connection) and lets in only the account the
//! engine runs as, unless the request carries the token. The CLI and the
//! stdio bridge ask [`listener_owner`] about the server they are about to
//! talk to, so another account's server squatting on the port is refused.
//!
//! One file per platform, each saying how it is verified: Linux asks the
//! kernel's socket table (`linux.rs`), macOS the kernel's PCB list
//! (`macos.rs`), Windows the TCP table's owning process and that process's
//! token (`windows.rs`). Elsewhere [`supported`] is false and callers decide
//! (the guard then relies on the token, and says so at start-up).
//! An owner that cannot be determined is an error, never a guess.

use std::net::SocketAddr;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as imp;

// The PCB-list parser is plain bytes: its tests run on every platform.
#[cfg(any(target_os = "macos", test))]
mod macos;
#[cfg(target_os = "macos")]
use macos as imp;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as imp;

#[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
mod unsupported;
#[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
use unsupported as imp;

/// An account on this machine: a uid on Unix, a SID on Windows. `Copy`, so
/// it is compared and carried like a number; [`Account::NOBODY`] is an
/// account no socket can have (for failing closed); it displays as
/// `uid 1000` or `S-1-5-21-…`.
pub use imp::Account;

/// Whether this Windows program runs under Wine (tests say what Wine cannot show).
#[cfg(all(windows, test))]
pub use imp::under_wine;

/// Whether this platform can tell who owns a socket.
pub const fn supported() -> bool {
    cfg!(any(target_os = "linux", target_os = "macos", windows))
}

/// The account this process runs as.
pub fn me() -> std::io::Result<Account> {
    imp::me()
}

/// The account owning the socket whose local address is `peer` and whose
/// remote address is `ours`: the other end of a connection we accepted.
/// `ErrorKind::NotFound` means no socket of this machine has those
/// addresses: the peer is on another host (any other error: it is here, and
/// who it is cannot be told).
pub fn owner(peer: SocketAddr, ours: SocketAddr) -> std::io::Result<Account> {
    imp::connection(peer, ours)
        .map_err(|e| std::io::Error::new(e.kind(), format!("who owns the connection from {peer}: {e}")))
}

/// The account owning the socket listening on `addr` (the server a client is about to trust).
pub fn listener_owner(addr: SocketAddr) -> std::io::Result<Account> {
    imp::listener(addr).map_err(|e| std::io::Error::new(e.kind(), format!("who listens on {addr}: {e}")))
}

/// How a person reads an account in a message: its name where the system has one.
pub fn describe(account: Account) -> String {
    imp::name(account).map_or_else(|| account.to_string(), |n| format!("{n} ({account})"))
}

#[cfg(all(test, any(target_os = "linux", target_os = "macos", windows)))]
mod tests {
    use std::io::Write;
    use std::net::{SocketAddr, TcpListener, TcpStream};

    use super::*;

    #[test]
    fn the_owner_of_a_real_connection_and_listener_is_this_process_s_account() {
        let me = me().unwrap();
        assert_ne!(me, Account::NOBODY);
        for bind in ["127.0.0.1:0", "[::1]:0"] {
            let Ok(listener) = TcpListener::bind(bind) else {
                continue; // no IPv6 loopback on this machine
            };
            let ours = listener.local_addr().unwrap();
            let mut client = TcpStream::connect(ours).unwrap();
            // A client says something first (Wine gives the socket its owner then).
            client.write_all(b"GET").unwrap();
            let (_accepted, peer) = listener.accept().unwrap();
            assert_eq!(peer, client.local_addr().unwrap());
            #[cfg(windows)]
            let wine = imp::under_wine();
            #[cfg(not(windows))]
            let wine = false;
            if wine && ours.is_ipv6() {
                // Wine 8 reads the wrong column of /proc/net/tcp6: no IPv6 socket has an owner there.
                eprintln!("skipped under Wine: who owns an IPv6 connection (docs/PLATFORMS.md)");
                continue;
            }
            assert_eq!(owner(peer, ours).unwrap(), me, "{bind}");
            if wine {
                // wineserver holds every listening socket there: no process owns it.
                eprintln!("skipped under Wine: who owns a listening socket (docs/PLATFORMS.md)");
                continue;
            }
            assert_eq!(listener_owner(ours).unwrap(), me, "{bind}");
        }
        // A socket nobody has is an error, not a guess.
        let nowhere: SocketAddr = "127.0.0.1:1".parse().unwrap();
        assert!(owner(nowhere, nowhere).is_err());
        assert!(listener_owner(nowhere).is_err());
    }
}
