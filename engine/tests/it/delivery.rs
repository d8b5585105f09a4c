//! Every delivery ends known: `sent` once the response carrying it was
//! written out in full, `confirmed` when its agent calls again, `in_doubt`
//! when the connection broke after the claim — shown in the status, sent
//! again to the same agent by the person, or by itself with
//! `redeliver_in_doubt`.

use crate::common;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn delivery_of(s: &common::Server, id: &str) -> Value {
    s.get_json(&format!("/api/instructions/{id}")).await["item"]["delivery"].clone()
}

async fn until_delivery(s: &common::Server, id: &str, want: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let now = delivery_of(s, id).await;
        if now == want {
            return;
        }
        assert!(Instant::now() < deadline, "{id}: delivery {now}, never {want}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_delivery_is_sent_once_written_and_confirmed_by_the_agents_next_call() {
    let s = common::start(|c| c.settings.default_wait_seconds = 0).await;
    let one = s.add("one").await["id"].as_str().unwrap().to_owned();
    let two = s.add("two").await["id"].as_str().unwrap().to_owned();
    let client = s.mcp().await;

    let r = common::get_user_request(&client, Some("ann")).await;
    assert_eq!(r["instruction"]["id"], one.as_str());
    until_delivery(&s, &one, "sent").await;
    // Another agent's call says nothing about what ann received.
    let r = common::get_user_request(&client, Some("bob")).await;
    assert_eq!(r["instruction"]["id"], two.as_str());
    until_delivery(&s, &two, "sent").await;
    assert_eq!(delivery_of(&s, &one).await, "sent");
    // ann calls again (nothing left for her): what she was sent arrived.
    let r = common::get_user_request(&client, Some("ann")).await;
    assert_eq!(r["instruction"], Value::Null);
    assert_eq!(delivery_of(&s, &one).await, "confirmed");
    assert_eq!(delivery_of(&s, &two).await, "sent", "bob has not called again");
    assert_eq!(s.get_json("/api/status").await["queue"]["in_doubt_count"], 0);
    client.cancel().await.unwrap();
    s.stop().await;
}

/// A noise image of `w`×`h` as PNG: incompressible, so its size is what it is.
fn noise_png(w: u32, h: u32, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let rgba = (0..w * h * 4)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    engine::png_from_rgba(w, h, rgba).unwrap()
}

/// An instruction whose answer is ~7 MiB (six inline images): more than the
/// kernel's socket buffers hold, so a client that does not read cannot be
/// sent it in full.
pub(crate) async fn add_big(s: &common::Server, content: &str) -> String {
    let mut form = reqwest::multipart::Form::new().text("content", content.to_owned());
    for n in 0..6 {
        let png = noise_png(480, 480, 0x9E37_79B9 + n);
        form = form.part(
            "files",
            reqwest::multipart::Part::bytes(png).file_name(format!("noise-{n}.png")),
        );
    }
    let (status, created) = s.upload(form).await;
    assert_eq!(status, 201, "{created}");
    created["item"]["id"].as_str().unwrap().to_owned()
}

/// A client that asks for `get_user_request` over a raw socket with a small
/// receive buffer and then reads nothing: its answer cannot be written out.
async fn call_and_stall(s: &common::Server, agent: &str) -> tokio::net::TcpStream {
    let addr: std::net::SocketAddr = s.url.trim_start_matches("http://").parse().unwrap();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket.connect(addr).await.unwrap();
    let body = common::raw_call_body(1, agent);
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    stream
}

/// The same, reading only the response's first bytes, then hanging up.
async fn call_and_hang_up(s: &common::Server, agent: &str) {
    let mut stream = call_and_stall(s, agent).await;
    let mut first = [0u8; 1024];
    let n = stream.read(&mut first).await.unwrap();
    assert!(
        String::from_utf8_lossy(&first[..n]).starts_with("HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&first[..n])
    );
    // Long enough for the claim to be made and the answer to fill the buffers.
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(stream);
}

#[tokio::test]
async fn an_answer_cut_off_is_in_doubt_and_send_again_goes_to_that_agent_first() {
    let s = common::start(|c| c.settings.default_wait_seconds = 0).await;
    let id = add_big(&s, "a big one").await;
    s.add("the next one").await;
    let mut events = common::SseReader::open(&s, None).await;

    call_and_hang_up(&s, "cutoff").await;
    until_delivery(&s, &id, "in_doubt").await;
    let item = s.get_json(&format!("/api/instructions/{id}")).await["item"].clone();
    assert_eq!(item["status"], "consumed");
    assert_eq!(item["consumed_by_agent_id"], "cutoff");
    // The change went out as an event, and the status counts it.
    loop {
        let e = events.next_of("instruction.updated").await;
        if e.data["data"]["id"] == id.as_str() && e.data["data"]["delivery"] == "in_doubt" {
            break;
        }
    }
    assert_eq!(s.get_json("/api/status").await["queue"]["in_doubt_count"], 1);

    // Send again: at the front, for that agent; the original is marked resent.
    let (code, again) = s.post(&format!("/api/instructions/{id}/requeue"), json!({})).await;
    assert_eq!(code, 201, "{again}");
    assert_eq!(again["item"]["target"], "cutoff");
    assert_eq!(delivery_of(&s, &id).await, "resent");
    assert_eq!(s.get_json("/api/status").await["queue"]["in_doubt_count"], 0);
    let pending = s.get_json("/api/instructions?status=pending").await;
    assert_eq!(pending["items"][0]["content"], "a big one", "first in line");
    let client = s.mcp().await;
    let other = common::get_user_request(&client, Some("someone-else")).await;
    assert_eq!(other["instruction"]["content"], "the next one", "not for anyone else");
    let r = common::get_user_request(&client, Some("cutoff")).await;
    assert_eq!(r["instruction"]["content"], "a big one");
    client.cancel().await.unwrap();
    s.stop().await;
}

#[tokio::test]
async fn with_redeliver_in_doubt_the_agents_next_call_gets_it_again() {
    let s = common::start(|c| {
        c.settings.default_wait_seconds = 0;
        c.settings.redeliver_in_doubt = true;
    })
    .await;
    let id = add_big(&s, "again by itself").await;
    s.add("after it").await;
    call_and_hang_up(&s, "flaky").await;
    until_delivery(&s, &id, "in_doubt").await;

    let client = s.mcp().await;
    // Not to another agent: it stays this agent's.
    let other = common::get_user_request(&client, Some("steady")).await;
    assert_eq!(other["instruction"]["content"], "after it");
    let r = common::get_user_request(&client, Some("flaky")).await;
    assert_eq!(
        r["instruction"]["id"],
        id.as_str(),
        "the same instruction, delivered again"
    );
    until_delivery(&s, &id, "sent").await;
    assert_eq!(s.get_json("/api/status").await["queue"]["in_doubt_count"], 0);
    client.cancel().await.unwrap();
    s.stop().await;
}

#[tokio::test]
async fn a_claim_left_open_by_a_crash_is_in_doubt_at_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("queue.sqlite3");
    let mut server = common::spawn_binary(&db, &[]).await;
    let http = reqwest::Client::new();
    let (_, created) = common::post_with(
        &http,
        &format!("{}/api/instructions", server.url),
        json!({ "content": "claimed, then the app died" }),
    )
    .await;
    let id = created["item"]["id"].as_str().unwrap().to_owned();
    server.child.kill().await.unwrap();
    // The moment between a claim's commit and its answer, as a crash leaves it.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute(
        "UPDATE instructions SET status = 'consumed', consumed_by_agent_id = 'gone', consumed_at = '2026-01-01T00:00:00.000Z', delivery = 'claimed' WHERE id = ?1",
        [&id],
    )
    .unwrap();
    drop(conn);

    let mut server = common::spawn_binary(&db, &[]).await;
    let item = common::get_json_with(&http, &format!("{}/api/instructions/{id}", server.url)).await;
    assert_eq!(item["item"]["delivery"], "in_doubt");
    let status = common::get_json_with(&http, &format!("{}/api/status", server.url)).await;
    assert_eq!(status["queue"]["in_doubt_count"], 1);
    server.child.kill().await.unwrap();
}

#[tokio::test]
async fn an_answer_still_stuck_when_the_server_stops_is_in_doubt_once_it_has_stopped() {
    let s = common::start(|c| c.settings.default_wait_seconds = 0).await;
    let id = add_big(&s, "never read").await;
    let stalled = call_and_stall(&s, "stalled").await;
    until_delivery(&s, &id, "claimed").await;
    let db = s.db.clone();
    // The stop's grace ends with the connection still open; dropping it cuts the answer off.
    let _dir = s.stop().await;
    let conn = rusqlite::Connection::open(&db).unwrap();
    let delivery: String = conn
        .query_row("SELECT delivery FROM instructions WHERE id = ?1", [&id], |r| r.get(0))
        .unwrap();
    assert_eq!(
        delivery, "in_doubt",
        "settled by the stop itself, not left for the next start to doubt"
    );
    drop(stalled);
}
