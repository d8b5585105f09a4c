//! Templates and queue suffixes on the real server: templates saved,
//! replaced, listed and deleted through the API and the CLI, `add --template`
//! queueing one's text; a queue's suffix reaching the agent after the text
//! while the stored instruction stays as written, kept across a restart.

mod common;

use serde_json::{json, Value};

async fn cli(s: &common::Server, args: &[&str]) -> (bool, String, String) {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_local-mcp-server"))
        .args(args)
        .args(["--url", &s.url])
        .env_remove("LOCAL_MCP_TOKEN")
        .output()
        .await
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
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
    let (ok, out, err) = cli(
        &s,
        &["templates", "--save", "tests", "Run the tests and fix what fails."],
    )
    .await;
    assert!(ok && out.contains("saved template tests"), "{out}{err}");
    let (ok, out, _) = cli(&s, &["templates"]).await;
    assert!(ok);
    let names: Vec<&str> = out.lines().map(|l| l.split_whitespace().next().unwrap()).collect();
    assert_eq!(names, ["review", "tests"]);
    assert!(cli(&s, &["add", "--template", "review"]).await.0);
    assert!(cli(&s, &["add", "-t", "tests", "only", "in", "engine/"]).await.0);
    let (ok, _, err) = cli(&s, &["add", "--template", "missing"]).await;
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
    assert!(cli(&s, &["templates", "--delete", "tests"]).await.0);
    let left = s.get_json("/api/templates").await;
    assert_eq!(left["items"].as_array().unwrap().len(), 1);
    let (ok, _, err) = cli(&s, &["templates", "--delete", "tests"]).await;
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
