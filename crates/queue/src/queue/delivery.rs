//! Each delivery's fate. Delivery is at most once, so a claim whose answer
//! never reached its agent must not pass for a delivery: the person is told
//! and can send it again.
//!
//! A claim starts `claimed` (in the claim's transaction). The front end
//! that carries the answer settles it: `sent` once the response body has
//! handed over the answer, `in_doubt` when it was dropped before (the
//! connection broke, the server stopped); a task writes these in batches.
//! The agent's next call (or report) confirms what was `sent` (in that
//! call's first claim transaction, so it costs no extra commit). Claims a
//! crash left `claimed` are put in doubt at the next start. "Send again" of
//! one in doubt makes it `resent`; the `redeliver_in_doubt` setting claims
//! it anew for the same agent instead. Only doubts (and resends) are
//! events: `sent` and `confirmed` change nothing a person sees.

use tokio::sync::mpsc::UnboundedReceiver;

use crate::model::{Delivery, InstructionId};
use crate::store::Durability;
use crate::sync::MutexExt as _;
use crate::Result;

use super::commit::fate_event;
use super::Queue;
use crate::model::Timestamp;

/// At most this many settlements go in one transaction.
const SETTLE_BATCH: usize = 512;

/// How long a stop waits for tool calls to end once the server has stopped:
/// a call ends within moments of the shutdown (its wait watches it), and the
/// server's own grace (`server::SHUTDOWN_GRACE`, 5 s) comes first — the
/// desktop app gives a whole stop 6 s.
const CALLS_END_WITHIN: std::time::Duration = std::time::Duration::from_millis(500);

impl Queue {
    /// Settle a claimed delivery once its answer was written in full
    /// (`Sent`) or cut off (`InDoubt`). Called from a response body's poll
    /// or drop, so it only hands the settlement to the writer task, which
    /// commits them in batches — off every agent's path, and one commit for
    /// many under load. A delivery already settled otherwise is left alone.
    pub fn settle_delivery(&self, id: String, fate: Delivery) {
        // Closed only when the engine is gone: the next start doubts what is left `claimed`.
        let _ = self.inner.settle.send((id, fate));
    }

    async fn settle_batch(&self, batch: Vec<(String, Delivery)>) -> Result<()> {
        let (doubted, _) = self
            .blocking(move |i| {
                // Like the claim itself: a crash cannot lose it (only a power loss could).
                i.commit(Durability::Normal, |db, out| {
                    let now = Timestamp::now();
                    let mut doubted = 0;
                    for (id, fate) in &batch {
                        let Some(item) = db.set_delivery(id, Delivery::Claimed, *fate, &now)? else {
                            // A task's answer given again (a poll after one cut off,
                            // or after a restart): written now, so sent after all.
                            if *fate == Delivery::Sent {
                                if let Some(item) = db.set_delivery(id, Delivery::InDoubt, Delivery::Sent, &now)? {
                                    out.log(db, fate_event(db, &now, item)?)?;
                                    doubted += 1;
                                }
                            }
                            continue;
                        };
                        // Only a doubt changes what a person sees.
                        if *fate == Delivery::InDoubt {
                            tracing::warn!(id = %item.id, agent_id = item.consumed_by_agent_id.as_deref().unwrap_or(""), "a delivery is in doubt: its answer was cut off");
                            out.log(db, fate_event(db, &now, item)?)?;
                            doubted += 1;
                        }
                    }
                    Ok(doubted)
                })
            })
            .await?;
        if doubted > 0 {
            self.mark_status_dirty();
        }
        Ok(())
    }

    /// Settle a claimed delivery at once (not through the writer task): a
    /// cancelled task's, whose answer is known not to be on its way.
    pub(super) async fn settle_now(&self, id: &str, fate: Delivery) -> Result<()> {
        let id = id.to_owned();
        self.blocking(move |i| {
            i.commit(Durability::Full, |db, out| {
                let now = Timestamp::now();
                if let Some(item) = db.set_delivery(&id, Delivery::Claimed, fate, &now)? {
                    out.log(db, fate_event(db, &now, item)?)?;
                }
                Ok(())
            })
        })
        .await?;
        self.mark_status_dirty();
        Ok(())
    }

    /// A delivery sent again: `resent` (with its `instruction.updated`) if it
    /// was in doubt; whether it was.
    pub(super) async fn mark_resent(&self, id: InstructionId) -> Result<bool> {
        self.blocking(move |i| {
            i.commit(Durability::Full, |db, out| {
                let now = Timestamp::now();
                match db.set_delivery(&id, Delivery::InDoubt, Delivery::Resent, &now)? {
                    Some(item) => out.log(db, fate_event(db, &now, item)?).map(|()| true),
                    None => Ok(false),
                }
            })
        })
        .await
        .map(|(resent, _)| resent)
    }

    /// At start: claims left open by a crash (or a stop mid-answer) are in
    /// doubt. Returns how many.
    pub async fn doubt_open_claims(&self) -> Result<usize> {
        let (n, _) = self
            .blocking(|i| {
                i.commit(Durability::Full, |db, out| {
                    let now = Timestamp::now();
                    let items = db.doubt_open_claims(&now)?;
                    let n = items.len();
                    for item in items {
                        out.log(db, fate_event(db, &now, item)?)?;
                    }
                    Ok(n)
                })
            })
            .await?;
        if n > 0 {
            tracing::warn!(
                count = n,
                "deliveries left open by the last run are in doubt: see the ledger"
            );
        }
        Ok(n)
    }

    /// Held by a tool call until it has ended, its answer's settlement left
    /// with the response (`finish_settling` waits for the calls).
    pub fn call_in_flight(&self) -> tokio_util::task::task_tracker::TaskTrackerToken {
        self.inner.calls_in_flight.token()
    }

    /// The server has stopped and its connections are gone: settle what they
    /// left and end the settling task (`Engine::stopped`).
    pub async fn finish_settling(&self) {
        // A call that claimed as the server stopped can end after its
        // connection did: its answer cut off, it settles `in_doubt` as it
        // ends. Every wait ends with the shutdown; the bound is for a call
        // stuck elsewhere, whose claim the next start then finds in doubt.
        self.inner.calls_in_flight.close();
        if tokio::time::timeout(CALLS_END_WITHIN, self.inner.calls_in_flight.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                calls = self.inner.calls_in_flight.len(),
                "tool calls still running {CALLS_END_WITHIN:?} after the server stopped; what they claimed is in doubt"
            );
        }
        self.inner.serving_done.cancel();
        let settler = self.inner.settler.lock_anyway().take();
        if let Some(settler) = settler {
            let _ = settler.await;
        }
    }
}

/// Write settlements as they come, as many per transaction as are waiting;
/// once the server has stopped (`Queue::finish_settling`), write what is
/// queued and stop.
pub(super) async fn settle_loop(queue: Queue, mut settling: UnboundedReceiver<(String, Delivery)>) {
    // Not the engine's shutdown: answers still go out (or are cut off) while
    // the server gives open requests their grace, and each is settled.
    let shutdown = queue.inner.serving_done.clone();
    loop {
        let first = tokio::select! {
            got = settling.recv() => match got {
                Some(s) => s,
                None => return,
            },
            _ = shutdown.cancelled() => {
                let mut rest = Vec::new();
                while let Ok(s) = settling.try_recv() {
                    rest.push(s);
                }
                if !rest.is_empty() {
                    if let Err(e) = queue.settle_batch(rest).await {
                        e.log();
                    }
                }
                return;
            }
        };
        let mut batch = vec![first];
        while batch.len() < SETTLE_BATCH {
            match settling.try_recv() {
                Ok(s) => batch.push(s),
                Err(_) => break,
            }
        }
        if let Err(e) = queue.settle_batch(batch).await {
            e.log();
        }
    }
}
