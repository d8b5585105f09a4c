//! `hook claude-stop` and `hook vscode-stop`: a `Stop` hook that keeps the
//! agent's loop going, for Claude Code and for VS Code's agent hooks.
//!
//! Both run a `Stop` hook command when the agent is about to end its turn,
//! with JSON on stdin, and both go on when the hook says "block", with the
//! reason as the agent's next step; printing nothing lets it stop. They
//! differ in the shapes:
//!
//! - Claude Code sends `hook_event_name` (and `session_id`, …) and reads
//!   `{"decision": "block", "reason": …}`
//!   (https://code.claude.com/docs/en/hooks.md#stop).
//! - VS Code sends `hookEventName` (and `sessionId`, `timestamp`, …) and reads
//!   `{"hookSpecificOutput": {"hookEventName": "Stop", "decision": "block",
//!   "reason": …}}` (https://code.visualstudio.com/docs/agents/reference/hooks-reference#stop).
//!
//! The answer follows the input's shape, not the command's name: VS Code also
//! runs the hooks in Claude Code's settings files, so one installed for
//! Claude Code may be run by VS Code. We block, telling the agent to call
//! `get_user_request`, unless:
//!
//! - `stop_hook_active` is true: it already went on once because of a stop
//!   hook this turn (blocking again could loop forever);
//! - the person held the agent's queue, or stopped that agent;
//! - the agent waits through a task (its call moved to the background: the
//!   next instruction starts its next turn by itself);
//! - local-mcp is not running (there is nothing to wait on), or the input is
//!   not a Stop hook's.
//!
//! Every doubt lets the agent stop: a hook that fails closed would trap it.

use serde::Deserialize;
use tokio::io::AsyncReadExt;

use super::Failure;
use crate::client::target::Source;

/// At most this much of stdin is read (Claude Code's input is a few hundred bytes).
const MAX_INPUT: u64 = 1 << 20;

/// What the agent is told when the hook keeps it going.
pub const CONTINUE_REASON: &str = "Do not end your turn: call the MCP tool `get_user_request` (local-mcp) now to \
     get the user's next instruction, carry it out, and call it again after each task.";

#[derive(Debug, Deserialize)]
struct StopInput {
    /// Claude Code's name for the event.
    #[serde(default)]
    hook_event_name: Option<String>,
    /// VS Code's.
    #[serde(default, rename = "hookEventName")]
    hook_event_name_vscode: Option<String>,
    #[serde(default)]
    stop_hook_active: bool,
    /// The conversation (Claude Code's `session_id`, VS Code's `sessionId`).
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default, rename = "sessionId")]
    session_id_vscode: Option<String>,
}

impl Shape {
    /// How the status report names this shape's client.
    fn client_name(self) -> &'static str {
        match self {
            Shape::ClaudeCode => "Claude Code",
            Shape::VsCode => "VS Code",
        }
    }
}

/// Which client's shapes a hook speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    ClaudeCode,
    VsCode,
}

/// The block decision in `shape`'s form.
pub fn block(shape: Shape, reason: &str) -> serde_json::Value {
    match shape {
        Shape::ClaudeCode => serde_json::json!({ "decision": "block", "reason": reason }),
        Shape::VsCode => serde_json::json!({
            "hookSpecificOutput": { "hookEventName": "Stop", "decision": "block", "reason": reason }
        }),
    }
}

/// Read a Stop hook's input from stdin and decide: print the block decision
/// to keep the agent going, or nothing to let it stop (why on stderr).
/// `installed_for` is the shape to answer in when the input does not say.
pub async fn stop(
    installed_for: Shape,
    source: Result<Source, Failure>,
    queue: Option<String>,
    agent: Option<String>,
) -> Result<(), Failure> {
    let mut raw = Vec::new();
    if let Err(e) = tokio::io::stdin().take(MAX_INPUT).read_to_end(&mut raw).await {
        return allow(&format!("could not read the hook input: {e}"));
    }
    let input: StopInput = match serde_json::from_slice(&raw) {
        Ok(i) => i,
        Err(e) => return allow(&format!("the hook input is not a Stop hook's JSON: {e}")),
    };
    let (shape, event) = match (&input.hook_event_name, &input.hook_event_name_vscode) {
        (Some(name), _) => (Shape::ClaudeCode, Some(name.as_str())),
        (None, Some(name)) => (Shape::VsCode, Some(name.as_str())),
        (None, None) => (installed_for, None),
    };
    if event.is_some_and(|n| n != "Stop" && n != "SubagentStop") {
        return allow("not a Stop event");
    }
    if input.stop_hook_active {
        return allow("the agent already went on once this turn");
    }
    let client = match source.and_then(|s| super::commands::client(&s)) {
        Ok(c) => c,
        Err(Failure(message, _)) => return allow(&message),
    };
    let status = match client.status().await {
        Ok(status) => status,
        Err(e) => return allow(&e.to_string()),
    };
    let queue = queue.unwrap_or_else(|| crate::model::DEFAULT_QUEUE.to_owned());
    let held = status.queues.iter().any(|q| q.name == queue && q.held);
    if held {
        return allow(&format!("queue {queue} is held"));
    }
    let session = input.session_id.or(input.session_id_vscode);
    if let Some(me) = this_agent(&status.agents, &queue, agent.as_deref(), shape, session.as_deref()) {
        if me.stop_requested || me.last_result_type == Some(crate::model::ResultType::Stop) {
            return allow(&format!("{} was stopped", me.agent_id));
        }
        // Its call went to the background as a task: the next instruction
        // arrives as the task's result and starts its next turn. Blocking
        // would make it call again, and a second task cost it a turn.
        if me.in_task {
            return allow(&format!("{} waits through a background task", me.agent_id));
        }
    }
    println!("{}", block(shape, CONTINUE_REASON));
    Ok(())
}

/// The agent this hook runs for, among `queue`'s: the one named (`--agent`);
/// else — `connect --hooks` names none, an agent's id being the model's to
/// choose — the one of this client whose client session is the hook's
/// conversation (the stdio bridge passes it on), else the one of this client
/// seen last.
fn this_agent<'a>(
    agents: &'a [crate::model::AgentStatus],
    queue: &str,
    named: Option<&str>,
    shape: Shape,
    session: Option<&str>,
) -> Option<&'a crate::model::AgentStatus> {
    let in_queue = || agents.iter().filter(move |a| a.queue == queue);
    if let Some(named) = named {
        return in_queue().find(|a| a.agent_id == named);
    }
    let ours = || in_queue().filter(move |a| a.client.as_ref().is_some_and(|c| c.name == shape.client_name()));
    let key = session.map(crate::model::session_key);
    ours()
        .find(|a| key.is_some() && a.session == key)
        .or_else(|| ours().max_by(|a, b| a.last_seen_at.cmp(&b.last_seen_at)))
}

/// Let the agent stop: no output, exit 0, the reason on stderr (Claude Code
/// shows it in its verbose mode, VS Code in its "GitHub Copilot Chat Hooks" output).
fn allow(why: &str) -> Result<(), Failure> {
    eprintln!("local-mcp hook: letting the agent stop ({why})");
    Ok(())
}
