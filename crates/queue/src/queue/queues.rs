//! The person's hand on queues and agents: create, rename, archive, hold and
//! release queues; stop an agent's loop. Each change is one durable write
//! plus a `queue.updated` event (or a status change), and wakes whoever it
//! lets take an instruction.

use super::{Inner, Queue};
use crate::events::{Event, EventData, EventKind, QueueChange};
use crate::model::Timestamp;
use crate::model::{AgentId, QueueInfo, QueueName, QueuePatch, QueueRecord};
use crate::store::Durability;
use crate::sync::RwLockExt as _;
use crate::{Error, Result};

impl Queue {
    /// Every queue with its counts and waiting agents, `default` first.
    /// Archived ones are included only when asked for.
    pub async fn queues(&self, with_archived: bool) -> Result<Vec<QueueInfo>> {
        let (records, tallies) = self
            .blocking(|i| i.store.read(|db| Ok((db.queues()?, db.queue_tallies()?))))
            .await?;
        Ok(self.queue_infos(records, &tallies, with_archived))
    }

    /// Queue rows with their counts and the agents waiting in each now.
    pub(super) fn queue_infos(
        &self,
        records: Vec<QueueRecord>,
        tallies: &[crate::store::QueueTally],
        with_archived: bool,
    ) -> Vec<QueueInfo> {
        let waiting = self.inner.calls.waiting_agents();
        records
            .into_iter()
            .filter(|r| with_archived || !r.archived)
            .map(|r| {
                let tally = tallies.iter().find(|t| t.queue == r.name);
                let mut waiting_agents: Vec<AgentId> = waiting
                    .iter()
                    .filter(|(q, _)| *q == r.name)
                    .map(|(_, a)| a.clone())
                    .collect();
                waiting_agents.sort_unstable();
                QueueInfo {
                    pending_count: tally.map_or(0, |t| t.pending),
                    consumed_count: tally.map_or(0, |t| t.consumed),
                    held_count: tally.map_or(0, |t| t.held),
                    waiting_agents,
                    name: r.name,
                    held: r.held,
                    archived: r.archived,
                    created_at: r.created_at,
                    suffix: r.suffix,
                }
            })
            .collect()
    }

    /// One queue, archived or not.
    pub async fn queue_info(&self, name: &QueueName) -> Result<QueueInfo> {
        self.queues(true)
            .await?
            .into_iter()
            .find(|q| q.name == *name)
            .ok_or_else(|| no_queue(name))
    }

    /// Make sure `queue` exists and is not archived: queues are created on
    /// first use. Costs nothing once the queue is known.
    pub async fn ensure_queue(&self, queue: &QueueName) -> Result<()> {
        let known = self
            .inner
            .queues
            .read_anyway()
            .get(queue.as_str())
            .is_some_and(|q| !q.archived);
        if known {
            return Ok(());
        }
        let queue = queue.clone();
        self.queue_write(move |db| Ok(changes(db.ensure_queue(&queue, &Timestamp::now())?)))
            .await?;
        Ok(())
    }

    /// Create a queue the person names; a conflict if it exists already.
    pub async fn create_queue(&self, name: &QueueName) -> Result<QueueInfo> {
        let wanted = name.clone();
        let created = self
            .queue_write(move |db| {
                if db.get_queue(&wanted)?.is_some_and(|q| !q.archived) {
                    return Err(Error::Conflict(format!("a queue named {wanted} exists already")));
                }
                Ok(changes(db.ensure_queue(&wanted, &Timestamp::now())?))
            })
            .await?;
        tracing::info!(queue = %name, restored = created.is_empty(), "queue created");
        self.queue_info(name).await
    }

    /// Rename, archive or restore, hold or release one queue.
    pub async fn update_queue(&self, name: &QueueName, patch: QueuePatch) -> Result<QueueInfo> {
        let name = name.clone();
        let new_name = patch.name.clone().filter(|n| *n != name);
        if name.is_default() && (new_name.is_some() || patch.archived == Some(true)) {
            return Err(Error::Conflict(
                "the default queue is where plain /mcp agents go: it cannot be renamed or archived".into(),
            ));
        }
        // Some(None): remove the suffix; None: leave it.
        let suffix = patch
            .suffix
            .as_deref()
            .map(|s| crate::model::suffix(Some(s)))
            .transpose()?;
        let current = name.clone();
        let to = new_name.clone();
        let renamed = self
            .queue_write(move |db| {
                let mut changed = Vec::new();
                let Some(mut record) = db.get_queue(&current)? else {
                    return Err(no_queue(&current));
                };
                if let Some(held) = patch.held {
                    changed.extend(changes(db.set_held(Some(&record.name), held)?));
                }
                if let Some(text) = &suffix {
                    changed.extend(changes(db.set_suffix(&record.name, text.as_deref())?));
                }
                if let Some(archived) = patch.archived {
                    if archived {
                        let pending = db.list(&crate::model::Listing::pending().in_queue(&current))?.len();
                        if pending > 0 {
                            return Err(Error::Conflict(format!(
                                "queue {current} still has {pending} pending instruction(s): move or delete them before archiving it"
                            )));
                        }
                    }
                    changed.extend(changes(db.set_archived(&current, archived)?));
                }
                if let Some(to) = &to {
                    if db.get_queue(to)?.is_some() {
                        return Err(Error::Conflict(format!("a queue named {to} exists already")));
                    }
                    record = db
                        .rename_queue(&current, to)?
                        .ok_or_else(|| no_queue(&current))?;
                    changed.retain(|c| c.queue.name != current);
                    changed.push(QueueChange {
                        queue: record,
                        renamed_from: Some(current.clone()),
                    });
                }
                Ok(changed)
            })
            .await?;
        let name = match new_name {
            Some(to) => {
                tracing::info!(from = %name, to = %to, "queue renamed");
                to
            }
            None => name,
        };
        if patch.held == Some(false) {
            self.kick(&name);
        }
        drop(renamed);
        self.mark_status_dirty();
        self.queue_info(&name).await
    }

    /// Hold one queue, or every queue with `None`: calls keep waiting and
    /// end as usual, but nothing is delivered until release. Returns the
    /// queues whose state changed.
    pub async fn set_held(&self, queue: Option<&QueueName>, held: bool) -> Result<Vec<QueueRecord>> {
        let queue = queue.cloned();
        let one = queue.clone();
        let changed = self
            .queue_write(move |db| {
                if let Some(q) = &one {
                    if db.get_queue(q)?.is_none() {
                        return Err(no_queue(q));
                    }
                }
                Ok(changes(db.set_held(one.as_deref(), held)?))
            })
            .await?;
        if !held {
            for q in &changed {
                self.kick(&q.name);
            }
        }
        self.mark_status_dirty();
        tracing::info!(
            queue = queue.as_deref().unwrap_or("(all)"),
            held,
            changed = changed.len(),
            "hold changed"
        );
        Ok(changed)
    }

    /// End one agent's loop: its waiting call, or else its next call, returns
    /// `result_type: "stop"`. One-shot: later calls work normally.
    pub async fn stop_agent(&self, queue: &QueueName, agent: &AgentId) -> Result<()> {
        let (queue, agent) = (queue.clone(), agent.clone());
        let (q, a) = (queue.clone(), agent.clone());
        let known = self
            .blocking(move |i| {
                i.store.write(
                    Durability::Full,
                    |db| db.request_stop(&q, &a, &Timestamp::now()),
                    |_| (),
                )
            })
            .await?;
        if !known {
            return Err(Error::NotFound(format!("no agent {agent} has called in queue {queue}")));
        }
        self.inner.stops().insert((queue.to_string(), agent.to_string()));
        self.inner.calls.stop(&queue, &agent);
        self.mark_status_dirty();
        tracing::info!(queue = %queue, agent_id = %agent, "agent stop requested");
        Ok(())
    }

    /// Forget agents of `queue` (or every queue's): `agent`, or with `None`
    /// every one that is gone (not heard from for longer than the stale
    /// setting). One that is listening now is not forgotten (409).
    pub async fn forget_agents(
        &self,
        queue: Option<&QueueName>,
        agent: Option<&AgentId>,
    ) -> Result<Vec<crate::model::AgentRef>> {
        let queue = queue.cloned();
        let agent = agent.cloned();
        if let Some(a) = &agent {
            let queues: Vec<String> = match &queue {
                Some(q) => vec![q.to_string()],
                None => self.inner.queues.read_anyway().keys().cloned().collect(),
            };
            let waits_in_task = self.waits_in_task();
            let in_task = queues.iter().any(|q| waits_in_task(q, a));
            let calling = self
                .inner
                .calls
                .waiting_agents()
                .iter()
                .any(|(q, id)| id == a && queues.iter().any(|x| x == q.as_str()));
            if in_task || calling {
                return Err(Error::Conflict(format!(
                    "{a} is listening now: stop it first (it would be listed again at once)"
                )));
            }
        }
        // Without a name: exactly the agents the page and `status` call
        // offline (`agent_state`), by name — silence alone would also take
        // one still working on what it took, and miss one that was stopped.
        let names: Vec<(QueueName, AgentId)> = match &agent {
            Some(a) => {
                let q = queue.clone();
                let a = a.clone();
                self.blocking(move |i| i.store.read(|db| db.agents(u32::MAX)))
                    .await?
                    .into_iter()
                    .filter(|row| row.agent_id == a && q.as_ref().is_none_or(|q| *q == row.queue))
                    .map(|row| (row.queue, row.agent_id))
                    .collect()
            }
            None => {
                let stale = self.settings().agent_stale_after_seconds;
                let rows = self.blocking(move |i| i.store.read(|db| db.agents(u32::MAX))).await?;
                let waits_in_task = self.waits_in_task();
                rows.into_iter()
                    .filter(|row| queue.as_ref().is_none_or(|q| *q == row.queue))
                    .filter(|row| {
                        let waiting = self.inner.calls.waiting(&row.queue, &row.agent_id) > 0
                            || waits_in_task(&row.queue, &row.agent_id);
                        super::agents::agent_state(row, waiting, stale) == crate::model::AgentState::Offline
                    })
                    .map(|row| (row.queue, row.agent_id))
                    .collect()
            }
        };
        let forgotten = self
            .blocking(move |i| {
                i.store.write(
                    Durability::Full,
                    |db| {
                        let mut gone = Vec::new();
                        for (q, a) in &names {
                            gone.extend(db.forget_agent(q, a)?);
                        }
                        Ok(gone)
                    },
                    |_| (),
                )
            })
            .await?;
        // Those listening now are no one to forget (a waiting call re-lists its agent).
        let listening = self.inner.calls.waiting_agents();
        let waits_in_task = self.waits_in_task();
        let forgotten: Vec<crate::model::AgentRef> = forgotten
            .into_iter()
            .filter(|(q, id)| !listening.iter().any(|(lq, lid)| lq == q && lid == id) && !waits_in_task(q, id))
            .map(|(queue, agent_id)| crate::model::AgentRef { queue, agent_id })
            .collect();
        self.mark_status_dirty();
        tracing::info!(forgotten = forgotten.len(), "agents forgotten");
        Ok(forgotten)
    }

    /// One durable write that changes queues: logs and publishes a
    /// `queue.updated` per changed queue and updates the cache on commit.
    async fn queue_write(
        &self,
        body: impl FnOnce(&crate::store::Db<'_>) -> Result<Vec<QueueChange>> + Send + 'static,
    ) -> Result<Vec<QueueRecord>> {
        self.blocking(move |i: &Inner| {
            i.commit(Durability::Full, |db, out| {
                let now = Timestamp::now();
                for change in body(db)? {
                    out.log(
                        db,
                        Event::new(EventKind::QueueUpdated, now.clone(), EventData::Queue(change), None),
                    )?;
                }
                Ok(())
            })
        })
        .await
        .map(|((), events)| {
            self.mark_status_dirty();
            events
                .into_iter()
                .filter_map(|e| match e.data {
                    EventData::Queue(c) => Some(c.queue),
                    _ => None,
                })
                .collect()
        })
    }
}

fn no_queue(name: &str) -> Error {
    Error::NotFound(format!("no queue named {name}"))
}

/// Changed rows as changes that are not renames.
fn changes(records: impl IntoIterator<Item = QueueRecord>) -> Vec<QueueChange> {
    records
        .into_iter()
        .map(|queue| QueueChange {
            queue,
            renamed_from: None,
        })
        .collect()
}
