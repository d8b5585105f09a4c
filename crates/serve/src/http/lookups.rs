//! Who owns a connection, asked off the async threads on a small pool of
//! the guard's own, with a bound on how many wait and how long each takes.
//!
//! The lookup is a netlink round trip (a few microseconds), but it ran on
//! tokio's shared blocking pool: when another request's file work held that
//! pool's 512 threads (a FIFO named `.mcp.json`, read on behalf of 600
//! aborted `no-cors` fetches from another site), every new connection
//! waited behind them and `/healthz`, the page and every agent stopped
//! answering. Here nothing else runs on the pool; a lookup that cannot be
//! queued, or is not answered in time, is an owner that cannot be told —
//! which the guard refuses (it never fails open).

use std::net::SocketAddr;
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::OnceLock;
use std::time::Duration;

use crate::peer::{self, Account};

/// Why the owner is not known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unknown {
    /// No socket of this machine has those addresses: a peer on another host.
    pub elsewhere: bool,
    pub why: String,
}

impl Unknown {
    fn here(why: impl Into<String>) -> Unknown {
        Unknown {
            elsewhere: false,
            why: why.into(),
        }
    }
}

impl std::fmt::Display for Unknown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.why)
    }
}

/// Threads that answer lookups.
const THREADS: usize = 2;
/// Lookups that may wait for a thread; one more is refused at once.
const QUEUED: usize = 1024;
/// How long a lookup may take before its connection is refused.
const PATIENCE: Duration = Duration::from_secs(2);

type Job = (
    SocketAddr,
    SocketAddr,
    tokio::sync::oneshot::Sender<Result<Account, Unknown>>,
);

fn pool() -> &'static SyncSender<Job> {
    static POOL: OnceLock<SyncSender<Job>> = OnceLock::new();
    POOL.get_or_init(|| {
        let (tx, rx) = sync_channel::<Job>(QUEUED);
        let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
        for n in 0..THREADS {
            let rx = rx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("peer-lookup-{n}"))
                .spawn(move || loop {
                    // One thread takes the next job; the lock is held only to take it.
                    let job = match rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => return,
                    };
                    let Ok((remote, local, answer)) = job else {
                        return;
                    };
                    let _ = answer.send(peer::owner(remote, local).map_err(|e| Unknown {
                        elsewhere: e.kind() == std::io::ErrorKind::NotFound,
                        why: e.to_string(),
                    }));
                });
            if let Err(e) = spawned {
                tracing::warn!(error = %e, "cannot start a thread for peer lookups");
            }
        }
        tx
    })
}

/// The account owning the other end of the connection `remote` → `local`;
/// an error (refused by the guard) when it cannot be told in time.
pub async fn owner(remote: SocketAddr, local: SocketAddr) -> Result<Account, Unknown> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    match pool().try_send((remote, local, tx)) {
        Ok(()) => {}
        Err(TrySendError::Full(_)) => return Err(Unknown::here("too many connections are being looked up at once")),
        Err(TrySendError::Disconnected(_)) => return Err(Unknown::here("no thread is left to look up connections")),
    }
    match tokio::time::timeout(PATIENCE, rx).await {
        Ok(Ok(found)) => found,
        Ok(Err(_)) => Err(Unknown::here("the lookup was dropped")),
        Err(_) => Err(Unknown::here(format!("the lookup took longer than {PATIENCE:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lookup_answers_or_fails_closed_in_time_whatever_holds_the_blocking_pool() {
        // A runtime whose blocking pool is one thread, held by other work for 5 s.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .max_blocking_threads(1)
            .build()
            .unwrap();
        runtime.block_on(async {
            let _held = tokio::task::spawn_blocking(|| std::thread::sleep(Duration::from_secs(5)));
            tokio::task::yield_now().await;
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let ours = listener.local_addr().unwrap();
            let mut client = std::net::TcpStream::connect(ours).unwrap();
            // A client says something first (Wine gives the socket its owner then).
            std::io::Write::write_all(&mut client, b"GET").unwrap();
            let (_accepted, remote) = listener.accept().unwrap();
            let started = std::time::Instant::now();
            let found = owner(remote, ours).await;
            assert!(
                started.elapsed() < Duration::from_secs(3),
                "the lookup waited for the blocking pool: {:?}",
                started.elapsed()
            );
            if peer::supported() {
                assert_eq!(found, Ok(peer::me().unwrap()));
            }
            // Nobody owns this: an error, never a guess.
            let nowhere: SocketAddr = "127.0.0.1:1".parse().unwrap();
            assert!(owner(nowhere, nowhere).await.is_err_and(|e| e.elsewhere));
        });
        runtime.shutdown_background();
    }
}
