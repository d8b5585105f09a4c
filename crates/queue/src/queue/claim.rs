//! The claim: one write (in a transaction it may share with claims arriving
//! at the same moment, `store/group.rs`) that hands a call the
//! instruction it may take (a pending stop request wins; a delivery in doubt
//! goes again first; then the offered one, else the first of its queue), or
//! records that it took nothing — and the smaller writes that end a call
//! which delivered nothing. Two calls never get the same row
//! (`docs/ARCHITECTURE.md`, "Delivery rules" 2). When to claim is `wait.rs`'s.

use super::commit::Outbox;
use super::{Inner, Queue};
use crate::events::{Event, EventData, EventKind};
use crate::model::Timestamp;
use crate::model::{Caller, DeliveredAttachment, InReplyTo, Instruction, ResultType, TaskStatus};
use crate::store::Db;
use crate::sync::RwLockExt as _;
use crate::{time, Result};

/// A claimed instruction and what its agent is told of its files.
pub(super) type Taken = (Instruction, Vec<DeliveredAttachment>, Option<InReplyTo>);

/// A working task a claim binds what it finds to.
#[derive(Clone)]
pub(super) struct Bind {
    pub id: String,
    pub created_at: Timestamp,
}

impl Bind {
    /// Whole seconds from the task's start to `now`.
    fn waited(&self, now: &Timestamp) -> u64 {
        match (time::parse(&self.created_at), time::parse(now)) {
            (Some(start), Some(end)) => (end - start).whole_seconds().max(0) as u64,
            _ => 0,
        }
    }
}

/// What a claim was asked for (`Queue::claim`), and its steps, in its
/// transaction.
struct Asked {
    queue: String,
    agent: String,
    offer: Option<String>,
    first: Option<Caller>,
    task: Option<Bind>,
}

impl Asked {
    fn claim(self, i: &Inner, db: &Db<'_>, out: &mut Outbox) -> Result<Claim> {
        let now = Timestamp::now();
        // A new call from this agent: what was sent to it before arrived.
        // (No event: nothing a person sees changes.)
        if self.first.is_some() {
            db.confirm_sent(&self.queue, &self.agent, &now)?;
        }
        if let Some(task) = &self.task {
            // Two polls at once: the one that came second binds nothing.
            if db.task(&task.id)?.is_none_or(|t| t.status != TaskStatus::Working) {
                return Ok(Claim::Nothing);
            }
        }
        let key = (self.queue.clone(), self.agent.clone());
        if i.stops().contains(&key) && db.take_stop(&self.queue, &self.agent)? {
            return self.stopped(db, &now);
        }
        match self.pick(i, db, &now)? {
            Some(item) => self.hand_over(i, db, out, &now, item),
            None => {
                if self.first.is_some() {
                    db.touch_agent(&self.queue, &self.agent, &now, None)?;
                    self.note_caller(db)?;
                }
                Ok(Claim::Nothing)
            }
        }
    }

    /// The agent's stop request was taken: it is told to stop (a task is
    /// completed with that).
    fn stopped(&self, db: &Db<'_>, now: &Timestamp) -> Result<Claim> {
        db.touch_agent(&self.queue, &self.agent, now, Some(ResultType::Stop))?;
        self.note_caller(db)?;
        let remaining = db.eligible_count(&self.queue, &self.agent)?;
        if let Some(task) = &self.task {
            let result = super::wait::stopped_result(&self.queue, remaining, task.waited(now));
            db.complete_task(&task.id, None, &result, now)?;
        }
        Ok(Claim::Stopped(remaining))
    }

    /// What the agent takes, if anything: nothing from a held queue; a
    /// delivery in doubt again first, to the same agent — with
    /// `redeliver_in_doubt`, and always to a client that cannot resume a
    /// broken stream (it lost that answer: a second instruction must not
    /// overtake it); then the offered one, else the first it may take.
    fn pick(&self, i: &Inner, db: &Db<'_>, now: &Timestamp) -> Result<Option<Instruction>> {
        if i.is_held(&self.queue) {
            return Ok(None);
        }
        let again = if self.first.as_ref().is_some_and(|c| c.no_resume)
            || (self.first.is_some() && i.settings.read_anyway().redeliver_in_doubt)
        {
            db.reclaim_in_doubt(&self.queue, &self.agent, now)?
        } else {
            None
        };
        if let Some(item) = again {
            // A task that carried it must not hand it over again.
            db.cancel_task_of_instruction(&item.id, super::tasks::SENT_AGAIN, now)?;
            return Ok(Some(item));
        }
        match db.claim(&self.queue, &self.agent, self.offer.as_deref(), now)? {
            None if self.offer.is_some() => db.claim(&self.queue, &self.agent, None, now),
            got => Ok(got),
        }
    }

    /// `item` is the agent's: its activity, `instruction.consumed`, what it
    /// is told of the files and of the question it answers — bound to the
    /// task when a poll claimed it.
    fn hand_over(
        &self,
        i: &Inner,
        db: &Db<'_>,
        out: &mut Outbox,
        now: &Timestamp,
        mut item: Instruction,
    ) -> Result<Claim> {
        db.touch_agent(&self.queue, &self.agent, now, Some(ResultType::Instruction))?;
        self.note_caller(db)?;
        let rows = db.attachments_of(&item.id)?;
        item.attachments = rows.iter().map(|r| r.attachment.clone()).collect();
        let (left, remaining) = db.pending_in(&self.queue, &self.agent)?;
        out.log(
            db,
            Event::new(
                EventKind::InstructionConsumed,
                now.clone(),
                EventData::Instruction(item.clone()),
                Some(left),
            ),
        )?;
        let delivered = super::attachments::delivered(i.store.files(), &rows, item.content.len());
        let in_reply_to = in_reply_to(db, &item)?;
        if let Some(task) = &self.task {
            let suffix = i.queues.read_anyway().get(&self.queue).and_then(|r| r.suffix.clone());
            let result = super::wait::delivered_result(
                &self.queue,
                (item.clone(), delivered.clone(), in_reply_to.clone()),
                remaining,
                task.waited(now),
                suffix.as_deref(),
            );
            db.complete_task(&task.id, Some(&item.id), &result, now)?;
        }
        Ok(Claim::Got(Box::new((item, delivered, in_reply_to)), remaining))
    }

    /// What the client said about itself, kept on the agent's row (once per call).
    fn note_caller(&self, db: &Db<'_>) -> Result<()> {
        match &self.first {
            Some(c) if c.client.is_some() || c.session.is_some() => db.note_caller(
                &self.queue,
                &self.agent,
                c.client.as_ref().map(|n| n.name.as_str()),
                c.client.as_ref().and_then(|n| n.version.as_deref()),
                c.session.as_deref(),
            ),
            _ => Ok(()),
        }
    }
}

/// A reply says which question it answers (the report's first line).
fn in_reply_to(db: &Db<'_>, item: &Instruction) -> Result<Option<InReplyTo>> {
    let Some(report_id) = &item.answers else {
        return Ok(None);
    };
    Ok(db.get_report(report_id)?.map(|r| InReplyTo {
        question: r
            .content
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .chars()
            .take(200)
            .collect(),
        report_id: r.id,
    }))
}

/// What one claim transaction found.
pub(super) enum Claim {
    /// Boxed: a `Claim` and what is made of it sit in the futures of waiting
    /// calls (an instruction inline is ~0.5 KiB each time).
    Got(Box<Taken>, u64),
    Stopped(u64),
    Nothing,
}

impl Queue {
    /// One transaction: a pending stop request wins; otherwise claim the
    /// offered instruction (`offer`) or else the first one `agent` may take
    /// in `queue`, unless the queue is held. It records the agent's activity
    /// and logs `instruction.consumed`. With `first` (the call's first
    /// claim, and what its client says about itself), a call that gets
    /// nothing still records that the agent was seen, and the agent's client
    /// and client session are noted.
    ///
    /// With `task` (a poll of that working task, `tasks.rs`), what it finds
    /// is bound to the task in the same transaction — or nothing, if another
    /// poll bound something first.
    pub(super) async fn claim(
        &self,
        queue: &str,
        agent: &str,
        offer: Option<String>,
        first: Option<Caller>,
        task: Option<Bind>,
    ) -> Result<Claim> {
        let asked = Asked {
            queue: queue.to_owned(),
            agent: agent.to_owned(),
            offer,
            first,
            task,
        };
        let stop_key = (asked.queue.clone(), asked.agent.clone());
        self.claim_write(
            move |i, db, out| asked.claim(i, db, out),
            move |i, claim| {
                if matches!(claim, Claim::Stopped(_)) {
                    i.stops().remove(&stop_key);
                }
            },
        )
        .await
    }

    /// Consume the stop request a waiting call was woken for; returns what
    /// the agent could still take.
    pub(super) async fn take_stop(&self, queue: &str, agent: &str) -> Result<u64> {
        let (queue, agent) = (queue.to_owned(), agent.to_owned());
        let key = (queue.clone(), agent.clone());
        self.claim_write(
            move |_, db, _| {
                db.take_stop(&queue, &agent)?;
                db.touch_agent(&queue, &agent, &Timestamp::now(), Some(ResultType::Stop))?;
                db.eligible_count(&queue, &agent)
            },
            move |i, _| {
                i.stops().remove(&key);
            },
        )
        .await
    }

    /// Record a finished call that delivered nothing (`left`: its client went
    /// away while it waited); returns what the agent could take.
    pub(super) async fn record_call(
        &self,
        queue: &str,
        agent: &str,
        result: Option<ResultType>,
        left: bool,
    ) -> Result<u64> {
        let (queue, agent) = (queue.to_owned(), agent.to_owned());
        self.claim_write(
            move |_, db, _| {
                let now = Timestamp::now();
                db.touch_agent(&queue, &agent, &now, result)?;
                if left {
                    db.agent_left(&queue, &agent, &now)?;
                }
                db.eligible_count(&queue, &agent)
            },
            |_, _| (),
        )
        .await
    }
}
