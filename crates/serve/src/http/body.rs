//! A route's body policy: how large a request body it takes, and of which
//! types. Each route module attaches its routes' policy where it registers
//! them (`routes()`, through [`with`]), so a new route states it in the one
//! place it is added — not in a second route table. The guard
//! (`security.rs`) has run before: Host, Origin, the account, the token.
//!
//! Every route takes JSON: a write that carries a body, or names a type,
//! must be `application/json` (no cross-site "simple" form or text posts:
//! 415), and a body over the limit is refused unread (413, from its
//! declared length). A route may take one other type besides, with its own
//! limit: an upload's `multipart/form-data` with a boundary (which a
//! cross-site form cannot reach past the guard's Origin and `Sec-Fetch-Site`
//! checks), an import's tar.

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use axum::routing::MethodRouter;
use utoipa_axum::router::UtoipaMethodRouter;

use super::error::{error_response, method_not_allowed};
use super::{AppState, MAX_BODY_BYTES};

/// What a route takes as a request body.
#[derive(Debug, Clone, Copy)]
pub struct BodyPolicy {
    /// The largest JSON body (or body of no declared type).
    limit: usize,
    /// The one other type the route takes, if any.
    other: Option<OtherBody>,
}

/// A body type besides JSON, with its own limit.
#[derive(Debug, Clone, Copy)]
struct OtherBody {
    /// Whether a request's headers declare it.
    declared: fn(&HeaderMap) -> bool,
    limit: usize,
}

impl BodyPolicy {
    /// JSON only, at most [`MAX_BODY_BYTES`]: most routes.
    pub const JSON: BodyPolicy = BodyPolicy {
        limit: MAX_BODY_BYTES,
        other: None,
    };

    /// JSON only, at most `limit` bytes (a route whose body is a few fields).
    pub const fn small_json(limit: usize) -> BodyPolicy {
        BodyPolicy { limit, other: None }
    }

    /// JSON up to `json_limit`, and the type `declared` recognises up to `limit`.
    pub const fn json_or(json_limit: usize, declared: fn(&HeaderMap) -> bool, limit: usize) -> BodyPolicy {
        BodyPolicy {
            limit: json_limit,
            other: Some(OtherBody { declared, limit }),
        }
    }

    /// `route` with this policy on its handlers and on its 405 answer alike
    /// (a method the route lacks is answered only past the policy, as any
    /// other request). A route that takes another type also lets axum's own
    /// readers of it (a multipart form) read that far.
    pub fn attach<S>(self, route: MethodRouter<S>) -> MethodRouter<S>
    where
        S: Clone + Send + Sync + 'static,
    {
        let route = route
            .fallback(method_not_allowed)
            .layer(axum::middleware::from_fn_with_state(self, enforce));
        match self.other {
            Some(other) => route.layer(DefaultBodyLimit::max(other.limit.max(self.limit))),
            None => route,
        }
    }
}

/// A route registration (`routes!(…)`) with `policy` attached. A path's
/// methods go in one registration: two of one path would each bring their
/// own 405 answer, which axum refuses to merge.
pub fn with(policy: BodyPolicy, route: UtoipaMethodRouter<AppState>) -> UtoipaMethodRouter<AppState> {
    let (schemas, paths, router) = route;
    (schemas, paths, policy.attach(router))
}

/// A route registration that takes JSON only ([`BodyPolicy::JSON`]).
pub fn json(route: UtoipaMethodRouter<AppState>) -> UtoipaMethodRouter<AppState> {
    with(BodyPolicy::JSON, route)
}

/// `Content-Type: application/json` (parameters such as charset allowed).
pub fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|mime| mime.trim().eq_ignore_ascii_case("application/json"))
}

/// The middleware: 413 for a declared length over the limit of the type
/// sent, 415 for a write whose body is neither JSON nor the route's other type.
pub async fn enforce(State(policy): State<BodyPolicy>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    // Any method: the route answers 405 for one it lacks.
    let other = policy.other.filter(|o| (o.declared)(headers));
    let limit = other.map_or(policy.limit, |o| o.limit);
    let too_big = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .is_some_and(|n| n > limit as u64);
    if too_big {
        return error_response(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            &format!("request body is larger than {limit} bytes"),
        );
    }
    // A write that carries a body, or names a type, must be JSON: no cross-site
    // "simple" form or text posts. A body-less request goes on to the route,
    // which answers 405 for a method it lacks, 400 for a missing body.
    let writes = matches!(*req.method(), Method::POST | Method::PUT | Method::PATCH);
    let has_body = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .is_none_or(|v| v.trim() != "0")
        && (headers.contains_key(header::CONTENT_LENGTH) || headers.contains_key(header::TRANSFER_ENCODING));
    if writes && (has_body || headers.contains_key(header::CONTENT_TYPE)) && !is_json(headers) && other.is_none() {
        return error_response(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "send the request body as Content-Type: application/json",
        );
    }
    // A body sent without its length (chunked) is cut at the limit as it is read.
    let req = match other {
        Some(_) => req,
        None => req.map(|body| axum::body::Body::new(http_body_util::Limited::new(body, limit))),
    };
    next.run(req).await
}
