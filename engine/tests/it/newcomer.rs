//! What a newcomer met (issue 39), in the engine: agent states that tell the
//! truth, agents that can be forgotten, and the token said where it is.

use std::time::Duration;

use serde_json::{json, Value};

use crate::common;

/// The state the status report gives `agent`.
async fn state_of(s: &common::Server, agent: &str) -> Value {
    let status = s.get_json("/api/status").await;
    status["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent_id"] == agent)
        .map(|a| a["state"].clone())
        .unwrap_or(Value::Null)
}

/// An agent that took an instruction, reported, and was killed while its
/// next call waited is gone — not "working" on what it took.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_killed_mid_wait_is_gone_not_working() {
    let s = common::start(|c| c.settings.default_wait_seconds = 600).await;
    s.add("Fix the build").await;
    let client = s.mcp().await;
    let got = common::get_user_request_with(&client, json!({ "agent_id": "killed" })).await;
    assert_eq!(got["instruction"]["content"], "Fix the build");
    assert_eq!(state_of(&s, "killed").await, "working");
    client.cancel().await.ok();

    // Its next call, with its report and a question, waits; then its process dies.
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "get_user_request",
        "arguments": {"agent_id": "killed", "report": "Done. Ship it?", "options": ["yes", "no"]}}});
    let http = reqwest::Client::new();
    let waiting = http
        .post(s.api("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    s.until_waiting("killed", true).await;
    assert_eq!(state_of(&s, "killed").await, "needs_you");
    drop(waiting);
    drop(http);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let state = state_of(&s, "killed").await;
        if state == "offline" {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "a killed agent still shows as {state} 15 s after its connection closed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // It calls again: it is back.
    let client = s.mcp().await;
    s.add("Next").await;
    let got = common::get_user_request_with(&client, json!({ "agent_id": "killed" })).await;
    assert_eq!(got["instruction"]["content"], "Next");
    assert_eq!(state_of(&s, "killed").await, "working");
    client.cancel().await.ok();
    s.stop().await;
}

/// Offline agents pile up (6 of 7 after an hour of use): one is forgotten by
/// name, every gone one at once; one listening now is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_are_forgotten_one_or_all_gone_but_not_one_listening() {
    let s = common::start(|c| {
        c.settings.default_wait_seconds = 0;
        c.settings.agent_stale_after_seconds = 1;
    })
    .await;
    let client = s.mcp().await;
    for agent in ["old-a", "old-b", "keep"] {
        common::get_user_request_with(&client, json!({ "agent_id": agent })).await;
    }
    let listed = |status: &Value| -> Vec<String> {
        let mut ids: Vec<String> = status["agents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["agent_id"].as_str().unwrap().to_owned())
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(listed(&s.get_json("/api/status").await), ["keep", "old-a", "old-b"]);
    let (status, body) = s.post("/api/agents/forget", json!({ "agent_id": "old-a" })).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["forgotten"], json!([{ "queue": "default", "agent_id": "old-a" }]));
    assert_eq!(listed(&s.get_json("/api/status").await), ["keep", "old-b"]);

    // Gone ones go together: exactly those the page calls offline. One
    // that took an instruction is working on it, however long it is silent.
    s.add("busy with this").await;
    common::get_user_request_with(&client, json!({ "agent_id": "worker" })).await;
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    common::get_user_request_with(&client, json!({ "agent_id": "keep" })).await;
    assert_eq!(state_of(&s, "worker").await, "working");
    let (ok, out, err) = common::cli(&s, &["forget", "--gone"]).await;
    assert!(ok && out.contains("forgot old-b (default)"), "{out}{err}");
    assert_eq!(listed(&s.get_json("/api/status").await), ["keep", "worker"]);
    client.cancel().await.ok();
    s.stop().await;
}

/// An agent without the token gets 401: said at info level in the log and
/// on the page (the status names the last refusal), and the token command
/// prints what a client needs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_refused_for_its_token_is_said_and_the_token_is_printed() {
    let s = common::start(|c| c.api_token = Some("tok-9".into())).await;
    let r = reqwest::Client::new()
        .post(s.api("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("user-agent", "claude-code/2.1.330 (cli)")
        .body(common::raw_call_body(1, "tokenless"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    // A browser's requests before its sign-in are refused too, and must not
    // hide the agent's refusal (a fresh page made the note vanish).
    let page = reqwest::Client::new()
        .get(s.api("/api/reports"))
        .header("user-agent", "Mozilla/5.0 HeadlessChrome")
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 401);
    let status: Value = s
        .http
        .get(s.api("/api/status"))
        .bearer_auth("tok-9")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let refused = &status["server"]["refused_without_token"];
    assert_eq!(refused["path"], "/mcp", "{status}");
    assert!(
        refused["user_agent"].as_str().unwrap().starts_with("claude-code/"),
        "{refused}"
    );
    assert!(refused["at"].is_string(), "{refused}");
    let (ok, out, _) = common::cli(&s, &["token", "--token", "tok-9"]).await;
    assert!(ok && out.trim() == "tok-9", "{out}");
    let (ok, out, _) = common::cli(&s, &["token", "--token", "tok-9", "--header-json"]).await;
    assert!(ok, "{out}");
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap(),
        json!({ "Authorization": "Bearer tok-9" })
    );
    s.stop().await;
}
