//! Each delivery's fate. Delivery is at most once, so a claim whose answer
//! never reached its agent must not pass for a delivery: the person is told
//! and can send it again.
//!
//! A claim starts `claimed` (in the claim's own transaction). The front end
//! that carries the answer settles it: `sent` once the response body was
//! written out in full, `in_doubt` when it was dropped before its end (the
//! connection broke, the server stopped). The agent's next call (or report)
//! confirms what was `sent` (in that call's first claim transaction, so it
//! costs no extra commit). Claims a crash left `claimed` are put in doubt
//! at the next start. "Send again" of one in doubt (or the
//! `redeliver_in_doubt` setting) makes it `resent`.

use crate::events::EventKind;
use crate::model::{Delivery, Instruction};
use crate::store::Durability;
use crate::{time, Result};

use super::{instruction_event, Queue};

impl Queue {
    /// Settle a claimed delivery once its answer was written in full
    /// (`Sent`) or cut off (`InDoubt`). A delivery already settled
    /// otherwise is left alone.
    pub async fn settle_delivery(&self, id: String, fate: Delivery) -> Result<Option<Instruction>> {
        let changed = self.set_delivery(id, Delivery::Claimed, fate).await?;
        if let Some(item) = &changed {
            if fate == Delivery::InDoubt {
                tracing::warn!(id = %item.id, agent_id = item.consumed_by_agent_id.as_deref().unwrap_or(""), "a delivery is in doubt: its answer was cut off");
                self.mark_status_dirty();
            }
        }
        Ok(changed)
    }

    /// One delivery's move from `from` to `to`, with its `instruction.updated`.
    pub(super) async fn set_delivery(&self, id: String, from: Delivery, to: Delivery) -> Result<Option<Instruction>> {
        self.blocking(move |i| {
            i.store.write(
                // Like the claim itself: a crash cannot lose it (only a power loss could).
                Durability::Normal,
                |db| {
                    let now = time::now();
                    match db.set_delivery(&id, from, to, &now)? {
                        Some(item) => Ok(Some(instruction_event(db, EventKind::InstructionUpdated, &now, item)?)),
                        None => Ok(None),
                    }
                },
                |event| {
                    if let Some(e) = event {
                        i.bus.publish(e.clone());
                    }
                },
            )
        })
        .await
        .map(|event| {
            event.and_then(|e| match &e.data {
                crate::events::EventData::Instruction(item) => Some(item.clone()),
                _ => None,
            })
        })
    }

    /// At start: claims left open by a crash (or a stop mid-answer) are in
    /// doubt. Returns how many.
    pub async fn doubt_open_claims(&self) -> Result<usize> {
        let n = self
            .blocking(|i| {
                i.store.write(
                    Durability::Full,
                    |db| {
                        let now = time::now();
                        let items = db.doubt_open_claims(&now)?;
                        let n = items.len();
                        for item in items {
                            instruction_event(db, EventKind::InstructionUpdated, &now, item)?;
                        }
                        Ok(n)
                    },
                    |_| {},
                )
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
}
