//! The status report (`GET /api/status`, `status.changed`): server facts,
//! agents with their inferred state, queue counts and settings.
//!
//! Snapshots are published by one task that coalesces bursts: every agent
//! call marks the status dirty, and under load many marks become one
//! snapshot instead of one database read per call.

use super::{agent_state, Queue};
use crate::events::{Event, EventData, EventKind};
use crate::model::{
    AgentActivity, AgentClient, AgentState, AgentStatus, AgentSummary, ClientName, ServerState, ServerSummary,
    Settings, StatusSnapshot,
};
use crate::Result;

/// The shortest time between two snapshots: well under what a person
/// notices on a lamp or a count, long enough to keep snapshots off the claim
/// path under load (`npm run bench`, "claims/s").
const SNAPSHOT_EVERY: std::time::Duration = std::time::Duration::from_millis(25);

/// How many agents the report lists, most relevant first.
const AGENTS_LISTED: u32 = 50;

fn rank(s: AgentState) -> u8 {
    match s {
        AgentState::NeedsYou => 0,
        AgentState::Listening => 1,
        AgentState::Working => 2,
        AgentState::Idle => 3,
        AgentState::Offline => 4,
    }
}

impl Queue {
    /// The current status report.
    pub async fn status(&self) -> Result<StatusSnapshot> {
        // Every queue's kept counts; the totals are their sums.
        let (activity, records, tallies, questions, in_doubt) = self
            .blocking(|i| {
                i.store.read(|db| {
                    Ok((
                        db.agents(AGENTS_LISTED)?,
                        db.queues()?,
                        db.queue_tallies()?,
                        db.open_questions()?,
                        db.in_doubt_count()?,
                    ))
                })
            })
            .await?;
        let settings = self.settings();
        let agents = self.agents_now(activity, &questions, &settings);
        Ok(StatusSnapshot {
            server: self.server_summary(),
            agent: AgentSummary::of(agents.first()),
            agents,
            queue: crate::store::QueueTally::totals(&tallies, in_doubt),
            queues: self.queue_infos(records, &tallies, false),
            settings,
        })
    }

    /// The agents as the store has them, each with its state now (waiting
    /// through a call or a task, asking, stopped), and the waiting calls
    /// whose first write has not landed yet; the most relevant first.
    fn agents_now(
        &self,
        activity: Vec<AgentActivity>,
        questions: &[(String, String, String)],
        settings: &Settings,
    ) -> Vec<AgentStatus> {
        let asking = |queue: &str, agent: &str| {
            questions
                .iter()
                .find(|(q, a, _)| q == queue && a == agent)
                .map(|(_, _, id)| id.clone())
        };
        let waits_in_task = self.waits_in_task();
        let mut agents: Vec<AgentStatus> = activity
            .into_iter()
            .map(|a| {
                let in_task = waits_in_task(&a.queue, &a.agent_id);
                let waiting = self.inner.calls.waiting(&a.queue, &a.agent_id) > 0 || in_task;
                let asks = asking(&a.queue, &a.agent_id);
                let state = match agent_state(&a, waiting, settings.agent_stale_after_seconds) {
                    AgentState::Listening if asks.is_some() => AgentState::NeedsYou,
                    state => state,
                };
                let client = a.client.map(|name| {
                    AgentClient::of(
                        &ClientName {
                            name,
                            version: a.client_version,
                        },
                        settings.default_wait_seconds,
                    )
                });
                AgentStatus {
                    state,
                    connected: state != AgentState::Offline,
                    waiting,
                    stop_requested: a.stop_requested,
                    asking: asks,
                    client,
                    session: a.session,
                    in_task,
                    queue: a.queue,
                    agent_id: a.agent_id,
                    last_seen_at: Some(a.last_seen_at),
                    last_fetch_at: a.last_fetch_at,
                    last_result_type: a.last_result_type,
                }
            })
            .collect();
        // A waiting call whose first write has not landed yet is still a listening agent.
        for (queue, id) in self.inner.calls.waiting_agents() {
            if !agents.iter().any(|a| a.agent_id == id && a.queue == queue) {
                let asks = asking(&queue, &id);
                agents.push(AgentStatus {
                    state: if asks.is_some() {
                        AgentState::NeedsYou
                    } else {
                        AgentState::Listening
                    },
                    asking: asks,
                    client: None,
                    session: None,
                    in_task: false,
                    agent_id: id,
                    queue,
                    stop_requested: false,
                    connected: true,
                    waiting: true,
                    last_seen_at: None,
                    last_fetch_at: None,
                    last_result_type: None,
                });
            }
        }
        // Stable sort: within a state, the store's "most recently seen first" order holds.
        agents.sort_by_key(|a| (rank(a.state), a.asking.is_none()));
        agents
    }

    /// This server: its facts, whether it is stopping, a storage fault, the
    /// last request refused for want of the token.
    fn server_summary(&self) -> ServerSummary {
        let facts = self.facts();
        ServerSummary {
            status: if self.inner.shutdown.is_cancelled() {
                ServerState::Stopping
            } else {
                ServerState::Up
            },
            started_at: facts.started_at.clone(),
            url: facts.url.clone(),
            version: facts.version.clone(),
            pid: std::process::id(),
            instance: self.inner.instance.clone(),
            requested_port: facts.requested_port,
            requested_port_holder: facts.requested_port_holder.clone(),
            recovered: facts.recovered.clone(),
            storage_fault: self.inner.store.fault_now(),
            log_dir: facts.log_dir.clone(),
            refused_without_token: crate::sync::MutexExt::lock_anyway(&self.inner.refused).clone(),
        }
    }

    /// A `status.changed` event with a fresh snapshot.
    pub async fn status_event(&self) -> Result<Event> {
        Ok(status_changed(self.status().await?))
    }
}

fn status_changed(snapshot: StatusSnapshot) -> Event {
    Event::new(
        EventKind::StatusChanged,
        crate::model::Timestamp::now(),
        EventData::Status(Box::new(snapshot)),
        None,
    )
}

/// How often a storage fault is retried while it lasts.
const FAULT_PROBE_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

/// Publish a fresh `status.changed` whenever the status is marked dirty, until shutdown.
pub(super) async fn publish_loop(queue: Queue) {
    let shutdown = queue.inner.shutdown.clone();
    let mut last: Option<StatusSnapshot> = None;
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = queue.inner.status_dirty.notified() => {}
        }
        match queue.status().await {
            // Agents' relative times change every call; the snapshot is sent
            // even when only timestamps moved, so listeners see "last seen" advance.
            Ok(snapshot) => {
                if last.as_ref() != Some(&snapshot) {
                    last = Some(snapshot.clone());
                    queue.bus().publish(status_changed(snapshot));
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not build a status snapshot"),
        }
        // At most one snapshot per interval: under load every call marks the
        // status dirty, and a snapshot reads the database that claims need.
        // Marks made meanwhile leave one permit, so the last change is sent.
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(SNAPSHOT_EVERY) => {}
        }
    }
}

/// While the database cannot be written, look every few seconds whether it
/// can again, so the fault clears by itself when its cause goes away (space
/// freed, the other program closed) and not only at the person's next write.
pub(super) async fn fault_watch(queue: Queue) {
    let shutdown = queue.inner.shutdown.clone();
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(FAULT_PROBE_EVERY) => {}
        }
        if queue.inner.store.fault_now().is_some() {
            // `blocking` republishes the status when the fault clears.
            let _ = queue.blocking(|i| i.store.probe()).await;
        }
    }
}
