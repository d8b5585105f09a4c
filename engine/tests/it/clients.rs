//! The loop in today's clients (`docs/CLIENTS.md`, `docs/ARCHITECTURE.md`,
//! "Agent identity"): each client's wait ends inside its limit, through both
//! protocol eras (an `initialize` of the 2025 revisions, or the 2026-07-28
//! `_meta` on every request with no `initialize` at all); a raw 2026-07-28
//! client does a whole loop and a departed one consumes nothing; a call that
//! replaces one whose answer was cut off gets that instruction again; an
//! agent that forgets its `agent_id` is still itself; one client session's
//! several ids are grouped; the status names each agent's client and wait.
//!
//! The raw client here sends what Claude Code 2.1.330 was seen to send
//! (captured against a logging server): `server/discover` first, then every
//! request with `_meta["io.modelcontextprotocol/protocolVersion"]`,
//! `_meta["io.modelcontextprotocol/clientInfo"]`, and the `MCP-Protocol-Version`
//! and `Mcp-Method` headers.

use crate::common;

use std::time::Duration;

use futures::StreamExt;
use serde_json::{json, Value};

const ERA_2026: &str = "2026-07-28";

/// A client of the 2026-07-28 revision: no `initialize`, its identity on every request.
struct Raw2026 {
    http: reqwest::Client,
    url: String,
    name: String,
    version: String,
    /// More `_meta` to send (Codex's `sessionId`, say).
    extra: Value,
    next_id: std::sync::atomic::AtomicU64,
}

impl Raw2026 {
    fn new(s: &common::Server, name: &str, version: &str) -> Raw2026 {
        Raw2026::at(s, "/mcp", name, version)
    }

    fn at(s: &common::Server, path: &str, name: &str, version: &str) -> Raw2026 {
        Raw2026 {
            http: reqwest::Client::new(),
            url: s.api(path),
            name: name.into(),
            version: version.into(),
            extra: json!({}),
            next_id: 1.into(),
        }
    }

    fn with_meta(mut self, extra: Value) -> Raw2026 {
        self.extra = extra;
        self
    }

    fn body(&self, method: &str, mut params: Value, progress: bool) -> Value {
        let mut meta = json!({
            "io.modelcontextprotocol/protocolVersion": ERA_2026,
            "io.modelcontextprotocol/clientInfo": { "name": self.name, "version": self.version },
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        for (k, v) in self.extra.as_object().unwrap() {
            meta[k] = v.clone();
        }
        let id = self.next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if progress {
            meta["progressToken"] = json!(format!("p{id}"));
        }
        params["_meta"] = meta;
        json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
    }

    async fn send(&self, method: &str, params: Value, progress: bool) -> reqwest::Response {
        let mut request = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", ERA_2026)
            .header("mcp-method", method)
            .header("user-agent", format!("{}/{}", self.name, self.version));
        // The revision names the tool in a header too (as Claude Code does).
        if let Some(name) = params["name"].as_str() {
            request = request.header("mcp-name", name);
        }
        let response = request.json(&self.body(method, params, progress)).send().await.unwrap();
        if response.status() != 200 {
            let status = response.status();
            panic!("{method}: {status} {}", response.text().await.unwrap_or_default());
        }
        response
    }

    /// A request's result (the last JSON-RPC message with a `result` or `error`).
    async fn request(&self, method: &str, params: Value) -> Value {
        let text = tokio::time::timeout(Duration::from_secs(60), self.send(method, params, false).await.text())
            .await
            .expect("an answer within 60 s")
            .unwrap();
        messages(&text)
            .into_iter()
            .rev()
            .find(|m| m.get("result").is_some() || m.get("error").is_some())
            .unwrap_or_else(|| panic!("no result in {text}"))
    }

    /// `get_user_request`'s JSON result.
    async fn get_user_request(&self, arguments: Value) -> Value {
        let answer = self
            .request(
                "tools/call",
                json!({ "name": "get_user_request", "arguments": arguments }),
            )
            .await;
        let text = answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{answer}"));
        serde_json::from_str(text).unwrap()
    }

    /// Start a waiting call with a progress token; the wait's length from
    /// its first progress message (the call is then left: it consumes nothing).
    async fn wait_length(&self, arguments: Value) -> u64 {
        let response = self
            .send(
                "tools/call",
                json!({ "name": "get_user_request", "arguments": arguments }),
                true,
            )
            .await;
        let mut stream = response.bytes_stream();
        let mut text = String::new();
        let total = tokio::time::timeout(Duration::from_secs(20), async {
            while let Some(chunk) = stream.next().await {
                text.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
                if let Some(total) = messages(&text).iter().find_map(|m| {
                    m["params"]["total"]
                        .as_f64()
                        .filter(|_| m["method"] == "notifications/progress")
                }) {
                    return total as u64;
                }
            }
            panic!("the stream ended without progress: {text}")
        })
        .await
        .expect("the wait's first progress within 20 s");
        total
    }
}

/// The JSON-RPC messages in an answer (SSE `data:` lines, or one JSON body).
fn messages(text: &str) -> Vec<Value> {
    if let Ok(one) = serde_json::from_str::<Value>(text) {
        return vec![one];
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect()
}

async fn agents(s: &common::Server) -> Vec<Value> {
    s.get_json("/api/status").await["agents"].as_array().unwrap().clone()
}

fn agent<'a>(all: &'a [Value], id: &str) -> Option<&'a Value> {
    all.iter().find(|a| a["agent_id"] == id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_clients_wait_ends_inside_its_limit_in_both_protocol_eras() {
    for stateless in [true, false] {
        let s = common::start(|c| {
            c.settings.default_wait_seconds = 3600;
            c.mcp_stateless = stateless;
        })
        .await;
        for limit in engine::model::limits() {
            let expected = engine::model::safe_wait(limit.seconds);
            assert!(expected < limit.seconds);
            // 2026-07-28: the client is named in the call's own _meta.
            let raw = Raw2026::new(&s, limit.matches, "1.0");
            let total = raw
                .wait_length(json!({ "agent_id": format!("{}-26", limit.matches) }))
                .await;
            assert_eq!(
                total,
                u64::from(expected),
                "{} over 2026-07-28 (stateless {stateless})",
                limit.client
            );
            // The 2025 revisions: named at initialize (its session, or its User-Agent).
            let total = wait_after_initialize(&s, limit.matches, stateless).await;
            assert_eq!(
                total,
                u64::from(expected),
                "{} after initialize (stateless {stateless})",
                limit.client
            );
        }
        // A client not in the table waits the setting.
        let total = Raw2026::new(&s, "some-new-client", "0.1")
            .wait_length(json!({ "agent_id": "new" }))
            .await;
        assert_eq!(total, 3600);
        s.stop().await;
    }
}

/// Open with `initialize` as `name`, then start a waiting call; the wait's length.
async fn wait_after_initialize(s: &common::Server, name: &str, stateless: bool) -> u64 {
    let http = reqwest::Client::new();
    let ua = format!("{name}/1.0 (test)");
    let init = http
        .post(s.api("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("user-agent", &ua)
        .json(&json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":name,"version":"1.0"}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(init.status(), 200);
    let session = init
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    assert_eq!(session.is_none(), stateless);
    let _ = init.text().await;
    let mut call = http
        .post(s.api("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .header("user-agent", &ua);
    if let Some(id) = &session {
        let initialized = http
            .post(s.api("/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .header("mcp-session-id", id)
            .json(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
            .send()
            .await
            .unwrap();
        assert!(initialized.status().is_success());
        call = call.header("mcp-session-id", id);
    }
    let response = call
        .json(&json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{
            "name":"get_user_request","arguments":{"agent_id": format!("{name}-25")},
            "_meta":{"progressToken":"t"}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut stream = response.bytes_stream();
    let mut text = String::new();
    tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(chunk) = stream.next().await {
            text.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
            if let Some(total) = messages(&text).iter().find_map(|m| m["params"]["total"].as_f64()) {
                return total as u64;
            }
        }
        panic!("no progress: {text}")
    })
    .await
    .expect("the wait's first progress within 20 s")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_client_without_initialize_does_a_whole_loop() {
    for stateless in [true, false] {
        let s = common::start(|c| {
            c.settings.default_wait_seconds = 20;
            c.mcp_stateless = stateless;
        })
        .await;
        let raw = Raw2026::new(&s, "claude-code", "2.1.330");
        let discovered = raw.request("server/discover", json!({})).await;
        assert!(
            discovered["result"]["supportedVersions"]
                .as_array()
                .is_some_and(|v| v.iter().any(|x| x == ERA_2026)),
            "{discovered}"
        );
        let tools = raw.request("tools/list", json!({})).await;
        assert_eq!(tools["result"]["tools"][0]["name"], "get_user_request", "{tools}");
        // A wait woken by an add.
        let waiting = tokio::spawn(async move {
            let first = raw.get_user_request(json!({ "agent_id": "raw-2026" })).await;
            (raw, first)
        });
        s.until_waiting("raw-2026", true).await;
        s.add("from the person").await;
        let (raw, first) = waiting.await.unwrap();
        assert_eq!(first["result_type"], "instruction", "{first}");
        assert_eq!(first["instruction"]["content"], "from the person");
        let id = first["instruction"]["id"].as_str().unwrap().to_owned();
        // Its report goes with the next call, which also confirms the delivery.
        s.add("the next one").await;
        let second = raw
            .get_user_request(json!({ "agent_id": "raw-2026", "report": "Done: did it." }))
            .await;
        assert_eq!(second["instruction"]["content"], "the next one");
        let item = s.get_json(&format!("/api/instructions/{id}")).await;
        assert_eq!(item["item"]["delivery"], "confirmed");
        let reports = s.get_json("/api/reports?agent_id=raw-2026").await;
        assert_eq!(reports["items"][0]["content"], "Done: did it.", "{reports}");
        assert_eq!(reports["items"][0]["instruction_id"], id.as_str());
        s.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_client_that_leaves_mid_wait_consumes_nothing() {
    for stateless in [true, false] {
        let s = common::start(|c| {
            c.settings.default_wait_seconds = 30;
            c.mcp_stateless = stateless;
        })
        .await;
        for round in 0..5 {
            let raw = Raw2026::new(&s, "claude-code", "2.1.330");
            let agent = format!("leaver-{round}");
            let response = raw
                .send(
                    "tools/call",
                    json!({ "name": "get_user_request", "arguments": { "agent_id": agent } }),
                    true,
                )
                .await;
            s.until_waiting(&agent, true).await;
            drop(response);
            s.until_waiting(&agent, false).await;
            // For that agent only: had its call claimed, it would be consumed.
            s.add_to(&format!("after {agent} left"), "default", Some(&agent)).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let pending = s.get_json("/api/instructions?status=pending").await;
        assert_eq!(
            pending["items"].as_array().unwrap().len(),
            5,
            "stateless {stateless}: {pending}"
        );
        s.stop().await;
    }
}

/// An instruction whose answer (~7 MiB of images) cannot fit a socket buffer.
async fn add_big(s: &common::Server) -> String {
    let mut form = reqwest::multipart::Form::new().text("content", "a big one");
    for n in 0..6u32 {
        let mut x = 0x2545_F491u32 ^ n;
        let rgba: Vec<u8> = (0..480 * 480 * 4)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        let png = engine::png_from_rgba(480, 480, rgba).unwrap();
        form = form.part(
            "files",
            reqwest::multipart::Part::bytes(png).file_name(format!("n{n}.png")),
        );
    }
    let (status, created) = s.upload(form).await;
    assert_eq!(status, 201);
    created["item"]["id"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_call_after_an_answer_was_cut_off_gets_that_instruction_not_a_second_one() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let s = common::start(|c| c.settings.default_wait_seconds = 0).await;
    let big = add_big(&s).await;
    s.add("the second one").await;
    // The client takes it, then its stream breaks (it hangs up after the headers).
    let raw = Raw2026::new(&s, "claude-code", "2.1.330");
    let body = raw
        .body(
            "tools/call",
            json!({ "name": "get_user_request", "arguments": { "agent_id": "broken" } }),
            false,
        )
        .to_string();
    let addr: std::net::SocketAddr = s.url.trim_start_matches("http://").parse().unwrap();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket.connect(addr).await.unwrap();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {ERA_2026}\r\n\
         Mcp-Method: tools/call\r\nMcp-Name: get_user_request\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut first = [0u8; 512];
    let n = stream.read(&mut first).await.unwrap();
    assert!(String::from_utf8_lossy(&first[..n]).starts_with("HTTP/1.1 200"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(stream);
    // At once, the client sends the call again: it must get the one it lost.
    let again = raw.get_user_request(json!({ "agent_id": "broken" })).await;
    assert_eq!(again["instruction"]["id"], big.as_str(), "{again}");
    // An older client keeps the at-most-once rule (the person sends it again).
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_forgets_its_id_is_still_itself() {
    let s = common::start(|c| c.settings.default_wait_seconds = 0).await;

    // Claude Code sends no session id over HTTP: the one agent of its client here.
    let claude = Raw2026::new(&s, "claude-code", "2.1.330");
    claude.get_user_request(json!({ "agent_id": "claude-myrepo" })).await;
    claude.get_user_request(json!({})).await;
    let all = agents(&s).await;
    assert!(agent(&all, "claude-myrepo").is_some(), "{all:?}");
    assert!(
        agent(&all, "default").is_none() && agent(&all, "claude-code").is_none(),
        "a forgotten id made a stranger: {all:?}"
    );
    assert_eq!(all.len(), 1, "{all:?}");

    // Codex names its thread in _meta.sessionId: that thread's agent, even with two threads here.
    let thread = |id: &str| Raw2026::new(&s, "codex-mcp-client", "0.169.0").with_meta(json!({ "sessionId": id }));
    thread("thread-a")
        .get_user_request(json!({ "agent_id": "codex-a" }))
        .await;
    thread("thread-b")
        .get_user_request(json!({ "agent_id": "codex-b" }))
        .await;
    thread("thread-a").get_user_request(json!({})).await;
    thread("thread-c").get_user_request(json!({})).await;
    let all = agents(&s).await;
    let ids: Vec<&str> = all.iter().map(|a| a["agent_id"].as_str().unwrap()).collect();
    assert_eq!(ids.iter().filter(|i| i.starts_with("codex")).count(), 3, "{ids:?}");
    assert!(ids.contains(&"codex-a") && ids.contains(&"codex-b"), "{ids:?}");
    let new = ids
        .iter()
        .find(|i| i.starts_with("codex-mcp-client-"))
        .expect("a new thread is a new agent, named by its client");
    assert_ne!(*new, "codex-a");

    // With an agent id after one without, in a session of the 2025 revision: the same agent.
    let session = s.mcp().await;
    common::get_user_request(&session, Some("sessioned")).await;
    common::get_user_request(&session, None).await;
    session.cancel().await.unwrap();
    let all = agents(&s).await;
    assert!(agent(&all, "sessioned").is_some());
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_client_sessions_ids_are_grouped_and_each_agent_shows_its_client_and_wait() {
    let s = common::start(|c| c.settings.default_wait_seconds = 0).await;
    // One VS Code conversation, a main agent and a subagent.
    let conversation =
        |id: &str| Raw2026::new(&s, "Visual Studio Code", "1.107.0").with_meta(json!({ "vscode.conversationId": id }));
    conversation("conv-1")
        .get_user_request(json!({ "agent_id": "main" }))
        .await;
    conversation("conv-1")
        .get_user_request(json!({ "agent_id": "helper" }))
        .await;
    conversation("conv-2")
        .get_user_request(json!({ "agent_id": "elsewhere" }))
        .await;
    Raw2026::new(&s, "claude-code", "2.1.330")
        .get_user_request(json!({ "agent_id": "claude" }))
        .await;
    let all = agents(&s).await;
    let (main, helper, elsewhere) = (
        agent(&all, "main").unwrap(),
        agent(&all, "helper").unwrap(),
        agent(&all, "elsewhere").unwrap(),
    );
    assert!(main["session"].is_string(), "{main}");
    assert_eq!(main["session"], helper["session"], "one conversation, one group");
    assert_ne!(main["session"], elsewhere["session"]);
    assert_eq!(
        main["client"],
        json!({ "name": "VS Code", "version": "1.107.0", "wait_seconds": 0 })
    );
    // The wait each gets: the setting, or inside its client's limit.
    s.set_config(json!({ "default_wait_seconds": 3600 })).await;
    let all = agents(&s).await;
    assert_eq!(
        agent(&all, "claude").unwrap()["client"],
        json!({ "name": "Claude Code", "version": "2.1.330", "wait_seconds": 108 })
    );
    assert_eq!(agent(&all, "main").unwrap()["client"]["wait_seconds"], 270);
    s.stop().await;
}

/// Every client whose file `connect` writes a tool-call timeout into waits inside it.
#[test]
fn waits_stay_inside_the_timeouts_connect_writes() {
    let written = engine::snippets::CLIENT_TIMEOUT_SECONDS;
    let longest = u64::from(engine::model::MAX_WAIT_SECONDS);
    assert!(written > longest, "{written} s written, waits up to {longest} s");
    for limit in engine::model::limits() {
        assert!(
            u64::from(engine::model::safe_wait(limit.seconds)) < written,
            "{}",
            limit.client
        );
    }
}

/// SEP-2575 (the 2026-07-28 revision's per-request `_meta`): "no
/// notifications/message for requests that didn't set _meta.../logLevel".
/// The conformance suite's check needs a fixture tool local-mcp does not
/// have, so this is that check against `get_user_request`: a waiting call
/// with neither a progress token nor a log level gets no log message; one
/// that asked for debug logs gets its announcement as one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_call_gets_log_messages_only_when_it_asked_for_them() {
    let s = common::start(|c| c.settings.default_wait_seconds = 1).await;
    for (extra, wants_log) in [
        (json!({}), false),
        (json!({ "io.modelcontextprotocol/logLevel": "debug" }), true),
    ] {
        let raw = Raw2026::new(&s, "some-2026-client", "1.0").with_meta(extra.clone());
        let text = tokio::time::timeout(
            Duration::from_secs(20),
            raw.send(
                "tools/call",
                json!({ "name": "get_user_request", "arguments": { "agent_id": "quiet" } }),
                false,
            )
            .await
            .text(),
        )
        .await
        .expect("the wait ends within 20 s")
        .unwrap();
        let all = messages(&text);
        assert!(all.iter().any(|m| m["result"].is_object()), "{text}");
        let logged = all.iter().any(|m| m["method"] == "notifications/message");
        assert_eq!(logged, wants_log, "with _meta {extra}: {text}");
    }
    s.stop().await;
}
