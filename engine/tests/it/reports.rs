//! Reports end to end with the official Rust SDK client on the real server:
//! a report is stored before the call waits, linked to the instruction the
//! agent's previous call delivered (or standing alone), stored once when a
//! call is retried, rendered safely, listed, sent live, and answered.

use crate::common;

use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ReadResourceRequestParams, ResourceContents};
use serde_json::{json, Value};

async fn call(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    args: Value,
) -> rmcp::model::CallToolResult {
    let params = CallToolRequestParams::new("get_user_request").with_arguments(args.as_object().unwrap().clone());
    client.call_tool(params).await.expect("a tool result")
}

#[tokio::test]
async fn reports_link_to_the_previous_instruction_and_are_stored_once() {
    let s = common::start(|c| c.settings.default_wait_seconds = 0).await;
    let client = s.mcp().await;
    let mut events = common::SseReader::open(&s, None).await;

    // Nothing delivered before: the report stands alone.
    let r = common::get_user_request_with(&client, json!({ "agent_id": "a", "report": "Starting up." })).await;
    assert_eq!(r["result_type"], "default_response");
    let first = s.get_json("/api/reports?agent_id=a").await["items"][0].clone();
    assert_eq!(
        (first["content"].as_str(), first["instruction_id"].clone()),
        (Some("Starting up."), Value::Null)
    );
    let live = events.next_of("report.created").await;
    assert_eq!(live.data["data"]["content"], "Starting up.", "{}", live.data);

    // The report of the next call attaches to the instruction just delivered.
    let item = s.add("Fix the bug").await;
    let got = common::get_user_request_with(&client, json!({ "agent_id": "a" })).await;
    assert_eq!(got["instruction"]["id"], item["id"]);
    let report = "Fixed it: **3 lines** in `lib.rs`.\n\n<script>alert(1)</script>";
    common::get_user_request_with(
        &client,
        json!({ "agent_id": "a", "report": report, "options": ["Ship it", "Add a test"] }),
    )
    .await;
    // A retry of the same call (the client lost the answer) is not stored twice.
    common::get_user_request_with(
        &client,
        json!({ "agent_id": "a", "report": report, "options": ["Ship it", "Add a test"] }),
    )
    .await;
    let reports = s.get_json("/api/reports?agent_id=a").await["items"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(reports.len(), 2, "{reports:?}");
    let linked = &reports[0];
    assert_eq!(linked["instruction_id"], item["id"]);
    assert_eq!(linked["options"], json!(["Ship it", "Add a test"]));
    let html = linked["html"].as_str().unwrap();
    assert!(
        html.contains("<strong>3 lines</strong>") && html.contains("<code>lib.rs</code>"),
        "{html}"
    );
    assert!(!html.contains("<script"), "raw HTML is shown as text: {html}");
    // The ledger's instruction carries its report.
    let consumed = s.get_json("/api/instructions?status=consumed").await;
    assert_eq!(consumed["items"][0]["report"]["id"], linked["id"]);

    // Another report with nothing delivered since stands alone.
    common::get_user_request_with(&client, json!({ "agent_id": "a", "report": "Waiting for you." })).await;
    let newest = s.get_json("/api/reports?agent_id=a&limit=1").await["items"][0].clone();
    assert_eq!(
        (newest["content"].as_str(), newest["instruction_id"].clone()),
        (Some("Waiting for you."), Value::Null)
    );
    s.stop().await;
}

#[tokio::test]
async fn bad_reports_are_tool_errors_naming_the_field_and_limit() {
    let s = common::start(|c| c.settings.default_wait_seconds = 0).await;
    let client = s.mcp().await;
    let cases = [
        (
            json!({ "report": "x".repeat(65_537) }),
            "report is 65537 bytes; the limit is 65536",
        ),
        (
            json!({ "report": "q?", "options": vec!["a"; 9] }),
            "options has 9 entries; the limit is 8",
        ),
        (
            json!({ "report": "q?", "options": ["x".repeat(201)] }),
            "options must be 1-200 characters",
        ),
        (json!({ "options": ["yes"] }), "pass the question as report"),
    ];
    for (args, want) in cases {
        let r = call(&client, args).await;
        assert_eq!(r.is_error, Some(true));
        let text = format!("{:?}", r.content);
        assert!(text.contains(want), "{want} in {text}");
    }
    assert!(
        s.get_json("/api/reports").await["items"].as_array().unwrap().is_empty(),
        "nothing stored"
    );
    // Callers that pass neither keep working as before.
    assert_eq!(
        common::get_user_request(&client, Some("plain")).await["result_type"],
        "default_response"
    );
    s.stop().await;
}

#[tokio::test]
async fn a_reply_goes_to_the_front_for_the_agent_that_asked() {
    let s = common::start(|c| c.settings.default_wait_seconds = 30).await;
    s.add_to("older work", "proj", None).await;
    let client = s.mcp_at("/mcp/q/proj").await;
    let got = common::get_user_request_with(&client, json!({ "agent_id": "asker" })).await;
    assert_eq!(got["instruction"]["content"], "older work");
    s.add_to("later work", "proj", None).await;
    // It reports a question; "later work" is pending, so that comes back at once.
    let r = common::get_user_request_with(
        &client,
        json!({ "agent_id": "asker", "report": "Which database?", "options": ["SQLite", "Postgres"] }),
    )
    .await;
    assert_eq!(r["instruction"]["content"], "later work");
    let report = s.get_json("/api/reports?queue=proj").await["items"][0].clone();
    assert_eq!(report["options"], json!(["SQLite", "Postgres"]));
    s.add_to("even later", "proj", None).await;
    let (status, body) = s
        .post(
            &format!("/api/reports/{}/reply", report["id"].as_str().unwrap()),
            json!({ "content": "SQLite" }),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        (body["item"]["queue"].as_str(), body["item"]["target"].as_str()),
        (Some("proj"), Some("asker"))
    );
    let pending = s.get_json("/api/instructions?status=pending&queue=proj").await;
    let order: Vec<&str> = pending["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["content"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["SQLite", "even later"], "the answer is next");
    assert_eq!(
        s.post("/api/reports/nope/reply", json!({ "content": "x" })).await.0,
        404
    );

    // The resource shows the newest report of each agent of the caller's queue.
    let read = client
        .read_resource(ReadResourceRequestParams::new("local-mcp://reports"))
        .await
        .unwrap();
    let ResourceContents::TextResourceContents { text, .. } = &read.contents[0] else {
        panic!()
    };
    let v: Value = serde_json::from_str(text).unwrap();
    assert_eq!(v["items"][0]["content"], "Which database?");
    tokio::time::timeout(Duration::from_secs(10), s.stop()).await.unwrap();
}

#[tokio::test]
async fn a_question_stays_open_until_something_reaches_the_agent() {
    let s = common::start(|c| c.settings.default_wait_seconds = 0).await;
    let client = s.mcp().await;
    let asking = |st: &Value| {
        st["agents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["agent_id"] == "q")
            .map(|a| a["asking"].clone())
    };
    common::get_user_request_with(&client, json!({ "agent_id": "q", "report": "All tests pass." })).await;
    assert_eq!(
        asking(&s.get_json("/api/status").await),
        Some(Value::Null),
        "a statement asks nothing"
    );
    common::get_user_request_with(&client, json!({ "agent_id": "q", "report": "Merge now?" })).await;
    let id = s.get_json("/api/reports?agent_id=q&limit=1").await["items"][0]["id"].clone();
    assert_eq!(asking(&s.get_json("/api/status").await), Some(id.clone()));
    let (status, _) = s
        .post(
            &format!("/api/reports/{}/reply", id.as_str().unwrap()),
            json!({ "content": "Yes" }),
        )
        .await;
    assert_eq!(status, 201);
    assert_eq!(
        common::get_user_request_with(&client, json!({ "agent_id": "q" })).await["instruction"]["content"],
        "Yes"
    );
    assert_eq!(asking(&s.get_json("/api/status").await), Some(Value::Null), "answered");
    s.stop().await;
}
