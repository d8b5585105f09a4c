//! Domain events: what changed, with the full item, fanned out to every
//! listener (the page's SSE stream, the desktop shell) on a broadcast channel.
//!
//! Instruction and config events are persisted in the event log with a
//! monotonic id so a reconnecting page can replay what it missed
//! (`Last-Event-ID`). `status.changed` is a snapshot where only the latest
//! matters, so it is not persisted and carries no id: every (re)connecting
//! stream gets a fresh one instead. That keeps the log meaningful and keeps a
//! write off every agent call.

use std::sync::Arc;

use serde::Serialize;
use tokio::sync::broadcast;

use crate::model::Timestamp;
use crate::model::{Instruction, QueueRecord, Report, Settings, StatusSnapshot};

/// What changed. (`stream.reset`, for a page that fell too far behind to
/// replay, is not a domain event: the SSE stream writes it itself.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum EventKind {
    #[serde(rename = "instruction.created")]
    InstructionCreated,
    #[serde(rename = "instruction.updated")]
    InstructionUpdated,
    #[serde(rename = "instruction.deleted")]
    InstructionDeleted,
    #[serde(rename = "instruction.consumed")]
    InstructionConsumed,
    #[serde(rename = "status.changed")]
    StatusChanged,
    #[serde(rename = "config.updated")]
    ConfigUpdated,
    /// A queue was created, renamed, archived or restored, held or released.
    #[serde(rename = "queue.updated")]
    QueueUpdated,
    /// An agent reported what it did, or asked something.
    #[serde(rename = "report.created")]
    ReportCreated,
    /// An export was imported: history (and perhaps queues) changed at once; reload.
    #[serde(rename = "history.imported")]
    HistoryImported,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::InstructionCreated => "instruction.created",
            EventKind::InstructionUpdated => "instruction.updated",
            EventKind::InstructionDeleted => "instruction.deleted",
            EventKind::InstructionConsumed => "instruction.consumed",
            EventKind::StatusChanged => "status.changed",
            EventKind::ConfigUpdated => "config.updated",
            EventKind::QueueUpdated => "queue.updated",
            EventKind::ReportCreated => "report.created",
            EventKind::HistoryImported => "history.imported",
        }
    }
}

/// What an event carries.
// Built once per change and shared behind an `Arc` by every subscriber: the
// common case (an instruction) would gain a second allocation from a box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum EventData {
    /// The instruction as it is after the change (as it was, for a deletion).
    Instruction(Instruction),
    Status(Box<StatusSnapshot>),
    Config(Settings),
    Queue(QueueChange),
    Report(Report),
    Imported(Box<crate::export::ImportSummary>),
}

/// A queue as it is after a change; `renamed_from` when the change was a rename.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueueChange {
    #[serde(flatten)]
    pub queue: QueueRecord,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub renamed_from: Option<crate::model::QueueName>,
}

/// An event as the log gives it back for a replay: its id, its kind, and
/// the JSON the stream sends (what [`Event::json`] was when it was logged).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedEvent {
    pub id: i64,
    pub kind: String,
    pub json: String,
}

/// One event, with its JSON payload rendered once for every listener.
#[derive(Debug, Clone)]
pub struct Event {
    /// The event log id; `None` for events that are not persisted (`status.changed`).
    pub id: Option<i64>,
    pub kind: EventKind,
    pub timestamp: Timestamp,
    pub data: EventData,
    /// For instruction events: how many instructions are pending in the
    /// instruction's queue after the change.
    pub pending_count: Option<u64>,
    /// `{"type","timestamp","data"[,"pending_count"]}`: what SSE sends and the log stores.
    pub json: String,
}

#[derive(Serialize)]
struct Payload<'a> {
    #[serde(rename = "type")]
    kind: EventKind,
    timestamp: &'a str,
    data: &'a EventData,
    #[serde(skip_serializing_if = "Option::is_none")]
    pending_count: Option<u64>,
}

impl Event {
    pub fn new(kind: EventKind, timestamp: Timestamp, data: EventData, pending_count: Option<u64>) -> Event {
        let json = serde_json::to_string(&Payload {
            kind,
            timestamp: &timestamp,
            data: &data,
            pending_count,
        })
        .unwrap_or_else(|_| "{}".to_owned());
        Event {
            id: None,
            kind,
            timestamp,
            data,
            pending_count,
            json,
        }
    }

    /// The instruction this event is about, if it is an instruction event.
    pub fn instruction(&self) -> Option<&Instruction> {
        match &self.data {
            EventData::Instruction(i) => Some(i),
            _ => None,
        }
    }
}

/// How many events a slow listener may fall behind before it must replay from the log.
const CHANNEL_CAPACITY: usize = 1024;

/// The fan-out point. Cheap to clone.
#[derive(Clone)]
pub struct Bus {
    tx: broadcast::Sender<Arc<Event>>,
}

impl Default for Bus {
    fn default() -> Self {
        Bus {
            tx: broadcast::channel(CHANNEL_CAPACITY).0,
        }
    }
}

impl Bus {
    pub fn publish(&self, event: Event) {
        // No listeners is fine: the log still has the persisted ones.
        let _ = self.tx.send(Arc::new(event));
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.tx.subscribe()
    }
}
