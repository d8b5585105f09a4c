//! `GET /api/backup`: a consistent copy of the running database and its
//! attachment files, as one tar archive (what `local-mcp-server backup FILE`
//! saves). Restoring is offline: `local-mcp-server restore FILE`.

use axum::body::Body;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use futures::StreamExt as _;

use super::body;
use super::error::Result;
use super::security::ArchiveRead;
use super::AppState;
use crate::private_fs::WorkDir;
use crate::Error;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(body::json(routes!(backup)))
}

/// A backup archive: `local_mcp.sqlite3` (a snapshot holding every write
/// committed before the request) and `attachments/`.
#[utoipa::path(get, path = "/api/backup", tag = "server",
    responses((status = 200, description = "The archive (application/x-tar)", content_type = "application/x-tar", body = Vec<u8>)))]
async fn backup(_: ArchiveRead, State(s): State<AppState>) -> Result<Response> {
    // Built in a private work folder of the database's (never a shared /tmp),
    // which goes when the answer has been sent or dropped.
    let work = s.queue.work_dir().await?;
    let out = work.join("backup.tar");
    s.queue.backup_to(out.clone()).await?;
    let body = stream_file(work, &out).await?;
    let stamp = crate::time::now().replace([':', '.'], "-");
    Ok((
        [
            (header::CONTENT_TYPE, "application/x-tar".to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"local-mcp-backup-{stamp}.tar\""),
            ),
        ],
        body,
    )
        .into_response())
}

/// The file at `path` as a response body; `work`, the folder it is in, is
/// removed once the body is finished or dropped (Windows cannot remove an
/// open file, so it is not removed before).
pub(super) async fn stream_file(work: WorkDir, path: &std::path::Path) -> Result<Body> {
    let file = tokio::fs::File::open(path)
        .await
        .map_err(|e| Error::internal("cannot read the archive back", e))?;
    let chunks = tokio_util::io::ReaderStream::new(file).map(move |chunk| {
        let _kept = &work;
        chunk
    });
    Ok(Body::from_stream(chunks))
}
