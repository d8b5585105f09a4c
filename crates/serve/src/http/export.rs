//! `GET /api/export?format=json|csv|md&queue=&since=`: the history as a file
//! (what `local-mcp-server export` saves). See [`crate::export`].

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::body;
use super::error::ErrorBody;
use super::error::Result;
use super::security::ArchiveRead;
use super::{ApiQuery, AppState};
use crate::export::{render, Format};
use crate::model::QueueName;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(body::json(routes!(export)))
}

#[derive(Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ExportQuery {
    /// json (default: everything, as the API shows it), csv (a row per instruction), md (to read)
    /// or bundle (a tar of the JSON and the attachment files, for `import`)
    #[param(inline)]
    format: Option<Format>,
    /// Only this queue.
    queue: Option<QueueName>,
    /// Only what was delivered (or reported) at or after this time (RFC 3339) or date; pending ones always.
    since: Option<crate::model::Timestamp>,
}

/// Export the history: pending and delivered instructions with their reports
/// and attachment lists, and the reports that stand alone.
#[utoipa::path(get, path = "/api/export", tag = "instructions", params(ExportQuery),
    responses((status = 200, description = "The export, as a file to save",
            content((Object = "application/json"), (String = "text/csv; charset=utf-8"), (String = "text/markdown; charset=utf-8"),
                (Vec<u8> = "application/x-tar"))),
        (status = 400, description = "Not a valid queue, date or format", body = ErrorBody)))]
async fn export(_: ArchiveRead, State(s): State<AppState>, ApiQuery(q): ApiQuery<ExportQuery>) -> Result<Response> {
    let format = q.format.unwrap_or(Format::Json);
    let queue = q.queue;
    let since = q.since;
    let stamp = crate::time::now().replace([':', '.'], "-");
    let headers = [
        (header::CONTENT_TYPE, format.content_type().to_owned()),
        (
            header::CONTENT_DISPOSITION,
            format!(
                "attachment; filename=\"local-mcp-export-{stamp}.{}\"",
                format.extension()
            ),
        ),
    ];
    if format == Format::Bundle {
        // Built in a private work folder (never a shared /tmp), removed once sent.
        let work = s.queue.work_dir().await?;
        let out = work.join("export.tar");
        s.queue.export_bundle(queue, since, out.clone()).await?;
        let body = super::backup::stream_file(work, &out).await?;
        return Ok((headers, body).into_response());
    }
    let data = s.queue.export(queue, since).await?;
    Ok((headers, render(&data, format)).into_response())
}
