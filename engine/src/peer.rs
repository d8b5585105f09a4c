//! Which account owns the other end of a local TCP connection.
//!
//! Loopback is not a trust boundary between the accounts of one machine: any
//! of them can connect to 127.0.0.1. The guard asks [`owner`] about each
//! loopback peer (once per connection) and lets in only the account the
//! engine runs as, unless the request carries the token. The CLI and the
//! stdio bridge ask [`listener_owner`] about the server they are about to
//! talk to, so another account's server squatting on the port is refused.
//!
//! Linux asks the kernel (`sock_diag` netlink, through the rust-netlink
//! crates): each socket there carries its owner's uid. Other platforms
//! have no implementation yet: [`supported`] says so, and callers decide
//! (the guard then relies on the token, and says so at start-up).
//! An owner that cannot be determined is an error, never a guess.

use std::net::SocketAddr;

/// An account on this machine (a uid on Unix).
pub type Account = u32;

/// Whether this platform can tell who owns a socket.
pub const fn supported() -> bool {
    cfg!(target_os = "linux")
}

/// The account this process runs as.
pub fn me() -> std::io::Result<Account> {
    imp::me()
}

/// The account owning the socket whose local address is `peer` and whose
/// remote address is `ours`: the other end of a connection we accepted.
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
    imp::name(account).map_or_else(|| format!("uid {account}"), |n| format!("{n} (uid {account})"))
}

#[cfg(target_os = "linux")]
mod imp {
    //! The kernel's `sock_diag` netlink interface (what `ss` uses): one exact
    //! query per connection, answered from the socket hash in microseconds —
    //! reading `/proc/net/tcp` instead walks the whole table (milliseconds).

    use std::io::{Error, ErrorKind, Result};
    use std::net::{IpAddr, SocketAddr};
    use std::os::unix::fs::MetadataExt;

    use netlink_packet_core::{NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_DUMP, NLM_F_REQUEST};
    use netlink_packet_sock_diag::constants::{AF_INET, AF_INET6, IPPROTO_TCP};
    use netlink_packet_sock_diag::inet::{ExtensionFlags, InetRequest, SocketId, StateFlags};
    use netlink_packet_sock_diag::SockDiagMessage;
    use netlink_sys::protocols::NETLINK_SOCK_DIAG;
    use netlink_sys::Socket;

    use super::Account;

    /// "Any socket with this address": the kernel's INET_DIAG_NOCOOKIE.
    const NO_COOKIE: [u8; 8] = [0xff; 8];

    pub fn me() -> Result<Account> {
        Ok(std::fs::metadata("/proc/self")?.uid())
    }

    /// The uid owning the connected socket whose local end is `local` and remote end `remote`.
    pub fn connection(local: SocketAddr, remote: SocketAddr) -> Result<Account> {
        // An IPv4 client of a dual-stack server shows as IPv4-mapped there, but
        // its own socket is IPv4: ask in the family the addresses really have.
        let (l, r) = (local.ip().to_canonical(), remote.ip().to_canonical());
        let family = if l.is_ipv4() && r.is_ipv4() { AF_INET } else { AF_INET6 };
        let id = SocketId {
            source_port: local.port(),
            destination_port: remote.port(),
            source_address: in_family(l, family),
            destination_address: in_family(r, family),
            interface_id: 0,
            cookie: NO_COOKIE,
        };
        let found = query(family, id, StateFlags::all(), false)?;
        found
            .first()
            .map(|(_, uid)| *uid)
            .ok_or_else(|| Error::new(ErrorKind::NotFound, "no such connection in the kernel's tables"))
    }

    /// The uid owning the socket that listens on `addr`'s port (on `addr` or on every address).
    pub fn listener(addr: SocketAddr) -> Result<Account> {
        for family in [AF_INET, AF_INET6] {
            let any = if family == AF_INET {
                SocketId::new_v4()
            } else {
                SocketId::new_v6()
            };
            for (id, uid) in query(family, any, StateFlags::LISTEN, true)? {
                let ip = id.source_address.to_canonical();
                if id.source_port == addr.port() && (ip.is_unspecified() || ip == addr.ip().to_canonical()) {
                    return Ok(uid);
                }
            }
        }
        Err(Error::new(ErrorKind::NotFound, "nothing listens there"))
    }

    fn in_family(ip: IpAddr, family: u8) -> IpAddr {
        match ip {
            IpAddr::V4(v4) if family == AF_INET6 => IpAddr::V6(v4.to_ipv6_mapped()),
            other => other,
        }
    }

    /// One request; the sockets it returns with their owners. Without `dump`
    /// the kernel looks up exactly `id` (and answers ENOENT when it is not there).
    fn query(family: u8, id: SocketId, states: StateFlags, dump: bool) -> Result<Vec<(SocketId, Account)>> {
        let mut socket = Socket::new(NETLINK_SOCK_DIAG)?;
        socket.bind_auto()?;
        socket.connect(&netlink_sys::SocketAddr::new(0, 0))?;
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_REQUEST | if dump { NLM_F_DUMP } else { 0 };
        let request = InetRequest {
            family,
            protocol: IPPROTO_TCP,
            extensions: ExtensionFlags::empty(),
            states,
            socket_id: id,
        };
        let mut packet = NetlinkMessage::new(header, SockDiagMessage::InetRequest(request).into());
        packet.finalize();
        let mut out = vec![0; packet.buffer_len()];
        packet.serialize(&mut out[..]);
        socket.send(&out, 0)?;

        let mut found = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let size = socket.recv(&mut &mut buf[..], 0)?;
            let mut offset = 0;
            while offset < size {
                let message = NetlinkMessage::<SockDiagMessage>::deserialize(&buf[offset..size])
                    .map_err(|e| Error::other(format!("an unreadable sock_diag answer: {e}")))?;
                let length = message.header.length as usize;
                match message.payload {
                    NetlinkPayload::InnerMessage(SockDiagMessage::InetResponse(r)) => {
                        found.push((r.header.socket_id.clone(), r.header.uid));
                        if !dump {
                            return Ok(found);
                        }
                    }
                    NetlinkPayload::Done(_) => return Ok(found),
                    NetlinkPayload::Error(e) => {
                        return match e.code {
                            None => Ok(found),
                            Some(code) if code.get() == -libc_enoent() => Ok(found),
                            Some(code) => Err(Error::from_raw_os_error(-code.get())),
                        };
                    }
                    _ => {}
                }
                if length == 0 {
                    break;
                }
                offset += length;
            }
            if !dump {
                return Ok(found);
            }
        }
    }

    const fn libc_enoent() -> i32 {
        2 // ENOENT on Linux
    }

    /// The account's name from /etc/passwd (no NSS: a name is only for messages).
    pub fn name(account: Account) -> Option<String> {
        let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
        passwd.lines().find_map(|line| {
            let mut fields = line.split(':');
            let name = fields.next()?;
            let uid = fields.nth(1)?.parse::<Account>().ok()?;
            (uid == account).then(|| name.to_owned())
        })
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::io::{Error, ErrorKind, Result};
    use std::net::SocketAddr;

    use super::Account;

    const UNSUPPORTED: &str = "telling who owns a socket is implemented on Linux only";

    pub fn me() -> Result<Account> {
        Err(Error::new(ErrorKind::Unsupported, UNSUPPORTED))
    }

    pub fn connection(_local: SocketAddr, _remote: SocketAddr) -> Result<Account> {
        Err(Error::new(ErrorKind::Unsupported, UNSUPPORTED))
    }

    pub fn listener(_addr: SocketAddr) -> Result<Account> {
        Err(Error::new(ErrorKind::Unsupported, UNSUPPORTED))
    }

    pub fn name(_account: Account) -> Option<String> {
        None
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::net::{TcpListener, TcpStream};

    use super::*;

    #[test]
    fn the_owner_of_a_real_connection_and_listener_is_this_process_s_account() {
        let me = me().unwrap();
        for bind in ["127.0.0.1:0", "[::1]:0"] {
            let Ok(listener) = TcpListener::bind(bind) else {
                continue; // no IPv6 loopback on this machine
            };
            let ours = listener.local_addr().unwrap();
            let client = TcpStream::connect(ours).unwrap();
            let (_accepted, peer) = listener.accept().unwrap();
            assert_eq!(peer, client.local_addr().unwrap());
            assert_eq!(owner(peer, ours).unwrap(), me, "{bind}");
            assert_eq!(listener_owner(ours).unwrap(), me, "{bind}");
        }
        // A socket nobody has is an error, not a guess.
        let nowhere: SocketAddr = "127.0.0.1:1".parse().unwrap();
        assert!(owner(nowhere, nowhere).is_err());
        assert!(describe(0).contains("uid 0"));
    }
}
