//! One engine per database: a second `local-mcp-server` on the same file
//! refuses (exit code 4, naming the running one and its URL) and the first
//! keeps serving; the lock goes with its process, on a clean exit and on
//! `kill -9`, so a stale lock file never blocks a start.

use crate::common;

use std::time::Duration;

/// Run the server binary on `db` to its end (it is expected to refuse).
async fn run_to_exit(db: &std::path::Path) -> (Option<i32>, String) {
    let out = tokio::time::timeout(
        Duration::from_secs(20),
        tokio::process::Command::new(env!("CARGO_BIN_EXE_local-mcp-server"))
            .env("DB_PATH", db)
            .env("HTTP_PORT", "0")
            .env("LOG_LEVEL", "warn")
            .env("LOCAL_MCP_CONNECTION_FILE", db.with_extension("second.json"))
            .env("LOCAL_MCP_TOKEN_FILE", db.with_extension("token"))
            .stdin(std::process::Stdio::null())
            .output(),
    )
    .await
    .expect("a refused start ends at once")
    .unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

async fn healthy(url: &str) -> bool {
    reqwest::get(format!("{url}/healthz"))
        .await
        .is_ok_and(|r| r.status().is_success())
}

#[tokio::test]
async fn a_second_server_on_one_database_refuses_and_the_first_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("queue.sqlite3");
    let mut first = common::spawn_binary(&db, &[]).await;

    let (code, stderr) = run_to_exit(&db).await;
    assert_eq!(code, Some(4), "the documented exit code: {stderr}");
    assert!(stderr.contains(&first.url), "names the running one's URL: {stderr}");
    assert!(
        stderr.contains(&first.child.id().unwrap().to_string()),
        "and its process: {stderr}"
    );
    assert!(stderr.contains(&db.display().to_string()), "{stderr}");
    assert!(healthy(&first.url).await, "the first keeps serving");
    assert!(
        !db.with_extension("second.json").exists(),
        "the refused one published nothing"
    );

    // A clean exit releases the lock.
    let pid = first.child.id().unwrap().to_string();
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(sent.success());
    first.child.wait().await.unwrap();
    let mut second = common::spawn_binary(&db, &[]).await;
    assert!(healthy(&second.url).await);

    // So does kill -9: the lock file stays behind, and does not block the next start.
    second.child.kill().await.unwrap();
    assert!(
        engine::lock::lock_path(&db).exists(),
        "the stale lock file is still there"
    );
    let mut third = common::spawn_binary(&db, &[]).await;
    assert!(healthy(&third.url).await);
    third.child.kill().await.unwrap();
}

#[tokio::test]
async fn an_engine_in_process_holds_its_database_until_stopped() {
    let s = common::start(|_| {}).await;
    let holder = engine::lock::holder(&s.db).expect("the running engine is named");
    assert_eq!(holder.pid, std::process::id());
    assert_eq!(holder.url.as_deref(), Some(s.url.as_str()));
    let Err(engine::Error::InUse(message)) = engine::start(
        engine::Config::for_db(&s.db),
        tokio_util::sync::CancellationToken::new(),
    )
    .await
    else {
        panic!("a second engine started on the same database");
    };
    assert!(message.contains(&s.url), "{message}");
    let dir = s.stop().await;
    assert_eq!(engine::lock::holder(&dir.path().join("queue.sqlite3")), None);
    common::start_in(dir, |_| {}).await.stop().await;
}

/// What the desktop uses when it attaches to a headless server: that
/// server's events as `Event`s (its status first), and the tray's actions.
#[tokio::test]
async fn a_remote_engine_is_followed_and_driven_over_http() {
    use engine::client::remote::Remote;
    use engine::{EventData, EventKind};

    let s = common::start(|_| {}).await;
    let (tx, mut events) = tokio::sync::broadcast::channel(64);
    let (gone_tx, mut gone_rx) = tokio::sync::mpsc::unbounded_channel();
    let stop = tokio_util::sync::CancellationToken::new();
    let remote = Remote {
        base: s.url.clone(),
        token: None,
        db: None,
    };
    tokio::spawn(remote.clone().follow(
        tx,
        move |gone| {
            let _ = gone_tx.send(gone);
        },
        stop.clone(),
    ));
    let first = tokio::time::timeout(Duration::from_secs(10), events.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.kind, EventKind::StatusChanged, "the current status comes first");

    remote.add("from the tray".into(), vec![]).await.unwrap();
    remote.set_held(true).await.unwrap();
    let status = s.get_json("/api/status").await;
    assert!(status["queues"][0]["held"].as_bool().unwrap(), "{status}");
    remote.set_held(false).await.unwrap();

    let client = s.mcp().await;
    let consumed = async {
        loop {
            let e = tokio::time::timeout(Duration::from_secs(10), events.recv())
                .await
                .expect("an event")
                .unwrap();
            if e.kind == EventKind::InstructionConsumed {
                return e;
            }
        }
    };
    let (result, e) = tokio::join!(common::get_user_request(&client, Some("far-agent")), consumed);
    assert_eq!(result["instruction"]["content"], "from the tray");
    let EventData::Instruction(item) = &e.data else {
        panic!("an instruction event: {e:?}");
    };
    assert_eq!(item.content, "from the tray");
    assert_eq!(item.consumed_by_agent_id.as_deref(), Some("far-agent"));
    assert_eq!(e.pending_count, Some(0));
    client.cancel().await.unwrap();

    // The server goes: said once; the follower keeps trying without failing.
    s.stop().await;
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(10), gone_rx.recv())
            .await
            .unwrap(),
        Some(true)
    );
    stop.cancel();
}
