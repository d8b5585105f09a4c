//! The domain service: everything a person or an agent can do to the queue.
//!
//! It owns the rules (validation, pending-only edits, named queues and
//! targets, fair delivery, waiting, supersede, hold and stop) and turns each
//! change into one store transaction plus the events that describe it. It
//! knows nothing of HTTP or MCP: both front ends call the same methods.
//!
//! This file is the service's plumbing: the shared state, the blocking
//! bridge to the store, the reads, and the one write sequence every change
//! to instructions takes ([`Inner::write_instructions`]). What a person
//! changes is in `changes.rs`; what an agent's call does in `wait.rs` and
//! `claim.rs`; the other rooms are named for what they own.

mod agents;
mod attachments;
mod changes;
mod claim;
mod commit;
mod delivery;
mod devices;
mod dispatch;
mod export;
mod import;
mod queues;
mod reports;
mod status;
mod tasks;
mod templates;
mod uploads;
mod wait;

pub use wait::Answer;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, RwLock};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::events::{Bus, LoggedEvent};
use crate::model::{
    Delivery, Instruction, InstructionId, InstructionStatus, Listing, QueueCounts, QueueRecord, Settings,
};
use crate::store::{Db, Durability, Store};
use crate::{Error, Result};

use crate::model::Timestamp;
use crate::sync::{MutexExt as _, RwLockExt as _};
pub use agents::agent_state;

/// Facts about the running server that the status report includes.
#[derive(Debug, Clone)]
pub struct ServerFacts {
    pub url: String,
    pub version: String,
    pub started_at: Timestamp,
    /// The configured port, when it was taken and another one is in use.
    pub requested_port: Option<u16>,
    /// The other account holding that port, if it is not ours.
    pub requested_port_holder: Option<String>,
    /// The damaged database moved aside at start, if one was.
    pub recovered: Option<crate::model::RecoveryNotice>,
    /// The folder of the daily log files, when they are written.
    pub log_dir: Option<String>,
    /// The database, when it is not the default one: what the stdio bridge
    /// and the Stop hook are given (`--db-path`) to find this server.
    pub database: Option<String>,
}

/// How many store jobs may run on blocking threads at once. The store has
/// one connection, so more would only wait on its lock — each on a thread
/// of its own, whose stack and allocator arena stay resident after a burst
/// (`docs/PERFORMANCE.md`, "Tasks"). Four leave room for work that is not
/// the database's (files, decoding) beside it.
const STORE_JOBS_AT_ONCE: usize = 4;

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
    /// Tasks polled lately (agents waiting through a task).
    tasks: tasks::Live,
    /// Store work running on blocking threads at once (`blocking`).
    store_jobs: Arc<tokio::sync::Semaphore>,
    /// (queue, agent) with a stop request not delivered yet: mirrors the
    /// stored requests so a claim touches them only when there is one.
    stops: std::sync::Mutex<std::collections::HashSet<(String, String)>>,
    /// Set when the status snapshot is out of date; a task publishes a fresh one.
    status_dirty: Notify,
    /// Deliveries to settle (`sent`, `in_doubt`), written in batches by a task.
    settle: tokio::sync::mpsc::UnboundedSender<(String, Delivery)>,
    /// That task, and what tells it the server has stopped (`finish_settling`).
    settler: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    serving_done: CancellationToken,
    /// Tool calls not ended yet (`call_in_flight`): one that claimed as the
    /// server stopped leaves its settlement when it ends.
    calls_in_flight: tokio_util::task::TaskTracker,
    /// One import at a time: two imports of one file would both find its ids
    /// free, write the same attachment folders, and the loser's clean-up
    /// would remove the files the winner's rows name.
    importing: tokio::sync::Mutex<()>,
    /// This database's instance id (see `ServerSummary::instance`).
    instance: String,
    /// The last request refused for want of the token (`note_refused`).
    refused: std::sync::Mutex<Option<crate::model::Refusal>>,
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
                queues: RwLock::new(queues.into_iter().map(|q| (q.name.to_string(), q)).collect()),
                dispatch: dispatch::Dispatch::default(),
                calls: agents::Calls::default(),
                tasks: tasks::Live::default(),
                store_jobs: Arc::new(tokio::sync::Semaphore::new(STORE_JOBS_AT_ONCE)),
                stops: std::sync::Mutex::new(stops.into_iter().collect()),
                status_dirty: Notify::new(),
                settle,
                settler: std::sync::Mutex::new(None),
                serving_done: CancellationToken::new(),
                calls_in_flight: tokio_util::task::TaskTracker::new(),
                importing: tokio::sync::Mutex::new(()),
                instance,
                refused: std::sync::Mutex::default(),
                shutdown,
            }),
        };
        tokio::spawn(status::publish_loop(queue.clone()));
        let settler = tokio::spawn(delivery::settle_loop(queue.clone(), settling));
        *queue.inner.settler.lock_anyway() = Some(settler);
        tokio::spawn(status::fault_watch(queue.clone()));
        tokio::spawn(tasks::sweep_loop(queue.clone()));
        Ok(queue)
    }

    pub fn bus(&self) -> &Bus {
        &self.inner.bus
    }

    pub fn facts(&self) -> &ServerFacts {
        &self.inner.facts
    }

    /// A request was refused for want of the token: shown in the status
    /// (the page says an agent was turned away) until a later one replaces it.
    /// Only an agent's (`/mcp`): a browser's first requests before its
    /// sign-in are refused too, and would replace the agent's, which is the
    /// one the person must act on.
    pub fn note_refused(&self, path: &str, user_agent: &str) {
        if !(path == "/mcp" || path.starts_with("/mcp/")) {
            return;
        }
        *self.inner.refused.lock_anyway() = Some(crate::model::Refusal {
            at: Timestamp::now(),
            path: path.to_owned(),
            user_agent: user_agent.chars().take(200).collect(),
        });
        self.mark_status_dirty();
    }

    /// This database's instance id (`ServerSummary::instance`).
    pub fn instance(&self) -> &str {
        &self.inner.instance
    }

    /// Run blocking store work off the async threads, at most
    /// [`STORE_JOBS_AT_ONCE`] at a time; the rest wait as futures.
    fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Inner) -> Result<T> + Send + 'static,
    ) -> impl Future<Output = Result<T>> + Send + 'static {
        self.on_blocking_thread(true, f)
    }

    /// The same for work that can take long — files written or read whole
    /// (a backup, an export, attachments): outside the bound, so that a few
    /// of them never hold up the short store work every call needs.
    fn blocking_long<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Inner) -> Result<T> + Send + 'static,
    ) -> impl Future<Output = Result<T>> + Send + 'static {
        self.on_blocking_thread(false, f)
    }

    /// On the heap at once: the job and its wait for a turn would otherwise
    /// be laid out in every caller's future (a waiting call's among them).
    fn on_blocking_thread<T: Send + 'static>(
        &self,
        bounded: bool,
        f: impl FnOnce(&Inner) -> Result<T> + Send + 'static,
    ) -> Pin<Box<dyn Future<Output = Result<T>> + Send + 'static>> {
        let queue = self.clone();
        Box::pin(async move {
            let faulty = queue.faulty();
            let turn = if bounded {
                let jobs = queue.inner.store_jobs.clone();
                Some(
                    jobs.acquire_owned()
                        .await
                        .map_err(|e| Error::internal("the store's job queue closed", e))?,
                )
            } else {
                None
            };
            // The turn goes with the job: a caller that stops waiting does
            // not let another job start beside it.
            let inner = queue.inner.clone();
            let result = tokio::task::spawn_blocking(move || {
                let _turn = turn;
                f(&inner)
            })
            .await
            .map_err(|e| Error::internal("a storage task failed", e))?;
            queue.after_store_work(faulty);
            result
        })
    }

    /// Whether a storage fault shows now (read before store work).
    fn faulty(&self) -> bool {
        self.inner.store.fault_now().is_some()
    }

    /// The status shows a storage fault while it lasts: republish it when
    /// store work made one start or clear (`faulty` read before the work).
    fn after_store_work(&self, faulty: bool) {
        if faulty != self.faulty() {
            self.mark_status_dirty();
        }
    }

    // ---- reads --------------------------------------------------------------

    /// Instructions for a listing; consumed ones carry their report, if any.
    pub async fn list(&self, listing: Listing) -> Result<Vec<Instruction>> {
        self.blocking(move |i| {
            i.store.read(|db| {
                let mut items = db.list(&listing)?;
                db.fill_attachments(&mut items)?;
                let consumed: Vec<InstructionId> = items
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

    pub async fn get(&self, id: InstructionId) -> Result<Instruction> {
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
        read(&self.inner.settings.read_anyway())
    }

    /// Events after `after_id` from the log, oldest first (for SSE replay).
    pub async fn events_after(&self, after_id: i64, limit: u32) -> Result<Vec<LoggedEvent>> {
        let stored = self
            .blocking(move |i| i.store.read(|db| db.events_after(after_id, limit)))
            .await?;
        Ok(stored
            .into_iter()
            .map(|e| LoggedEvent {
                id: e.id,
                kind: e.kind,
                json: e.data,
            })
            .collect())
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
        self.stops.lock_anyway()
    }

    /// Whether `queue` is held (a queue not known yet is not).
    fn is_held(&self, queue: &str) -> bool {
        self.queues.read_anyway().get(queue).is_some_and(|q| q.held)
    }
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
pub(crate) mod tests;
