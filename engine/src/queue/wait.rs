//! `get_user_request`: claim the head of the rail, or wait for one.
//!
//! The order of operations is what keeps delivery at-most-once with the
//! smallest loss window (`docs/ARCHITECTURE.md`, "Delivery rules"): subscribe to "instruction
//! added" before the first claim attempt (no missed wake-up), wait without
//! polling, and claim only after the wait resolves *and* the caller is still
//! there and still the agent's newest call.

use std::time::Duration;

use tokio::time::Instant;

use tokio_util::sync::CancellationToken;

use super::{log_event, Queue};
use crate::events::{Event, EventData, EventKind};
use crate::model::{
    DeliveredInstruction, Instruction, ResultType, UserRequestResult, DEFAULT_AGENT_ID, MAX_AGENT_ID_CHARS,
    MAX_WAIT_SECONDS,
};
use crate::store::Durability;
use crate::{time, Error, Result};

/// How a call ended, for logs and tests; the agent sees only the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitOutcome {
    /// An instruction was claimed for this caller.
    Delivered,
    /// The wait ran out with the queue still empty.
    TimedOut,
    /// A newer call from the same agent took over; nothing was consumed.
    Superseded,
    /// The caller disconnected or cancelled; nothing was consumed.
    CallerGone,
    /// The server is stopping; nothing was consumed.
    ShuttingDown,
}

/// Trim the agent id, default it, and refuse ones too long or with control characters.
pub fn normalize_agent_id(agent_id: Option<&str>) -> Result<String> {
    let id = agent_id
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or(DEFAULT_AGENT_ID);
    if id.chars().count() > MAX_AGENT_ID_CHARS {
        return Err(Error::Invalid(format!(
            "agent_id must be at most {MAX_AGENT_ID_CHARS} characters"
        )));
    }
    if id.chars().any(char::is_control) {
        return Err(Error::Invalid("agent_id must not contain control characters".into()));
    }
    Ok(id.to_owned())
}

impl Queue {
    /// Hand the next pending instruction to `agent_id`, waiting up to the
    /// configured `default_wait_seconds` for one. `caller_gone` is cancelled
    /// when the caller disconnects or cancels; the call then consumes nothing.
    /// `waiting` (if given) is told when the call starts to wait, so a front
    /// end can open its stream then and not for calls answered at once.
    pub async fn get_user_request(
        &self,
        agent_id: Option<&str>,
        caller_gone: CancellationToken,
        waiting: Option<tokio::sync::oneshot::Sender<u32>>,
    ) -> Result<(UserRequestResult, WaitOutcome)> {
        let agent = normalize_agent_id(agent_id)?;
        let started = Instant::now();
        let mut call = self.inner.calls.begin(&agent);
        let mut added = self.inner.added.subscribe();

        if let Some((item, remaining)) = self.claim(&agent, true).await? {
            return Ok(self.finish_delivered(&agent, started, item, remaining));
        }
        let settings = self.settings();
        let wait = Duration::from_secs(u64::from(settings.default_wait_seconds.min(MAX_WAIT_SECONDS)));
        let deadline = started + wait;

        // A zero wait answers at once: even an already-due tokio timer waits
        // for the next 1 ms tick of the timer wheel.
        let outcome = if wait.is_zero() {
            Err(WaitOutcome::TimedOut)
        } else {
            call.set_waiting(true);
            self.mark_status_dirty();
            if let Some(tx) = waiting {
                let _ = tx.send(settings.default_wait_seconds);
            }
            self.wait_and_claim(&agent, &mut added, &call.superseded, &caller_gone, deadline)
                .await?
        };
        call.set_waiting(false);
        drop(call);

        match outcome {
            Ok((item, remaining)) => Ok(self.finish_delivered(&agent, started, item, remaining)),
            Err(outcome) => {
                let result_type = if settings.default_empty_response.is_empty() {
                    ResultType::Empty
                } else {
                    ResultType::DefaultResponse
                };
                // A caller that is gone never reads a result; record only that it was seen.
                let recorded =
                    matches!(outcome, WaitOutcome::TimedOut | WaitOutcome::Superseded).then_some(result_type);
                let remaining = self.record_call(&agent, recorded).await?;
                let waited = started.elapsed().as_secs();
                self.mark_status_dirty();
                tracing::info!(agent_id = %agent, waited_seconds = waited, result_type = result_type.as_str(), outcome = ?outcome, "get_user_request");
                Ok((
                    UserRequestResult {
                        status: "ok".into(),
                        result_type,
                        instruction: None,
                        // `empty` is exactly the case where the configured text is "".
                        response: Some(settings.default_empty_response),
                        remaining_pending: remaining,
                        waited_seconds: waited,
                    },
                    outcome,
                ))
            }
        }
    }

    /// Wait for an instruction until `deadline`; claim one only while the
    /// caller is still there and still the agent's newest call.
    async fn wait_and_claim(
        &self,
        agent: &str,
        added: &mut tokio::sync::watch::Receiver<u64>,
        superseded: &CancellationToken,
        caller_gone: &CancellationToken,
        deadline: Instant,
    ) -> Result<Result<(Instruction, u64), WaitOutcome>> {
        let outcome = loop {
            tokio::select! {
                biased;
                _ = caller_gone.cancelled() => break Err(WaitOutcome::CallerGone),
                _ = superseded.cancelled() => break Err(WaitOutcome::Superseded),
                _ = self.inner.shutdown.cancelled() => break Err(WaitOutcome::ShuttingDown),
                _ = tokio::time::sleep_until(deadline) => break Err(WaitOutcome::TimedOut),
                changed = added.changed() => {
                    if changed.is_err() {
                        break Err(WaitOutcome::ShuttingDown);
                    }
                    // Let a disconnect that is already on the wire be seen first:
                    // one trip through the scheduler runs the connection tasks.
                    tokio::task::yield_now().await;
                    if caller_gone.is_cancelled() || superseded.is_cancelled() {
                        continue; // the next turn of the loop reports why
                    }
                    if let Some(claimed) = self.claim(agent, false).await? {
                        break Ok(claimed);
                    }
                    // Another waiter was faster: keep waiting for the rest of the time.
                }
            }
        };
        Ok(outcome)
    }

    fn finish_delivered(
        &self,
        agent: &str,
        started: Instant,
        item: Instruction,
        remaining: u64,
    ) -> (UserRequestResult, WaitOutcome) {
        let waited = started.elapsed().as_secs();
        self.mark_status_dirty();
        tracing::info!(agent_id = %agent, waited_seconds = waited, result_type = "instruction", id = %item.id, remaining, "get_user_request");
        let result = UserRequestResult {
            status: "ok".into(),
            result_type: ResultType::Instruction,
            instruction: Some(DeliveredInstruction {
                consumed_at: item.consumed_at.unwrap_or_default(),
                id: item.id,
                content: item.content,
            }),
            response: None,
            remaining_pending: remaining,
            waited_seconds: waited,
        };
        (result, WaitOutcome::Delivered)
    }

    /// Claim the head of the rail for `agent` in one transaction that also
    /// records the agent's activity and logs `instruction.consumed`. With
    /// `touch_if_empty`, an empty queue still records that the agent was seen.
    async fn claim(&self, agent: &str, touch_if_empty: bool) -> Result<Option<(Instruction, u64)>> {
        let agent = agent.to_owned();
        self.blocking(move |i| {
            i.store.write(
                Durability::Normal,
                |db| {
                    let now = time::now();
                    let Some(item) = db.claim_next(&agent, &now)? else {
                        if touch_if_empty {
                            db.touch_agent(&agent, &now, None)?;
                        }
                        return Ok(None);
                    };
                    db.touch_agent(&agent, &now, Some(ResultType::Instruction))?;
                    let remaining = db.pending_count()?;
                    let event = log_event(
                        db,
                        Event::new(
                            EventKind::InstructionConsumed,
                            now,
                            EventData::Instruction(item.clone()),
                            Some(remaining),
                        ),
                    )?;
                    Ok(Some((item, remaining, event)))
                },
                |claimed| {
                    if let Some((_, _, event)) = claimed {
                        i.bus.publish(event.clone());
                    }
                },
            )
        })
        .await
        .map(|claimed| claimed.map(|(item, remaining, _)| (item, remaining)))
    }

    /// Record a finished call that delivered nothing; returns the pending count.
    async fn record_call(&self, agent: &str, result: Option<ResultType>) -> Result<u64> {
        let agent = agent.to_owned();
        self.blocking(move |i| {
            i.store.write(
                Durability::Normal,
                |db| {
                    db.touch_agent(&agent, &time::now(), result)?;
                    db.pending_count()
                },
                |_| (),
            )
        })
        .await
    }
}
