//! `/api/session`: how the page authenticates when a token is required, without
//! ever putting the token in a URL or in script-readable storage. The person
//! types the token once; we answer with an HttpOnly, SameSite=Strict cookie
//! that the security layer accepts in place of the bearer header (and that
//! EventSource sends, which cannot set headers).

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::body;
use super::error::{error_response, ErrorBody};
use super::{ApiJson, AppState};
use crate::auth::{Credentials, TokenState};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(body::json(routes!(get, create, delete)))
        .routes(body::json(routes!(token_state, change_token)))
}

#[derive(Serialize, ToSchema)]
pub struct SessionState {
    pub token_required: bool,
    pub authenticated: bool,
}

/// Whether a token is required and whether this browser already has a session.
#[utoipa::path(get, path = "/api/session", tag = "session",
    responses((status = 200, description = "`{token_required, authenticated}`", body = SessionState)))]
async fn get(State(s): State<AppState>, headers: HeaderMap) -> Json<SessionState> {
    let required = s.credentials.token_required();
    Json(SessionState {
        token_required: required,
        authenticated: !required || s.guard.has_session(&headers),
    })
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Login {
    token: String,
}

/// Exchange the token for an HttpOnly session cookie (the page's sign-in).
#[utoipa::path(post, path = "/api/session", tag = "session", request_body = Login,
    responses((status = 204, description = "Signed in: the cookie is set (or no token is required)"),
        (status = 401, description = "Not this server's token", body = ErrorBody)))]
async fn create(State(s): State<AppState>, ApiJson(login): ApiJson<Login>) -> Response {
    if !s.credentials.token_required() {
        return StatusCode::NO_CONTENT.into_response();
    }
    if !s.credentials.token_matches(login.token.trim()) {
        tracing::warn!("a wrong token was presented for a page session");
        return error_response(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "that is not this server's token",
        );
    }
    let mut response = StatusCode::NO_CONTENT.into_response();
    set_session_cookie(&mut response, &s.credentials);
    response
}

/// A new page-session cookie (HttpOnly, SameSite=Strict, this server's only,
/// expiring), or — no token required — the header that clears it.
pub fn set_session_cookie(response: &mut Response, credentials: &Credentials) {
    let cookie = credentials
        .session_cookie()
        .unwrap_or_else(|| credentials.signed_out_cookie());
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        response.headers_mut().append(header::SET_COOKIE, v);
    }
}

/// Sign out: the cookie is cleared.
#[utoipa::path(delete, path = "/api/session", tag = "session", responses((status = 204, description = "Signed out")))]
async fn delete(State(s): State<AppState>) -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    if let Ok(v) = HeaderValue::from_str(&s.credentials.signed_out_cookie()) {
        response.headers_mut().insert(header::SET_COOKIE, v);
    }
    response
}

/// Whether a token is required, and whether the page may change that.
#[utoipa::path(get, path = "/api/token", tag = "session",
    responses((status = 200, description = "The token's state (never the token)", body = TokenState)))]
async fn token_state(State(s): State<AppState>) -> Json<TokenState> {
    Json(s.tokens.state())
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum TokenAction {
    /// Require a new token (the old one, if any, stops working).
    Regenerate,
    /// Stop requiring a token.
    Remove,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenChange {
    action: TokenAction,
}

/// The answer to a token change.
#[derive(Serialize, ToSchema)]
pub struct TokenChanged {
    pub required: bool,
    /// The new token: the only time it is shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

/// Regenerate the token (shown this once) or stop requiring one. This page
/// stays signed in: the answer carries the session cookie for the new token.
#[utoipa::path(post, path = "/api/token", tag = "session", request_body = TokenChange,
    responses((status = 200, description = "`{required, token?}`: the new token, the only time it is shown", body = TokenChanged),
        (status = 409, description = "Set by API_TOKEN, or the server is reachable from the network", body = ErrorBody)))]
async fn change_token(
    State(s): State<AppState>,
    ApiJson(change): ApiJson<TokenChange>,
) -> super::error::Result<Response> {
    let token = match change.action {
        TokenAction::Regenerate => Some(s.tokens.regenerate()?),
        TokenAction::Remove => {
            s.tokens.remove()?;
            None
        }
    };
    let body = TokenChanged {
        required: token.is_some(),
        token: token.clone(),
    };
    let mut response = Json(body).into_response();
    set_session_cookie(&mut response, &s.credentials);
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}
