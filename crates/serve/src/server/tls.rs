//! The phone listener's accept loop (`crate::phone`): TLS first (a bounded
//! handshake), then HTTP/1.1 with the peer's address and the connection's
//! trust on each request for the listener's gate.
//!
//! Whoever is on the network can connect, so what strangers open must not
//! keep a paired phone out: a connection is *trusted* once a request on it
//! carried a paired device's credential (the gate says so; a revoked
//! device's connections are closed), and an address holding a trusted
//! connection is a *phone's* while it does. An untrusted connection lives
//! at most [`UNTRUSTED_LIFE`] whatever it does (slow bodies, unread answers,
//! silence). One address holds at most [`PER_HOST`] untrusted connections
//! and opens at most [`NEW_PER_SECOND`] a second, all strangers together
//! [`ALL_NEW_PER_SECOND`] (what bounds the handshakes a flood costs; a
//! phone's address is not rated). An address at its share makes room from
//! its own past their first seconds — from its own young ones too when it
//! is a phone's (who shares its address cannot be told from it, so the
//! oldest goes). When the listener is full, a newcomer takes the place of an
//! untrusted connection past its first [`GRACE_TO_SHOW`] (time to show a
//! credential), of the stranger's address holding the most, its oldest; a
//! phone's newcomer may also take a young stranger's place; otherwise the
//! newcomer is turned away — a young connection never gives way to a
//! stranger, and a trusted one never does. An address stays a phone's for
//! [`RECENT_PHONE`] after its paired device's connection ended by itself,
//! so a phone back from sleep is let in as one. What is left: a flood of
//! more than [`ALL_NEW_PER_SECOND`] new connections keeps out a phone never
//! seen in those ten minutes while it lasts; and whoever shares a phone's
//! address (one router, or a spoofed address) cannot be told from it, so a
//! flood from there competes with the phone's new connections.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
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
use crate::phone::Known;
use crate::said::Said;
use crate::sync::MutexExt as _;

/// How long a connection may take over its TLS handshake.
const HANDSHAKE_WITHIN: Duration = Duration::from_secs(10);
/// How long a connection may take to send a request's headers (and so sit idle).
const HEADERS_WITHIN: Duration = Duration::from_secs(30);
/// What a connection may have read and not yet handled: a request's head
/// (a phone's are well under 8 KiB), so 256 strangers' unfinished ones hold
/// a few MiB, not hyper's default of ~400 KiB each.
const READ_BUFFER: usize = 32 * 1024;
/// How long a connection no paired device has used may live, whatever it does.
pub const UNTRUSTED_LIFE: Duration = Duration::from_secs(60);
/// Connections open at once: a phone needs a handful (the page, its stream).
const CONNECTIONS: usize = 256;
/// New connections a browser opens to one host at once (HTTP/1.1): a
/// phone's address holding no more young ones than this is its page's.
const BROWSER_CONNECTIONS: usize = 6;
/// Untrusted connections one address may hold at once.
const PER_HOST: usize = 16;
/// New connections one address may open a second (and in a burst, twice that).
const NEW_PER_SECOND: f64 = 20.0;
/// New connections all strangers together may open a second (and in a
/// burst, twice that): what bounds the handshakes a flood makes us do.
const ALL_NEW_PER_SECOND: f64 = 200.0;
/// A connection this young never gives way to a stranger's: time for a
/// phone on a slow network to finish its handshake and show its credential.
const GRACE_TO_SHOW: Duration = Duration::from_secs(4);
/// Addresses rated each on its own; past this, new ones share one allowance.
const RATED: usize = 4096;
/// How often the rated addresses are swept for those worth forgetting.
const SWEEP_EVERY: Duration = Duration::from_secs(1);
/// How long an address stays a phone's after its paired device's last
/// connection ended by itself (the phone slept, its connections idled out).
const RECENT_PHONE: Duration = Duration::from_secs(600);
/// Addresses remembered as a phone's lately (a person has a few phones).
const RECENT_PHONES: usize = 64;
/// Addresses remembered for one device (a phone moves between a few networks).
const RECENT_PER_DEVICE: usize = 4;
/// How long stopping waits for open requests.
const GRACE: Duration = Duration::from_secs(2);

/// One open connection, as the table knows it.
struct Open {
    id: u64,
    host: IpAddr,
    since: Instant,
    trusted: Arc<AtomicBool>,
    cut: CancellationToken,
    /// The paired device it is (known once trusted).
    device: Arc<OnceLock<Known>>,
}

impl Open {
    fn trusted(&self) -> bool {
        self.trusted.load(Ordering::Acquire)
    }
}

/// A connection let in: its id in the table, its trust (set by the gate),
/// how to close it, and the device it turns out to be (set by the gate).
#[derive(Debug)]
struct Admitted {
    id: u64,
    trusted: Arc<AtomicBool>,
    cut: CancellationToken,
    device: Arc<OnceLock<Known>>,
}

/// Why a connection was turned away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refused {
    /// Its address opened more than its rate.
    Rate,
    /// Its address holds its share, every one too young to give way.
    HostFull,
    /// The listener is full: of paired devices' connections and young ones.
    Full,
}

/// What may give way to a newcomer.
#[derive(Debug, Clone, Copy)]
enum Room {
    /// An untrusted connection of this address, past its first seconds; a
    /// young one too when the address is a phone's (who shares it with the
    /// phone cannot be told apart from it: first come, first to go).
    OfHost { host: IpAddr, phone: bool },
    /// Anyone's untrusted connection past its first seconds; for a phone's
    /// newcomer (from `from`) a young one too — never of its own address,
    /// nor of another phone's holding no more young ones than a browser opens.
    Anywhere { for_phone: bool, from: IpAddr },
}

/// A token bucket: `rate` a second, bursts of twice that.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    /// One address's burst.
    const BURST: f64 = 2.0 * NEW_PER_SECOND;

    fn full(now: Instant, rate: f64) -> Bucket {
        Bucket {
            tokens: 2.0 * rate,
            at: now,
        }
    }

    fn fill(&mut self, now: Instant, rate: f64) {
        self.tokens = (self.tokens + now.duration_since(self.at).as_secs_f64() * rate).min(2.0 * rate);
        self.at = now;
    }

    fn take(&mut self, now: Instant, rate: f64) -> bool {
        self.fill(now, rate);
        if self.tokens < 1.0 {
            return false;
        }
        self.tokens -= 1.0;
        true
    }
}

/// Each address's allowance of new connections, bounded: past [`RATED`]
/// addresses a new one shares one allowance with every other unrated one,
/// and a sweep (at most every [`SWEEP_EVERY`]) forgets the full ones (a new
/// bucket starts full: forgetting it gives nothing away).
#[derive(Debug, Default)]
struct Rates {
    by_host: HashMap<IpAddr, Bucket>,
    overflow: Option<Bucket>,
    /// Every stranger's together ([`ALL_NEW_PER_SECOND`]).
    all: Option<Bucket>,
    swept: Option<Instant>,
}

impl Rates {
    /// Whether `host` may open another connection now: within its own
    /// allowance and everyone's.
    fn take(&mut self, host: IpAddr, now: Instant) -> bool {
        self.take_own(host, now)
            && self
                .all
                .get_or_insert_with(|| Bucket::full(now, ALL_NEW_PER_SECOND))
                .take(now, ALL_NEW_PER_SECOND)
    }

    fn take_own(&mut self, host: IpAddr, now: Instant) -> bool {
        if self.by_host.len() >= RATED
            && !self.by_host.contains_key(&host)
            && self.swept.is_none_or(|at| now.duration_since(at) >= SWEEP_EVERY)
        {
            self.swept = Some(now);
            self.by_host.retain(|_, bucket| {
                bucket.fill(now, NEW_PER_SECOND);
                bucket.tokens < Bucket::BURST
            });
        }
        let bucket = if self.by_host.len() < RATED || self.by_host.contains_key(&host) {
            self.by_host
                .entry(host)
                .or_insert_with(|| Bucket::full(now, NEW_PER_SECOND))
        } else {
            self.overflow.get_or_insert_with(|| Bucket::full(now, NEW_PER_SECOND))
        };
        bucket.take(now, NEW_PER_SECOND)
    }
}

/// The open connections, oldest first.
#[derive(Default)]
struct Table {
    open: Mutex<Vec<Open>>,
    rates: Mutex<Rates>,
    next: AtomicU64,
    said_rate: Said,
    said_host: Said,
    said_full: Said,
    /// Addresses whose paired device's connection ended by itself lately:
    /// when, and which device.
    recent: Mutex<HashMap<IpAddr, (Instant, Known)>>,
}

impl Table {
    /// Make room for a connection from `host` and register it; why not, when
    /// nothing may give way (see the module's header).
    fn admit(&self, host: IpAddr, now: Instant) -> Result<Admitted, Refused> {
        let mut open = self.open.lock_anyway();
        let phone = self.is_phone(&open, host, now);
        if !phone && !self.rates.lock_anyway().take(host, now) {
            return Err(Refused::Rate);
        }
        let of_host = open.iter().filter(|c| c.host == host && !c.trusted()).count();
        if of_host >= PER_HOST && !evict(&mut open, Room::OfHost { host, phone }, now) {
            return Err(Refused::HostFull);
        }
        if open.len() >= CONNECTIONS
            && !evict(
                &mut open,
                Room::Anywhere {
                    for_phone: phone,
                    from: host,
                },
                now,
            )
        {
            return Err(Refused::Full);
        }
        let admitted = Admitted {
            id: self.next.fetch_add(1, Ordering::Relaxed),
            trusted: Arc::new(AtomicBool::new(false)),
            cut: CancellationToken::new(),
            device: Arc::new(OnceLock::new()),
        };
        open.push(Open {
            id: admitted.id,
            host,
            since: now,
            trusted: admitted.trusted.clone(),
            cut: admitted.cut.clone(),
            device: admitted.device.clone(),
        });
        Ok(admitted)
    }

    /// Connection `id` ended (`by_itself`: not closed by us). A paired
    /// device's that ended by itself, its device not revoked, leaves its
    /// address a phone's for [`RECENT_PHONE`] (a phone back from sleep finds
    /// its place) — at most [`RECENT_PER_DEVICE`] addresses a device, each
    /// forgotten when its device is revoked.
    fn closed(&self, id: u64, by_itself: bool, now: Instant) {
        let mut open = self.open.lock_anyway();
        let Some(at) = open.iter().position(|c| c.id == id) else {
            return;
        };
        let gone = open.remove(at);
        drop(open);
        let Some(device) = gone
            .device
            .get()
            .filter(|d| by_itself && gone.trusted() && !d.revoked.is_cancelled())
        else {
            return;
        };
        let mut recent = self.recent.lock_anyway();
        recent.retain(|_, (at, d)| now.duration_since(*at) < RECENT_PHONE && !d.revoked.is_cancelled());
        recent.remove(&gone.host);
        let mine: Vec<(IpAddr, Instant)> = recent
            .iter()
            .filter(|(_, (_, d))| d.id == device.id)
            .map(|(host, (at, _))| (*host, *at))
            .collect();
        if mine.len() >= RECENT_PER_DEVICE {
            if let Some((oldest, _)) = mine.iter().min_by_key(|(_, at)| *at) {
                recent.remove(oldest);
            }
        }
        if recent.len() < RECENT_PHONES {
            recent.insert(gone.host, (now, device.clone()));
        }
    }

    /// Whether `host` holds a paired device's connection, or held one that
    /// ended by itself within [`RECENT_PHONE`] (its device not revoked since).
    fn is_phone(&self, open: &[Open], host: IpAddr, now: Instant) -> bool {
        open.iter().any(|c| c.host == host && c.trusted())
            || self
                .recent
                .lock_anyway()
                .get(&host)
                .is_some_and(|(at, d)| now.duration_since(*at) < RECENT_PHONE && !d.revoked.is_cancelled())
    }

    /// Say (within [`Said`]'s bounds) that a connection from `host` was turned away, and why.
    fn turn_away(&self, host: IpAddr, why: Refused) {
        let (said, words) = match why {
            Refused::Rate => (
                &self.said_rate,
                "an address opened connections faster than its rate; turned one away",
            ),
            Refused::HostFull => (
                &self.said_host,
                "an address holds all the connections it may, none old enough to give way; turned one away",
            ),
            Refused::Full => (
                &self.said_full,
                "the phone listener is full of paired devices' and new connections; turned one away",
            ),
        };
        if let Some(t) = said.count(host) {
            tracing::warn!(%host, turned_away = t.total, unsaid = t.unsaid, "{words}");
        }
    }
}

/// Close one untrusted connection to make `room` (see [`Room`]): of the
/// address holding the most of those that may go, its oldest; connections
/// past [`GRACE_TO_SHOW`] first. `false` when none may go.
fn evict(open: &mut Vec<Open>, room: Room, now: Instant) -> bool {
    // Each phone's address's young untrusted connections (its page opening some at once).
    let phones: Vec<IpAddr> = open.iter().filter(|c| c.trusted()).map(|c| c.host).collect();
    let mut young_of_phone: HashMap<IpAddr, usize> = HashMap::new();
    for c in open.iter().filter(|c| !c.trusted() && phones.contains(&c.host)) {
        if now.duration_since(c.since) < GRACE_TO_SHOW {
            *young_of_phone.entry(c.host).or_default() += 1;
        }
    }
    let may_go = |c: &Open, young_too: bool| {
        let old = now.duration_since(c.since) >= GRACE_TO_SHOW;
        !c.trusted()
            && match room {
                Room::OfHost { host, phone } => c.host == host && (old || (young_too && phone)),
                // Old enough: anyone's untrusted connection, a phone's address's too; young: for a
                // phone's newcomer, a stranger's, or those of a phone's address holding more than a
                // browser opens at once (one cookie on many addresses, reopening as fast as they go,
                // holds no place a phone cannot take) — never its own address's (a page's burst).
                Room::Anywhere { for_phone, from } => {
                    old || (young_too
                        && for_phone
                        && c.host != from
                        && young_of_phone.get(&c.host).is_none_or(|n| *n > BROWSER_CONNECTIONS))
                }
            }
    };
    for young_too in [false, true] {
        let mut held: HashMap<IpAddr, usize> = HashMap::new();
        for c in open.iter().filter(|c| may_go(c, young_too)) {
            *held.entry(c.host).or_default() += 1;
        }
        let Some(most) = held.values().max().copied() else {
            continue;
        };
        if let Some(at) = open
            .iter()
            .position(|c| may_go(c, young_too) && held.get(&c.host) == Some(&most))
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
    while let Some((tcp, addr)) = super::next_connection(&listener, &mut connections, &stop, "phone").await {
        let host = addr.ip().to_canonical();
        let Admitted {
            id,
            trusted,
            cut,
            device,
        } = match table.admit(host, Instant::now()) {
            Ok(admitted) => admitted,
            Err(why) => {
                table.turn_away(host, why);
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let peer = Peer::new(addr, tcp.local_addr().ok());
        let (acceptor, router, watcher, table) = (acceptor.clone(), router.clone(), graceful.watcher(), table.clone());
        connections.spawn(async move {
            let trust = Trust {
                trusted: trusted.clone(),
                cut: cut.clone(),
                device,
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
                http.timer(TokioTimer::new())
                    .header_read_timeout(HEADERS_WITHIN)
                    .max_buf_size(READ_BUFFER);
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
            let by_itself = tokio::select! {
                () = served => true,
                () = cut.cancelled() => {
                    tracing::debug!(peer = %addr, "a phone listener connection was closed (room made, its device revoked or over its share)");
                    false
                }
                () = expiry => {
                    tracing::debug!(peer = %addr, "a phone listener connection no paired device used was closed");
                    false
                }
            };
            // Whatever ended it: the watch on its device's revocation ends too.
            cut.cancel();
            table.closed(id, by_itself, Instant::now());
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(GRACE, graceful.shutdown()).await;
    connections.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(a: u8, b: u8, c: u8) -> IpAddr {
        [10, a, b, c].into()
    }

    /// A stranger's connections from `n` addresses of `10.a.*.*`, slowly
    /// enough for the rate, from `at`; returns when the last came.
    fn crowd(table: &Table, a: u8, n: usize, mut at: Instant, step: Duration) -> Instant {
        for i in 0..n {
            at += step;
            let _ = table.admit(addr(a, (i / 200) as u8, (i % 200) as u8), at);
        }
        at
    }

    #[test]
    fn room_is_made_from_the_address_holding_the_most_never_from_a_paired_device() {
        let table = Table::default();
        let t0 = Instant::now();
        let phone = addr(0, 0, 2);
        let Admitted {
            trusted,
            cut: phone_cut,
            ..
        } = table.admit(phone, t0).unwrap();
        trusted.store(true, Ordering::Release);
        // One address fills its share: its own oldest goes first, once old enough.
        let attacker = addr(0, 0, 9);
        let first = table.admit(attacker, t0).unwrap().cut;
        for _ in 1..PER_HOST {
            table.admit(attacker, t0).unwrap();
        }
        assert_eq!(
            table.admit(attacker, t0).unwrap_err(),
            Refused::HostFull,
            "none of its own old enough to give way"
        );
        table.admit(attacker, t0 + GRACE_TO_SHOW).unwrap();
        assert!(first.is_cancelled(), "the address's oldest gave way");
        // Many addresses fill the listener, slowly enough for the rate.
        let later = crowd(&table, 1, CONNECTIONS * 2, t0 + GRACE_TO_SHOW * 2, GRACE_TO_SHOW / 64);
        assert!(
            !phone_cut.is_cancelled(),
            "a paired device's connection is never the one to go"
        );
        assert_eq!(table.open.lock_anyway().len(), CONNECTIONS);
        // Every connection a paired device's: a stranger is turned away.
        let full = Table::default();
        for n in 0..CONNECTIONS {
            full.admit(addr(2, (n / 200) as u8, (n % 200) as u8), t0)
                .unwrap()
                .trusted
                .store(true, Ordering::Release);
        }
        assert_eq!(full.admit(attacker, later).unwrap_err(), Refused::Full);
    }

    #[test]
    fn a_young_connection_never_gives_way_to_a_stranger_however_many_addresses_churn() {
        let table = Table::default();
        let t0 = Instant::now();
        // The listener full of strangers' connections, all old enough to go.
        let mut now = crowd(&table, 1, CONNECTIONS, t0, Duration::from_millis(1)) + GRACE_TO_SHOW;
        // A phone waking from sleep: no connection open, a stranger like any other, and slow.
        let phone = addr(0, 0, 2);
        let slow = table.admit(phone, now).unwrap().cut;
        // Strangers from ever new addresses churn through every old connection and on.
        // (200 a second: everyone's allowance.)
        let mut refused = 0;
        for i in 0..700 {
            now += Duration::from_millis(5);
            match table.admit(addr(3, (i / 200) as u8, (i % 200) as u8), now) {
                Ok(_) => {}
                Err(why) => {
                    assert_eq!(why, Refused::Full);
                    refused += 1;
                }
            }
        }
        assert!(now.duration_since(t0) < GRACE_TO_SHOW * 2);
        assert!(!slow.is_cancelled(), "the phone's young connection stayed");
        assert_eq!(
            refused,
            700 - (CONNECTIONS - 1),
            "past the old ones, newcomers were turned away"
        );
        // Its credential shown, the phone's address is a phone's: its next
        // connection takes a young stranger's place.
        table
            .open
            .lock_anyway()
            .iter()
            .find(|c| c.host == phone)
            .unwrap()
            .trusted
            .store(true, Ordering::Release);
        let next = table.admit(phone, now).unwrap().cut;
        assert!(!next.is_cancelled());
        assert_eq!(table.open.lock_anyway().len(), CONNECTIONS);
    }

    #[test]
    fn an_address_holding_a_paired_device_is_not_rated_nor_crowded_by_it() {
        let table = Table::default();
        let t0 = Instant::now();
        let shared = addr(0, 0, 7); // a phone and a stranger behind one router
        for _ in 0..PER_HOST {
            table.admit(shared, t0).unwrap();
        }
        assert_eq!(table.admit(shared, t0).unwrap_err(), Refused::HostFull);
        for c in table.open.lock_anyway().iter() {
            c.trusted.store(true, Ordering::Release);
        }
        // Its allowance spent, as a stranger sharing it can: a phone's address is not rated,
        // and its paired connections do not count against its share.
        while table.rates.lock_anyway().take(shared, t0) {}
        let mut held = Vec::new();
        for _ in 0..PER_HOST {
            held.push(table.admit(shared, t0).unwrap().cut);
        }
        assert_eq!(table.open.lock_anyway().len(), 2 * PER_HOST);
        // Its share held by young connections (a neighbour's, say): the oldest gives way to a
        // newcomer, who may be the phone — first come, first to go.
        table.admit(shared, t0).unwrap();
        assert!(held[0].is_cancelled() && !held[1].is_cancelled());
        assert_eq!(table.open.lock_anyway().len(), 2 * PER_HOST);
        // A stranger's address with its allowance spent is turned away for it.
        let stranger = addr(0, 0, 8);
        while table.rates.lock_anyway().take(stranger, t0) {}
        assert_eq!(table.admit(stranger, t0).unwrap_err(), Refused::Rate);
    }

    #[test]
    fn an_address_opens_at_most_its_rate() {
        let mut rates = Rates::default();
        let t0 = Instant::now();
        let host = addr(0, 0, 9);
        let admitted = (0..100).filter(|_| rates.take(host, t0)).count();
        assert_eq!(admitted, Bucket::BURST as usize, "a burst of twice the rate");
        assert!(!rates.take(host, t0));
        assert!(
            rates.take(host, t0 + Duration::from_millis(100)),
            "refilled as time passes"
        );
        assert!(rates.take(addr(0, 0, 10), t0), "another address has its own");
    }

    #[test]
    fn rated_addresses_are_bounded_past_which_new_ones_share_one_allowance() {
        let mut rates = Rates::default();
        let t0 = Instant::now();
        // More busy addresses than are rated, each having spent some of its burst.
        for i in 0..RATED + 10 {
            let host = addr(4, (i / 250) as u8, (i % 250) as u8);
            assert!(rates.take_own(host, t0));
        }
        assert_eq!(rates.by_host.len(), RATED, "no more remembered than the bound");
        // Two newcomers past the bound share what is left of one allowance.
        let (a, b) = (addr(5, 0, 1), addr(5, 0, 2));
        let spent = 10 + (0..100).filter(|_| rates.take_own(a, t0)).count();
        assert_eq!(spent, Bucket::BURST as usize);
        assert!(!rates.take_own(b, t0), "the other unrated address shares it");
        // Once the rated ones are full again, a sweep forgets them and a newcomer has its own.
        let later = t0 + Duration::from_secs(10);
        assert!(rates.take_own(b, later));
        assert_eq!(rates.by_host.len(), 1);
    }

    #[test]
    fn strangers_together_open_at_most_everyones_rate() {
        let mut rates = Rates::default();
        let t0 = Instant::now();
        // A thousand addresses, each well within its own rate, all in one second.
        let admitted = (0..1000u32)
            .filter(|&i| {
                rates.take(
                    addr(6, (i / 250) as u8, (i % 250) as u8),
                    t0 + Duration::from_millis(u64::from(i)),
                )
            })
            .count();
        let most = 2.0 * ALL_NEW_PER_SECOND + ALL_NEW_PER_SECOND;
        assert!(admitted <= most as usize, "{admitted} handshakes begun in a second");
        assert!(admitted >= (2.0 * ALL_NEW_PER_SECOND) as usize);
    }

    #[test]
    fn one_device_on_many_addresses_holds_no_place_past_its_first_seconds() {
        let table = Table::default();
        let t0 = Instant::now();
        // A stolen cookie on 16 addresses: a stream each, and 15 silent connections each.
        for a in 0..16u8 {
            let trusted = table.admit(addr(7, 0, a), t0).unwrap().trusted;
            trusted.store(true, Ordering::Release);
            for _ in 0..PER_HOST - 1 {
                table.admit(addr(7, 0, a), t0).unwrap();
            }
        }
        assert_eq!(table.open.lock_anyway().len(), CONNECTIONS);
        // Past their first seconds, those silent connections give way to anyone's newcomer.
        let later = t0 + GRACE_TO_SHOW;
        table.admit(addr(0, 0, 2), later).unwrap();
        let open = table.open.lock_anyway();
        assert_eq!(open.len(), CONNECTIONS);
        assert_eq!(open.iter().filter(|c| c.trusted()).count(), 16, "the streams stay");
    }

    #[test]
    fn a_phone_back_from_sleep_is_still_a_phone_for_a_while() {
        // Everyone's allowance spent by a flood at `now`.
        let flood = |table: &Table, now: Instant, from: u8| {
            for i in 0..20 {
                while table.rates.lock_anyway().take(addr(8, from, i), now) {}
            }
        };
        let device = |id: &str| Known {
            id: id.into(),
            revoked: CancellationToken::new(),
        };
        // A connection the gate found a paired device on.
        let connect = |table: &Table, host: IpAddr, now: Instant, known: &Known| {
            let a = table.admit(host, now).unwrap();
            a.trusted.store(true, Ordering::Release);
            let _ = a.device.set(known.clone());
            a.id
        };
        let table = Table::default();
        let t0 = Instant::now();
        let (phone, mine) = (addr(0, 0, 2), device("mine"));
        let id = connect(&table, phone, t0, &mine);
        flood(&table, t0, 0);
        // Its connection idles out (ended by itself): its address is still a phone's.
        table.closed(id, true, t0);
        assert!(table.admit(phone, t0).is_ok(), "let in past the strangers' budget");
        assert_eq!(table.admit(addr(8, 9, 9), t0).unwrap_err(), Refused::Rate);
        // Its device revoked: forgotten at once.
        mine.revoked.cancel();
        assert_eq!(table.admit(phone, t0).unwrap_err(), Refused::Rate);
        // Not once the while is over, nor after a connection we closed.
        let (later, other) = (t0 + RECENT_PHONE, device("other"));
        let id = connect(&table, addr(0, 0, 3), later, &other);
        table.closed(id, true, later);
        flood(&table, later + RECENT_PHONE, 1);
        assert_eq!(
            table.admit(addr(0, 0, 3), later + RECENT_PHONE).unwrap_err(),
            Refused::Rate
        );
        let last = later + RECENT_PHONE * 2;
        let id = connect(&table, addr(0, 0, 4), last, &other);
        table.closed(id, false, last);
        flood(&table, last, 2);
        assert_eq!(table.admit(addr(0, 0, 4), last).unwrap_err(), Refused::Rate);
        // One device is remembered on a few addresses only.
        let (t3, thief) = (last + RECENT_PHONE, device("thief"));
        for n in 0..10u8 {
            let at = t3 + Duration::from_millis(u64::from(n) * 100);
            let id = connect(&table, addr(9, 0, n), at, &thief);
            table.closed(id, true, at);
        }
        let recent = table.recent.lock_anyway();
        assert_eq!(recent.len(), RECENT_PER_DEVICE);
        assert!(recent.contains_key(&addr(9, 0, 9)), "its latest kept");
    }

    #[test]
    fn a_phones_page_opening_several_at_once_does_not_close_its_own() {
        let table = Table::default();
        let t0 = Instant::now();
        let phone = addr(0, 0, 2);
        table.admit(phone, t0).unwrap().trusted.store(true, Ordering::Release);
        // The listener full of strangers' young connections, one an address.
        crowd(&table, 1, CONNECTIONS - 1, t0, Duration::from_millis(1));
        let now = t0 + Duration::from_secs(1);
        // The phone's page opens six at once: each takes a stranger's place, none another's of its own.
        let six: Vec<CancellationToken> = (0..BROWSER_CONNECTIONS)
            .map(|_| table.admit(phone, now).unwrap().cut)
            .collect();
        assert!(six.iter().all(|c| !c.is_cancelled()), "the page's connections all stay");
        assert_eq!(table.open.lock_anyway().len(), CONNECTIONS);
    }
}
