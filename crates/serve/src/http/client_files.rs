//! `/api/connect…`: the page's Connect panel over [`crate::client_files`] — each
//! client's state, connect, disconnect, "Update all", the backups made, and
//! the install links handed to the OS. The server edits the files of the
//! account it runs as (the same person: see the same-user guard), with its
//! own address and token.

use crate::model::McpClient;
use std::path::PathBuf;

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::body;
use super::error::ErrorBody;
use super::error::Result;
use super::{ApiJson, ApiQuery, AppState};
use crate::client_files::{self, Backup, Change, ClientStatus, Env, Request, Site};
use crate::model::QueueName;
use crate::snippets;
use crate::Error;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(body::json(routes!(list, connect_one)))
        .routes(body::json(routes!(disconnect_one)))
        .routes(body::json(routes!(update_all)))
        .routes(body::json(routes!(backups)))
        .routes(body::json(routes!(open_link)))
}

fn site(s: &AppState) -> Site {
    Site {
        base_url: s.queue.facts().url.clone(),
        token: s.credentials.token().filter(|_| s.credentials.token_required()),
        program: snippets::bridge_program(),
        database: s.queue.facts().database.clone(),
    }
}

fn env() -> Result<Env> {
    Env::from_process()
        .ok_or_else(|| Error::Conflict("this account has no home folder to find clients in".into()).into())
}

/// A project folder named by the page: an absolute path (`/…`, or `C:\…`
/// on Windows) of an existing folder. A path absolute elsewhere but not here
/// (a drive letter on Linux) is simply not a folder on this computer.
fn project(dir: Option<&str>) -> Result<Option<PathBuf>> {
    let Some(d) = dir else {
        return Ok(None);
    };
    let bytes = d.as_bytes();
    let drive =
        bytes.len() >= 3 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' && matches!(bytes[2], b'/' | b'\\');
    if !(d.starts_with('/') || drive) {
        return Err(Error::Invalid(format!("the project folder must be an absolute path, not {d:?}")).into());
    }
    let path = PathBuf::from(d);
    match std::fs::canonicalize(&path) {
        Ok(p) if path.is_absolute() && p.is_dir() => Ok(Some(p)),
        _ => Err(Error::NotFound(format!("{d} is not a folder on this computer")).into()),
    }
}

/// A queue named in a body: absent means `default`, but an empty name is a mistake.
fn queue(name: Option<QueueName>) -> Result<Option<String>> {
    Ok(name.map(QueueName::into_string))
}

/// Run file work (and possibly `claude`) off the async threads.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::internal("a connect task failed", e))?
}

#[derive(Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// An absolute project folder: show project-level files where clients have them.
    #[param(pattern = r"^(/|[A-Za-z]:[\\/])")]
    project: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct ClientsState {
    /// The project folder the states are for, if any.
    pub project: Option<String>,
    pub clients: Vec<ClientStatus>,
}

/// Every client: installed or not, and connected, outdated or not connected.
#[utoipa::path(get, path = "/api/connect", tag = "connect", params(ListQuery),
    responses((status = 200, description = "Each client's state", body = ClientsState),
        (status = 400, description = "Not an absolute folder", body = ErrorBody),
        (status = 404, description = "No such folder", body = ErrorBody)))]
async fn list(State(s): State<AppState>, ApiQuery(q): ApiQuery<ListQuery>) -> Result<Json<ClientsState>> {
    let project = project(q.project.as_deref())?;
    let site = site(&s);
    blocking(move || {
        let env = env()?;
        Ok(Json(ClientsState {
            project: project.as_ref().map(|p| p.display().to_string()),
            clients: client_files::status(&env, &site, project.as_deref()),
        }))
    })
    .await
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConnectBody {
    /// The client's id (`vscode`, `claude-code`, `codex`, …).
    client: McpClient,
    /// An absolute project folder: its project-level file (`.vscode/mcp.json`, `.mcp.json`, …).
    #[schema(pattern = r"^(/|[A-Za-z]:[\\/])")]
    project: Option<String>,
    /// Point the client at this queue (`/mcp/q/<queue>`).
    queue: Option<QueueName>,
    /// Also install the client's Stop hook (Claude Code; VS Code with a project).
    #[serde(default)]
    hooks: bool,
}

#[derive(Serialize, ToSchema)]
pub struct Changes {
    pub changes: Vec<Change>,
}

/// Put local-mcp into a client's configuration, keeping everything else.
#[utoipa::path(post, path = "/api/connect", tag = "connect", request_body = ConnectBody,
    responses((status = 200, description = "What changed, file by file", body = Changes),
        (status = 404, description = "No such project folder", body = ErrorBody),
        (status = 409, description = "The client has no project-level file or no Stop hook, its file does not parse or is read-only, or its command failed; nothing was changed", body = ErrorBody)))]
async fn connect_one(State(s): State<AppState>, ApiJson(body): ApiJson<ConnectBody>) -> Result<Json<Changes>> {
    let client = body.client;
    let project = project(body.project.as_deref())?;
    let site = site(&s);
    let queue_name = queue(body.queue)?;
    blocking(move || {
        let req = Request {
            project: project.as_deref(),
            queue: queue_name.as_deref(),
            hooks: body.hooks,
            dry_run: false,
            // A shared folder is refused from the page; the CLI can say it is trusted.
            allow_shared_folder: false,
        };
        Ok(Json(Changes {
            changes: client_files::connect(&env()?, &site, client, &req)?,
        }))
    })
    .await
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DisconnectBody {
    client: McpClient,
    #[schema(pattern = r"^(/|[A-Za-z]:[\\/])")]
    project: Option<String>,
}

/// Take local-mcp out of a client's configuration (only an entry connect wrote, unedited).
#[utoipa::path(post, path = "/api/disconnect", tag = "connect", request_body = DisconnectBody,
    responses((status = 200, description = "What changed", body = Changes),
        (status = 404, description = "No such project folder", body = ErrorBody),
        (status = 409, description = "The entry was not written by connect, or edited since; left in place", body = ErrorBody)))]
async fn disconnect_one(State(_s): State<AppState>, ApiJson(body): ApiJson<DisconnectBody>) -> Result<Json<Changes>> {
    let client = body.client;
    let project = project(body.project.as_deref())?;
    blocking(move || {
        let req = Request {
            project: project.as_deref(),
            ..Request::default()
        };
        Ok(Json(Changes {
            changes: client_files::disconnect(&env()?, client, &req)?,
        }))
    })
    .await
}

#[derive(Serialize, ToSchema)]
pub struct Updated {
    pub changes: Vec<Change>,
    /// Clients left alone, with why (edited since, unreadable, …).
    pub errors: Vec<String>,
}

/// Rewrite every entry connect wrote that a new port or token made outdated.
#[utoipa::path(post, path = "/api/connect/update", tag = "connect",
    responses((status = 200, description = "What was rewritten and what was left alone", body = Updated)))]
async fn update_all(State(s): State<AppState>) -> Result<Json<Updated>> {
    let site = site(&s);
    blocking(move || {
        let mut out = Updated {
            changes: Vec::new(),
            errors: Vec::new(),
        };
        for r in client_files::update_all(&env()?, &site)? {
            match r {
                Ok(c) => out.changes.push(c),
                Err(e) => out.errors.push(e),
            }
        }
        Ok(Json(out))
    })
    .await
}

#[derive(Serialize, ToSchema)]
pub struct BackupsBody {
    #[schema(value_type = Vec<Object>)]
    pub backups: Vec<Backup>,
}

/// The copies connect made of clients' files before its first change to each.
#[utoipa::path(get, path = "/api/connect/backups", tag = "connect",
    responses((status = 200, description = "Backups, oldest first", body = BackupsBody)))]
async fn backups() -> Result<Json<BackupsBody>> {
    blocking(|| {
        Ok(Json(BackupsBody {
            backups: client_files::backups(&env()?)?,
        }))
    })
    .await
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkBody {
    client: McpClient,
    queue: Option<QueueName>,
}

#[derive(Serialize, ToSchema)]
pub struct Opened {
    /// The client the link is for.
    pub client: String,
}

/// Open the client's "install" link with the OS handler (the client then
/// asks the person to confirm). It is never returned to the page or opened
/// in a browser tab, and carries no secret (`Site::link_entry`: with a
/// token required, it installs the stdio bridge).
#[utoipa::path(post, path = "/api/connect/link", tag = "connect", request_body = LinkBody,
    responses((status = 200, description = "Handed to the OS", body = Opened),
        (status = 409, description = "The client has no install link, or no handler could open it (no desktop session, or the client is not installed)", body = ErrorBody)))]
async fn open_link(State(s): State<AppState>, ApiJson(body): ApiJson<LinkBody>) -> Result<Json<Opened>> {
    let client = body.client;
    let queue = queue(body.queue)?.unwrap_or_else(|| crate::model::DEFAULT_QUEUE.to_owned());
    let entry = site(&s).link_entry(client, &queue);
    let link = client_files::links::link(client, &entry)
        .ok_or_else(|| Error::Conflict(format!("{} has no install link; use Connect", client.name())))?;
    blocking(move || {
        client_files::links::open(&link)
            .map_err(|e| Error::Conflict(format!("could not open the {} link: {e}", client.name())))?;
        Ok(Json(Opened {
            client: client.id().into(),
        }))
    })
    .await
}
