//! The exact configuration each MCP client expects, for a server URL and an
//! optional token. One source for the page, the tray's "copy MCP config" and
//! the CLI, so they never disagree.

use serde_json::json;

/// Clients we know how to configure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    VsCode,
    ClaudeCode,
    Cursor,
}

/// The snippet for `client`, given the MCP endpoint URL (`…/mcp`).
pub fn snippet(client: Client, mcp_url: &str, token: Option<&str>) -> String {
    let auth = token.map(|t| format!("Bearer {t}"));
    match client {
        Client::VsCode => {
            let mut server = json!({ "type": "http", "url": mcp_url });
            if let Some(a) = &auth {
                server["headers"] = json!({ "Authorization": a });
            }
            pretty(json!({ "servers": { "local-mcp": server } }))
        }
        Client::Cursor => {
            let mut server = json!({ "url": mcp_url });
            if let Some(a) = &auth {
                server["headers"] = json!({ "Authorization": a });
            }
            pretty(json!({ "mcpServers": { "local-mcp": server } }))
        }
        Client::ClaudeCode => match &auth {
            Some(a) => format!("claude mcp add --transport http local-mcp {mcp_url} --header \"Authorization: {a}\""),
            None => format!("claude mcp add --transport http local-mcp {mcp_url}"),
        },
    }
}

fn pretty(v: serde_json::Value) -> String {
    serde_json::to_string_pretty(&v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippets_name_the_url_and_the_token_header() {
        let url = "http://127.0.0.1:8000/mcp";
        let vs: serde_json::Value = serde_json::from_str(&snippet(Client::VsCode, url, None)).unwrap();
        assert_eq!(vs["servers"]["local-mcp"]["url"], url);
        assert_eq!(vs["servers"]["local-mcp"]["type"], "http");
        let cursor: serde_json::Value = serde_json::from_str(&snippet(Client::Cursor, url, Some("t0k"))).unwrap();
        assert_eq!(
            cursor["mcpServers"]["local-mcp"]["headers"]["Authorization"],
            "Bearer t0k"
        );
        assert_eq!(
            snippet(Client::ClaudeCode, url, None),
            format!("claude mcp add --transport http local-mcp {url}")
        );
        assert!(snippet(Client::ClaudeCode, url, Some("t0k")).ends_with("--header \"Authorization: Bearer t0k\""));
    }
}
