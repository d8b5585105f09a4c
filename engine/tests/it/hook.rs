//! `local-mcp-server hook claude-stop` (and `vscode-stop`), piped the JSON
//! Claude Code or VS Code sends a `Stop` hook: it keeps the agent going
//! (`{"decision":"block",…}`, or VS Code's `hookSpecificOutput` form — the
//! input's shape decides) unless the agent already went on once this turn,
//! its queue is held, the person stopped it, local-mcp is not running, or
//! the input is not a Stop hook's.

use crate::common;

use std::process::Stdio;

use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;

/// Claude Code's Stop input, as its hooks reference documents it.
pub(crate) fn stop_input(active: bool) -> String {
    json!({
        "session_id": "abc123",
        "transcript_path": "/home/me/.claude/projects/p/abc123.jsonl",
        "cwd": "/home/me/p",
        "permission_mode": "default",
        "hook_event_name": "Stop",
        "stop_hook_active": active
    })
    .to_string()
}

/// VS Code's Stop input, as its hooks reference documents it (common fields in camelCase).
fn vscode_stop_input(active: bool) -> String {
    json!({
        "timestamp": "2026-11-24T10:30:00.000Z",
        "cwd": "/home/me/p",
        "sessionId": "session-1",
        "hookEventName": "Stop",
        "transcript_path": "/home/me/.vscode/t.json",
        "stop_hook_active": active
    })
    .to_string()
}

/// Run the hook with `input` on stdin; its exit code, stdout and stderr.
pub(crate) async fn hook(url: &str, extra: &[&str], input: &str) -> (i32, String, String) {
    hook_as("claude-stop", url, extra, input).await
}

async fn hook_as(kind: &str, url: &str, extra: &[&str], input: &str) -> (i32, String, String) {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_local-mcp-server"))
        .args(["hook", kind, "--url", url])
        .args(extra)
        .env_remove("LOCAL_MCP_TOKEN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).await.unwrap();
    drop(stdin);
    let out = child.wait_with_output().await.unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[tokio::test]
async fn the_stop_hook_keeps_the_agent_calling_unless_it_should_stop() {
    let s = common::start(|c| c.settings.default_wait_seconds = 0).await;

    let (code, out, _) = hook(&s.url, &[], &stop_input(false)).await;
    assert_eq!(code, 0);
    let decision: Value = serde_json::from_str(out.trim()).expect("one JSON object");
    assert_eq!(decision["decision"], "block");
    assert!(decision["reason"].as_str().unwrap().contains("get_user_request"));

    // It already went on once this turn: let it stop (no loop of blocks).
    let (code, out, err) = hook(&s.url, &[], &stop_input(true)).await;
    assert_eq!((code, out.as_str()), (0, ""));
    assert!(err.contains("already went on once"), "{err}");

    // The person held the queue.
    s.add_to("for later", "work", None).await;
    assert_eq!(s.post("/api/hold", json!({ "queue": "work" })).await.0, 200);
    let (_, out, err) = hook(&s.url, &["--queue", "work"], &stop_input(false)).await;
    assert_eq!(out, "");
    assert!(err.contains("queue work is held"), "{err}");
    let (_, out, _) = hook(&s.url, &["--queue", "default"], &stop_input(false)).await;
    assert!(out.contains("\"block\""), "another queue is not held: {out}");

    // The person stopped this agent.
    let client = s.mcp().await;
    common::get_user_request_with(&client, json!({ "agent_id": "claude" })).await;
    assert_eq!(s.post("/api/agents/stop", json!({ "agent_id": "claude" })).await.0, 204);
    let (_, out, err) = hook(&s.url, &["--agent", "claude"], &stop_input(false)).await;
    assert_eq!(out, "");
    assert!(err.contains("claude was stopped"), "{err}");
    let (_, out, _) = hook(&s.url, &["--agent", "codex"], &stop_input(false)).await;
    assert!(out.contains("\"block\""), "another agent goes on: {out}");
    client.cancel().await.unwrap();

    // Not Claude Code's input, or another event: no opinion.
    let (code, out, _) = hook(&s.url, &[], "not json at all").await;
    assert_eq!((code, out.as_str()), (0, ""));
    let other = json!({ "hook_event_name": "PreToolUse", "tool_name": "Bash" }).to_string();
    let (_, out, _) = hook(&s.url, &[], &other).await;
    assert_eq!(out, "");

    // local-mcp gone: nothing to wait on, so the agent may stop.
    let url = s.url.clone();
    s.stop().await;
    let (code, out, err) = hook(&url, &[], &stop_input(false)).await;
    assert_eq!((code, out.as_str()), (0, ""));
    assert!(err.contains("not answering"), "{err}");
}

#[tokio::test]
async fn vs_code_gets_its_own_form_whichever_hook_it_runs() {
    let s = common::start(|c| c.settings.default_wait_seconds = 0).await;
    // VS Code's own hook, and Claude Code's hook as VS Code runs it from .claude/settings.json.
    for kind in ["vscode-stop", "claude-stop"] {
        let (code, out, _) = hook_as(kind, &s.url, &[], &vscode_stop_input(false)).await;
        assert_eq!(code, 0);
        let answer: Value = serde_json::from_str(out.trim()).expect("one JSON object");
        assert_eq!(
            answer["hookSpecificOutput"]["hookEventName"], "Stop",
            "{kind}: {answer}"
        );
        assert_eq!(answer["hookSpecificOutput"]["decision"], "block");
        assert!(answer["hookSpecificOutput"]["reason"]
            .as_str()
            .unwrap()
            .contains("get_user_request"));
        assert!(answer.get("decision").is_none(), "not Claude Code's form: {answer}");
    }
    // Claude Code's input through VS Code's hook still gets Claude Code's form.
    let (_, out, _) = hook_as("vscode-stop", &s.url, &[], &stop_input(false)).await;
    let answer: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(answer["decision"], "block");
    // Already continuing once: stop.
    let (code, out, err) = hook_as("vscode-stop", &s.url, &[], &vscode_stop_input(true)).await;
    assert_eq!((code, out.as_str()), (0, ""));
    assert!(err.contains("already went on once"), "{err}");
    let other = json!({ "hookEventName": "PreToolUse", "tool_name": "runInTerminal" }).to_string();
    let (_, out, _) = hook_as("vscode-stop", &s.url, &[], &other).await;
    assert_eq!(out, "");
    s.stop().await;
}
