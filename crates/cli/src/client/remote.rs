//! A running engine driven from outside, for the desktop app when a
//! headless server already holds the person's database: it then runs as
//! that server's window and tray. `follow` reads the `/api/events` stream
//! as the same `Event`s an in-process engine broadcasts, so the tray and
//! notifications are fed exactly as they are from the desktop's own engine;
//! `set_held` and `add` are the tray's actions over the HTTP API.
//!
//! After each (re)connection the current `/api/status` is sent first, as a
//! `status.changed`, so the tray is right at once; missed events are not
//! replayed (a notification for something long past is noise). While the
//! server cannot be reached, `on_gone` is told once per outage.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use reqwest::header::{ACCEPT, AUTHORIZATION};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::model::Timestamp;
use crate::model::{Instruction, Report, StatusSnapshot, Upload};
use crate::{Error, Event, EventData, EventKind, Result};

/// How long to wait before reconnecting after the stream ended or failed.
const RETRY_AFTER: Duration = Duration::from_secs(2);

/// The engine at `base` (`http://host:port`); `token` is sent as the
/// bearer token when the server requires one.
#[derive(Debug, Clone)]
pub struct Remote {
    pub base: String,
    pub token: Option<String>,
    /// The database it serves, when known.
    pub db: Option<std::path::PathBuf>,
}

impl Remote {
    fn request(&self, method: reqwest::Method, path: &str) -> Result<reqwest::RequestBuilder> {
        let r = super::target::http_client()?.request(method, format!("{}{path}", self.base));
        Ok(match &self.token {
            Some(t) => r.bearer_auth(t),
            None => r,
        })
    }

    /// Hold (or release) every queue.
    pub async fn set_held(&self, held: bool) -> Result<()> {
        let path = if held { "/api/hold" } else { "/api/release" };
        let request = self
            .request(reqwest::Method::POST, path)?
            .json(&serde_json::json!({ "queue": null }));
        answer(request).await
    }

    /// Queue `content` with `files` in the default queue.
    pub async fn add(&self, content: String, files: Vec<Upload>) -> Result<()> {
        let mut form = reqwest::multipart::Form::new().text("content", content);
        for f in files {
            form = form.part(
                "files",
                reqwest::multipart::Part::bytes(f.bytes.to_vec()).file_name(f.name),
            );
        }
        answer(
            self.request(reqwest::Method::POST, "/api/instructions")?
                .multipart(form),
        )
        .await
    }

    /// Answer the report `report_id` (a question): queued first, for the
    /// agent that asked, as the page's answer is.
    pub async fn reply(&self, report_id: &str, content: &str) -> Result<()> {
        let path = format!("/api/reports/{}/reply", super::encode(report_id));
        let request = self
            .request(reqwest::Method::POST, &path)?
            .json(&serde_json::json!({ "content": content }));
        answer(request).await
    }

    /// The newest report of `agent` in `queue` (the tray reads a question
    /// it was not told of: one asked before the desktop attached).
    pub async fn newest_report(&self, queue: &str, agent: &str) -> Result<Option<Report>> {
        #[derive(serde::Deserialize)]
        struct Reports {
            items: Vec<Report>,
        }
        let path = format!(
            "/api/reports?queue={}&agent_id={}&limit=1",
            super::encode(queue),
            super::encode(agent)
        );
        let response = self
            .request(reqwest::Method::GET, &path)?
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(|e| {
                Error::Unavailable(format!(
                    "local-mcp did not list reports: {}",
                    super::target::root_cause(&e)
                ))
            })?;
        let body: Reports = response
            .json()
            .await
            .map_err(|e| Error::Unavailable(format!("local-mcp sent reports this version cannot read: {e}")))?;
        Ok(body.items.into_iter().next())
    }

    /// Send the engine's events to `tx` until `shutdown`, reconnecting when
    /// the stream ends. `on_gone(true)` when it stops answering, `(false)` when back.
    pub async fn follow(
        self,
        tx: broadcast::Sender<Arc<Event>>,
        on_gone: impl Fn(bool) + Send + 'static,
        shutdown: CancellationToken,
    ) {
        let http = match super::target::http_client() {
            Ok(h) => h,
            Err(e) => {
                e.log();
                return;
            }
        };
        let mut gone = false;
        loop {
            let ended = tokio::select! {
                _ = shutdown.cancelled() => return,
                r = self.run_once(&http, &tx, &mut gone, &on_gone) => r,
            };
            if let Err(e) = ended {
                tracing::debug!(error = %e, "the event stream of {} ended", self.base);
            }
            if !gone {
                gone = true;
                on_gone(true);
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(RETRY_AFTER) => {}
            }
        }
    }

    /// One connection: the current status, then the stream's events until it ends.
    async fn run_once(
        &self,
        http: &reqwest::Client,
        tx: &broadcast::Sender<Arc<Event>>,
        gone: &mut bool,
        on_gone: &(impl Fn(bool) + Send),
    ) -> std::result::Result<(), String> {
        let authorized = |r: reqwest::RequestBuilder| match &self.token {
            Some(t) => r.header(AUTHORIZATION, format!("Bearer {t}")),
            None => r,
        };
        let response = authorized(
            http.get(format!("{}/api/events", self.base))
                .header(ACCEPT, "text/event-stream"),
        )
        .send()
        .await
        .and_then(|r| r.error_for_status())
        .map_err(|e| e.to_string())?;
        let status: StatusSnapshot = authorized(http.get(format!("{}/api/status", self.base)))
            .send()
            .await
            .and_then(|r| r.error_for_status())
            .map_err(|e| e.to_string())?
            .json()
            .await
            .map_err(|e| e.to_string())?;
        if *gone {
            *gone = false;
            on_gone(false);
        }
        let _ = tx.send(Arc::new(Event::new(
            EventKind::StatusChanged,
            Timestamp::now(),
            EventData::Status(Box::new(status)),
            None,
        )));
        // The same SSE parser the stdio bridge reads `/mcp` answers with.
        let mut events = sse_stream::SseStream::from_bytes_stream(response.bytes_stream());
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| e.to_string())?;
            let (Some(kind), Some(data)) = (event.event, event.data) else {
                continue; // keep-alives and comments
            };
            if let Some(event) = to_event(&kind, &data) {
                let _ = tx.send(Arc::new(event));
            }
        }
        Err("the server closed the stream".into())
    }
}

/// Send a request; a refusal becomes an error with the server's message.
async fn answer(request: reqwest::RequestBuilder) -> Result<()> {
    let response = request
        .send()
        .await
        .map_err(|e| Error::Unavailable(format!("local-mcp is not answering: {}", super::target::root_cause(&e))))?;
    if response.status().is_success() {
        return Ok(());
    }
    let status = response.status();
    let body: serde_json::Value = response.json().await.unwrap_or_default();
    let message = body["error"]["message"]
        .as_str()
        .map_or_else(|| status.to_string(), str::to_owned);
    Err(Error::Invalid(message))
}

/// The payload `{"type","timestamp","data"[,"pending_count"]}` as an `Event`,
/// for the kinds a shell acts on; others are skipped.
fn to_event(kind: &str, json: &str) -> Option<Event> {
    let payload: serde_json::Value = serde_json::from_str(json).ok()?;
    // An event without a time of its own (none should come) is dated when it arrived.
    let timestamp = payload["timestamp"]
        .as_str()
        .and_then(|t| Timestamp::read(t).ok())
        .unwrap_or_else(Timestamp::now);
    let pending = payload["pending_count"].as_u64();
    let data = payload.get("data")?.clone();
    let (kind, data) = match kind {
        "status.changed" => (
            EventKind::StatusChanged,
            EventData::Status(Box::new(serde_json::from_value::<StatusSnapshot>(data).ok()?)),
        ),
        "report.created" => (
            EventKind::ReportCreated,
            EventData::Report(serde_json::from_value::<Report>(data).ok()?),
        ),
        "instruction.consumed" => (
            EventKind::InstructionConsumed,
            EventData::Instruction(serde_json::from_value::<Instruction>(data).ok()?),
        ),
        // A delivery's fate (in doubt) comes as an update.
        "instruction.updated" => (
            EventKind::InstructionUpdated,
            EventData::Instruction(serde_json::from_value::<Instruction>(data).ok()?),
        ),
        _ => return None,
    };
    Some(Event::new(kind, timestamp, data, pending))
}
