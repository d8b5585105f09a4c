//! The exact configuration each MCP client expects. One source for the page
//! (`GET /api/clients`), the tray's "Copy MCP config", the CLI's `config`
//! command and `connect` (which writes the same entry into the client's own
//! file), so they never disagree.
//!
//! Clients that speak streamable HTTP get the URL (and the token header when
//! one is set) plus, where the client has one, a tool-call timeout long enough
//! for the longest wait. Claude Desktop launches stdio servers only, so it gets
//! the stdio bridge, which finds the running app through the connection-info
//! file and needs neither URL nor token in the snippet. Field names per client
//! are in `docs/CLIENTS.md`, each with its source.

use serde::Serialize;
use serde_json::{json, Value};

use crate::model::{McpClient, MAX_WAIT_SECONDS};

/// What the person tells the agent to start its loop: the one sentence the
/// README's quick start, the page (`ui/js/text.js`, `START_SENTENCE`) and the
/// CLI's `config` and `connect` give, word for word.
pub const START_SENTENCE: &str = "Call the get_user_request tool of local-mcp and do what it returns. When you \
finish, call it again with a short report of what you did, and keep calling it; never end your turn on your own.";

/// The name of our entry in every client's configuration.
pub const ENTRY_NAME: &str = "local-mcp";

/// The tool-call timeout written for clients that have one: the longest wait
/// the settings allow, plus a minute for the answer to travel.
pub const CLIENT_TIMEOUT_SECONDS: u64 = MAX_WAIT_SECONDS as u64 + 60;

/// The stdio bridge as a client runs it (`command` and `args`): it finds the
/// server and its token by itself, so the entry holds no secret.
pub fn bridge_entry(endpoint: &Endpoint<'_>) -> serde_json::Value {
    let mut args = vec!["stdio"];
    if let Some(db) = endpoint.database {
        args.extend(["--db-path", db]);
    }
    if let Some(q) = endpoint.queue {
        args.extend(["--queue", q]);
    }
    json!({ "command": endpoint.bridge_program, "args": args })
}

/// A client with its snippet and where that goes, for people.
#[derive(Debug, Clone, Serialize)]
pub struct ClientSnippet {
    pub id: McpClient,
    pub name: &'static str,
    /// One sentence: where to put it or what to do with it.
    pub how: &'static str,
    pub snippet: String,
}

/// What the snippets are built from.
#[derive(Debug, Clone)]
pub struct Endpoint<'a> {
    /// The MCP endpoint URL (`…/mcp`, or `…/mcp/q/<queue>`).
    pub mcp_url: &'a str,
    /// The queue the URL names, when it is not `default` (the stdio bridge takes it as `--queue`).
    pub queue: Option<&'a str>,
    pub token: Option<&'a str>,
    /// The program that runs the stdio bridge (`<program> stdio`), ideally an
    /// absolute path: desktop clients do not inherit a shell's PATH.
    pub bridge_program: &'a str,
    /// The server's database when it is not the default one: the bridge is
    /// told it (`--db-path`), or it would look for the default one's server.
    pub database: Option<&'a str>,
}

/// A client with its snippet.
pub fn with_snippet(client: McpClient, endpoint: &Endpoint<'_>) -> ClientSnippet {
    ClientSnippet {
        id: client,
        name: client.name(),
        how: client.how(),
        snippet: snippet(client, endpoint),
    }
}

/// Every client with its snippet, in menu order.
pub fn all(endpoint: &Endpoint<'_>) -> Vec<ClientSnippet> {
    McpClient::ALL.iter().map(|c| with_snippet(*c, endpoint)).collect()
}

/// Our entry as `client` expects it under its servers key (for Codex, the
/// fields of its `[mcp_servers.local-mcp]` table).
pub fn entry(client: McpClient, endpoint: &Endpoint<'_>) -> Value {
    let url = endpoint.mcp_url;
    let headers = endpoint
        .token
        .map(|t| json!({ "Authorization": format!("Bearer {t}") }));
    let timeout_ms = CLIENT_TIMEOUT_SECONDS * 1000;
    let mut entry = match client {
        McpClient::Vscode | McpClient::VscodeInsiders => json!({ "type": "http", "url": url }),
        McpClient::Cursor | McpClient::LmStudio | McpClient::Zed => json!({ "url": url }),
        McpClient::Windsurf => json!({ "serverUrl": url }),
        // Claude Code's per-server `timeout` (ms) overrides MCP_TOOL_TIMEOUT for this server.
        McpClient::ClaudeCode | McpClient::ClaudeCodeProject => {
            json!({ "type": "http", "url": url, "timeout": timeout_ms })
        }
        // `httpUrl` is Gemini CLI's streamable-HTTP key (`url` means SSE there); `timeout` in ms.
        McpClient::GeminiCli => json!({ "httpUrl": url, "timeout": timeout_ms }),
        // Copilot CLI requires `tools`; `timeout` in ms.
        McpClient::CopilotCli => json!({ "type": "http", "url": url, "tools": ["*"], "timeout": timeout_ms }),
        // Without the type a `url` matches Cline's SSE schema first; `timeout` in seconds.
        McpClient::Cline => {
            json!({ "type": "streamableHttp", "url": url, "timeout": CLIENT_TIMEOUT_SECONDS, "disabled": false })
        }
        McpClient::Opencode => json!({ "type": "remote", "url": url, "enabled": true }),
        // Goose: `uri`, `timeout` in seconds (its extension schema).
        McpClient::Goose => json!({
            "enabled": true, "type": "streamable_http", "name": ENTRY_NAME, "uri": url,
            "timeout": CLIENT_TIMEOUT_SECONDS
        }),
        // Codex refuses an inline bearer token and ignores `headers`: a literal
        // `http_headers` table is the one way a tray app can give it the token.
        McpClient::Codex => json!({ "url": url, "tool_timeout_sec": CLIENT_TIMEOUT_SECONDS }),
        McpClient::ClaudeDesktop => return bridge_entry(endpoint),
    };
    if let Some(h) = headers {
        let key = if client == McpClient::Codex {
            "http_headers"
        } else {
            "headers"
        };
        entry[key] = h;
    }
    entry
}

/// The snippet for `client`.
pub fn snippet(client: McpClient, endpoint: &Endpoint<'_>) -> String {
    let url = endpoint.mcp_url;
    match client {
        McpClient::ClaudeCode => match endpoint.token {
            Some(t) => {
                format!("claude mcp add --transport http local-mcp {url} --header \"Authorization: Bearer {t}\"")
            }
            None => format!("claude mcp add --transport http local-mcp {url}"),
        },
        McpClient::Goose => {
            let entry = entry(client, endpoint);
            let mut yaml = format!(
                "extensions:\n  {ENTRY_NAME}:\n    enabled: true\n    type: streamable_http\n    name: {ENTRY_NAME}\n    uri: {url}\n    timeout: {CLIENT_TIMEOUT_SECONDS}\n"
            );
            if let Some(auth) = entry["headers"]["Authorization"].as_str() {
                yaml.push_str(&format!("    headers:\n      Authorization: {auth}\n"));
            }
            yaml
        }
        McpClient::Codex => {
            let mut doc = toml_edit::DocumentMut::new();
            let mut servers = toml_edit::Table::new();
            servers.set_implicit(true);
            servers.insert(ENTRY_NAME, toml_edit::Item::Table(toml_table(&entry(client, endpoint))));
            doc.insert("mcp_servers", toml_edit::Item::Table(servers));
            doc.to_string()
        }
        _ => {
            let mut wrapped = entry(client, endpoint);
            wrapped = json!({ ENTRY_NAME: wrapped });
            for key in client.servers_key().iter().rev() {
                wrapped = json!({ *key: wrapped });
            }
            serde_json::to_string_pretty(&wrapped).unwrap_or_default()
        }
    }
}

/// A JSON object as a TOML table (nested objects inline, as Codex's docs write `http_headers`).
pub fn toml_table(value: &Value) -> toml_edit::Table {
    let mut table = toml_edit::Table::new();
    if let Value::Object(map) = value {
        for (k, v) in map {
            if let Some(v) = toml_value(v) {
                table.insert(k, toml_edit::Item::Value(v));
            }
        }
    }
    table
}

/// A JSON value as a TOML value (`null` has none).
pub fn toml_value(value: &Value) -> Option<toml_edit::Value> {
    Some(match value {
        Value::Null => return None,
        Value::Bool(b) => (*b).into(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.into(),
            None => n.as_f64()?.into(),
        },
        Value::String(s) => s.as_str().into(),
        Value::Array(items) => {
            let mut array = toml_edit::Array::new();
            for item in items {
                array.push_formatted(toml_value(item)?);
            }
            toml_edit::Value::Array(array)
        }
        Value::Object(map) => {
            let mut inline = toml_edit::InlineTable::new();
            for (k, v) in map {
                inline.insert(k, toml_value(v)?);
            }
            toml_edit::Value::InlineTable(inline)
        }
    })
}

/// This program's absolute path: what a stdio-only client should launch
/// (`<program> stdio`; desktop apps do not inherit a shell's PATH). Both
/// `local-mcp` and `local-mcp-server` serve the bridge.
pub fn bridge_program() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.to_str().map(without_deleted))
        .unwrap_or_else(|| "local-mcp-server".into())
}

/// A path Linux gives a running binary that was replaced on disk (an
/// update) ends in " (deleted)": the program is at the path without it, and
/// a command naming the suffix finds nothing.
fn without_deleted(path: &str) -> String {
    path.strip_suffix(" (deleted)").unwrap_or(path).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replaced_binary_is_named_by_its_path() {
        assert_eq!(
            without_deleted("/usr/bin/local-mcp-server (deleted)"),
            "/usr/bin/local-mcp-server"
        );
        assert_eq!(without_deleted("/opt/a (deleted) b"), "/opt/a (deleted) b");
    }

    const URL: &str = "http://127.0.0.1:8000/mcp";

    fn endpoint(token: Option<&str>) -> Endpoint<'_> {
        Endpoint {
            mcp_url: URL,
            queue: None,
            token,
            bridge_program: "/usr/bin/local-mcp-server",
            database: None,
        }
    }

    fn json_of(client: McpClient, token: Option<&str>) -> serde_json::Value {
        serde_json::from_str(&snippet(client, &endpoint(token))).unwrap()
    }

    #[test]
    fn http_clients_get_the_url_and_the_token_header() {
        let vs = json_of(McpClient::Vscode, None);
        assert_eq!(vs["servers"]["local-mcp"]["url"], URL);
        assert_eq!(vs["servers"]["local-mcp"]["type"], "http");
        assert!(vs["servers"]["local-mcp"].get("headers").is_none());
        let cursor = json_of(McpClient::Cursor, Some("t0k"));
        assert_eq!(
            cursor["mcpServers"]["local-mcp"]["headers"]["Authorization"],
            "Bearer t0k"
        );
        let windsurf = json_of(McpClient::Windsurf, Some("t0k"));
        assert_eq!(windsurf["mcpServers"]["local-mcp"]["serverUrl"], URL);
        assert_eq!(
            windsurf["mcpServers"]["local-mcp"]["headers"]["Authorization"],
            "Bearer t0k"
        );
        assert_eq!(
            snippet(McpClient::ClaudeCode, &endpoint(None)),
            format!("claude mcp add --transport http local-mcp {URL}")
        );
        assert!(
            snippet(McpClient::ClaudeCode, &endpoint(Some("t0k"))).ends_with("--header \"Authorization: Bearer t0k\"")
        );
    }

    #[test]
    fn codex_gets_toml_with_a_literal_header_and_a_long_timeout() {
        let plain: toml::Table = snippet(McpClient::Codex, &endpoint(None)).parse().unwrap();
        assert_eq!(plain["mcp_servers"]["local-mcp"]["url"].as_str(), Some(URL));
        assert!(plain["mcp_servers"]["local-mcp"].get("http_headers").is_none());
        assert!(
            plain["mcp_servers"]["local-mcp"]["tool_timeout_sec"]
                .as_integer()
                .unwrap()
                > i64::from(crate::model::MAX_WAIT_SECONDS)
        );
        let text = snippet(McpClient::Codex, &endpoint(Some("t0k")));
        let with_token: toml::Table = text.parse().unwrap();
        let entry = &with_token["mcp_servers"]["local-mcp"];
        // Codex rejects `bearer_token` and ignores `headers`.
        assert!(entry.get("bearer_token").is_none() && entry.get("headers").is_none());
        assert_eq!(entry["http_headers"]["Authorization"].as_str(), Some("Bearer t0k"));
    }

    #[test]
    fn every_json_client_gets_its_entry_under_its_own_key() {
        for client in McpClient::ALL {
            if matches!(client, McpClient::ClaudeCode | McpClient::Codex | McpClient::Goose) {
                continue;
            }
            let mut v = json_of(client, Some("t0k"));
            for key in client.servers_key() {
                v = v[*key].take();
            }
            assert_eq!(v["local-mcp"], entry(client, &endpoint(Some("t0k"))), "{client:?}");
            // The token never rides in a URL.
            for url_key in ["url", "serverUrl", "httpUrl"] {
                if let Some(u) = v["local-mcp"][url_key].as_str() {
                    assert_eq!(u, URL, "{client:?}");
                }
            }
        }
        assert_eq!(
            json_of(McpClient::GeminiCli, None)["mcpServers"]["local-mcp"]["httpUrl"],
            URL
        );
        assert_eq!(
            json_of(McpClient::Cline, None)["mcpServers"]["local-mcp"]["type"],
            "streamableHttp"
        );
        assert_eq!(
            json_of(McpClient::CopilotCli, None)["mcpServers"]["local-mcp"]["tools"],
            json!(["*"])
        );
        assert_eq!(
            json_of(McpClient::Zed, None)["context_servers"]["local-mcp"]["url"],
            URL
        );
        assert_eq!(json_of(McpClient::Opencode, None)["mcp"]["local-mcp"]["type"], "remote");
    }

    #[test]
    fn claude_desktop_runs_the_stdio_bridge_without_url_or_token() {
        let text = snippet(McpClient::ClaudeDesktop, &endpoint(Some("t0k")));
        assert!(!text.contains("t0k") && !text.contains(URL));
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["mcpServers"]["local-mcp"]["command"], "/usr/bin/local-mcp-server");
        assert_eq!(v["mcpServers"]["local-mcp"]["args"], json!(["stdio"]));
        assert_eq!(all(&endpoint(None)).len(), McpClient::ALL.len());
        let queued = Endpoint {
            queue: Some("repo-a"),
            ..endpoint(None)
        };
        let v: serde_json::Value = serde_json::from_str(&snippet(McpClient::ClaudeDesktop, &queued)).unwrap();
        assert_eq!(
            v["mcpServers"]["local-mcp"]["args"],
            json!(["stdio", "--queue", "repo-a"])
        );
    }

    #[test]
    fn goose_gets_yaml_with_its_own_field_names() {
        let text = snippet(McpClient::Goose, &endpoint(Some("t0k")));
        assert!(text.starts_with("extensions:\n  local-mcp:\n"), "{text}");
        assert!(text.contains(&format!("    uri: {URL}\n")) && text.contains("    type: streamable_http\n"));
        assert!(text.contains("      Authorization: Bearer t0k\n"));
        assert!(!snippet(McpClient::Goose, &endpoint(None)).contains("headers"));
    }

    #[test]
    fn claude_code_projects_get_an_mcp_json() {
        let v = json_of(McpClient::ClaudeCodeProject, Some("t0k"));
        assert_eq!(v["mcpServers"]["local-mcp"]["type"], "http");
        assert_eq!(v["mcpServers"]["local-mcp"]["url"], URL);
        assert_eq!(v["mcpServers"]["local-mcp"]["headers"]["Authorization"], "Bearer t0k");
    }
}
