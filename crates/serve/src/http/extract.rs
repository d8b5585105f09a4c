//! Extractors that never answer in plain text.
//!
//! axum's own `Json`/`Query`/`Path` rejections are plain text; these wrappers
//! parse the same way but fail with the product's error body, so a malformed
//! request gets a clear, machine-readable answer and never a panic.

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::{request::Parts, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use super::error::error_response;
use super::MAX_BODY_BYTES;
use crate::Error;

/// A JSON body, parsed with a size limit; syntax errors are 400, shape errors 422.
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = Response;

    async fn from_request(req: Request, _state: &S) -> Result<Self, Self::Rejection> {
        let bytes = axum::body::to_bytes(req.into_body(), MAX_BODY_BYTES)
            .await
            .map_err(|_| {
                // Past what this route takes ([`super::body`]), or past any body's limit.
                super::error::ApiError(Error::TooLarge("request body is larger than this route takes".into()))
                    .into_response()
            })?;
        // Every body of this API is a JSON object; serde would also accept a
        // struct written as an array (`[60, null]`), which no client means.
        let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
        if first.is_some_and(|b| *b != b'{') && serde_json::from_slice::<serde::de::IgnoredAny>(&bytes).is_ok() {
            return Err(error_response(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "the request body must be a JSON object",
            ));
        }
        serde_json::from_slice(&bytes).map(ApiJson).map_err(|e| {
            use serde_json::error::Category;
            match e.classify() {
                // A rule of the product's (a queue name, an agent id): the
                // same 400 and message as the handler's own check gave.
                Category::Data if crate::model::breaks_a_rule(&e.to_string()) => error_response(
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    e.to_string().split(" at line ").next().unwrap_or_default(),
                ),
                Category::Data => error_response(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "invalid_request",
                    &format!("invalid request body: {e}"),
                ),
                _ => error_response(
                    StatusCode::BAD_REQUEST,
                    "invalid_json",
                    &format!("request body is not valid JSON: {e}"),
                ),
            }
        })
    }
}

/// Query parameters, with JSON errors.
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::try_from_uri(&parts.uri)
            .map(|q| ApiQuery(q.0))
            .map_err(|e| {
                error_response(
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    &format!("invalid query: {}", e.body_text()),
                )
            })
    }
}

/// Path parameters, with JSON errors (axum's own rejection, e.g. for a
/// percent-encoded invalid UTF-8 id, is plain text).
pub struct ApiPath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| ApiPath(p.0))
            .map_err(|e| {
                error_response(
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    &format!("invalid path: {}", e.body_text()),
                )
            })
    }
}
