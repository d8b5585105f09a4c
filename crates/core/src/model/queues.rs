//! Named queues and who an instruction is for: the names' rules, what the
//! person sees of a queue, and the shapes that create or change instructions
//! with a queue and a target (`docs/ARCHITECTURE.md`, "Queues and targets").

use super::Timestamp;
use serde::{Deserialize, Deserializer, Serialize};
use utoipa::ToSchema;

use super::names::{AgentId, QueueName};
use crate::Result;

/// The queue every agent and instruction belongs to unless told otherwise.
pub const DEFAULT_QUEUE: &str = "default";

/// The queue `raw` names, or `default` when none is given.
pub fn queue_or_default(raw: Option<&str>) -> Result<QueueName> {
    match raw.map(str::trim).filter(|s| !s.is_empty()) {
        Some(name) => QueueName::new(name),
        None => Ok(QueueName::default_queue()),
    }
}

/// Where agents reach the MCP endpoint: `default`'s path.
pub const MCP_PATH: &str = "/mcp";

/// The MCP endpoint path for agents of `queue`: `/mcp` for `default`,
/// `/mcp/q/<name>` for the others. An agent's queue comes from the URL it is
/// configured with, never from what a model remembers to pass.
pub fn mcp_path(queue: &str) -> String {
    if queue == DEFAULT_QUEUE {
        MCP_PATH.to_owned()
    } else {
        format!("{MCP_PATH}/q/{queue}")
    }
}

/// The queue an MCP endpoint path names: `Some` for `/mcp/q/<name>`, `None`
/// for plain `/mcp`; an invalid name is an error naming the rule.
pub fn queue_from_path(path: &str) -> Result<Option<QueueName>> {
    let rest = path.strip_prefix(MCP_PATH).unwrap_or(path);
    match rest.trim_end_matches('/').strip_prefix("/q/") {
        Some(name) => QueueName::new(name).map(Some),
        None => Ok(None),
    }
}

/// A queue as stored: its name and the person's switches on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct QueueRecord {
    pub name: QueueName,
    /// Held: calls wait as usual but nothing is delivered until release.
    pub held: bool,
    /// Archived: hidden from the switcher; an agent connecting to it brings it back.
    pub archived: bool,
    pub created_at: Timestamp,
    /// Appended to each of its instructions when delivered (after a blank line); `null`: nothing.
    #[serde(default)]
    pub suffix: Option<String>,
}

/// A queue as the page and `/api/queues` show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct QueueInfo {
    pub name: QueueName,
    pub held: bool,
    pub archived: bool,
    pub created_at: Timestamp,
    /// Appended to each of its instructions when delivered; `null`: nothing.
    pub suffix: Option<String>,
    pub pending_count: u64,
    pub consumed_count: u64,
    /// Of the pending ones, those held until the person releases them (from
    /// an import or a restore).
    #[serde(default)]
    pub held_count: u64,
    /// Agents with a `get_user_request` call waiting in this queue now.
    pub waiting_agents: Vec<AgentId>,
}

/// A new instruction: its text, and where and to whom it goes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewInstruction {
    /// The instruction text: not blank, no NUL, at most 64 KiB (65,536 bytes) of UTF-8
    #[schema(min_length = 1, pattern = "^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$")]
    pub content: String,
    /// The queue (default `default`); created if it does not exist yet.
    #[serde(default)]
    pub queue: Option<QueueName>,
    /// One agent id this instruction is for (at most 128 characters, no
    /// control characters); absent, null or blank: anyone in the queue.
    #[serde(default)]
    #[schema(max_length = 128, pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$")]
    pub target: Option<String>,
}

impl From<String> for NewInstruction {
    fn from(content: String) -> Self {
        NewInstruction {
            content,
            ..NewInstruction::default()
        }
    }
}

impl From<&str> for NewInstruction {
    fn from(content: &str) -> Self {
        content.to_owned().into()
    }
}

/// A change to a pending instruction: any of its text, queue and target
/// (none of them: nothing changes, but the answer still says whether it is pending).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InstructionPatch {
    /// New text (same rules as when queueing).
    #[serde(default)]
    #[schema(min_length = 1, pattern = "^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$")]
    pub content: Option<String>,
    /// Move it to this queue (at the back of it).
    #[serde(default)]
    pub queue: Option<QueueName>,
    /// Readdress it: an agent id (as for a new instruction), or null for anyone in the queue.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, max_length = 128, pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$")]
    pub target: Option<Option<String>>,
}

impl InstructionPatch {
    pub fn content(content: impl Into<String>) -> Self {
        InstructionPatch {
            content: Some(content.into()),
            ..InstructionPatch::default()
        }
    }
}

/// `Some(None)` for an explicit `null`, so "readdress to anyone" differs from "not given".
fn present<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// A change to a queue: rename it, archive or restore it, hold or release it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QueuePatch {
    #[serde(default)]
    pub name: Option<QueueName>,
    #[serde(default)]
    pub archived: Option<bool>,
    #[serde(default)]
    pub held: Option<bool>,
    /// Text appended to each instruction of the queue when delivered (at most 4,096 characters, no NUL); "" removes it.
    #[serde(default)]
    #[schema(max_length = 4096, pattern = "^[^\\u0000]*$")]
    pub suffix: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    #[test]
    fn names_are_lower_cased_and_restricted() {
        assert_eq!(QueueName::new("Repo-A.v2_x").unwrap(), "repo-a.v2_x");
        assert_eq!(QueueName::new(&"a".repeat(64)).unwrap().len(), 64);
        for bad in ["", "a b", "a/b", "é", "..", ".", "a?", &"a".repeat(65), "a\0"] {
            assert!(matches!(QueueName::new(bad), Err(Error::Invalid(_))), "{bad:?}");
        }
        assert_eq!(queue_or_default(None).unwrap(), "default");
        assert_eq!(queue_or_default(Some("  ")).unwrap(), "default");
        assert_eq!(queue_or_default(Some("B")).unwrap(), "b");
    }

    #[test]
    fn endpoint_paths_name_their_queue() {
        assert_eq!(mcp_path("default"), "/mcp");
        assert_eq!(mcp_path("repo-a"), "/mcp/q/repo-a");
        assert_eq!(queue_from_path("/mcp").unwrap(), None);
        assert_eq!(queue_from_path("/mcp/").unwrap(), None);
        assert_eq!(queue_from_path("/mcp/q/Repo-A").unwrap().as_deref(), Some("repo-a"));
        assert_eq!(queue_from_path("/mcp/q/repo-a/").unwrap().as_deref(), Some("repo-a"));
        assert!(queue_from_path("/mcp/q/a%20b").is_err());
        assert!(queue_from_path("/mcp/q/..").is_err());
    }

    #[test]
    fn a_patch_tells_null_from_absent() {
        let p: InstructionPatch = serde_json::from_str(r#"{"target": null}"#).unwrap();
        assert_eq!(p.target, Some(None));
        let p: InstructionPatch = serde_json::from_str(r#"{"content": "x"}"#).unwrap();
        assert_eq!(p.target, None);
        assert_eq!(
            serde_json::from_str::<InstructionPatch>("{}").unwrap(),
            InstructionPatch::default()
        );
    }
}
