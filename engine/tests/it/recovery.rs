//! A damaged database found at start is moved aside — with its WAL and its
//! attachments — and a fresh one starts: the app never crash-loops on a bad
//! file, and the status says what happened and where the old file is.

use crate::common;

use serde_json::Value;

fn files_named(dir: &std::path::Path, part: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(part))
        .collect()
}

#[tokio::test]
async fn a_file_that_is_not_a_database_is_moved_aside_with_its_attachments() {
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    let db = dir.path().join("queue.sqlite3");
    let garbage = b"this is not an SQLite database, it is a shopping list\n".repeat(200);
    std::fs::write(&db, &garbage).unwrap();
    let files = dir.path().join("queue.sqlite3-attachments");
    std::fs::create_dir_all(files.join("some-instruction")).unwrap();
    std::fs::write(files.join("some-instruction").join("shot.png"), b"keep me").unwrap();

    let s = common::start_in(dir.clone(), |_| {}).await;
    let status = s.get_json("/api/status").await;
    let recovered = &status["server"]["recovered"];
    let moved_to = recovered["moved_to"]
        .as_str()
        .expect("the status says where the file went");
    assert!(moved_to.contains("queue.sqlite3.corrupt-"), "{moved_to}");
    assert!(
        recovered["reason"].as_str().unwrap().contains("not a database"),
        "{recovered}"
    );
    assert_eq!(
        std::fs::read(moved_to).unwrap(),
        garbage,
        "the damaged file is kept as it was"
    );
    // Its attachments went with it: the fresh database's start-up sweep did not touch them.
    let aside = files_named(dir.path(), "corrupt-");
    let kept = aside
        .iter()
        .find(|n| n.ends_with("-attachments"))
        .expect("the attachments moved aside");
    assert_eq!(
        std::fs::read(dir.path().join(kept).join("some-instruction").join("shot.png")).unwrap(),
        b"keep me"
    );
    // The fresh database works.
    s.add("after the recovery").await;
    assert_eq!(
        s.get_json("/api/instructions").await["items"][0]["content"],
        "after the recovery"
    );
    let dir = s.stop().await;

    // The next start is a plain one: nothing more moved, no notice.
    let s = common::start_in(dir.clone(), |_| {}).await;
    assert_eq!(s.get_json("/api/status").await["server"]["recovered"], Value::Null);
    assert_eq!(files_named(dir.path(), "corrupt-").len(), aside.len());
    s.stop().await;
}

#[tokio::test]
async fn a_database_with_damaged_pages_is_moved_aside_and_a_fresh_one_starts() {
    let s = common::start(|_| {}).await;
    let long = "x".repeat(2000);
    for n in 0..300 {
        s.add(&format!("{n} {long}")).await;
    }
    let db = s.db.clone();
    let dir = s.stop().await;
    let bytes = std::fs::read(&db).unwrap();
    assert!(bytes.len() > 400_000, "a database of some size: {}", bytes.len());
    // Pages in the middle overwritten (a bad sector, a stray write): the header is fine, so only
    // a check of the pages finds it.
    let mut damaged = bytes.clone();
    let mid = damaged.len() / 2;
    damaged[mid..mid + 64 * 1024].fill(0xA5);
    std::fs::write(&db, &damaged).unwrap();

    let s = common::start_in(dir.clone(), |_| {}).await;
    let recovered = s.get_json("/api/status").await["server"]["recovered"].clone();
    assert!(recovered["moved_to"].as_str().is_some(), "{recovered}");
    assert_eq!(s.get_json("/api/instructions").await["items"], serde_json::json!([]));
    s.add("fresh").await;
    s.stop().await;
}

/// A stopped engine holds its database no longer (Windows refuses to move
/// a file someone holds, so a damaged one could not be set aside after a
/// restart in the same process). Read from this process's open files.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_stopped_engine_has_let_go_of_its_database() {
    let s = common::start(|_| {}).await;
    s.add("held while it runs").await;
    let db = s.db.canonicalize().unwrap();
    let holding = |db: &std::path::Path| {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .filter(|target| target == db)
            .count()
    };
    assert!(holding(&db) > 0, "the running engine has its database open");
    let _dir = s.stop().await;
    // Its last tasks end as the runtime gets to them: soon, not necessarily at once.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while holding(&db) > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the stopped engine still holds {} after 10 s",
            db.display()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
