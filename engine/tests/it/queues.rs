//! Queues and targets end to end, with official-SDK MCP clients on the real
//! server: agents take only from the queue their URL names, a targeted
//! instruction reaches only its agent, waiting calls are served
//! longest-waiting first, hold and stop work over MCP, and under contention
//! (32 agents, 4 queues, 10,000 instructions, a third targeted) every
//! instruction reaches an eligible agent exactly once.

use crate::common;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

async fn take(client: &rmcp::service::RunningService<rmcp::RoleClient, ()>, agent: &str) -> Value {
    common::get_user_request_with(client, json!({ "agent_id": agent })).await
}

#[tokio::test]
async fn an_agent_takes_only_from_the_queue_its_url_names() {
    let s = common::start(|c| c.settings.default_wait_seconds = 1).await;
    s.add_to("for a", "repo-a", None).await;
    s.add_to("for default", "default", None).await;
    let a = s.mcp_at("/mcp/q/Repo-A").await;
    let plain = s.mcp().await;

    // The URL wins over the argument a model passes.
    let r = common::get_user_request_with(&a, json!({ "agent_id": "claude", "queue": "default" })).await;
    assert_eq!(r["queue"], "repo-a");
    assert_eq!(r["instruction"]["content"], "for a");
    // Nothing left for repo-a, though default has one.
    let r = take(&a, "claude").await;
    assert_eq!(
        (r["result_type"].as_str(), r["remaining_pending"].as_u64()),
        (Some("default_response"), Some(0))
    );
    // Plain /mcp is default; the argument serves clients with one global configuration.
    s.add_to("b via argument", "b", None).await;
    let r = common::get_user_request_with(&plain, json!({ "agent_id": "codex", "queue": "b" })).await;
    assert_eq!(
        (r["queue"].as_str(), r["instruction"]["content"].as_str()),
        (Some("b"), Some("b via argument"))
    );
    let r = take(&plain, "codex").await;
    assert_eq!(
        (r["queue"].as_str(), r["instruction"]["content"].as_str()),
        (Some("default"), Some("for default"))
    );

    // A bad queue name is a tool error naming the rule, never a protocol error.
    let params = rmcp::model::CallToolRequestParams::new("get_user_request")
        .with_arguments(json!({ "queue": "no spaces" }).as_object().unwrap().clone());
    let bad = plain.call_tool(params).await.expect("a tool result");
    assert_eq!(bad.is_error, Some(true));
    assert!(format!("{:?}", bad.content).contains("a-z, 0-9"), "{:?}", bad.content);
    let status = s
        .http
        .post(s.api("/mcp/q/no%20spaces"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(common::raw_call_body(1, "x"))
        .send()
        .await
        .unwrap();
    let text = status.text().await.unwrap();
    assert!(
        text.contains("\"isError\":true") && text.contains("not valid"),
        "{text}"
    );

    // The queue resource shows the caller's queue.
    s.add_to("still pending in a", "repo-a", None).await;
    let read = a
        .read_resource(rmcp::model::ReadResourceRequestParams::new("local-mcp://queue"))
        .await
        .unwrap();
    let text = match &read.contents[0] {
        rmcp::model::ResourceContents::TextResourceContents { text, .. } => text.clone(),
        other => panic!("{other:?}"),
    };
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (v["queue"].as_str(), v["pending_count"].as_u64()),
        (Some("repo-a"), Some(1))
    );

    // Queues were created on first use and are listed with their counts.
    let queues = s.get_json("/api/queues").await;
    let names: Vec<&str> = queues["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["default", "b", "repo-a"]);
    s.stop().await;
}

#[tokio::test]
async fn a_targeted_instruction_wakes_only_its_agent() {
    let s = Arc::new(common::start(|c| c.settings.default_wait_seconds = 30).await);
    let mut calls = Vec::new();
    for agent in ["first", "second"] {
        let client = s.mcp_at("/mcp/q/t").await;
        calls.push(tokio::spawn(async move { (take(&client, agent).await, client) }));
        s.until_waiting_in("t", agent, true).await;
    }
    let item = s.add_to("only for second", "t", Some("second")).await;
    assert_eq!(item["target"], "second");
    let (r, _client) = calls.pop().unwrap().await.unwrap();
    assert_eq!(
        (
            r["instruction"]["content"].as_str(),
            r["instruction"]["target"].as_str()
        ),
        (Some("only for second"), Some("second"))
    );
    // The first agent, waiting longer, was not woken and still waits.
    tokio::time::sleep(Duration::from_millis(200)).await;
    s.until_waiting_in("t", "first", true).await;
    s.add_to("for anyone", "t", None).await;
    let (r, _client) = calls.pop().unwrap().await.unwrap();
    assert_eq!(r["instruction"]["content"], "for anyone");
    let consumed = s.get_json("/api/instructions?status=consumed&queue=t").await;
    let by: HashMap<&str, &str> = consumed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["content"].as_str().unwrap(),
                i["consumed_by_agent_id"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        by,
        HashMap::from([("only for second", "second"), ("for anyone", "first")])
    );
}

#[tokio::test]
async fn waiting_agents_are_served_longest_waiting_first() {
    let s = Arc::new(common::start(|c| c.settings.default_wait_seconds = 30).await);
    let mut calls = Vec::new();
    for agent in ["one", "two", "three"] {
        let client = s.mcp_at("/mcp/q/fair").await;
        calls.push(tokio::spawn(async move { (agent, take(&client, agent).await) }));
        s.until_waiting_in("fair", agent, true).await;
    }
    for n in 1..=3 {
        s.add_to(&format!("job {n}"), "fair", None).await;
    }
    for (n, call) in calls.into_iter().enumerate() {
        let (agent, r) = call.await.unwrap();
        assert_eq!(
            r["instruction"]["content"],
            format!("job {}", n + 1),
            "{agent} waited longest but one"
        );
    }
}

#[tokio::test]
async fn hold_delays_delivery_and_release_wakes_waiting_calls() {
    let s = Arc::new(common::start(|c| c.settings.default_wait_seconds = 1).await);
    let client = s.mcp_at("/mcp/q/h").await;
    assert_eq!(take(&client, "w").await["result_type"], "default_response");
    let (status, body) = s.post("/api/hold", json!({ "queue": "h" })).await;
    assert_eq!((status, body["changed"][0]["held"].as_bool()), (200, Some(true)));
    s.add_to("held back", "h", None).await;
    // While held, calls wait and end as usual with nothing delivered.
    let r = take(&client, "w").await;
    assert_eq!(
        (r["result_type"].as_str(), r["remaining_pending"].as_u64()),
        (Some("default_response"), Some(1))
    );
    // Another queue is not held.
    s.add_to("free", "other", None).await;
    let other = s.mcp_at("/mcp/q/other").await;
    assert_eq!(take(&other, "o").await["instruction"]["content"], "free");
    // The held state shows in status and survives in the store.
    let st = s.get_json("/api/status").await;
    let h = st["queues"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["name"] == "h")
        .unwrap()
        .clone();
    assert_eq!(
        (h["held"].as_bool(), h["pending_count"].as_u64()),
        (Some(true), Some(1))
    );
    s.set_config(json!({ "default_wait_seconds": 30 })).await;
    let waiting = {
        let started = tokio::time::Instant::now();
        tokio::spawn(async move { (take(&client, "w").await, started.elapsed()) })
    };
    s.until_waiting_in("h", "w", true).await;
    let (status, body) = s.post("/api/release", json!({})).await;
    assert_eq!((status, body["changed"][0]["name"].as_str()), (200, Some("h")));
    let (r, took) = waiting.await.unwrap();
    assert_eq!(r["instruction"]["content"], "held back");
    assert!(
        took < Duration::from_secs(10),
        "release woke the call at once ({took:?})"
    );
}

#[tokio::test]
async fn hold_survives_a_restart() {
    let s = common::start(|_| {}).await;
    s.add_to("x", "kept", None).await;
    assert_eq!(s.post("/api/hold", json!({})).await.0, 200);
    let dir = s.stop().await;
    let s = common::start_in(dir, |_| {}).await;
    let queues = s.get_json("/api/queues").await;
    assert!(
        queues["items"].as_array().unwrap().iter().all(|q| q["held"] == true),
        "{queues}"
    );
    s.stop().await;
}

#[tokio::test]
async fn stop_ends_an_agents_loop_once() {
    let s = Arc::new(common::start(|c| c.settings.default_wait_seconds = 30).await);
    let client = Arc::new(s.mcp_at("/mcp/q/s").await);
    // Unknown agents cannot be stopped.
    let (status, body) = s
        .post("/api/agents/stop", json!({ "agent_id": "ghost", "queue": "s" }))
        .await;
    assert_eq!(status, 404, "{body}");
    let waiting = {
        let client = client.clone();
        tokio::spawn(async move { take(&client, "looper").await })
    };
    s.until_waiting_in("s", "looper", true).await;
    let (status, _) = s
        .post("/api/agents/stop", json!({ "agent_id": "looper", "queue": "s" }))
        .await;
    assert_eq!(status, 204);
    let r = waiting.await.unwrap();
    assert_eq!(r["result_type"], "stop");
    assert!(r["response"].as_str().unwrap().contains("Stop calling"), "{r}");
    let st = s.get_json("/api/status").await;
    let agent = st["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent_id"] == "looper")
        .unwrap()
        .clone();
    assert_eq!(
        (agent["state"].as_str(), agent["stop_requested"].as_bool()),
        (Some("offline"), Some(false))
    );
    // One-shot: the next call works normally.
    s.add_to("after stop", "s", None).await;
    assert_eq!(take(&client, "looper").await["instruction"]["content"], "after stop");
    // A stop for an agent that is not waiting is kept for its next call.
    assert_eq!(
        s.post("/api/agents/stop", json!({ "agent_id": "looper", "queue": "s" }))
            .await
            .0,
        204
    );
    s.add_to("not yet", "s", None).await;
    assert_eq!(take(&client, "looper").await["result_type"], "stop");
    assert_eq!(take(&client, "looper").await["instruction"]["content"], "not yet");
}

#[tokio::test]
async fn queues_are_renamed_archived_and_validated() {
    let s = common::start(|_| {}).await;
    let (status, body) = s.post("/api/queues", json!({ "name": "Proj" })).await;
    assert_eq!((status, body["item"]["name"].as_str()), (201, Some("proj")));
    assert_eq!(s.post("/api/queues", json!({ "name": "proj" })).await.0, 409);
    assert_eq!(s.post("/api/queues", json!({ "name": "a/b" })).await.0, 400);
    s.add_to("moves along", "proj", Some("me")).await;
    // Renaming carries the instructions along; the old name is gone.
    let (status, body) = s.patch("/api/queues/proj", json!({ "name": "project" })).await;
    assert_eq!((status, body["item"]["pending_count"].as_u64()), (200, Some(1)));
    assert_eq!(s.get_status("/api/queues/proj", None, None).await, 404);
    let listed = s.get_json("/api/instructions?queue=project&target=me").await;
    assert_eq!(listed["items"][0]["content"], "moves along");
    // A queue with pending work cannot be archived; default can never be.
    assert_eq!(s.patch("/api/queues/project", json!({ "archived": true })).await.0, 409);
    assert_eq!(s.patch("/api/queues/default", json!({ "archived": true })).await.0, 409);
    assert_eq!(s.patch("/api/queues/default", json!({ "name": "x" })).await.0, 409);
    // Moving the instruction to another queue, then archiving.
    let id = listed["items"][0]["id"].as_str().unwrap().to_owned();
    let (status, moved) = s
        .patch(
            &format!("/api/instructions/{id}"),
            json!({ "queue": "default", "target": null }),
        )
        .await;
    assert_eq!(
        (status, moved["item"]["queue"].as_str(), moved["item"]["target"].clone()),
        (200, Some("default"), Value::Null)
    );
    let (status, body) = s.patch("/api/queues/project", json!({ "archived": true })).await;
    assert_eq!((status, body["item"]["archived"].as_bool()), (200, Some(true)));
    let names: Vec<String> = s.get_json("/api/queues").await["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["default"], "archived queues are hidden");
    // A consumed instruction cannot be readdressed.
    let client = s.mcp().await;
    take(&client, "a").await;
    let (status, _) = s
        .patch(&format!("/api/instructions/{id}"), json!({ "target": "b" }))
        .await;
    assert_eq!(status, 409);
    s.stop().await;
}

const AGENTS_PER_QUEUE: usize = 8;
const QUEUES: [&str; 4] = ["q0", "q1", "q2", "q3"];
const INSTRUCTIONS: usize = 10_000;

/// 32 agents in 4 queues drain 10,000 instructions, a third of them targeted:
/// 0 lost, 0 duplicated, 0 misrouted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contention_across_queues_loses_duplicates_and_misroutes_nothing() {
    let s = Arc::new(common::start(|c| c.settings.default_wait_seconds = 1).await);
    let producing = Arc::new(AtomicBool::new(true));
    let mut agents = Vec::new();
    for q in QUEUES {
        for a in 0..AGENTS_PER_QUEUE {
            let s = s.clone();
            let producing = producing.clone();
            agents.push(tokio::spawn(async move {
                let client = s.mcp_at(&format!("/mcp/q/{q}")).await;
                let agent = format!("{q}-agent-{a}");
                let mut got = Vec::new();
                loop {
                    let still = producing.load(Ordering::SeqCst);
                    let r = take(&client, &agent).await;
                    assert_eq!(r["queue"], q);
                    match r["result_type"].as_str().unwrap() {
                        "instruction" => got.push((
                            r["instruction"]["id"].as_str().unwrap().to_owned(),
                            r["instruction"]["target"].as_str().map(str::to_owned),
                        )),
                        // Empty after production ended: nothing is left for this agent.
                        _ if !still => break,
                        _ => {}
                    }
                }
                (q, agent, got)
            }));
        }
    }
    // Four producers post straight to the API; item n goes to queue n % 4 and
    // every third one to a single agent of that queue.
    let expected = Arc::new(std::sync::Mutex::new(HashMap::new()));
    let mut producers = Vec::new();
    for p in 0..4 {
        let s = s.clone();
        let expected = expected.clone();
        producers.push(tokio::spawn(async move {
            for n in (p..INSTRUCTIONS).step_by(4) {
                let q = QUEUES[n % QUEUES.len()];
                let target = (n % 3 == 0).then(|| format!("{q}-agent-{}", (n / 3) % AGENTS_PER_QUEUE));
                let item = s.add_to(&format!("n{n}"), q, target.as_deref()).await;
                expected
                    .lock()
                    .unwrap()
                    .insert(item["id"].as_str().unwrap().to_owned(), (q, target));
            }
        }));
    }
    for p in producers {
        p.await.unwrap();
    }
    producing.store(false, Ordering::SeqCst);
    let mut seen = HashSet::new();
    let (mut duplicated, mut misrouted) = (0, 0);
    for a in agents {
        let (q, agent, got) = a.await.unwrap();
        for (id, target) in got {
            duplicated += usize::from(!seen.insert(id.clone()));
            let (want_q, want_target) = expected.lock().unwrap()[&id].clone();
            if want_q != q || want_target.as_ref().is_some_and(|t| *t != agent) || want_target != target {
                misrouted += 1;
            }
        }
    }
    let lost = INSTRUCTIONS - seen.len();
    println!("contention: {INSTRUCTIONS} instructions, lost {lost}, duplicated {duplicated}, misrouted {misrouted}");
    assert_eq!((lost, duplicated, misrouted), (0, 0, 0));
    let st = s.get_json("/api/status").await;
    assert_eq!(
        st["queue"],
        json!({ "pending_count": 0, "consumed_count": INSTRUCTIONS, "in_doubt_count": 0, "held_count": 0 })
    );
    assert_eq!(s.engine.queue.integrity_check().await.unwrap(), "ok");
}
