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

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::model::MAX_WAIT_SECONDS;

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

/// Clients we know how to configure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Client {
    Vscode,
    VscodeInsiders,
    ClaudeCode,
    /// Claude Code's project file, `.mcp.json`: one queue per repository.
    ClaudeCodeProject,
    Cursor,
    Codex,
    Windsurf,
    ClaudeDesktop,
    GeminiCli,
    CopilotCli,
    Cline,
    Opencode,
    Zed,
    LmStudio,
    /// Goose keeps YAML: local-mcp gives its snippet and install link, and does not edit the file.
    Goose,
}

/// A client with its snippet and where that goes, for people.
#[derive(Debug, Clone, Serialize)]
pub struct ClientSnippet {
    pub id: Client,
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

impl Client {
    /// The id the CLI, the API and the tray menu use (`claude-code`).
    pub fn id(self) -> &'static str {
        match self {
            Client::Vscode => "vscode",
            Client::VscodeInsiders => "vscode-insiders",
            Client::ClaudeCode => "claude-code",
            Client::ClaudeCodeProject => "claude-code-project",
            Client::Cursor => "cursor",
            Client::Codex => "codex",
            Client::Windsurf => "windsurf",
            Client::ClaudeDesktop => "claude-desktop",
            Client::GeminiCli => "gemini-cli",
            Client::CopilotCli => "copilot-cli",
            Client::Cline => "cline",
            Client::Opencode => "opencode",
            Client::Zed => "zed",
            Client::LmStudio => "lm-studio",
            Client::Goose => "goose",
        }
    }

    /// The client with that id.
    pub fn from_id(id: &str) -> Option<Client> {
        Client::ALL.into_iter().find(|c| c.id() == id)
    }

    pub const ALL: [Client; 15] = [
        Client::Vscode,
        Client::VscodeInsiders,
        Client::ClaudeCode,
        Client::ClaudeCodeProject,
        Client::Cursor,
        Client::Codex,
        Client::Windsurf,
        Client::ClaudeDesktop,
        Client::GeminiCli,
        Client::CopilotCli,
        Client::Cline,
        Client::Opencode,
        Client::Zed,
        Client::LmStudio,
        Client::Goose,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Client::Vscode => "VS Code",
            Client::VscodeInsiders => "VS Code Insiders",
            Client::ClaudeCode => "Claude Code",
            Client::ClaudeCodeProject => "Claude Code (project)",
            Client::Cursor => "Cursor",
            Client::Codex => "Codex",
            Client::Windsurf => "Windsurf",
            Client::ClaudeDesktop => "Claude Desktop",
            Client::GeminiCli => "Gemini CLI",
            Client::CopilotCli => "GitHub Copilot CLI",
            Client::Cline => "Cline",
            Client::Opencode => "opencode",
            Client::Zed => "Zed",
            Client::LmStudio => "LM Studio",
            Client::Goose => "Goose",
        }
    }

    pub fn how(self) -> &'static str {
        match self {
            Client::Vscode => "Save as .vscode/mcp.json in your project (or add to your user MCP configuration).",
            Client::VscodeInsiders => {
                "Save as .vscode/mcp.json in your project (or add to your user MCP configuration)."
            }
            Client::ClaudeCode => "Run this in a terminal.",
            Client::ClaudeCodeProject => {
                "Save as .mcp.json at the root of your project; Claude Code asks once to approve it."
            }
            Client::Cursor => "Save as .cursor/mcp.json in your project, or ~/.cursor/mcp.json for all projects.",
            Client::Codex => "Add to ~/.codex/config.toml.",
            Client::Windsurf => "Add to ~/.codeium/windsurf/mcp_config.json.",
            Client::ClaudeDesktop => {
                "Add to claude_desktop_config.json (Settings → Developer → Edit Config), then restart Claude Desktop."
            }
            Client::GeminiCli => "Add to ~/.gemini/settings.json (or .gemini/settings.json in your project).",
            Client::CopilotCli => "Add to ~/.copilot/mcp-config.json.",
            Client::Cline => "Add to Cline's MCP settings (MCP Servers → Configure → cline_mcp_settings.json).",
            Client::Opencode => "Add to ~/.config/opencode/opencode.json (or opencode.json in your project).",
            Client::Zed => "Add to ~/.config/zed/settings.json (or .zed/settings.json in your project).",
            Client::LmStudio => "Add to ~/.lmstudio/mcp.json (Program → Install → Edit mcp.json).",
            Client::Goose => "Add under extensions: in ~/.config/goose/config.yaml (or use Install in Goose).",
        }
    }

    pub fn with_snippet(self, endpoint: &Endpoint<'_>) -> ClientSnippet {
        ClientSnippet {
            id: self,
            name: self.name(),
            how: self.how(),
            snippet: snippet(self, endpoint),
        }
    }

    /// Where the client keeps its servers, as a path of object keys from the
    /// top of its file (`["servers"]` for VS Code, `["mcp_servers"]` in Codex's TOML).
    pub fn servers_key(self) -> &'static [&'static str] {
        match self {
            Client::Vscode | Client::VscodeInsiders => &["servers"],
            Client::Codex => &["mcp_servers"],
            Client::Opencode => &["mcp"],
            Client::Zed => &["context_servers"],
            Client::Goose => &["extensions"],
            _ => &["mcpServers"],
        }
    }
}

/// Every client with its snippet, in menu order.
pub fn all(endpoint: &Endpoint<'_>) -> Vec<ClientSnippet> {
    Client::ALL.iter().map(|c| c.with_snippet(endpoint)).collect()
}

/// Our entry as `client` expects it under its servers key (for Codex, the
/// fields of its `[mcp_servers.local-mcp]` table).
pub fn entry(client: Client, endpoint: &Endpoint<'_>) -> Value {
    let url = endpoint.mcp_url;
    let headers = endpoint
        .token
        .map(|t| json!({ "Authorization": format!("Bearer {t}") }));
    let timeout_ms = CLIENT_TIMEOUT_SECONDS * 1000;
    let mut entry = match client {
        Client::Vscode | Client::VscodeInsiders => json!({ "type": "http", "url": url }),
        Client::Cursor | Client::LmStudio | Client::Zed => json!({ "url": url }),
        Client::Windsurf => json!({ "serverUrl": url }),
        // Claude Code's per-server `timeout` (ms) overrides MCP_TOOL_TIMEOUT for this server.
        Client::ClaudeCode | Client::ClaudeCodeProject => json!({ "type": "http", "url": url, "timeout": timeout_ms }),
        // `httpUrl` is Gemini CLI's streamable-HTTP key (`url` means SSE there); `timeout` in ms.
        Client::GeminiCli => json!({ "httpUrl": url, "timeout": timeout_ms }),
        // Copilot CLI requires `tools`; `timeout` in ms.
        Client::CopilotCli => json!({ "type": "http", "url": url, "tools": ["*"], "timeout": timeout_ms }),
        // Without the type a `url` matches Cline's SSE schema first; `timeout` in seconds.
        Client::Cline => {
            json!({ "type": "streamableHttp", "url": url, "timeout": CLIENT_TIMEOUT_SECONDS, "disabled": false })
        }
        Client::Opencode => json!({ "type": "remote", "url": url, "enabled": true }),
        // Goose: `uri`, `timeout` in seconds (its extension schema).
        Client::Goose => json!({
            "enabled": true, "type": "streamable_http", "name": ENTRY_NAME, "uri": url,
            "timeout": CLIENT_TIMEOUT_SECONDS
        }),
        // Codex refuses an inline bearer token and ignores `headers`: a literal
        // `http_headers` table is the one way a tray app can give it the token.
        Client::Codex => json!({ "url": url, "tool_timeout_sec": CLIENT_TIMEOUT_SECONDS }),
        Client::ClaudeDesktop => return bridge_entry(endpoint),
    };
    if let Some(h) = headers {
        let key = if client == Client::Codex {
            "http_headers"
        } else {
            "headers"
        };
        entry[key] = h;
    }
    entry
}

/// The snippet for `client`.
pub fn snippet(client: Client, endpoint: &Endpoint<'_>) -> String {
    let url = endpoint.mcp_url;
    match client {
        Client::ClaudeCode => match endpoint.token {
            Some(t) => {
                format!("claude mcp add --transport http local-mcp {url} --header \"Authorization: Bearer {t}\"")
            }
            None => format!("claude mcp add --transport http local-mcp {url}"),
        },
        Client::Goose => {
            let entry = entry(client, endpoint);
            let mut yaml = format!(
                "extensions:\n  {ENTRY_NAME}:\n    enabled: true\n    type: streamable_http\n    name: {ENTRY_NAME}\n    uri: {url}\n    timeout: {CLIENT_TIMEOUT_SECONDS}\n"
            );
            if let Some(auth) = entry["headers"]["Authorization"].as_str() {
                yaml.push_str(&format!("    headers:\n      Authorization: {auth}\n"));
            }
            yaml
        }
        Client::Codex => {
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

    fn json_of(client: Client, token: Option<&str>) -> serde_json::Value {
        serde_json::from_str(&snippet(client, &endpoint(token))).unwrap()
    }

    #[test]
    fn http_clients_get_the_url_and_the_token_header() {
        let vs = json_of(Client::Vscode, None);
        assert_eq!(vs["servers"]["local-mcp"]["url"], URL);
        assert_eq!(vs["servers"]["local-mcp"]["type"], "http");
        assert!(vs["servers"]["local-mcp"].get("headers").is_none());
        let cursor = json_of(Client::Cursor, Some("t0k"));
        assert_eq!(
            cursor["mcpServers"]["local-mcp"]["headers"]["Authorization"],
            "Bearer t0k"
        );
        let windsurf = json_of(Client::Windsurf, Some("t0k"));
        assert_eq!(windsurf["mcpServers"]["local-mcp"]["serverUrl"], URL);
        assert_eq!(
            windsurf["mcpServers"]["local-mcp"]["headers"]["Authorization"],
            "Bearer t0k"
        );
        assert_eq!(
            snippet(Client::ClaudeCode, &endpoint(None)),
            format!("claude mcp add --transport http local-mcp {URL}")
        );
        assert!(snippet(Client::ClaudeCode, &endpoint(Some("t0k"))).ends_with("--header \"Authorization: Bearer t0k\""));
    }

    #[test]
    fn codex_gets_toml_with_a_literal_header_and_a_long_timeout() {
        let plain: toml::Table = snippet(Client::Codex, &endpoint(None)).parse().unwrap();
        assert_eq!(plain["mcp_servers"]["local-mcp"]["url"].as_str(), Some(URL));
        assert!(plain["mcp_servers"]["local-mcp"].get("http_headers").is_none());
        assert!(
            plain["mcp_servers"]["local-mcp"]["tool_timeout_sec"]
                .as_integer()
                .unwrap()
                > i64::from(crate::model::MAX_WAIT_SECONDS)
        );
        let text = snippet(Client::Codex, &endpoint(Some("t0k")));
        let with_token: toml::Table = text.parse().unwrap();
        let entry = &with_token["mcp_servers"]["local-mcp"];
        // Codex rejects `bearer_token` and ignores `headers`.
        assert!(entry.get("bearer_token").is_none() && entry.get("headers").is_none());
        assert_eq!(entry["http_headers"]["Authorization"].as_str(), Some("Bearer t0k"));
    }

    #[test]
    fn every_json_client_gets_its_entry_under_its_own_key() {
        for client in Client::ALL {
            if matches!(client, Client::ClaudeCode | Client::Codex | Client::Goose) {
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
            json_of(Client::GeminiCli, None)["mcpServers"]["local-mcp"]["httpUrl"],
            URL
        );
        assert_eq!(
            json_of(Client::Cline, None)["mcpServers"]["local-mcp"]["type"],
            "streamableHttp"
        );
        assert_eq!(
            json_of(Client::CopilotCli, None)["mcpServers"]["local-mcp"]["tools"],
            json!(["*"])
        );
        assert_eq!(json_of(Client::Zed, None)["context_servers"]["local-mcp"]["url"], URL);
        assert_eq!(json_of(Client::Opencode, None)["mcp"]["local-mcp"]["type"], "remote");
    }

    #[test]
    fn claude_desktop_runs_the_stdio_bridge_without_url_or_token() {
        let text = snippet(Client::ClaudeDesktop, &endpoint(Some("t0k")));
        assert!(!text.contains("t0k") && !text.contains(URL));
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["mcpServers"]["local-mcp"]["command"], "/usr/bin/local-mcp-server");
        assert_eq!(v["mcpServers"]["local-mcp"]["args"], json!(["stdio"]));
        assert_eq!(all(&endpoint(None)).len(), Client::ALL.len());
        let queued = Endpoint {
            queue: Some("repo-a"),
            ..endpoint(None)
        };
        let v: serde_json::Value = serde_json::from_str(&snippet(Client::ClaudeDesktop, &queued)).unwrap();
        assert_eq!(
            v["mcpServers"]["local-mcp"]["args"],
            json!(["stdio", "--queue", "repo-a"])
        );
    }

    #[test]
    fn goose_gets_yaml_with_its_own_field_names() {
        let text = snippet(Client::Goose, &endpoint(Some("t0k")));
        assert!(text.starts_with("extensions:\n  local-mcp:\n"), "{text}");
        assert!(text.contains(&format!("    uri: {URL}\n")) && text.contains("    type: streamable_http\n"));
        assert!(text.contains("      Authorization: Bearer t0k\n"));
        assert!(!snippet(Client::Goose, &endpoint(None)).contains("headers"));
    }

    #[test]
    fn claude_code_projects_get_an_mcp_json() {
        let v = json_of(Client::ClaudeCodeProject, Some("t0k"));
        assert_eq!(v["mcpServers"]["local-mcp"]["type"], "http");
        assert_eq!(v["mcpServers"]["local-mcp"]["url"], URL);
        assert_eq!(v["mcpServers"]["local-mcp"]["headers"]["Authorization"], "Bearer t0k");
    }
}
