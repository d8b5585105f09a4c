//! The one path a change takes (`docs/ARCHITECTURE.md`, "Writes"): its
//! rows and its events in one transaction, the events logged with their ids
//! and published in commit order once it commits, the caches kept in step.
//! Every write that logs events goes through [`Inner::commit`] — or, for a
//! claim, through [`Queue::claim_write`], which shares a transaction with
//! the claims arriving at the same moment and publishes the same way.

use std::sync::Arc;

use super::{Inner, Queue};
use crate::events::{Event, EventData, EventKind};
use crate::model::Timestamp;
use crate::model::{Instruction, InstructionStatus, QueueRecord};
use crate::store::{Db, Durability};
use crate::sync::RwLockExt as _;
use crate::Result;

/// The events one transaction logs, published once it commits.
#[derive(Default)]
pub(super) struct Outbox(Vec<Event>);

impl Outbox {
    /// Log `event` in the transaction (the log gives it its id); it is
    /// published, in this order, if the transaction commits.
    pub(super) fn log(&mut self, db: &Db<'_>, event: Event) -> Result<()> {
        let id = db.append_event(event.kind.as_str(), &event.timestamp, &event.json)?;
        self.0.push(Event { id: Some(id), ..event });
        Ok(())
    }
}

impl Queue {
    /// A claim's write: queued to share a transaction with the claims that
    /// arrive at the same moment (`Store::queue_write`), written by one
    /// blocking task for all of them; this call only awaits its outcome.
    /// Its events are logged and published as [`Inner::commit`]'s are.
    pub(super) async fn claim_write<T: Send + 'static>(
        &self,
        body: impl FnOnce(&Inner, &Db<'_>, &mut Outbox) -> Result<T> + Send + 'static,
        on_commit: impl FnOnce(&Inner, &T) + Send + 'static,
    ) -> Result<T> {
        let faulty = self.faulty();
        let (for_body, for_commit) = (self.inner.clone(), self.inner.clone());
        let (outcome, start_writer) = self.inner.store.queue_write(
            move |db| {
                let mut out = Outbox::default();
                let value = body(&for_body, db, &mut out)?;
                Ok((value, out.0))
            },
            move |(value, events): &(T, Vec<Event>)| {
                for_commit.publish_committed(events);
                on_commit(&for_commit, value);
            },
        );
        if start_writer {
            let writer = Writer(Some(self.inner.clone()));
            tokio::task::spawn_blocking(move || writer.run());
        }
        let result = crate::store::group::outcome(outcome).await;
        self.after_store_work(faulty);
        result.map(|(value, _)| value)
    }
}

impl Inner {
    /// The one path every change takes: `body` writes its rows and logs
    /// its events ([`Outbox::log`]) in one transaction of `durability`; once
    /// it commits, the events are published ([`Inner::publish_committed`]).
    /// The body's value comes back with the events.
    pub(super) fn commit<T>(
        &self,
        durability: Durability,
        body: impl FnOnce(&Db<'_>, &mut Outbox) -> Result<T>,
    ) -> Result<(T, Vec<Event>)> {
        self.store.write(
            durability,
            |db| {
                let mut out = Outbox::default();
                let value = body(db, &mut out)?;
                Ok((value, out.0))
            },
            |(_, events)| self.publish_committed(events),
        )
    }

    /// Publish a commit's events, in commit order (while the store is still
    /// held: see `Store::write`), keeping the caches in step with any queue
    /// or settings change among them.
    pub(super) fn publish_committed(&self, events: &[Event]) {
        for e in events {
            match &e.data {
                EventData::Queue(change) => self.remember(change),
                EventData::Config(settings) => *self.settings.write_anyway() = settings.clone(),
                _ => {}
            }
            self.bus.publish(e.clone());
        }
    }

    /// Keep the cache in step with a queue change once it is committed.
    fn remember(&self, change: &crate::events::QueueChange) {
        let mut cache = self.queues.write_anyway();
        if let Some(old) = &change.renamed_from {
            cache.remove(old.as_str());
        }
        cache.insert(change.queue.name.to_string(), change.queue.clone());
    }

    /// The one sequence every change to instructions takes (`add`, `reply`,
    /// files, edits, moves, deletes, send again): one durable transaction
    /// that writes the rows, makes sure every queue a pending one is now in
    /// exists and is not archived (in the same transaction, so a rename or an
    /// archive cannot slip between a check and the write and leave work in a
    /// queue nobody sees), and logs one event per changed row (with its
    /// queue's pending count) and per queue brought back; the events are
    /// published in commit order; then the waiting calls of those queues are
    /// offered what they may now take, on this thread, straight after the
    /// commit, and the status is marked out of date.
    pub(super) fn write_instructions(
        &self,
        kind: EventKind,
        body: impl FnOnce(&Db<'_>) -> Result<Vec<Instruction>>,
    ) -> Result<Vec<Instruction>> {
        let ((), events) = self.commit(Durability::Full, |db, out| {
            let mut items = body(db)?;
            db.fill_attachments(&mut items)?;
            let now = Timestamp::now();
            let mut live: Vec<&str> = Vec::new();
            for item in items.iter().filter(|i| i.status == InstructionStatus::Pending) {
                if live.contains(&item.queue.as_str()) {
                    continue;
                }
                live.push(&item.queue);
                if let Some(record) = db.ensure_queue(&item.queue, &now)? {
                    out.log(db, queue_updated(&now, record))?;
                }
            }
            // Each event says how many are pending in its instruction's queue.
            let mut counted: Vec<(String, u64)> = Vec::new();
            for item in items {
                let pending = match counted.iter().find(|(q, _)| *q == item.queue) {
                    Some((_, n)) => *n,
                    None => {
                        let n = db.queue_pending_count(&item.queue)?;
                        counted.push((item.queue.to_string(), n));
                        n
                    }
                };
                out.log(
                    db,
                    Event::new(kind, now.clone(), EventData::Instruction(item), Some(pending)),
                )?;
            }
            Ok(())
        })?;
        let items: Vec<Instruction> = events
            .into_iter()
            .filter_map(|e| match e.data {
                EventData::Instruction(i) => Some(i),
                _ => None,
            })
            .collect();
        let mut kicked: Vec<&str> = Vec::new();
        for item in items.iter().filter(|i| i.status == InstructionStatus::Pending) {
            if !kicked.contains(&item.queue.as_str()) {
                kicked.push(&item.queue);
                self.kick_blocking(&item.queue);
            }
        }
        self.status_dirty.notify_one();
        Ok(items)
    }
}

/// An `instruction.updated` for a delivery's fate (with its files; no
/// pending count: the rail did not change).
pub(super) fn fate_event(db: &Db<'_>, now: &Timestamp, mut item: Instruction) -> Result<Event> {
    db.fill_attachments(std::slice::from_mut(&mut item))?;
    Ok(Event::new(
        EventKind::InstructionUpdated,
        now.clone(),
        EventData::Instruction(item),
        None,
    ))
}

/// A `queue.updated` for a queue made or brought back by a write.
pub(super) fn queue_updated(now: &Timestamp, record: QueueRecord) -> Event {
    let change = crate::events::QueueChange {
        queue: record,
        renamed_from: None,
    };
    Event::new(EventKind::QueueUpdated, now.clone(), EventData::Queue(change), None)
}

/// The blocking task that writes queued claims (`Store::write_queued`). If
/// it is dropped without running (the runtime is shutting down), the
/// queued claims fail instead of waiting for a writer.
struct Writer(Option<Arc<Inner>>);

impl Writer {
    fn run(mut self) {
        if let Some(inner) = self.0.take() {
            inner.store.write_queued();
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if let Some(inner) = self.0.take() {
            inner.store.abandon_queued();
        }
    }
}
