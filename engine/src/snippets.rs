//! The exact configuration each MCP client expects. One source for the page
//! (`GET /api/clients`), the tray's "Copy MCP config" and the CLI's `config`
//! command, so they never disagree.
//!
//! Clients that speak streamable HTTP get the URL (and the token header when
//! one is set). Claude Desktop launches stdio servers only, so it gets the
//! stdio bridge, which finds the running app through the connection-info
//! file and needs neither URL nor token in the snippet.

use serde::Serialize;
use serde_json::json;

/// Clients we know how to configure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Client {
    Vscode,
    ClaudeCode,
    /// Claude Code's project file, `.mcp.json`: one queue per repository.
    ClaudeCodeProject,
    Cursor,
    Codex,
    Windsurf,
    ClaudeDesktop,
}

/// The environment variable Codex reads the token from (Codex refuses an
/// inline token in its config file).
pub const CODEX_TOKEN_ENV: &str = "LOCAL_MCP_TOKEN";

/// Where a snippet goes, for people.
#[derive(Debug, Clone, Serialize)]
pub struct Target {
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
}

impl Client {
    /// The id the CLI, the API and the tray menu use (`claude-code`).
    pub fn id(self) -> &'static str {
        match self {
            Client::Vscode => "vscode",
            Client::ClaudeCode => "claude-code",
            Client::ClaudeCodeProject => "claude-code-project",
            Client::Cursor => "cursor",
            Client::Codex => "codex",
            Client::Windsurf => "windsurf",
            Client::ClaudeDesktop => "claude-desktop",
        }
    }

    /// The client with that id.
    pub fn from_id(id: &str) -> Option<Client> {
        Client::ALL.into_iter().find(|c| c.id() == id)
    }

    pub const ALL: [Client; 7] = [
        Client::Vscode,
        Client::ClaudeCode,
        Client::ClaudeCodeProject,
        Client::Cursor,
        Client::Codex,
        Client::Windsurf,
        Client::ClaudeDesktop,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Client::Vscode => "VS Code",
            Client::ClaudeCode => "Claude Code",
            Client::ClaudeCodeProject => "Claude Code (project)",
            Client::Cursor => "Cursor",
            Client::Codex => "Codex",
            Client::Windsurf => "Windsurf",
            Client::ClaudeDesktop => "Claude Desktop",
        }
    }

    pub fn how(self) -> &'static str {
        match self {
            Client::Vscode => "Save as .vscode/mcp.json in your project (or add to your user MCP configuration).",
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
        }
    }

    pub fn target(self, endpoint: &Endpoint<'_>) -> Target {
        Target {
            id: self,
            name: self.name(),
            how: self.how(),
            snippet: snippet(self, endpoint),
        }
    }
}

/// Every client's target, in menu order.
pub fn all(endpoint: &Endpoint<'_>) -> Vec<Target> {
    Client::ALL.iter().map(|c| c.target(endpoint)).collect()
}

/// The snippet for `client`.
pub fn snippet(client: Client, endpoint: &Endpoint<'_>) -> String {
    let url = endpoint.mcp_url;
    let auth = endpoint.token.map(|t| format!("Bearer {t}"));
    let with_headers = |mut server: serde_json::Value| {
        if let Some(a) = &auth {
            server["headers"] = json!({ "Authorization": a });
        }
        server
    };
    match client {
        Client::Vscode => {
            pretty(json!({ "servers": { "local-mcp": with_headers(json!({ "type": "http", "url": url })) } }))
        }
        Client::Cursor => pretty(json!({ "mcpServers": { "local-mcp": with_headers(json!({ "url": url })) } })),
        Client::Windsurf => pretty(json!({ "mcpServers": { "local-mcp": with_headers(json!({ "serverUrl": url })) } })),
        Client::ClaudeCodeProject => pretty(json!({
            "mcpServers": { "local-mcp": with_headers(json!({ "type": "http", "url": url })) }
        })),
        Client::ClaudeDesktop => {
            let mut args = vec!["stdio"];
            if let Some(q) = endpoint.queue {
                args.extend(["--queue", q]);
            }
            pretty(json!({
                "mcpServers": { "local-mcp": { "command": endpoint.bridge_program, "args": args } }
            }))
        }
        Client::ClaudeCode => match &auth {
            Some(a) => format!("claude mcp add --transport http local-mcp {url} --header \"Authorization: {a}\""),
            None => format!("claude mcp add --transport http local-mcp {url}"),
        },
        Client::Codex => {
            // Codex gives a tool call 60 s by default; a wait on an empty
            // queue can be longer (the wait setting goes up to a day).
            let mut toml = format!("[mcp_servers.local-mcp]\nurl = \"{url}\"\ntool_timeout_sec = 86460\n");
            if endpoint.token.is_some() {
                toml.push_str(&format!(
                    "# Codex reads the token from the environment: export {CODEX_TOKEN_ENV}=<your token>\n\
                     bearer_token_env_var = \"{CODEX_TOKEN_ENV}\"\n"
                ));
            }
            toml
        }
    }
}

/// This program's absolute path: what a stdio-only client should launch
/// (`<program> stdio`; desktop apps do not inherit a shell's PATH). Both
/// `local-mcp` and `local-mcp-server` serve the bridge.
pub fn bridge_program() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.to_str().map(str::to_owned))
        .unwrap_or_else(|| "local-mcp-server".into())
}

fn pretty(v: serde_json::Value) -> String {
    serde_json::to_string_pretty(&v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const URL: &str = "http://127.0.0.1:8000/mcp";

    fn endpoint(token: Option<&str>) -> Endpoint<'_> {
        Endpoint {
            mcp_url: URL,
            queue: None,
            token,
            bridge_program: "/usr/bin/local-mcp-server",
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
    fn codex_gets_toml_and_never_an_inline_token() {
        let plain: toml::Table = snippet(Client::Codex, &endpoint(None)).parse().unwrap();
        assert_eq!(plain["mcp_servers"]["local-mcp"]["url"].as_str(), Some(URL));
        assert!(
            plain["mcp_servers"]["local-mcp"]["tool_timeout_sec"]
                .as_integer()
                .unwrap()
                > 86_400
        );
        let text = snippet(Client::Codex, &endpoint(Some("t0k")));
        assert!(!text.contains("t0k"));
        let with_token: toml::Table = text.parse().unwrap();
        assert_eq!(
            with_token["mcp_servers"]["local-mcp"]["bearer_token_env_var"].as_str(),
            Some(CODEX_TOKEN_ENV)
        );
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
    fn claude_code_projects_get_an_mcp_json() {
        let v = json_of(Client::ClaudeCodeProject, Some("t0k"));
        assert_eq!(v["mcpServers"]["local-mcp"]["type"], "http");
        assert_eq!(v["mcpServers"]["local-mcp"]["url"], URL);
        assert_eq!(v["mcpServers"]["local-mcp"]["headers"]["Authorization"], "Bearer t0k");
    }
}
