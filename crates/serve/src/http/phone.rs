//! `/api/phone`: the phone listener, run from the computer's page — start
//! and stop it, make a pairing link, list, rename and revoke devices — and,
//! on the phone listener itself, the pairing exchange and "who am I". The
//! listener's gate (`crate::phone`) lets a phone reach only the last two of
//! these; the loopback server answers those two with 404.

use std::net::IpAddr;

use axum::extract::connect_info::ConnectInfo;
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::body;
use super::error::{ErrorBody, Result};
use super::{ApiJson, ApiPath, AppState, Peer};
use crate::model::{Device, DeviceRename, PairRequest, PairingCode, PhoneStart, PhoneStatus};
use crate::phone::{Known, DEVICE_COOKIE};
use crate::Error;

/// A device credential cookie lives a year (and is renewed by pairing again).
const DEVICE_COOKIE_SECONDS: u32 = 365 * 24 * 3600;

/// The largest pairing request: a 12-character code and a device name.
const PAIR_BODY_BYTES: usize = 2048;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(body::json(routes!(status)))
        .routes(body::json(routes!(start)))
        .routes(body::json(routes!(stop)))
        .routes(body::json(routes!(code)))
        .routes(body::json(routes!(rename, revoke)))
        // Anyone who reached the listener may send it: a code and a name, no more.
        .routes(body::with(body::BodyPolicy::small_json(PAIR_BODY_BYTES), routes!(pair)))
        .routes(body::json(routes!(me)))
}

/// The listener: running or not, where, its certificate's fingerprint, the
/// addresses it could use, the paired devices, wrong codes.
#[utoipa::path(get, path = "/api/phone", tag = "phone",
    responses((status = 200, description = "The phone listener", body = PhoneStatus)))]
async fn status(State(s): State<AppState>) -> Result<Json<PhoneStatus>> {
    Ok(Json(s.phone.status().await?))
}

/// Start the listener on one of this machine's addresses.
#[utoipa::path(post, path = "/api/phone/start", tag = "phone", request_body = PhoneStart,
    responses((status = 200, description = "Listening", body = PhoneStatus),
        (status = 400, description = "Not one of this machine's addresses", body = ErrorBody),
        (status = 409, description = "The port is in use", body = ErrorBody)))]
async fn start(State(s): State<AppState>, ApiJson(body): ApiJson<PhoneStart>) -> Result<Json<PhoneStatus>> {
    Ok(Json(s.phone.start(body).await?))
}

/// Stop the listener: every phone connection closes; pairings stay.
#[utoipa::path(post, path = "/api/phone/stop", tag = "phone",
    responses((status = 200, description = "Stopped", body = PhoneStatus)))]
async fn stop(State(s): State<AppState>) -> Result<Json<PhoneStatus>> {
    Ok(Json(s.phone.stop().await?))
}

/// A one-time pairing link and its QR code: two minutes, once.
#[utoipa::path(post, path = "/api/phone/code", tag = "phone",
    responses((status = 200, description = "The link, its QR code, when it expires", body = PairingCode),
        (status = 409, description = "The listener is not running", body = ErrorBody),
        (status = 429, description = "Too many wrong codes: pairing is locked for a while", body = ErrorBody)))]
async fn code(State(s): State<AppState>) -> Result<Json<PairingCode>> {
    Ok(Json(s.phone.code()?))
}

/// Rename a paired device.
#[utoipa::path(patch, path = "/api/phone/devices/{id}", tag = "phone",
    params(("id" = String, Path, description = "A device's id")), request_body = DeviceRename,
    responses((status = 200, description = "Renamed", body = Device),
        (status = 400, description = "Not a valid name", body = ErrorBody),
        (status = 404, description = "No such device", body = ErrorBody)))]
async fn rename(
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<DeviceRename>,
) -> Result<Json<Device>> {
    Ok(Json(s.phone.rename(id, &body.name).await?))
}

/// Revoke a device: its next request is refused, its live stream closes now.
#[utoipa::path(delete, path = "/api/phone/devices/{id}", tag = "phone",
    params(("id" = String, Path, description = "A device's id")),
    responses((status = 200, description = "Revoked", body = Device),
        (status = 404, description = "No such device", body = ErrorBody)))]
async fn revoke(State(s): State<AppState>, ApiPath(id): ApiPath<String>) -> Result<Json<Device>> {
    Ok(Json(s.phone.revoke(id).await?))
}

/// Served on the phone listener only: a one-time code exchanged for this
/// phone's own credential, set as an HttpOnly, Secure, SameSite=Strict cookie.
#[utoipa::path(post, path = "/api/phone/pair", tag = "phone", request_body = PairRequest,
    responses((status = 200, description = "Paired: the cookie is set", body = Device),
        (status = 403, description = "A wrong, used or expired code", body = ErrorBody),
        (status = 404, description = "Not the phone listener", body = ErrorBody),
        (status = 429, description = "Too many wrong codes: pairing is locked for a while", body = ErrorBody)))]
async fn pair(
    State(s): State<AppState>,
    listener: Option<Extension<OnPhoneListener>>,
    peer: Option<Extension<ConnectInfo<Peer>>>,
    ApiJson(body): ApiJson<PairRequest>,
) -> Result<Response> {
    if listener.is_none() {
        return Err(Error::NotFound("pairing happens on the phone listener".into()).into());
    }
    let from = peer.map_or(IpAddr::from([0, 0, 0, 0]), |Extension(ConnectInfo(p))| p.addr.ip());
    let (device, credential) = s.phone.pair(body, from).await?;
    // Sent only under the listener's secret prefix: a server another account
    // runs on another port of this address is never sent it (it cannot know the path).
    let path = s.phone.prefix().unwrap_or_default();
    let cookie = format!(
        "{DEVICE_COOKIE}={credential}; Path={path}/; Max-Age={DEVICE_COOKIE_SECONDS}; HttpOnly; Secure; SameSite=Strict"
    );
    let mut response = (StatusCode::OK, Json(device)).into_response();
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        response.headers_mut().append(header::SET_COOKIE, v);
    }
    Ok(response)
}

/// Which device this is.
#[derive(Serialize, ToSchema)]
pub struct Me {
    pub device: String,
}

/// Served on the phone listener only, to a paired device: its id (the page
/// knows it runs on a phone).
#[utoipa::path(get, path = "/api/phone/me", tag = "phone",
    responses((status = 200, description = "This device", body = Me),
        (status = 404, description = "Not the phone listener", body = ErrorBody)))]
async fn me(device: Option<Extension<Known>>) -> Result<Json<Me>> {
    match device {
        Some(Extension(known)) => Ok(Json(Me { device: known.id })),
        None => Err(Error::NotFound("not the phone listener".into()).into()),
    }
}

/// Put on every request the phone listener serves (by its router).
#[derive(Debug, Clone, Copy)]
pub struct OnPhoneListener;
