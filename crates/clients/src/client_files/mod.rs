//! `connect` / `disconnect`: put local-mcp into each client's own
//! configuration, safely, and take it out again.
//!
//! The rules (each one tested in `engine/tests/connect.rs`):
//! - a file that does not parse is never written: it stays byte-identical
//!   and the error names the file and the reason;
//! - only our `local-mcp` entry changes: comments, formatting, key order and
//!   unknown keys stay (JSONC-aware edits, `toml_edit` for Codex); an
//!   identical entry means no write at all;
//! - before our first change to a file, a timestamped copy beside it; then
//!   temp file, fsync, rename, and a re-read that checks the result;
//! - `disconnect` removes only an entry that still equals what we wrote
//!   (recorded in `connections.json` in our config folder);
//! - Claude Code's `~/.claude.json` is never edited: Claude Code rewrites it
//!   itself, so user scope goes through its own `claude mcp` command.
//!
//! This file decides what goes where ([`connect`], [`disconnect`],
//! [`update_all`]); every file change takes the one path in [`edit`]. Where
//! each client keeps its file is in [`env`], what the entry looks like in
//! [`crate::snippets`], the Stop hooks in [`hooks`], what the Connect panel
//! shows in [`status`], the deep links in [`links`].

mod claude;
mod edit;
mod env;
mod files;
mod hooks;
mod json_doc;
pub mod links;
mod records;
mod status;
mod toml_doc;

use crate::model::McpClient;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

pub use env::Env;
pub use records::Backup;
pub use status::{client_status, listed, status, ClientStatus, State};

use crate::model::{self, DEFAULT_QUEUE};
use crate::snippets::{self, Endpoint, ENTRY_NAME};
use crate::{Error, Result};
use edit::{read_doc, remove_entry, set_entry};
use hooks::{hook_place, remove_hook, set_hook};
use records::Records;

/// The running server as clients should reach it.
#[derive(Debug, Clone)]
pub struct Site {
    /// `http://127.0.0.1:<port>`, no path.
    pub base_url: String,
    /// The bearer token, when the server requires one.
    pub token: Option<String>,
    /// This program's absolute path: the stdio bridge and the Stop hook run it.
    pub program: String,
    /// The server's database when it is not the default one (`--db-path`
    /// for the bridge and the hook).
    pub database: Option<String>,
}

impl Site {
    /// Our entry for `client`, pointed at `queue`.
    pub fn entry(&self, client: McpClient, queue: &str) -> Value {
        let url = format!("{}{}", self.base_url, model::mcp_path(queue));
        let endpoint = Endpoint {
            mcp_url: &url,
            queue: (queue != DEFAULT_QUEUE).then_some(queue),
            token: self.token.as_deref(),
            bridge_program: &self.program,
            database: self.database.as_deref(),
        };
        snippets::entry(client, &endpoint)
    }

    /// Our entry for `client` in a project's file (`project`) or the user's.
    /// A project's file is one people commit: with a token required it
    /// carries a reference to the token, in the client's own terms, where
    /// the client has one — Claude Code's `headersHelper` runs
    /// `token --header-json`; Codex (`bearer_token_env_var`), Cursor, Gemini
    /// CLI and opencode read a variable (`LOCAL_MCP_TOKEN`); VS Code, which does not
    /// expand one in headers, gets the stdio bridge — and the token itself
    /// only where a client has no way (said by [`project_note`]).
    pub fn entry_in(&self, client: McpClient, queue: &str, project: bool) -> Value {
        let mut entry = self.entry(client, queue);
        if !project || self.token.is_none() {
            return entry;
        }
        let helper = {
            let mut command = hooks::shell_word(&self.program);
            if let Some(db) = &self.database {
                command.push_str(&format!(" --db-path {}", hooks::shell_word(db)));
            }
            command.push_str(" token --header-json");
            command
        };
        let Some(object) = entry.as_object_mut() else {
            return entry;
        };
        match client {
            McpClient::ClaudeCode | McpClient::ClaudeCodeProject => {
                object.remove("headers");
                object.insert("headersHelper".into(), helper.into());
            }
            McpClient::Codex => {
                object.remove("http_headers");
                object.insert("bearer_token_env_var".into(), TOKEN_VARIABLE.into());
            }
            McpClient::Vscode | McpClient::VscodeInsiders => return self.link_entry(client, queue),
            McpClient::Cursor => {
                object.insert(
                    "headers".into(),
                    serde_json::json!({ "Authorization": format!("Bearer ${{env:{TOKEN_VARIABLE}}}") }),
                );
            }
            McpClient::GeminiCli => {
                object.insert(
                    "headers".into(),
                    serde_json::json!({ "Authorization": format!("Bearer ${{{TOKEN_VARIABLE}}}") }),
                );
            }
            McpClient::Opencode => {
                object.insert(
                    "headers".into(),
                    serde_json::json!({ "Authorization": format!("Bearer {{env:{TOKEN_VARIABLE}}}") }),
                );
            }
            _ => {}
        }
        entry
    }

    /// The entry an install link carries for `client`: ours as `entry`
    /// gives it, or — when the server requires a token — the stdio bridge,
    /// which reads the token itself. A link reaches the client's handler in
    /// its command line (`xdg-open`, then `code --open-url <link>`), which
    /// every account can read: it never carries the token.
    pub fn link_entry(&self, client: McpClient, queue: &str) -> Value {
        if self.token.is_none() {
            return self.entry(client, queue);
        }
        let url = format!("{}{}", self.base_url, model::mcp_path(queue));
        let mut bridge = snippets::bridge_entry(&Endpoint {
            mcp_url: &url,
            queue: (queue != DEFAULT_QUEUE).then_some(queue),
            token: None,
            bridge_program: &self.program,
            database: self.database.as_deref(),
        });
        if matches!(client, McpClient::Vscode | McpClient::VscodeInsiders) {
            bridge["type"] = "stdio".into();
        }
        bridge
    }
}

/// The variable a project's file names for the token (Codex, Cursor,
/// Gemini CLI, opencode), so the file itself holds no secret.
pub const TOKEN_VARIABLE: &str = "LOCAL_MCP_TOKEN";

/// What a project's file, with a token required, asks of the person (see
/// [`Site::entry_in`]); `None` when nothing.
pub fn project_note(client: McpClient, token_required: bool) -> Option<&'static str> {
    if !token_required {
        return None;
    }
    match client {
        McpClient::Codex | McpClient::Cursor | McpClient::GeminiCli | McpClient::Opencode => Some(
            "the file refers to the token as LOCAL_MCP_TOKEN, holding no secret: set that variable where the client \
             starts (export LOCAL_MCP_TOKEN=$(local-mcp-server token))",
        ),
        McpClient::ClaudeCode | McpClient::ClaudeCodeProject | McpClient::Vscode | McpClient::VscodeInsiders => None,
        _ => Some(
            "this client has no way to refer to the token from a project's file: the file holds it; keep it out \
             of version control",
        ),
    }
}

/// What to connect or disconnect.
#[derive(Debug, Clone, Default)]
pub struct Request<'a> {
    /// A project folder: the client's project-level file instead of its user one.
    pub project: Option<&'a Path>,
    /// Point the client at this queue (`/mcp/q/<name>`).
    pub queue: Option<&'a str>,
    /// Also install the client's `Stop` hook (Claude Code's, or VS Code's in a project).
    pub hooks: bool,
    /// Say what would change, change nothing.
    pub dry_run: bool,
    /// Write even into a folder another account can write to (see [`refuse_shared`]).
    pub allow_shared_folder: bool,
}

/// What happened to one file.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Change {
    #[schema(value_type = String)]
    pub client: McpClient,
    /// The file (or, for Claude Code's user scope, the file its `claude` command keeps).
    pub file: String,
    /// `server` (our MCP entry) or `hook` (Claude Code's Stop hook).
    pub what: &'static str,
    pub action: Action,
    /// The backup made before this first change to the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup: Option<String>,
    /// With `dry_run`: the file as it would be written (or the command that would run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
    /// What the person should do next, if anything (e.g. restart the client).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Written,
    /// Already exactly so: nothing written.
    Unchanged,
    Removed,
    /// Nothing of ours was there.
    Absent,
    WouldWrite,
    WouldRemove,
}

/// Where a client's entry lives for a request.
pub(super) enum Place {
    File(PathBuf),
    /// Claude Code's user scope: its own command.
    ClaudeUser,
}

pub(super) fn place(env: &Env, client: McpClient, project: Option<&Path>) -> Result<Place> {
    match (client, project) {
        (McpClient::ClaudeCode, None) => Ok(Place::ClaudeUser),
        (McpClient::ClaudeCodeProject, None) => Err(Error::Conflict(
            "claude-code-project needs a project folder (--project DIR)".into(),
        )),
        (_, Some(dir)) => env.project_file(client, dir).map(Place::File).ok_or_else(|| {
            Error::Conflict(format!(
                "{} has no project-level configuration; connect it without a project folder",
                client.name()
            ))
        }),
        (McpClient::Goose, None) => Err(Error::Conflict(
            "Goose keeps its settings in YAML, which local-mcp does not edit (its comments and layout would not \
             survive); use Install in Goose, or paste what `config goose` prints under extensions:"
                .into(),
        )),
        (_, None) => env
            .user_file(client)
            .map(Place::File)
            .ok_or_else(|| Error::Conflict(format!("{} has no user-level file", client.name()))),
    }
}

/// Put our entry into `client`'s configuration (and, with `hooks`, Claude
/// Code's Stop hook). Returns one [`Change`] per file.
pub fn connect(env: &Env, site: &Site, client: McpClient, req: &Request<'_>) -> Result<Vec<Change>> {
    let queue = model::queue_or_default(req.queue)?;
    let hook = if req.hooks {
        let place = hook_place(env, site, client, req.project, &queue)?;
        if place.is_none() {
            return Err(Error::Conflict(format!(
                "--hooks: only Claude Code and VS Code (in a project) have a Stop hook; {} keeps looping through the tool's own instructions",
                client.name()
            )));
        }
        place
    } else {
        None
    };
    let place = place(env, client, req.project)?;
    if let Place::File(file) = &place {
        refuse_shared(file, req.allow_shared_folder)?;
    }
    if let Some((settings, _)) = &hook {
        refuse_shared(settings, req.allow_shared_folder)?;
    }
    let mut records = Records::load(&env.records).map_err(Error::Conflict)?;
    let wanted = site.entry_in(client, &queue, req.project.is_some());
    let mut changes = vec![match place {
        Place::File(file) => set_entry(&mut records, client, &file, &wanted, req.dry_run, req.project.is_some())?,
        Place::ClaudeUser => claude::set(env, &mut records, &wanted, req.dry_run)?,
    }];
    if let Some(asked) = project_note(client, site.token.is_some()).filter(|_| req.project.is_some()) {
        let note = &mut changes[0].note;
        *note = Some(match note.take() {
            Some(restart) => format!("{restart}; {asked}"),
            None => asked.to_owned(),
        });
    }
    if let Some((settings, element)) = hook {
        changes.push(set_hook(
            &mut records,
            client,
            &settings,
            &element,
            req.dry_run,
            req.project.is_some(),
        )?);
    }
    if !req.dry_run {
        records.save(&env.records).map_err(Error::Conflict)?;
    }
    Ok(changes)
}

/// Take our entry (and our Stop hook, if we installed one at that scope)
/// out of `client`'s configuration, if it is still what we wrote.
pub fn disconnect(env: &Env, client: McpClient, req: &Request<'_>) -> Result<Vec<Change>> {
    let mut records = Records::load(&env.records).map_err(Error::Conflict)?;
    let place = place(env, client, req.project)?;
    if let Place::File(file) = &place {
        refuse_shared(file, req.allow_shared_folder)?;
    }
    let mut changes = vec![match place {
        Place::File(file) => remove_entry(&mut records, client, &file, req.dry_run)?,
        Place::ClaudeUser => claude::remove(env, &mut records, req.dry_run)?,
    }];
    let settings = match client {
        McpClient::ClaudeCode | McpClient::ClaudeCodeProject => Some(env.claude_settings(req.project)),
        McpClient::Vscode | McpClient::VscodeInsiders => req.project.map(|dir| env.vscode_hooks(dir)),
        _ => None,
    };
    if let Some(settings) = settings {
        let settings = files::real_path(&settings);
        if let Some(written) = records.find(client.id(), &settings, "hook").cloned() {
            refuse_shared(&settings, req.allow_shared_folder)?;
            changes.push(remove_hook(
                &mut records,
                client,
                &settings,
                &written.entry,
                req.dry_run,
            )?);
        }
    }
    if !req.dry_run {
        records.save(&env.records).map_err(Error::Conflict)?;
    }
    Ok(changes)
}

/// Rewrite every entry we wrote that is outdated now (the port or token
/// changed) and that the person has not edited since. Errors are per client.
pub fn update_all(env: &Env, site: &Site) -> Result<Vec<std::result::Result<Change, String>>> {
    let records = Records::load(&env.records).map_err(Error::Conflict)?;
    let mut results = Vec::new();
    for written in records.writes.iter().filter(|w| w.kind == "server") {
        let Some(client) = McpClient::from_id(&written.client) else {
            continue;
        };
        let queue = queue_of(&written.entry);
        let project = project_of(env, client, &written.file);
        let wanted = site.entry_in(client, &queue, project.is_some());
        if written.entry == wanted {
            continue;
        }
        let req = Request {
            project: project.as_deref(),
            queue: Some(&queue),
            ..Request::default()
        };
        let current = match place(env, client, req.project) {
            Ok(Place::ClaudeUser) => read_doc(&env.claude_code_state())
                .ok()
                .flatten()
                .and_then(|(d, _)| d.get(client.servers_key(), ENTRY_NAME)),
            Ok(Place::File(f)) => read_doc(&f)
                .ok()
                .flatten()
                .and_then(|(d, _)| d.get(client.servers_key(), ENTRY_NAME)),
            Err(e) => {
                results.push(Err(format!("{}: {e}", client.name())));
                continue;
            }
        };
        if current.as_ref() != Some(&written.entry) {
            results.push(Err(format!(
                "{}: {} was changed since local-mcp wrote it; left alone",
                client.name(),
                written.file.display()
            )));
            continue;
        }
        match connect(env, site, client, &req) {
            Ok(mut changes) => results.push(Ok(changes.remove(0))),
            Err(e) => results.push(Err(format!("{}: {e}", client.name()))),
        }
    }
    Ok(results)
}

/// The backups we made, oldest first.
pub fn backups(env: &Env) -> Result<Vec<Backup>> {
    Ok(Records::load(&env.records).map_err(Error::Conflict)?.backups)
}

/// The project folder a recorded project-level file belongs to.
fn project_of(env: &Env, client: McpClient, file: &Path) -> Option<PathBuf> {
    if client == McpClient::ClaudeCode && file == env.claude_code_state() {
        return None;
    }
    if env.user_file(client).is_some_and(|u| files::real_path(&u) == file) {
        return None;
    }
    file.ancestors()
        .skip(1)
        .find(|dir| {
            env.project_file(client, dir)
                .is_some_and(|p| files::real_path(&p) == file)
        })
        .map(Path::to_path_buf)
}

/// Refuse to write `file` when another account can write into its folder
/// (a shared project folder): between our steps it could put a link where
/// our temporary file or backup goes, or swap the file itself, and so have
/// us write a file of its choosing. Both the folder named and the one a
/// link leads to are checked; a folder that does not exist yet is judged by
/// the nearest one that does.
fn refuse_shared(file: &Path, allowed: bool) -> Result<()> {
    if allowed {
        return Ok(());
    }
    for path in [file.to_path_buf(), files::real_path(file)] {
        let Some(mut dir) = path.parent().map(Path::to_path_buf) else {
            continue;
        };
        while !dir.exists() {
            match dir.parent() {
                Some(up) if !up.as_os_str().is_empty() => dir = up.to_path_buf(),
                _ => break,
            }
        }
        if let Some(why) = crate::private_fs::shared_writer(&dir) {
            return Err(Error::Conflict(format!(
                "{} is in {}, which other accounts can write to ({why}); local-mcp does not write there, \
                 because another account could redirect the write. Move the project, or pass \
                 --allow-shared-folder if you trust every account that can write there",
                file.display(),
                dir.display()
            )));
        }
        if let Some(why) = crate::private_fs::shared_file(&path) {
            return Err(Error::Conflict(format!(
                "{} can be changed by other accounts ({why}); local-mcp does not write into it, because \
                 another account could read what it writes or change it after. Pass --allow-shared-folder \
                 if you trust them",
                path.display()
            )));
        }
    }
    Ok(())
}

/// The queue an entry points at (from its URL, or the bridge's `--queue`).
pub(super) fn queue_of(entry: &Value) -> String {
    for key in ["url", "serverUrl", "httpUrl"] {
        if let Some(path) = entry[key]
            .as_str()
            .and_then(|u| url::Url::parse(u).ok())
            .map(|u| u.path().to_owned())
        {
            return model::queue_from_path(&path)
                .ok()
                .flatten()
                .map_or_else(|| DEFAULT_QUEUE.into(), model::QueueName::into_string);
        }
    }
    if let Some(args) = entry["args"].as_array() {
        if let Some(i) = args.iter().position(|a| a == "--queue") {
            if let Some(q) = args.get(i + 1).and_then(Value::as_str) {
                return q.to_owned();
            }
        }
    }
    DEFAULT_QUEUE.into()
}
