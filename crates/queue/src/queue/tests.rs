use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::wait::WaitOutcome;
use super::*;
use crate::model::{Caller, QueueName, ResultType, Settings, UserRequestResult, MAX_INSTRUCTION_BYTES};

/// A queue on an in-memory store, waits at most `wait` seconds; and its shutdown.
pub(crate) fn queue(wait: u32) -> (Queue, CancellationToken) {
    let shutdown = CancellationToken::new();
    let facts = ServerFacts {
        url: "http://test".into(),
        version: "0".into(),
        started_at: crate::model::Timestamp::now(),
        requested_port: None,
        requested_port_holder: None,
        recovered: None,
        log_dir: None,
        database: None,
    };
    let settings = Settings {
        default_wait_seconds: wait,
        ..Settings::default()
    };
    (
        Queue::new(Store::open_in_memory().unwrap(), &settings, facts, shutdown.clone()).unwrap(),
        shutdown,
    )
}

/// Start a call from agent "a" and return once it is waiting on the empty queue.
async fn waiting_call(q: &Queue, gone: CancellationToken) -> tokio::task::JoinHandle<(UserRequestResult, WaitOutcome)> {
    let call = {
        let q = q.clone();
        tokio::spawn(async move {
            q.get_user_request(None, Some(&aid("a")), Caller::default(), None, gone, None)
                .await
                .unwrap()
        })
    };
    while q.inner.calls.waiting(&QueueName::default_queue(), &aid("a")) == 0 {
        tokio::task::yield_now().await;
    }
    call
}

fn aid(agent: &str) -> crate::model::AgentId {
    crate::model::AgentId::new(agent).unwrap().unwrap()
}

#[test]
fn content_rules() {
    assert!(validate_content("  \n\t ".into()).is_err());
    assert!(validate_content(String::new()).is_err());
    assert!(matches!(validate_content("a\0b".into()), Err(Error::Invalid(_))));
    assert!(matches!(
        validate_content("x".repeat(MAX_INSTRUCTION_BYTES + 1)),
        Err(Error::TooLarge(_))
    ));
    assert_eq!(validate_content("  keep  ".into()).unwrap(), "  keep  ");
    assert!(validate_content("x".repeat(MAX_INSTRUCTION_BYTES)).is_ok());
}

#[test]
fn agent_ids_are_trimmed_and_bounded() {
    use crate::model::agent_id;
    assert_eq!(agent_id(None).unwrap(), None);
    assert_eq!(agent_id(Some("   ")).unwrap(), None);
    assert_eq!(agent_id(Some(" copilot ")).unwrap().as_deref(), Some("copilot"));
    assert_eq!(agent_id(Some(&"é".repeat(128))).unwrap().unwrap().chars().count(), 128);
    assert!(agent_id(Some(&"a".repeat(129))).is_err());
    assert!(agent_id(Some("a\nb")).is_err());
}

#[tokio::test(start_paused = true)]
async fn an_empty_queue_waits_the_full_configured_time() {
    let (q, _s) = queue(86_400);
    let (r, outcome) = q
        .get_user_request(
            None,
            Some(&aid("a")),
            Caller::default(),
            None,
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
    assert_eq!(outcome, WaitOutcome::TimedOut);
    assert_eq!(r.result_type, ResultType::DefaultResponse);
    assert_eq!(r.waited_seconds, 86_400);
}

#[tokio::test(start_paused = true)]
async fn a_new_instruction_ends_the_wait_without_polling() {
    let (q, _s) = queue(3600);
    let waiter = waiting_call(&q, CancellationToken::new()).await;
    tokio::time::sleep(Duration::from_secs(600)).await;
    let item = q.add("go").await.unwrap();
    let (r, outcome) = waiter.await.unwrap();
    assert_eq!(outcome, WaitOutcome::Delivered);
    assert_eq!(r.instruction.unwrap().id, item.id);
    assert_eq!(r.waited_seconds, 600);
}

#[tokio::test]
async fn a_cancelled_caller_consumes_nothing() {
    let (q, _s) = queue(3600);
    let gone = CancellationToken::new();
    let waiter = waiting_call(&q, gone.clone()).await;
    gone.cancel();
    q.add("stays").await.unwrap();
    let (_, outcome) = waiter.await.unwrap();
    assert_eq!(outcome, WaitOutcome::CallerGone);
    assert_eq!(q.counts().await.unwrap().pending_count, 1);
}

#[tokio::test]
async fn shutdown_releases_waiters_without_consuming() {
    let (q, shutdown) = queue(3600);
    let waiter = waiting_call(&q, CancellationToken::new()).await;
    shutdown.cancel();
    let (_, outcome) = tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcome, WaitOutcome::ShuttingDown);
}

#[tokio::test]
async fn events_are_published_in_commit_order() {
    let (q, _s) = queue(0);
    let mut rx = q.bus().subscribe();
    let mut tasks = Vec::new();
    for n in 0..50 {
        let q = q.clone();
        tasks.push(tokio::spawn(async move { q.add(format!("n{n}")).await.unwrap() }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let mut last = 0;
    let mut seen = 0;
    while seen < 50 {
        let e = rx.recv().await.unwrap();
        if let Some(id) = e.id {
            assert!(id > last, "event {id} after {last}");
            last = id;
            seen += 1;
        }
    }
}
