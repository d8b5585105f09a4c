//! A phone paired to the LAN listener (issue 43): its device, what the page
//! shows of the listener, and the shapes of pairing
//! (`docs/ARCHITECTURE.md`, "Phone").

use super::Timestamp;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The longest device name, in characters.
pub const MAX_DEVICE_NAME_CHARS: usize = 64;

/// A paired phone. Its credential is never shown again after pairing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Device {
    pub id: String,
    /// What the person calls it ("Pixel 8"); the phone's browser suggests one.
    pub name: String,
    pub created_at: Timestamp,
    /// When it last made a request, and from where.
    pub last_seen_at: Option<Timestamp>,
    pub last_address: Option<String>,
}

/// A device name as the person gives it: trimmed, 1–64 characters, no
/// control characters and none of the invisible ones that reorder or hide
/// text ("Owner\u{202e}gnp.exe" would show as another name).
pub fn device_name(raw: &str) -> crate::Result<String> {
    let name = raw.trim();
    let hidden = |c: char| {
        c.is_control()
            || matches!(c, '\u{061c}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}')
    };
    if name.is_empty() || name.chars().count() > MAX_DEVICE_NAME_CHARS || name.chars().any(hidden) {
        return Err(crate::Error::Invalid(format!(
            "a device name is 1–{MAX_DEVICE_NAME_CHARS} characters, without control or invisible formatting characters"
        )));
    }
    Ok(name.to_owned())
}

/// The listener as the page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PhoneStatus {
    /// Listening now.
    pub running: bool,
    /// Where, when listening: `https://192.168.1.20:8443`.
    pub url: Option<String>,
    /// The SHA-256 of its certificate, as colon-separated hex: what the
    /// phone's browser shows when it asks whether to trust the certificate.
    pub fingerprint: Option<String>,
    /// This machine's addresses a phone could reach (not loopback).
    pub addresses: Vec<String>,
    pub devices: Vec<Device>,
    /// Wrong pairing codes since the listener started, and the last one.
    pub refused_codes: u64,
    pub last_refused: Option<RefusedCode>,
    /// Addresses locked out of pairing now (five wrong codes in a row each;
    /// nobody else is: the person's phone can still pair).
    pub locked_addresses: u64,
    /// When the last of those locks ends.
    pub locked_until: Option<Timestamp>,
}

/// A wrong pairing code: when and from where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RefusedCode {
    pub at: Timestamp,
    pub address: String,
}

/// Start the listener.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PhoneStart {
    /// One of this machine's addresses (see `addresses`); a Tailscale or
    /// WireGuard address works as any other.
    pub address: String,
    /// The port (default 8443; 0: any free one).
    #[serde(default, deserialize_with = "whole_port")]
    #[schema(value_type = Option<i64>, minimum = 0, maximum = 65535)]
    pub port: Option<u16>,
}

/// A port as JSON writes it: `8443` or `8443.0` (JSON Schema's "integer" allows both).
fn whole_port<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Option<u16>, D::Error> {
    let Some(n) = Option::<serde_json::Number>::deserialize(d)? else {
        return Ok(None);
    };
    let whole = n.as_u64().or_else(|| {
        n.as_f64()
            .filter(|f| f.fract() == 0.0 && (0.0..=65535.0).contains(f))
            .map(|f| f as u64)
    });
    whole
        .and_then(|p| u16::try_from(p).ok())
        .map(Some)
        .ok_or_else(|| serde::de::Error::custom(format!("port must be a whole number from 0 to 65535, not {n}")))
}

/// A one-time pairing link: valid for two minutes, once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PairingCode {
    /// `https://<address>:<port>/#pair=<code>`: the code rides in the
    /// fragment, which a browser never sends or logs.
    pub link: String,
    /// The same link as a QR code (`data:image/svg+xml;base64,…`).
    pub qr: String,
    pub expires_at: Timestamp,
    pub fingerprint: String,
}

/// A phone exchanging its one-time code for its own credential.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PairRequest {
    pub code: String,
    /// What to call the device (default "Phone"; at most 64 characters).
    #[serde(default)]
    #[schema(max_length = 64)]
    pub name: Option<String>,
}

/// Rename a device.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeviceRename {
    /// 1–64 characters, not only blanks, no control characters.
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$"
    )]
    pub name: String,
}
