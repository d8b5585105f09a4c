//! Queue changes as `notifications/message`, for a client that listens: one
//! that asked for logs with `logging/setLevel` on a session (stateless calls
//! have no channel between requests to carry them).
//!
//! Logging is deprecated for a future protocol revision (SEP-2577) but part
//! of every revision clients negotiate today, hence the `allow(deprecated)`.
#![allow(deprecated)]

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;

use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::{Peer, RoleServer};
use serde_json::json;
use tokio::sync::broadcast;

use crate::events::{Event, EventData, EventKind};
use crate::queue::Queue;

pub const LOGGER: &str = "local-mcp.queue";

/// Per-session logging state.
#[derive(Default)]
pub struct QueueLog {
    /// The client's minimum level (as [`rank`]); until it asks, nothing is sent.
    min: AtomicU8,
    forwarding: AtomicBool,
    /// The session's queue (from its URL): only its changes are sent.
    queue: std::sync::OnceLock<String>,
}

fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 1,
        LoggingLevel::Info => 2,
        LoggingLevel::Notice => 3,
        LoggingLevel::Warning => 4,
        LoggingLevel::Error => 5,
        LoggingLevel::Critical => 6,
        LoggingLevel::Alert => 7,
        LoggingLevel::Emergency => 8,
    }
}

impl QueueLog {
    /// The client asked for messages at `level` and above: start forwarding
    /// queue changes to `peer` (once per session).
    pub fn set_level(
        self: &Arc<Self>,
        level: LoggingLevel,
        queue: &Queue,
        caller_queue: String,
        peer: Peer<RoleServer>,
    ) {
        self.min.store(rank(level), Ordering::Relaxed);
        if self.forwarding.swap(true, Ordering::AcqRel) {
            return;
        }
        let _ = self.queue.set(caller_queue);
        let events = queue.bus().subscribe();
        tokio::spawn(Arc::clone(self).forward(events, peer));
    }

    async fn forward(self: Arc<Self>, mut events: broadcast::Receiver<Arc<Event>>, peer: Peer<RoleServer>) {
        loop {
            let event = match events.recv().await {
                Ok(e) => e,
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return,
            };
            let Some(param) = self.message(&event) else { continue };
            // A failed send means the session is gone: stop.
            if peer.notify_logging_message(param).await.is_err() {
                return;
            }
        }
    }

    fn message(&self, event: &Event) -> Option<LoggingMessageNotificationParam> {
        let EventData::Instruction(item) = &event.data else {
            return None;
        };
        if self.queue.get().is_some_and(|q| *q != item.queue) {
            return None;
        }
        let verb = match event.kind {
            EventKind::InstructionCreated => "queued",
            EventKind::InstructionUpdated => "edited",
            EventKind::InstructionDeleted => "deleted",
            EventKind::InstructionConsumed => "delivered",
            _ => return None,
        };
        if rank(LoggingLevel::Info) < self.min.load(Ordering::Relaxed) {
            return None;
        }
        let data = json!({
            "message": format!("instruction {verb} in queue {}", item.queue),
            "event": event.kind.as_str(),
            "id": item.id,
            "queue": item.queue,
            "target": item.target,
            "pending_count": event.pending_count,
            "consumed_by_agent_id": item.consumed_by_agent_id,
        });
        Some(LoggingMessageNotificationParam::new(LoggingLevel::Info, data).with_logger(LOGGER))
    }
}
