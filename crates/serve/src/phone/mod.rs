//! The phone's listener (issue 43): off until the person starts it, a
//! second server on an address of this machine they pick (a LAN, Tailscale
//! or WireGuard address), over TLS with a certificate made for this install
//! (`tls`). A phone pairs by a one-time code in a QR code's link
//! (`pairing`) and gets a credential of its own, kept as an HttpOnly,
//! Secure, SameSite=Strict cookie; the store keeps only its SHA-256.
//! What a phone may reach is decided by the listener's own gate (`gate`),
//! not by what the page shows: instructions, questions, history, reports
//! and the live status, never `/mcp`, settings, tokens, client files,
//! backups or pairing another device. The loopback server is unchanged.
//!
//! `docs/ARCHITECTURE.md`, "Phone"; the threats in `docs/RELIABILITY.md`.

pub mod pairing;
pub mod tls;

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use crate::model::Timestamp;
use crate::model::{Device, PairRequest, PairingCode, PhoneStart, PhoneStatus, RefusedCode};
use crate::queue::Queue;
use crate::sync::MutexExt as _;
use crate::{Error, Result};

/// The cookie that carries a device's credential.
pub const DEVICE_COOKIE: &str = "local-mcp-device";

/// Serves the phone listener's connections (TLS, then HTTP behind the
/// listener's gate) until the token is cancelled: `server::serve_tls` with
/// the phone router, given by the engine (this module sits below both).
pub type Listen = Arc<dyn Fn(tokio::net::TcpListener, Arc<rustls::ServerConfig>, CancellationToken) + Send + Sync>;

/// The port a phone's bookmark keeps working on, unless the person picks another.
pub const DEFAULT_PORT: u16 = 8443;
/// A device's last-seen time is written at most this often.
const SEEN_EVERY: Duration = Duration::from_secs(60);
/// Connections one paired device may hold (a phone's browser uses a
/// handful): past this its oldest closes, so one device — or a stolen
/// cookie — cannot take every connection the listener has.
pub const DEVICE_CONNECTIONS: usize = 16;

/// A paired device as the gate knows it: its id, and a token cancelled when
/// it is revoked (its live streams end with it).
#[derive(Debug, Clone)]
pub struct Known {
    pub id: String,
    pub revoked: CancellationToken,
}

/// The listener while it runs.
struct Listening {
    /// `https://<address>:<port>/p/<secret>`: where the phone's page is.
    url: String,
    /// `/p/<secret>`: the path everything is served under (see [`Phone::prefix`]).
    prefix: String,
    /// `host:port` as the phone's browser sends it in `Host`.
    authority: String,
    fingerprint: String,
    stop: CancellationToken,
}

#[derive(Default)]
struct State {
    listening: Option<Listening>,
    codes: pairing::Codes,
    refused: u64,
    last_refused: Option<RefusedCode>,
    /// SHA-256 (hex) of each device's credential → the device.
    devices: HashMap<String, Known>,
    /// When each device's last-seen time was last written.
    written: HashMap<String, Instant>,
    /// Each device's open connections, oldest first (see [`DEVICE_CONNECTIONS`]).
    links: HashMap<String, VecDeque<CancellationToken>>,
}

/// The phone listener's controller, shared by the loopback API (which starts,
/// stops and pairs) and the listener's gate (which checks devices).
pub struct Phone {
    queue: Queue,
    /// Where the key and certificates live (`<database>-phone/`).
    dir: PathBuf,
    /// The engine's: the listener stops with it.
    shutdown: CancellationToken,
    /// How the listener serves (set once the router is built).
    /// How the listener serves (set once the router is built; let go when
    /// the engine stops: the router holds the state, which holds this).
    listen: Mutex<Option<Listen>>,
    /// Held across a whole start or stop: two at once (two tabs, the page
    /// and the tray) must not leave a listener nobody holds a handle to.
    turning: tokio::sync::Mutex<()>,
    state: Mutex<State>,
    /// Refused pairing codes' log lines.
    refused_said: crate::said::Said,
}

impl Phone {
    pub fn new(queue: Queue, dir: PathBuf, shutdown: CancellationToken) -> Arc<Phone> {
        Arc::new(Phone {
            queue,
            dir,
            shutdown,
            listen: Mutex::new(None),
            turning: tokio::sync::Mutex::new(()),
            state: Mutex::default(),
            refused_said: crate::said::Said::new(),
        })
    }

    /// How the listener serves (the API and the page, behind its gate).
    pub fn set_listen(&self, listen: Listen) {
        *self.listen.lock_anyway() = Some(listen);
    }

    /// Let go of how the listener serves (the engine stopped): that router
    /// holds the state, which holds this, so until then neither is dropped —
    /// nor the database connection they hold (Windows then refuses to move
    /// the file, as recovering a damaged one does).
    pub fn forget_listen(&self) {
        self.stop_listening();
        self.listen.lock_anyway().take();
    }

    /// This machine's addresses a phone could reach: not loopback, not link-local.
    pub fn addresses() -> Vec<IpAddr> {
        let mut addresses: Vec<IpAddr> = if_addrs::get_if_addrs()
            .unwrap_or_default()
            .into_iter()
            .filter(|i| !i.is_loopback() && !i.is_link_local())
            .map(|i| i.ip())
            .collect();
        addresses.sort_by_key(|a| (a.is_ipv6(), *a));
        addresses.dedup();
        addresses
    }

    pub async fn status(&self) -> Result<PhoneStatus> {
        let devices = self.queue.devices().await?;
        let state = self.state.lock_anyway();
        let locked = state.codes.locked(Instant::now());
        let listening = state.listening.as_ref();
        Ok(PhoneStatus {
            running: listening.is_some(),
            url: listening.map(|l| l.url.clone()),
            fingerprint: listening.map(|l| l.fingerprint.clone()),
            addresses: Phone::addresses().iter().map(IpAddr::to_string).collect(),
            devices,
            refused_codes: state.refused,
            last_refused: state.last_refused.clone(),
            locked_addresses: locked.0 as u64,
            locked_until: locked.1.map(|d| Timestamp::in_seconds(d.as_secs().max(1))),
        })
    }

    /// Start listening on `start.address`, in place of where it listens now:
    /// the new port is bound before the old listener stops, so a start that
    /// fails (the port is taken) leaves the running one as it was.
    pub async fn start(&self, start: PhoneStart) -> Result<PhoneStatus> {
        let _turning = self.turning.lock().await;
        let address: IpAddr = start
            .address
            .trim()
            .parse()
            .map_err(|_| Error::Invalid(format!("{:?} is not an IP address", start.address)))?;
        let ours = Phone::addresses();
        if !ours.contains(&address) {
            let listed = ours.iter().map(IpAddr::to_string).collect::<Vec<_>>().join(", ");
            return Err(Error::Invalid(format!(
                "{address} is not one of this machine's network addresses ({listed}): pick one a phone can reach"
            )));
        }
        let Some(listen) = self.listen.lock_anyway().clone() else {
            return Err(Error::Unavailable("the phone listener is not ready yet".into()));
        };
        let port = start.port.unwrap_or(DEFAULT_PORT);
        let wanted = SocketAddr::new(address, port);
        // The same place again: nothing changes (stopping first would hand the
        // port to whoever binds it in between, and then fail to get it back).
        if self.authority().is_some_and(|a| a == wanted.to_string()) {
            return self.status().await;
        }
        let listener = tokio::net::TcpListener::bind(wanted)
            .await
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::AddrInUse => {
                    Error::Conflict(format!("port {port} on {address} is in use: pick another port"))
                }
                _ => Error::Invalid(format!("cannot listen on {address}:{port}: {e}")),
            })?;
        let (dir, at) = (self.dir.clone(), address);
        let identity = tokio::task::spawn_blocking(move || tls::identity(&dir, at))
            .await
            .map_err(|e| Error::internal("making the phone listener's certificate", e.to_string()))??;
        // The running listener stops only when this one takes its place below,
        // with no await between: a start that fails, or whose request is
        // dropped, leaves it as it was.
        let bound = listener
            .local_addr()
            .map_err(|e| Error::internal("reading the phone listener's address", e))?;
        // `192.0.2.7:8443`, `[2001:db8::7]:8443`: as a browser sends it in `Host`.
        let authority = bound.to_string();
        let prefix = format!("/p/{}", tls::path_secret(&self.dir)?);
        let url = format!("https://{authority}{prefix}");
        let devices = self.queue.device_credentials().await?;
        let stop = self.shutdown.child_token();
        {
            let mut state = self.state.lock_anyway();
            state.devices = devices
                .into_iter()
                .map(|(id, hash)| {
                    let known = Known {
                        id,
                        revoked: stop.child_token(),
                    };
                    (hash, known)
                })
                .collect();
            state.codes.clear();
            let replaced = state.listening.replace(Listening {
                url: url.clone(),
                prefix,
                authority,
                fingerprint: identity.fingerprint.clone(),
                stop: stop.clone(),
            });
            // What it replaces stops, and every connection with it.
            if let Some(old) = replaced {
                old.stop.cancel();
            }
        }
        listen(listener, identity.config, stop);
        // Not the URL: its path is a secret of this install's (the page shows it).
        tracing::info!(%bound, fingerprint = %identity.fingerprint, "the phone listener is on");
        self.status().await
    }

    /// Stop listening: every phone connection closes; pairings stay.
    pub async fn stop(&self) -> Result<PhoneStatus> {
        let _turning = self.turning.lock().await;
        if self.stop_listening() {
            tracing::info!("the phone listener is off");
        }
        self.status().await
    }

    fn stop_listening(&self) -> bool {
        let mut state = self.state.lock_anyway();
        state.codes.clear();
        match state.listening.take() {
            Some(listening) => {
                listening.stop.cancel();
                true
            }
            None => false,
        }
    }

    /// The path prefix the listener serves under, while it runs. A secret of
    /// this install's: browsers send a cookie to every port of a host, so a
    /// server another account runs on this address would be sent the device
    /// cookie — but only for a path under the cookie's, which it cannot know.
    pub fn prefix(&self) -> Option<String> {
        self.state.lock_anyway().listening.as_ref().map(|l| l.prefix.clone())
    }

    /// `host:port` the listener answers to, while it runs.
    pub fn authority(&self) -> Option<String> {
        self.state.lock_anyway().listening.as_ref().map(|l| l.authority.clone())
    }

    /// A one-time pairing link (and its QR code) for the running listener.
    pub fn code(&self) -> Result<PairingCode> {
        let mut state = self.state.lock_anyway();
        let Some(listening) = state.listening.as_ref() else {
            return Err(Error::Conflict("start the phone listener first".into()));
        };
        let (url, fingerprint) = (listening.url.clone(), listening.fingerprint.clone());
        let now = Instant::now();
        let (code, until) = state.codes.issue(now);
        let link = format!("{url}/#pair={code}");
        let svg = qrcode::QrCode::new(link.as_bytes())
            .map_err(|e| Error::internal("drawing the pairing QR code", e.to_string()))?
            .render::<qrcode::render::svg::Color<'_>>()
            .min_dimensions(256, 256)
            .quiet_zone(true)
            .build();
        let qr = format!(
            "data:image/svg+xml;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(svg)
        );
        Ok(PairingCode {
            link,
            qr,
            expires_at: Timestamp::in_seconds((until - now).as_secs()),
            fingerprint,
        })
    }

    /// A phone's code exchanged for its own credential (returned once, for its cookie).
    pub async fn pair(&self, request: PairRequest, from: IpAddr) -> Result<(Device, String)> {
        // The name first: a code is spent only on a pairing that can happen.
        let name = match request.name.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
            Some(name) => crate::model::device_name(name)?,
            None => "Phone".to_owned(),
        };
        let tried = self
            .state
            .lock_anyway()
            .codes
            .try_code(&request.code, from, Instant::now());
        match tried {
            pairing::Tried::Paired => {}
            pairing::Tried::Locked { for_secs } => {
                if let Some(t) = self.note_refused(from) {
                    tracing::warn!(%from, refused = t.total, unsaid = t.unsaid, "pairing codes from an address locked out");
                }
                return Err(Error::TooMany(format!(
                    "too many wrong codes from this address: try again in {for_secs} s"
                )));
            }
            pairing::Tried::Wrong { locked_now } => {
                if let Some(t) = self.note_refused(from) {
                    tracing::warn!(%from, locked_now, refused = t.total, unsaid = t.unsaid, "refused a wrong or used pairing code");
                }
                return Err(if locked_now {
                    Error::TooMany("too many wrong codes from this address: try again in a minute".into())
                } else {
                    Error::Forbidden(
                        "this pairing code is wrong, used or expired: make a new one on the computer".into(),
                    )
                });
            }
        }
        let credential = crate::auth::new_secret();
        let hash = credential_hash(&credential);
        let now = Timestamp::now();
        let device = Device {
            id: uuid::Uuid::new_v4().to_string(),
            name,
            created_at: now.clone(),
            last_seen_at: Some(now),
            last_address: Some(from.to_string()),
        };
        let device = self.queue.add_device(device, hash.clone()).await?;
        let mut state = self.state.lock_anyway();
        let revoked = match &state.listening {
            Some(l) => l.stop.child_token(),
            None => CancellationToken::new(),
        };
        state.devices.insert(
            hash,
            Known {
                id: device.id.clone(),
                revoked,
            },
        );
        tracing::info!(device = %device.id, name = %device.name, %from, "a phone paired");
        Ok((device, credential))
    }

    /// Count a refused code (shown on the computer's page); what to log, when
    /// it is to be logged (within `Said`'s bounds: anyone who has the link's
    /// path can send codes as fast as they like, from as many addresses).
    fn note_refused(&self, from: IpAddr) -> Option<crate::said::Tally> {
        let mut state = self.state.lock_anyway();
        state.refused += 1;
        state.last_refused = Some(RefusedCode {
            at: Timestamp::now(),
            address: from.to_string(),
        });
        drop(state);
        self.refused_said.count(from)
    }

    /// The device whose credential this is, if it is paired.
    pub fn device(&self, credential: &str) -> Option<Known> {
        let hash = credential_hash(credential);
        self.state.lock_anyway().devices.get(&hash).cloned()
    }

    /// A connection `device` has shown its credential on, closed by `cut`:
    /// past [`DEVICE_CONNECTIONS`] of that device's, its oldest is closed.
    pub fn trusted(&self, device: &Known, cut: CancellationToken) {
        let mut state = self.state.lock_anyway();
        keep_link(state.links.entry(device.id.clone()).or_default(), cut);
    }

    /// Note that `device` was seen from `from` (written at most once a minute).
    pub fn seen(&self, device: &Known, from: IpAddr) {
        let due = {
            let mut state = self.state.lock_anyway();
            let now = Instant::now();
            let due = state
                .written
                .get(&device.id)
                .is_none_or(|at| now.duration_since(*at) >= SEEN_EVERY);
            if due {
                state.written.insert(device.id.clone(), now);
            }
            due
        };
        if due {
            let (queue, id) = (self.queue.clone(), device.id.clone());
            tokio::spawn(async move {
                if let Err(e) = queue.touch_device(id, Timestamp::now(), from.to_string()).await {
                    tracing::debug!(error = %e, "could not note when a phone was last seen");
                }
            });
        }
    }

    pub async fn rename(&self, id: String, name: &str) -> Result<Device> {
        let name = crate::model::device_name(name)?;
        self.queue
            .rename_device(id.clone(), name)
            .await?
            .ok_or_else(|| Error::NotFound(format!("no paired device {id}")))
    }

    /// Revoke a device: its next request is refused and its live streams end now.
    pub async fn revoke(&self, id: String) -> Result<Device> {
        // Not while a start builds its devices' map from the store.
        let _turning = self.turning.lock().await;
        let device = self
            .queue
            .revoke_device(id.clone())
            .await?
            .ok_or_else(|| Error::NotFound(format!("no paired device {id}")))?;
        let mut state = self.state.lock_anyway();
        state.devices.retain(|_, known| {
            let keep = known.id != id;
            if !keep {
                known.revoked.cancel();
            }
            keep
        });
        state.written.remove(&id);
        state.links.remove(&id);
        tracing::info!(device = %id, "a phone was revoked");
        Ok(device)
    }
}

/// Keep `cut` among a device's connections `links`: those that ended are
/// dropped, and past [`DEVICE_CONNECTIONS`] the oldest is closed.
fn keep_link(links: &mut VecDeque<CancellationToken>, cut: CancellationToken) {
    links.retain(|c| !c.is_cancelled());
    links.push_back(cut);
    while links.len() > DEVICE_CONNECTIONS {
        if let Some(oldest) = links.pop_front() {
            oldest.cancel();
        }
    }
}

/// The SHA-256 (hex) of a device credential: what the store keeps.
fn credential_hash(credential: &str) -> String {
    hex::encode(Sha256::digest(credential.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_holds_at_most_its_share_of_connections_its_oldest_closing() {
        let mut links = VecDeque::new();
        let cuts: Vec<CancellationToken> = (0..DEVICE_CONNECTIONS + 2).map(|_| CancellationToken::new()).collect();
        for c in &cuts[..DEVICE_CONNECTIONS] {
            keep_link(&mut links, c.clone());
        }
        assert!(cuts.iter().all(|c| !c.is_cancelled()));
        keep_link(&mut links, cuts[DEVICE_CONNECTIONS].clone());
        assert!(cuts[0].is_cancelled() && !cuts[1].is_cancelled(), "the oldest closed");
        // One that ended by itself makes room without closing another.
        cuts[5].cancel();
        keep_link(&mut links, cuts[DEVICE_CONNECTIONS + 1].clone());
        assert!(!cuts[1].is_cancelled());
        assert_eq!(links.len(), DEVICE_CONNECTIONS);
    }
}
