//! `backup` while instructions are being added, then `restore` with the
//! server stopped: the restored database passes `integrity_check` (restore
//! checks before it replaces anything) and holds every write acknowledged
//! before the backup began, attachments included; what it replaced is kept
//! aside; a file that is not a backup changes nothing.

use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::Value;

fn run(root: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_local-mcp-server"))
        .args(args)
        .env("DB_PATH", root.join("q.sqlite3"))
        .env("LOCAL_MCP_CONNECTION_FILE", root.join("connection.json"))
        .env("LOCAL_MCP_TOKEN_FILE", root.join("token"))
        .env("LOCAL_MCP_LOG_DIR", "off")
        .env("HTTP_PORT", "0")
        .env("HOME", root.join("home"))
        .env_remove("LOCAL_MCP_URL")
        .env_remove("API_TOKEN")
        .output()
        .unwrap()
}

fn ok(o: Output) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "{text}");
    text
}

fn url(root: &std::path::Path) -> String {
    let info: Value = serde_json::from_slice(&std::fs::read(root.join("connection.json")).unwrap()).unwrap();
    info["url"].as_str().unwrap().to_owned()
}

async fn pending_ids(base: &str) -> Vec<String> {
    let body: Value = reqwest::get(format!("{base}/api/instructions?status=pending&limit=1000"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_under_write_load_restores_every_acknowledged_write() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_path_buf();
    ok(run(&root, &["start"]));
    let base = url(&root);
    let note = root.join("note.txt");
    std::fs::write(&note, "attached before the backup\n").unwrap();
    ok(run(&root, &["add", "--attach", note.to_str().unwrap(), "with a file"]));

    // A writer adding instructions as fast as the server acknowledges them.
    let acked: Arc<Mutex<Vec<(String, Instant)>>> = Arc::default();
    let writer = {
        let (acked, base) = (acked.clone(), base.clone());
        tokio::spawn(async move {
            let http = reqwest::Client::new();
            for n in 0..400 {
                let r = http
                    .post(format!("{base}/api/instructions"))
                    .json(&serde_json::json!({ "content": format!("load {n}") }))
                    .send()
                    .await;
                let Ok(r) = r else { break };
                if r.status() != 201 {
                    break;
                }
                let body: Value = r.json().await.unwrap();
                acked
                    .lock()
                    .unwrap()
                    .push((body["item"]["id"].as_str().unwrap().to_owned(), Instant::now()));
            }
        })
    };
    while acked.lock().unwrap().len() < 50 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let began = Instant::now();
    let archive = root.join("backup.tar");
    let said = tokio::task::spawn_blocking({
        let (root, archive) = (root.clone(), archive.clone());
        move || ok(run(&root, &["backup", archive.to_str().unwrap()]))
    })
    .await
    .unwrap();
    assert!(said.contains("backup written to"), "{said}");
    writer.await.unwrap();
    let before: Vec<String> = acked
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, at)| *at < began)
        .map(|(id, _)| id.clone())
        .collect();
    assert!(before.len() >= 50);
    ok(run(&root, &["stop"]));

    // Garbage is refused whole: nothing moved, nothing replaced.
    let bogus = root.join("bogus.tar");
    std::fs::write(&bogus, b"not an archive at all").unwrap();
    let refused = run(&root, &["restore", bogus.to_str().unwrap()]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("not a local-mcp backup"));
    assert!(root.join("q.sqlite3").exists());

    let said = ok(run(&root, &["restore", archive.to_str().unwrap()]));
    assert!(said.contains("what it replaced is in"), "{said}");
    ok(run(&root, &["start"]));
    let base = url(&root);
    let ids = pending_ids(&base).await;
    for id in &before {
        assert!(
            ids.contains(id),
            "write {id}, acknowledged before the backup began, is in it"
        );
    }
    // The attachment came back with its row.
    let body: Value = reqwest::get(format!("{base}/api/instructions?status=pending&limit=1"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let file = &body["items"][0]["attachments"][0];
    let bytes = reqwest::get(format!("{base}/api/attachments/{}", file["id"].as_str().unwrap()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(bytes, "attached before the backup\n");
    ok(run(&root, &["stop"]));
}
