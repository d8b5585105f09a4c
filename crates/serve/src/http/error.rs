//! Every failure as `{"error":{"code","message"}}` with its status: the
//! engine's [`Error`], the router's 404/405, and the body type the OpenAPI
//! document names for all of them.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use crate::Error;

/// Every error: `{"error": {"code", "message"}}`.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Serialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable, machine-readable: not_found, conflict, invalid_request, payload_too_large, unauthorized, forbidden, …
    pub code: String,
    /// For people.
    pub message: String,
}

pub fn status_of(e: &Error) -> StatusCode {
    match e {
        Error::NotFound(_) => StatusCode::NOT_FOUND,
        Error::Conflict(_) => StatusCode::CONFLICT,
        Error::Invalid(_) => StatusCode::BAD_REQUEST,
        Error::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
        Error::Unsupported(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        Error::NoSpace(_) => StatusCode::INSUFFICIENT_STORAGE,
        Error::InUse(_) => StatusCode::CONFLICT,
        Error::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        Error::Unauthorized(_) => StatusCode::UNAUTHORIZED,
        Error::Forbidden(_) => StatusCode::FORBIDDEN,
        Error::TooMany(_) => StatusCode::TOO_MANY_REQUESTS,
        Error::Internal { .. } | Error::Startup(_) => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// `{"error":{"code","message"}}` with any status and code.
pub fn error_response(status: StatusCode, code: &str, message: &str) -> Response {
    let body = ErrorBody {
        error: ErrorDetail {
            code: code.to_owned(),
            message: message.to_owned(),
        },
    };
    let mut response = (status, Json(body)).into_response();
    if status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(
            axum::http::header::WWW_AUTHENTICATE,
            axum::http::HeaderValue::from_static("Bearer"),
        );
    }
    response
}

/// An engine [`Error`] on its way out as a response. The error type is the
/// core crate's, so the response is made for this wrapper, which `?` makes
/// from it.
#[derive(Debug)]
pub struct ApiError(pub Error);

/// A handler's result: an engine error becomes `{"error":{"code","message"}}`.
pub type Result<T, E = ApiError> = std::result::Result<T, E>;

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        ApiError(e)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        // The edge where a failure leaves the engine: log it here, once.
        self.0.log();
        error_response(status_of(&self.0), self.0.code(), &self.0.to_string())
    }
}

pub async fn not_found() -> Response {
    error_response(StatusCode::NOT_FOUND, "not_found", "no such route")
}

pub async fn method_not_allowed() -> Response {
    error_response(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this route does not take that method",
    )
}
