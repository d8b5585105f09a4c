//! The phone listener's accept loop (`crate::phone`): TLS first (a bounded
//! handshake), then HTTP/1.1 with the peer's address and the connection's
//! trust on each request for the listener's gate.
//!
//! Whoever is on the network can connect, so what strangers open must not
//! keep a paired phone out: a connection is *trusted* once a request on it
//! carried a paired device's credential (the gate says so; a revoked
//! device's connections are closed). An untrusted one lives at most
//! [`UNTRUSTED_LIFE`] whatever it does (slow bodies, unread answers,
//! silence); one address holds at most [`PER_HOST`] connections and opens at
//! most [`NEW_PER_SECOND`] a second; when the listener is full a newcomer
//! takes the place of an untrusted connection of the address holding the
//! most of them, its oldest past its first seconds (a phone's new connection
//! has time to show its credential). Trusted connections are never the ones
//! to go. What is left: enough addresses at once can still slow a phone's
//! *new* connections; its open ones (the live stream) stay.

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
const CONNECTIONS: usize = 256;
/// Connections one address may hold at once.
const PER_HOST: usize = 16;
/// New connections one address may open a second (and in a burst, twice that).
const NEW_PER_SECOND: f64 = 20.0;
/// A connection this young is not made to give way while an older one could.
const GRACE_TO_SHOW: Duration = Duration::from_secs(2);
/// Addresses remembered for their rate (the quietest are forgotten past this).
const RATED: usize = 4096;
/// How long stopping waits for open requests.
const GRACE: Duration = Duration::from_secs(2);
/// At most one line a while about connections turned away (a flood must not fill the log).
const SAY_EVERY: Duration = Duration::from_secs(10);

/// One open connection, as the table knows it.
struct Open {
    id: u64,
    host: IpAddr,
    since: Instant,
    trusted: Arc<AtomicBool>,
    cut: CancellationToken,
}

/// The open connections, oldest first.
#[derive(Default)]
struct Table {
    open: Mutex<Vec<Open>>,
    /// Each address's allowance of new connections: (tokens, when last filled).
    rates: Mutex<std::collections::HashMap<IpAddr, (f64, Instant)>>,
    next: AtomicU64,
    turned_away: AtomicU64,
    said_at: Mutex<Option<Instant>>,
}

impl Table {
    /// Make room for a connection from `host` (closing the oldest untrusted
    /// one of that host, or of all, if need be) and register it; `None` when
    /// every connection in the way is a paired device's.
    fn admit(&self, host: IpAddr, now: Instant) -> Option<(u64, Arc<AtomicBool>, CancellationToken)> {
        if !self.within_rate(host, now) {
            return None;
        }
        let mut open = self.open.lock_anyway();
        let of_host = open.iter().filter(|c| c.host == host).count();
        if of_host >= PER_HOST && !evict(&mut open, Some(host), now) {
            return None;
        }
        if open.len() >= CONNECTIONS && !evict(&mut open, None, now) {
            return None;
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (trusted, cut) = (Arc::new(AtomicBool::new(false)), CancellationToken::new());
        open.push(Open {
            id,
            host,
            since: now,
            trusted: trusted.clone(),
            cut: cut.clone(),
        });
        Some((id, trusted, cut))
    }

    /// Whether `host` may open another connection now ([`NEW_PER_SECOND`]).
    fn within_rate(&self, host: IpAddr, now: Instant) -> bool {
        let mut rates = self.rates.lock_anyway();
        if rates.len() >= RATED && !rates.contains_key(&host) {
            rates.retain(|_, (tokens, at)| {
                *tokens < 2.0 * NEW_PER_SECOND && now.duration_since(*at) < Duration::from_secs(10)
            });
        }
        let (tokens, at) = rates.entry(host).or_insert((2.0 * NEW_PER_SECOND, now));
        *tokens = (*tokens + now.duration_since(*at).as_secs_f64() * NEW_PER_SECOND).min(2.0 * NEW_PER_SECOND);
        *at = now;
        if *tokens < 1.0 {
            return false;
        }
        *tokens -= 1.0;
        true
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

/// Close one untrusted connection to make room: of `host` if given, else of
/// the address holding the most (connections past [`GRACE_TO_SHOW`] first);
/// its oldest. `false` when every connection in the way is trusted.
fn evict(open: &mut Vec<Open>, host: Option<IpAddr>, now: Instant) -> bool {
    let may_go = |c: &Open, settled: bool| {
        !c.trusted.load(Ordering::Acquire)
            && host.is_none_or(|h| c.host == h)
            && (!settled || now.duration_since(c.since) >= GRACE_TO_SHOW)
    };
    for settled in [true, false] {
        let mut held: std::collections::HashMap<IpAddr, usize> = std::collections::HashMap::new();
        for c in open.iter().filter(|c| may_go(c, settled)) {
            *held.entry(c.host).or_default() += 1;
        }
        let Some(most) = held.values().max().copied() else {
            continue;
        };
        // The oldest connection of an address holding the most.
        if let Some(at) = open
            .iter()
            .position(|c| may_go(c, settled) && held.get(&c.host) == Some(&most))
        {
            open.remove(at).cut.cancel();
            return true;
        }
    }
    false
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
        let Some((id, trusted, cut)) = table.admit(host, Instant::now()) else {
            table.turn_away(host);
            continue;
        };
        let _ = tcp.set_nodelay(true);
        let peer = Peer::new(addr, tcp.local_addr().ok());
        let (acceptor, router, watcher, table) = (acceptor.clone(), router.clone(), graceful.watcher(), table.clone());
        connections.spawn(async move {
            let trust = Trust {
                trusted: trusted.clone(),
                cut: cut.clone(),
            };
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
                () = cut.cancelled() => tracing::debug!(peer = %addr, "a phone listener connection was closed (room made, or its device revoked)"),
                () = expiry => tracing::debug!(peer = %addr, "a phone listener connection no paired device used was closed"),
            }
            // Whatever ended it: the watch on its device's revocation ends too.
            cut.cancel();
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
    fn room_is_made_from_the_address_holding_the_most_never_from_a_paired_device() {
        let table = Table::default();
        let t0 = Instant::now();
        let phone: IpAddr = [10, 0, 0, 2].into();
        let (_, trusted, phone_cut) = table.admit(phone, t0).unwrap();
        trusted.store(true, Ordering::Release);
        // One address fills its share: its own oldest goes first.
        let attacker: IpAddr = [10, 0, 0, 9].into();
        let first = table.admit(attacker, t0).unwrap().2;
        for _ in 1..PER_HOST {
            table.admit(attacker, t0).unwrap();
        }
        table.admit(attacker, t0 + GRACE_TO_SHOW).unwrap();
        assert!(first.is_cancelled(), "the address's oldest gave way");
        // Many addresses fill the listener, slowly enough for the rate.
        let mut later = t0 + GRACE_TO_SHOW * 2;
        for n in 0..CONNECTIONS * 2 {
            later += Duration::from_millis(60);
            table.admit([10, 1, (n / 200) as u8, (n % 200) as u8].into(), later);
        }
        assert!(
            !phone_cut.is_cancelled(),
            "a paired device's connection is never the one to go"
        );
        assert_eq!(table.open.lock_anyway().len(), CONNECTIONS);
        // The phone's new connection, young, survives strangers' newcomers for its first seconds.
        let (_, _, young) = table.admit(phone, later).unwrap();
        for n in 0..40u8 {
            table.admit([10, 3, 0, n].into(), later + Duration::from_millis(10));
        }
        assert!(
            !young.is_cancelled(),
            "a young connection is not the one made to give way"
        );
        // Every connection a paired device's: a stranger is turned away.
        let full = Table::default();
        for n in 0..CONNECTIONS {
            full.admit([10, 2, (n / 200) as u8, (n % 200) as u8].into(), t0)
                .unwrap()
                .1
                .store(true, Ordering::Release);
        }
        assert!(full.admit(attacker, t0).is_none());
    }

    #[test]
    fn an_address_opens_at_most_its_rate() {
        let table = Table::default();
        let t0 = Instant::now();
        let host: IpAddr = [10, 0, 0, 9].into();
        let admitted = (0..100).filter(|_| table.within_rate(host, t0)).count();
        assert_eq!(admitted, (2.0 * NEW_PER_SECOND) as usize, "a burst of twice the rate");
        assert!(!table.within_rate(host, t0));
        assert!(
            table.within_rate(host, t0 + Duration::from_millis(100)),
            "refilled as time passes"
        );
        assert!(
            table.within_rate([10, 0, 0, 10].into(), t0),
            "another address has its own"
        );
    }
}
