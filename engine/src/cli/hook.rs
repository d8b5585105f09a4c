//! `hook claude-stop`: a Claude Code `Stop` hook that keeps the loop going.
//!
//! Claude Code runs a `Stop` hook command when the agent is about to end its
//! turn, with JSON on stdin (`session_id`, `transcript_path`,
//! `hook_event_name`, `stop_hook_active`, …). Printing
//! `{"decision": "block", "reason": …}` on stdout (exit 0) makes it go on,
//! with the reason as its next step; printing nothing lets it stop
//! (https://code.claude.com/docs/en/hooks.md#stop). We block, telling it to
//! call `get_user_request`, unless:
//!
//! - `stop_hook_active` is true: it already went on once because of a stop
//!   hook this turn (blocking again could loop forever);
//! - the person held the agent's queue, or stopped that agent;
//! - local-mcp is not running (there is nothing to wait on), or the input is
//!   not what Claude Code sends.
//!
//! Every doubt lets the agent stop: a hook that fails closed would trap it.

use serde::Deserialize;
use tokio::io::AsyncReadExt;

use super::target::Source;
use super::Failure;

/// At most this much of stdin is read (Claude Code's input is a few hundred bytes).
const MAX_INPUT: u64 = 1 << 20;

/// What the agent is told when the hook keeps it going.
pub const CONTINUE_REASON: &str = "Do not end your turn: call the MCP tool `get_user_request` (local-mcp) now to \
     get the user's next instruction, carry it out, and call it again after each task.";

#[derive(Debug, Deserialize)]
struct StopInput {
    #[serde(default)]
    hook_event_name: Option<String>,
    #[serde(default)]
    stop_hook_active: bool,
}

/// Read Claude Code's Stop input from stdin and decide: print the block
/// decision to keep the agent going, or nothing to let it stop (why on stderr).
pub async fn claude_stop(
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
        Err(e) => return allow(&format!("the hook input is not Claude Code's Stop JSON: {e}")),
    };
    if input
        .hook_event_name
        .as_deref()
        .is_some_and(|n| n != "Stop" && n != "SubagentStop")
    {
        return allow("not a Stop event");
    }
    if input.stop_hook_active {
        return allow("the agent already went on once this turn");
    }
    let target = match source.and_then(|s| s.resolve().map_err(Failure::from)) {
        Ok(t) => t,
        Err(Failure(message, _)) => return allow(&message),
    };
    let status = match super::commands::call(&target, reqwest::Method::GET, "/api/status", None).await {
        Ok(status) => status,
        Err(Failure(message, _)) => return allow(&message),
    };
    let queue = queue.unwrap_or_else(|| crate::model::DEFAULT_QUEUE.to_owned());
    let held = status["queues"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|q| q["name"] == queue.as_str() && q["held"] == true);
    if held {
        return allow(&format!("queue {queue} is held"));
    }
    if let Some(agent) = agent {
        let stopped = status["agents"].as_array().into_iter().flatten().any(|a| {
            a["agent_id"] == agent.as_str()
                && a["queue"] == queue.as_str()
                && (a["stop_requested"] == true || a["last_result_type"] == "stop")
        });
        if stopped {
            return allow(&format!("{agent} was stopped"));
        }
    }
    let decision = serde_json::json!({ "decision": "block", "reason": CONTINUE_REASON });
    println!("{decision}");
    Ok(())
}

/// Let the agent stop: no output, exit 0, the reason on stderr (Claude Code
/// shows it in its verbose mode).
fn allow(why: &str) -> Result<(), Failure> {
    eprintln!("local-mcp hook: letting the agent stop ({why})");
    Ok(())
}
