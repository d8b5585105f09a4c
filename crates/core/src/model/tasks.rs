//! `get_user_request` as a task (the MCP tasks extension, SEP-2663): what
//! a task is, as stored and as answered. A caller that takes tasks gets one
//! at once instead of a waiting call, and asks for it (a poll) until the
//! person's next instruction is its result (`queue::tasks`).

use super::Timestamp;
use serde::{Deserialize, Serialize};

use super::UserRequestResult;

/// Where a task is in its life. A task is never "failed": what a call can
/// end with (an instruction, a stop, an empty answer) is a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskStatus {
    /// Nothing bound yet: each poll may bind the caller's next instruction.
    Working,
    /// Its result is bound (and answered again, the same, to every poll).
    Completed,
    /// Ended with nothing bound: by its client, or because the instruction
    /// it carried went again on a newer call.
    Cancelled,
}

impl TaskStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::Completed => "completed",
            TaskStatus::Cancelled => "cancelled",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "working" => Some(TaskStatus::Working),
            "completed" => Some(TaskStatus::Completed),
            "cancelled" => Some(TaskStatus::Cancelled),
            _ => None,
        }
    }
}

/// A task as stored: one row, all there is of it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRecord {
    /// 128 random bits, hex: unguessable, printable.
    pub id: String,
    pub queue: String,
    pub agent_id: String,
    pub status: TaskStatus,
    pub status_message: Option<String>,
    /// The instruction its result carries, once bound.
    pub instruction_id: Option<super::InstructionId>,
    /// Its result, once bound.
    pub result: Option<UserRequestResult>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// When a poll last asked for it (to the hour: see migration 12).
    pub polled_at: Timestamp,
}

/// A task as a poll (or the call that made it) is answered.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskView {
    pub record: TaskRecord,
    /// How long the caller should wait before it asks again.
    pub poll_interval_ms: u64,
    /// How long, from its creation, the task is kept: a week past its last
    /// poll (so it grows with each poll).
    pub ttl_ms: u64,
    /// The instruction whose delivery this answer settles: sent once it is
    /// written, in doubt if it is cut off (`queue::delivery`).
    pub carries: Option<super::InstructionId>,
}
