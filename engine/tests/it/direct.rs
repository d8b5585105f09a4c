//! `get_user_request` answered by the direct path (`mcp/direct.rs`) is
//! answered as rmcp answers it: the same status, headers and messages, for
//! each kind of call (an instruction at once, a wait announced by progress
//! or by a log line, a silent 2026-07-28 wait, arguments the tool refuses,
//! a queue in the URL). Each case is asked twice, the same way but for one
//! thing: a quality weight in `Accept`, which the direct path leaves to
//! rmcp (`head_fits`), so the second answer is rmcp's own.

use std::time::Duration;

use serde_json::{json, Value};

use crate::common;

/// Answered by the direct path.
const DIRECT: &str = "application/json, text/event-stream";
/// The same media types, weighed: answered by rmcp.
const BY_RMCP: &str = "application/json;q=1, text/event-stream";

/// What an answer is, for comparing: the status, the headers a client
/// reads, and the messages with times and generated ids blanked.
#[derive(Debug, PartialEq)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    messages: Vec<Value>,
}

async fn ask(s: &common::Server, accept: &str, path: &str, extra: &[(&str, &str)], params: Value) -> Answer {
    let mut request = s
        .http
        .post(s.api(path))
        .header("content-type", "application/json")
        .header("accept", accept)
        .header("user-agent", "direct-test/1.0");
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    let body = json!({"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": params});
    let response = tokio::time::timeout(Duration::from_secs(30), request.body(body.to_string()).send())
        .await
        .expect("the answer's head within 30 s")
        .unwrap();
    let status = response.status().as_u16();
    let headers = ["content-type", "cache-control", "x-accel-buffering"]
        .iter()
        .map(|name| {
            let value = response.headers().get(*name).map(|v| v.to_str().unwrap().to_owned());
            (name.to_string(), value.unwrap_or_default())
        })
        .collect();
    let text = tokio::time::timeout(Duration::from_secs(30), response.text())
        .await
        .expect("the whole answer within 30 s")
        .unwrap();
    let messages = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| d.trim())
        .filter(|d| !d.is_empty())
        .map(|d| blank(serde_json::from_str(d).unwrap_or_else(|e| panic!("{e}: {d}"))))
        .collect();
    Answer {
        status,
        headers,
        messages,
    }
}

/// `v` with what differs between two asks blanked: times, generated ids, and
/// the same inside the result's JSON text.
fn blank(v: Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let v = match (k.as_str(), v) {
                        ("text", Value::String(t)) if t.starts_with('{') => {
                            blank(serde_json::from_str(&t).unwrap_or(Value::String(t)))
                        }
                        ("id" | "instance", Value::String(_)) => json!("<id>"),
                        (_, v) => blank(v),
                    };
                    (k, v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(blank).collect()),
        Value::String(s) if s.len() >= 20 && s.ends_with('Z') && s.as_bytes().get(10) == Some(&b'T') => {
            json!("<time>")
        }
        other => other,
    }
}

/// Ask the same twice, directly and by rmcp, with `before` run before each.
async fn both<F, Fut>(s: &common::Server, path: &str, extra: &[(&str, &str)], params: Value, before: F) -> Answer
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    before().await;
    let direct = ask(s, DIRECT, path, extra, params.clone()).await;
    before().await;
    let by_rmcp = ask(s, BY_RMCP, path, extra, params).await;
    assert_eq!(direct, by_rmcp, "the direct answer differs from rmcp's");
    direct
}

fn meta_2026(progress: bool) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2.1.330"},
    });
    if progress {
        meta["progressToken"] = json!("p-1");
    }
    meta
}

const HEADERS_2026: [(&str, &str); 3] = [
    ("mcp-protocol-version", "2026-07-28"),
    ("mcp-method", "tools/call"),
    ("mcp-name", "get_user_request"),
];

#[tokio::test]
async fn the_direct_answer_is_the_answer_rmcp_gives() {
    let s = common::start(|c| c.settings.default_wait_seconds = 1).await;
    let nothing = || async {};

    // An instruction waiting: answered at once, with it.
    let answer = both(
        &s,
        "/mcp",
        &[],
        json!({"name": "get_user_request", "arguments": {"agent_id": "a"}}),
        || async {
            s.add("do the thing").await;
        },
    )
    .await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.headers[0].1, "text/event-stream");
    assert_eq!(answer.messages.len(), 1, "{answer:?}");
    let result = &answer.messages[0]["result"]["content"][0]["text"];
    assert_eq!(result["result_type"], "instruction", "{answer:?}");
    assert_eq!(result["instruction"]["content"], "do the thing");

    // An empty queue, progress asked for: progress 0 of 1 s, then the answer.
    let answer = both(
        &s,
        "/mcp",
        &[("mcp-protocol-version", "2025-06-18")],
        json!({"name": "get_user_request", "arguments": {"agent_id": "a"}, "_meta": {"progressToken": 5}}),
        nothing,
    )
    .await;
    assert_eq!(answer.messages.len(), 2, "{answer:?}");
    assert_eq!(answer.messages[0]["method"], "notifications/progress");
    assert_eq!(answer.messages[0]["params"]["total"], 1.0);
    assert_eq!(answer.messages[1]["id"], 41);

    // No progress token: a log line opens the stream.
    let answer = both(
        &s,
        "/mcp",
        &[],
        json!({"name": "get_user_request", "arguments": {"agent_id": "a"}}),
        nothing,
    )
    .await;
    assert_eq!(answer.messages[0]["method"], "notifications/message", "{answer:?}");

    // A 2026-07-28 caller as Claude Code 2.1 calls: with a progress token,
    // and without (nothing may be sent before its answer).
    let answer = both(
        &s,
        "/mcp",
        &HEADERS_2026,
        json!({"name": "get_user_request", "arguments": {"agent_id": "cc"}, "_meta": meta_2026(true)}),
        nothing,
    )
    .await;
    assert_eq!(answer.messages.len(), 2, "{answer:?}");
    let answer = both(
        &s,
        "/mcp",
        &HEADERS_2026,
        json!({"name": "get_user_request", "arguments": {"agent_id": "cc"}, "_meta": meta_2026(false)}),
        nothing,
    )
    .await;
    assert_eq!(answer.messages.len(), 1, "{answer:?}");

    // An older revision named in `_meta` (negotiated per request): the
    // result shaped for that revision, as rmcp's handler shapes it.
    let mut older = meta_2026(true);
    older["io.modelcontextprotocol/protocolVersion"] = json!("2025-11-25");
    let answer = both(
        &s,
        "/mcp",
        &[("mcp-protocol-version", "2025-11-25")],
        json!({"name": "get_user_request", "arguments": {"agent_id": "old"}, "_meta": older}),
        nothing,
    )
    .await;
    let last = answer.messages.last().unwrap();
    assert!(last["result"].get("resultType").is_none(), "{answer:?}");

    // Arguments the tool refuses: a tool error, at once.
    let answer = both(
        &s,
        "/mcp",
        &[],
        json!({"name": "get_user_request", "arguments": {"agent_id": "a", "options": "not a list"}}),
        nothing,
    )
    .await;
    assert_eq!(answer.messages[0]["result"]["isError"], true, "{answer:?}");

    // A queue in the URL, and one the URL cannot name.
    let answer = both(
        &s,
        "/mcp/q/work",
        &[],
        json!({"name": "get_user_request", "arguments": {"agent_id": "w"}}),
        nothing,
    )
    .await;
    let last = answer.messages.last().unwrap();
    assert_eq!(last["result"]["content"][0]["text"]["queue"], "work", "{answer:?}");
    let answer = both(
        &s,
        "/mcp/q/NOT%20A%20QUEUE",
        &[],
        json!({"name": "get_user_request", "arguments": {"agent_id": "w"}}),
        nothing,
    )
    .await;
    assert_eq!(answer.messages[0]["result"]["isError"], true, "{answer:?}");
    s.stop().await;
}

/// A call the tool refuses at once (a queue its URL cannot name) leaves no
/// task behind: the one that merges its "caller gone" tokens ends with the
/// call. On the direct path that token's parent lives as long as the
/// server, so a task left per refused call would pile up until shutdown.
#[tokio::test]
async fn a_refused_call_leaves_no_task_behind() {
    let s = common::start(|_| {}).await;
    let refused = json!({"name": "get_user_request", "arguments": {"agent_id": "lost"}});
    let answer = ask(&s, DIRECT, "/mcp/q/NOT%20A%20QUEUE", &[], refused.clone()).await;
    assert_eq!(answer.messages[0]["result"]["isError"], true, "{answer:?}");
    let alive = || tokio::runtime::Handle::current().metrics().num_alive_tasks();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = alive();
    for _ in 0..100 {
        ask(&s, DIRECT, "/mcp/q/NOT%20A%20QUEUE", &[], refused.clone()).await;
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while alive() > before + 10 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        alive() <= before + 10,
        "100 refused calls left {} tasks alive (before them: {before})",
        alive()
    );
    s.stop().await;
}
