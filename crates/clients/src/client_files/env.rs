//! Where each client keeps its configuration on this machine, and whether it
//! looks installed. Everything is computed from an [`Env`] (the home folder,
//! the platform config folder, a few variables, `PATH`), so tests point it at
//! a temporary home and nothing reads the real one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::paths;
use crate::snippets::Client;

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
    pub fn user_file(&self, client: Client) -> Option<PathBuf> {
        Some(match client {
            Client::Vscode => self.vscode_user(false).join("mcp.json"),
            Client::VscodeInsiders => self.vscode_user(true).join("mcp.json"),
            Client::Cursor => self.home.join(".cursor").join("mcp.json"),
            Client::ClaudeCode | Client::ClaudeCodeProject | Client::Goose => return None,
            Client::Codex => self.codex_home().join("config.toml"),
            Client::Windsurf => self.home.join(".codeium").join("windsurf").join("mcp_config.json"),
            Client::ClaudeDesktop => claude_desktop_file(self),
            Client::GeminiCli => self.home.join(".gemini").join("settings.json"),
            Client::CopilotCli => self
                .var("COPILOT_HOME")
                .unwrap_or_else(|| self.home.join(".copilot"))
                .join("mcp-config.json"),
            Client::Cline => self
                .vscode_user(false)
                .join("globalStorage")
                .join("saoudrizwan.claude-dev")
                .join("settings")
                .join("cline_mcp_settings.json"),
            Client::Opencode => {
                let dir = self.xdg_config().join("opencode");
                let jsonc = dir.join("opencode.jsonc");
                if jsonc.exists() {
                    jsonc
                } else {
                    dir.join("opencode.json")
                }
            }
            Client::Zed => {
                if cfg!(windows) {
                    self.config.join("Zed").join("settings.json")
                } else {
                    self.xdg_config().join("zed").join("settings.json")
                }
            }
            Client::LmStudio => self.home.join(".lmstudio").join("mcp.json"),
        })
    }

    /// The client's file inside a project folder, where it has one.
    pub fn project_file(&self, client: Client, project: &Path) -> Option<PathBuf> {
        let relative: &[&str] = match client {
            Client::Vscode | Client::VscodeInsiders => &[".vscode", "mcp.json"],
            Client::Cursor => &[".cursor", "mcp.json"],
            Client::ClaudeCode | Client::ClaudeCodeProject => &[".mcp.json"],
            Client::Codex => &[".codex", "config.toml"],
            Client::GeminiCli => &[".gemini", "settings.json"],
            Client::Zed => &[".zed", "settings.json"],
            Client::Opencode => {
                let jsonc = project.join("opencode.jsonc");
                return Some(if jsonc.exists() {
                    jsonc
                } else {
                    project.join("opencode.json")
                });
            }
            Client::Windsurf
            | Client::ClaudeDesktop
            | Client::CopilotCli
            | Client::Cline
            | Client::LmStudio
            | Client::Goose => return None,
        };
        Some(relative.iter().fold(project.to_path_buf(), |p, part| p.join(part)))
    }

    /// Whether the client looks installed: its folder exists (and is not one
    /// connect itself made, listed in `ours`) or its command is on `PATH`.
    pub fn installed(&self, client: Client, ours: &[PathBuf]) -> bool {
        let (dirs, commands): (Vec<PathBuf>, &[&str]) = match client {
            Client::Vscode => (vec![self.config.join("Code")], &["code"]),
            Client::VscodeInsiders => (vec![self.config.join("Code - Insiders")], &["code-insiders"]),
            Client::Cursor => (vec![self.home.join(".cursor")], &["cursor"]),
            Client::ClaudeCode | Client::ClaudeCodeProject => {
                (vec![self.claude_dir(), self.claude_code_state()], &["claude"])
            }
            Client::Codex => (vec![self.codex_home()], &["codex"]),
            Client::Windsurf => (vec![self.home.join(".codeium").join("windsurf")], &["windsurf"]),
            Client::ClaudeDesktop => (
                claude_desktop_file(self)
                    .parent()
                    .map(Path::to_path_buf)
                    .into_iter()
                    .collect(),
                &[],
            ),
            Client::GeminiCli => (vec![self.home.join(".gemini")], &["gemini"]),
            Client::CopilotCli => (
                vec![self.var("COPILOT_HOME").unwrap_or_else(|| self.home.join(".copilot"))],
                &["copilot"],
            ),
            Client::Cline => (
                vec![self
                    .vscode_user(false)
                    .join("globalStorage")
                    .join("saoudrizwan.claude-dev")],
                &["cline"],
            ),
            Client::Opencode => (vec![self.xdg_config().join("opencode")], &["opencode"]),
            Client::Zed => (
                self.user_file(Client::Zed)
                    .and_then(|f| f.parent().map(Path::to_path_buf))
                    .into_iter()
                    .collect(),
                &["zed", "zeditor"],
            ),
            Client::LmStudio => (vec![self.home.join(".lmstudio")], &["lms"]),
            Client::Goose => (vec![self.xdg_config().join("goose")], &["goose"]),
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
