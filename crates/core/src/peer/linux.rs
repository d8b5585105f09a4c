//! Linux: the kernel's `sock_diag` netlink interface (what `ss` uses): one
//! exact query per connection, answered from the socket hash in
//! microseconds — reading `/proc/net/tcp` instead walks the whole table
//! (milliseconds). Every socket there carries the uid that created it.
//!
//! Verified here, on every CI run: `peer`'s unit test (a real connection
//! and listener are this process's uid) and the integration tests in
//! `engine/tests/it/same_user.rs` and `other_account.rs`, which reach the
//! engine as `nobody` through `setpriv` (403 without the token, let in with
//! it, the CLI and the bridge refusing a squatted port).

use std::io::{Error, ErrorKind, Result};
use std::net::{IpAddr, SocketAddr};
use std::os::unix::fs::MetadataExt;

use netlink_packet_core::{NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_DUMP, NLM_F_REQUEST};
use netlink_packet_sock_diag::constants::{AF_INET, AF_INET6, IPPROTO_TCP};
use netlink_packet_sock_diag::inet::{ExtensionFlags, InetRequest, SocketId, StateFlags};
use netlink_packet_sock_diag::SockDiagMessage;
use netlink_sys::protocols::NETLINK_SOCK_DIAG;
use netlink_sys::Socket;

/// An account of this machine: a uid.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Account(pub(super) u32);

impl Account {
    /// An account no socket can have (uid -1 is never assigned), for failing closed.
    pub const NOBODY: Account = Account(u32::MAX);
}

impl std::fmt::Display for Account {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "uid {}", self.0)
    }
}

/// "Any socket with this address": the kernel's INET_DIAG_NOCOOKIE.
const NO_COOKIE: [u8; 8] = [0xff; 8];

pub fn me() -> Result<Account> {
    Ok(Account(std::fs::metadata("/proc/self")?.uid()))
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
    // An exact lookup answers whatever socket has these addresses, whatever
    // its state (the state filter applies to dumps only).
    match query(family, id, StateFlags::all(), false)?.first() {
        Some(&(_, uid, state)) if owned(state) => Ok(Account(uid)),
        Some(&(_, _, state)) => Err(Error::new(
            ErrorKind::ConnectionAborted,
            format!("the connection is no longer open (TCP state {state}): who made it cannot be told"),
        )),
        None => Err(Error::new(
            ErrorKind::NotFound,
            "no such connection in the kernel's tables",
        )),
    }
}

/// Whether a socket in `state` carries the uid of the account that made it.
/// A connection closed by its client lingers as a TIME_WAIT entry, and a
/// half-open one as a request: neither is a full socket, and the kernel
/// reports uid 0 for them. A server running as root took such an entry as
/// its own account's and let another account in (it queued instructions by
/// closing each connection before the lookup), so they are unknown.
fn owned(state: u8) -> bool {
    const TCP_SYN_RECV: u8 = 3;
    const TCP_TIME_WAIT: u8 = 6;
    const TCP_NEW_SYN_RECV: u8 = 12;
    !matches!(state, TCP_SYN_RECV | TCP_TIME_WAIT | TCP_NEW_SYN_RECV)
}

/// The uid owning the socket that listens on `addr`'s port (on `addr` or on every address).
pub fn listener(addr: SocketAddr) -> Result<Account> {
    for family in [AF_INET, AF_INET6] {
        let any = if family == AF_INET {
            SocketId::new_v4()
        } else {
            SocketId::new_v6()
        };
        for (id, uid, _) in query(family, any, StateFlags::LISTEN, true)? {
            let ip = id.source_address.to_canonical();
            if id.source_port == addr.port() && (ip.is_unspecified() || ip == addr.ip().to_canonical()) {
                return Ok(Account(uid));
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

/// One request; the sockets it returns with their owners and TCP states.
/// Without `dump` the kernel looks up exactly `id` (and answers ENOENT when
/// it is not there).
fn query(family: u8, id: SocketId, states: StateFlags, dump: bool) -> Result<Vec<(SocketId, u32, u8)>> {
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
                    found.push((r.header.socket_id.clone(), r.header.uid, r.header.state));
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
        let uid = fields.nth(1)?.parse::<u32>().ok()?;
        (uid == account.0).then(|| name.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::super::describe;
    use super::Account;

    /// A client that closes first leaves a TIME_WAIT entry with uid 0; a
    /// server running as root took it for its own account's connection.
    #[test]
    fn a_connection_its_client_closed_has_no_owner_not_uid_0() {
        use std::io::Read;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let ours = listener.local_addr().unwrap();
        let client = std::net::TcpStream::connect(ours).unwrap();
        let (mut accepted, peer) = listener.accept().unwrap();
        assert_eq!(super::connection(peer, ours).unwrap(), super::me().unwrap());
        // The client closes first (its end goes to TIME_WAIT once ours closes too).
        drop(client);
        let mut rest = Vec::new();
        accepted.read_to_end(&mut rest).unwrap();
        drop(accepted);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let found = super::query(
                netlink_packet_sock_diag::constants::AF_INET,
                netlink_packet_sock_diag::inet::SocketId {
                    source_port: peer.port(),
                    destination_port: ours.port(),
                    source_address: peer.ip(),
                    destination_address: ours.ip(),
                    interface_id: 0,
                    cookie: super::NO_COOKIE,
                },
                netlink_packet_sock_diag::inet::StateFlags::all(),
                false,
            )
            .unwrap();
            if found.first().is_some_and(|f| f.2 == 6) {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the client's socket never reached TIME_WAIT: {found:?}"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let err = super::connection(peer, ours).expect_err("a TIME_WAIT entry has no owner to tell");
        assert!(err.to_string().contains("no longer open"), "{err}");
    }

    #[test]
    fn an_account_is_named_from_the_password_file() {
        assert_eq!(describe(Account(0)), "root (uid 0)");
        assert_eq!(describe(Account::NOBODY), "uid 4294967295");
    }
}
