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

impl StatusSnapshot {
    /// The report as a paired phone gets it: agents, queues, counts and
    /// settings, without what names this computer's files, process, port,
    /// accounts or other programs (a phone sees what it may act on, not
    /// where the server keeps things). A storage fault stays as a fact, in
    /// words that name no path: the phone's writes fail too.
    pub fn for_phone(mut self) -> StatusSnapshot {
        let server = &mut self.server;
        server.url = String::new();
        server.pid = 0;
        server.requested_port = None;
        server.requested_port_holder = None;
        server.recovered = None;
        server.log_dir = None;
        server.refused_without_token = None;
        if server.storage_fault.is_some() {
            server.storage_fault = Some(PHONE_STORAGE_FAULT.to_owned());
        }
        self
    }
}

/// What a phone is told while the database cannot be written.
pub const PHONE_STORAGE_FAULT: &str = "nothing can be saved on the computer right now (its own page says why)";

#[cfg(test)]
mod tests {
    use super::*;

    /// A report with every field that names this computer filled in.
    fn everything() -> StatusSnapshot {
        let at = Timestamp::read("2026-01-02T03:04:05Z").unwrap();
        StatusSnapshot {
            server: ServerSummary {
                status: ServerState::Up,
                started_at: at.clone(),
                url: "http://127.0.0.1:8765".into(),
                version: "1.2.3".into(),
                pid: 4242,
                instance: "db-instance".into(),
                requested_port: Some(8000),
                requested_port_holder: Some("mallory".into()),
                recovered: Some(RecoveryNotice {
                    moved_to: "/home/me/.local/share/local-mcp/queue.db.damaged".into(),
                    reason: "malformed".into(),
                    at: at.clone(),
                }),
                storage_fault: Some("the disk holding /home/me/.local/share/local-mcp is full".into()),
                log_dir: Some("/home/me/.local/state/local-mcp/logs".into()),
                refused_without_token: Some(Refusal {
                    at,
                    path: "/mcp".into(),
                    user_agent: "claude-code/2.1".into(),
                }),
            },
            agent: AgentSummary::of(None),
            agents: Vec::new(),
            queue: QueueCounts {
                pending_count: 3,
                ..QueueCounts::default()
            },
            queues: Vec::new(),
            settings: Settings::default(),
        }
    }

    #[test]
    fn a_phone_gets_no_path_process_port_or_account_of_this_computer() {
        let full = everything();
        let phone = full.clone().for_phone();
        let text = serde_json::to_string(&phone).unwrap();
        for private in [
            "/home/me",
            "4242",
            "8765",
            "8000",
            "mallory",
            "claude-code",
            "malformed",
        ] {
            assert!(!text.contains(private), "{private} in {text}");
        }
        // What the phone's page uses stays: the instance it checks, the version, the counts,
        // the settings, and that nothing can be saved.
        assert_eq!(phone.server.instance, full.server.instance);
        assert_eq!(phone.server.version, full.server.version);
        assert_eq!(phone.queue, full.queue);
        assert_eq!(phone.settings, full.settings);
        assert_eq!(phone.server.storage_fault.as_deref(), Some(PHONE_STORAGE_FAULT));
        let healthy = StatusSnapshot {
            server: ServerSummary {
                storage_fault: None,
                ..full.server
            },
            ..full
        };
        assert_eq!(healthy.for_phone().server.storage_fault, None);
    }
}
