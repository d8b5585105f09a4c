//! `/api/templates`: saved instructions by name (`/name` in the composer,
//! `add --template NAME`).

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::error::ErrorBody;
use super::{ApiJson, ApiPath, AppState};
use crate::model::{Template, TemplateBody};
use crate::Result;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(get_one, put, delete))
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
