//! The status report's shape (`GET /api/status`, `status.changed`, the
//! `local-mcp://status` resource, the tray): plain data, built by
//! `queue::status` and carried by `events`, so it lives below both.

use super::Timestamp;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{AgentId, AgentState, AgentStatus, QueueCounts, QueueInfo, Settings};

/// Whether the server is serving or on its way out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ServerState {
    Up,
    Stopping,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ServerSummary {
    pub status: ServerState,
    pub started_at: Timestamp,
    pub url: String,
    pub version: String,
    /// The serving process (what `stop` signals; `status` reads its memory).
    #[serde(default)]
    pub pid: u32,
    /// A random id of this database, the same across restarts: the page
    /// learns it when it loads and stops if a later status names another
    /// (a different program now answers at its address).
    #[serde(default)]
    pub instance: String,
    /// Set when the configured port was taken: agents configured for it must be updated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested_port: Option<u16>,
    /// Set when another account's server holds the configured port: who. Agents
    /// configured for that port would reach a stranger's server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_port_holder: Option<String>,
    /// Set when the database file was found damaged at start: it was moved
    /// aside and this server started with a fresh one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovered: Option<RecoveryNotice>,
    /// Set while the database cannot be written (disk full, read-only,
    /// locked by another program, gone): what happened and what to do.
    /// Cleared by the next write that succeeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_fault: Option<String>,
    /// The folder of the daily log files (`<program>.<date>.log`, 7 kept), when written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_dir: Option<String>,
    /// The last request refused for want of the API token (an agent whose
    /// configuration lacks it, or has an old one), since the server started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused_without_token: Option<Refusal>,
}

/// A request refused for want of the token: when, where, and who said it was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Refusal {
    pub at: Timestamp,
    pub path: String,
    /// Its `User-Agent`, which names the client (empty when none was sent).
    pub user_agent: String,
}

/// A damaged database moved aside at start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RecoveryNotice {
    /// Where the damaged file is now (with its `-wal` and attachments beside it).
    pub moved_to: String,
    /// What SQLite said was wrong.
    pub reason: String,
    pub at: Timestamp,
}

/// The single-agent summary older clients read: the most relevant agent, or nothing known.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AgentSummary {
    pub connected: bool,
    pub state: AgentState,
    pub agent_id: Option<AgentId>,
    pub last_seen_at: Option<Timestamp>,
    pub last_fetch_at: Option<Timestamp>,
    pub waiting: bool,
}

impl AgentSummary {
    /// The summary of the most relevant agent (`status`'s first), or of none.
    pub fn of(first: Option<&AgentStatus>) -> AgentSummary {
        match first {
            Some(a) => AgentSummary {
                connected: a.connected,
                state: a.state,
                agent_id: Some(a.agent_id.clone()),
                last_seen_at: a.last_seen_at.clone(),
                last_fetch_at: a.last_fetch_at.clone(),
                waiting: a.waiting,
            },
            None => AgentSummary {
                connected: false,
                state: AgentState::Offline,
                agent_id: None,
                last_seen_at: None,
                last_fetch_at: None,
                waiting: false,
            },
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StatusSnapshot {
    pub server: ServerSummary,
    pub agent: AgentSummary,
    pub agents: Vec<AgentStatus>,
    /// Counts over every queue.
    pub queue: QueueCounts,
    /// Every queue that is not archived, `default` first.
    pub queues: Vec<QueueInfo>,
    pub settings: Settings,
}
