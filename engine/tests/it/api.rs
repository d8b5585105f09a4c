//! The HTTP API over real HTTP against the real server (port 0, temp database).

use crate::common;

use serde_json::{json, Value};

#[tokio::test]
async fn create_list_edit_delete_and_their_errors() {
    let s = common::start(|_| {}).await;
    let health = s.get_json("/healthz").await;
    assert_eq!(health["status"], "ok");

    let a = s.add("first").await;
    let b = s.add("  second, indented  ").await;
    assert_eq!(a["status"], "pending");
    assert_eq!(b["content"], "  second, indented  ", "text is kept as typed");
    assert!(b["position"].as_i64() > a["position"].as_i64());

    let items = s.get_json("/api/instructions?status=pending").await["items"].clone();
    let ids: Vec<&str> = items
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [a["id"].as_str().unwrap(), b["id"].as_str().unwrap()]);

    let id = a["id"].as_str().unwrap();
    let r = s
        .http
        .patch(s.api(&format!("/api/instructions/{id}")))
        .json(&json!({"content": "first, edited"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let edited: Value = r.json().await.unwrap();
    assert_eq!(edited["item"]["content"], "first, edited");

    // Whitespace, wrong shapes, wrong types, unknown fields, bad JSON.
    for (body, status) in [
        (json!({"content": "   \n\t"}), 400),
        (json!({"content": ""}), 400),
        (json!({"content": 5}), 422),
        (json!({}), 422),
        (json!({"content": "x", "extra": 1}), 422),
    ] {
        let r = s
            .http
            .post(s.api("/api/instructions"))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), status, "body {body}");
        let e: Value = r.json().await.unwrap();
        assert!(
            e["error"]["code"].is_string() && e["error"]["message"].is_string(),
            "{e}"
        );
    }
    let r = s
        .http
        .post(s.api("/api/instructions"))
        .header("content-type", "application/json")
        .body("{\"content\": ")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(r.json::<Value>().await.unwrap()["error"]["code"], "invalid_json");
    let big = "x".repeat(64 * 1024 + 1);
    let r = s
        .http
        .post(s.api("/api/instructions"))
        .json(&json!({"content": big}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
    let huge = "x".repeat(1024 * 1024 + 10);
    let r = s
        .http
        .post(s.api("/api/instructions"))
        .json(&json!({"content": huge}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);

    // Missing ids are 404 for every verb.
    for r in [
        s.http
            .patch(s.api("/api/instructions/nope"))
            .json(&json!({"content": "x"}))
            .send()
            .await
            .unwrap(),
        s.http.delete(s.api("/api/instructions/nope")).send().await.unwrap(),
        s.http.get(s.api("/api/instructions/nope")).send().await.unwrap(),
        s.http
            .post(s.api("/api/instructions/nope/requeue"))
            .json(&json!({}))
            .send()
            .await
            .unwrap(),
    ] {
        assert_eq!(r.status(), 404);
        assert_eq!(r.json::<Value>().await.unwrap()["error"]["code"], "not_found");
    }

    // Consume the head, then editing or deleting it is 409 with a reason.
    let client = s.mcp().await;
    let got = common::get_user_request(&client, Some("agent-x")).await;
    assert_eq!(got["instruction"]["id"], id);
    let r = s
        .http
        .patch(s.api(&format!("/api/instructions/{id}")))
        .json(&json!({"content": "too late"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 409);
    let msg = r.json::<Value>().await.unwrap()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(msg.contains("agent-x"), "the conflict names who took it: {msg}");
    let r = s
        .http
        .delete(s.api(&format!("/api/instructions/{id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 409);

    // Delete the pending one: 204, then gone.
    let bid = b["id"].as_str().unwrap();
    let r = s
        .http
        .delete(s.api(&format!("/api/instructions/{bid}")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    assert_eq!(s.get_json("/api/instructions?status=pending").await["items"], json!([]));

    let consumed = s.get_json("/api/instructions?status=consumed").await["items"].clone();
    assert_eq!(consumed[0]["status"], "consumed");
    assert_eq!(consumed[0]["consumed_by_agent_id"], "agent-x");
    assert_eq!(consumed[0]["content"], "first, edited");

    let r = s
        .http
        .get(s.api("/api/instructions?status=bogus"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(r.json::<Value>().await.unwrap()["error"]["code"], "invalid_request");
    let r = s.http.get(s.api("/no/such/route")).send().await.unwrap();
    assert_eq!(r.status(), 404);
    let r = s.http.put(s.api("/api/status")).json(&json!({})).send().await.unwrap();
    assert_eq!(r.status(), 405);
    assert!(r.json::<Value>().await.unwrap()["error"]["code"].is_string());
    s.stop().await;
}

#[tokio::test]
async fn reorder_and_send_again() {
    let s = common::start(|_| {}).await;
    let ids: Vec<String> = {
        let mut v = Vec::new();
        for c in ["a", "b", "c", "d"] {
            v.push(s.add(c).await["id"].as_str().unwrap().to_owned());
        }
        v
    };
    let order = |items: &Value| -> Vec<String> {
        items
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["content"].as_str().unwrap().to_owned())
            .collect()
    };
    let mv = |id: &str, body: Value| {
        s.http
            .post(s.api(&format!("/api/instructions/{id}/move")))
            .json(&body)
            .send()
    };

    let r = mv(&ids[3], json!({"before_id": ids[0]})).await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(order(&r.json::<Value>().await.unwrap()["items"]), ["d", "a", "b", "c"]);
    let r = mv(&ids[0], json!({"after_id": ids[2]})).await.unwrap();
    assert_eq!(order(&r.json::<Value>().await.unwrap()["items"]), ["d", "b", "c", "a"]);
    let r = mv(&ids[2], json!({"to": "front"})).await.unwrap();
    assert_eq!(order(&r.json::<Value>().await.unwrap()["items"]), ["c", "d", "b", "a"]);
    let r = mv(&ids[2], json!({"to": "back"})).await.unwrap();
    assert_eq!(order(&r.json::<Value>().await.unwrap()["items"]), ["d", "b", "a", "c"]);
    assert_eq!(
        order(&s.get_json("/api/instructions?status=pending").await["items"]),
        ["d", "b", "a", "c"]
    );
    for bad in [
        json!({}),
        json!({"before_id": ids[0], "to": "front"}),
        json!({"before_id": ids[1].clone()}),
    ] {
        let target = if bad.get("before_id") == Some(&json!(ids[1])) {
            &ids[1]
        } else {
            &ids[0]
        };
        let r = mv(target, bad.clone()).await.unwrap();
        assert_eq!(r.status(), 400, "{bad}");
    }

    // Delivery follows the new order.
    let client = s.mcp().await;
    let got = common::get_user_request(&client, Some("r")).await;
    assert_eq!(got["instruction"]["content"], "d");
    assert_eq!(got["remaining_pending"], 3);
    // A consumed instruction cannot be moved, but can be sent again (to the front by default).
    let r = mv(&ids[3], json!({"to": "back"})).await.unwrap();
    assert_eq!(r.status(), 409);
    let r = s
        .http
        .post(s.api(&format!("/api/instructions/{}/requeue", ids[3])))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let again: Value = r.json().await.unwrap();
    assert_eq!(again["item"]["content"], "d");
    assert_eq!(again["item"]["status"], "pending");
    assert_ne!(
        again["item"]["id"],
        ids[3].as_str(),
        "a new instruction, the ledger keeps the old one"
    );
    assert_eq!(
        order(&s.get_json("/api/instructions?status=pending").await["items"]),
        ["d", "b", "a", "c"]
    );
    let r = s
        .http
        .post(s.api(&format!("/api/instructions/{}/requeue", ids[1])))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 409, "a pending instruction cannot be sent again");
    let r = s
        .http
        .post(s.api(&format!("/api/instructions/{}/requeue", ids[3])))
        .json(&json!({"to": "back"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    assert_eq!(
        order(&s.get_json("/api/instructions?status=pending").await["items"]),
        ["d", "b", "a", "c", "d"]
    );
    s.stop().await;
}

#[tokio::test]
async fn config_is_validated_and_survives_a_restart_with_the_queue() {
    let s = common::start(|c| c.settings.default_wait_seconds = 7).await;
    assert_eq!(s.get_json("/api/config").await["default_wait_seconds"], 7);
    let updated = s
        .set_config(json!({"default_wait_seconds": 3, "default_empty_response": null}))
        .await;
    assert_eq!(updated["default_wait_seconds"], 3);
    assert_eq!(updated["default_empty_response"], "");
    assert_eq!(updated["agent_stale_after_seconds"], 30);
    for bad in [
        json!({"default_wait_seconds": 86401}),
        json!({"default_wait_seconds": -1}),
        json!({"default_wait_seconds": "5"}),
        json!({"agent_stale_after_seconds": 0}),
        json!({"unknown": 1}),
    ] {
        let r = s.http.patch(s.api("/api/config")).json(&bad).send().await.unwrap();
        assert!(r.status() == 400 || r.status() == 422, "{bad} gave {}", r.status());
    }
    assert_eq!(
        s.get_json("/api/config").await["default_wait_seconds"],
        3,
        "a refused patch changes nothing"
    );
    s.add("keep me").await;
    let kept = s.add("and me").await;
    let client = s.mcp().await;
    common::get_user_request(&client, Some("before-restart")).await;
    drop(client);

    // Restart on the same database, with a different first-run value: stored settings rule.
    let dir = s.stop().await;
    let s = common::start_in(dir, |c| c.settings.default_wait_seconds = 9).await;
    assert_eq!(s.get_json("/api/config").await["default_wait_seconds"], 3);
    let all = s.get_json("/api/instructions").await["items"].clone();
    assert_eq!(all.as_array().unwrap().len(), 2);
    assert_eq!(all[0]["id"], kept["id"], "pending first");
    assert_eq!(all[1]["status"], "consumed");
    let status = s.get_json("/api/status").await;
    assert_eq!(
        status["queue"],
        json!({"pending_count": 1, "consumed_count": 1, "in_doubt_count": 0, "held_count": 0})
    );
    assert_eq!(
        status["agents"][0]["agent_id"], "before-restart",
        "agent activity is stored too"
    );
    assert_eq!(status["server"]["status"], "up");
    assert_eq!(status["server"]["url"], s.url.as_str());
    s.stop().await;
}

#[tokio::test]
async fn the_ledger_pages_newest_first() {
    let s = common::start(|_| {}).await;
    for i in 0..5 {
        s.add(&format!("n{i}")).await;
    }
    let client = s.mcp().await;
    for _ in 0..5 {
        common::get_user_request(&client, Some("pager")).await;
    }
    let page = |q: &'static str| s.get_json(q);
    let first = page("/api/instructions?status=consumed&limit=2").await["items"].clone();
    let second = page("/api/instructions?status=consumed&limit=2&offset=2").await["items"].clone();
    let names = |v: &Value| {
        v.as_array()
            .unwrap()
            .iter()
            .map(|i| i["content"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&first), ["n4", "n3"]);
    assert_eq!(names(&second), ["n2", "n1"]);
    s.stop().await;
}

#[tokio::test]
async fn the_openapi_document_covers_every_api_route_and_the_docs_page_is_local() {
    let s = common::start(|_| {}).await;
    let doc = s.get_json("/api/openapi.json").await;
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let paths = doc["paths"].as_object().unwrap();
    // Every route of the router (http/mod.rs) but the document itself, its page and /mcp.
    let routes = [
        ("/healthz", "get"),
        ("/api/status", "get"),
        ("/api/instructions", "get"),
        ("/api/instructions", "post"),
        ("/api/instructions/{id}", "get"),
        ("/api/instructions/{id}", "patch"),
        ("/api/instructions/{id}", "delete"),
        ("/api/instructions/{id}/requeue", "post"),
        ("/api/instructions/{id}/move", "post"),
        ("/api/instructions/release", "post"),
        ("/api/agents/forget", "post"),
        ("/api/instructions/{id}/attachments", "post"),
        ("/api/instructions/{id}/attachments/{attachment_id}", "delete"),
        ("/api/attachments/{attachment_id}", "get"),
        ("/api/queues", "get"),
        ("/api/queues", "post"),
        ("/api/queues/{name}", "get"),
        ("/api/queues/{name}", "patch"),
        ("/api/hold", "post"),
        ("/api/release", "post"),
        ("/api/agents/stop", "post"),
        ("/api/reports", "get"),
        ("/api/reports/{id}/reply", "post"),
        ("/api/config", "get"),
        ("/api/config", "patch"),
        ("/api/config/fields", "get"),
        ("/api/clients", "get"),
        ("/api/connect", "get"),
        ("/api/connect", "post"),
        ("/api/disconnect", "post"),
        ("/api/connect/update", "post"),
        ("/api/connect/backups", "get"),
        ("/api/connect/link", "post"),
        ("/api/backup", "get"),
        ("/api/export", "get"),
        ("/api/import", "post"),
        ("/api/templates", "get"),
        ("/api/templates/{name}", "get"),
        ("/api/templates/{name}", "put"),
        ("/api/templates/{name}", "delete"),
        ("/api/templates/{name}/files", "post"),
        ("/api/templates/{name}/files/{ordinal}", "get"),
        ("/api/templates/{name}/files/{ordinal}", "delete"),
        ("/api/events", "get"),
        ("/api/session", "get"),
        ("/api/session", "post"),
        ("/api/session", "delete"),
        ("/api/token", "get"),
        ("/api/token", "post"),
        ("/api/phone", "get"),
        ("/api/phone/start", "post"),
        ("/api/phone/stop", "post"),
        ("/api/phone/code", "post"),
        ("/api/phone/devices/{id}", "patch"),
        ("/api/phone/devices/{id}", "delete"),
        ("/api/phone/pair", "post"),
        ("/api/phone/me", "get"),
    ];
    for (path, method) in routes {
        assert!(
            paths.get(path).and_then(|p| p.get(method)).is_some(),
            "{method} {path} is documented"
        );
    }
    let documented: usize = paths.values().map(|p| p.as_object().unwrap().len()).sum();
    assert_eq!(documented, routes.len(), "nothing documented that does not exist");
    // The documented body of a create is what the server takes.
    let create = &doc["components"]["schemas"]["NewInstruction"];
    assert_eq!(create["required"], json!(["content"]));
    assert!(create["properties"]["queue"].is_object() && create["properties"]["target"].is_object());

    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = client.get(s.api("/api/docs")).send().await.unwrap();
    assert_eq!(r.headers()["location"], "/api.html");
    let page = s.http.get(s.api("/api.html")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(
        html.contains("js/apidocs.js") && !html.contains("https://"),
        "a local page, no CDN"
    );
    s.stop().await;
}

#[tokio::test]
async fn clients_snippets_come_from_the_engine_and_never_carry_the_token() {
    let s = common::start(|c| c.api_token = Some("s3cret-token".into())).await;
    let r = s
        .http
        .get(s.api("/api/clients"))
        .bearer_auth("s3cret-token")
        .send()
        .await
        .unwrap();
    let body: Value = r.json().await.unwrap();
    let clients = body["clients"].as_array().unwrap();
    let ids: Vec<_> = clients.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "vscode",
            "vscode-insiders",
            "claude-code",
            "claude-code-project",
            "cursor",
            "codex",
            "windsurf",
            "claude-desktop",
            "gemini-cli",
            "copilot-cli",
            "cline",
            "opencode",
            "zed",
            "lm-studio",
            "goose"
        ]
    );
    let text = body.to_string();
    assert!(!text.contains("s3cret-token"), "the page never sees the token");
    assert!(text.contains("<your API token>") && text.contains(&format!("{}/mcp", s.url)));
    // A queue's snippets point at its URL; the stdio bridge gets --queue.
    let body: Value = s
        .http
        .get(s.api("/api/clients?queue=Repo-A"))
        .bearer_auth("s3cret-token")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(body["queue"], "repo-a");
    assert_eq!(body["mcp_url"], format!("{}/mcp/q/repo-a", s.url));
    let text = body.to_string();
    assert!(
        text.contains("/mcp/q/repo-a") && text.contains(r#"\"--queue\""#),
        "{text}"
    );
    s.stop().await;
}

/// Connect requests a person could get wrong are refused before any file is
/// looked at (the writes themselves are tested in `connect.rs`, in a home of
/// their own, and by the page test).
#[tokio::test]
async fn connect_requests_are_checked_first() {
    let s = common::start(|_| {}).await;
    // A folder that exists, absolute on every platform (`/` is not on Windows).
    let folder = std::env::temp_dir();
    for (path, body, status, says) in [
        ("/api/connect", json!({"client": "emacs"}), 422, "unknown variant"),
        (
            "/api/connect",
            json!({"client": "vscode", "project": "relative/dir"}),
            400,
            "absolute path",
        ),
        (
            "/api/connect",
            json!({"client": "vscode", "project": "/no/such/folder/anywhere"}),
            404,
            "not a folder",
        ),
        (
            "/api/connect",
            json!({"client": "cline", "project": folder}),
            409,
            "no project-level",
        ),
        (
            "/api/connect",
            json!({"client": "cursor", "hooks": true}),
            409,
            "only claude code",
        ),
        (
            "/api/connect",
            json!({"client": "vscode", "queue": "bad name!"}),
            400,
            "queue",
        ),
        ("/api/disconnect", json!({"client": "emacs"}), 422, "unknown variant"),
        ("/api/connect/link", json!({"client": "codex"}), 409, "no install link"),
        (
            "/api/connect",
            json!({"client": "vscode", "surprise": 1}),
            422,
            "surprise",
        ),
    ] {
        let r = s.http.post(s.api(path)).json(&body).send().await.unwrap();
        assert_eq!(r.status().as_u16(), status, "{path} {body}");
        let text = r.text().await.unwrap();
        assert!(text.to_lowercase().contains(says), "{path} {body}: {text}");
    }
    s.stop().await;
}
