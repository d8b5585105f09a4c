//! Knowing when a response's bytes are with the operating system.
//!
//! hyper takes a response body's frames into its own write buffer and writes
//! them to the socket later, so a body that has handed a frame over cannot
//! tell whether it went out: hyper asks it for the next frame while the last
//! one may still be in that buffer. If the process dies then, the frame is
//! lost. The connection's stream can tell: hyper flushes the stream only once
//! its buffer is empty (`hyper::proto::h1::io::Buffered::poll_flush`), so a
//! flush that follows the handing-over means every byte of that frame was
//! accepted by the kernel — which still delivers it if this process is killed
//! a moment later.
//!
//! [`Watched`] wraps a connection's stream; what is left with its [`Written`]
//! handle runs with `true` at the stream's next flush, or with `false` if the
//! connection ends first. A delivery is marked `sent` this way
//! (`mcp::disconnect`).

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::sync::MutexExt as _;

/// What to run once the bytes handed over so far are written (`true`) or the
/// connection ended before they were (`false`).
pub type AfterFlush = Box<dyn FnOnce(bool) + Send>;

#[derive(Default)]
struct Pending {
    due: Vec<AfterFlush>,
    /// The stream is gone: nothing more will be written.
    closed: bool,
}

/// A connection's handle, carried in each of its requests' extensions.
#[derive(Clone, Default)]
pub struct Written(Arc<Mutex<Pending>>);

impl Written {
    /// Run `then` once everything handed to hyper so far has been written to
    /// the socket (`true`), or once the connection ends without (`false`).
    pub fn after_flush(&self, then: AfterFlush) {
        let mut pending = self.0.lock_anyway();
        if pending.closed {
            drop(pending);
            then(false);
        } else {
            pending.due.push(then);
        }
    }

    fn run(&self, written: bool, close: bool) {
        let due = {
            let mut pending = self.0.lock_anyway();
            pending.closed |= close;
            std::mem::take(&mut pending.due)
        };
        for then in due {
            then(written);
        }
    }
}

impl std::fmt::Debug for Written {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Written")
    }
}

/// A connection's stream that tells its [`Written`] handle when hyper's
/// buffer has gone out.
pub struct Watched<T> {
    io: T,
    written: Written,
}

impl<T> Watched<T> {
    pub fn new(io: T) -> (Watched<T>, Written) {
        let written = Written::default();
        (
            Watched {
                io,
                written: written.clone(),
            },
            written,
        )
    }
}

impl<T> Drop for Watched<T> {
    fn drop(&mut self) {
        self.written.run(false, true);
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Watched<T> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Watched<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(Pin::new(&mut self.io).poll_flush(cx))?;
        self.written.run(true, false);
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt as _;

    fn recorder() -> (AfterFlush, std::sync::mpsc::Receiver<bool>) {
        let (tx, rx) = std::sync::mpsc::channel();
        (Box::new(move |w| tx.send(w).unwrap()), rx)
    }

    #[tokio::test]
    async fn runs_at_the_next_flush_and_not_before() {
        let (client, _server) = tokio::io::duplex(64);
        let (mut io, written) = Watched::new(client);
        io.write_all(b"before").await.unwrap();
        let (then, rx) = recorder();
        written.after_flush(then);
        assert!(rx.try_recv().is_err(), "nothing flushed yet");
        io.flush().await.unwrap();
        assert_eq!(rx.try_recv(), Ok(true));
    }

    #[tokio::test]
    async fn a_connection_gone_first_runs_it_as_not_written_and_so_does_any_later() {
        let (client, _server) = tokio::io::duplex(64);
        let (io, written) = Watched::new(client);
        let (then, rx) = recorder();
        written.after_flush(then);
        drop(io);
        assert_eq!(rx.try_recv(), Ok(false));
        let (then, rx) = recorder();
        written.after_flush(then);
        assert_eq!(rx.try_recv(), Ok(false), "left after the stream is gone: not written");
    }
}
