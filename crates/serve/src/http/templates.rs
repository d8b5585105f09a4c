//! `/api/templates`: saved instructions by name (`/name` in the composer,
//! `add --template NAME`), and the files that go with them.

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::attachments::{FilesForm, UPLOAD_BODY};
use super::body;
use super::error::ErrorBody;
use super::error::Result;
use super::{ApiJson, ApiPath, AppState};
use crate::model::{Template, TemplateBody};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(body::json(routes!(list)))
        .routes(body::json(routes!(get_one, put, delete)))
        .routes(body::with(UPLOAD_BODY, routes!(add_files)))
        .routes(body::json(routes!(get_file, delete_file)))
}

/// `{"items": […]}`
#[derive(Serialize, ToSchema)]
pub struct TemplatesBody {
    pub items: Vec<Template>,
}

/// `{"item": …}`
#[derive(Serialize, ToSchema)]
pub struct TemplateItem {
    pub item: Template,
}

/// Every template, by name.
#[utoipa::path(get, path = "/api/templates", tag = "templates",
    responses((status = 200, description = "Templates by name", body = TemplatesBody)))]
async fn list(State(s): State<AppState>) -> Result<Json<TemplatesBody>> {
    Ok(Json(TemplatesBody {
        items: s.queue.templates().await?,
    }))
}

/// One template.
#[utoipa::path(get, path = "/api/templates/{name}", tag = "templates",
    params(("name" = String, Path, description = "The template's name", pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")),
    responses((status = 200, description = "The template", body = TemplateItem),
        (status = 400, description = "Not a valid template name", body = ErrorBody),
        (status = 404, description = "No such template", body = ErrorBody)))]
async fn get_one(State(s): State<AppState>, ApiPath(name): ApiPath<String>) -> Result<Json<TemplateItem>> {
    Ok(Json(TemplateItem {
        item: s.queue.template(&name).await?,
    }))
}

/// Save a template under a name (replacing one of that name).
#[utoipa::path(put, path = "/api/templates/{name}", tag = "templates", request_body = TemplateBody,
    params(("name" = String, Path, description = "1–64 of a-z 0-9 . _ -, starting with a letter or digit (upper case is lowered)", pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")),
    responses((status = 201, description = "Created", body = TemplateItem),
        (status = 200, description = "Replaced", body = TemplateItem),
        (status = 400, description = "Not a valid name or text", body = ErrorBody),
        (status = 409, description = "There are 500 templates already", body = ErrorBody),
        (status = 413, description = "The text is over 64 KiB", body = ErrorBody)))]
async fn put(
    State(s): State<AppState>,
    ApiPath(name): ApiPath<String>,
    ApiJson(body): ApiJson<TemplateBody>,
) -> Result<(StatusCode, Json<TemplateItem>)> {
    let (item, new) = s.queue.save_template(&name, body.content).await?;
    let status = if new { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, Json(TemplateItem { item })))
}

/// Delete a template.
#[utoipa::path(delete, path = "/api/templates/{name}", tag = "templates",
    params(("name" = String, Path, description = "The template's name", pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")),
    responses((status = 204, description = "Deleted"),
        (status = 400, description = "Not a valid template name", body = ErrorBody),
        (status = 404, description = "No such template", body = ErrorBody)))]
async fn delete(State(s): State<AppState>, ApiPath(name): ApiPath<String>) -> Result<StatusCode> {
    s.queue.delete_template(&name).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Add files to a template (images or UTF-8 text, as for an instruction).
#[utoipa::path(post, path = "/api/templates/{name}/files", tag = "templates",
    params(("name" = String, Path, description = "The template's name", pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")),
    request_body(content = FilesForm, content_type = "multipart/form-data"),
    responses((status = 200, description = "The template with its files", body = TemplateItem),
        (status = 400, description = "No files, or an unreadable image or form", body = ErrorBody),
        (status = 404, description = "No such template", body = ErrorBody),
        (status = 413, description = "More than 8 files or 20 MiB, or an image over 50 megapixels or 65,535 pixels on a side", body = ErrorBody),
        (status = 415, description = "Not an accepted image or UTF-8 text, or not a multipart form", body = ErrorBody)))]
async fn add_files(
    State(s): State<AppState>,
    ApiPath(name): ApiPath<String>,
    req: Request,
) -> Result<Json<TemplateItem>> {
    let uploads = super::attachments::read_files(req, "PUT /api/templates/{name}").await?;
    Ok(Json(TemplateItem {
        item: s.queue.add_template_files(&name, uploads).await?,
    }))
}

/// One of a template's files (the original, as saved).
#[utoipa::path(get, path = "/api/templates/{name}/files/{ordinal}", tag = "templates",
    params(("name" = String, Path, description = "The template's name", pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"),
        ("ordinal" = u32, Path, description = "The file's ordinal")),
    responses((status = 200, description = "The file, with its detected type (inline only for raster images)",
            content((Vec<u8> = "image/png"), (Vec<u8> = "image/jpeg"), (Vec<u8> = "image/webp"), (Vec<u8> = "image/gif"),
                (Vec<u8> = "image/bmp"), (Vec<u8> = "image/tiff"), (String = "text/plain; charset=utf-8"))),
        (status = 400, description = "Malformed request", body = ErrorBody),
        (status = 404, description = "No such template or file", body = ErrorBody)))]
async fn get_file(State(s): State<AppState>, ApiPath((name, ordinal)): ApiPath<(String, u32)>) -> Result<Response> {
    let (file, bytes) = s.queue.template_file(&name, ordinal).await?;
    // A template's files change (an ordinal can be used again): never cached unasked.
    Ok(super::attachments::file_response(
        bytes,
        &file.mime_type,
        &file.name,
        file.kind == "image",
        "no-cache",
    ))
}

/// Remove one of a template's files.
#[utoipa::path(delete, path = "/api/templates/{name}/files/{ordinal}", tag = "templates",
    params(("name" = String, Path, description = "The template's name", pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"),
        ("ordinal" = u32, Path, description = "The file's ordinal")),
    responses((status = 200, description = "The template without that file", body = TemplateItem),
        (status = 400, description = "Malformed request", body = ErrorBody),
        (status = 404, description = "No such template or file", body = ErrorBody)))]
async fn delete_file(
    State(s): State<AppState>,
    ApiPath((name, ordinal)): ApiPath<(String, u32)>,
) -> Result<Json<TemplateItem>> {
    Ok(Json(TemplateItem {
        item: s.queue.remove_template_file(&name, ordinal).await?,
    }))
}
