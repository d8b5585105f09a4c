//! Searching the history (`GET /api/instructions?status=consumed&q=…`):
//! words from the instruction or from the report its agent gave, as words or
//! word starts, case and accents ignored, all of them required; filters by
//! agent and time; what a person types is never FTS5 syntax; an edit before
//! delivery is what the index holds.

use crate::common;

use serde_json::{json, Value};

/// Deliver `content` to `agent`, who then reports `report` on it.
async fn deliver(s: &common::Server, content: &str, agent: &str, report: &str) -> String {
    let id = s.add(content).await["id"].as_str().unwrap().to_owned();
    let client = s.mcp().await;
    let got = common::get_user_request(&client, Some(agent)).await;
    assert_eq!(got["instruction"]["id"], id.as_str());
    // The report on it rides on the next call (which then finds the queue empty).
    common::get_user_request_with(&client, json!({"agent_id": agent, "report": report})).await;
    let _ = client.cancel().await;
    id
}

async fn found(s: &common::Server, query: &str) -> Vec<String> {
    let body: Value = s.get_json(&format!("/api/instructions?status=consumed&{query}")).await;
    body["items"]
        .as_array()
        .unwrap_or_else(|| panic!("{query}: {body}"))
        .iter()
        .map(|i| i["content"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn the_history_is_searched_by_instruction_and_report_words() {
    let s = common::start(|c| c.settings.default_wait_seconds = 0).await;
    deliver(
        &s,
        "Fix the flaky SSE reconnect test",
        "claude",
        "Done: the reconnect waits for the port now",
    )
    .await;
    deliver(
        &s,
        "Écris la doc du café",
        "copilot",
        "Ajouté une section sur l'installation",
    )
    .await;
    deliver(&s, "Bump rmcp", "claude", "Pinned rmcp to 3.9.0; all tests pass").await;

    assert_eq!(found(&s, "q=flaky").await, ["Fix the flaky SSE reconnect test"]);
    // A word from the report finds the instruction it reports on.
    assert_eq!(found(&s, "q=pinned").await, ["Bump rmcp"]);
    // Word starts, any case, accents ignored.
    assert_eq!(found(&s, "q=RECONN").await, ["Fix the flaky SSE reconnect test"]);
    assert_eq!(found(&s, "q=cafe").await, ["Écris la doc du café"]);
    // Every word must be there (in the instruction or its report).
    assert_eq!(found(&s, "q=rmcp%20pass").await, ["Bump rmcp"]);
    assert!(found(&s, "q=rmcp%20flaky").await.is_empty());
    // Agent and time filters.
    assert_eq!(found(&s, "agent=copilot").await, ["Écris la doc du café"]);
    assert_eq!(found(&s, "q=rmcp&agent=copilot").await, Vec::<String>::new());
    assert_eq!(found(&s, "since=2000-01-01").await.len(), 3);
    assert!(found(&s, "until=2000-01-01").await.is_empty());
    assert_eq!(
        found(&s, "since=2000-01-01T00:00:00%2B02:00&q=bump").await,
        ["Bump rmcp"]
    );

    // What is typed is never FTS5 syntax: quotes, stars, operators, brackets.
    for hostile in [
        "%22",
        "*",
        "NEAR(a%20b)",
        "-flaky",
        "a:b",
        "(",
        "OR",
        "%22%22%22",
        "%5E",
    ] {
        let body = s
            .get_json(&format!("/api/instructions?status=consumed&q={hostile}"))
            .await;
        assert!(body["items"].is_array(), "{hostile}: {body}");
    }
    assert_eq!(found(&s, "q=%22flaky%22").await, ["Fix the flaky SSE reconnect test"]);

    // Bad filters are refused with the reason.
    let too_long = "x".repeat(201);
    for (query, says) in [
        (format!("q={too_long}"), "at most 200"),
        ("since=yesterday".into(), "neither a date"),
    ] {
        let r = s
            .http
            .get(s.api(&format!("/api/instructions?status=consumed&{query}")))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "{query}");
        assert!(r.text().await.unwrap().contains(says));
    }
    s.stop().await;
}

#[tokio::test]
async fn an_edit_before_delivery_is_what_the_index_holds() {
    let s = common::start(|c| c.settings.default_wait_seconds = 0).await;
    let id = s.add("Refactor the tray menu").await["id"].as_str().unwrap().to_owned();
    let (status, _) = s
        .patch(
            &format!("/api/instructions/{id}"),
            json!({"content": "Refactor the connect panel"}),
        )
        .await;
    assert_eq!(status, 200);
    let client = s.mcp().await;
    common::get_user_request(&client, Some("zed-agent")).await;
    assert!(found(&s, "q=tray").await.is_empty());
    assert_eq!(found(&s, "q=panel").await, ["Refactor the connect panel"]);
    // Pending ones are not history: a search lists delivered instructions only.
    s.add("Refactor the pending thing").await;
    assert_eq!(found(&s, "q=refactor").await, ["Refactor the connect panel"]);
    s.stop().await;
}
