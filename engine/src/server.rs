//! Binding and serving: port fallback with an actionable message, graceful
//! shutdown that cannot hang on open streams.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use axum::Router;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use crate::http::Peer;
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
                "port {port} is in use; serving on {candidate} — update your agent's MCP URL to http://{}:{candidate}/mcp",
                url_host(host)
            );
            return Ok((l, Some(port)));
        }
    }
    Err(Error::Startup(format!(
        "ports {port}–{} on {host} are all in use; free one or set HTTP_PORT",
        port.saturating_add(PORT_FALLBACK_TRIES)
    )))
}

fn bind_message(host: IpAddr, port: u16, err: &std::io::Error) -> String {
    match err.kind() {
        std::io::ErrorKind::AddrInUse => {
            format!("port {port} on {host} is already in use (another local-mcp?); stop it or set HTTP_PORT")
        }
        std::io::ErrorKind::PermissionDenied => {
            format!("not allowed to bind {host}:{port}; choose a port above 1023 with HTTP_PORT")
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

/// The listener: accepted connections get `TCP_NODELAY`, and each carries
/// its [`Peer`] (address, our end) into the requests made on it.
struct Accepting(TcpListener);

impl Listener for Accepting {
    type Io = TcpStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (TcpStream, SocketAddr) {
        let (tcp, addr) = Listener::accept(&mut self.0).await;
        // MCP answers are SSE: several small writes per call. Without TCP_NODELAY,
        // Nagle's algorithm meets the client's delayed ACK and every call stalls ~40 ms.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY");
        }
        (tcp, addr)
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.0.local_addr()
    }
}

impl Connected<IncomingStream<'_, Accepting>> for Peer {
    fn connect_info(stream: IncomingStream<'_, Accepting>) -> Peer {
        Peer::new(*stream.remote_addr(), stream.io().local_addr().ok())
    }
}

/// Serve until `shutdown` is cancelled, then give open requests a short grace.
pub async fn serve(listener: TcpListener, router: Router, shutdown: CancellationToken) {
    let listener = Accepting(listener);
    // Each connection carries its peer's address, so the guard can tell which
    // account it comes from (once per connection, on its first request).
    let service = router.into_make_service_with_connect_info::<Peer>();
    let graceful = axum::serve(listener, service).with_graceful_shutdown(shutdown.clone().cancelled_owned());
    let serving = tokio::spawn(async move { graceful.await });
    tokio::pin!(serving);
    tokio::select! {
        r = &mut serving => {
            if let Ok(Err(e)) = r {
                tracing::error!(error = %e, "the HTTP server stopped with an error");
            }
            return;
        }
        _ = shutdown.cancelled() => {}
    }
    if tokio::time::timeout(SHUTDOWN_GRACE, &mut serving).await.is_err() {
        tracing::warn!("open connections did not close within {SHUTDOWN_GRACE:?}; dropping them");
        serving.abort();
    }
}
