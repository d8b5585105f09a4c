//! `GET /api/export` and the `export` command: JSON holds everything as the
//! API shows it (pending first, delivered with their reports and attachment
//! lists, standalone reports apart); CSV is one correctly quoted row per
//! instruction; Markdown reads as a document; `since` and `queue` narrow it.

use crate::common;

use serde_json::{json, Value};

#[tokio::test]
async fn the_history_exports_as_json_csv_and_markdown() {
    let s = common::start(|c| c.settings.default_wait_seconds = 0).await;
    s.add("Deliver me, \"quoted\", with a comma\nand a second line").await;
    let client = s.mcp().await;
    common::get_user_request(&client, Some("claude")).await;
    common::get_user_request_with(&client, json!({"agent_id": "claude", "report": "Done: it works"})).await;
    common::get_user_request_with(
        &client,
        json!({"agent_id": "claude", "report": "Should I also bump the version?", "options": ["yes", "no"]}),
    )
    .await;
    let _ = client.cancel().await;
    s.add("Still pending").await;
    s.add_to("Other queue's", "repo-b", None).await;

    let all: Value = s.get_json("/api/export").await;
    assert_eq!(all["format"], "local-mcp-export");
    let items = all["instructions"].as_array().unwrap();
    assert_eq!(items.len(), 3);
    assert_eq!(items[0]["status"], "pending");
    let delivered = items.iter().find(|i| i["status"] == "consumed").unwrap();
    assert_eq!(delivered["consumed_by_agent_id"], "claude");
    assert_eq!(delivered["report"]["content"], "Done: it works");
    assert_eq!(all["reports"].as_array().unwrap().len(), 1, "the question stands alone");
    assert_eq!(all["reports"][0]["options"], json!(["yes", "no"]));

    let one: Value = s.get_json("/api/export?queue=repo-b").await;
    assert_eq!(one["instructions"].as_array().unwrap().len(), 1);
    let later: Value = s.get_json("/api/export?since=2999-01-01").await;
    let statuses: Vec<&str> = later["instructions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["status"].as_str().unwrap())
        .collect();
    assert!(
        statuses.iter().all(|s| *s == "pending"),
        "delivered ones before `since` are left out: {statuses:?}"
    );

    let r = s.http.get(s.api("/api/export?format=csv")).send().await.unwrap();
    assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/csv"));
    assert!(r.headers()["content-disposition"].to_str().unwrap().contains(".csv"));
    let text = r.text().await.unwrap();
    let mut rows = csv::Reader::from_reader(text.as_bytes());
    let records: Vec<csv::StringRecord> = rows.records().map(Result::unwrap).collect();
    assert_eq!(records.len(), 3);
    let row = records.iter().find(|r| &r[2] == "consumed").unwrap();
    assert_eq!(&row[7], "Deliver me, \"quoted\", with a comma\nand a second line");
    assert_eq!(&row[5], "claude");
    assert_eq!(&row[8], "Done: it works");

    let md = s
        .http
        .get(s.api("/api/export?format=md"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(md.starts_with("# local-mcp export"), "{md}");
    assert!(md.contains("## Pending (2)") && md.contains("## Delivered (1)"), "{md}");
    assert!(
        md.contains("> Done: it works") && md.contains("> Should I also bump the version?"),
        "{md}"
    );

    for (query, says) in [
        ("format=xml", "format"),
        ("since=soon", "neither a date"),
        ("queue=bad%20name", "queue"),
    ] {
        let r = s.http.get(s.api(&format!("/api/export?{query}"))).send().await.unwrap();
        assert_eq!(r.status(), 400, "{query}");
        assert!(r.text().await.unwrap().to_lowercase().contains(says), "{query}");
    }

    // The command saves the same file.
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("history.md");
    let status = tokio::process::Command::new(env!("CARGO_BIN_EXE_local-mcp-server"))
        .args(["export", "--format", "md", "--queue", "default", "-o"])
        .arg(&file)
        .args(["--url", &s.url])
        .env_remove("LOCAL_MCP_TOKEN")
        .status()
        .await
        .unwrap();
    assert!(status.success());
    let saved = std::fs::read_to_string(&file).unwrap();
    assert!(saved.contains("Deliver me") && !saved.contains("Other queue's"));
    s.stop().await;
}
