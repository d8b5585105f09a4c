//! Shared harness for the integration tests: the real engine on port 0 with a
//! temporary database, plus small HTTP, SSE and MCP client helpers.

use std::time::Duration;

use engine::{Config, Engine};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

pub struct Server {
    pub engine: Engine,
    pub url: String,
    pub http: reqwest::Client,
    pub shutdown: CancellationToken,
    pub db: std::path::PathBuf,
    /// Keeps the temporary folder alive as long as the server.
    pub dir: std::sync::Arc<tempfile::TempDir>,
}

pub async fn start(configure: impl FnOnce(&mut Config)) -> Server {
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    start_in(dir, configure).await
}

/// Start on an existing folder (same database file): for restart tests.
pub async fn start_in(dir: std::sync::Arc<tempfile::TempDir>, configure: impl FnOnce(&mut Config)) -> Server {
    let db = dir.path().join("queue.sqlite3");
    let mut config = Config::for_db(&db);
    configure(&mut config);
    let shutdown = CancellationToken::new();
    let engine = engine::start(config, shutdown.clone()).await.expect("engine starts");
    let url = engine.url.clone();
    // A program the person runs, like the CLI: it says no web page sent it.
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("sec-fetch-site", reqwest::header::HeaderValue::from_static("none"));
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .default_headers(headers)
        .build()
        .unwrap();
    Server {
        engine,
        url,
        http,
        shutdown,
        db,
        dir,
    }
}

impl Server {
    pub async fn stop(self) -> std::sync::Arc<tempfile::TempDir> {
        self.shutdown.cancel();
        tokio::time::timeout(Duration::from_secs(10), self.engine.stopped())
            .await
            .expect("server stops promptly");
        self.dir
    }

    /// The status of a GET with an optional bearer token and/or cookie.
    pub async fn get_status(&self, path: &str, bearer: Option<&str>, cookie: Option<&str>) -> u16 {
        let mut request = self.http.get(self.api(path));
        if let Some(token) = bearer {
            request = request.bearer_auth(token);
        }
        if let Some(cookie) = cookie {
            request = request.header("cookie", cookie);
        }
        request.send().await.unwrap().status().as_u16()
    }

    pub fn api(&self, path: &str) -> String {
        format!("{}{}", self.url, path)
    }

    /// POST an instruction; panics unless it is 201.
    pub async fn add(&self, content: &str) -> Value {
        let r = self
            .http
            .post(self.api("/api/instructions"))
            .json(&json!({ "content": content }))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201, "adding {content:?}");
        r.json::<Value>().await.unwrap()["item"].clone()
    }

    pub async fn get_json(&self, path: &str) -> Value {
        get_json_with(&self.http, &self.api(path)).await
    }

    pub async fn set_config(&self, patch: Value) -> Value {
        let r = self
            .http
            .patch(self.api("/api/config"))
            .json(&patch)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "PATCH /api/config {patch}");
        r.json().await.unwrap()
    }

    /// Wait (bounded) until the status report says whether `agent` is waiting.
    pub async fn until_waiting(&self, agent: &str, waiting: bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let s = self.get_json("/api/status").await;
            let now = s["agents"]
                .as_array()
                .unwrap()
                .iter()
                .any(|a| a["agent_id"] == agent && a["waiting"] == true);
            if now == waiting {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "agent {agent} never became waiting={waiting}: {s}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// A connected official-SDK MCP client.
    pub async fn mcp(&self) -> RunningService<RoleClient, ()> {
        self.mcp_at("/mcp").await
    }

    /// An official-SDK MCP client configured with the endpoint at `path`
    /// (`/mcp/q/<queue>` for a queue's agents). It sends a `User-Agent`, as
    /// every real client does: that is how a stateless call's client is known.
    pub async fn mcp_at(&self, path: &str) -> RunningService<RoleClient, ()> {
        let http = reqwest::Client::builder()
            .user_agent("local-mcp-tests")
            .build()
            .unwrap();
        let config = StreamableHttpClientTransportConfig::with_uri(format!("{}{path}", self.url));
        let transport = StreamableHttpClientTransport::with_client(http, config);
        ().serve(transport).await.expect("MCP client connects")
    }

    /// POST a multipart instruction (text and files); the status and the JSON answer.
    pub async fn upload(&self, form: reqwest::multipart::Form) -> (u16, Value) {
        let r = self
            .http
            .post(self.api("/api/instructions"))
            .multipart(form)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
    }

    /// POST `body` to `path`; the status and the JSON answer (null if none).
    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        post_with(&self.http, &self.api(path), body).await
    }

    /// PATCH `body` to `path`; the status and the JSON answer.
    pub async fn patch(&self, path: &str, body: Value) -> (u16, Value) {
        let r = self.http.patch(self.api(path)).json(&body).send().await.unwrap();
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    /// Queue an instruction in `queue`, for `target` (or anyone); panics unless 201.
    pub async fn add_to(&self, content: &str, queue: &str, target: Option<&str>) -> Value {
        let (status, body) = self
            .post(
                "/api/instructions",
                json!({ "content": content, "queue": queue, "target": target }),
            )
            .await;
        assert_eq!(status, 201, "adding {content:?}: {body}");
        body["item"].clone()
    }

    /// Wait (bounded) until `agent` of `queue` is waiting, or not.
    pub async fn until_waiting_in(&self, queue: &str, agent: &str, waiting: bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let s = self.get_json("/api/status").await;
            let now = s["agents"]
                .as_array()
                .unwrap()
                .iter()
                .any(|a| a["agent_id"] == agent && a["queue"] == queue && a["waiting"] == true);
            if now == waiting {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "agent {agent} of {queue} never became waiting={waiting}: {s}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// GET `url` and its JSON; panics unless it succeeded. Also for servers known
/// only by their URL (the binary as a child process).
pub async fn get_json_with(http: &reqwest::Client, url: &str) -> Value {
    let r = http.get(url).send().await.unwrap();
    assert!(r.status().is_success(), "GET {url}: {}", r.status());
    r.json().await.unwrap()
}

/// POST `body` to `url`; the status and the JSON answer (null if none).
pub async fn post_with(http: &reqwest::Client, url: &str, body: Value) -> (u16, Value) {
    let r = http.post(url).json(&body).send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// Call `get_user_request` with these arguments and return its result's JSON.
pub async fn get_user_request_with(client: &RunningService<RoleClient, ()>, arguments: Value) -> Value {
    let params = CallToolRequestParams::new("get_user_request").with_arguments(arguments.as_object().unwrap().clone());
    let result = client.call_tool(params).await.expect("tools/call");
    assert_ne!(result.is_error, Some(true), "tool error: {result:?}");
    result_json(&result)
}

/// The JSON of a `get_user_request` result: its first block, text. There is
/// no `structuredContent` (clients drop image blocks beside it).
pub fn result_json(result: &CallToolResult) -> Value {
    assert!(result.structured_content.is_none(), "no structured content: {result:?}");
    let text = result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .expect("a text block first");
    serde_json::from_str(&text).expect("the text block is JSON")
}

/// Call `get_user_request` and return its result's JSON.
pub async fn get_user_request(client: &RunningService<RoleClient, ()>, agent: Option<&str>) -> Value {
    let result = call(client, agent).await;
    assert_ne!(result.is_error, Some(true), "tool error: {result:?}");
    result_json(&result)
}

pub async fn call(client: &RunningService<RoleClient, ()>, agent: Option<&str>) -> CallToolResult {
    let mut params = CallToolRequestParams::new("get_user_request");
    if let Some(a) = agent {
        params = params.with_arguments(json!({ "agent_id": a }).as_object().unwrap().clone());
    }
    client.call_tool(params).await.expect("tools/call")
}

/// A raw MCP `tools/call` POST (stateless, no initialize), as a JSON string body.
pub fn raw_call_body(id: u64, agent: &str) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"get_user_request","arguments":{"agent_id":agent}}}).to_string()
}

/// One server-sent event as the page's EventSource would see it.
#[derive(Debug, Clone)]
pub struct Sse {
    pub event: String,
    pub id: Option<String>,
    pub data: Value,
}

/// A reader over a `text/event-stream` response.
pub struct SseReader {
    stream: std::pin::Pin<Box<dyn futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>,
    buf: String,
}

impl SseReader {
    pub async fn open(s: &Server, last_event_id: Option<&str>) -> SseReader {
        let mut req = s.http.get(s.api("/api/events"));
        if let Some(id) = last_event_id {
            req = req.header("last-event-id", id);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["content-type"], "text/event-stream");
        SseReader::from_response(resp)
    }

    /// Events as they arrive on any SSE response (an MCP call's, too).
    pub fn from_response(resp: reqwest::Response) -> SseReader {
        SseReader {
            stream: Box::pin(resp.bytes_stream()),
            buf: String::new(),
        }
    }

    /// The next event (skipping keep-alive comments); `None` when the stream ends.
    pub async fn next(&mut self) -> Option<Sse> {
        use futures::StreamExt;
        loop {
            if let Some(end) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..end + 2).collect();
                let (mut event, mut id, mut data) = (String::from("message"), None, String::new());
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        event = v.trim().to_owned();
                    } else if let Some(v) = line.strip_prefix("id:") {
                        id = Some(v.trim().to_owned());
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.trim_start());
                    }
                }
                if data.is_empty() {
                    continue; // a comment or retry-only block
                }
                return Some(Sse {
                    event,
                    id,
                    data: serde_json::from_str(&data).expect("event data is JSON"),
                });
            }
            match tokio::time::timeout(Duration::from_secs(10), self.stream.next())
                .await
                .expect("an event within 10 s")
            {
                Some(chunk) => self.buf.push_str(&String::from_utf8_lossy(&chunk.ok()?)),
                None => return None,
            }
        }
    }

    /// The next event of the given type, skipping others (status snapshots interleave).
    pub async fn next_of(&mut self, event: &str) -> Sse {
        loop {
            let e = self
                .next()
                .await
                .unwrap_or_else(|| panic!("stream ended before {event}"));
            if e.event == event {
                return e;
            }
        }
    }
}

/// The real `local-mcp-server` binary as a child process (for crash and log
/// tests): its URL, and its stderr lines as they come.
pub struct Binary {
    pub child: tokio::process::Child,
    pub url: String,
    pub log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

/// Start the binary on `db` with a free port and extra environment; waits for its ready line.
pub async fn spawn_binary(db: &std::path::Path, env: &[(&str, &str)]) -> Binary {
    spawn_binary_via(&[], db, env).await
}

/// `spawn_binary` through a wrapper command (e.g. `unshare … sh -c SCRIPT sh`),
/// which is given the binary's path as its last argument.
pub async fn spawn_binary_via(wrapper: &[&str], db: &std::path::Path, env: &[(&str, &str)]) -> Binary {
    use tokio::io::AsyncBufReadExt;
    // LOCAL_MCP_BENCH_SERVER: another build of the server (the bench measures
    // an earlier commit's binary beside this one's, same hour).
    let binary =
        std::env::var("LOCAL_MCP_BENCH_SERVER").unwrap_or_else(|_| env!("CARGO_BIN_EXE_local-mcp-server").to_owned());
    let mut command = match wrapper {
        [] => tokio::process::Command::new(binary),
        [program, args @ ..] => {
            let mut c = tokio::process::Command::new(program);
            c.args(args).arg(binary);
            c
        }
    };
    command
        .env("DB_PATH", db)
        .env("HTTP_PORT", "0")
        .env("LOG_LEVEL", "warn")
        .env("LOCAL_MCP_CONNECTION_FILE", db.with_extension("connection.json"))
        .env("LOCAL_MCP_TOKEN_FILE", db.with_extension("token"))
        .env("LOCAL_MCP_LOG_DIR", "off")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.spawn().expect("the server binary starts");
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let url = loop {
        let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .expect("ready within 20 s")
            .unwrap()
            .expect("the server printed its ready line");
        log.lock().unwrap().push(line.clone());
        if let Some(rest) = line.strip_prefix("local-mcp-server ready: ") {
            break rest.split_whitespace().next().unwrap().to_owned();
        }
    };
    // Keep draining stderr so the server never blocks on a full pipe.
    let sink = log.clone();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            sink.lock().unwrap().push(line);
        }
    });
    Binary { child, url, log }
}

/// Whether `done` becomes true within `limit` (checked every 50 ms).
pub async fn eventually(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let until = std::time::Instant::now() + limit;
    while std::time::Instant::now() < until {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    done()
}

/// Run `local-mcp-server ARGS --url <s>` (no token from the environment):
/// whether it succeeded, its stdout and its stderr.
pub async fn cli(s: &Server, args: &[&str]) -> (bool, String, String) {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_local-mcp-server"))
        .args(args)
        .args(["--url", &s.url])
        .env_remove("LOCAL_MCP_TOKEN")
        .output()
        .await
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
