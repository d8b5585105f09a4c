//! `npm run soak` (`cargo bench -p local-mcp-engine --bench soak`): a long run
//! of steady, mixed traffic against the real release `local-mcp-server`, from
//! this second process over loopback — writers adding, editing, reordering and
//! deleting; agents taking instructions over MCP; callers hanging up mid-wait;
//! live-event listeners that reconnect; status and list polling.
//!
//! Every 30 s it samples the server's RSS and open file descriptors. It
//! prints a table and fails (exit 1) on any error, on RSS growing more than
//! 25 % past the first minute's, or on more than 16 extra descriptors.
//! `LOCAL_MCP_SOAK_SECONDS` sets the length (600 by default). Not in CI.

#[path = "../tests/it/common/mod.rs"]
// The soak uses a few of the integration tests' helpers.
#[allow(dead_code)]
mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{json, Value};

#[derive(Default)]
struct Counts {
    requests: AtomicU64,
    errors: AtomicU64,
    added: AtomicU64,
    delivered: AtomicU64,
    events: AtomicU64,
    hangups: AtomicU64,
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

fn error(counts: &Counts, what: &str) {
    counts.errors.fetch_add(1, Ordering::Relaxed);
    eprintln!("soak: error: {what}");
}

fn call_body(id: u64, agent: &str) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
           "params":{"name":"get_user_request","arguments":{"agent_id":agent}}})
    .to_string()
}

async fn agent(http: reqwest::Client, url: String, name: String, counts: Arc<Counts>, until: Instant) {
    let mut id = 0;
    while Instant::now() < until {
        id += 1;
        counts.requests.fetch_add(1, Ordering::Relaxed);
        let sent = http
            .post(format!("{url}/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(call_body(id, &name))
            .send()
            .await;
        let body = match sent {
            Ok(r) if r.status() == 200 => r.text().await.unwrap_or_default(),
            Ok(r) => return error(&counts, &format!("{name}: tools/call → {}", r.status())),
            Err(e) => return error(&counts, &format!("{name}: {e}")),
        };
        let result = body
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .find(|m| m["id"] == id);
        match result {
            Some(m) if result_type(&m).as_deref() == Some("instruction") => {
                counts.delivered.fetch_add(1, Ordering::Relaxed);
            }
            Some(m) if result_type(&m).is_some() => {}
            _ => error(&counts, &format!("{name}: no result in {body}")),
        }
    }
}

/// A `get_user_request` answer's `result_type`, from its JSON text block.
fn result_type(message: &Value) -> Option<String> {
    let text = message["result"]["content"][0]["text"].as_str()?;
    let result: Value = serde_json::from_str(text).ok()?;
    result["result_type"].as_str().map(str::to_owned)
}

/// Adds at a steady rate; now and then edits, moves or deletes the newest.
async fn writer(http: reqwest::Client, url: String, counts: Arc<Counts>, until: Instant) {
    let mut n = 0u64;
    let mut tick = tokio::time::interval(Duration::from_millis(25));
    while Instant::now() < until {
        tick.tick().await;
        n += 1;
        counts.requests.fetch_add(1, Ordering::Relaxed);
        let r = http
            .post(format!("{url}/api/instructions"))
            .json(&json!({ "content": format!("soak instruction {n}") }))
            .send()
            .await;
        let item = match r {
            Ok(r) if r.status() == 201 => r.json::<Value>().await.unwrap_or_default()["item"].clone(),
            Ok(r) => {
                error(&counts, &format!("add → {}", r.status()));
                continue;
            }
            Err(e) => {
                error(&counts, &format!("add: {e}"));
                continue;
            }
        };
        counts.added.fetch_add(1, Ordering::Relaxed);
        let id = item["id"].as_str().unwrap_or_default().to_owned();
        let follow_up = match n % 10 {
            0 => Some(
                http.patch(format!("{url}/api/instructions/{id}"))
                    .json(&json!({"content": "edited"})),
            ),
            3 => Some(
                http.post(format!("{url}/api/instructions/{id}/move"))
                    .json(&json!({"to": "front"})),
            ),
            6 => Some(http.delete(format!("{url}/api/instructions/{id}"))),
            _ => None,
        };
        if let Some(req) = follow_up {
            counts.requests.fetch_add(1, Ordering::Relaxed);
            match req.send().await {
                // 404/409: an agent took it first — the race is expected, not an error.
                Ok(r) if r.status().is_success() || r.status() == 404 || r.status() == 409 => {}
                Ok(r) => error(&counts, &format!("follow-up → {}", r.status())),
                Err(e) => error(&counts, &format!("follow-up: {e}")),
            }
        }
    }
}

async fn poller(http: reqwest::Client, url: String, counts: Arc<Counts>, until: Instant) {
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let mut n = 0u64;
    while Instant::now() < until {
        tick.tick().await;
        n += 1;
        let path = if n.is_multiple_of(2) {
            "/api/status"
        } else {
            "/api/instructions?status=all&limit=20"
        };
        counts.requests.fetch_add(1, Ordering::Relaxed);
        match http.get(format!("{url}{path}")).send().await {
            Ok(r) if r.status() == 200 => {
                let _ = r.bytes().await;
            }
            Ok(r) => error(&counts, &format!("GET {path} → {}", r.status())),
            Err(e) => error(&counts, &format!("GET {path}: {e}")),
        }
    }
}

/// A live-event listener that reconnects every 30 s.
async fn listener(http: reqwest::Client, url: String, counts: Arc<Counts>, until: Instant) {
    while Instant::now() < until {
        counts.requests.fetch_add(1, Ordering::Relaxed);
        let r = match http.get(format!("{url}/api/events")).send().await {
            Ok(r) if r.status() == 200 => r,
            Ok(r) => return error(&counts, &format!("events → {}", r.status())),
            Err(e) => return error(&counts, &format!("events: {e}")),
        };
        let mut stream = r.bytes_stream();
        let reconnect =
            tokio::time::sleep(Duration::from_secs(30).min(until.saturating_duration_since(Instant::now())));
        tokio::pin!(reconnect);
        loop {
            tokio::select! {
                chunk = stream.next() => match chunk {
                    Some(Ok(bytes)) => {
                        let n = bytes.windows(6).filter(|w| w == b"event:").count();
                        counts.events.fetch_add(n as u64, Ordering::Relaxed);
                    }
                    Some(Err(e)) => { error(&counts, &format!("event stream: {e}")); break; }
                    None => { error(&counts, "event stream ended"); break; }
                },
                _ = &mut reconnect => break,
            }
        }
    }
}

/// Callers that hang up mid-wait, every 2 s.
async fn hang_ups(http: reqwest::Client, url: String, counts: Arc<Counts>, until: Instant) {
    let mut n = 0;
    while Instant::now() < until {
        n += 1;
        counts.requests.fetch_add(1, Ordering::Relaxed);
        let call = http
            .post(format!("{url}/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(call_body(n, &format!("hang-up-{}", n % 4)))
            .send();
        // Leave after 50 ms, whatever state the call is in.
        let _ = tokio::time::timeout(Duration::from_millis(50), call).await;
        counts.hangups.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

#[tokio::main]
async fn main() {
    let seconds: u64 = std::env::var("LOCAL_MCP_SOAK_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(600);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("soak.sqlite3");
    let common::Binary { mut child, url, .. } = common::spawn_binary(&db, &[("DEFAULT_WAIT_SECONDS", "1")]).await;
    let pid = child.id().unwrap();

    let http = reqwest::Client::builder().pool_max_idle_per_host(64).build().unwrap();
    let counts = Arc::new(Counts::default());
    let until = Instant::now() + Duration::from_secs(seconds);
    let mut tasks = Vec::new();
    for a in 0..4 {
        tasks.push(tokio::spawn(agent(
            http.clone(),
            url.clone(),
            format!("soak-agent-{a}"),
            counts.clone(),
            until,
        )));
    }
    tasks.push(tokio::spawn(writer(http.clone(), url.clone(), counts.clone(), until)));
    tasks.push(tokio::spawn(poller(http.clone(), url.clone(), counts.clone(), until)));
    for _ in 0..2 {
        tasks.push(tokio::spawn(listener(http.clone(), url.clone(), counts.clone(), until)));
    }
    tasks.push(tokio::spawn(hang_ups(http.clone(), url.clone(), counts.clone(), until)));

    println!("soak: {seconds} s of mixed traffic against {url} (server pid {pid})");
    println!("| t (s) | RSS (MiB) | open fds | requests | added | delivered | events | errors |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    let started = Instant::now();
    let mut samples: Vec<(u64, u64, usize)> = Vec::new();
    loop {
        let t = started.elapsed().as_secs();
        let (rss, fd) = (rss_kib(pid), fds(pid));
        samples.push((t, rss, fd));
        println!(
            "| {t} | {:.1} | {fd} | {} | {} | {} | {} | {} |",
            rss as f64 / 1024.0,
            counts.requests.load(Ordering::Relaxed),
            counts.added.load(Ordering::Relaxed),
            counts.delivered.load(Ordering::Relaxed),
            counts.events.load(Ordering::Relaxed),
            counts.errors.load(Ordering::Relaxed),
        );
        if Instant::now() >= until {
            break;
        }
        tokio::time::sleep(Duration::from_secs(30).min(until.saturating_duration_since(Instant::now()))).await;
    }
    for t in tasks {
        let _ = t.await;
    }
    // Let the last calls' connections close before the final descriptor count.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (end_rss, end_fds) = (rss_kib(pid), fds(pid));
    child.start_kill().ok();
    let _ = child.wait().await;

    // After warm-up: the first sample at or after one minute (a third of the run, for short runs).
    let warm = 60.min(seconds / 3);
    let baseline = samples.iter().find(|s| s.0 >= warm).unwrap_or(&samples[0]);
    let errors = counts.errors.load(Ordering::Relaxed);
    let rss_growth = end_rss as f64 / baseline.1.max(1) as f64;
    let fd_growth = end_fds as i64 - baseline.2 as i64;
    println!(
        "\nsoak: {} requests, {} added, {} delivered, {} events, {} hang-ups, {errors} errors; \
         RSS {:.1} → {:.1} MiB (×{rss_growth:.2} from t={} s), fds {} → {end_fds}",
        counts.requests.load(Ordering::Relaxed),
        counts.added.load(Ordering::Relaxed),
        counts.delivered.load(Ordering::Relaxed),
        counts.events.load(Ordering::Relaxed),
        counts.hangups.load(Ordering::Relaxed),
        baseline.1 as f64 / 1024.0,
        end_rss as f64 / 1024.0,
        baseline.0,
        baseline.2,
    );
    let ok = errors == 0 && rss_growth <= 1.25 && fd_growth <= 16;
    if !ok {
        eprintln!("soak: FAILED (errors, memory growth over 25 %, or descriptor growth over 16)");
        std::process::exit(1);
    }
    println!("soak: ok");
}
