//! `get_user_request`: claim the first instruction this caller may take, or
//! wait for one.
//!
//! The order of operations is what keeps delivery at-most-once with the
//! smallest loss window (`docs/ARCHITECTURE.md`, "Delivery rules"): join the
//! queue's line before the first claim attempt (no missed offer), wait
//! without polling, and claim only after an offer arrives *and* the caller is
//! still there and still the agent's newest call. Who is offered what is
//! [`super::dispatch`]'s job; the claim transaction itself is `claim.rs`.

use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::claim::{Claim, Taken};
use super::dispatch::Place;
use super::Queue;
use crate::model::{
    client_slug, AgentId, Caller, DeliveredInstruction, QueueName, ResultType, UserRequestResult, DEFAULT_AGENT_ID,
    MAX_WAIT_SECONDS,
};
use crate::sync::RwLockExt as _;
use crate::{time, Result};

/// What a stopped agent is told. It names the person's action so a model
/// does not take it for an error to work around.
pub const STOP_RESPONSE: &str = "The user ended this session from local-mcp. Stop calling `get_user_request`: \
finish your current turn now without calling it again.";

/// How a call ended, for logs and tests; the agent sees only the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitOutcome {
    /// An instruction was claimed for this caller.
    Delivered,
    /// The wait ran out with nothing for this caller.
    TimedOut,
    /// A newer call from the same agent took over; nothing was consumed.
    Superseded,
    /// The caller disconnected or cancelled; nothing was consumed.
    CallerGone,
    /// The server is stopping; nothing was consumed.
    ShuttingDown,
    /// The person stopped this agent; nothing was consumed.
    Stopped,
    /// The database could not be written (disk full, read-only, locked,
    /// gone): nothing was consumed, and the result says so.
    Unwritable,
}

/// Said to an agent whose call met a database that cannot be written: its
/// loop goes on (an error result would end it), and nothing was delivered.
fn unwritable_response(fault: &crate::Error) -> String {
    format!(
        "local-mcp cannot write its database right now ({fault}). Nothing was delivered and nothing \
         queued is lost: call this tool `get_user_request` again to keep waiting for the user's next instruction."
    )
}

/// A call's place in its queue's line; leaving it gives back an unused offer.
struct InLine<'a> {
    queue: &'a Queue,
    place: Place,
}

impl Drop for InLine<'_> {
    fn drop(&mut self) {
        if self.queue.inner.dispatch.leave(&self.place) {
            self.queue.kick(&self.place.queue);
        }
    }
}

impl Queue {
    /// Hand the first instruction of `queue` (default `default`) that
    /// `agent_id` may take to it, waiting up to the configured
    /// `default_wait_seconds` for one. `caller_gone` is cancelled when the
    /// caller disconnects or cancels; the call then consumes nothing.
    /// `waiting` (if given) is told when the call starts to wait, so a front
    /// end can open its stream then and not for calls answered at once.
    /// `report` (checked with `model::report_args`) is stored first, durably.
    ///
    /// A database that cannot be written (disk full, read-only, locked by
    /// another program, gone) never fails the call: it delivers nothing and
    /// returns the normal `default_response` whose text says why, so the
    /// agent's loop goes on.
    ///
    /// `caller` is what the call's client says about itself: its wait ends
    /// inside that client's limit, and a call without `agent_id` is the
    /// agent its client session (or its client) already is ([`Queue::agent_for`]).
    pub fn get_user_request<'a>(
        &'a self,
        queue: Option<&'a QueueName>,
        agent_id: Option<&'a AgentId>,
        caller: Caller,
        report: Option<(String, Vec<String>)>,
        caller_gone: CancellationToken,
        waiting: Option<tokio::sync::oneshot::Sender<u32>>,
    ) -> impl std::future::Future<Output = Result<(UserRequestResult, WaitOutcome)>> + Send + 'a {
        // A combinator, not another `async fn` around `answer`: every waiting
        // call keeps this future, and a layer of state machine is its size
        // again (~650 bytes).
        let waits = Waits {
            caller_gone,
            waiting,
            task: false,
        };
        futures::FutureExt::map(
            self.answer(queue, agent_id, caller, report, waits),
            |answered| match answered? {
                Answer::Now(result, outcome) => Ok((result, outcome)),
                Answer::Task(_) => Err(crate::Error::internal(
                    "answering a call that waits",
                    "it was answered with a task",
                )),
            },
        )
    }

    /// [`Queue::get_user_request`] for a caller that takes tasks (the MCP
    /// tasks extension): what it can take now, or else a task — stored
    /// before it is answered — that its polls bind the next instruction to
    /// (`tasks.rs`). Nothing waits here.
    pub async fn get_user_request_or_task(
        &self,
        queue: Option<&QueueName>,
        agent_id: Option<&AgentId>,
        caller: Caller,
        report: Option<(String, Vec<String>)>,
    ) -> Result<Answer> {
        let waits = Waits {
            caller_gone: CancellationToken::new(),
            waiting: None,
            task: true,
        };
        self.answer(queue, agent_id, caller, report, waits).await
    }

    async fn answer(
        &self,
        queue: Option<&QueueName>,
        agent_id: Option<&AgentId>,
        caller: Caller,
        report: Option<(String, Vec<String>)>,
        waits: Waits,
    ) -> Result<Answer> {
        let queue = queue.cloned().unwrap_or_else(QueueName::default_queue);
        let given = agent_id.cloned();
        let call = async {
            let agent = match given {
                Some(agent) => agent,
                None => self.agent_for(&queue, &caller).await?,
            };
            self.take_or_wait(&queue, &agent, caller, report, waits).await
        };
        match call.await {
            Err(fault) if fault.is_storage_fault() => {
                fault.log();
                self.mark_status_dirty();
                let result = UserRequestResult {
                    status: "ok".into(),
                    result_type: ResultType::DefaultResponse,
                    queue: queue.into_string(),
                    instruction: None,
                    response: Some(unwritable_response(&fault)),
                    remaining_pending: 0,
                    waited_seconds: 0,
                };
                Ok(Answer::Now(result, WaitOutcome::Unwritable))
            }
            other => other,
        }
    }

    /// The agent a call without `agent_id` is, when the model forgot it
    /// (`docs/ARCHITECTURE.md`, "Agent identity"): the agent its client
    /// session last was in this queue; else, for a client that sends no
    /// session id, the one agent of the same client seen in this queue
    /// recently; else a name from its client (and session).
    pub(crate) async fn agent_for(&self, queue: &str, caller: &Caller) -> Result<AgentId> {
        let (queue, caller) = (queue.to_owned(), caller.clone());
        let stale = self.settings().agent_stale_after_seconds;
        self.blocking(move |i| {
            i.store.read(|db| {
                if let Some(session) = &caller.session {
                    if let Some(agent) = db.agent_of_session(&queue, session)? {
                        return Ok(agent);
                    }
                } else if let Some(client) = &caller.client {
                    // Recently: an agent may work an hour between calls (its stale
                    // window if that is longer).
                    let window = f64::from(stale).max(super::agents::RECOGNISED_FOR_SECONDS);
                    let since = time::format(::time::OffsetDateTime::now_utc() - ::time::Duration::seconds_f64(window));
                    let agents = db.agents_of_client(&queue, &client.name, &since)?;
                    if let [only] = agents.as_slice() {
                        return Ok(only.clone());
                    }
                }
                let made = match (&caller.client, &caller.session) {
                    (Some(c), Some(s)) => format!("{}-{s}", client_slug(&c.name)),
                    (Some(c), None) => client_slug(&c.name),
                    (None, Some(s)) => format!("agent-{s}"),
                    (None, None) => DEFAULT_AGENT_ID.to_owned(),
                };
                AgentId::new(&made)?.ok_or_else(|| crate::Error::Invalid("a made agent id is blank".into()))
            })
        })
        .await
    }

    async fn take_or_wait(
        &self,
        queue: &QueueName,
        agent: &AgentId,
        caller: Caller,
        report: Option<(String, Vec<String>)>,
        waits: Waits,
    ) -> Result<Answer> {
        let Waits {
            caller_gone,
            waiting,
            task,
        } = waits;
        let max_wait = caller.max_wait();
        let (queue, agent) = (queue.clone(), agent.clone());
        let started = Instant::now();
        self.ensure_queue(&queue).await?;
        if let Some((content, options)) = report {
            self.record_report(&queue, &agent, content, options).await?;
        }
        let mut call = self.inner.calls.begin(&queue, &agent);
        if caller.no_resume {
            // The call it replaces may still be settling an answer it cut off.
            self.await_settled(&queue, &agent).await?;
        }
        let line = InLine {
            queue: self,
            place: self.inner.dispatch.enter(&queue, &agent),
        };

        let settings = self.settings();
        let ended = match self.claim(&queue, &agent, None, Some(caller), None).await? {
            Claim::Got(item, remaining) => Ok((item, remaining)),
            Claim::Stopped(remaining) => Err((WaitOutcome::Stopped, remaining)),
            Claim::Nothing if task => {
                drop(line);
                drop(call);
                return Ok(Answer::Task(self.open_task(&queue, &agent).await?));
            }
            Claim::Nothing => {
                // The caller's client may cancel sooner than the setting: end
                // the wait inside its limit (`mcp::client_limits`).
                let wait_seconds = settings
                    .default_wait_seconds
                    .min(MAX_WAIT_SECONDS)
                    .min(max_wait.unwrap_or(u32::MAX));
                let wait = Duration::from_secs(u64::from(wait_seconds));
                // A zero wait answers at once: even an already-due tokio timer
                // waits for the next 1 ms tick of the timer wheel.
                if wait.is_zero() {
                    Err((WaitOutcome::TimedOut, 0))
                } else {
                    call.set_waiting(true);
                    self.mark_status_dirty();
                    if let Some(tx) = waiting {
                        let _ = tx.send(wait_seconds);
                    }
                    let signals = Signals {
                        caller_gone: &caller_gone,
                        superseded: &call.superseded,
                        stopped: &call.stopped,
                    };
                    self.wait_and_claim(&agent, &line.place, signals, started + wait)
                        .await?
                }
            }
        };
        call.set_waiting(false);
        drop(line);
        drop(call);

        let waited = started.elapsed().as_secs();
        let (taken, remaining) = match ended {
            Ok(claimed) => claimed,
            Err((outcome, remaining)) => return self.finish_empty(&queue, &agent, outcome, remaining, waited).await,
        };
        self.mark_status_dirty();
        tracing::info!(queue = %queue, agent_id = %agent, waited_seconds = waited, result_type = "instruction", id = %taken.0.id, remaining, "get_user_request");
        let suffix = self
            .inner
            .queues
            .read_anyway()
            .get(queue.as_str())
            .and_then(|r| r.suffix.clone());
        let result = delivered_result(&queue, *taken, remaining, waited, suffix.as_deref());
        Ok(Answer::Now(result, WaitOutcome::Delivered))
    }

    /// Wait for an offer until `deadline`; claim only while the caller is
    /// still there and still the agent's newest call.
    async fn wait_and_claim(
        &self,
        agent: &str,
        place: &Place,
        signals: Signals<'_>,
        deadline: Instant,
    ) -> Result<std::result::Result<(Box<Taken>, u64), (WaitOutcome, u64)>> {
        let queue = place.queue.as_str();
        loop {
            tokio::select! {
                biased;
                _ = signals.caller_gone.cancelled() => return Ok(Err((WaitOutcome::CallerGone, 0))),
                _ = signals.superseded.cancelled() => return Ok(Err((WaitOutcome::Superseded, 0))),
                _ = self.inner.shutdown.cancelled() => return Ok(Err((WaitOutcome::ShuttingDown, 0))),
                _ = signals.stopped.cancelled() => {
                    let remaining = self.take_stop(queue, agent).await?;
                    return Ok(Err((WaitOutcome::Stopped, remaining)));
                }
                _ = tokio::time::sleep_until(deadline) => return Ok(Err((WaitOutcome::TimedOut, 0))),
                _ = place.wake.notified() => {
                    // Let a disconnect that is already on the wire be seen first:
                    // one trip through the scheduler runs the connection tasks.
                    tokio::task::yield_now().await;
                    let offer = self.inner.dispatch.offer_for(place);
                    // The shutdown too: the select saw it only before the wake.
                    if signals.caller_gone.is_cancelled()
                        || signals.superseded.is_cancelled()
                        || self.inner.shutdown.is_cancelled()
                    {
                        continue; // the next turn reports why; leaving gives the offer back
                    }
                    let claimed = self.claim(queue, agent, offer, None, None).await;
                    self.inner.dispatch.settle(place);
                    match claimed? {
                        Claim::Got(item, remaining) => return Ok(Ok((item, remaining))),
                        Claim::Stopped(remaining) => return Ok(Err((WaitOutcome::Stopped, remaining))),
                        // Taken, moved or held meanwhile: match again and keep waiting.
                        Claim::Nothing => self.kick(queue),
                    }
                }
            }
        }
    }

    /// The result of a call that delivered nothing, recorded as the agent's latest.
    async fn finish_empty(
        &self,
        queue: &str,
        agent: &str,
        outcome: WaitOutcome,
        remaining: u64,
        waited: u64,
    ) -> Result<Answer> {
        let settings = self.settings();
        let (result_type, response) = if outcome == WaitOutcome::Stopped {
            (ResultType::Stop, STOP_RESPONSE.to_owned())
        } else if settings.default_empty_response.is_empty() {
            // `empty` is exactly the case where the configured text is "".
            (ResultType::Empty, String::new())
        } else {
            (ResultType::DefaultResponse, settings.default_empty_response)
        };
        let remaining = if outcome == WaitOutcome::Stopped {
            remaining // the stop transaction recorded the call already
        } else {
            // A caller that is gone never reads a result; record only that it
            // was seen, and — when its client went away — that it left.
            let recorded = matches!(outcome, WaitOutcome::TimedOut | WaitOutcome::Superseded).then_some(result_type);
            self.record_call(queue, agent, recorded, outcome == WaitOutcome::CallerGone)
                .await?
        };
        self.mark_status_dirty();
        tracing::info!(queue = %queue, agent_id = %agent, waited_seconds = waited, result_type = result_type.as_str(), outcome = ?outcome, "get_user_request");
        Ok(Answer::Now(
            UserRequestResult {
                status: "ok".into(),
                result_type,
                queue: queue.to_owned(),
                instruction: None,
                response: Some(response),
                remaining_pending: remaining,
                waited_seconds: waited,
            },
            outcome,
        ))
    }

    /// Wait (briefly, boundedly) until none of `agent`'s deliveries in
    /// `queue` is still `claimed`: a call that replaces one whose stream broke
    /// must see that delivery settled (`in_doubt`) before it claims, or it
    /// would take a second instruction past the one it lost.
    async fn await_settled(&self, queue: &str, agent: &str) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            let (q, a) = (queue.to_owned(), agent.to_owned());
            let open = self
                .blocking(move |i| i.store.read(|db| db.open_claims_of(&q, &a)))
                .await?;
            if open == 0 || Instant::now() >= deadline {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// The result that hands a claimed instruction over. The queue's suffix
/// goes with the text as delivered; the stored text stays as written.
pub(super) fn delivered_result(
    queue: &str,
    (item, attachments, in_reply_to): Taken,
    remaining: u64,
    waited: u64,
    suffix: Option<&str>,
) -> UserRequestResult {
    UserRequestResult {
        status: "ok".into(),
        result_type: ResultType::Instruction,
        queue: queue.to_owned(),
        instruction: Some(DeliveredInstruction {
            consumed_at: item
                .consumed_at
                .map(crate::model::Timestamp::into_string)
                .unwrap_or_default(),
            id: item.id.into_string(),
            content: crate::model::with_suffix(item.content, suffix),
            target: item.target.map(AgentId::into_string),
            attachments,
            in_reply_to,
        }),
        response: None,
        remaining_pending: remaining,
        waited_seconds: waited,
    }
}

/// The result that tells a stopped agent so.
pub(super) fn stopped_result(queue: &str, remaining: u64, waited: u64) -> UserRequestResult {
    UserRequestResult {
        status: "ok".into(),
        result_type: ResultType::Stop,
        queue: queue.to_owned(),
        instruction: None,
        response: Some(STOP_RESPONSE.to_owned()),
        remaining_pending: remaining,
        waited_seconds: waited,
    }
}

/// How a call is answered: now, or — for a caller that takes tasks and
/// found nothing to take — with a task it polls (`tasks.rs`).
// One per call, returned once: the call's future keeps neither variant
// across an await (its size is bounded by `a_waiting_call_lays_out_little`).
#[allow(clippy::large_enum_variant)]
pub enum Answer {
    Now(UserRequestResult, WaitOutcome),
    Task(crate::model::TaskView),
}

/// How a call may wait: what ends it, whom to tell it began, and whether
/// it is answered with a task instead.
struct Waits {
    caller_gone: CancellationToken,
    waiting: Option<tokio::sync::oneshot::Sender<u32>>,
    task: bool,
}

/// What can end a wait besides an offer or the deadline.
struct Signals<'a> {
    caller_gone: &'a CancellationToken,
    superseded: &'a CancellationToken,
    stopped: &'a CancellationToken,
}
