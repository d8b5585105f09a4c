//! `get_user_request` as a task (the MCP tasks extension, SEP-2663): a
//! caller that takes tasks gets one at once instead of a waiting call, and
//! asks for it (polls) until its result is there (`docs/RELIABILITY.md`,
//! "Tasks").
//!
//! A task is one row and nothing else — no connection, no runtime task —
//! so it outlives a restart, and ten thousand agents waiting this way cost
//! their rows. Nothing is consumed by a client that is gone: an instruction
//! is bound to a task only inside a poll (in the claim's own transaction,
//! `claim.rs`), and the answer that carries it settles its delivery as a
//! waiting call's does (`sent` once written, `in doubt` if cut off). A
//! completed task answers every later poll with the same result, so a poll
//! cut off mid-answer is made good by the next one.

use std::collections::HashMap;
use std::hash::{BuildHasher as _, RandomState};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::claim::{Bind, Claim};
use super::Queue;
use crate::model::Timestamp;
use crate::model::{Delivery, InstructionId, TaskRecord, TaskStatus, TaskView};
use crate::store::Durability;
use crate::sync::MutexExt as _;
use crate::{time, Error, Result};

/// The poll interval a caller is told while few tasks wait: a queued
/// instruction reaches the model within about one interval, so this is the
/// latency a person sees; the figures are in `docs/PERFORMANCE.md`, "Tasks".
pub const POLL_INTERVAL_MS: u64 = 2_000;
/// The longest interval (Claude Code clamps to 30 s).
const POLL_INTERVAL_MAX_MS: u64 = 30_000;
/// Each agent waiting this way adds this much to the interval, so ten
/// thousand agents poll every 20 s (500 polls a second), not 5,000 times a second.
const POLL_INTERVAL_PER_AGENT_MS: u64 = 2;
/// A held queue gives nothing until it is released: polls can be slower.
const HELD_POLL_INTERVAL_MS: u64 = 10_000;
/// A task is forgotten this long after its last poll: Claude Code asks for
/// a task again when a session is resumed, days later.
const KEPT_FOR: Duration = Duration::from_secs(7 * 24 * 3600);
/// `polled_at` is written at most this often per task (it bounds only
/// when a task is forgotten).
const POLL_NOTED_EVERY: Duration = Duration::from_secs(3600);
/// An agent with more working tasks than this has its oldest cancelled.
const MAX_WORKING_PER_AGENT: usize = 4;
/// How long a cancel waits for an answer on its way to be settled.
const CANCEL_SETTLES_WITHIN: Duration = Duration::from_secs(2);

/// The status message of a task bound to an instruction that then went on
/// a newer call (`claim.rs`).
pub(super) const SENT_AGAIN: &str = "This instruction was handed over again on a newer get_user_request call: \
nothing to do here.";
/// The status message of a task bound to an instruction the person queued
/// again (`changes.rs`, "Send again" on a delivery in doubt).
pub(super) const QUEUED_AGAIN: &str = "This instruction was queued again by the person: its copy comes on a \
newer get_user_request call; nothing to do here.";
/// The status message of a waiting task.
const WAITING: &str = "Waiting for the person's next instruction.";
/// The status message of an agent's oldest task when it has too many.
const TOO_MANY: &str = "A newer get_user_request call of this agent took over: nothing to do here.";
/// The status message of a task its client cancelled.
const CANCELLED: &str = "Cancelled by the client.";

/// The agents whose working task was polled lately: which agents wait this
/// way. One small entry per agent — a hash of its (queue, agent), the second
/// of its last poll and a tag of the task polled — since ten thousand of
/// them must cost little (`docs/PERFORMANCE.md`, "Tasks"); names are read
/// from the store.
pub(super) struct Live {
    polled: Mutex<HashMap<u64, Seen>>,
    /// Hashes (queue, agent) with keys of this process's own: a name cannot
    /// be chosen to collide with another agent's.
    keys: RandomState,
    /// What poll times count from (seconds fit a `u32` for 136 years).
    start: Instant,
}

/// An agent's last poll: when, and of which task (a 32-bit tag of its id).
#[derive(Clone, Copy)]
struct Seen {
    at: u32,
    task: u32,
}

impl Default for Live {
    fn default() -> Live {
        Live {
            polled: Mutex::default(),
            keys: RandomState::new(),
            start: Instant::now(),
        }
    }
}

impl Live {
    fn key(&self, queue: &str, agent: &str) -> u64 {
        self.keys.hash_one((queue, agent))
    }

    fn tag(&self, task: &str) -> u32 {
        // The low half of a keyed hash: telling an agent's few tasks apart.
        self.keys.hash_one(task) as u32
    }

    fn now(&self) -> u32 {
        u32::try_from(self.start.elapsed().as_secs()).unwrap_or(u32::MAX)
    }

    /// Whether a poll at `at` is within `within` of now.
    fn recent(&self, at: u32, within: Duration) -> bool {
        u64::from(self.now().saturating_sub(at)) < within.as_secs().max(1)
    }

    fn polled(&self, task: &TaskRecord) {
        let key = self.key(&task.queue, &task.agent_id);
        let seen = Seen {
            at: self.now(),
            task: self.tag(&task.id),
        };
        let mut polled = self.polled.lock_anyway();
        if polled.len() >= 1024 && polled.len().is_power_of_two() {
            // Agents whose client went away: forget them now and then.
            polled.retain(|_, s| seen.at.saturating_sub(s.at) < 3600);
        }
        polled.insert(key, seen);
    }

    /// `task` ended: its agent no longer waits this way, unless its last
    /// poll was of another task (a newer call's).
    fn ended(&self, task: &TaskRecord) {
        let key = self.key(&task.queue, &task.agent_id);
        let tag = self.tag(&task.id);
        let mut polled = self.polled.lock_anyway();
        if polled.get(&key).is_some_and(|s| s.task == tag) {
            polled.remove(&key);
        }
    }

    /// How many agents had a task polled within `within`.
    fn count(&self, within: Duration) -> usize {
        let polled = self.polled.lock_anyway();
        polled.values().filter(|s| self.recent(s.at, within)).count()
    }

    /// Whether `agent` of `queue` has a task polled within `within`.
    fn waiting(&self, queue: &str, agent: &str, within: Duration) -> bool {
        let key = self.key(queue, agent);
        let seen = self.polled.lock_anyway().get(&key).copied();
        seen.is_some_and(|s| self.recent(s.at, within))
    }
}

/// A fresh task id: 128 random bits, as hex.
fn new_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

impl Queue {
    /// The interval a poll of a task of `queue` is told to keep.
    fn poll_interval_ms(&self, queue: &str) -> u64 {
        if self.inner.is_held(queue) {
            return HELD_POLL_INTERVAL_MS;
        }
        let waiting = self.inner.tasks.count(Duration::from_millis(3 * POLL_INTERVAL_MAX_MS)) as u64;
        (waiting * POLL_INTERVAL_PER_AGENT_MS).clamp(POLL_INTERVAL_MS, POLL_INTERVAL_MAX_MS)
    }

    /// How long after its task's last poll an agent still counts as waiting:
    /// three intervals, and a few seconds for a slow poll.
    fn live_for(&self) -> Duration {
        let waiting = self.inner.tasks.count(Duration::from_millis(3 * POLL_INTERVAL_MAX_MS)) as u64;
        let interval = (waiting * POLL_INTERVAL_PER_AGENT_MS).clamp(POLL_INTERVAL_MS, POLL_INTERVAL_MAX_MS);
        Duration::from_millis(3 * interval.max(HELD_POLL_INTERVAL_MS)) + Duration::from_secs(5)
    }

    /// Whether an agent (queue, agent) waits through a task now (it was
    /// polled lately). The window is worked out once, here: it counts every
    /// agent, and callers ask about many.
    pub(crate) fn waits_in_task(&self) -> impl Fn(&str, &str) -> bool + '_ {
        let within = self.live_for();
        move |queue, agent| self.inner.tasks.waiting(queue, agent, within)
    }

    /// A new task for `agent` of `queue`, whose call found nothing to take:
    /// committed before it is answered (a poll may follow at once). An
    /// agent's tasks beyond [`MAX_WORKING_PER_AGENT`] end, oldest first.
    pub(super) async fn open_task(&self, queue: &str, agent: &str) -> Result<TaskView> {
        let now = Timestamp::now();
        let record = TaskRecord {
            id: new_id(),
            queue: queue.to_owned(),
            agent_id: agent.to_owned(),
            status: TaskStatus::Working,
            status_message: Some(WAITING.to_owned()),
            instruction_id: None,
            result: None,
            created_at: now.clone(),
            updated_at: now.clone(),
            polled_at: now,
        };
        let stored = record.clone();
        self.blocking(move |i| {
            i.store.write(
                Durability::Full,
                |db| {
                    let working = db.working_tasks_of(&stored.queue, &stored.agent_id)?;
                    let over = (working.len() + 1).saturating_sub(MAX_WORKING_PER_AGENT);
                    for id in working.iter().take(over) {
                        db.cancel_task(id, TOO_MANY, &stored.created_at)?;
                    }
                    db.insert_task(&stored)
                },
                |_| (),
            )
        })
        .await?;
        self.inner.tasks.polled(&record);
        self.mark_status_dirty();
        tracing::info!(queue = %queue, agent_id = %agent, task = %record.id, "get_user_request: a task waits");
        Ok(self.view(record, None))
    }

    /// A poll (`tasks/get`): the task as it is now. A working one is bound
    /// here, and only here, to what its agent may take (a stop, an
    /// instruction), in the claim's transaction; a completed one answers
    /// with the result it has. `NotFound` only for an id never given or
    /// forgotten a week after its last poll.
    pub async fn poll_task(&self, id: &str) -> Result<TaskView> {
        let record = self.task(id).await?;
        match record.status {
            TaskStatus::Working => self.poll_working(record).await,
            TaskStatus::Completed => {
                let carries = self.open_delivery(&record).await?;
                Ok(self.view(record, carries))
            }
            TaskStatus::Cancelled => Ok(self.view(record, None)),
        }
    }

    async fn poll_working(&self, record: TaskRecord) -> Result<TaskView> {
        self.inner.tasks.polled(&record);
        let key = (record.queue.clone(), record.agent_id.clone());
        let stop = self.inner.stops().contains(&key);
        let something = stop || (!self.inner.is_held(&record.queue) && self.has_work(&record).await?);
        if something {
            let bind = Bind {
                id: record.id.clone(),
                created_at: record.created_at.clone(),
            };
            match self
                .claim(&record.queue, &record.agent_id, None, None, Some(bind))
                .await?
            {
                Claim::Got(..) | Claim::Stopped(_) => {
                    self.inner.tasks.ended(&record);
                    self.mark_status_dirty();
                    // Read back as bound, by this poll or one beside it.
                    let bound = self.task(&record.id).await?;
                    let carries = bound.instruction_id.clone();
                    tracing::info!(queue = %bound.queue, agent_id = %bound.agent_id, task = %bound.id, instruction = ?carries, "get_user_request: a task's result is bound");
                    return Ok(self.view(bound, carries));
                }
                Claim::Nothing => {
                    // Taken meanwhile, or another poll bound it first.
                    let now = self.task(&record.id).await?;
                    if now.status != TaskStatus::Working {
                        let carries = self.open_delivery(&now).await?;
                        return Ok(self.view(now, carries));
                    }
                }
            }
        }
        let stale = record.polled_at.seconds_ago() >= POLL_NOTED_EVERY.as_secs_f64();
        if stale {
            let id = record.id.clone();
            self.blocking(move |i| {
                i.store
                    .write(Durability::Normal, |db| db.task_polled(&id, &Timestamp::now()), |_| ())
            })
            .await?;
        }
        Ok(self.view(record, None))
    }

    /// Whether `record`'s agent could take something of its queue now.
    async fn has_work(&self, record: &TaskRecord) -> Result<bool> {
        let (queue, agent) = (record.queue.clone(), record.agent_id.clone());
        self.blocking(move |i| i.store.read(|db| db.eligible_count(&queue, &agent)))
            .await
            .map(|n| n > 0)
    }

    /// The instruction a completed task carries, when its delivery is not
    /// settled as written yet: this answer settles it (`sent`, or `in doubt`
    /// again if cut off).
    async fn open_delivery(&self, record: &TaskRecord) -> Result<Option<InstructionId>> {
        let Some(id) = record.instruction_id.clone() else {
            return Ok(None);
        };
        let item = self.get(id.clone()).await?;
        Ok(matches!(item.delivery, Some(Delivery::Claimed | Delivery::InDoubt)).then_some(id))
    }

    /// A cancel (`tasks/cancel`). A working task ends with nothing bound. A
    /// completed one whose answer was never written (its delivery in doubt,
    /// or still open after [`CANCEL_SETTLES_WITHIN`]) gives its instruction
    /// back: a pending copy at the front (as "send again" makes), the task
    /// cancelled. One whose answer was written stays as it is. Cancelling
    /// twice is the same as once.
    pub async fn cancel_task(&self, id: &str) -> Result<()> {
        let record = self.task(id).await?;
        self.inner.tasks.ended(&record);
        match record.status {
            TaskStatus::Cancelled => Ok(()),
            TaskStatus::Working => {
                let id = id.to_owned();
                let cancelled = self
                    .blocking(move |i| {
                        i.store.write(
                            Durability::Full,
                            |db| db.cancel_working_task(&id, CANCELLED, &Timestamp::now()),
                            |_| (),
                        )
                    })
                    .await?;
                if !cancelled {
                    // Bound meanwhile by a poll, whose answer carries it: settle
                    // it as a bound one (never marked cancelled over its result).
                    let now = self.task(&record.id).await?;
                    if now.status == TaskStatus::Completed {
                        return self.take_back(now).await;
                    }
                }
                self.mark_status_dirty();
                Ok(())
            }
            TaskStatus::Completed => self.take_back(record).await,
        }
    }

    /// A completed task's cancel: give back an instruction whose answer was
    /// not written.
    async fn take_back(&self, record: TaskRecord) -> Result<()> {
        let Some(instruction) = record.instruction_id.clone() else {
            return Ok(());
        };
        let deadline = Instant::now() + CANCEL_SETTLES_WITHIN;
        let fate = loop {
            let fate = self.get(instruction.clone()).await?.delivery;
            if fate != Some(Delivery::Claimed) || Instant::now() >= deadline {
                break fate;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        match fate {
            Some(Delivery::Claimed | Delivery::InDoubt) => {
                if fate == Some(Delivery::Claimed) {
                    // Open past the wait: its answer is not on its way.
                    self.settle_now(&instruction, Delivery::InDoubt).await?;
                }
                let (id, message) = (record.id.clone(), CANCELLED.to_owned());
                self.blocking(move |i| {
                    i.store.write(
                        Durability::Full,
                        |db| db.cancel_task(&id, &message, &Timestamp::now()),
                        |_| (),
                    )
                })
                .await?;
                self.requeue(instruction.clone(), crate::model::RequeuePlace::Front)
                    .await?;
                tracing::info!(task = %record.id, instruction = %instruction, "a cancelled task's instruction went back to the front");
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// The task `id` as stored; `NotFound` if there is none.
    pub async fn task(&self, id: &str) -> Result<TaskRecord> {
        let key = id.to_owned();
        self.blocking(move |i| i.store.read(|db| db.task(&key)))
            .await?
            .ok_or_else(|| Error::NotFound(format!("no task {id}")))
    }

    fn view(&self, mut record: TaskRecord, carries: Option<InstructionId>) -> TaskView {
        if record.status != TaskStatus::Working && record.status_message.as_deref() == Some(WAITING) {
            // Completed by an earlier version, which left the message as it was.
            record.status_message = None;
        }
        let poll_interval_ms = self.poll_interval_ms(&record.queue);
        let lived = record.created_at.seconds_ago();
        let since_poll = record.polled_at.seconds_ago();
        let ttl_ms = ((lived - since_poll).max(0.0) * 1000.0) as u64 + KEPT_FOR.as_millis() as u64;
        TaskView {
            record,
            poll_interval_ms,
            ttl_ms,
            carries,
        }
    }

    /// Forget the tasks nobody polled for [`KEPT_FOR`]; how many. None of
    /// them is bound to anything a client has not been answered with.
    pub(super) async fn forget_old_tasks(&self) -> Result<usize> {
        let before = time::format(::time::OffsetDateTime::now_utc() - KEPT_FOR);
        self.blocking(move |i| {
            i.store
                .write(Durability::Normal, |db| db.forget_tasks_polled_before(&before), |_| ())
        })
        .await
    }
}

/// Forget old tasks at start and every hour, until the server stops.
pub(super) async fn sweep_loop(queue: Queue) {
    loop {
        if let Err(e) = queue.forget_old_tasks().await {
            tracing::warn!(error = %e, "could not forget old tasks");
        }
        tokio::select! {
            _ = queue.inner.shutdown.cancelled() => return,
            _ = tokio::time::sleep(POLL_NOTED_EVERY) => {}
        }
    }
}
