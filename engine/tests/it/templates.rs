//! Templates and queue suffixes on the real server: templates saved,
//! replaced, listed and deleted through the API and the CLI, `add --template`
//! queueing one's text and files; a template's files kept across a restart
//! (the start-up sweep knows them) and gone with it; a queue's suffix
//! reaching the agent after the text while the stored instruction stays as
//! written, kept across a restart.

use crate::common;

use std::io::Cursor;

use image::{DynamicImage, Rgb, RgbImage};
use reqwest::multipart::{Form, Part};
use serde_json::{json, Value};

fn png(width: u32, height: u32) -> Vec<u8> {
    let img = RgbImage::from_fn(width, height, |x, y| Rgb([(x % 251) as u8, 40, (y % 241) as u8]));
    let mut out = Vec::new();
    DynamicImage::ImageRgb8(img)
        .write_to(&mut Cursor::new(&mut out), image::ImageFormat::Png)
        .unwrap();
    out
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(bytes))
}

async fn upload(s: &common::Server, name: &str, form: Form) -> (u16, Value) {
    let r = s
        .http
        .post(s.api(&format!("/api/templates/{name}/files")))
        .multipart(form)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

async fn put(s: &common::Server, name: &str, body: Value) -> (u16, Value) {
    let r = s
        .http
        .put(s.api(&format!("/api/templates/{name}")))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn templates_are_saved_listed_used_and_deleted() {
    let s = common::start(|c| c.settings.default_wait_seconds = 0).await;
    let (status, body) = put(&s, "Review", json!({"content": "Review the diff for bugs."})).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["item"]["name"], "review", "names are lower-cased");
    let (status, _) = put(&s, "review", json!({"content": "Review the diff for bugs and tests."})).await;
    assert_eq!(status, 200, "saving under the same name replaces");
    for (name, body, code, says) in [
        ("-dash", json!({"content": "x"}), 400, "template name"),
        ("ok", json!({"content": "   "}), 400, "empty"),
        ("ok", json!({"content": "x", "extra": 1}), 422, "extra"),
    ] {
        let (status, answer) = put(&s, name, body).await;
        assert_eq!(status, code, "{name}: {answer}");
        assert!(answer.to_string().contains(says), "{answer}");
    }
    let r = s.http.get(s.api("/api/templates/none-such")).send().await.unwrap();
    assert_eq!(r.status(), 404);

    // The CLI: save, list, use (with and without more text), delete.
    let (ok, out, err) = common::cli(
        &s,
        &["templates", "--save", "tests", "Run the tests and fix what fails."],
    )
    .await;
    assert!(ok && out.contains("saved template tests"), "{out}{err}");
    let (ok, out, _) = common::cli(&s, &["templates"]).await;
    assert!(ok);
    let names: Vec<&str> = out.lines().map(|l| l.split_whitespace().next().unwrap()).collect();
    assert_eq!(names, ["review", "tests"]);
    assert!(common::cli(&s, &["add", "--template", "review"]).await.0);
    assert!(
        common::cli(&s, &["add", "-t", "tests", "only", "in", "engine/"])
            .await
            .0
    );
    let (ok, _, err) = common::cli(&s, &["add", "--template", "missing"]).await;
    assert!(!ok && err.contains("no template named missing"), "{err}");
    let pending: Vec<String> = s.get_json("/api/instructions?status=pending").await["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        pending,
        [
            "Review the diff for bugs and tests.",
            "Run the tests and fix what fails.\n\nonly in engine/"
        ]
    );
    assert!(common::cli(&s, &["templates", "--delete", "tests"]).await.0);
    let left = s.get_json("/api/templates").await;
    assert_eq!(left["items"].as_array().unwrap().len(), 1);
    let (ok, _, err) = common::cli(&s, &["templates", "--delete", "tests"]).await;
    assert!(!ok && err.contains("no template named tests"), "{err}");
    s.stop().await;
}

#[tokio::test]
async fn a_queue_suffix_goes_with_each_delivery_and_the_stored_text_stays() {
    let s = common::start(|c| c.settings.default_wait_seconds = 0).await;
    let (status, body) = s
        .patch(
            "/api/queues/default",
            json!({"suffix": "  When done, run the tests and report.  "}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["item"]["suffix"], "When done, run the tests and report.");
    let (status, _) = s.patch("/api/queues/default", json!({"suffix": "x\u{0}"})).await;
    assert_eq!(status, 400);
    s.add("Rename the module.").await;
    let client = s.mcp().await;
    let got = common::get_user_request(&client, Some("claude")).await;
    assert_eq!(
        got["instruction"]["content"],
        "Rename the module.\n\nWhen done, run the tests and report."
    );
    let history = s.get_json("/api/instructions?status=consumed").await;
    assert_eq!(
        history["items"][0]["content"], "Rename the module.",
        "stored as written"
    );
    let _ = client.cancel().await;

    // Kept across a restart; "" removes it.
    let dir = s.stop().await;
    let s = common::start_in(dir, |c| c.settings.default_wait_seconds = 0).await;
    let queues = s.get_json("/api/queues").await;
    assert_eq!(queues["items"][0]["suffix"], "When done, run the tests and report.");
    assert_eq!(s.patch("/api/queues/default", json!({"suffix": ""})).await.0, 200);
    s.add("Plain again.").await;
    let client = s.mcp().await;
    let got = common::get_user_request(&client, Some("claude")).await;
    assert_eq!(got["instruction"]["content"], "Plain again.");
    let _ = client.cancel().await;
    s.stop().await;
}

#[tokio::test]
async fn a_templates_files_are_kept_reused_and_removed_with_it() {
    let s = common::start(|c| c.settings.default_wait_seconds = 0).await;
    assert_eq!(
        put(&s, "shot", json!({"content": "What is wrong in this screenshot?"}))
            .await
            .0,
        201
    );
    let picture = png(320, 200);
    let notes = b"steps:\n1. open\n2. click\n".to_vec();
    let form = Form::new()
        .part("files", Part::bytes(picture.clone()).file_name("screen.png"))
        .part("files", Part::bytes(notes.clone()).file_name("steps.md"));
    let (status, body) = upload(&s, "shot", form).await;
    assert_eq!(status, 200, "{body}");
    let files = body["item"]["files"].as_array().unwrap();
    assert_eq!(
        files
            .iter()
            .map(|f| (f["name"].as_str().unwrap(), f["kind"].as_str().unwrap()))
            .collect::<Vec<_>>(),
        [("screen.png", "image"), ("steps.md", "text")]
    );
    assert_eq!(files[0]["sha256"], sha256(&picture));
    // Refused like an instruction's: not a file type we take, or too many.
    let (status, _) = upload(
        &s,
        "shot",
        Form::new().part("files", Part::bytes(vec![0u8, 159, 146, 150]).file_name("x.bin")),
    )
    .await;
    assert_eq!(status, 415);
    let (status, body) = upload(
        &s,
        "shot",
        Form::new().part("files", Part::bytes(Vec::new()).file_name("empty.png")),
    )
    .await;
    assert_eq!(status, 400, "an empty file: {body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("empty.png: the file is empty"),
        "{body}"
    );
    let mut many = Form::new();
    for n in 0..7 {
        many = many.part(
            "files",
            Part::bytes(format!("note {n}").into_bytes()).file_name(format!("n{n}.txt")),
        );
    }
    assert_eq!(upload(&s, "shot", many).await.0, 413, "2 + 7 is over 8");
    assert_eq!(
        upload(
            &s,
            "none-such",
            Form::new().part("files", Part::bytes(b"x".to_vec()).file_name("a.txt"))
        )
        .await
        .0,
        404
    );

    // Kept across a restart: the start-up sweep knows a template's files.
    let dir = s.stop().await;
    let s = common::start_in(dir, |c| c.settings.default_wait_seconds = 0).await;
    let served = s.http.get(s.api("/api/templates/shot/files/0")).send().await.unwrap();
    assert_eq!(served.status(), 200);
    assert_eq!(served.headers()["content-type"], "image/png");
    assert_eq!(served.bytes().await.unwrap().to_vec(), picture);

    // `add --template` queues the text with the files, as new attachments.
    let (ok, out, err) = common::cli(&s, &["add", "--template", "shot", "on the settings page"]).await;
    assert!(ok, "{out}{err}");
    assert!(out.contains("with 2 attachments"), "{out}");
    let item = &s.get_json("/api/instructions?status=pending").await["items"][0];
    assert_eq!(
        item["content"],
        "What is wrong in this screenshot?\n\non the settings page"
    );
    let shas: Vec<&str> = item["attachments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["sha256"].as_str().unwrap())
        .collect();
    assert_eq!(shas, [sha256(&picture), sha256(&notes)]);

    // The CLI saves with files too; removing one file, then the template, takes their files away.
    let picked = tempfile::tempdir().unwrap();
    let file = picked.path().join("checklist.txt");
    std::fs::write(&file, "- tests\n- docs\n").unwrap();
    let (ok, out, err) = common::cli(
        &s,
        &[
            "templates",
            "--save",
            "done",
            "Wrap up.",
            "--attach",
            file.to_str().unwrap(),
        ],
    )
    .await;
    assert!(ok && out.contains("saved template done with 1 file"), "{out}{err}");
    let r = s
        .http
        .delete(s.api("/api/templates/shot/files/1"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let left: Value = r.json().await.unwrap();
    assert_eq!(left["item"]["files"].as_array().unwrap().len(), 1);
    let folder = s.db.with_file_name("queue.sqlite3-attachments").join(".template.shot");
    assert_eq!(
        std::fs::read_dir(&folder).unwrap().count(),
        1,
        "the removed file is gone from disk"
    );
    let r = s.http.delete(s.api("/api/templates/shot")).send().await.unwrap();
    assert_eq!(r.status(), 204);
    assert!(!folder.exists(), "the template's folder went with it");
    // The instruction made from it keeps its own copies.
    let id = item["attachments"][0]["id"].as_str().unwrap();
    assert_eq!(
        s.http
            .get(s.api(&format!("/api/attachments/{id}")))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    s.stop().await;
}
