//! `GET /api/backup`: a consistent copy of the running database and its
//! attachment files, as one tar archive (what `local-mcp-server backup FILE`
//! saves). Restoring is offline: `local-mcp-server restore FILE`.

use axum::body::Body;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::AppState;
use crate::{Error, Result};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(backup))
}

/// A backup archive: `local_mcp.sqlite3` (a snapshot holding every write
/// committed before the request) and `attachments/`.
#[utoipa::path(get, path = "/api/backup", tag = "server",
    responses((status = 200, description = "The archive (application/x-tar)", content_type = "application/x-tar", body = Vec<u8>)))]
async fn backup(State(s): State<AppState>) -> Result<Response> {
    let out = std::env::temp_dir().join(format!("local-mcp-backup-{}.tar", uuid::Uuid::new_v4().simple()));
    s.queue.backup_to(out.clone()).await?;
    let file = tokio::fs::File::open(&out)
        .await
        .map_err(|e| Error::internal("cannot read the backup back", e))?;
    // The open handle keeps the data; the name can go now (Unix). Elsewhere
    // the temp folder's cleaning takes it.
    #[cfg(unix)]
    let _ = tokio::fs::remove_file(&out).await;
    let stamp = crate::time::now().replace([':', '.'], "-");
    Ok((
        [
            (header::CONTENT_TYPE, "application/x-tar".to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"local-mcp-backup-{stamp}.tar\""),
            ),
        ],
        Body::from_stream(tokio_util::io::ReaderStream::new(file)),
    )
        .into_response())
}
