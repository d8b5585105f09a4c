//! What the Connect panel and `connect --status` show of each client:
//! installed or not, and whether our entry in its file is there, current,
//! outdated (with what differs) or unreadable — read only, never written.

use crate::model::McpClient;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use super::edit::read_doc;
use super::hooks::{hook_place, is_our_hook};
use super::json_doc::JsonDoc;
use super::records::Records;
use super::{files, links, place, queue_of, Env, Place, Site};
use crate::model::DEFAULT_QUEUE;
use crate::snippets::ENTRY_NAME;

/// A client as the Connect panel shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ClientStatus {
    #[schema(value_type = String)]
    pub id: McpClient,
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

/// The clients the Connect panel lists (Claude Code's project file is
/// Claude Code with a project folder there).
pub fn listed() -> impl Iterator<Item = McpClient> {
    McpClient::ALL
        .into_iter()
        .filter(|c| *c != McpClient::ClaudeCodeProject)
}

/// Every listed client's state, at user level or for `project`.
pub fn status(env: &Env, site: &Site, project: Option<&Path>) -> Vec<ClientStatus> {
    listed().map(|c| client_status(env, site, c, project)).collect()
}

pub fn client_status(env: &Env, site: &Site, client: McpClient, project: Option<&Path>) -> ClientStatus {
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
        deep_link: links::link(client, &site.link_entry(client, DEFAULT_QUEUE)).is_some(),
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
        let wanted = site.entry_in(client, &queue, project.is_some());
        if entry == wanted {
            status.state = State::Connected;
        } else {
            status.state = State::Outdated;
            status.detail = Some(difference(&entry, &wanted));
        }
        status.queue = Some(queue);
    } else if client == McpClient::ClaudeCode && project.is_none() && env.on_path("claude").is_none() {
        status.state = State::Unavailable;
        status.detail = Some(NO_CLAUDE.into());
    }
    status
}

pub(super) const NO_CLAUDE: &str =
    "Claude Code's `claude` command is not on PATH; local-mcp never edits ~/.claude.json itself \
     (Claude Code rewrites that file), so install the command or connect a project (.mcp.json)";

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
