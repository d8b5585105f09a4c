//! `/api/config`: the runtime settings, and `/api/config/fields`, their
//! definitions (label, help, limits), from which the page builds its form.
//! Both follow from the one table in `model::settings`.

use axum::extract::State;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::body;
use super::error::ErrorBody;
use super::error::Result;
use super::{ApiJson, AppState};
use crate::model::{Field, Settings, SettingsPatch, FIELDS};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(body::json(routes!(get_config, patch_config)))
        .routes(body::json(routes!(fields)))
}

/// Read the settings.
#[utoipa::path(get, path = "/api/config", tag = "settings",
    responses((status = 200, description = "The runtime settings", body = Settings)))]
async fn get_config(State(s): State<AppState>) -> Json<Settings> {
    Json(s.queue.settings())
}

/// Change some settings.
#[utoipa::path(patch, path = "/api/config", tag = "settings", request_body = SettingsPatch,
    responses((status = 200, description = "The settings after the change", body = Settings),
        (status = 400, description = "Out of range (the message names the field and its range)", body = ErrorBody)))]
async fn patch_config(State(s): State<AppState>, ApiJson(patch): ApiJson<SettingsPatch>) -> Result<Json<Settings>> {
    Ok(Json(s.queue.update_settings(patch).await?))
}

/// `{"fields": […]}`
#[derive(Serialize, ToSchema)]
pub struct FieldsBody {
    pub fields: Vec<Field>,
}

/// What each setting is: name, label, help and limits, in the order to show them.
#[utoipa::path(get, path = "/api/config/fields", tag = "settings",
    responses((status = 200, description = "Every setting's definition", body = FieldsBody)))]
async fn fields() -> Json<FieldsBody> {
    Json(FieldsBody {
        fields: FIELDS.to_vec(),
    })
}
