//! Resources, the agent-loop prompt and queue changes as log messages,
//! through the official Rust SDK client against the real server.
#![allow(deprecated)] // logging/setLevel: deprecated for a future protocol revision, current today

use crate::common;

use std::time::Duration;

use rmcp::model::{
    GetPromptRequestParams, LoggingLevel, LoggingMessageNotificationParam, ReadResourceRequestParams, ResourceContents,
    SetLevelRequestParams,
};
use rmcp::service::NotificationContext;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::sync::mpsc;

fn text_of(contents: &ResourceContents) -> Value {
    match contents {
        ResourceContents::TextResourceContents { text, mime_type, .. } => {
            assert_eq!(mime_type.as_deref(), Some("application/json"));
            serde_json::from_str(text).expect("JSON resource")
        }
        other => panic!("expected text contents, got {other:?}"),
    }
}

#[tokio::test]
async fn status_and_queue_resources_and_the_loop_prompt() {
    let s = common::start(|_| {}).await;
    let first = s.add("Write the changelog").await;
    s.add("Then tag the release").await;
    let client = s.mcp().await;

    let info = client.peer_info().expect("server info");
    assert!(info.capabilities.resources.is_some() && info.capabilities.prompts.is_some());

    let listed = client.list_resources(None).await.unwrap();
    let uris: Vec<_> = listed.resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, ["local-mcp://status", "local-mcp://queue", "local-mcp://reports"]);

    let queue = client
        .read_resource(ReadResourceRequestParams::new("local-mcp://queue"))
        .await
        .unwrap();
    let queue = text_of(&queue.contents[0]);
    assert_eq!(queue["pending_count"], 2);
    assert_eq!(queue["items"][0]["id"], first["id"]);
    assert_eq!(queue["items"][0]["content"], "Write the changelog");

    let status = client
        .read_resource(ReadResourceRequestParams::new("local-mcp://status"))
        .await
        .unwrap();
    assert_eq!(text_of(&status.contents[0])["queue"]["pending_count"], 2);

    // Reading is read-only: nothing was consumed.
    assert_eq!(s.get_json("/api/status").await["queue"]["pending_count"], 2);
    let missing = client
        .read_resource(ReadResourceRequestParams::new("local-mcp://nope"))
        .await
        .unwrap_err();
    assert!(missing.to_string().contains("local-mcp://status"), "{missing}");

    let prompts = client.list_prompts(None).await.unwrap();
    assert_eq!(prompts.prompts.len(), 1);
    assert_eq!(prompts.prompts[0].name, "agent-loop");
    let mut args = serde_json::Map::new();
    args.insert("agent_id".into(), "codex-myrepo".into());
    let prompt = client
        .get_prompt(GetPromptRequestParams::new("agent-loop").with_arguments(args))
        .await
        .unwrap();
    let text = serde_json::to_string(&prompt.messages).unwrap();
    assert!(
        text.contains("get_user_request") && text.contains("codex-myrepo"),
        "{text}"
    );
    assert!(client.get_prompt(GetPromptRequestParams::new("other")).await.is_err());

    client.cancel().await.unwrap();
    s.stop().await;
}

/// Records the log messages the server sends.
#[derive(Clone)]
struct Listener(mpsc::UnboundedSender<LoggingMessageNotificationParam>);

impl ClientHandler for Listener {
    async fn on_logging_message(&self, params: LoggingMessageNotificationParam, _: NotificationContext<RoleClient>) {
        let _ = self.0.send(params);
    }
}

#[tokio::test]
async fn a_session_that_sets_a_log_level_hears_about_queue_changes() {
    let s = common::start(|c| c.mcp_stateless = false).await;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let transport = StreamableHttpClientTransport::from_uri(format!("{}/mcp", s.url));
    let client = Listener(tx).serve(transport).await.expect("connects");

    // Before asking, nothing is sent.
    s.add("Unheard").await;
    assert!(tokio::time::timeout(Duration::from_millis(500), rx.recv())
        .await
        .is_err());

    client
        .set_level(SetLevelRequestParams::new(LoggingLevel::Info))
        .await
        .unwrap();
    let item = s.add("Heard").await;
    let message = tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .expect("a log message within 5 s")
        .unwrap();
    assert_eq!(message.level, LoggingLevel::Info);
    assert_eq!(message.logger.as_deref(), Some("local-mcp.queue"));
    assert_eq!(message.data["event"], "instruction.created");
    assert_eq!(message.data["id"], item["id"]);
    assert_eq!(message.data["pending_count"], 2);
    assert_eq!(message.data["queue"], "default");
    // Another queue's changes are not this session's business.
    s.add_to("Elsewhere", "other", None).await;
    assert!(tokio::time::timeout(Duration::from_millis(500), rx.recv())
        .await
        .is_err());

    // A higher minimum level silences these info-level messages.
    client
        .set_level(SetLevelRequestParams::new(LoggingLevel::Warning))
        .await
        .unwrap();
    s.add("Filtered").await;
    assert!(tokio::time::timeout(Duration::from_millis(500), rx.recv())
        .await
        .is_err());

    client.cancel().await.unwrap();
    s.stop().await;
}
