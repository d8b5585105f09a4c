//! Group commit for claims: a claim queues its write and awaits its outcome;
//! one blocking task at a time (the writer) takes everything queued, writes
//! it in one transaction, each write in a savepoint of its own, commits once,
//! tells each write how it went, and goes on with what was queued meanwhile
//! until nothing is left. A claim costs no thread of its own while it waits.
//!
//! Why: many agents claiming at once each wrote a dozen pages of the same
//! indexes, the same counters and the same tail of the event log, each in its
//! own transaction; the write-ahead log filled with copies of those pages and
//! was checkpointed (two fsyncs, under the lock) every few dozen claims. In one
//! transaction a page shared by the claims is written once. A claim's outcome
//! is its own: one that fails rolls back to its savepoint and the others
//! commit; only a failed transaction fails them all (and then none was written).

use std::panic::AssertUnwindSafe;

use tokio::sync::oneshot;

use rusqlite::{Connection, TransactionBehavior};

use super::{Db, Store};
use crate::sync::MutexExt as _;
use crate::{Error, Result};

/// One write waiting for a transaction, whatever its result type.
pub(super) trait Member: Send {
    /// Run the write's statements; false if they failed (the error is kept).
    fn run(&mut self, db: &Db<'_>, store: &Store) -> bool;
    /// Its transaction committed: run what follows a commit (still under
    /// the lock, so events go out in commit order) and hand over the value.
    fn committed(self: Box<Self>);
    /// Its transaction did not commit: hand over the error.
    fn failed(self: Box<Self>, error: Error);
    /// A copy of the error its statements met (after `run` returned false).
    fn error_again(&self) -> Error;
}

/// The writes waiting for a transaction, and whether a writer is at work
/// (it takes them once it has the connection).
#[derive(Default)]
pub(super) struct Waiting {
    pub(super) writes: Vec<Box<dyn Member>>,
    pub(super) writer: bool,
}

/// A queued write's outcome, to await.
pub type Outcome<T> = oneshot::Receiver<Result<T>>;

/// The outcome of a queued write, or why there is none.
pub async fn outcome<T>(queued: Outcome<T>) -> Result<T> {
    // Dropped unanswered only when its writer stopped before writing it
    // (`Store::abandon_queued`): nothing was taken, so the agent may call again.
    queued.await.unwrap_or_else(|_| {
        Err(Error::Unavailable(
            "the claim could not be written (its writer stopped); nothing was taken — call again".into(),
        ))
    })
}

struct Write<T, B, C> {
    body: Option<B>,
    on_commit: Option<C>,
    outcome: Option<Result<T>>,
    reply: Option<oneshot::Sender<Result<T>>>,
}

impl<T, B, C> Member for Write<T, B, C>
where
    T: Send,
    B: FnOnce(&Db<'_>) -> Result<T> + Send,
    C: FnOnce(&T) + Send,
{
    fn run(&mut self, db: &Db<'_>, store: &Store) -> bool {
        let Some(body) = self.body.take() else {
            return false;
        };
        // A write that panics fails alone (rolled back to its savepoint),
        // as it would have in a transaction of its own.
        let outcome = match std::panic::catch_unwind(AssertUnwindSafe(|| body(db))) {
            Ok(outcome) => outcome.map_err(|e| store.fault(e)),
            Err(_) => Err(Error::internal("a claim", "its write panicked")),
        };
        let ok = outcome.is_ok();
        self.outcome = Some(outcome);
        ok
    }

    fn committed(mut self: Box<Self>) {
        let outcome = self
            .outcome
            .take()
            .unwrap_or_else(|| Err(Error::internal("a grouped write", "it was never run")));
        if let (Ok(value), Some(on_commit)) = (&outcome, self.on_commit.take()) {
            // Its write is committed whatever happens here; a panic must not
            // keep the other members of the group from their outcomes.
            if std::panic::catch_unwind(AssertUnwindSafe(|| on_commit(value))).is_err() {
                tracing::error!("what follows a claim's commit panicked; the claim is written");
            }
        }
        self.reply(outcome);
    }

    fn error_again(&self) -> Error {
        match &self.outcome {
            Some(Err(e)) => e.again(),
            _ => Error::internal("a claim", "its transaction ended under it"),
        }
    }

    fn failed(mut self: Box<Self>, error: Error) {
        // A write whose own statements failed says so, not the transaction's error.
        let outcome = match self.outcome.take() {
            Some(Err(own)) => Err(own),
            _ => Err(error),
        };
        self.reply(outcome);
    }
}

impl<T, B, C> Write<T, B, C> {
    fn reply(&mut self, outcome: Result<T>) {
        if let Some(reply) = self.reply.take() {
            // Its caller has gone (its call was dropped): the write stands, as
            // a claim whose caller left mid-answer does (`queue/delivery.rs`).
            let _ = reply.send(outcome);
        }
    }
}

/// A write to queue, and its outcome.
pub(super) fn member<T, B, C>(body: B, on_commit: C) -> (Box<dyn Member>, Outcome<T>)
where
    T: Send + 'static,
    B: FnOnce(&Db<'_>) -> Result<T> + Send + 'static,
    C: FnOnce(&T) + Send + 'static,
{
    let (reply, outcome) = oneshot::channel();
    let write = Write {
        body: Some(body),
        on_commit: Some(on_commit),
        outcome: None,
        reply: Some(reply),
    };
    (Box::new(write), outcome)
}

impl Store {
    /// Queue a write; true if no writer is at work, so the caller must start
    /// one ([`Store::write_queued`], on a blocking thread).
    pub(super) fn queue(&self, write: Box<dyn Member>) -> bool {
        let mut waiting = self.waiting.lock_anyway();
        waiting.writes.push(write);
        !std::mem::replace(&mut waiting.writer, true)
    }

    /// The writer: write what is queued, a group at a time, until nothing is.
    /// Should it panic, what is still queued fails (its callers are told)
    /// rather than wait for a writer that will not come.
    pub fn write_queued(&self) {
        struct Abandoned<'s>(&'s Store, bool);
        impl Drop for Abandoned<'_> {
            fn drop(&mut self) {
                if self.1 {
                    self.0.abandon_queued();
                }
            }
        }
        let mut abandoned = Abandoned(self, true);
        loop {
            let mut conn = self.lock();
            let writes = {
                let mut waiting = self.waiting.lock_anyway();
                if waiting.writes.is_empty() {
                    waiting.writer = false;
                    break;
                }
                std::mem::take(&mut waiting.writes)
            };
            self.write_group(&mut conn, writes);
            // Fair: a person's write or a read waiting for the connection goes
            // before the next group, or a burst of claims could hold it off.
            parking_lot::MutexGuard::unlock_fair(conn);
        }
        abandoned.1 = false;
    }

    /// No writer will come (it panicked, or its task was never run): fail
    /// what is queued, so that its callers hear so instead of waiting.
    pub fn abandon_queued(&self) {
        let mut waiting = self.waiting.lock_anyway();
        waiting.writes.clear();
        waiting.writer = false;
    }

    /// Write `members` in one `BEGIN IMMEDIATE` transaction (a savepoint
    /// each when there are several), committed with `synchronous=NORMAL`,
    /// and tell each how it went. The caller holds the connection's lock.
    pub(super) fn write_group(&self, conn: &mut Connection, mut members: Vec<Box<dyn Member>>) {
        let outcome = self.run_group(conn, &mut members);
        // Back to FULL for the writes that record a person's input. Failing
        // that changes nothing already committed; the fault is shown (below).
        let restored = conn
            .prepare_cached("PRAGMA synchronous=FULL")
            .and_then(|mut s| s.execute([]));
        match outcome {
            Ok(written) => {
                // Something was written: whatever blocked writes has cleared.
                // (Members that all failed commit an empty transaction.)
                if written && restored.is_ok() {
                    self.write_went_through();
                }
                for m in members {
                    m.committed();
                }
            }
            Err(e) => {
                // One gets the error itself (its cause is logged whole), the others copies.
                let mut members = members.into_iter();
                let first = members.next();
                for m in members {
                    m.failed(e.again());
                }
                if let Some(m) = first {
                    m.failed(e);
                }
            }
        }
        if let Err(e) = restored {
            let e = self.fault(e.into());
            tracing::warn!(error = %e, "the database connection could not go back to synchronous=FULL");
        }
    }

    /// The transaction itself: whether any member's statements were
    /// written. On an error nothing of it was committed.
    fn run_group(&self, conn: &mut Connection, members: &mut [Box<dyn Member>]) -> Result<bool> {
        (|| -> Result<bool> {
            self.reopen_if_gone(conn)?;
            conn.prepare_cached("PRAGMA synchronous=NORMAL")?.execute([])?;
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let mut written = false;
            if let [only] = members {
                // Alone: its failure rolls the transaction back (dropped uncommitted).
                if !only.run(&Db::new(&tx), self) || tx.is_autocommit() {
                    return Err(only.error_again());
                }
                written = true;
            } else {
                for m in members.iter_mut() {
                    tx.prepare_cached("SAVEPOINT member")?.execute([])?;
                    let ran = m.run(&Db::new(&tx), self);
                    if tx.is_autocommit() {
                        // Some errors (a full disk, an I/O error) end the whole
                        // transaction: the group fails as this member did.
                        return Err(m.error_again());
                    }
                    if ran {
                        written = true;
                    } else {
                        tx.prepare_cached("ROLLBACK TO member")?.execute([])?;
                    }
                    tx.prepare_cached("RELEASE member")?.execute([])?;
                }
            }
            tx.commit()?;
            Ok(written)
        })()
        .map_err(|e| self.fault(e))
    }
}
