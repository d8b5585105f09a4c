//! Health, the status report and the MCP configuration each client expects:
//! what the page, the tray and scripts read about the server itself.

use axum::extract::State;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::body;
use super::error::Result;
use super::{ApiQuery, AppState};
use crate::model::QueueName;
use crate::model::StatusSnapshot;
use crate::snippets::{self, ClientSnippet};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(body::json(routes!(healthz)))
        .routes(body::json(routes!(status)))
        .routes(body::json(routes!(clients)))
}

#[derive(Serialize, ToSchema)]
pub struct Health {
    /// Always "ok".
    pub status: &'static str,
    pub server_time: crate::model::Timestamp,
}

/// Liveness check.
#[utoipa::path(get, path = "/healthz", tag = "server",
    responses((status = 200, description = "The server is up", body = Health)))]
async fn healthz() -> Json<Health> {
    Json(Health {
        status: "ok",
        server_time: crate::model::Timestamp::now(),
    })
}

/// Server, agents and queue at a glance.
#[utoipa::path(get, path = "/api/status", tag = "server",
    responses((status = 200, description = "Server, agents and queue counts", body = StatusSnapshot)))]
async fn status(
    State(s): State<AppState>,
    phone: Option<axum::Extension<super::phone::OnPhoneListener>>,
) -> Result<Json<StatusSnapshot>> {
    let status = s.queue.status().await?;
    Ok(Json(if phone.is_some() { status.for_phone() } else { status }))
}

#[derive(serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ClientsQuery {
    /// Configure agents of this queue (default `default`).
    queue: Option<QueueName>,
}

#[derive(Serialize, ToSchema)]
pub struct ClientsBody {
    /// The queue the snippets point at.
    pub queue: String,
    pub mcp_url: String,
    #[schema(value_type = Vec<Object>)]
    pub clients: Vec<ClientSnippet>,
}

/// What the page shows a person connecting an agent. With a token required,
/// the snippets carry a placeholder: the page never reveals the token (the
/// tray and the CLI, which hold it, fill it in).
#[utoipa::path(get, path = "/api/clients", tag = "server", params(ClientsQuery),
    responses((status = 200, description = "The MCP configuration each client expects", body = ClientsBody),
        (status = 400, description = "Not a valid queue name", body = super::error::ErrorBody)))]
async fn clients(State(s): State<AppState>, ApiQuery(q): ApiQuery<ClientsQuery>) -> Result<Json<ClientsBody>> {
    let queue = match q.queue {
        Some(name) => name.into_string(),
        None => crate::model::DEFAULT_QUEUE.to_owned(),
    };
    let mcp_url = format!("{}{}", s.queue.facts().url, crate::model::mcp_path(&queue));
    let program = snippets::bridge_program();
    let endpoint = snippets::Endpoint {
        mcp_url: &mcp_url,
        queue: (queue != crate::model::DEFAULT_QUEUE).then_some(queue.as_str()),
        token: s.credentials.token_required().then_some(TOKEN_PLACEHOLDER),
        bridge_program: &program,
        database: s.queue.facts().database.as_deref(),
    };
    let clients = snippets::all(&endpoint);
    Ok(Json(ClientsBody {
        queue,
        mcp_url,
        clients,
    }))
}

const TOKEN_PLACEHOLDER: &str = "<your API token>";
