//! The product's nouns: instructions, runtime settings, agents, the status
//! report and what a `get_user_request` call returns. Plain data with the
//! serde shapes of the wire contracts (`docs/ARCHITECTURE.md`); no I/O and no
//! transport types here. Everything else in the engine may use it; it uses
//! nothing but `error`.

mod attachments;
mod clients;
mod names;
mod phone;
mod programs;
mod queues;
mod reports;
mod settings;
mod status;
mod tasks;
mod templates;

pub use attachments::{
    attachment_name, Attachment, DeliveredAttachment, DeliveryCopy, Upload, MAX_ATTACHMENTS, MAX_ATTACHMENT_BYTES,
    MAX_ATTACHMENT_NAME_CHARS, MAX_INLINE_TEXT_BYTES,
};
pub use clients::{
    client_slug, limit_of, limits, safe_wait, session_key, AgentClient, Caller, ClientName, Limit,
    CLIENT_SESSION_HEADER, CLIENT_SESSION_VARIABLES,
};
pub use names::{
    breaks_a_rule, AgentId, Content, InstructionId, QueueName, Timestamp, MAX_AGENT_ID_CHARS, MAX_INSTRUCTION_BYTES,
    MAX_QUEUE_NAME_CHARS, QUEUE_NAME_PATTERN,
};
pub use phone::{
    device_name, Device, DeviceRename, PairRequest, PairingCode, PhoneStart, PhoneStatus, RefusedCode,
    MAX_DEVICE_NAME_CHARS,
};
pub use programs::{McpClient, Program, CALLERS_ONLY};
pub use queues::{
    mcp_path, queue_from_path, queue_or_default, InstructionPatch, NewInstruction, QueueInfo, QueuePatch, QueueRecord,
    DEFAULT_QUEUE, MCP_PATH,
};
pub use reports::{report_args, Report, MAX_OPTIONS, MAX_OPTION_CHARS, MAX_REPORT_BYTES};
pub use settings::{field, Field, FromEnvironment, Kind, Settings, SettingsPatch, FIELDS};
pub use status::{AgentSummary, RecoveryNotice, Refusal, ServerState, ServerSummary, StatusSnapshot};
pub use tasks::{TaskRecord, TaskStatus, TaskView};
pub use templates::{suffix, template_name, with_suffix, Template, TemplateBody, TemplateFile, MAX_SUFFIX_CHARS};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The longest a `get_user_request` call may wait on an empty queue: a day.
pub const MAX_WAIT_SECONDS: u32 = 86_400;
/// The agent id used when a caller does not name itself.
pub const DEFAULT_AGENT_ID: &str = "default";
/// The default text returned when the queue stays empty: it tells the
/// model to call again, which keeps its loop alive.
pub const DEFAULT_EMPTY_RESPONSE: &str = "call this tool `get_user_request` again to fetch latest user input...";

/// Where an instruction is in its life: waiting on the rail, or handed to an agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum InstructionStatus {
    Pending,
    Consumed,
}

/// What became of a delivery (a consumed instruction), as far as local-mcp
/// can know. `null` for pending instructions and for deliveries made before
/// local-mcp tracked them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Delivery {
    /// Claimed; its answer is on its way (or the app stopped meanwhile).
    Claimed,
    /// The response carrying it was written out in full.
    Sent,
    /// Its agent called again (or reported) afterwards: it had it.
    Confirmed,
    /// The connection broke, or the app stopped, after the claim and before
    /// the answer was written: the agent may never have seen it.
    InDoubt,
    /// It was in doubt and has been sent again (by the person or by the
    /// `redeliver_in_doubt` setting).
    Resent,
}

impl Delivery {
    pub fn as_str(self) -> &'static str {
        match self {
            Delivery::Claimed => "claimed",
            Delivery::Sent => "sent",
            Delivery::Confirmed => "confirmed",
            Delivery::InDoubt => "in_doubt",
            Delivery::Resent => "resent",
        }
    }

    pub fn parse(s: &str) -> Option<Delivery> {
        [
            Delivery::Claimed,
            Delivery::Sent,
            Delivery::Confirmed,
            Delivery::InDoubt,
            Delivery::Resent,
        ]
        .into_iter()
        .find(|d| d.as_str() == s)
    }
}

impl InstructionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            InstructionStatus::Pending => "pending",
            InstructionStatus::Consumed => "consumed",
        }
    }
}

/// One thing the person asked for, as stored and as served by the HTTP API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Instruction {
    pub id: InstructionId,
    pub content: String,
    pub status: InstructionStatus,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub consumed_at: Option<Timestamp>,
    pub consumed_by_agent_id: Option<AgentId>,
    pub position: i64,
    /// The queue it lives in.
    pub queue: QueueName,
    /// The one agent it is for; `null`: anyone in its queue.
    pub target: Option<AgentId>,
    /// Once consumed: what became of the delivery.
    #[serde(default)]
    pub delivery: Option<Delivery>,
    /// The report (a question) this instruction answers, when it is a reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers: Option<String>,
    /// Pending but held, and why (`import`, `restore`): it came from a file,
    /// and goes to no agent until the person releases it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<String>,
    /// What the agent reported on it, once it has (listings only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<Report>,
    /// Its files, in order (absent when it has none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<Attachment>,
}

impl Instruction {
    /// A new pending instruction with a fresh id, created and updated `now`.
    pub fn new_pending(
        content: String,
        queue: QueueName,
        target: Option<AgentId>,
        position: i64,
        now: Timestamp,
    ) -> Instruction {
        Instruction {
            id: InstructionId::fresh(),
            content,
            status: InstructionStatus::Pending,
            created_at: now.clone(),
            updated_at: now,
            consumed_at: None,
            consumed_by_agent_id: None,
            position,
            queue,
            target,
            delivery: None,
            answers: None,
            held: None,
            report: None,
            attachments: Vec::new(),
        }
    }
}

/// Trim an agent id and refuse one too long or with control characters;
/// blank is `None`. Agent ids and targets follow the same rule.
pub fn agent_id(raw: Option<&str>) -> crate::Result<Option<AgentId>> {
    Ok(raw.map(AgentId::new).transpose()?.flatten())
}

/// What a `get_user_request` call ended with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResultType {
    Instruction,
    Empty,
    DefaultResponse,
    /// The person ended this agent's loop: it should stop calling.
    Stop,
}

impl ResultType {
    pub fn as_str(self) -> &'static str {
        match self {
            ResultType::Instruction => "instruction",
            ResultType::Empty => "empty",
            ResultType::DefaultResponse => "default_response",
            ResultType::Stop => "stop",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "instruction" => Some(ResultType::Instruction),
            "empty" => Some(ResultType::Empty),
            "default_response" => Some(ResultType::DefaultResponse),
            "stop" => Some(ResultType::Stop),
            _ => None,
        }
    }
}

/// The delivered instruction as the agent sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DeliveredInstruction {
    pub id: String,
    pub content: String,
    pub consumed_at: String,
    /// The agent id it was addressed to; `null`: anyone in the queue.
    pub target: Option<String>,
    /// Its files (absent when it has none): images follow this text as image
    /// blocks, small text files as embedded resources, each also at `path`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<DeliveredAttachment>,
    /// When it is the user's answer to a question you asked: which one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_reply_to: Option<InReplyTo>,
}

/// The question an instruction answers, as the agent that asked it is told.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InReplyTo {
    /// The report that asked it.
    pub report_id: String,
    /// Its first line (at most 200 characters).
    pub question: String,
}

/// The result of one `get_user_request` call, exactly the JSON an agent gets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UserRequestResult {
    /// Always `"ok"`: failures are reported as tool errors, not here.
    pub status: String,
    pub result_type: ResultType,
    /// The queue this call took from.
    pub queue: String,
    /// The instruction to act on, when `result_type` is `instruction`.
    pub instruction: Option<DeliveredInstruction>,
    /// Text to follow when no instruction came (`empty`: "", `default_response`: the configured text).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response: Option<String>,
    /// Instructions still waiting after this call that this caller could take
    /// (its queue's, for anyone or for it).
    pub remaining_pending: u64,
    /// Whole seconds this call waited for an instruction.
    pub waited_seconds: u64,
}

/// What an agent is doing, as inferred from its calls (the tray's states).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentState {
    /// It is waiting on the person's answer: a call from it waits, and its
    /// newest report asks something nobody has answered. The loudest state.
    NeedsYou,
    /// A `get_user_request` call from it is waiting right now.
    Listening,
    /// It was handed an instruction a short while ago and has not called back yet.
    Working,
    /// Seen recently, but neither waiting nor working.
    Idle,
    /// Not seen within `agent_stale_after_seconds` (and not working).
    Offline,
}

/// One agent's recorded activity in one queue (the `agent_activity` table).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentActivity {
    pub queue: QueueName,
    pub agent_id: AgentId,
    pub last_seen_at: Timestamp,
    pub last_fetch_at: Option<Timestamp>,
    pub last_result_type: Option<ResultType>,
    /// The person asked this agent to stop and its next result will say so.
    pub stop_requested: bool,
    /// Its MCP client's `clientInfo` name and version, as last given.
    #[serde(default)]
    pub client: Option<String>,
    #[serde(default)]
    pub client_version: Option<String>,
    /// Its client session (see `Caller::session`), as last given.
    #[serde(default)]
    pub session: Option<String>,
    /// When its waiting call ended because its client went away (until it
    /// calls again): it is gone.
    #[serde(default)]
    pub left_at: Option<Timestamp>,
}

/// An agent by its queue and id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AgentRef {
    pub queue: QueueName,
    pub agent_id: AgentId,
}

/// An agent as the status API reports it: activity plus inferred state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AgentStatus {
    pub agent_id: AgentId,
    /// The queue it takes from: one agent id in two queues is two agents.
    pub queue: QueueName,
    pub state: AgentState,
    pub connected: bool,
    pub waiting: bool,
    pub last_seen_at: Option<Timestamp>,
    pub last_fetch_at: Option<Timestamp>,
    pub last_result_type: Option<ResultType>,
    #[serde(default)]
    pub stop_requested: bool,
    /// Its unanswered question: the id of its newest report when that asks
    /// something (has options, or ends with "?") and nothing was delivered
    /// to it since. Answering goes to `POST /api/reports/{id}/reply`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asking: Option<String>,
    /// Its MCP client (Claude Code 2.1.330) and the longest one of its calls waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<AgentClient>,
    /// Its client session, when the client names one (a short hash): agents
    /// that share it are one client session using several ids (subagents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// It waits through a task (the MCP tasks extension): no call is open;
    /// its client asks for the task now and then, and gets the next
    /// instruction as the task's result.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub in_task: bool,
}

/// Queue counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, ToSchema)]
pub struct QueueCounts {
    pub pending_count: u64,
    pub consumed_count: u64,
    /// Deliveries whose answer may never have reached the agent (see `Delivery::InDoubt`).
    #[serde(default)]
    pub in_doubt_count: u64,
    /// Pending instructions held until the person releases them (they came
    /// from an import or a restore).
    #[serde(default)]
    pub held_count: u64,
}

/// Which instructions a listing wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum StatusFilter {
    Pending,
    Consumed,
    #[default]
    All,
}

/// Which instructions a listing wants: by status (consumed ones paged,
/// newest first), optionally only one queue's and only those for one agent;
/// the history (consumed ones) can be searched and filtered further.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    pub status: StatusFilter,
    pub limit: Option<u32>,
    pub offset: u32,
    pub queue: Option<QueueName>,
    pub target: Option<AgentId>,
    pub history: HistoryFilter,
}

/// Filters on delivered instructions (the ledger): words in the instruction
/// or its report, the agent that took it, and a time window.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HistoryFilter {
    /// An FTS5 query (see [`search_query`]).
    pub search: Option<String>,
    pub agent: Option<String>,
    /// Inclusive lower bound on `consumed_at` (a timestamp or a date).
    pub since: Option<Timestamp>,
    /// Exclusive upper bound on `consumed_at`.
    pub until: Option<Timestamp>,
}

/// The longest search text accepted, in characters.
pub const MAX_SEARCH_CHARS: usize = 200;

/// What a person typed as an FTS5 query: every word must appear (as a word
/// or the start of one), in the instruction or its report. Quotes make each
/// word a literal, so no FTS5 syntax is ever interpreted. `None` for no words.
pub fn search_query(typed: &str) -> crate::Result<Option<String>> {
    if typed.chars().count() > MAX_SEARCH_CHARS {
        return Err(crate::Error::Invalid(format!(
            "a search is at most {MAX_SEARCH_CHARS} characters"
        )));
    }
    let words: Vec<String> = typed
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .map(|w| format!("\"{}\"*", w.replace('"', "\"\"")))
        .collect();
    Ok((!words.is_empty()).then(|| words.join(" ")))
}

impl Listing {
    /// Every pending instruction, of every queue, in delivery order.
    pub fn pending() -> Self {
        Listing {
            status: StatusFilter::Pending,
            ..Listing::default()
        }
    }

    /// Every consumed instruction, newest first.
    pub fn consumed() -> Self {
        Listing {
            status: StatusFilter::Consumed,
            ..Listing::default()
        }
    }

    pub fn in_queue(self, queue: &QueueName) -> Self {
        Listing {
            queue: Some(queue.clone()),
            ..self
        }
    }
}

/// Where "send again" puts the copy of a consumed instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum RequeuePlace {
    /// Next to be delivered: it was originally ahead of everything still pending.
    #[default]
    Front,
    Back,
}

/// Where to move a pending instruction: before or after another pending one,
/// or to the front/back of the rail.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MoveTo {
    pub before_id: Option<InstructionId>,
    pub after_id: Option<InstructionId>,
    #[serde(default)]
    pub to: Option<RequeuePlace>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patch(json: &str) -> Result<SettingsPatch, serde_json::Error> {
        serde_json::from_str(json)
    }

    #[test]
    fn time_bounds_past_the_end_of_time_are_refused_not_panicked_on() {
        assert!(Timestamp::read("9999-12-31T23:00:00-05:00").is_err());
        assert!(Timestamp::read("0000-01-01T00:30:00+01:00").is_err());
        assert_eq!(
            Timestamp::read("9999-12-31T23:00:00Z").unwrap(),
            "9999-12-31T23:00:00.000Z"
        );
        assert_eq!(Timestamp::read("2026-11-24").unwrap(), "2026-11-24T00:00:00.000Z");
        assert_eq!(
            Timestamp::read("2026-11-24T10:30:00+01:00").unwrap(),
            "2026-11-24T09:30:00.000Z"
        );
    }

    #[test]
    fn seconds_are_whole_numbers_however_json_writes_them() {
        assert_eq!(
            patch(r#"{"default_wait_seconds": 60}"#).unwrap().default_wait_seconds,
            Some(60)
        );
        assert_eq!(
            patch(r#"{"default_wait_seconds": 60.0}"#).unwrap().default_wait_seconds,
            Some(60)
        );
        assert_eq!(
            patch(r#"{"agent_stale_after_seconds": null}"#)
                .unwrap()
                .agent_stale_after_seconds,
            None
        );
        assert_eq!(patch("{}").unwrap().default_wait_seconds, None);
        for bad in ["60.5", "-1", "1e20", "\"60\"", "4294967296"] {
            assert!(
                patch(&format!(r#"{{"default_wait_seconds": {bad}}}"#)).is_err(),
                "{bad}"
            );
        }
    }
}
