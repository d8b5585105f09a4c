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
//! Where each client keeps its file is in [`env`], what the entry looks like
//! in [`crate::snippets`], the deep links in [`links`].

mod claude;
mod env;
mod files;
mod json_doc;
pub mod links;
mod records;
mod toml_doc;

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

pub use env::Env;
pub use records::Backup;

use crate::model::{self, DEFAULT_QUEUE};
use crate::snippets::{self, Client, Endpoint, ENTRY_NAME};
use crate::{Error, Result};
use json_doc::JsonDoc;
use records::{Records, Written};
use toml_doc::TomlDoc;

/// The running server as clients should reach it.
#[derive(Debug, Clone)]
pub struct Site {
    /// `http://127.0.0.1:<port>`, no path.
    pub base_url: String,
    /// The bearer token, when the server requires one.
    pub token: Option<String>,
    /// This program's absolute path: the stdio bridge and the Stop hook run it.
    pub program: String,
}

impl Site {
    /// Our entry for `client`, pointed at `queue`.
    pub fn entry(&self, client: Client, queue: &str) -> Value {
        let url = format!("{}{}", self.base_url, model::mcp_path(queue));
        let endpoint = Endpoint {
            mcp_url: &url,
            queue: (queue != DEFAULT_QUEUE).then_some(queue),
            token: self.token.as_deref(),
            bridge_program: &self.program,
        };
        snippets::entry(client, &endpoint)
    }

    /// The Claude Code `Stop` hook group that runs `hook claude-stop`.
    pub fn stop_hook(&self, queue: &str) -> Value {
        serde_json::json!({ "hooks": [self.hook_command("claude-stop", queue)] })
    }

    /// VS Code's `Stop` hook entry (its own files list commands, not groups): `hook vscode-stop`.
    pub fn vscode_stop_hook(&self, queue: &str) -> Value {
        self.hook_command("vscode-stop", queue)
    }

    fn hook_command(&self, kind: &str, queue: &str) -> Value {
        let program = if self.program.contains([' ', '\'', '"']) {
            format!("\"{}\"", self.program.replace('"', "\\\""))
        } else {
            self.program.clone()
        };
        let mut command = format!("{program} hook {kind}");
        if queue != DEFAULT_QUEUE {
            command.push_str(&format!(" --queue {queue}"));
        }
        serde_json::json!({ "type": "command", "command": command, "timeout": 10 })
    }
}

/// Where `client`'s Stop hook goes (at `project`, or the user's scope), with
/// the element we put in its `hooks.Stop` list; `None` for a client without one.
fn hook_place(
    env: &Env,
    site: &Site,
    client: Client,
    project: Option<&Path>,
    queue: &str,
) -> Result<Option<(PathBuf, Value)>> {
    match client {
        Client::ClaudeCode | Client::ClaudeCodeProject => {
            Ok(Some((env.claude_settings(project), site.stop_hook(queue))))
        }
        // VS Code loads `.github/hooks/*.json` of the workspace by default; its
        // user folder for hooks is not in the default list of every version.
        Client::Vscode | Client::VscodeInsiders => match project {
            Some(dir) => Ok(Some((env.vscode_hooks(dir), site.vscode_stop_hook(queue)))),
            None => Err(Error::Conflict(
                "--hooks for VS Code needs --project DIR: its agent hooks live in the project's .github/hooks folder"
                    .into(),
            )),
        },
        _ => Ok(None),
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
    pub client: Client,
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
    pub note: Option<&'static str>,
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

/// A client as the Connect panel shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ClientStatus {
    #[schema(value_type = String)]
    pub id: Client,
    pub name: &'static str,
    /// Its folder exists or its command is on PATH.
    pub installed: bool,
    pub state: State,
    /// The file read (absent for clients with nowhere to write at this scope).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Why the state is `unreadable`, or what differs when `outdated`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The queue our entry points at, when connected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    /// The client has a project-level file.
    pub project_level: bool,
    /// The client installs from a link (`POST /api/connect/link`).
    pub deep_link: bool,
    /// Claude Code only: whether our Stop hook is installed at this scope.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hook: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Connected,
    /// Our entry is there but differs (the port or the token changed).
    Outdated,
    NotConnected,
    /// Its file does not parse (or cannot be read); it is left alone.
    Unreadable,
    /// Nowhere to write at this scope (no project-level file, or `claude` missing).
    Unavailable,
}

/// Where a client's entry lives for a request.
enum Place {
    File(PathBuf),
    /// Claude Code's user scope: its own command.
    ClaudeUser,
}

fn place(env: &Env, client: Client, project: Option<&Path>) -> Result<Place> {
    match (client, project) {
        (Client::ClaudeCode, None) => Ok(Place::ClaudeUser),
        (Client::ClaudeCodeProject, None) => Err(Error::Conflict(
            "claude-code-project needs a project folder (--project DIR)".into(),
        )),
        (_, Some(dir)) => env.project_file(client, dir).map(Place::File).ok_or_else(|| {
            Error::Conflict(format!(
                "{} has no project-level configuration; connect it without a project folder",
                client.name()
            ))
        }),
        (Client::Goose, None) => Err(Error::Conflict(
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

/// The clients the Connect panel lists (Claude Code's project file is
/// Claude Code with a project folder there).
pub fn listed() -> impl Iterator<Item = Client> {
    Client::ALL.into_iter().filter(|c| *c != Client::ClaudeCodeProject)
}

/// Every listed client's state, at user level or for `project`.
pub fn status(env: &Env, site: &Site, project: Option<&Path>) -> Vec<ClientStatus> {
    listed().map(|c| client_status(env, site, c, project)).collect()
}

pub fn client_status(env: &Env, site: &Site, client: Client, project: Option<&Path>) -> ClientStatus {
    let project = project.filter(|dir| env.project_file(client, dir).is_some());
    let mut status = ClientStatus {
        id: client,
        name: client.name(),
        installed: env.installed(
            client,
            &Records::load(&env.records).map(|r| r.created()).unwrap_or_default(),
        ),
        state: State::NotConnected,
        file: None,
        detail: None,
        queue: None,
        project_level: env.project_file(client, Path::new(".")).is_some(),
        deep_link: links::link(client, &site.entry(client, DEFAULT_QUEUE)).is_some(),
        hook: None,
    };
    let file = match place(env, client, project) {
        Ok(Place::File(f)) => f,
        Ok(Place::ClaudeUser) => env.claude_code_state(),
        Err(e) => {
            status.state = State::Unavailable;
            status.detail = Some(e.to_string());
            return status;
        }
    };
    status.file = Some(file.display().to_string());
    if let Ok(Some((settings, _))) = hook_place(env, site, client, project, DEFAULT_QUEUE) {
        status.hook = Some(
            files::read(&settings)
                .ok()
                .flatten()
                .and_then(|t| JsonDoc::parse(&t).ok())
                .is_some_and(|d| d.array(&["hooks", "Stop"]).iter().any(is_our_hook)),
        );
    }
    let current = match read_doc(&file) {
        Err(reason) => {
            status.state = State::Unreadable;
            status.detail = Some(reason);
            return status;
        }
        Ok(None) => None,
        Ok(Some((doc, _))) => doc.get(client.servers_key(), ENTRY_NAME),
    };
    if let Some(entry) = current {
        let queue = queue_of(&entry);
        let wanted = site.entry(client, &queue);
        if entry == wanted {
            status.state = State::Connected;
        } else {
            status.state = State::Outdated;
            status.detail = Some(difference(&entry, &wanted));
        }
        status.queue = Some(queue);
    } else if client == Client::ClaudeCode && project.is_none() && env.on_path("claude").is_none() {
        status.state = State::Unavailable;
        status.detail = Some(NO_CLAUDE.into());
    }
    status
}

const NO_CLAUDE: &str = "Claude Code's `claude` command is not on PATH; local-mcp never edits ~/.claude.json itself \
     (Claude Code rewrites that file), so install the command or connect a project (.mcp.json)";

/// Put our entry into `client`'s configuration (and, with `hooks`, Claude
/// Code's Stop hook). Returns one [`Change`] per file.
pub fn connect(env: &Env, site: &Site, client: Client, req: &Request<'_>) -> Result<Vec<Change>> {
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
    let wanted = site.entry(client, &queue);
    let mut changes = vec![match place {
        Place::File(file) => set_entry(&mut records, client, &file, &wanted, req.dry_run)?,
        Place::ClaudeUser => claude::set(env, &mut records, &wanted, req.dry_run)?,
    }];
    if let Some((settings, element)) = hook {
        changes.push(set_hook(&mut records, client, &settings, &element, req.dry_run)?);
    }
    if !req.dry_run {
        records.save(&env.records).map_err(Error::Conflict)?;
    }
    Ok(changes)
}

/// Take our entry (and our Stop hook, if we installed one at that scope)
/// out of `client`'s configuration, if it is still what we wrote.
pub fn disconnect(env: &Env, client: Client, req: &Request<'_>) -> Result<Vec<Change>> {
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
        Client::ClaudeCode | Client::ClaudeCodeProject => Some(env.claude_settings(req.project)),
        Client::Vscode | Client::VscodeInsiders => req.project.map(|dir| env.vscode_hooks(dir)),
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
        let Some(client) = Client::from_id(&written.client) else {
            continue;
        };
        let queue = queue_of(&written.entry);
        let wanted = site.entry(client, &queue);
        if written.entry == wanted {
            continue;
        }
        let project = project_of(env, client, &written.file);
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
fn project_of(env: &Env, client: Client, file: &Path) -> Option<PathBuf> {
    if client == Client::ClaudeCode && file == env.claude_code_state() {
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

/// A parsed client file.
enum Doc {
    Json(JsonDoc),
    Toml(TomlDoc),
}

impl Doc {
    fn parse(file: &Path, text: &str) -> std::result::Result<Doc, String> {
        if file.extension().is_some_and(|e| e == "toml") {
            TomlDoc::parse(text).map(Doc::Toml)
        } else {
            JsonDoc::parse(text).map(Doc::Json)
        }
    }
    fn get(&self, path: &[&str], name: &str) -> Option<Value> {
        match self {
            Doc::Json(d) => d.get(path, name),
            Doc::Toml(d) => d.get(path, name),
        }
    }
    fn set(&mut self, path: &[&str], name: &str, value: &Value) -> std::result::Result<(), String> {
        match self {
            Doc::Json(d) => d.set(path, name, value),
            Doc::Toml(d) => d.set(path, name, value),
        }
    }
    fn remove(&mut self, path: &[&str], name: &str) -> bool {
        match self {
            Doc::Json(d) => d.remove(path, name),
            Doc::Toml(d) => d.remove(path, name),
        }
    }
    fn value(&self) -> Value {
        match self {
            Doc::Json(d) => d.value(),
            Doc::Toml(d) => d.value(),
        }
    }
    fn text(&self) -> String {
        match self {
            Doc::Json(d) => d.text(),
            Doc::Toml(d) => d.text(),
        }
    }
}

/// The parsed file and its text; `None` when it does not exist.
fn read_doc(file: &Path) -> std::result::Result<Option<(Doc, String)>, String> {
    let file = files::real_path(file);
    match files::read(&file).map_err(|e| format!("cannot read {}: {e}", file.display()))? {
        None => Ok(None),
        Some(text) => Doc::parse(&file, &text)
            .map(|d| Some((d, text)))
            .map_err(|e| format!("{} does not parse ({e}); it was left unchanged", file.display())),
    }
}

fn unreadable(reason: String) -> Error {
    Error::Conflict(reason)
}

/// The document with our entry taken out, for checking that nothing else moved.
fn without(mut value: Value, path: &[&str]) -> Value {
    let mut at = &mut value;
    for key in path {
        match at.get_mut(*key) {
            Some(inner) => at = inner,
            None => return value,
        }
    }
    if let Some(map) = at.as_object_mut() {
        map.remove(ENTRY_NAME);
    }
    value
}

fn set_entry(records: &mut Records, client: Client, file: &Path, wanted: &Value, dry_run: bool) -> Result<Change> {
    let key = client.servers_key();
    edit_file(records, client, file, "server", dry_run, |doc| {
        if doc.get(key, ENTRY_NAME).as_ref() == Some(wanted) {
            return Ok(None);
        }
        doc.set(key, ENTRY_NAME, wanted)?;
        Ok(Some(wanted.clone()))
    })
    .map(|mut change| {
        change.note = (change.action == Action::Written).then_some(restart_note(client));
        change
    })
}

fn remove_entry(records: &mut Records, client: Client, file: &Path, dry_run: bool) -> Result<Change> {
    let real = files::real_path(file);
    let key = client.servers_key();
    let recorded = records.find(client.id(), &real, "server").map(|w| w.entry.clone());
    let file_name = real.display().to_string();
    edit_file(records, client, file, "server", dry_run, |doc| {
        let Some(current) = doc.get(key, ENTRY_NAME) else {
            return Ok(None);
        };
        match &recorded {
            None => Err(format!(
                "the local-mcp entry in {file_name} was not written by local-mcp's connect; remove it by hand if you want it gone"
            )),
            Some(r) if *r != current => Err(format!(
                "the local-mcp entry in {file_name} was edited since local-mcp wrote it; it was left in place"
            )),
            Some(_) => {
                doc.remove(key, ENTRY_NAME);
                Ok(Some(Value::Null))
            }
        }
    })
}

/// Whether an element of a `hooks.Stop` list runs our hook: a Claude Code
/// group (`{"hooks": [...]}`) holding one, or a VS Code command entry.
fn is_our_hook(element: &Value) -> bool {
    let ours = |h: &Value| {
        h["command"]
            .as_str()
            .is_some_and(|c| c.contains(" hook claude-stop") || c.contains(" hook vscode-stop"))
    };
    ours(element) || element["hooks"].as_array().is_some_and(|hooks| hooks.iter().any(ours))
}

fn set_hook(records: &mut Records, client: Client, settings: &Path, group: &Value, dry_run: bool) -> Result<Change> {
    let real = files::real_path(settings);
    let previous = records.find(client.id(), &real, "hook").map(|w| w.entry.clone());
    edit_hooks(records, client, settings, dry_run, |doc| {
        if doc.array(&["hooks", "Stop"]).contains(group) {
            return Ok(None);
        }
        // Replace the group we wrote before (another queue or program path), never the person's.
        if let Some(old) = &previous {
            doc.remove_from_array(&["hooks", "Stop"], old);
        }
        doc.append_to_array(&["hooks", "Stop"], group)?;
        Ok(Some(group.clone()))
    })
}

fn remove_hook(records: &mut Records, client: Client, settings: &Path, group: &Value, dry_run: bool) -> Result<Change> {
    edit_hooks(records, client, settings, dry_run, |doc| {
        Ok(doc.remove_from_array(&["hooks", "Stop"], group).then_some(Value::Null))
    })
}

fn edit_hooks(
    records: &mut Records,
    client: Client,
    settings: &Path,
    dry_run: bool,
    edit: impl FnOnce(&mut JsonDoc) -> std::result::Result<Option<Value>, String>,
) -> Result<Change> {
    edit_file(records, client, settings, "hook", dry_run, |doc| match doc {
        Doc::Json(d) => edit(d),
        Doc::Toml(_) => Err("not a JSON settings file".into()),
    })
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
    }
    Ok(())
}

/// The one path every file change takes. `edit` changes the parsed document
/// and returns what it recorded (`Some(Null)` for a removal), or `None` when
/// nothing needs changing. Checks the result in memory before writing and
/// on disk after.
fn edit_file(
    records: &mut Records,
    client: Client,
    file: &Path,
    what: &'static str,
    dry_run: bool,
    edit: impl FnOnce(&mut Doc) -> std::result::Result<Option<Value>, String>,
) -> Result<Change> {
    let real = files::real_path(file);
    let shown = real.display().to_string();
    let (mut doc, before_text) = match read_doc(&real).map_err(unreadable)? {
        Some((doc, text)) => (doc, Some(text)),
        None => (Doc::parse(&real, "").map_err(unreadable)?, None),
    };
    let before = doc.value();
    let change = |action, backup: Option<PathBuf>, preview| Change {
        client,
        file: shown.clone(),
        what,
        action,
        backup: backup.map(|b| b.display().to_string()),
        preview,
        note: None,
    };
    let recorded = match edit(&mut doc) {
        Err(reason) => return Err(Error::Conflict(format!("{shown}: {reason}; it was left unchanged"))),
        Ok(None) => {
            let present = what == "server" && doc.get(client.servers_key(), ENTRY_NAME).is_some();
            let removing = before_text.is_none() || !present;
            return Ok(change(
                if removing && what == "server" && doc.get(client.servers_key(), ENTRY_NAME).is_none() {
                    if !dry_run {
                        records.forget(client.id(), &real, what);
                    }
                    Action::Absent
                } else {
                    Action::Unchanged
                },
                None,
                None,
            ));
        }
        Ok(Some(v)) => v,
    };
    let removal = recorded.is_null();
    let text = match (&before_text, &doc) {
        // A new JSON file: written plainly, as the client's docs show it.
        (None, Doc::Json(d)) => format!("{:#}\n", d.value()),
        _ => doc.text(),
    };
    check(&real, &text, &before, client, what, &recorded)?;
    if dry_run {
        let action = if removal {
            Action::WouldRemove
        } else {
            Action::WouldWrite
        };
        return Ok(change(action, None, Some(text)));
    }
    // What this write creates (the file and the folders it needs), kept with
    // the record: a later disconnect takes them away again, and they never
    // make a client look installed.
    let created: Vec<PathBuf> = if before_text.is_none() {
        let mut made: Vec<PathBuf> = real
            .ancestors()
            .skip(1)
            .take_while(|d| !d.exists())
            .map(Path::to_path_buf)
            .collect();
        made.reverse();
        made.push(real.clone());
        made
    } else {
        records
            .find(client.id(), &real, what)
            .map(|w| w.created.clone())
            .unwrap_or_default()
    };
    let was_created = records
        .find(client.id(), &real, what)
        .is_some_and(|w| w.created.contains(&real));
    // A removal that leaves a file connect created with nothing of anyone
    // else's: the file goes, and the folders connect made for it if empty.
    if removal && was_created && strip_empty(doc.value()).as_object().is_some_and(|o| o.is_empty()) {
        let made = records
            .find(client.id(), &real, what)
            .map(|w| w.created.clone())
            .unwrap_or_default();
        std::fs::remove_file(&real)
            .map_err(|e| Error::Conflict(format!("cannot remove {shown} ({e}); it was left unchanged")))?;
        for dir in made.iter().rev().filter(|p| **p != real) {
            // Only an empty folder goes (remove_dir refuses anything else).
            let _ = std::fs::remove_dir(dir);
        }
        records.forget(client.id(), &real, what);
        return Ok(change(Action::Removed, None, None));
    }
    if before_text.is_some() && files::read_only(&real) {
        return Err(Error::Conflict(format!(
            "{shown} is read-only; it was left unchanged (make it writable to let local-mcp change it)"
        )));
    }
    let mut backup = None;
    if before_text.is_some() && !records.backed_up(&real) {
        let copy = files::backup(&real)
            .map_err(|e| Error::Conflict(format!("cannot back up {shown} ({e}); it was left unchanged")))?;
        records.backups.push(Backup {
            file: real.clone(),
            backup: copy.clone(),
            at: crate::time::now(),
        });
        backup = Some(copy);
    }
    files::write_atomic(&real, &text)
        .map_err(|e| Error::Conflict(format!("cannot write {shown} ({e}); it was left unchanged")))?;
    // Read back what is on disk now: the write is only done when it says so.
    let on_disk = files::read(&real).ok().flatten();
    if on_disk.as_deref() != Some(text.as_str()) {
        return Err(Error::Conflict(format!(
            "{shown} changed while local-mcp was writing it (another program wrote it too); check it"
        )));
    }
    if removal {
        records.forget(client.id(), &real, what);
    } else {
        records.put(Written {
            client: client.id().to_owned(),
            file: real.clone(),
            kind: what.to_owned(),
            entry: recorded,
            at: crate::time::now(),
            created,
        });
    }
    Ok(change(
        if removal { Action::Removed } else { Action::Written },
        backup,
        None,
    ))
}

/// The new text parses, holds what we meant, and differs from the old one
/// nowhere else.
fn check(file: &Path, text: &str, before: &Value, client: Client, what: &str, recorded: &Value) -> Result<()> {
    let after = Doc::parse(file, text)
        .map_err(|e| Error::internal(format!("the edited {} would not parse", file.display()), e))?;
    let ok = if what == "server" {
        let key = client.servers_key();
        let entry_ok = if recorded.is_null() {
            after.get(key, ENTRY_NAME).is_none()
        } else {
            after.get(key, ENTRY_NAME).as_ref() == Some(recorded)
        };
        entry_ok && strip_empty(without(after.value(), key)) == strip_empty(without(before.clone(), key))
    } else {
        true
    };
    if ok {
        Ok(())
    } else {
        Err(Error::internal(
            format!(
                "the edit of {} did not come out as intended; nothing was written",
                file.display()
            ),
            "the re-parsed document differs outside our entry",
        ))
    }
}

/// Objects we created on the way (`"servers": {}`) do not count as changes.
fn strip_empty(mut value: Value) -> Value {
    if let Value::Object(map) = &mut value {
        for v in map.values_mut() {
            *v = strip_empty(v.take());
        }
        map.retain(|_, v| !matches!(v, Value::Object(m) if m.is_empty()));
    }
    value
}

/// The queue an entry points at (from its URL, or the bridge's `--queue`).
fn queue_of(entry: &Value) -> String {
    for key in ["url", "serverUrl", "httpUrl"] {
        if let Some(path) = entry[key]
            .as_str()
            .and_then(|u| url::Url::parse(u).ok())
            .map(|u| u.path().to_owned())
        {
            return model::queue_from_path(&path)
                .ok()
                .flatten()
                .unwrap_or_else(|| DEFAULT_QUEUE.into());
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

/// What differs between the entry found and the one we would write, in words.
fn difference(found: &Value, wanted: &Value) -> String {
    let url = |v: &Value| {
        ["url", "serverUrl", "httpUrl"]
            .iter()
            .find_map(|k| v[*k].as_str().map(str::to_owned))
    };
    let auth = |v: &Value| {
        v["headers"]["Authorization"]
            .as_str()
            .or(v["http_headers"]["Authorization"].as_str())
            .map(str::to_owned)
    };
    if url(found) != url(wanted) {
        format!(
            "points at {} instead of {}",
            url(found).unwrap_or_else(|| "another address".into()),
            url(wanted).unwrap_or_default()
        )
    } else if auth(found) != auth(wanted) {
        "its token differs from the server's".into()
    } else {
        "its settings differ from what local-mcp would write".into()
    }
}

/// When the client reads the change.
fn restart_note(client: Client) -> &'static str {
    match client {
        Client::Vscode | Client::VscodeInsiders | Client::Cline => "VS Code picks the change up by itself",
        Client::ClaudeCode
        | Client::ClaudeCodeProject
        | Client::GeminiCli
        | Client::Codex
        | Client::CopilotCli
        | Client::Opencode => "start a new session of the client to pick it up",
        _ => "restart the client to pick it up",
    }
}
