//! The phone listener's accept loop (`crate::phone`): TLS first (a bounded
//! handshake), then HTTP/1.1 with the peer's address and the connection's
//! trust on each request for the listener's gate.
//!
//! Whoever is on the network can connect, so nothing a stranger opens may
//! keep a paired phone out: a connection is *trusted* once a request on it
//! carried a paired device's credential (the gate says so). An untrusted one
//! lives at most [`UNTRUSTED_LIFE`] whatever it does (slow bodies, unread
//! answers, silence), one host holds at most [`PER_HOST`] connections, and
//! when the listener is full a new connection takes the place of the oldest
//! untrusted one — so a paired phone always gets in.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::connect_info::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

use crate::http::{Peer, Trust};
use crate::sync::MutexExt as _;

/// How long a connection may take over its TLS handshake.
const HANDSHAKE_WITHIN: Duration = Duration::from_secs(10);
/// How long a connection may take to send a request's headers (and so sit idle).
const HEADERS_WITHIN: Duration = Duration::from_secs(30);
/// How long a connection no paired device has used may live, whatever it does.
pub const UNTRUSTED_LIFE: Duration = Duration::from_secs(60);
/// Connections open at once: a phone needs a handful (the page, its stream).
const CONNECTIONS: usize = 64;
/// Connections one address may hold at once.
const PER_HOST: usize = 16;
/// How long stopping waits for open requests.
const GRACE: Duration = Duration::from_secs(2);
/// At most one line a while about connections turned away (a flood must not fill the log).
const SAY_EVERY: Duration = Duration::from_secs(10);

/// One open connection, as the table knows it.
struct Open {
    id: u64,
    host: IpAddr,
    trusted: Arc<AtomicBool>,
    cut: CancellationToken,
}

/// The open connections, oldest first.
#[derive(Default)]
struct Table {
    open: Mutex<Vec<Open>>,
    next: AtomicU64,
    turned_away: AtomicU64,
    said_at: Mutex<Option<Instant>>,
}

impl Table {
    /// Make room for a connection from `host` (closing the oldest untrusted
    /// one of that host, or of all, if need be) and register it; `None` when
    /// every connection in the way is a paired device's.
    fn admit(&self, host: IpAddr) -> Option<(u64, Arc<AtomicBool>, CancellationToken)> {
        let mut open = self.open.lock_anyway();
        let of_host = open.iter().filter(|c| c.host == host).count();
        let evict = |open: &mut Vec<Open>, same_host: bool| {
            let at = open
                .iter()
                .position(|c| !c.trusted.load(Ordering::Acquire) && (!same_host || c.host == host))?;
            let gone = open.remove(at);
            gone.cut.cancel();
            Some(())
        };
        if of_host >= PER_HOST && evict(&mut open, true).is_none() {
            return None;
        }
        if open.len() >= CONNECTIONS && evict(&mut open, false).is_none() {
            return None;
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (trusted, cut) = (Arc::new(AtomicBool::new(false)), CancellationToken::new());
        open.push(Open {
            id,
            host,
            trusted: trusted.clone(),
            cut: cut.clone(),
        });
        Some((id, trusted, cut))
    }

    fn closed(&self, id: u64) {
        self.open.lock_anyway().retain(|c| c.id != id);
    }

    /// Count one turned away; say so at most every [`SAY_EVERY`].
    fn turn_away(&self, host: IpAddr) {
        let n = self.turned_away.fetch_add(1, Ordering::Relaxed) + 1;
        let mut said = self.said_at.lock_anyway();
        if said.is_none_or(|at| at.elapsed() >= SAY_EVERY) {
            *said = Some(Instant::now());
            tracing::warn!(%host, turned_away = n, "the phone listener is full of paired devices' connections; turned one away");
        }
    }
}

/// Serve `router` over TLS on `listener` until `stop`.
pub async fn serve_tls(listener: TcpListener, tls: Arc<rustls::ServerConfig>, router: Router, stop: CancellationToken) {
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    let graceful = GracefulShutdown::new();
    let table = Arc::new(Table::default());
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let (tcp, addr) = tokio::select! {
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    tracing::warn!(error = %e, "the phone listener could not accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = stop.cancelled() => break,
        };
        let host = addr.ip().to_canonical();
        let Some((id, trusted, cut)) = table.admit(host) else {
            table.turn_away(host);
            continue;
        };
        let _ = tcp.set_nodelay(true);
        let peer = Peer::new(addr, tcp.local_addr().ok());
        let (acceptor, router, watcher, table) = (acceptor.clone(), router.clone(), graceful.watcher(), table.clone());
        connections.spawn(async move {
            let trust = Trust(trusted.clone());
            let served = async {
                let tls = match tokio::time::timeout(HANDSHAKE_WITHIN, acceptor.accept(tcp)).await {
                    Ok(Ok(tls)) => tls,
                    Ok(Err(e)) => return tracing::debug!(peer = %addr, error = %e, "a TLS handshake with the phone listener failed"),
                    Err(_) => return tracing::debug!(peer = %addr, "a TLS handshake with the phone listener took too long"),
                };
                let service = TowerToHyperService::new(router.map_request(move |req: axum::http::Request<Incoming>| {
                    let mut req = req.map(axum::body::Body::new);
                    req.extensions_mut().insert(ConnectInfo(peer.clone()));
                    req.extensions_mut().insert(trust.clone());
                    req
                }));
                let mut http = hyper::server::conn::http1::Builder::new();
                http.timer(TokioTimer::new()).header_read_timeout(HEADERS_WITHIN);
                let connection = http.serve_connection(TokioIo::new(tls), service);
                if let Err(e) = watcher.watch(connection).await {
                    tracing::debug!(error = %e, "a phone connection ended with an error");
                }
            };
            // An untrusted connection's life is bounded; a paired device's lasts (its live stream).
            let expiry = async {
                tokio::time::sleep(UNTRUSTED_LIFE).await;
                if trusted.load(Ordering::Acquire) {
                    std::future::pending::<()>().await;
                }
            };
            tokio::select! {
                () = served => {}
                () = cut.cancelled() => tracing::debug!(peer = %addr, "a phone listener connection gave its place to a newer one"),
                () = expiry => tracing::debug!(peer = %addr, "a phone listener connection no paired device used was closed"),
            }
            table.closed(id);
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(GRACE, graceful.shutdown()).await;
    connections.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_listener_makes_room_by_closing_the_oldest_untrusted_connection() {
        let table = Table::default();
        let phone: IpAddr = [10, 0, 0, 2].into();
        let (_, trusted, phone_cut) = table.admit(phone).unwrap();
        trusted.store(true, Ordering::Release);
        // One host fills its share: its own oldest goes first, never the phone's.
        let attacker: IpAddr = [10, 0, 0, 9].into();
        let first = table.admit(attacker).unwrap().2;
        for _ in 1..PER_HOST {
            table.admit(attacker).unwrap();
        }
        assert!(!first.is_cancelled());
        table.admit(attacker).unwrap();
        assert!(first.is_cancelled(), "the host's oldest gave way");
        // Many hosts fill the listener: the phone's connection stays, a new one still gets in.
        for n in 0..CONNECTIONS * 2 {
            table.admit([10, 1, (n / 200) as u8, (n % 200) as u8].into()).unwrap();
        }
        assert!(
            !phone_cut.is_cancelled(),
            "a paired device's connection is never the one to go"
        );
        assert_eq!(table.open.lock_anyway().len(), CONNECTIONS);
        assert!(table.admit(phone).is_some(), "the phone gets in");
        // Every connection a paired device's: a stranger is turned away.
        let full = Table::default();
        for n in 0..CONNECTIONS {
            full.admit([10, 2, 0, n as u8].into())
                .unwrap()
                .1
                .store(true, Ordering::Release);
        }
        assert!(full.admit(attacker).is_none());
    }
}
