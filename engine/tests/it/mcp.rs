//! `get_user_request` over real MCP: the official Rust SDK client (rmcp) and raw
//! streamable-HTTP requests where a test needs to hang up mid-call.

use crate::common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use rmcp::model::{
    CallToolRequestParams, ClientRequest, ProgressNotificationParam, Request, RequestMetaObject, ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{json, Value};

#[tokio::test]
async fn lists_one_tool_with_its_input_schema_and_tells_agents_to_keep_calling() {
    let s = common::start(|_| {}).await;
    let client = s.mcp().await;
    let info = client.peer_info().expect("server info");
    let instructions = info.instructions.clone().unwrap_or_default();
    assert!(
        instructions.contains("get_user_request") && instructions.contains("Do not end your session"),
        "{instructions}"
    );
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    let tool = &tools[0];
    assert_eq!(tool.name, "get_user_request");
    // No outputSchema: a client that sees one expects structuredContent, and
    // Claude Code drops the image blocks of a result that carries it.
    assert!(tool.output_schema.is_none(), "{:?}", tool.output_schema);
    assert_eq!(tool.input_schema["properties"]["agent_id"]["maxLength"], 128);
    // Only formats JSON Schema defines: strict validators (Ajv, the Inspector) reject schemars' uint64.
    let schemas = serde_json::to_string(&tool.input_schema).unwrap();
    assert!(!schemas.contains("uint") && !schemas.contains("int32"), "{schemas}");
    let ann = tool.annotations.as_ref().expect("annotations");
    assert_eq!(ann.read_only_hint, Some(false));
    assert!(tool.description.as_deref().unwrap().contains("call this tool again"));
    s.stop().await;
}

#[tokio::test]
async fn fifo_one_per_call_with_remaining_count_then_timeout_results() {
    let s = common::start(|c| c.settings.default_wait_seconds = 1).await;
    for c in ["one", "two", "three"] {
        s.add(c).await;
    }
    let client = s.mcp().await;
    for (expected, remaining) in [("one", 2), ("two", 1), ("three", 0)] {
        let r = common::get_user_request(&client, Some("fifo")).await;
        assert_eq!(r["result_type"], "instruction");
        assert_eq!(r["instruction"]["content"], expected);
        assert_eq!(r["remaining_pending"], remaining);
        assert_eq!(r["waited_seconds"], 0);
        assert!(r["instruction"]["consumed_at"].as_str().unwrap().ends_with('Z'));
    }
    // Empty queue: wait the configured second, then the default response.
    let t = Instant::now();
    let r = common::get_user_request(&client, Some("fifo")).await;
    assert!(t.elapsed() >= Duration::from_millis(950), "waited {:?}", t.elapsed());
    assert_eq!(r["result_type"], "default_response");
    assert_eq!(r["instruction"], Value::Null);
    assert_eq!(r["response"], engine::model::DEFAULT_EMPTY_RESPONSE);
    assert_eq!(r["waited_seconds"], 1);
    // With no default text, the result is `empty`.
    s.set_config(json!({"default_empty_response": ""})).await;
    let r = common::get_user_request(&client, None).await;
    assert_eq!(r["result_type"], "empty");
    assert_eq!(r["response"], "");
    // Zero wait answers at once.
    s.set_config(json!({"default_wait_seconds": 0})).await;
    let t = Instant::now();
    let r = common::get_user_request(&client, None).await;
    assert_eq!(r["result_type"], "empty");
    assert!(t.elapsed() < Duration::from_millis(500));
    let status = s.get_json("/api/status").await;
    // Without an agent_id, the call is the agent its client already was
    // here: the one agent of this client, "fifo" (`docs/ARCHITECTURE.md`, "Agent identity").
    let agents = status["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 1, "a forgotten agent_id makes no stranger: {status}");
    assert_eq!(agents[0]["agent_id"], "fifo");
    assert_eq!(
        agents[0]["last_result_type"], "empty",
        "the calls without an agent_id were recorded on it"
    );
    s.stop().await;
}

#[tokio::test]
async fn a_waiting_call_is_woken_at_once_by_a_new_instruction() {
    let s = common::start(|c| c.settings.default_wait_seconds = 60).await;
    let client = s.mcp().await;
    let waiting = tokio::spawn(async move {
        let r = common::get_user_request(&client, Some("sleeper")).await;
        (r, Instant::now())
    });
    s.until_waiting("sleeper", true).await;
    let status = s.get_json("/api/status").await;
    assert_eq!(status["agent"]["state"], "listening");
    let posted = Instant::now();
    let item = s.add("wake up").await;
    let (r, woke) = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("woken")
        .unwrap();
    assert_eq!(r["instruction"]["id"], item["id"]);
    assert!(woke - posted < Duration::from_secs(1), "woke after {:?}", woke - posted);
    assert_eq!(s.get_json("/api/status").await["agent"]["state"], "working");
    s.stop().await;
}

#[tokio::test]
async fn eight_agents_share_8000_instructions_exactly_once() {
    agents_share_exactly_once(8, 7000, 1000).await;
}

/// Issue 6's contention bar: 32 agents, 10,000 instructions (9,000 queued
/// before they start, 1,000 arriving while they work).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thirty_two_agents_share_10000_instructions_exactly_once() {
    agents_share_exactly_once(32, 9000, 1000).await;
}

/// `AGENTS` official-SDK clients drain `PREFILLED` queued instructions plus
/// `LIVE` ones POSTed meanwhile: each delivered exactly once, none lost.
#[allow(non_snake_case)] // read as the constants they were
async fn agents_share_exactly_once(AGENTS: usize, PREFILLED: usize, LIVE: usize) {
    let dir = Arc::new(tempfile::tempdir().unwrap());
    {
        // Prefill through the engine's own store in one transaction: a thousand
        // separate fsyncs would only measure the disk.
        let store = engine::Store::open(&dir.path().join("queue.sqlite3")).unwrap();
        store
            .write(
                engine::Durability::Full,
                |db| {
                    for n in 0..PREFILLED {
                        db.insert_instruction(&engine::model::Instruction {
                            id: engine::model::InstructionId::new(&format!("pre-{n}")).unwrap(),
                            ..engine::model::Instruction::new_pending(
                                format!("prefilled {n}"),
                                engine::model::QueueName::default_queue(),
                                None,
                                n as i64 + 1,
                                engine::model::Timestamp::now(),
                            )
                        })?;
                    }
                    Ok(())
                },
                |_| (),
            )
            .unwrap();
    }
    let s = Arc::new(common::start_in(dir, |c| c.settings.default_wait_seconds = 2).await);
    let producing = Arc::new(AtomicUsize::new(1));
    let producer = {
        let s = s.clone();
        let producing = producing.clone();
        tokio::spawn(async move {
            for n in 0..LIVE {
                s.add(&format!("live {n}")).await;
            }
            producing.store(0, Ordering::SeqCst);
        })
    };
    let mut consumers = Vec::new();
    for a in 0..AGENTS {
        let s = s.clone();
        let producing = producing.clone();
        consumers.push(tokio::spawn(async move {
            let client = s.mcp().await;
            let mut got = Vec::new();
            loop {
                let r = common::get_user_request(&client, Some(&format!("agent-{a}"))).await;
                match r["result_type"].as_str().unwrap() {
                    "instruction" => got.push(r["instruction"]["id"].as_str().unwrap().to_owned()),
                    _ if producing.load(Ordering::SeqCst) == 0 => break,
                    _ => {}
                }
            }
            got
        }));
    }
    producer.await.unwrap();
    let mut all = Vec::new();
    let mut per_agent = Vec::new();
    for c in consumers {
        let got = c.await.unwrap();
        per_agent.push(got.len());
        all.extend(got);
    }
    let unique: HashSet<&String> = all.iter().collect();
    assert_eq!(all.len(), unique.len(), "duplicates delivered");
    assert_eq!(
        all.len(),
        PREFILLED + LIVE,
        "lost instructions; per agent {per_agent:?}"
    );
    assert!(per_agent.iter().all(|n| *n > 0), "every agent got work: {per_agent:?}");
    let counts = s.get_json("/api/status").await["queue"].clone();
    // And every one of those answers was written out in full: none in doubt.
    assert_eq!(
        counts,
        json!({"pending_count": 0, "consumed_count": PREFILLED + LIVE, "in_doubt_count": 0, "held_count": 0})
    );
    assert_eq!(s.engine.queue.integrity_check().await.unwrap(), "ok");
}

/// Start a raw `tools/call` and return the streaming response once the agent waits.
async fn hang_a_call(s: &common::Server, agent: &str, session: Option<&str>) -> reqwest::Response {
    let mut req = s
        .http
        .post(s.api("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(common::raw_call_body(7, agent));
    if let Some(id) = session {
        req = req
            .header("mcp-session-id", id)
            .header("mcp-protocol-version", "2025-06-18");
    }
    let resp = req.send().await.unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    s.until_waiting(agent, true).await;
    resp
}

async fn departed_caller_consumes_nothing(s: &common::Server, session: Option<&str>) {
    let resp = hang_a_call(s, "leaver", session).await;
    drop(resp); // the client hangs up mid-wait
    s.until_waiting("leaver", false).await;
    let item = s.add("for whoever is still here").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let after = s
        .get_json(&format!("/api/instructions/{}", item["id"].as_str().unwrap()))
        .await;
    assert_eq!(after["item"]["status"], "pending", "the departed caller consumed it");
    let client = s.mcp().await;
    let r = common::get_user_request(&client, Some("stayer")).await;
    assert_eq!(r["instruction"]["id"], item["id"]);
    // And its fate is known: written out to the stayer, never left claimed.
    let path = format!("/api/instructions/{}", item["id"].as_str().unwrap());
    let deadline = Instant::now() + Duration::from_secs(10);
    while s.get_json(&path).await["item"]["delivery"] != "sent" {
        assert!(Instant::now() < deadline, "the delivery was never settled as sent");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_caller_that_disconnects_mid_wait_consumes_nothing_stateless() {
    let s = common::start(|c| c.settings.default_wait_seconds = 60).await;
    departed_caller_consumes_nothing(&s, None).await;
    s.stop().await;
}

/// The same, over and over: a caller hangs up mid-wait, the server notices,
/// a new instruction arrives — the departed caller must never take it.
async fn disconnect_trials(s: &common::Server, session: Option<&str>, trials: usize) {
    for n in 0..trials {
        let agent = format!("leaver-{n}");
        let resp = hang_a_call(s, &agent, session).await;
        drop(resp);
        s.until_waiting(&agent, false).await;
        let item = s.add(&format!("trial {n}")).await;
        let id = item["id"].as_str().unwrap().to_owned();
        tokio::time::sleep(Duration::from_millis(25)).await;
        let after = s.get_json(&format!("/api/instructions/{id}")).await;
        assert_eq!(
            after["item"]["status"], "pending",
            "trial {n}: the departed caller consumed it"
        );
        let gone = s
            .http
            .delete(s.api(&format!("/api/instructions/{id}")))
            .send()
            .await
            .unwrap();
        assert_eq!(gone.status(), 204);
    }
}

#[tokio::test]
async fn a_thousand_disconnects_mid_wait_consume_nothing_stateless() {
    let s = common::start(|c| c.settings.default_wait_seconds = 60).await;
    disconnect_trials(&s, None, 1000).await;
    s.stop().await;
}

#[tokio::test]
async fn disconnects_mid_wait_consume_nothing_with_sessions_250_times() {
    let s = common::start(|c| {
        c.settings.default_wait_seconds = 60;
        c.mcp_stateless = false;
    })
    .await;
    let session = open_session(&s).await;
    disconnect_trials(&s, Some(&session), 250).await;
    s.stop().await;
}

#[tokio::test]
async fn a_caller_that_disconnects_mid_wait_consumes_nothing_with_sessions() {
    let s = common::start(|c| {
        c.settings.default_wait_seconds = 60;
        c.mcp_stateless = false;
    })
    .await;
    let session = open_session(&s).await;
    departed_caller_consumes_nothing(&s, Some(&session)).await;
    // The SDK client works in session mode too.
    let client = s.mcp().await;
    s.add("session mode").await;
    assert_eq!(
        common::get_user_request(&client, Some("sess")).await["instruction"]["content"],
        "session mode"
    );
    s.stop().await;
}

#[tokio::test]
async fn a_newer_call_from_the_same_agent_supersedes_the_waiting_one() {
    let s = Arc::new(common::start(|c| c.settings.default_wait_seconds = 60).await);
    let first = {
        let s = s.clone();
        tokio::spawn(async move {
            let client = s.mcp().await;
            let r = common::get_user_request(&client, Some("twin")).await;
            (r, Instant::now())
        })
    };
    s.until_waiting("twin", true).await;
    let second = {
        let s = s.clone();
        tokio::spawn(async move {
            let client = s.mcp().await;
            common::get_user_request(&client, Some("twin")).await
        })
    };
    let (r1, _) = tokio::time::timeout(Duration::from_secs(5), first)
        .await
        .expect("the older call returns at once")
        .unwrap();
    assert_eq!(r1["result_type"], "default_response");
    assert_eq!(r1["instruction"], Value::Null);
    s.until_waiting("twin", true).await;
    let item = s.add("for the newest call").await;
    let r2 = tokio::time::timeout(Duration::from_secs(5), second)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r2["instruction"]["id"], item["id"]);
}

#[tokio::test]
async fn bad_arguments_are_tool_errors_and_unknown_tools_protocol_errors() {
    let s = common::start(|_| {}).await;
    let client = s.mcp().await;
    let long = "a".repeat(129);
    let r = common::call(&client, Some(&long)).await;
    assert_eq!(r.is_error, Some(true));
    let text = r.content[0].as_text().unwrap().text.clone();
    assert!(text.contains("128"), "{text}");
    let r = client
        .call_tool(
            CallToolRequestParams::new("get_user_request")
                .with_arguments(json!({"agent_id": 5}).as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    let err = client.call_tool(CallToolRequestParams::new("no_such_tool")).await;
    assert!(err.is_err(), "unknown tool must be a protocol error");
    s.stop().await;
}

#[derive(Clone, Default)]
struct ProgressCounter(Arc<AtomicUsize>);

impl ClientHandler for ProgressCounter {
    async fn on_progress(&self, _p: ProgressNotificationParam, _c: NotificationContext<RoleClient>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn long_waits_send_progress_when_asked() {
    let s = common::start(|c| c.settings.default_wait_seconds = 12).await;
    let counter = ProgressCounter::default();
    let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(format!("{}/mcp", s.url));
    let client = counter.clone().serve(transport).await.unwrap();
    let mut meta = RequestMetaObject::default();
    meta.set_progress_token(rmcp::model::ProgressToken(rmcp::model::NumberOrString::Number(1)));
    let mut params = CallToolRequestParams::new("get_user_request");
    params.meta = Some(meta);
    let result = client
        .send_request_with_option(
            ClientRequest::CallToolRequest(Request::new(params)),
            PeerRequestOptions::with_timeout(Duration::from_secs(30)),
        )
        .await
        .unwrap()
        .await_response()
        .await
        .unwrap();
    assert!(matches!(result, ServerResult::CallToolResult(_)), "{result:?}");
    assert!(counter.0.load(Ordering::SeqCst) >= 1, "no progress during a 12 s wait");
    s.stop().await;
}

/// rmcp's stateless transport sends no headers until the handler's first
/// message; a silent wait would then trip clients' 300 s read timeout (the
/// official Python SDK's). A waiting call must open its SSE stream at once.
#[tokio::test]
async fn a_waiting_call_opens_its_stream_at_once() {
    for stateless in [true, false] {
        let s = common::start(|c| {
            c.settings.default_wait_seconds = 4;
            c.mcp_stateless = stateless;
        })
        .await;
        let session = if stateless { None } else { Some(open_session(&s).await) };
        let mut req = s
            .http
            .post(s.api("/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(common::raw_call_body(3, "raw"));
        if let Some(id) = &session {
            req = req
                .header("mcp-session-id", id)
                .header("mcp-protocol-version", "2025-06-18");
        }
        let started = Instant::now();
        let resp = req.send().await.unwrap();
        let headers_after = started.elapsed();
        assert!(
            headers_after < Duration::from_secs(2),
            "stateless={stateless}: headers only after {headers_after:?}"
        );
        assert_eq!(resp.headers()["content-type"], "text/event-stream");
        let mut stream = resp.bytes_stream();
        let first = stream.next().await.unwrap().unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "stateless={stateless}: no bytes during the wait"
        );
        let mut body = String::from_utf8_lossy(&first).into_owned();
        while let Some(chunk) = stream.next().await {
            body.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        }
        if stateless {
            // Sessions open their stream with a priming event; stateless calls need this first message.
            assert!(body.contains("notifications/message"), "the opening message: {body}");
        }
        // The result's JSON, as the escaped text of its first block.
        assert!(body.contains(r#"\"result_type\":\"default_response\""#), "{body}");
        s.stop().await;
    }
}

async fn open_session(s: &common::Server) -> String {
    let init = s
        .http
        .post(s.api("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw-test","version":"0"}}}).to_string())
        .send()
        .await
        .unwrap();
    let session = init
        .headers()
        .get("mcp-session-id")
        .expect("a session id in session mode")
        .to_str()
        .unwrap()
        .to_owned();
    let _ = init.bytes().await;
    let ack = s
        .http
        .post(s.api("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .body(json!({"jsonrpc":"2.0","method":"notifications/initialized"}).to_string())
        .send()
        .await
        .unwrap();
    assert!(ack.status().is_success());
    session
}

/// Newer clients (mcp 2.x, the TS v2 client) open with `server/discover` on
/// protocol 2026-07-28 and fall back to `initialize` on any error: it must be
/// answered, or refused as a JSON-RPC error — never hang or break the stream.
#[tokio::test]
async fn server_discover_is_answered_for_newer_clients() {
    let s = common::start(|_| {}).await;
    let post = |body: Value, method: &'static str| {
        s.http
            .post(s.api("/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method)
            .body(body.to_string())
            .send()
    };
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "0"}
    });
    let r = post(
        json!({"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta": meta}}),
        "server/discover",
    )
    .await
    .unwrap();
    let text = r.text().await.unwrap();
    let answer: Value = serde_json::from_str(text.lines().find_map(|l| l.strip_prefix("data: ")).unwrap_or(&text))
        .unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(answer["id"], 1, "{answer}");
    let versions = answer["result"]["supportedVersions"].to_string();
    assert!(
        versions.contains("2026-07-28") && versions.contains("2025-06-18"),
        "{answer}"
    );
    assert!(answer["result"].to_string().contains("local-mcp"), "{answer}");

    // A malformed probe is refused as a JSON-RPC error: the client falls back to initialize.
    let bad = post(
        json!({"jsonrpc":"2.0","id":2,"method":"server/discover","params":{}}),
        "server/discover",
    )
    .await
    .unwrap();
    let text = bad.text().await.unwrap();
    assert!(text.contains(r#""error""#) && text.contains(r#""id":2"#), "{text}");
    s.stop().await;
}

/// A client that introduces itself by `name` and keeps the `total` of the
/// first progress notification: the wait the server announced.
#[derive(Clone)]
struct NamedClient {
    name: &'static str,
    announced: Arc<std::sync::Mutex<Option<f64>>>,
}

impl ClientHandler for NamedClient {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut info = rmcp::model::ClientConfig::default();
        info.client_info = rmcp::model::Implementation::new(self.name, "1.0");
        info
    }
    async fn on_progress(&self, p: ProgressNotificationParam, _c: NotificationContext<RoleClient>) {
        let mut first = self.announced.lock().unwrap();
        if first.is_none() {
            *first = p.total;
        }
    }
}

/// The wait a client named `name` is announced, in either MCP mode, with
/// the wait setting at an hour.
async fn announced_wait(name: &'static str, stateless: bool) -> f64 {
    let s = common::start(|c| {
        c.settings.default_wait_seconds = 3600;
        c.mcp_stateless = stateless;
    })
    .await;
    let handler = NamedClient {
        name,
        announced: Arc::default(),
    };
    // Real clients send a User-Agent; stateless calls are known by it.
    let http = reqwest::Client::builder().user_agent("node").build().unwrap();
    let transport = rmcp::transport::StreamableHttpClientTransport::with_client(
        http,
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(format!(
            "{}/mcp",
            s.url
        )),
    );
    let client = handler.clone().serve(transport).await.unwrap();
    let mut meta = RequestMetaObject::default();
    meta.set_progress_token(rmcp::model::ProgressToken(rmcp::model::NumberOrString::Number(7)));
    let mut params = CallToolRequestParams::new("get_user_request")
        .with_arguments(json!({"agent_id": name}).as_object().unwrap().clone());
    params.meta = Some(meta);
    let call = client
        .send_request_with_option(
            ClientRequest::CallToolRequest(Request::new(params)),
            PeerRequestOptions::with_timeout(Duration::from_secs(30)),
        )
        .await
        .unwrap();
    let started = Instant::now();
    let total = loop {
        if let Some(total) = *handler.announced.lock().unwrap() {
            break total;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "no announcement");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    drop(call);
    drop(client);
    s.stop().await;
    total
}

/// The wait a 2026-07-28 client is announced when it never sends
/// `initialize` and names itself only in the call's `_meta`, as Claude Code
/// 2.1.330 does (its requests, captured: `server/discover`, then each one
/// with `io.modelcontextprotocol/clientInfo` in `_meta`). The User-Agent is
/// a generic one, so only the call's `_meta` can tell the client.
async fn announced_wait_of_a_meta_named_client(name: &str) -> f64 {
    let s = common::start(|c| c.settings.default_wait_seconds = 3600).await;
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": name, "version": "2.1.330"},
        "io.modelcontextprotocol/clientCapabilities": {},
        "progressToken": 7
    });
    let post = |method: &str, params: Value| {
        let mut request = s
            .http
            .post(s.api("/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("user-agent", "node")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method);
        if let Some(tool) = params["name"].as_str() {
            request = request.header("mcp-name", tool);
        }
        request
            .body(json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string())
            .send()
    };
    // No `server/discover` first: a stateless server may have restarted since
    // the client's, so the call has to stand on its own.
    let call = post(
        "tools/call",
        json!({"name": "get_user_request", "arguments": {"agent_id": name}, "_meta": meta}),
    )
    .await
    .unwrap();
    assert!(call.status().is_success(), "{}", call.status());
    let mut body = call.bytes_stream();
    let mut text = String::new();
    let started = Instant::now();
    loop {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no progress announced: {text}"
        );
        let chunk = tokio::time::timeout(Duration::from_secs(10), body.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        text.push_str(&String::from_utf8_lossy(&chunk));
        let total = text
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .find(|m| m["method"] == "notifications/progress")
            .and_then(|m| m["params"]["total"].as_f64());
        if let Some(total) = total {
            drop(body);
            s.stop().await;
            return total;
        }
    }
}

#[tokio::test]
async fn a_client_named_only_in_each_requests_meta_waits_within_its_limit() {
    // Claude Code moves a call to the background at 120 s: 108 s.
    assert_eq!(announced_wait_of_a_meta_named_client("claude-code").await, 108.0);
    assert_eq!(announced_wait_of_a_meta_named_client("some-new-client").await, 3600.0);
}

#[tokio::test]
async fn waits_end_inside_the_callers_client_limit() {
    for stateless in [false, true] {
        // Codex cancels a call after 300 s unless configured (0.169.0): the wait is 270 s.
        assert_eq!(
            announced_wait("codex-mcp-client", stateless).await,
            270.0,
            "stateless={stateless}"
        );
        // Claude Desktop's hard cut is 4 minutes.
        assert_eq!(
            announced_wait("claude-ai", stateless).await,
            216.0,
            "stateless={stateless}"
        );
        // A client with no known limit waits the setting.
        assert_eq!(
            announced_wait("some-new-client", stateless).await,
            3600.0,
            "stateless={stateless}"
        );
    }
}
