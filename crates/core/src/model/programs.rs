//! The MCP client programs local-mcp knows, in one table keyed by one enum
//! ([`McpClient`]): what each is called, what a person does with its
//! snippet, where its servers sit in its file, and how long it lets one tool
//! call run (its [`Limit`]s, by the names it calls itself). What depends on
//! the machine — where its files are, whether it is installed — is
//! `client_files::env`'s, and the shape of its entry `snippets`'s: each a
//! `match` on the same enum, so a new client does not compile until every
//! one of them says what it does for it (`docs/ARCHITECTURE.md`, "Where to
//! add…").

use serde::{Deserialize, Serialize};

use super::clients::Limit;

/// The MCP client programs local-mcp configures, each one entry of the table below.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum McpClient {
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

/// What local-mcp knows of one client program.
pub struct Program {
    /// The id the CLI, the API and the tray menu use (`claude-code`).
    pub id: &'static str,
    pub name: &'static str,
    /// One sentence: where to put its snippet or what to do with it.
    pub how: &'static str,
    /// Where the client keeps its servers, as a path of object keys from the
    /// top of its file (`["servers"]` for VS Code, `["mcp_servers"]` in Codex's TOML).
    pub servers_key: &'static [&'static str],
    /// How long it lets a tool call run, by the names its calls carry
    /// (none where its calls carry another entry's name, or nothing is known).
    pub limits: &'static [Limit],
}

impl McpClient {
    pub const ALL: [McpClient; 15] = [
        McpClient::Vscode,
        McpClient::VscodeInsiders,
        McpClient::ClaudeCode,
        McpClient::ClaudeCodeProject,
        McpClient::Cursor,
        McpClient::Codex,
        McpClient::Windsurf,
        McpClient::ClaudeDesktop,
        McpClient::GeminiCli,
        McpClient::CopilotCli,
        McpClient::Cline,
        McpClient::Opencode,
        McpClient::Zed,
        McpClient::LmStudio,
        McpClient::Goose,
    ];

    /// Its entry in the table.
    pub fn program(self) -> &'static Program {
        match self {
            McpClient::Vscode => &VSCODE,
            McpClient::VscodeInsiders => &VSCODE_INSIDERS,
            McpClient::ClaudeCode => &CLAUDE_CODE,
            McpClient::ClaudeCodeProject => &CLAUDE_CODE_PROJECT,
            McpClient::Cursor => &CURSOR,
            McpClient::Codex => &CODEX,
            McpClient::Windsurf => &WINDSURF,
            McpClient::ClaudeDesktop => &CLAUDE_DESKTOP,
            McpClient::GeminiCli => &GEMINI_CLI,
            McpClient::CopilotCli => &COPILOT_CLI,
            McpClient::Cline => &CLINE,
            McpClient::Opencode => &OPENCODE,
            McpClient::Zed => &ZED,
            McpClient::LmStudio => &LM_STUDIO,
            McpClient::Goose => &GOOSE,
        }
    }

    /// The id the CLI, the API and the tray menu use (`claude-code`).
    pub fn id(self) -> &'static str {
        self.program().id
    }

    /// The client with that id.
    pub fn from_id(id: &str) -> Option<McpClient> {
        McpClient::ALL.into_iter().find(|c| c.id() == id)
    }

    pub fn name(self) -> &'static str {
        self.program().name
    }

    pub fn how(self) -> &'static str {
        self.program().how
    }

    pub fn servers_key(self) -> &'static [&'static str] {
        self.program().servers_key
    }
}

/// Clients whose calls local-mcp sees but which it does not configure.
pub const CALLERS_ONLY: &[Limit] = &[Limit {
    matches: "roo",
    client: "Roo Code",
    seconds: 60,
    version: "as documented 2026-11",
    source: "Network Timeout defaults to 1 minute (RooCodeInc/Roo-Code-Docs using-mcp-in-roo.mdx)",
}];

const VSCODE: Program = Program {
    id: "vscode",
    name: "VS Code",
    how: "Save as .vscode/mcp.json in your project (or add to your user MCP configuration).",
    servers_key: &["servers"],
    limits: &[
        Limit {
            matches: "visual studio code",
            client: "VS Code",
            seconds: 300,
            version: "1.103",
            source: "Copilot Chat cancels a tool call after 5 minutes, progress or not (microsoft/vscode#261734)",
        },
        Limit {
            matches: "visual-studio-code",
            client: "VS Code",
            seconds: 300,
            version: "1.103",
            source: "as above (Insiders and other builds name themselves this way)",
        },
    ],
};
const VSCODE_INSIDERS: Program = Program {
    id: "vscode-insiders",
    name: "VS Code Insiders",
    how: "Save as .vscode/mcp.json in your project (or add to your user MCP configuration).",
    servers_key: &["servers"],
    limits: &[],
};
const CLAUDE_CODE: Program = Program {
    id: "claude-code",
    name: "Claude Code",
    how: "Run this in a terminal.",
    servers_key: &["mcpServers"],
    limits: &[Limit {
        matches: "claude-code",
        client: "Claude Code",
        seconds: 120,
        version: "2.1.330",
        source: "an MCP call still running after 120000 ms is moved to the background \
                     (feature tengu_mcp_auto_background, on by default; CLAUDE_CODE_MCP_AUTO_BACKGROUND_MS), \
                     and a result that arrives later is a notification the model may ignore \
                     (anthropics/claude-code#78566, #78407); read in the package's code, where \
                     the remote idle limit is 300 s (CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT)",
    }],
};
const CLAUDE_CODE_PROJECT: Program = Program {
    id: "claude-code-project",
    name: "Claude Code (project)",
    how: "Save as .mcp.json at the root of your project; Claude Code asks once to approve it.",
    servers_key: &["mcpServers"],
    limits: &[],
};
const CURSOR: Program = Program {
    id: "cursor",
    name: "Cursor",
    how: "Save as .cursor/mcp.json in your project, or ~/.cursor/mcp.json for all projects.",
    servers_key: &["mcpServers"],
    limits: &[Limit {
        matches: "cursor",
        client: "Cursor",
        seconds: 300,
        version: "as reported in 2026",
        source: "no documented setting; long calls reported cut at about 5 minutes (forum reports, 2026)",
    }],
};
const CODEX: Program = Program {
    id: "codex",
    name: "Codex",
    how: "Add to ~/.codex/config.toml.",
    servers_key: &["mcp_servers"],
    limits: &[Limit {
        matches: "codex",
        client: "Codex",
        seconds: 300,
        version: "0.169.0",
        source: "measured: `timed out awaiting tools/call after 300s` and notifications/cancelled at 300 s, \
                     progress or not (the default tool_timeout_sec became 300 s in openai/codex#28234)",
    }],
};
const WINDSURF: Program = Program {
    id: "windsurf",
    name: "Windsurf",
    how: "Add to ~/.codeium/windsurf/mcp_config.json.",
    servers_key: &["mcpServers"],
    limits: &[],
};
const CLAUDE_DESKTOP: Program = Program {
    id: "claude-desktop",
    name: "Claude Desktop",
    how: "Add to claude_desktop_config.json (Settings → Developer → Edit Config), then restart Claude Desktop.",
    servers_key: &["mcpServers"],
    limits: &[
        Limit {
            matches: "claude-ai",
            client: "Claude Desktop",
            seconds: 240,
            version: "1.46388",
            source: "\"No result received from the Claude Desktop app after waiting 4 minutes\" (anthropics/claude-code#44032, #91898)",
        },
    ],
};
const GEMINI_CLI: Program = Program {
    id: "gemini-cli",
    name: "Gemini CLI",
    how: "Add to ~/.gemini/settings.json (or .gemini/settings.json in your project).",
    servers_key: &["mcpServers"],
    limits: &[Limit {
        matches: "gemini",
        client: "Gemini CLI",
        seconds: 600,
        version: "0.61.0",
        source: "measured: notifications/cancelled at 600 s, progress or not (per-server timeout default \
                     600 000 ms, google-gemini/gemini-cli docs/tools/mcp-server.md)",
    }],
};
const COPILOT_CLI: Program = Program {
    id: "copilot-cli",
    name: "GitHub Copilot CLI",
    how: "Add to ~/.copilot/mcp-config.json.",
    servers_key: &["mcpServers"],
    limits: &[Limit {
        matches: "copilot",
        client: "GitHub Copilot CLI",
        seconds: 180,
        version: "1.0.102",
        source: "measured: `MCP error -32001: Request timed out` after 180 s without progress",
    }],
};
const CLINE: Program = Program {
    id: "cline",
    name: "Cline",
    how: "Add to Cline's MCP settings (MCP Servers → Configure → cline_mcp_settings.json).",
    servers_key: &["mcpServers"],
    limits: &[Limit {
        matches: "cline",
        client: "Cline",
        seconds: 60,
        version: "as documented 2026-11",
        source: "DEFAULT_MCP_TIMEOUT_SECONDS = 60 (cline src/shared/mcp.ts)",
    }],
};
const OPENCODE: Program = Program {
    id: "opencode",
    name: "opencode",
    how: "Add to ~/.config/opencode/opencode.json (or opencode.json in your project).",
    servers_key: &["mcp"],
    limits: &[Limit {
        matches: "opencode",
        client: "opencode",
        seconds: 300,
        version: "1.18.9",
        source: "a 5-minute cap on MCP calls reported in 1.18 (anomalyco/opencode#39584)",
    }],
};
const ZED: Program = Program {
    id: "zed",
    name: "Zed",
    how: "Add to ~/.config/zed/settings.json (or .zed/settings.json in your project).",
    servers_key: &["context_servers"],
    limits: &[Limit {
        matches: "zed",
        client: "Zed",
        seconds: 60,
        version: "as documented 2025-12",
        source: "context servers' request timeout defaults to 60 s (zed-industries/zed PR #45378)",
    }],
};
const LM_STUDIO: Program = Program {
    id: "lm-studio",
    name: "LM Studio",
    how: "Add to ~/.lmstudio/mcp.json (Program → Install → Edit mcp.json).",
    servers_key: &["mcpServers"],
    limits: &[],
};
const GOOSE: Program = Program {
    id: "goose",
    name: "Goose",
    how: "Add under extensions: in ~/.config/goose/config.yaml (or use Install in Goose).",
    servers_key: &["extensions"],
    limits: &[Limit {
        matches: "goose",
        client: "Goose",
        seconds: 300,
        version: "as documented 2026-11",
        source: "extension timeout defaults to 300 s (block/goose docs)",
    }],
};
