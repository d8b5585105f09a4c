//! The domain service: everything a person or an agent can do to the queue.
//!
//! It owns the rules (validation, pending-only edits, named queues and
//! targets, fair delivery, waiting, supersede, hold and stop) and turns each
//! change into one store transaction plus the events that describe it. It
//! knows nothing of HTTP or MCP: both front ends call the same methods.

mod agents;
mod attachments;
mod delivery;
mod dispatch;
mod import;
mod queues;
mod reports;
mod status;
mod templates;
mod wait;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::events::{Bus, Event, EventData, EventKind};
use crate::model::{
    agent_id, Delivery, Instruction, InstructionPatch, InstructionStatus, Listing, MoveTo, NewInstruction, QueueCounts,
    QueueRecord, RequeuePlace, Settings, SettingsPatch,
};
use crate::store::{Db, Durability, PendingChange, Store};
use crate::{time, Error, Result};

pub use agents::agent_state;

/// Facts about the running server that the status report includes.
#[derive(Debug, Clone)]
pub struct ServerFacts {
    pub url: String,
    pub version: String,
    pub started_at: String,
    /// The configured port, when it was taken and another one is in use.
    pub requested_port: Option<u16>,
    /// The other account holding that port, if it is not ours.
    pub requested_port_holder: Option<String>,
    /// The damaged database moved aside at start, if one was.
    pub recovered: Option<crate::model::RecoveryNotice>,
    /// The folder of the daily log files, when they are written.
    pub log_dir: Option<String>,
}

/// The queue service. Cheap to clone; all clones share one queue.
#[derive(Clone)]
pub struct Queue {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    bus: Bus,
    facts: ServerFacts,
    /// The runtime settings, cached: every agent call reads them.
    settings: RwLock<Settings>,
    /// Every queue by name, cached: every call checks its queue exists and is not held.
    queues: RwLock<HashMap<String, QueueRecord>>,
    /// Waiting calls per queue, and who is offered what.
    dispatch: dispatch::Dispatch,
    /// Live `get_user_request` calls per agent (supersede, "waiting", stop).
    calls: agents::Calls,
    /// (queue, agent) with a stop request not delivered yet: mirrors the
    /// stored requests so a claim touches them only when there is one.
    stops: std::sync::Mutex<std::collections::HashSet<(String, String)>>,
    /// Set when the status snapshot is out of date; a task publishes a fresh one.
    status_dirty: Notify,
    /// Deliveries to settle (`sent`, `in_doubt`), written in batches by a task.
    settle: tokio::sync::mpsc::UnboundedSender<(String, Delivery)>,
    /// One import at a time: two imports of one file would both find its ids
    /// free, write the same attachment folders, and the loser's clean-up
    /// would remove the files the winner's rows name.
    importing: tokio::sync::Mutex<()>,
    /// This database's instance id (see `ServerSummary::instance`).
    instance: String,
    shutdown: CancellationToken,
}

impl Queue {
    /// Build the service over an opened store. `seed` fills in settings the
    /// database does not have yet (first run); stored settings win afterwards.
    /// Spawns the status publisher, which stops with `shutdown`.
    pub fn new(store: Store, seed: &Settings, facts: ServerFacts, shutdown: CancellationToken) -> Result<Queue> {
        seed.validate()?;
        let (settings, queues, stops, instance) = store.write(
            Durability::Full,
            |db| {
                db.seed_settings(seed)?;
                Ok((db.settings()?, db.queues()?, db.pending_stops()?, db.instance()?))
            },
            |_| (),
        )?;
        let (settle, settling) = tokio::sync::mpsc::unbounded_channel();
        let queue = Queue {
            inner: Arc::new(Inner {
                store,
                bus: Bus::default(),
                facts,
                settings: RwLock::new(settings),
                queues: RwLock::new(queues.into_iter().map(|q| (q.name.clone(), q)).collect()),
                dispatch: dispatch::Dispatch::default(),
                calls: agents::Calls::default(),
                stops: std::sync::Mutex::new(stops.into_iter().collect()),
                status_dirty: Notify::new(),
                settle,
                importing: tokio::sync::Mutex::new(()),
                instance,
                shutdown,
            }),
        };
        tokio::spawn(status::publish_loop(queue.clone()));
        tokio::spawn(delivery::settle_loop(queue.clone(), settling));
        tokio::spawn(status::fault_watch(queue.clone()));
        Ok(queue)
    }

    pub fn bus(&self) -> &Bus {
        &self.inner.bus
    }

    pub fn facts(&self) -> &ServerFacts {
        &self.inner.facts
    }

    /// Run blocking store work off the async threads.
    async fn blocking<T: Send + 'static>(&self, f: impl FnOnce(&Inner) -> Result<T> + Send + 'static) -> Result<T> {
        let inner = self.inner.clone();
        let faulty = inner.store.fault_now().is_some();
        let result = tokio::task::spawn_blocking(move || f(&inner))
            .await
            .map_err(|e| Error::internal("a storage task failed", e))?;
        // The status shows a storage fault while it lasts: republish when it starts or clears.
        if faulty != self.inner.store.fault_now().is_some() {
            self.mark_status_dirty();
        }
        result
    }

    /// A private folder for one operation's temporary files (see `Store::work_dir`).
    pub async fn work_dir(&self) -> Result<crate::private_fs::WorkDir> {
        self.blocking(|i| i.store.work_dir()).await
    }

    /// Write a backup archive (a consistent snapshot and the attachment files) to `out`.
    pub async fn backup_to(&self, out: std::path::PathBuf) -> Result<()> {
        self.blocking(move |i| i.store.backup_to(&out)).await
    }

    /// Everything of `queue` (or every queue) for an export: all pending
    /// instructions, the delivered ones since `since`, and the reports that
    /// stand alone.
    pub async fn export(&self, queue: Option<String>, since: Option<String>) -> Result<crate::export::Export> {
        let listing = Listing {
            status: crate::model::StatusFilter::All,
            queue: queue.clone(),
            history: crate::model::HistoryFilter {
                since: since.clone(),
                ..Default::default()
            },
            ..Listing::default()
        };
        let instructions = self.list(listing).await?;
        let reports = self
            .reports(queue.clone(), None, None, u32::MAX)
            .await?
            .into_iter()
            .filter(|r| r.instruction_id.is_none() && since.as_ref().is_none_or(|s| r.created_at >= *s))
            .collect();
        Ok(crate::export::Export {
            format: crate::export::FORMAT_NAME,
            version: crate::export::FORMAT_VERSION,
            exported_at: time::now(),
            queue,
            since,
            instructions,
            reports,
        })
    }

    /// An export as a bundle written to `out`: its JSON and each attachment's original file.
    pub async fn export_bundle(
        &self,
        queue: Option<String>,
        since: Option<String>,
        out: std::path::PathBuf,
    ) -> Result<()> {
        let data = self.export(queue, since).await?;
        self.blocking(move |i| {
            let originals = i.store.read(|db| {
                let mut paths = HashMap::new();
                for a in data.instructions.iter().flat_map(|x| &x.attachments) {
                    if let Some(row) = db.get_attachment(&a.id)? {
                        paths.insert(a.id.clone(), i.store.files().path(&a.instruction_id, &row.file));
                    }
                }
                Ok(paths)
            })?;
            let file = crate::private_fs::create_new(&out)
                .map_err(|e| Error::internal(format!("cannot write {}", out.display()), e))?;
            crate::export::write_bundle(&data, std::io::BufWriter::new(file), |a| {
                originals.get(&a.id).cloned().unwrap_or_default()
            })
        })
        .await
    }

    // ---- reads --------------------------------------------------------------

    /// Instructions for a listing; consumed ones carry their report, if any.
    pub async fn list(&self, listing: Listing) -> Result<Vec<Instruction>> {
        self.blocking(move |i| {
            i.store.read(|db| {
                let mut items = db.list(&listing)?;
                db.fill_attachments(&mut items)?;
                let consumed: Vec<String> = items
                    .iter()
                    .filter(|i| i.status == InstructionStatus::Consumed)
                    .map(|i| i.id.clone())
                    .collect();
                if !consumed.is_empty() {
                    for report in db.reports_for(&consumed)? {
                        if let Some(item) = items.iter_mut().find(|i| Some(&i.id) == report.instruction_id.as_ref()) {
                            item.report = Some(report);
                        }
                    }
                }
                Ok(items)
            })
        })
        .await
    }

    pub async fn get(&self, id: String) -> Result<Instruction> {
        self.blocking(move |i| {
            i.store.read(|db| {
                let mut item = db.get_instruction(&id)?.ok_or_else(|| not_found(&id))?;
                db.fill_attachments(std::slice::from_mut(&mut item))?;
                Ok(item)
            })
        })
        .await
    }

    pub async fn counts(&self) -> Result<QueueCounts> {
        self.blocking(|i| i.store.read(|db| db.counts())).await
    }

    pub fn settings(&self) -> Settings {
        self.setting(Settings::clone)
    }

    /// One value of the settings, read without copying the rest (the guard
    /// asks on every request).
    pub fn setting<T>(&self, read: impl FnOnce(&Settings) -> T) -> T {
        read(&self.inner.settings.read().unwrap_or_else(|p| p.into_inner()))
    }

    // ---- a person's changes (durable: synchronous=FULL) ---------------------

    /// Queue a new instruction at the back of its queue (created if new),
    /// for anyone there or for one agent.
    pub async fn add(&self, new: impl Into<NewInstruction>) -> Result<Instruction> {
        let new = new.into();
        let content = validate_content(new.content)?;
        // A queue given must be a valid name (blank is not "default" here: it is a mistake).
        let queue = match new.queue.as_deref() {
            Some(q) => crate::model::queue_name(q)?,
            None => crate::model::DEFAULT_QUEUE.to_owned(),
        };
        let target = agent_id(new.target.as_deref())?;
        let item = self
            .blocking(move |i| {
                i.write_instructions(EventKind::InstructionCreated, |db| {
                    let item = Instruction::new_pending(content, queue, target, db.next_position()?, time::now());
                    db.insert_instruction(&item)?;
                    Ok(vec![item])
                })
            })
            .await?;
        let item = first(item)?;
        tracing::info!(id = %item.id, queue = %item.queue, target = ?item.target, bytes = item.content.len(), "instruction created");
        Ok(item)
    }

    /// Change a pending instruction's text, queue (it goes to the back of
    /// the new one) or target.
    pub async fn edit(&self, id: String, patch: InstructionPatch) -> Result<Instruction> {
        let content = patch.content.map(validate_content).transpose()?;
        let queue = patch.queue.as_deref().map(crate::model::queue_name).transpose()?;
        let target = patch.target.map(|t| agent_id(t.as_deref())).transpose()?;
        let items = self
            .blocking(move |i| {
                i.write_instructions(EventKind::InstructionUpdated, |db| {
                    let position = match &queue {
                        Some(q) => Some((q.as_str(), db.next_position()?)),
                        None => None,
                    };
                    let change = PendingChange {
                        content: content.as_deref(),
                        queue: position,
                        target: target.as_ref().map(|t| t.as_deref()),
                    };
                    match db.update_pending(&id, &change, &time::now())? {
                        Some(item) => Ok(vec![item]),
                        None => Err(pending_only(db, &id, "edited")?),
                    }
                })
            })
            .await?;
        let item = first(items)?;
        tracing::info!(id = %item.id, queue = %item.queue, target = ?item.target, bytes = item.content.len(), "instruction updated");
        Ok(item)
    }

    /// Remove a pending instruction.
    pub async fn delete(&self, id: String) -> Result<Instruction> {
        let items = self
            .blocking(move |i| {
                i.write_instructions(EventKind::InstructionDeleted, |db| match db.delete_pending(&id)? {
                    Some(item) => Ok(vec![item]),
                    None => Err(pending_only(db, &id, "deleted")?),
                })
            })
            .await?;
        let item = first(items)?;
        // After the commit (the rows went with it); a crash first leaves files the start sweeps.
        let id = item.id.clone();
        self.blocking(move |i| {
            i.store.files().remove_all(&id);
            Ok(())
        })
        .await?;
        tracing::info!(id = %item.id, "instruction deleted");
        Ok(item)
    }

    /// Move a pending instruction before/after another pending one of its
    /// queue, or to the front/back of its queue. Returns that queue's pending
    /// rail in its new order.
    pub async fn move_to(&self, id: String, to: MoveTo) -> Result<Vec<Instruction>> {
        let given = [to.before_id.is_some(), to.after_id.is_some(), to.to.is_some()];
        if given.iter().filter(|g| **g).count() != 1 {
            return Err(Error::Invalid(
                "give exactly one of before_id, after_id or to (\"front\" | \"back\")".into(),
            ));
        }
        let queue = self
            .blocking(move |i| {
                i.write_instructions(EventKind::InstructionUpdated, |db| {
                    let Some(queue) = db
                        .get_instruction(&id)?
                        .filter(|i| i.status == InstructionStatus::Pending)
                        .map(|i| i.queue)
                    else {
                        return Err(pending_only(db, &id, "moved")?);
                    };
                    let mut order = db.pending_ids(&queue)?;
                    let Some(from) = order.iter().position(|x| *x == id) else {
                        return Err(pending_only(db, &id, "moved")?);
                    };
                    let moving = order.remove(from);
                    let at = match (&to.before_id, &to.after_id, to.to) {
                        (Some(anchor), _, _) | (_, Some(anchor), _) => {
                            if *anchor == moving {
                                return Err(Error::Invalid(
                                    "an instruction cannot be moved relative to itself".into(),
                                ));
                            }
                            let a = order.iter().position(|x| x == anchor).ok_or_else(|| {
                                Error::Conflict(format!(
                                "instruction {anchor} is not pending in queue {queue}; reload the queue and try again"
                            ))
                            })?;
                            if to.before_id.is_some() {
                                a
                            } else {
                                a + 1
                            }
                        }
                        (_, _, Some(RequeuePlace::Front)) => 0,
                        _ => order.len(),
                    };
                    order.insert(at, moving);
                    let base = db.min_pending_position(&queue)?.unwrap_or(1);
                    let mut changed = db.set_pending_order(&order, base, &time::now())?;
                    // The moved one is logged even when its number did not change
                    // (front of a one-item rail): the caller learns its queue here.
                    if changed.is_empty() {
                        changed.extend(db.get_instruction(&order[at])?);
                    }
                    Ok(changed)
                })
            })
            .await?
            .into_iter()
            .next()
            .map(|i| i.queue)
            .unwrap_or_default();
        self.list(Listing::pending().in_queue(queue)).await
    }

    /// "Send again": queue a copy of a consumed instruction as a new pending
    /// one. A delivery in doubt goes to the agent it was meant for, and is
    /// marked `resent`.
    pub async fn requeue(&self, id: String, place: RequeuePlace) -> Result<Instruction> {
        let source_id = id.clone();
        let items = self
            .blocking(move |i| {
                i.write_instructions(EventKind::InstructionCreated, |db| {
                    let source = db.get_instruction(&id)?.ok_or_else(|| not_found(&id))?;
                    if source.status != InstructionStatus::Consumed {
                        return Err(Error::Conflict(format!(
                            "instruction {id} is still pending; only a consumed instruction can be sent again"
                        )));
                    }
                    let position = match place {
                        RequeuePlace::Front => db.front_position(&source.queue)?,
                        RequeuePlace::Back => db.next_position()?,
                    };
                    let target = if source.delivery == Some(Delivery::InDoubt) {
                        source.consumed_by_agent_id.or(source.target)
                    } else {
                        source.target
                    };
                    let item = Instruction::new_pending(source.content, source.queue, target, position, time::now());
                    db.insert_instruction(&item)?;
                    // Its files come along: linked into the copy's folder before the rows commit.
                    let rows = db.attachments_of(&id)?;
                    if !rows.is_empty() {
                        let copies = attachments::copies(&rows, &item.id);
                        let names: Vec<(String, String)> = rows
                            .iter()
                            .zip(&copies)
                            .flat_map(|(old, new)| {
                                let mut pairs = vec![(old.file.clone(), new.file.clone())];
                                if old.delivery_file != old.file {
                                    pairs.push((old.delivery_file.clone(), new.delivery_file.clone()));
                                }
                                pairs
                            })
                            .collect();
                        i.store
                            .files()
                            .copy(&id, &item.id, &names)
                            .map_err(|e| Error::internal("copying an instruction's attachments", e))?;
                        for row in &copies {
                            db.insert_attachment(row)?;
                        }
                    }
                    Ok(vec![item])
                })
            })
            .await?;
        let item = first(items)?;
        // The source, if it was in doubt, is now resent (a no-op otherwise).
        if self.mark_resent(source_id).await? {
            self.mark_status_dirty();
        }
        tracing::info!(id = %item.id, "instruction queued again");
        Ok(item)
    }

    /// Change runtime settings; returns them as stored.
    pub async fn update_settings(&self, patch: SettingsPatch) -> Result<Settings> {
        let next = patch.apply(self.settings());
        next.validate()?;
        let stored = next.clone();
        self.blocking(move |i| {
            i.store.write(
                Durability::Full,
                |db| {
                    db.put_settings(&stored)?;
                    let event = Event::new(
                        EventKind::ConfigUpdated,
                        time::now(),
                        EventData::Config(stored.clone()),
                        None,
                    );
                    let id = db.append_event(event.kind.as_str(), &event.timestamp, &event.json)?;
                    Ok(Event { id: Some(id), ..event })
                },
                |event| {
                    *i.settings.write().unwrap_or_else(|p| p.into_inner()) = stored.clone();
                    i.bus.publish(event.clone());
                },
            )
        })
        .await?;
        tracing::info!(
            default_wait_seconds = next.default_wait_seconds,
            agent_stale_after_seconds = next.agent_stale_after_seconds,
            default_empty_response_bytes = next.default_empty_response.len(),
            "settings updated"
        );
        self.mark_status_dirty();
        Ok(next)
    }

    /// Events after `after_id` from the log, oldest first (for SSE replay).
    pub async fn events_after(&self, after_id: i64, limit: u32) -> Result<Vec<crate::store::StoredEvent>> {
        self.blocking(move |i| i.store.read(|db| db.events_after(after_id, limit)))
            .await
    }

    /// The oldest event id still in the log, and the newest ever assigned.
    pub async fn event_log_bounds(&self) -> Result<(Option<i64>, i64)> {
        self.blocking(|i| i.store.read(|db| Ok((db.oldest_event_id()?, db.last_event_id()?))))
            .await
    }

    pub async fn integrity_check(&self) -> Result<String> {
        self.blocking(|i| i.store.integrity_check()).await
    }

    pub(crate) fn mark_status_dirty(&self) {
        self.inner.status_dirty.notify_one();
    }
}

impl Inner {
    fn stops(&self) -> std::sync::MutexGuard<'_, std::collections::HashSet<(String, String)>> {
        self.stops.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `queue` is held (a queue not known yet is not).
    fn is_held(&self, queue: &str) -> bool {
        self.queues
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(queue)
            .is_some_and(|q| q.held)
    }

    /// Keep the cache in step with a queue change once it is committed.
    fn remember(&self, change: &crate::events::QueueChange) {
        let mut cache = self.queues.write().unwrap_or_else(|p| p.into_inner());
        if let Some(old) = &change.renamed_from {
            cache.remove(old);
        }
        cache.insert(change.queue.name.clone(), change.queue.clone());
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
    fn write_instructions(
        &self,
        kind: EventKind,
        body: impl FnOnce(&Db<'_>) -> Result<Vec<Instruction>>,
    ) -> Result<Vec<Instruction>> {
        let events = self.store.write(
            Durability::Full,
            |db| {
                let mut items = body(db)?;
                db.fill_attachments(&mut items)?;
                let now = time::now();
                let mut events = Vec::new();
                let mut live: Vec<&str> = Vec::new();
                for item in items.iter().filter(|i| i.status == InstructionStatus::Pending) {
                    if live.contains(&item.queue.as_str()) {
                        continue;
                    }
                    live.push(&item.queue);
                    if let Some(record) = db.ensure_queue(&item.queue, &now)? {
                        let change = crate::events::QueueChange {
                            queue: record,
                            renamed_from: None,
                        };
                        events.push(log_event(
                            db,
                            Event::new(EventKind::QueueUpdated, now.clone(), EventData::Queue(change), None),
                        )?);
                    }
                }
                // Each event says how many are pending in its instruction's queue.
                let mut counted: Vec<(String, u64)> = Vec::new();
                for item in items {
                    let pending = match counted.iter().find(|(q, _)| *q == item.queue) {
                        Some((_, n)) => *n,
                        None => {
                            let n = db.queue_pending_count(&item.queue)?;
                            counted.push((item.queue.clone(), n));
                            n
                        }
                    };
                    events.push(log_event(
                        db,
                        Event::new(kind, now.clone(), EventData::Instruction(item), Some(pending)),
                    )?);
                }
                Ok(events)
            },
            |events| {
                for e in events {
                    if let EventData::Queue(change) = &e.data {
                        self.remember(change);
                    }
                    self.bus.publish(e.clone());
                }
            },
        )?;
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
/// pending count: the rail did not change), logged.
fn fate_event(db: &Db<'_>, now: &str, mut item: Instruction) -> Result<Event> {
    db.fill_attachments(std::slice::from_mut(&mut item))?;
    log_event(
        db,
        Event::new(
            EventKind::InstructionUpdated,
            now.to_owned(),
            EventData::Instruction(item),
            None,
        ),
    )
}

/// Persist an event in the log and return it with its id.
fn log_event(db: &Db<'_>, event: Event) -> Result<Event> {
    let id = db.append_event(event.kind.as_str(), &event.timestamp, &event.json)?;
    Ok(Event { id: Some(id), ..event })
}

fn first(items: Vec<Instruction>) -> Result<Instruction> {
    items
        .into_iter()
        .next()
        .ok_or_else(|| Error::internal("a write returned no row", "empty RETURNING"))
}

fn not_found(id: &str) -> Error {
    Error::NotFound(format!("no instruction with id {id}"))
}

/// Explain why a pending-only change did not apply: missing, or already consumed.
fn pending_only(db: &Db<'_>, id: &str, verb: &str) -> Result<Error> {
    Ok(match db.get_instruction(id)? {
        None => not_found(id),
        Some(i) => Error::Conflict(format!(
            "instruction {id} was already consumed by agent {} at {}; it can no longer be {verb} (use \"send again\" to queue it anew)",
            i.consumed_by_agent_id.as_deref().unwrap_or("unknown"),
            i.consumed_at.as_deref().unwrap_or("an unknown time"),
        )),
    })
}

/// Refuse empty, whitespace-only, oversized or NUL-carrying instructions.
/// The text is kept as typed (no trimming): indentation can matter.
pub fn validate_content(content: String) -> Result<String> {
    crate::model::Content::new(content).map(crate::model::Content::into_string)
}

#[cfg(test)]
mod tests;
