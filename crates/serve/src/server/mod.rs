//! Binding and serving: port fallback with an actionable message, the
//! account check as each connection is accepted, a bound on idle
//! connections, graceful shutdown that cannot hang on open streams; and the
//! phone listener's TLS accept loop (`tls.rs`).

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::connect_info::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

mod tls;

pub use tls::serve_tls;

use crate::http::{Admission, Guard, Peer};
use crate::written::Watched;
use crate::{Error, Result};

/// How many ports after the configured one to try when it is taken.
pub const PORT_FALLBACK_TRIES: u16 = 20;
/// How long shutdown waits for open requests before dropping them.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Bind `host:port`; if the port is taken and `fallback` is on, the next free
/// one. Returns the listener and, after a fallback, the port that was taken.
pub async fn bind(host: IpAddr, port: u16, fallback: bool) -> Result<(TcpListener, Option<u16>)> {
    let first = TcpListener::bind(SocketAddr::new(host, port)).await;
    let err = match first {
        Ok(l) => return Ok((l, None)),
        Err(e) => e,
    };
    if err.kind() != std::io::ErrorKind::AddrInUse || !fallback || port == 0 {
        return Err(Error::Startup(bind_message(host, port, &err)));
    }
    for candidate in (port.saturating_add(1)..=port.saturating_add(PORT_FALLBACK_TRIES)).filter(|p| *p != port) {
        if let Ok(l) = TcpListener::bind(SocketAddr::new(host, candidate)).await {
            tracing::warn!(
                taken = port,
                serving = candidate,
                "port {port} is in use; serving on {candidate} — update your agent's MCP URL to http://{}:{candidate}{}",
                url_host(host),
                crate::model::MCP_PATH
            );
            return Ok((l, Some(port)));
        }
    }
    Err(Error::Startup(format!(
        "ports {port}–{} on {host} are all in use: free one, or choose another with --port (LOCAL_MCP_PORT)",
        port.saturating_add(PORT_FALLBACK_TRIES)
    )))
}

fn bind_message(host: IpAddr, port: u16, err: &std::io::Error) -> String {
    match err.kind() {
        std::io::ErrorKind::AddrInUse => {
            format!("port {port} on {host} is already in use (another local-mcp?): stop it, or choose another port with --port (LOCAL_MCP_PORT)")
        }
        std::io::ErrorKind::PermissionDenied => {
            format!("not allowed to bind {host}:{port}: choose a port above 1023 with --port (LOCAL_MCP_PORT)")
        }
        _ => format!("cannot bind {host}:{port}: {err}"),
    }
}

/// How a host is written in a URL.
pub fn url_host(host: IpAddr) -> String {
    match host {
        IpAddr::V6(a) if a.is_unspecified() => "[::1]".into(),
        IpAddr::V6(a) => format!("[{a}]"),
        IpAddr::V4(a) if a.is_unspecified() => "127.0.0.1".into(),
        IpAddr::V4(a) => a.to_string(),
    }
}

/// How long a connection may take to send a request's headers, and so how
/// long a kept-alive connection may sit idle between requests. Long enough
/// for any client's pause between calls on a pooled connection (a call's
/// wait is a response in progress, which this does not bound).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(60);
/// The same for another account's connection (let in only by the token):
/// it has a few seconds to say who it is.
const OTHER_ACCOUNT_HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// At most this many of other accounts' connections at once: they cannot
/// use up the descriptors this account's page and agents need.
const OTHER_ACCOUNT_CONNECTIONS: usize = 32;

/// The next connection `listener` accepts, finished connection tasks reaped
/// meanwhile; `None` once `stop` is cancelled. A failed accept (out of
/// descriptors, EMFILE, and the like) passes: wait a little, go on. `name`
/// says which listener in the log.
async fn next_connection(
    listener: &TcpListener,
    connections: &mut tokio::task::JoinSet<()>,
    stop: &CancellationToken,
    name: &'static str,
) -> Option<(tokio::net::TcpStream, std::net::SocketAddr)> {
    loop {
        tokio::select! {
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok(pair) => return Some(pair),
                Err(e) => {
                    tracing::warn!(error = %e, listener = name, "could not accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            () = stop.cancelled() => return None,
        }
    }
}

/// Serve until `shutdown` is cancelled, then give open requests a short grace.
///
/// Each accepted connection gets `TCP_NODELAY` (MCP answers are SSE: several
/// small writes per call, and Nagle's algorithm meeting the client's delayed
/// ACK would stall every call ~40 ms) and its [`Peer`], whose account is
/// looked up at once: a connection the guard refuses ([`Guard::admit`]) is
/// closed before it can hold anything, and every connection has a bound on
/// the time it may send nothing ([`HEADER_TIMEOUT`]). `accepted` counts
/// the connections accepted (the engine gives memory back after bursts).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    guard: Arc<Guard>,
    accepted: Arc<AtomicU64>,
    shutdown: CancellationToken,
) {
    let graceful = GracefulShutdown::new();
    let others = Arc::new(AtomicUsize::new(0));
    // Every connection's task, so that those still open when the grace ends
    // are ended here, before the engine settles what they carried.
    let mut connections = tokio::task::JoinSet::new();
    while let Some((tcp, addr)) = next_connection(&listener, &mut connections, &shutdown, "loopback").await {
        accepted.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY");
        }
        let peer = Peer::new(addr, tcp.local_addr().ok());
        let (router, guard, others, watcher) = (router.clone(), guard.clone(), others.clone(), graceful.watcher());
        connections.spawn(async move {
            let mut counted = None;
            let header_timeout = match guard.admit(&peer).await {
                Admission::Ours => HEADER_TIMEOUT,
                Admission::Refused(why) => {
                    tracing::warn!(peer = %peer.addr, "refused a local connection: {why}");
                    refuse(tcp).await;
                    return;
                }
                Admission::OtherAccount(why) => {
                    let slot = OtherConnection::take(others);
                    let Some(slot) = slot else {
                        tracing::warn!(peer = %peer.addr, "closed a local connection ({why}): too many from other accounts");
                        return;
                    };
                    counted = Some(slot);
                    OTHER_ACCOUNT_HEADER_TIMEOUT
                }
            };
            // Tells a response when hyper's buffer has reached the kernel (`crate::written`).
            let (tcp, written) = Watched::new(tcp);
            let service = TowerToHyperService::new(router.map_request(move |req: axum::http::Request<Incoming>| {
                let mut req = req.map(axum::body::Body::new);
                req.extensions_mut().insert(ConnectInfo(peer.clone()));
                req.extensions_mut().insert(written.clone());
                req
            }));
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(TokioTimer::new()).header_read_timeout(header_timeout);
            let connection = http.serve_connection(TokioIo::new(tcp), service);
            if let Err(e) = watcher.watch(connection).await {
                tracing::debug!(error = %e, "a connection ended with an error");
            }
            drop(counted);
        });
    }
    drop(listener);
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown()).await.is_err() {
        tracing::warn!("open connections did not close within {SHUTDOWN_GRACE:?}; dropping them");
    }
    // Dropping them drops their responses: an answer not written by now is in doubt.
    connections.shutdown().await;
}

/// Answer a refused connection without reading its request: a short 403
/// that says why, then close. The read side is drained (briefly, boundedly)
/// so the close does not reset the connection before the client has read it.
async fn refuse(mut tcp: tokio::net::TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    const BODY: &str = r#"{"error":{"code":"forbidden","message":"this local-mcp belongs to another account on this machine; send its API token to use it"}}"#;
    let answer = format!(
        "HTTP/1.1 403 Forbidden\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{BODY}",
        BODY.len()
    );
    let said = async {
        tcp.write_all(answer.as_bytes()).await?;
        tcp.shutdown().await?;
        // On the heap: an array here would be laid out in every
        // connection's task, refused or not, for the connection's life.
        let mut sink = vec![0u8; 4096];
        let mut left: usize = 64 * 1024;
        while left > 0 {
            let n = tcp.read(&mut sink).await?;
            if n == 0 {
                break;
            }
            left = left.saturating_sub(n);
        }
        Ok::<(), std::io::Error>(())
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), said).await;
}

/// One of other accounts' connections, counted while it lives.
struct OtherConnection(Arc<AtomicUsize>);

impl OtherConnection {
    fn take(count: Arc<AtomicUsize>) -> Option<OtherConnection> {
        let before = count.fetch_add(1, Ordering::AcqRel);
        let slot = OtherConnection(count);
        (before < OTHER_ACCOUNT_CONNECTIONS).then_some(slot)
    }
}

impl Drop for OtherConnection {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}
