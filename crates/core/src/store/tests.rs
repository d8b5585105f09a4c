use super::*;
use crate::model::{Instruction, InstructionId, InstructionStatus, QueueName, Settings};
use std::sync::{Arc, Mutex};

fn instruction(id: &str, position: i64) -> Instruction {
    Instruction {
        id: InstructionId::new(id).unwrap(),
        ..Instruction::new_pending(
            format!("do {id}"),
            QueueName::default_queue(),
            None,
            position,
            crate::model::Timestamp::now(),
        )
    }
}

fn pragma(store: &Store, name: &str) -> i64 {
    store
        .lock()
        .query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
        .unwrap()
}

#[test]
fn a_new_file_is_migrated_in_wal_and_reopens_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/q.sqlite3");
    let store = Store::open(&path).unwrap();
    assert_eq!(pragma(&store, "user_version"), migrations::SCHEMA_VERSION);
    let mode: String = store.lock().query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
    assert_eq!(pragma(&store, "synchronous"), 2, "FULL by default");
    assert_eq!(pragma(&store, "foreign_keys"), 1);
    store
        .write(
            Durability::Full,
            |db| db.insert_instruction(&instruction("a", 1)),
            |_| (),
        )
        .unwrap();
    drop(store);
    let again = Store::open(&path).unwrap();
    assert_eq!(again.read(|db| db.pending_ids("default")).unwrap(), ["a"]);
    assert_eq!(again.integrity_check().unwrap(), "ok");
}

#[test]
fn a_database_from_a_newer_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q.sqlite3");
    drop(Store::open(&path).unwrap());
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("PRAGMA user_version = 99")
        .unwrap();
    let err = Store::open(&path).err().expect("refused");
    assert!(err.to_string().contains("newer"), "{err}");
}

#[test]
fn a_claim_commits_with_normal_sync_and_restores_full() {
    let store = Store::open_in_memory().unwrap();
    store
        .write(
            Durability::Full,
            |db| {
                db.insert_instruction(&instruction("b", 2))?;
                db.insert_instruction(&instruction("a", 1))
            },
            |_| (),
        )
        .unwrap();
    let seen = std::cell::Cell::new(-1);
    let claimed = store
        .write(
            Durability::Normal,
            |db| {
                seen.set(db.conn_synchronous());
                db.claim("default", "agent", None, &crate::time::now())
            },
            |_| (),
        )
        .unwrap()
        .unwrap();
    assert_eq!(seen.get(), 1, "NORMAL inside the claim");
    assert_eq!(pragma(&store, "synchronous"), 2, "FULL again afterwards");
    assert_eq!(claimed.id, "a", "lowest position first");
    assert_eq!(claimed.status, InstructionStatus::Consumed);
    assert_eq!(claimed.consumed_by_agent_id.as_deref(), Some("agent"));
    let next = store
        .write(
            Durability::Normal,
            |db| db.claim("default", "agent", None, &crate::time::now()),
            |_| (),
        )
        .unwrap();
    assert_eq!(next.unwrap().id, "b");
    assert!(store
        .write(
            Durability::Normal,
            |db| db.claim("default", "agent", None, &crate::time::now()),
            |_| ()
        )
        .unwrap()
        .is_none());
    let counts = store.read(|db| db.counts()).unwrap();
    assert_eq!((counts.pending_count, counts.consumed_count), (0, 2));
}

#[test]
fn a_failed_body_rolls_back_and_publishes_nothing() {
    let store = Store::open_in_memory().unwrap();
    let published = std::cell::Cell::new(false);
    let r: crate::Result<()> = store.write(
        Durability::Full,
        |db| {
            db.insert_instruction(&instruction("x", 1))?;
            Err(crate::Error::Invalid("no".into()))
        },
        |_| published.set(true),
    );
    assert!(r.is_err());
    assert!(!published.get());
    assert!(store
        .read(|db| db.list(&crate::model::Listing::default()))
        .unwrap()
        .is_empty());
    // The same id can be written afterwards: the first attempt left nothing behind.
    store
        .write(
            Durability::Full,
            |db| db.insert_instruction(&instruction("x", 1)),
            |_| (),
        )
        .unwrap();
}

#[test]
fn settings_seed_once_then_stored_values_rule() {
    let store = Store::open_in_memory().unwrap();
    let first = Settings {
        default_wait_seconds: 5,
        ..Settings::default()
    };
    store
        .write(Durability::Full, |db| db.seed_settings(&first), |_| ())
        .unwrap();
    let later = Settings {
        default_wait_seconds: 99,
        ..Settings::default()
    };
    store
        .write(Durability::Full, |db| db.seed_settings(&later), |_| ())
        .unwrap();
    assert_eq!(store.read(|db| db.settings()).unwrap().default_wait_seconds, 5);
    store
        .write(Durability::Full, |db| db.put_settings(&later), |_| ())
        .unwrap();
    assert_eq!(store.read(|db| db.settings()).unwrap(), later);
}

#[test]
fn the_event_log_is_pruned_but_ids_keep_growing() {
    let store = Store::open_in_memory().unwrap();
    let total = queries::EVENT_LOG_KEEP + 1024;
    store
        .write(
            Durability::Full,
            |db| {
                for _ in 0..total {
                    db.append_event("instruction.created", "t", "{}")?;
                }
                Ok(())
            },
            |_| (),
        )
        .unwrap();
    let (oldest, newest) = store
        .read(|db| Ok((db.oldest_event_id()?.unwrap(), db.last_event_id()?)))
        .unwrap();
    assert_eq!(newest, total);
    assert!(oldest > 1, "old events were pruned");
    assert!(
        newest - oldest < queries::EVENT_LOG_KEEP + 512,
        "at most one batch over the limit"
    );
    let after = store.read(|db| db.events_after(newest - 3, 10)).unwrap();
    assert_eq!(
        after.iter().map(|e| e.id).collect::<Vec<_>>(),
        [newest - 2, newest - 1, newest]
    );
}

#[cfg(unix)]
#[test]
fn the_database_and_its_folder_are_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new-folder").join("queue.sqlite3");
    let store = Store::open(&path).unwrap();
    store
        .write(
            Durability::Full,
            |db| db.seed_settings(&crate::model::Settings::default()),
            |_| {},
        )
        .unwrap();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(
        mode(&path.with_extension("sqlite3-wal")),
        0o600,
        "the WAL follows the database"
    );
    assert_eq!(mode(path.parent().unwrap()), 0o700);
}

/// Each `prepare_cached` statement stays compiled: a cache smaller than the
/// store's statements had every claim parse its statements again.
#[test]
fn the_statement_cache_holds_every_statement_the_store_runs() {
    fn count(dir: &std::path::Path) -> usize {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| {
                if p.is_dir() {
                    count(&p)
                } else {
                    std::fs::read_to_string(&p).unwrap().matches(".prepare_cached(").count()
                }
            })
            .sum()
    }
    let statements = count(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store"));
    assert!(
        statements > 16,
        "fewer statements than rusqlite's default cache: {statements}"
    );
    assert!(
        statements <= super::STATEMENT_CACHE,
        "{statements} cached statements, room for {}: raise STATEMENT_CACHE",
        super::STATEMENT_CACHE
    );
}

#[test]
fn a_cached_statement_keeps_its_plan_whatever_is_bound_to_it() {
    // A claim's statements run on every agent call, under the write lock:
    // reused from the cache, never parsed and planned again. Before the
    // connection asked for plans that ignore bound values (QPSG), SQLite
    // 3.54 re-planned the claim each time its bindings were cleared — at
    // every return to rusqlite's cache — ~4 statements per claim.
    let store = Store::open_in_memory().unwrap();
    store
        .write(
            Durability::Full,
            |db| (1..=6).try_for_each(|i| db.insert_instruction(&instruction(&format!("i{i}"), i))),
            |_| (),
        )
        .unwrap();
    for agent in ["a", "b", "c", "a", "d"] {
        let got = store
            .write(
                Durability::Normal,
                |db| db.claim("default", agent, None, &crate::time::now()),
                |_| (),
            )
            .unwrap();
        assert!(got.is_some(), "{agent} took one");
    }
    let conn = store.lock();
    let stmt = conn.prepare_cached(&queries::claim_sql()).unwrap();
    assert_eq!(
        stmt.get_status(rusqlite::StatementStatus::RePrepare),
        0,
        "the claim was planned again on reuse"
    );
    // And the plan is still the walk down the pending rail's partial index.
    let plan: Vec<String> = conn
        .prepare(&format!("EXPLAIN QUERY PLAN {}", queries::claim_sql()))
        .unwrap()
        .query_map(rusqlite::params!["a", "now", "default", None::<String>], |r| {
            r.get::<_, String>(3)
        })
        .unwrap()
        .collect::<std::result::Result<_, _>>()
        .unwrap();
    assert!(
        plan.iter().any(|p| p.contains("instructions_pending_by_queue")),
        "the claim no longer uses the pending rail's index: {plan:?}"
    );
}

/// A claim's write as the queue makes it, from a plain thread: queued,
/// written by this thread if no writer is at work, its outcome waited for.
fn grouped<T: Send + 'static>(
    store: &Store,
    body: impl FnOnce(&Db<'_>) -> crate::Result<T> + Send + 'static,
    on_commit: impl FnOnce(&T) + Send + 'static,
) -> crate::Result<T> {
    let (outcome, start_writer) = store.queue_write(body, on_commit);
    if start_writer {
        store.write_queued();
    }
    outcome
        .blocking_recv()
        .unwrap_or_else(|_| Err(crate::Error::internal("a test's claim", "no outcome")))
}

/// One write a test hands to a thread, with what it returns.
type Write<T> = Box<dyn FnOnce(&Store) -> T + Send>;

/// Start `writes` on threads while the test holds the connection, and return
/// once all of them are waiting for it (so they meet in one group).
fn grouped_together<T: Send + 'static>(store: &Arc<Store>, writes: Vec<Write<T>>) -> Vec<T> {
    let held = store.lock();
    let n = writes.len();
    let (done, outcomes) = std::sync::mpsc::channel();
    for (i, w) in writes.into_iter().enumerate() {
        let (store, done) = (store.clone(), done.clone());
        std::thread::spawn(move || done.send((i, w(&store))));
    }
    assert!(
        crate::process::wait_until(std::time::Duration::from_secs(30), || {
            store.waiting.lock_anyway().writes.len() >= n
        }),
        "waited 30 s for {n} grouped writes to queue behind the held lock"
    );
    drop(held);
    let mut got: Vec<(usize, T)> = (0..n)
        .map(|_| {
            outcomes
                .recv_timeout(std::time::Duration::from_secs(30))
                .unwrap_or_else(|e| panic!("waited 30 s for the grouped writes' outcomes: {e}"))
        })
        .collect();
    got.sort_by_key(|(i, _)| *i);
    got.into_iter().map(|(_, t)| t).collect()
}

/// Frames in the write-ahead log since it was last emptied.
fn wal_frames(store: &Store) -> i64 {
    store
        .lock()
        .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get(1))
        .unwrap()
}

fn empty_the_wal(store: &Store) {
    store.lock().execute_batch("PRAGMA wal_checkpoint(TRUNCATE)").unwrap();
}

#[test]
fn claims_arriving_together_share_one_commit() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("q.sqlite3")).unwrap());
    // Each returns what it wrote: every caller must get its own outcome.
    let touch = |agent: String| -> Write<crate::Result<String>> {
        Box::new(move |s: &Store| {
            grouped(
                s,
                move |db| {
                    db.touch_agent("default", &agent, &crate::time::now(), None)?;
                    Ok(agent)
                },
                |_| (),
            )
        })
    };
    // What one claim alone writes to the log…
    empty_the_wal(&store);
    for r in grouped_together(&store, vec![touch("alone".into())]) {
        assert_eq!(r.unwrap(), "alone");
    }
    let alone = wal_frames(&store);
    assert!(alone > 0);
    // …and eight at once: the same pages, committed once (eight commits
    // would write eight copies of them).
    empty_the_wal(&store);
    let eight = (0..8).map(|i| touch(format!("agent-{i}"))).collect();
    let outcomes: Vec<String> = grouped_together(&store, eight)
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(outcomes, (0..8).map(|i| format!("agent-{i}")).collect::<Vec<_>>());
    let together = wal_frames(&store);
    assert!(
        together <= alone + 1,
        "eight claims together wrote {together} log frames; one alone writes {alone}"
    );
    assert_eq!(pragma(&store, "synchronous"), 2, "FULL again afterwards");
    let agents = store.read(|db| db.agents(100)).unwrap();
    assert_eq!(agents.len(), 9);
}

#[test]
fn a_claim_that_fails_or_panics_in_a_group_leaves_the_others_written() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("q.sqlite3")).unwrap());
    let committed = Arc::new(Mutex::new(Vec::new()));
    type Write = Box<dyn FnOnce(&Store) -> (String, crate::Result<()>) + Send>;
    let write = |agent: &'static str, ending: fn() -> crate::Result<()>| -> Write {
        let committed = committed.clone();
        Box::new(move |s: &Store| {
            let outcome = grouped(
                s,
                move |db| {
                    db.touch_agent("default", agent, &crate::time::now(), None)?;
                    ending()
                },
                move |_| committed.lock().unwrap().push(agent),
            );
            (agent.to_owned(), outcome)
        })
    };
    let outcomes = grouped_together(
        &store,
        vec![
            write("a", || Ok(())),
            write("refused", || Err(crate::Error::Conflict("no".into()))),
            write("b", || Ok(())),
            write("panics", || panic!("a bug in one claim")),
            write("c", || Ok(())),
        ],
    );
    for (agent, outcome) in outcomes {
        match agent.as_str() {
            "refused" => assert!(matches!(outcome, Err(crate::Error::Conflict(_))), "{outcome:?}"),
            "panics" => assert!(matches!(outcome, Err(crate::Error::Internal { .. })), "{outcome:?}"),
            _ => outcome.unwrap(),
        }
    }
    let mut written: Vec<String> = store
        .read(|db| db.agents(100))
        .unwrap()
        .into_iter()
        .map(|a| a.agent_id.into_string())
        .collect();
    written.sort();
    assert_eq!(written, ["a", "b", "c"], "the failed writes left nothing");
    let mut published = committed.lock().unwrap().clone();
    published.sort();
    assert_eq!(published, ["a", "b", "c"], "only committed writes run their on_commit");
    assert_eq!(store.integrity_check().unwrap(), "ok");
}

#[test]
fn writes_queued_while_a_group_is_written_are_written_next() {
    use std::sync::mpsc;
    use std::time::Duration;
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("q.sqlite3")).unwrap());
    let (outcomes_tx, outcomes) = mpsc::channel();
    let write = |agent: &'static str, hold: Option<(mpsc::Sender<()>, mpsc::Receiver<()>)>| {
        let (store, outcomes_tx) = (store.clone(), outcomes_tx.clone());
        std::thread::spawn(move || {
            let outcome = grouped(
                &store,
                move |db| {
                    if let Some((entered, go)) = hold {
                        entered.send(()).unwrap();
                        go.recv_timeout(Duration::from_secs(30))
                            .expect("waited 30 s for the test to let the first group go on");
                    }
                    db.touch_agent("default", agent, &crate::time::now(), None)?;
                    Ok(agent)
                },
                |_| (),
            );
            outcomes_tx.send(outcome).unwrap();
        });
    };
    // The first write's group is being written (held inside its body)…
    let (entered_tx, entered) = mpsc::channel();
    let (go, go_rx) = mpsc::channel();
    write("first", Some((entered_tx, go_rx)));
    entered
        .recv_timeout(Duration::from_secs(30))
        .expect("waited 30 s for the first group to begin");
    // …when two more arrive: they queue (the turn is taken) and wait.
    write("second", None);
    write("third", None);
    assert!(
        crate::process::wait_until(Duration::from_secs(30), || store.waiting.lock_anyway().writes.len()
            >= 2),
        "waited 30 s for two writes to queue"
    );
    go.send(()).unwrap();
    // The writer goes on with them: the two are written, no one left waiting.
    let mut done: Vec<&str> = (0..3)
        .map(|_| {
            outcomes
                .recv_timeout(Duration::from_secs(30))
                .expect("waited 30 s for the writes queued behind a group")
                .unwrap()
        })
        .collect();
    done.sort();
    assert_eq!(done, ["first", "second", "third"]);
    assert!(
        crate::process::wait_until(Duration::from_secs(30), || !store.waiting.lock_anyway().writer),
        "waited 30 s for the writer to stop"
    );
    assert_eq!(store.read(|db| db.agents(10)).unwrap().len(), 3);
}

#[test]
fn queued_writes_whose_writer_never_comes_fail_and_the_next_starts_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("q.sqlite3")).unwrap();
    let touch = |agent: &'static str| move |db: &Db<'_>| db.touch_agent("default", agent, &crate::time::now(), None);
    let (lost, start) = store.queue_write(touch("lost"), |_| ());
    assert!(start, "the first write starts a writer");
    let (also_lost, start) = store.queue_write(touch("also lost"), |_| ());
    assert!(!start, "one writer at a time");
    // The writer's task is dropped unrun (the runtime stopping): what was
    // queued fails, as a fault the agent may call again after.
    store.abandon_queued();
    for outcome in [lost, also_lost] {
        let e = futures::executor::block_on(group::outcome(outcome)).unwrap_err();
        assert!(matches!(e, crate::Error::Unavailable(_)), "{e:?}");
    }
    assert!(
        store.read(|db| db.agents(10)).unwrap().is_empty(),
        "nothing was written"
    );
    // The next write starts a writer again and is written.
    let (written, start) = store.queue_write(touch("next"), |_| ());
    assert!(start);
    store.write_queued();
    futures::executor::block_on(group::outcome(written)).unwrap();
    assert_eq!(store.read(|db| db.agents(10)).unwrap().len(), 1);
}
