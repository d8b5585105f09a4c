//! The queue manager page: the files under `ui/`, embedded in the binary (read
//! from disk in debug builds, so editing the page needs no rebuild).
//!
//! No build step and no fingerprinted names, so every file is served with
//! `Cache-Control: no-cache` and a strong ETag: the browser revalidates and
//! gets a 304 unless the file changed. The CSP header comes from the security layer.

use super::ApiPath;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use rust_embed::RustEmbed;

use super::error::error_response;

#[derive(RustEmbed)]
#[folder = "../../ui/"]
struct Ui;

pub async fn index(headers: HeaderMap) -> Response {
    serve("index.html", &headers)
}

pub async fn asset(ApiPath(path): ApiPath<String>, headers: HeaderMap) -> Response {
    serve(&path, &headers)
}

fn serve(path: &str, headers: &HeaderMap) -> Response {
    let Some(file) = Ui::get(path) else {
        return error_response(StatusCode::NOT_FOUND, "not_found", "no such file");
    };
    let etag = format!("\"{}\"", hex::encode(file.metadata.sha256_hash()));
    let cached = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
    let mut response = if cached {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mime = mime_guess::from_path(path).first_or_octet_stream();
        let mut r = file.data.into_owned().into_response();
        if let Ok(v) = HeaderValue::from_str(mime.as_ref()) {
            r.headers_mut().insert(header::CONTENT_TYPE, v);
        }
        r
    };
    let h = response.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    response
}

/// `/api/docs`: the page that renders the OpenAPI document (`ui/api.html`).
pub async fn api_docs() -> axum::response::Redirect {
    axum::response::Redirect::to("/api.html")
}
