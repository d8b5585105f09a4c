//! Attachments over HTTP: `multipart/form-data` uploads (a new instruction
//! with files, or files for a pending one), removing one, and serving the
//! original or the delivery copy. Served files never run: the detected type,
//! `nosniff`, `Content-Security-Policy: sandbox`, and `inline` only for
//! raster images.

use axum::body::Body;
use axum::extract::{FromRequest, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::body::{self, BodyPolicy};
use super::error::ErrorBody;
use super::error::Result;
use super::instructions::ItemBody;
use super::{ApiPath, ApiQuery, AppState, MAX_BODY_BYTES};
use crate::model::{InstructionId, NewInstruction, QueueName, Upload};
use crate::Error;

/// The largest upload request: the 20 MiB of files an instruction may hold,
/// plus room for the form's own framing (a bigger body is refused unread).
pub const MAX_UPLOAD_BODY_BYTES: usize = 24 * 1024 * 1024;

/// What an upload route takes: JSON as every route does, or a multipart
/// form (with a boundary) of up to [`MAX_UPLOAD_BODY_BYTES`].
pub const UPLOAD_BODY: BodyPolicy = BodyPolicy::json_or(MAX_BODY_BYTES, is_multipart, MAX_UPLOAD_BODY_BYTES);

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(body::with(UPLOAD_BODY, routes!(attach)))
        .routes(body::json(routes!(detach)))
        .routes(body::json(routes!(file)))
}

/// `multipart/form-data` with a boundary: the only other body uploads take.
pub fn is_multipart(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(';').map(|(mime, rest)| (mime.trim(), rest)))
        .is_some_and(|(mime, rest)| {
            mime.eq_ignore_ascii_case("multipart/form-data")
                && rest.split(';').any(|p| {
                    p.trim().split_once('=').is_some_and(|(k, v)| {
                        k.trim().eq_ignore_ascii_case("boundary") && !v.trim_matches('"').is_empty()
                    })
                })
        })
}

/// A new instruction as a form: `content` (and `queue`, `target`) plus any number of files.
#[derive(ToSchema)]
#[allow(dead_code)] // documents the form; the handler reads it field by field
pub struct NewInstructionForm {
    /// The instruction text (may be blank when files are attached).
    content: Option<String>,
    /// The queue (default `default`).
    queue: Option<String>,
    /// One agent id this instruction is for.
    target: Option<String>,
    /// Images (PNG, JPEG, WebP, GIF, BMP, TIFF) or UTF-8 text files: at most 8 and 20 MiB together.
    #[schema(value_type = Vec<String>, format = Binary)]
    files: Vec<Vec<u8>>,
}

/// Files for a pending instruction.
#[derive(ToSchema)]
#[allow(dead_code)] // documents the form
pub struct FilesForm {
    /// Images (PNG, JPEG, WebP, GIF, BMP, TIFF) or UTF-8 text files.
    #[schema(value_type = Vec<String>, format = Binary)]
    files: Vec<Vec<u8>>,
}

/// Read a form: its text fields into a [`NewInstruction`], every part with a
/// file name as an upload.
pub async fn read_form(req: Request) -> Result<(NewInstruction, Vec<Upload>)> {
    let mut form = axum::extract::Multipart::from_request(req, &())
        .await
        .map_err(|e| Error::Invalid(format!("unreadable form: {}", e.body_text())))?;
    let mut new = NewInstruction::default();
    let mut uploads = Vec::new();
    while let Some(field) = form.next_field().await.map_err(form_error)? {
        let name = field.name().unwrap_or_default().to_owned();
        let file_name = field.file_name().map(str::to_owned);
        if let Some(file_name) = file_name {
            let bytes = field.bytes().await.map_err(form_error)?;
            uploads.push(Upload { name: file_name, bytes });
            continue;
        }
        if name == "files" {
            return Err(Error::Invalid(
                "a files part must be a file (with a filename in its Content-Disposition)".into(),
            )
            .into());
        }
        let text = field.text().await.map_err(form_error)?;
        match name.as_str() {
            "content" => new.content = text,
            "queue" => {
                new.queue = Some(text)
                    .filter(|q| !q.is_empty())
                    .map(|q| QueueName::new(&q))
                    .transpose()?
            }
            "target" => new.target = Some(text).filter(|t| !t.is_empty()),
            other => return Err(Error::Invalid(format!("unknown form field {other:?}")).into()),
        }
    }
    Ok((new, uploads))
}

fn form_error(e: axum::extract::multipart::MultipartError) -> Error {
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        Error::TooLarge(format!("an upload is at most {MAX_UPLOAD_BODY_BYTES} bytes"))
    } else {
        Error::Invalid(format!("unreadable form: {}", e.body_text()))
    }
}

/// Add files to a pending instruction.
#[utoipa::path(post, path = "/api/instructions/{id}/attachments", tag = "attachments",
    params(("id" = InstructionId, Path, description = "A pending instruction's id")),
    request_body(content = FilesForm, content_type = "multipart/form-data"),
    responses((status = 200, description = "The instruction with its files", body = ItemBody),
        (status = 400, description = "No files, or an unreadable image or form", body = ErrorBody),
        (status = 404, description = "No such instruction", body = ErrorBody),
        (status = 409, description = "Already delivered to an agent", body = ErrorBody),
        (status = 413, description = "More than 8 files or 20 MiB, or an image over 50 megapixels or 65,535 pixels on a side", body = ErrorBody),
        (status = 415, description = "Not an accepted image or UTF-8 text, or not a multipart form", body = ErrorBody)))]
async fn attach(
    State(s): State<AppState>,
    ApiPath(id): ApiPath<InstructionId>,
    req: Request,
) -> Result<Json<ItemBody>> {
    let uploads = read_files(req, "PATCH /api/instructions/{id}").await?;
    let item = s.queue.attach(id, uploads).await?;
    Ok(Json(ItemBody { item }))
}

/// Read a form of files only (`text_route` is where the text is changed instead).
pub(super) async fn read_files(req: Request, text_route: &str) -> Result<Vec<Upload>> {
    if !is_multipart(req.headers()) {
        return Err(Error::Unsupported("send the files as Content-Type: multipart/form-data".into()).into());
    }
    let (new, uploads) = read_form(req).await?;
    if !new.content.is_empty() || new.queue.is_some() || new.target.is_some() {
        return Err(Error::Invalid(format!("this form takes files only; change the text with {text_route}")).into());
    }
    Ok(uploads)
}

/// Remove a file from a pending instruction.
#[utoipa::path(delete, path = "/api/instructions/{id}/attachments/{attachment_id}", tag = "attachments",
    params(("id" = InstructionId, Path, description = "A pending instruction's id"), ("attachment_id" = String, Path, description = "One of its attachments")),
    responses((status = 200, description = "The instruction without that file", body = ItemBody),
        (status = 404, description = "No such instruction or attachment", body = ErrorBody),
        (status = 409, description = "Already delivered to an agent", body = ErrorBody)))]
async fn detach(
    State(s): State<AppState>,
    ApiPath((id, attachment_id)): ApiPath<(InstructionId, String)>,
) -> Result<Json<ItemBody>> {
    let item = s.queue.detach(id, attachment_id).await?;
    Ok(Json(ItemBody { item }))
}

#[derive(Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct FileQuery {
    /// `original` (default): the file as uploaded; `delivery`: the copy agents get.
    #[serde(default)]
    #[param(inline)]
    variant: Variant,
}

#[derive(Deserialize, Default, Clone, Copy, PartialEq, Eq, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Variant {
    #[default]
    Original,
    Delivery,
}

/// An attachment's bytes.
#[utoipa::path(get, path = "/api/attachments/{attachment_id}", tag = "attachments",
    params(("attachment_id" = String, Path, description = "An attachment's id"), FileQuery),
    responses((status = 200, description = "The file, with its detected type (inline only for raster images)",
            content((Vec<u8> = "image/png"), (Vec<u8> = "image/jpeg"), (Vec<u8> = "image/webp"), (Vec<u8> = "image/gif"),
                (Vec<u8> = "image/bmp"), (Vec<u8> = "image/tiff"), (String = "text/plain; charset=utf-8"))),
        (status = 400, description = "Malformed request", body = ErrorBody),
        (status = 404, description = "No such attachment", body = ErrorBody)))]
async fn file(
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<FileQuery>,
) -> Result<Response> {
    let delivery = q.variant == Variant::Delivery;
    let (attachment, bytes) = s.queue.attachment_file(id, delivery).await?;
    let mime = if delivery {
        attachment.delivery.mime_type.clone()
    } else {
        attachment.mime_type.clone()
    };
    // An attachment never changes: its id names one file for good.
    Ok(file_response(
        bytes,
        &mime,
        &attachment.name,
        attachment.is_image(),
        "private, max-age=31536000, immutable",
    ))
}

/// A stored file as a response that never runs: its detected type, its name
/// in the RFC 5987 form, `inline` only for raster images, a sandbox CSP.
pub(super) fn file_response(bytes: Vec<u8>, mime: &str, name: &str, image: bool, cache: &'static str) -> Response {
    let disposition = if image { "inline" } else { "attachment" };
    // The name goes in the RFC 5987 form only: any character survives, none can break the header.
    let encoded: String = url::form_urlencoded::byte_serialize(name.as_bytes()).collect();
    let mut response = (StatusCode::OK, Body::from(bytes)).into_response();
    let h = response.headers_mut();
    let value =
        |s: String| HeaderValue::from_str(&s).unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"));
    h.insert(header::CONTENT_TYPE, value(mime.to_owned()));
    h.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_str(&format!(
            "{disposition}; filename*=UTF-8''{}",
            encoded.replace('+', "%20")
        ))
        .unwrap_or_else(|_| HeaderValue::from_static("attachment")),
    );
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("sandbox"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    response
}
