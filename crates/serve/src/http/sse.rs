//! `GET /api/events`: the live event stream for the page.
//!
//! On connect a stream first replays what the client missed (events after its
//! `Last-Event-ID`, or for a new client what was logged since its request
//! came in), then sends a fresh `status.changed` snapshot whose id is
//! the log position it reflects, then forwards live events. A client that fell
//! behind the broadcast channel is caught up from the log; one whose cursor is
//! older than the log keeps gets `stream.reset` and reloads. Streams end when
//! the server shuts down, so shutdown never waits on an open page.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures::Stream;
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;

use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::body;
use super::error::Result;
use super::AppState;
use crate::events::{Event, EventData};
use crate::queue::Queue;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(body::json(routes!(events)))
}

/// One server-sent event on `/api/events` (its `data` is the JSON described in the README).
#[derive(Serialize, ToSchema)]
pub struct ServerSentEvent {
    /// instruction.created | instruction.updated | instruction.deleted | instruction.consumed |
    /// config.updated | status.changed | stream.reset
    pub event: String,
    /// `{"type","timestamp","data"[,"pending_count"]}` as JSON text.
    pub data: String,
    /// The event-log id (absent on status.changed).
    pub id: Option<String>,
    /// Reconnect delay in milliseconds.
    pub retry: Option<u64>,
}

/// How many logged events one replay query fetches.
const REPLAY_BATCH: u32 = 500;
/// How often the browser should retry after the stream drops.
const RETRY: Duration = Duration::from_secs(2);

#[utoipa::path(get, path = "/api/events", tag = "events",
    params(("Last-Event-ID" = Option<String>, Header, description = "Replay what came after this event id")),
    responses((status = 200, description = "Server-sent events: instruction.created|updated|deleted|consumed, config.updated, \
        status.changed (a snapshot, no id) and stream.reset (replay impossible: reload)", content_type = "text/event-stream", body = ServerSentEvent)))]
async fn events(
    State(s): State<AppState>,
    phone: Option<axum::Extension<super::phone::OnPhoneListener>>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>> {
    let last_id = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<i64>().ok());
    // The page opens this stream once its scripts run: the desktop's
    // footprint bench times a window's page by this line.
    tracing::debug!(replay_after = ?last_id, "an event stream opened");
    // Where the stream starts is fixed before its answer goes out, and it is
    // subscribed next: an event logged after that point is replayed or live,
    // never neither. (Read later, in the task, a change a client made as soon
    // as its stream answered could fall below the start and be skipped.)
    let after = match last_id {
        Some(id) => id,
        None => s.queue.event_log_bounds().await?.1,
    };
    let (tx, rx) = mpsc::channel(64);
    let live = s.queue.bus().subscribe();
    tokio::spawn(async move {
        tokio::select! {
            _ = s.shutdown.cancelled() => {}
            _ = tx.closed() => {}
            r = pump(&s.queue, live, after, phone.is_some(), &tx) => {
                if let Err(e) = r {
                    tracing::warn!(error = %e, "event stream ended with an error");
                }
            }
        }
    });
    Ok(Sse::new(ReceiverStream::new(rx))
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)).text("keep-alive")))
}

type Tx = mpsc::Sender<Result<SseEvent, Infallible>>;

fn logged(id: i64, kind: &str, json: &str) -> SseEvent {
    SseEvent::default().id(id.to_string()).event(kind).data(json)
}

/// `e` as a stream sends it; to a phone, a status report as a phone gets it
/// (`StatusSnapshot::for_phone`).
fn live_event(e: &Event, phone: bool) -> SseEvent {
    let for_phone = match &e.data {
        EventData::Status(status) if phone => Some(Event::new(
            e.kind,
            e.timestamp.clone(),
            EventData::Status(Box::new(status.as_ref().clone().for_phone())),
            e.pending_count,
        )),
        _ => None,
    };
    let json = for_phone.as_ref().map_or(&e.json, |p| &p.json);
    let ev = SseEvent::default().event(e.kind.as_str()).data(json);
    match e.id {
        Some(id) => ev.id(id.to_string()),
        None => ev,
    }
}

/// Send logged events after `cursor`; returns the new cursor, or `None` if the
/// log no longer reaches back that far (the client must reload).
async fn replay(queue: &Queue, mut cursor: i64, tx: &Tx) -> Result<Option<i64>> {
    let (oldest, newest) = queue.event_log_bounds().await?;
    // A cursor from the future means a different database: reload too.
    if cursor > newest || (cursor < newest && oldest.is_none_or(|o| o > cursor + 1)) {
        return Ok(None);
    }
    loop {
        let batch = queue.events_after(cursor, REPLAY_BATCH).await?;
        let Some(last) = batch.last() else {
            return Ok(Some(cursor));
        };
        cursor = last.id;
        for e in &batch {
            if tx.send(Ok(logged(e.id, &e.kind, &e.json))).await.is_err() {
                return Ok(Some(cursor));
            }
        }
    }
}

/// Replay what was logged after `after`, send the snapshot, then forward live
/// events (skipping those the replay sent).
async fn pump(
    queue: &Queue,
    mut live: broadcast::Receiver<Arc<Event>>,
    after: i64,
    phone: bool,
    tx: &Tx,
) -> Result<()> {
    let mut cursor = match replay(queue, after, tx).await? {
        Some(c) => c,
        None => return reset(queue, tx).await,
    };
    // The snapshot carries the cursor as its id, so a reconnect resumes after it.
    let hello = queue.status_event().await?;
    let _ = tx
        .send(Ok(live_event(&hello, phone).id(cursor.to_string()).retry(RETRY)))
        .await;

    loop {
        match live.recv().await {
            Ok(e) => {
                if let Some(id) = e.id {
                    if id <= cursor {
                        continue; // already sent by the replay
                    }
                    cursor = id;
                }
                if tx.send(Ok(live_event(&e, phone))).await.is_err() {
                    return Ok(());
                }
            }
            Err(broadcast::error::RecvError::Lagged(_)) => match replay(queue, cursor, tx).await? {
                Some(c) => cursor = c,
                None => return reset(queue, tx).await,
            },
            Err(broadcast::error::RecvError::Closed) => return Ok(()),
        }
    }
}

/// Tell the client its cursor is gone: reload everything, then reconnect fresh.
async fn reset(queue: &Queue, tx: &Tx) -> Result<()> {
    let newest = queue.event_log_bounds().await?.1;
    let ev = SseEvent::default()
        .id(newest.to_string())
        .event("stream.reset")
        .data(r#"{"type":"stream.reset","data":{"reason":"missed too many events; reload the queue"}}"#);
    let _ = tx.send(Ok(ev)).await;
    Ok(())
}
