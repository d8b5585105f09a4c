//! Where each client keeps its configuration on this machine, and whether it
//! looks installed. Everything is computed from an [`Env`] (the home folder,
//! the platform config folder, a few variables, `PATH`), so tests point it at
//! a temporary home and nothing reads the real one.

use crate::model::McpClient;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::paths;

/// The facts the client paths are computed from.
#[derive(Debug, Clone)]
pub struct Env {
    pub home: PathBuf,
    /// `$XDG_CONFIG_HOME` or `~/.config` on Linux, `~/Library/Application Support`
    /// on macOS, `%APPDATA%` on Windows.
    pub config: PathBuf,
    /// The variables that move a client's folder (`CODEX_HOME`, `CLAUDE_CONFIG_DIR`, `COPILOT_HOME`).
    pub vars: BTreeMap<String, String>,
    /// The folders of `PATH`, in order.
    pub path: Vec<PathBuf>,
    /// Our record of what we wrote where (and the backups we made).
    pub records: PathBuf,
}

const MOVED_BY: [&str; 3] = ["CODEX_HOME", "CLAUDE_CONFIG_DIR", "COPILOT_HOME"];

impl Env {
    /// This process's home, folders and variables.
    pub fn from_process() -> Option<Env> {
        let (home, config) = crate::paths::client_folders()?;
        let vars = MOVED_BY
            .iter()
            .filter_map(|k| {
                std::env::var(k)
                    .ok()
                    .filter(|v| !v.is_empty())
                    .map(|v| ((*k).to_owned(), v))
            })
            .collect();
        let path = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).collect())
            .unwrap_or_default();
        Some(Env {
            home,
            config,
            vars,
            path,
            records: crate::paths::default_connections_file()?,
        })
    }

    fn var(&self, name: &str) -> Option<PathBuf> {
        self.vars.get(name).map(PathBuf::from)
    }

    /// The first folder of `PATH` holding an executable `name`.
    pub fn on_path(&self, name: &str) -> Option<PathBuf> {
        let names: Vec<String> = if cfg!(windows) {
            vec![format!("{name}.exe"), format!("{name}.cmd")]
        } else {
            vec![name.to_owned()]
        };
        self.path
            .iter()
            .flat_map(|dir| names.iter().map(move |n| dir.join(n)))
            .find(|p| paths::is_program(p))
    }

    /// The VS Code user folder (`…/Code/User`), which Cline's settings live under too.
    fn vscode_user(&self, insiders: bool) -> PathBuf {
        self.config
            .join(if insiders { "Code - Insiders" } else { "Code" })
            .join("User")
    }

    fn claude_dir(&self) -> PathBuf {
        self.var("CLAUDE_CONFIG_DIR")
            .unwrap_or_else(|| self.home.join(".claude"))
    }

    /// The file Claude Code keeps its user-scope servers in (read only: Claude
    /// Code rewrites it itself, so changes go through its `claude mcp` command).
    pub fn claude_code_state(&self) -> PathBuf {
        match self.var("CLAUDE_CONFIG_DIR") {
            Some(dir) => dir.join(".claude.json"),
            None => self.home.join(".claude.json"),
        }
    }

    /// Claude Code's user settings (where its hooks live), or a project's.
    pub fn claude_settings(&self, project: Option<&Path>) -> PathBuf {
        match project {
            Some(dir) => dir.join(".claude").join("settings.json"),
            None => self.claude_dir().join("settings.json"),
        }
    }

    /// Our file of VS Code agent hooks in a project (VS Code loads every
    /// `.github/hooks/*.json` of the workspace).
    pub fn vscode_hooks(&self, project: &Path) -> PathBuf {
        project.join(".github").join("hooks").join("local-mcp.json")
    }

    fn codex_home(&self) -> PathBuf {
        self.var("CODEX_HOME").unwrap_or_else(|| self.home.join(".codex"))
    }

    /// Tools that follow XDG on every Unix (opencode, Zed) rather than the platform folder.
    fn xdg_config(&self) -> PathBuf {
        if cfg!(target_os = "macos") {
            self.home.join(".config")
        } else {
            self.config.clone()
        }
    }

    /// The client's user-level configuration file, or `None` where it has
    /// none we may write (Claude Code's is its own `claude mcp` command's;
    /// Goose's is YAML, which we do not edit: its comments would not survive).
    pub fn user_file(&self, client: McpClient) -> Option<PathBuf> {
        Some(match client {
            McpClient::Vscode => self.vscode_user(false).join("mcp.json"),
            McpClient::VscodeInsiders => self.vscode_user(true).join("mcp.json"),
            McpClient::Cursor => self.home.join(".cursor").join("mcp.json"),
            McpClient::ClaudeCode | McpClient::ClaudeCodeProject | McpClient::Goose => return None,
            McpClient::Codex => self.codex_home().join("config.toml"),
            McpClient::Windsurf => self.home.join(".codeium").join("windsurf").join("mcp_config.json"),
            McpClient::ClaudeDesktop => claude_desktop_file(self),
            McpClient::GeminiCli => self.home.join(".gemini").join("settings.json"),
            McpClient::CopilotCli => self
                .var("COPILOT_HOME")
                .unwrap_or_else(|| self.home.join(".copilot"))
                .join("mcp-config.json"),
            McpClient::Cline => self
                .vscode_user(false)
                .join("globalStorage")
                .join("saoudrizwan.claude-dev")
                .join("settings")
                .join("cline_mcp_settings.json"),
            McpClient::Opencode => {
                let dir = self.xdg_config().join("opencode");
                let jsonc = dir.join("opencode.jsonc");
                if jsonc.exists() {
                    jsonc
                } else {
                    dir.join("opencode.json")
                }
            }
            McpClient::Zed => {
                if cfg!(windows) {
                    self.config.join("Zed").join("settings.json")
                } else {
                    self.xdg_config().join("zed").join("settings.json")
                }
            }
            McpClient::LmStudio => self.home.join(".lmstudio").join("mcp.json"),
        })
    }

    /// The client's file inside a project folder, where it has one.
    pub fn project_file(&self, client: McpClient, project: &Path) -> Option<PathBuf> {
        let relative: &[&str] = match client {
            McpClient::Vscode | McpClient::VscodeInsiders => &[".vscode", "mcp.json"],
            McpClient::Cursor => &[".cursor", "mcp.json"],
            McpClient::ClaudeCode | McpClient::ClaudeCodeProject => &[".mcp.json"],
            McpClient::Codex => &[".codex", "config.toml"],
            McpClient::GeminiCli => &[".gemini", "settings.json"],
            McpClient::Zed => &[".zed", "settings.json"],
            McpClient::Opencode => {
                let jsonc = project.join("opencode.jsonc");
                return Some(if jsonc.exists() {
                    jsonc
                } else {
                    project.join("opencode.json")
                });
            }
            McpClient::Windsurf
            | McpClient::ClaudeDesktop
            | McpClient::CopilotCli
            | McpClient::Cline
            | McpClient::LmStudio
            | McpClient::Goose => return None,
        };
        Some(relative.iter().fold(project.to_path_buf(), |p, part| p.join(part)))
    }

    /// Whether the client looks installed: its folder exists (and is not one
    /// connect itself made, listed in `ours`) or its command is on `PATH`.
    pub fn installed(&self, client: McpClient, ours: &[PathBuf]) -> bool {
        let (dirs, commands): (Vec<PathBuf>, &[&str]) = match client {
            McpClient::Vscode => (vec![self.config.join("Code")], &["code"]),
            McpClient::VscodeInsiders => (vec![self.config.join("Code - Insiders")], &["code-insiders"]),
            McpClient::Cursor => (vec![self.home.join(".cursor")], &["cursor"]),
            McpClient::ClaudeCode | McpClient::ClaudeCodeProject => {
                (vec![self.claude_dir(), self.claude_code_state()], &["claude"])
            }
            McpClient::Codex => (vec![self.codex_home()], &["codex"]),
            McpClient::Windsurf => (vec![self.home.join(".codeium").join("windsurf")], &["windsurf"]),
            McpClient::ClaudeDesktop => (
                claude_desktop_file(self)
                    .parent()
                    .map(Path::to_path_buf)
                    .into_iter()
                    .collect(),
                &[],
            ),
            McpClient::GeminiCli => (vec![self.home.join(".gemini")], &["gemini"]),
            McpClient::CopilotCli => (
                vec![self.var("COPILOT_HOME").unwrap_or_else(|| self.home.join(".copilot"))],
                &["copilot"],
            ),
            McpClient::Cline => (
                vec![self
                    .vscode_user(false)
                    .join("globalStorage")
                    .join("saoudrizwan.claude-dev")],
                &["cline"],
            ),
            McpClient::Opencode => (vec![self.xdg_config().join("opencode")], &["opencode"]),
            McpClient::Zed => (
                self.user_file(McpClient::Zed)
                    .and_then(|f| f.parent().map(Path::to_path_buf))
                    .into_iter()
                    .collect(),
                &["zed", "zeditor"],
            ),
            McpClient::LmStudio => (vec![self.home.join(".lmstudio")], &["lms"]),
            McpClient::Goose => (vec![self.xdg_config().join("goose")], &["goose"]),
        };
        dirs.iter().any(|d| d.exists() && !ours.contains(d)) || commands.iter().any(|c| self.on_path(c).is_some())
    }
}

/// Claude Desktop's file: where the platform's store install keeps it
/// (`paths::claude_desktop_store_folder`), else its config folder's.
fn claude_desktop_file(env: &Env) -> PathBuf {
    paths::claude_desktop_store_folder()
        .unwrap_or_else(|| env.config.join("Claude"))
        .join("claude_desktop_config.json")
}
