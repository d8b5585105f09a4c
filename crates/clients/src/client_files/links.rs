//! "Install in …" links for clients that have them. The client shows its
//! own confirmation before adding anything. Links are opened through the
//! OS handler, never a browser tab, and carry no secret: the handler gets
//! the link in its command line, which other accounts can read, so with a
//! token required a link installs the stdio bridge (`Site::link_entry`),
//! and Goose, whose links install only commands from its own list, gets none.
//!
//! Formats: VS Code `vscode:mcp/install?<url-encoded JSON with name>`
//! (code.visualstudio.com/docs/copilot/guides/mcp-developer-guide), Cursor
//! `cursor://anysphere.cursor-deeplink/mcp/install?name=…&config=<base64 JSON>`
//! (cursor.com/docs/mcp/install-links), LM Studio
//! `lmstudio://add_mcp?name=…&config=<base64 JSON>` (lmstudio.ai/docs/app/mcp/deeplink),
//! Goose `goose://extension?url=…&type=streamable_http&id=…&name=…&timeout=…`
//! (block.github.io/goose, "Deeplinks"). Goose's link has no place for a header:
//! with a token required it is not offered.

use crate::model::McpClient;
use base64::Engine as _;
use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use serde_json::Value;

use crate::snippets::ENTRY_NAME;

/// The install link for `client` carrying `entry`, where the client has one.
pub fn link(client: McpClient, entry: &Value) -> Option<String> {
    let encode = |s: &str| utf8_percent_encode(s, NON_ALPHANUMERIC).to_string();
    let b64 = || base64::engine::general_purpose::STANDARD.encode(entry.to_string());
    match client {
        McpClient::Vscode | McpClient::VscodeInsiders => {
            let mut named = entry.clone();
            named["name"] = ENTRY_NAME.into();
            let scheme = if client == McpClient::Vscode {
                "vscode"
            } else {
                "vscode-insiders"
            };
            Some(format!("{scheme}:mcp/install?{}", encode(&named.to_string())))
        }
        McpClient::Cursor => Some(format!(
            "cursor://anysphere.cursor-deeplink/mcp/install?name={ENTRY_NAME}&config={}",
            encode(&b64())
        )),
        McpClient::LmStudio => Some(format!(
            "lmstudio://add_mcp?name={ENTRY_NAME}&config={}",
            encode(&b64())
        )),
        McpClient::Goose => {
            if entry.get("headers").is_some() || entry.get("command").is_some() {
                return None;
            }
            Some(format!(
                "goose://extension?url={}&type=streamable_http&id={ENTRY_NAME}&name={ENTRY_NAME}&description={}&timeout={}",
                encode(entry["uri"].as_str()?),
                encode("The user's instruction queue (get_user_request)"),
                entry["timeout"].as_u64()?
            ))
        }
        _ => None,
    }
}

/// Hand `link` to the OS's URL handler (`xdg-open`, `open`, `start`).
pub fn open(link: &str) -> std::io::Result<()> {
    open::that_detached(link)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn links_decode_back_to_the_entry() {
        let entry = json!({"url": "http://127.0.0.1:8000/mcp", "headers": {"Authorization": "Bearer a+b/c="}});
        let cursor = link(McpClient::Cursor, &entry).unwrap();
        let config = cursor.split("config=").nth(1).unwrap();
        let config = percent_encoding::percent_decode_str(config).decode_utf8().unwrap();
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(config.as_bytes())
            .unwrap();
        assert_eq!(serde_json::from_slice::<Value>(&decoded).unwrap(), entry);

        let vs = link(
            McpClient::Vscode,
            &json!({"type": "http", "url": "http://127.0.0.1:8000/mcp"}),
        )
        .unwrap();
        let payload = vs.strip_prefix("vscode:mcp/install?").unwrap();
        let payload = percent_encoding::percent_decode_str(payload).decode_utf8().unwrap();
        let v: Value = serde_json::from_str(&payload).unwrap();
        assert_eq!(v["name"], "local-mcp");
        assert_eq!(v["type"], "http");
        assert!(link(McpClient::Codex, &entry).is_none());

        let goose = link(
            McpClient::Goose,
            &json!({"uri": "http://127.0.0.1:8000/mcp", "timeout": 86460}),
        )
        .unwrap();
        assert!(
            goose.starts_with(
                "goose://extension?url=http%3A%2F%2F127%2E0%2E0%2E1%3A8000%2Fmcp&type=streamable_http&id=local-mcp"
            ),
            "{goose}"
        );
        assert!(goose.ends_with("&timeout=86460"));
        // A token cannot ride in Goose's link: no link then.
        assert!(link(
            McpClient::Goose,
            &json!({"uri": "u", "timeout": 1, "headers": {"Authorization": "Bearer t"}})
        )
        .is_none());
    }
}
