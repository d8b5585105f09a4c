//! `POST /api/import?dry_run=`: an export file (JSON, or a bundle as a tar)
//! sent as the request body, imported whole or refused whole (what
//! `local-mcp-server import FILE` sends). See `queue::import`.

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap};
use futures::StreamExt as _;
use serde::Deserialize;
use tokio::io::AsyncWriteExt as _;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::body::{self, BodyPolicy};
use super::error::ErrorBody;
use super::error::Result;
use super::{ApiQuery, AppState};
use crate::export::ImportSummary;
use crate::Error;

/// The largest import body: a long history with its attachment files.
pub const MAX_IMPORT_BODY_BYTES: usize = 2 * 1024 * 1024 * 1024;

/// An import is an export file sent as it is, up to [`MAX_IMPORT_BODY_BYTES`]:
/// JSON, or a bundle as a tar (types a cross-site page cannot send without
/// a preflight, which fails).
const IMPORT_BODY: BodyPolicy = BodyPolicy::json_or(MAX_IMPORT_BODY_BYTES, is_bundle, MAX_IMPORT_BODY_BYTES);

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(body::with(IMPORT_BODY, routes!(import)))
}

/// Whether a request sends a bundle (`application/x-tar`).
pub fn is_bundle(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|mime| mime.trim().eq_ignore_ascii_case("application/x-tar"))
}

#[derive(Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ImportQuery {
    /// Check everything and say what would change, changing nothing.
    dry_run: Option<bool>,
}

/// Import an export: pending instructions join the back of their queues,
/// delivered ones stay history with their reports, ids are kept where free,
/// and what is already here is skipped. A file with anything wrong in it is
/// refused whole (400, naming the item and the reason).
#[utoipa::path(post, path = "/api/import", tag = "instructions", params(ImportQuery),
    request_body(description = "An export: its JSON, or a bundle", content(
        (Object = "application/json"), (Vec<u8> = "application/x-tar"))),
    responses((status = 200, description = "What was imported (or would be, with dry_run)", body = ImportSummary),
        (status = 400, description = "Not an export, or an item in it is not valid: nothing was imported", body = ErrorBody),
        (status = 413, description = "Larger than 2 GiB", body = ErrorBody)))]
async fn import(
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<ImportQuery>,
    body: Body,
) -> Result<axum::Json<ImportSummary>> {
    // The body goes to a file in a private work folder first (never a shared
    // /tmp): a bundle is read by seeking, and a big one must not sit in
    // memory. The folder goes when this handler ends, however it ends.
    let work = s.queue.work_dir().await?;
    let path = work.join("import");
    let result = async {
        let file = crate::private_fs::create_new(&path).map_err(|e| Error::internal("cannot store the import", e))?;
        let mut file = tokio::fs::File::from_std(file);
        let mut stream = body.into_data_stream();
        let mut size = 0usize;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| Error::Invalid(format!("the upload was cut off: {e}")))?;
            size += chunk.len();
            if size > MAX_IMPORT_BODY_BYTES {
                return Err(Error::TooLarge(format!(
                    "an import is at most {MAX_IMPORT_BODY_BYTES} bytes"
                )));
            }
            file.write_all(&chunk)
                .await
                .map_err(|e| Error::internal("cannot store the import", e))?;
        }
        file.flush()
            .await
            .map_err(|e| Error::internal("cannot store the import", e))?;
        drop(file);
        if size == 0 {
            return Err(Error::Invalid("send the export file as the request body".into()));
        }
        s.queue.import(path.clone(), q.dry_run.unwrap_or(false)).await
    }
    .await;
    drop(work);
    Ok(result.map(axum::Json)?)
}
