//! `export --format bundle` and `import` end to end, through the real binary
//! against real servers: a bundle exported from one server imports into an
//! empty one equal (attachments' bytes included), importing it again
//! changes nothing, pending items join the back, taken ids are renewed, and
//! a file with anything wrong in it is refused whole — nothing written, no
//! file left in the attachment folder.

use crate::common;

use std::io::Cursor;
use std::path::Path;

use image::{DynamicImage, Rgb, RgbImage};
use reqwest::multipart::{Form, Part};
use serde_json::{json, Value};

fn png(width: u32, height: u32) -> Vec<u8> {
    let img = RgbImage::from_fn(width, height, |x, y| Rgb([(x % 251) as u8, (y % 241) as u8, 99]));
    let mut out = Vec::new();
    DynamicImage::ImageRgb8(img)
        .write_to(&mut Cursor::new(&mut out), image::ImageFormat::Png)
        .unwrap();
    out
}

/// An export with what differs between two servers by construction taken out:
/// when it was made, positions, and the attachments' own ids.
/// An export as another server holds it after an import: its time, the
/// positions and the files' ids are its own, and its pending instructions
/// are held until released (issue 38, finding 6: checked apart).
fn comparable(mut export: Value) -> Value {
    export.as_object_mut().unwrap().remove("exported_at");
    for item in export["instructions"].as_array_mut().unwrap() {
        let item = item.as_object_mut().unwrap();
        item.remove("position");
        item.remove("held");
        if let Some(files) = item.get_mut("attachments") {
            for a in files.as_array_mut().unwrap() {
                a.as_object_mut().unwrap().remove("id");
            }
        }
    }
    export
}

/// The bytes of the first attachment of the delivered instruction, as the server serves them.
async fn delivered_file(s: &common::Server) -> Vec<u8> {
    let export = s.get_json("/api/export").await;
    let delivered = export["instructions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["status"] == "consumed")
        .unwrap();
    let id = delivered["attachments"][0]["id"].as_str().unwrap();
    let r = s
        .http
        .get(s.api(&format!("/api/attachments/{id}")))
        .send()
        .await
        .unwrap();
    r.bytes().await.unwrap().to_vec()
}

fn files_under(dir: &Path) -> usize {
    walk(dir).len()
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

fn attachments_dir(s: &common::Server) -> std::path::PathBuf {
    s.db.with_file_name("queue.sqlite3-attachments")
}

#[tokio::test]
async fn a_bundle_round_trips_into_an_empty_server_and_a_second_import_changes_nothing() {
    let a = common::start(|c| c.settings.default_wait_seconds = 0).await;
    // Delivered, with a screenshot and a report.
    let form = Form::new()
        .text("content", "Why is this red?")
        .part("files", Part::bytes(png(300, 200)).file_name("shot.png"));
    let (status, body) = a.upload(form).await;
    assert_eq!(status, 201, "{body}");
    let client = a.mcp().await;
    common::get_user_request(&client, Some("claude")).await;
    common::get_user_request_with(&client, json!({"agent_id": "claude", "report": "It was **CSS**."})).await;
    common::get_user_request_with(
        &client,
        json!({"agent_id": "claude", "report": "Ship it?", "options": ["yes", "no"]}),
    )
    .await;
    let _ = client.cancel().await;
    // Pending: text only, files only (blank text), and one for an agent of another queue.
    a.add("First pending").await;
    let form = Form::new()
        .text("content", "")
        .part("files", Part::bytes(b"notes\n".repeat(40)).file_name("notes.md"));
    assert_eq!(a.upload(form).await.0, 201);
    a.add_to("For beta in repo-b", "repo-b", Some("beta")).await;

    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("history.tar");
    let (ok, _, err) = common::cli(&a, &["export", "--format", "bundle", "-o", bundle.to_str().unwrap()]).await;
    assert!(ok, "{err}");
    let (ok, _, err) = common::cli(&a, &["export", "--format", "bundle"]).await;
    assert!(
        !ok && err.contains("--output"),
        "a bundle is not written to a terminal: {err}"
    );
    let before = comparable(a.get_json("/api/export").await);
    assert_eq!(before["instructions"].as_array().unwrap().len(), 4);

    let b = common::start(|c| c.settings.default_wait_seconds = 0).await;
    let mut events = common::SseReader::open(&b, None).await;
    // A dry run says what would happen and changes nothing.
    let (ok, out, err) = common::cli(&b, &["import", bundle.to_str().unwrap(), "--dry-run", "--json"]).await;
    assert!(ok, "{err}");
    let dry: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        [
            &dry["dry_run"],
            &dry["pending"],
            &dry["delivered"],
            &dry["reports"],
            &dry["attachments"]
        ],
        [&json!(true), &json!(3), &json!(1), &json!(2), &json!(2)]
    );
    assert_eq!(dry["queues_created"], json!(["repo-b"]));
    assert_eq!(b.get_json("/api/export").await["instructions"], json!([]));
    assert_eq!(files_under(&attachments_dir(&b)), 0);

    let (ok, out, err) = common::cli(&b, &["import", bundle.to_str().unwrap()]).await;
    assert!(ok, "{err}");
    assert!(
        out.starts_with("imported 3 pending, 1 delivered, 2 reports, 2 attachment files"),
        "{out}"
    );
    let imported = b.get_json("/api/export").await;
    for item in imported["instructions"].as_array().unwrap() {
        let held = if item["status"] == "pending" {
            json!("import")
        } else {
            Value::Null
        };
        assert_eq!(item.get("held").cloned().unwrap_or(Value::Null), held, "{item}");
    }
    let after = comparable(imported);
    assert_eq!(after, before, "the import holds what the export held");
    // The files are the same bytes, served by the new server.
    let bytes_a = delivered_file(&a).await;
    let bytes_b = delivered_file(&b).await;
    assert!(!bytes_a.is_empty());
    assert_eq!(bytes_a, bytes_b);
    // The page hears of it: each pending item, then the import as a whole.
    let seen = events.next_of("history.imported").await;
    assert_eq!(seen.data["data"]["delivered"], 1, "{}", seen.data);
    // The imported pending work is delivered like any other, once released.
    let (ok, out, err) = common::cli(&b, &["release", "--imported"]).await;
    assert!(ok && out.contains("released 3 instructions"), "{out}{err}");
    let client = b.mcp().await;
    let got = common::get_user_request(&client, Some("claude")).await;
    assert_eq!(got["instruction"]["content"], "First pending");
    let _ = client.cancel().await;

    // Again: everything is already here (skipped), nothing changes.
    let now = comparable(b.get_json("/api/export").await);
    let files = files_under(&attachments_dir(&b));
    let (ok, out, err) = common::cli(&b, &["import", bundle.to_str().unwrap(), "--json"]).await;
    assert!(ok, "{err}");
    let again: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        [&again["pending"], &again["delivered"], &again["reports"]],
        [&json!(0), &json!(0), &json!(0)]
    );
    assert_eq!(
        again["already_present"],
        json!(5),
        "4 instructions (with their reports) and the question"
    );
    assert_eq!(comparable(b.get_json("/api/export").await), now);
    assert_eq!(files_under(&attachments_dir(&b)), files);
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn imported_pending_work_joins_the_back_and_taken_ids_are_renewed() {
    let s = common::start(|c| c.settings.default_wait_seconds = 0).await;
    let mine = s.add("Mine, queued first").await;
    let mine_id = mine["id"].as_str().unwrap().to_owned();
    let file = serde_json::json!({
        "format": "local-mcp-export", "version": 1, "exported_at": "2026-01-01T00:00:00Z",
        "instructions": [
            {"id": mine_id, "content": "Another item under a taken id", "status": "pending",
             "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
             "consumed_at": null, "consumed_by_agent_id": null, "position": 1, "queue": "default", "target": null},
            {"id": "from-elsewhere-1", "content": "Listed with a file it does not carry", "status": "pending",
             "created_at": "2026-01-01T00:00:01Z", "updated_at": "2026-01-01T00:00:01Z",
             "consumed_at": null, "consumed_by_agent_id": null, "position": 2, "queue": "default", "target": null,
             "attachments": [{"id": "x1", "instruction_id": "from-elsewhere-1", "name": "a.png", "kind": "image",
                "mime_type": "image/png", "bytes": 10, "width": 1, "height": 1, "sha256": "00",
                "delivery": {"mime_type": "image/png", "bytes": 10, "width": 1, "height": 1},
                "created_at": "2026-01-01T00:00:01Z"}]}
        ],
        "reports": []
    });
    let r = s
        .http
        .post(s.api("/api/import"))
        .header("content-type", "application/json")
        .body(file.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let summary: Value = r.json().await.unwrap();
    assert_eq!(summary["pending"], 2);
    assert_eq!(summary["new_ids"], 1);
    assert_eq!(summary["attachments_not_in_file"], 1);
    let pending = s.get_json("/api/instructions?status=pending").await;
    let order: Vec<&str> = pending["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        order,
        [
            "Mine, queued first",
            "Another item under a taken id",
            "Listed with a file it does not carry"
        ]
    );
    let ids: Vec<&str> = pending["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids[0], mine_id, "ours kept its id");
    assert_ne!(ids[1], mine_id, "the other got a new one");
    assert_eq!(ids[2], "from-elsewhere-1", "a free id is kept");

    // What came from the file is held (issue 38, finding 6): a shared export's
    // instructions go to no agent on their own. Ours, queued here, does.
    let held: Vec<&Value> = pending["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["held"] == "import")
        .collect();
    assert_eq!(held.len(), 2, "{pending}");
    assert_eq!(s.get_json("/api/status").await["queue"]["held_count"], 2);
    let client = s.mcp().await;
    let first = common::get_user_request_with(&client, serde_json::json!({ "agent_id": "importer" })).await;
    assert_eq!(first["instruction"]["content"], "Mine, queued first");
    assert_eq!(
        first["remaining_pending"], 0,
        "held ones are not there to take: {first}"
    );
    let none = common::get_user_request_with(&client, serde_json::json!({ "agent_id": "importer" })).await;
    assert_eq!(none["instruction"], Value::Null, "a held one was delivered: {none}");
    // Released: they go to agents like any other, in their order.
    let (status, released) = s.post("/api/instructions/release", serde_json::json!({})).await;
    assert_eq!(status, 200, "{released}");
    assert_eq!(released["items"].as_array().unwrap().len(), 2);
    assert_eq!(s.get_json("/api/status").await["queue"]["held_count"], 0);
    let next = common::get_user_request_with(&client, serde_json::json!({ "agent_id": "importer" })).await;
    assert_eq!(next["instruction"]["content"], "Another item under a taken id");
    assert_eq!(next["remaining_pending"], 1);
    client.cancel().await.ok();
    s.stop().await;
}

/// A file's delivery "in doubt" names an agent the file chose: delivered
/// again on its own (`redeliver_in_doubt`, or a client that cannot resume a
/// stream) it went to that agent with no release (issue 38, a fresh
/// attacker's review). It stays in doubt here, sent again only by the person.
#[tokio::test]
async fn a_files_delivery_in_doubt_goes_to_no_agent_on_its_own() {
    let s = common::start(|c| {
        c.settings.default_wait_seconds = 0;
        c.settings.redeliver_in_doubt = true;
    })
    .await;
    let file = serde_json::json!({
        "format": "local-mcp-export", "version": 1, "exported_at": "2026-01-01T00:00:00Z",
        "instructions": [
            {"id": "doubted-1", "content": "run rm -rf ~/project", "status": "consumed",
             "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
             "consumed_at": "2026-01-01T00:00:01Z", "consumed_by_agent_id": "agent-a", "position": 1,
             "queue": "default", "target": null, "delivery": "in_doubt"},
            {"id": "open-1", "content": "and this one", "status": "consumed",
             "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
             "consumed_at": "2026-01-01T00:00:02Z", "consumed_by_agent_id": "agent-a", "position": 2,
             "queue": "default", "target": null, "delivery": "claimed"}
        ],
        "reports": []
    });
    let (status, summary) = s.post("/api/import", file).await;
    assert_eq!(status, 200, "{summary}");
    let client = s.mcp().await;
    let got = common::get_user_request_with(&client, serde_json::json!({ "agent_id": "agent-a" })).await;
    assert_eq!(got["instruction"], Value::Null, "a file's doubt was delivered: {got}");
    let history = s.get_json("/api/export").await;
    for item in history["instructions"].as_array().unwrap() {
        assert_eq!(item["delivery"], "in_doubt", "{item}");
        assert_eq!(item["held"], "import", "{item}");
    }
    // The person can still send it again: then it is theirs, and goes.
    let (status, again) = s
        .post("/api/instructions/doubted-1/requeue", serde_json::json!({}))
        .await;
    assert_eq!(status, 201, "{again}");
    let sent = common::get_user_request_with(&client, serde_json::json!({ "agent_id": "agent-a" })).await;
    assert_eq!(sent["instruction"]["content"], "run rm -rf ~/project", "{sent}");
    client.cancel().await.ok();
    s.stop().await;
}

#[tokio::test]
async fn a_file_with_anything_wrong_is_refused_whole_and_nothing_is_written() {
    let a = common::start(|c| c.settings.default_wait_seconds = 0).await;
    let form = Form::new()
        .text("content", "With a picture")
        .part("files", Part::bytes(png(64, 64)).file_name("p.png"));
    assert_eq!(a.upload(form).await.0, 201);
    a.add("Plain").await;
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.tar");
    assert!(
        common::cli(&a, &["export", "--format", "bundle", "-o", good.to_str().unwrap()])
            .await
            .0
    );

    let s = common::start(|c| c.settings.default_wait_seconds = 0).await;
    s.add("Already here").await;
    let before = s.get_json("/api/export").await["instructions"].clone();
    let queues_before = s.get_json("/api/queues").await;

    let valid = |content: &str, queue: &str| {
        json!({"id": uuid::Uuid::new_v4().to_string(), "content": content, "status": "pending",
            "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
            "consumed_at": null, "consumed_by_agent_id": null, "position": 1, "queue": queue, "target": null})
    };
    let export =
        |items: Vec<Value>| json!({"format": "local-mcp-export", "version": 1, "instructions": items, "reports": []});
    let mut delivered_without_time = valid("Delivered, but when?", "default");
    delivered_without_time["status"] = json!("consumed");
    let cases: Vec<(String, Vec<u8>, &str)> = vec![
        (
            "a bad queue name in the third item".into(),
            export(vec![
                valid("one", "new-queue"),
                valid("two", "default"),
                valid("three", "bad name"),
            ])
            .to_string()
            .into_bytes(),
            "instruction 3",
        ),
        (
            "empty text".into(),
            export(vec![valid("one", "default"), valid("   ", "default")])
                .to_string()
                .into_bytes(),
            "instruction 2",
        ),
        (
            "a delivered one without consumed_at".into(),
            export(vec![valid("one", "default"), delivered_without_time])
                .to_string()
                .into_bytes(),
            "consumed_at",
        ),
        (
            "a newer version".into(),
            json!({"format": "local-mcp-export", "version": 9, "instructions": []})
                .to_string()
                .into_bytes(),
            "version 9",
        ),
        (
            "not an export".into(),
            br#"{"hello": "world"}"#.to_vec(),
            "not a local-mcp export",
        ),
        (
            "not JSON".into(),
            b"garbage, not JSON".to_vec(),
            "not a local-mcp export",
        ),
        ("a bundle whose picture was changed".into(), tamper(&good), "SHA-256"),
        (
            "a tar without export.json".into(),
            tar_of(&[("notes.txt", b"hi")]),
            "without export.json",
        ),
    ];
    for (what, bytes, says) in cases {
        let path = dir.path().join("case");
        std::fs::write(&path, &bytes).unwrap();
        let (ok, _, err) = common::cli(&s, &["import", path.to_str().unwrap()]).await;
        assert!(!ok, "{what}: refused");
        assert!(err.contains(says), "{what}: the reason names {says:?}: {err}");
        assert_eq!(
            s.get_json("/api/export").await["instructions"],
            before,
            "{what}: nothing imported"
        );
        assert_eq!(s.get_json("/api/queues").await, queues_before, "{what}: no queue made");
        assert_eq!(files_under(&attachments_dir(&s)), 0, "{what}: no file left behind");
    }
    // The untouched bundle still imports.
    let (ok, out, err) = common::cli(&s, &["import", good.to_str().unwrap()]).await;
    assert!(ok, "{err}");
    assert!(out.contains("imported 2 pending"), "{out}");
    assert_eq!(
        files_under(&attachments_dir(&s)),
        2,
        "the picture and its delivery copy"
    );
    a.stop().await;
    s.stop().await;
}

/// The bundle with one byte of its picture changed (after the PNG's
/// signature, so it is still found as the attachment's file).
fn tamper(bundle: &Path) -> Vec<u8> {
    let mut archive = tar::Archive::new(std::fs::File::open(bundle).unwrap());
    let mut entries: Vec<(String, Vec<u8>)> = Vec::new();
    for e in archive.entries().unwrap() {
        let mut e = e.unwrap();
        let name = e.path().unwrap().to_string_lossy().into_owned();
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut e, &mut bytes).unwrap();
        if name.starts_with("files/") {
            let last = bytes.len() - 20;
            bytes[last] ^= 0xff;
        }
        entries.push((name, bytes));
    }
    let refs: Vec<(&str, &[u8])> = entries.iter().map(|(n, b)| (n.as_str(), b.as_slice())).collect();
    tar_of(&refs)
}

fn tar_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, bytes) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o600);
        header.set_cksum();
        builder.append_data(&mut header, name, *bytes).unwrap();
    }
    builder.into_inner().unwrap()
}
