//! The phone listener's gate (`crate::phone`): the one layer in front of everything it
//! serves. In order: `Host` must be the listener's own address (no DNS
//! rebinding), an `Origin` must be its own `https://` origin, a request a
//! browser marks cross-site is refused (reads too); then the route must be
//! one a phone may use at all ([`allowed`]) — anything else is 403 whatever
//! the request carries — and, past the page's own files and the pairing
//! exchange, it must carry a paired device's credential cookie. A revoked
//! device's open streams end when it is revoked.
//!
//! The loopback server's bearer token and page session count for nothing
//! here: a phone has only its device credential.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::body::Body;
use axum::extract::connect_info::ConnectInfo;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt as _;

use super::error::error_response;
use super::security::{cookies, cross_site, page_headers, sent_twice};
use super::Peer;
use crate::phone::{Known, Phone, DEVICE_COOKIE};
use crate::said::Said;

/// A phone listener connection as the gate sees it: whether a paired device
/// has used it (`server::serve_tls` keeps such connections), and how to
/// close it (when that device is revoked).
#[derive(Debug, Clone, Default)]
pub struct Trust {
    pub trusted: Arc<AtomicBool>,
    pub cut: tokio_util::sync::CancellationToken,
    /// The paired device it turned out to be (`serve_tls` remembers its
    /// address for a while after the connection ends by itself).
    pub device: Arc<std::sync::OnceLock<Known>>,
}

// Each kind of refusal said within `Said`'s bounds: anyone on the network can send them as fast as they like.
static REFUSED_ORIGIN: Said = Said::new();
static REFUSED_ROUTE: Said = Said::new();
static UNPAIRED: Said = Said::new();

/// What a request may reach on the phone listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// The page's own files and the pairing exchange: anyone who reached the listener.
    Open,
    /// A paired device's.
    Device,
    /// Not from a phone at all.
    Refused,
}

/// The routes a phone may use, by method and path (`*` is one segment).
/// Seeing queues, agents and their states; queueing, editing, reordering and
/// deleting instructions, with photos; answering questions; history and
/// reports; the templates, read only (the composer offers them). Nothing
/// else: no `/mcp`, settings, tokens, client files,
/// connecting, backups, exports, imports, restores or pairing another device.
const DEVICE_ROUTES: &[(Method, &str)] = &[
    (Method::GET, "/api/status"),
    (Method::GET, "/api/events"),
    (Method::GET, "/api/queues"),
    (Method::GET, "/api/queues/*"),
    (Method::GET, "/api/instructions"),
    (Method::POST, "/api/instructions"),
    (Method::GET, "/api/instructions/*"),
    (Method::PATCH, "/api/instructions/*"),
    (Method::DELETE, "/api/instructions/*"),
    (Method::POST, "/api/instructions/*/move"),
    (Method::POST, "/api/instructions/*/requeue"),
    (Method::POST, "/api/instructions/*/attachments"),
    (Method::DELETE, "/api/instructions/*/attachments/*"),
    (Method::GET, "/api/attachments/*"),
    (Method::GET, "/api/reports"),
    (Method::POST, "/api/reports/*/reply"),
    (Method::GET, "/api/templates"),
    (Method::GET, "/api/templates/*"),
    (Method::GET, "/api/templates/*/files/*"),
    (Method::GET, "/api/phone/me"),
];

/// What `method path` may reach from a phone.
pub fn allowed(method: &Method, path: &str) -> Access {
    if *method == Method::POST && path == "/api/phone/pair" {
        return Access::Open;
    }
    if DEVICE_ROUTES
        .iter()
        .any(|(m, pattern)| m == method && matches(pattern, path))
    {
        return Access::Device;
    }
    // The page's files: anything under neither the API nor MCP, read only.
    let api_or_mcp = ["/api", "/mcp", "/healthz"]
        .iter()
        .any(|p| path == *p || path.starts_with(&format!("{p}/")));
    if (*method == Method::GET || *method == Method::HEAD) && !api_or_mcp {
        return Access::Open;
    }
    Access::Refused
}

fn matches(pattern: &str, path: &str) -> bool {
    let (mut p, mut s) = (pattern.split('/'), path.split('/'));
    loop {
        match (p.next(), s.next()) {
            (None, None) => return true,
            (Some("*"), Some(seg)) if !seg.is_empty() => {}
            (Some(a), Some(b)) if a == b => {}
            _ => return false,
        }
    }
}

/// The middleware (state: the phone controller), in front of the routing:
/// everything is served under the listener's secret prefix (`/p/<secret>/`,
/// which the cookie's path names too), taken off here before the routes see
/// the request; anything else is 404.
pub async fn gate(State(phone): State<Arc<Phone>>, mut req: Request, next: Next) -> Response {
    let Some(prefix) = phone.prefix() else {
        return secured(error_response(StatusCode::NOT_FOUND, "not_found", "no such route"));
    };
    let full = req.uri().path();
    let rest = full
        .strip_prefix(prefix.as_str())
        .filter(|r| r.is_empty() || r.starts_with('/'));
    let path = match rest {
        // The page's address without its slash: its relative links need one.
        Some("") => {
            let mut to = format!("{prefix}/");
            if let Some(q) = req.uri().query() {
                to = format!("{to}?{q}");
            }
            let mut response = StatusCode::PERMANENT_REDIRECT.into_response();
            if let Ok(v) = HeaderValue::from_str(&to) {
                response.headers_mut().insert(header::LOCATION, v);
            }
            return secured(response);
        }
        Some(rest) => rest.to_owned(),
        None => return secured(error_response(StatusCode::NOT_FOUND, "not_found", "no such route")),
    };
    let path_and_query = match req.uri().query() {
        Some(q) => format!("{path}?{q}"),
        None => path.clone(),
    };
    match path_and_query.parse::<axum::http::Uri>() {
        Ok(uri) => *req.uri_mut() = uri,
        Err(_) => {
            return secured(error_response(
                StatusCode::BAD_REQUEST,
                "bad_request",
                "not a valid path",
            ))
        }
    }
    let from = req
        .extensions()
        .get::<ConnectInfo<Peer>>()
        .map_or(IpAddr::from([0, 0, 0, 0]), |c| c.0.addr.ip());
    if let Some(refused) = origin_refusal(&phone, &req) {
        if let Some(t) = REFUSED_ORIGIN.count(from) {
            tracing::warn!(%from, path, refused = t.total, unsaid = t.unsaid, "the phone listener refused a request: {refused}");
        }
        return secured(error_response(StatusCode::FORBIDDEN, "forbidden", refused));
    }
    let access = allowed(req.method(), &path);
    // A paired device's credential, wherever it goes: its connection is kept (`serve_tls`).
    let device = credential(&req).and_then(|c| phone.device(&c));
    if let (Some(known), Some(trust)) = (&device, req.extensions().get::<Trust>()) {
        // Trusted from now on; closed when its device is revoked (or it ends).
        if !trust.trusted.swap(true, Ordering::AcqRel) {
            let _ = trust.device.set(known.clone());
            phone.trusted(known, trust.cut.clone());
            let (revoked, cut) = (known.revoked.clone(), trust.cut.clone());
            tokio::spawn(async move {
                tokio::select! {
                    () = revoked.cancelled() => cut.cancel(),
                    () = cut.cancelled() => {}
                }
            });
        }
    }
    let device = match access {
        Access::Refused => {
            if let Some(t) = REFUSED_ROUTE.count(from) {
                tracing::info!(%from, method = %req.method(), path, refused = t.total, unsaid = t.unsaid, "a route a phone may not use");
            }
            return secured(error_response(
                StatusCode::FORBIDDEN,
                "forbidden",
                "not available from a phone: use the computer",
            ));
        }
        Access::Open => None,
        Access::Device => match device {
            Some(device) => Some(device),
            None => {
                if let Some(t) = UNPAIRED.count(from) {
                    tracing::info!(%from, path, refused = t.total, unsaid = t.unsaid, "a phone request without a paired device's credential");
                }
                return secured(error_response(
                    StatusCode::UNAUTHORIZED,
                    "unpaired",
                    "this phone is not paired (or was revoked): scan the pairing QR code on the computer again",
                ));
            }
        },
    };
    if let Some(device) = &device {
        phone.seen(device, from);
        req.extensions_mut().insert(device.clone());
    }
    let response = next.run(req).await;
    let response = match device {
        Some(device) => {
            let mut response = cut_on_revoke(response, device);
            // Nothing a phone was shown stays in its cache (an attachment says "a year" on the desk).
            response
                .headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            response
        }
        None => response,
    };
    secured(response)
}

/// Why a request's `Host`, `Origin` or `Sec-Fetch-Site` is refused, if it is.
fn origin_refusal(phone: &Phone, req: &Request) -> Option<&'static str> {
    let headers = req.headers();
    if sent_twice(headers).is_some() {
        return Some("a Host, Origin or Sec-Fetch-Site header sent twice");
    }
    let authority = phone.authority()?;
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !host.eq_ignore_ascii_case(&authority) {
        return Some("this listener answers only to its own address (Host header refused)");
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let ours = origin
            .to_str()
            .ok()
            .and_then(|o| o.strip_prefix("https://"))
            .is_some_and(|o| o.eq_ignore_ascii_case(&authority));
        if !ours {
            return Some("requests from other web origins are refused");
        }
    }
    cross_site(headers).then_some("requests from other web sites are refused")
}

/// The device credential the request's cookies carry (the first of our name).
fn credential(req: &Request) -> Option<String> {
    cookies(req.headers(), DEVICE_COOKIE).next().map(str::to_owned)
}

/// A revoked device's response ends when it is revoked (its live stream above all).
fn cut_on_revoke(response: Response, device: Known) -> Response {
    let (parts, body) = response.into_parts();
    let revoked = device.revoked.clone();
    let stream = body
        .into_data_stream()
        .take_until(async move { revoked.cancelled_owned().await });
    Response::from_parts(parts, Body::from_stream(stream))
}

/// The page's headers, and nothing stored: a phone is easier to lose than a desk.
fn secured(mut response: Response) -> Response {
    let h = response.headers_mut();
    page_headers(h);
    h.entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_phone_reaches_its_routes_and_nothing_else() {
        let yes = [
            (Method::GET, "/api/status"),
            (Method::GET, "/api/events"),
            (Method::POST, "/api/instructions"),
            (Method::PATCH, "/api/instructions/abc"),
            (Method::POST, "/api/instructions/abc/move"),
            (Method::POST, "/api/instructions/abc/attachments"),
            (Method::POST, "/api/reports/r1/reply"),
        ];
        for (m, p) in &yes {
            assert_eq!(allowed(m, p), Access::Device, "{m} {p}");
        }
        let no = [
            (Method::POST, "/mcp"),
            (Method::GET, "/mcp"),
            (Method::POST, "/mcp/q/work"),
            (Method::GET, "/api/config"),
            (Method::PATCH, "/api/config"),
            (Method::GET, "/api/token"),
            (Method::POST, "/api/token"),
            (Method::GET, "/api/backup"),
            (Method::GET, "/api/export"),
            (Method::POST, "/api/import"),
            (Method::POST, "/api/connect"),
            (Method::GET, "/api/clients"),
            (Method::POST, "/api/session"),
            (Method::POST, "/api/phone/code"),
            (Method::POST, "/api/phone/start"),
            (Method::GET, "/api/phone"),
            (Method::DELETE, "/api/phone/devices/x"),
            (Method::POST, "/api/hold"),
            (Method::POST, "/api/agents/stop"),
            (Method::PUT, "/api/templates/x"),
            (Method::GET, "/api/instructions/a/b/c"),
            (Method::GET, "/api/instructions//move"),
            (Method::GET, "/healthz"),
            (Method::POST, "/"),
        ];
        for (m, p) in &no {
            assert_eq!(allowed(m, p), Access::Refused, "{m} {p}");
        }
        assert_eq!(allowed(&Method::GET, "/"), Access::Open);
        assert_eq!(allowed(&Method::GET, "/js/app.js"), Access::Open);
        assert_eq!(allowed(&Method::POST, "/api/phone/pair"), Access::Open);
    }
}
