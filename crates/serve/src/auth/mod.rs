//! Who may use this engine: the live API token and the page-session cookie
//! that stands for it. One [`Credentials`] is shared by the HTTP guard (which
//! asks it about each request), by [`Tokens`] (which changes the token when
//! the person asks) and by an embedding shell (which signs its window in and
//! copies the token into client configurations).
//!
//! Request policy — hosts, origins, body rules — is HTTP's business and stays
//! in `http::security`; this module knows no HTTP type.

mod tokens;

use std::sync::{RwLock, RwLockReadGuard};

use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use crate::sync::RwLockExt as _;
pub use tokens::{generate as new_secret, TokenOrigin, TokenState, Tokens};

/// The page's session cookie, by name: this plus the first characters of the
/// database's instance id, so two local-mcp on one host (a browser sends a
/// host's cookies to every port) never overwrite each other's. HttpOnly (no
/// script can read it), SameSite=Strict (no other site can send it), set
/// only after the person typed the token.
pub const SESSION_COOKIE: &str = "local_mcp_session";

/// The attributes every page-session cookie carries.
const COOKIE_ATTRIBUTES: &str = "HttpOnly; SameSite=Strict; Path=/";

/// How long a page session lasts, and after how long a use renews it.
pub const SESSION_MAX_AGE: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 3600);
const SESSION_RENEW_AFTER: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// What a presented cookie is worth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Session {
    /// Not ours: wrong instance, token, form or age.
    Invalid,
    /// Ours, and fresh.
    Valid,
    /// Ours, and old enough to be renewed with this answer.
    Renew,
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The MAC of one session: keyed by the token (a session dies with it), over
/// the instance (a session is this database's server's only), when it was
/// issued (it expires) and a random nonce (each sign-in is its own).
fn session_mac(token: &str, instance: &str, issued: u64, nonce: &str) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(token.as_bytes()).expect("HMAC takes any key length");
    mac.update(format!("local-mcp page session v2|{instance}|{issued}|{nonce}").as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

/// A new session's cookie value: `<issued>.<nonce>.<mac>`.
fn new_session_value(token: &str, instance: &str, issued: u64) -> String {
    let nonce = uuid::Uuid::new_v4().simple().to_string();
    format!("{issued}.{nonce}.{}", session_mac(token, instance, issued, &nonce))
}

/// The live credentials. The token can change while serving (Settings →
/// regenerate / stop requiring), so readers ask each time instead of keeping it.
#[derive(Debug, Default)]
pub struct Credentials {
    current: RwLock<Option<String>>,
    /// This database's instance id (`meta.instance`): sessions are this server's only.
    instance: String,
}

impl Credentials {
    /// Credentials without an instance (tests, and a shell before it knows one).
    pub fn new(token: Option<String>) -> Credentials {
        Credentials::for_instance(token, String::new())
    }

    /// The credentials of the server of the database whose instance id is `instance`.
    pub fn for_instance(token: Option<String>, instance: String) -> Credentials {
        Credentials {
            current: RwLock::new(token),
            instance,
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, Option<String>> {
        // Writers replace the whole value in one assignment, so a poisoned
        // lock still holds a consistent one.
        self.current.read_anyway()
    }

    pub fn token_required(&self) -> bool {
        self.read().is_some()
    }

    /// The current token, if one is required.
    pub fn token(&self) -> Option<String> {
        self.read().clone()
    }

    /// Replace the token; `None` stops requiring one. Sessions signed in with
    /// the old token end with it.
    pub fn set_token(&self, token: Option<String>) {
        *self.current.write_anyway() = token;
    }

    /// Is `token` the configured one? (constant time)
    pub fn token_matches(&self, token: &str) -> bool {
        self.read()
            .as_ref()
            .is_some_and(|t| token.as_bytes().ct_eq(t.as_bytes()).into())
    }

    /// This server's session cookie's name.
    pub fn cookie_name(&self) -> String {
        match self.instance.get(..12) {
            Some(short) => format!("{SESSION_COOKIE}_{short}"),
            None => SESSION_COOKIE.to_owned(),
        }
    }

    /// What the session cookie `value` is worth now (the MAC compared in constant time).
    pub fn session(&self, value: &str) -> Session {
        self.session_at(value, now_secs())
    }

    fn session_at(&self, value: &str, now: u64) -> Session {
        let current = self.read();
        let Some(token) = current.as_deref() else {
            return Session::Invalid;
        };
        let mut parts = value.splitn(3, '.');
        let (Some(issued), Some(nonce), Some(mac)) = (parts.next(), parts.next(), parts.next()) else {
            return Session::Invalid;
        };
        let Ok(issued) = issued.parse::<u64>() else {
            return Session::Invalid;
        };
        let expected = session_mac(token, &self.instance, issued, nonce);
        if !bool::from(mac.as_bytes().ct_eq(expected.as_bytes())) {
            return Session::Invalid;
        }
        match now.checked_sub(issued) {
            // Issued in the future (a clock moved back a little is forgiven).
            None if issued - now > 300 => Session::Invalid,
            None => Session::Valid,
            Some(age) if age > SESSION_MAX_AGE.as_secs() => Session::Invalid,
            Some(age) if age > SESSION_RENEW_AFTER.as_secs() => Session::Renew,
            Some(_) => Session::Valid,
        }
    }

    /// A `Set-Cookie` value that signs a new page session in, when a token is
    /// required: for the page's sign-in, a renewal, or an embedding shell's
    /// window (so its page never sees the token).
    pub fn session_cookie(&self) -> Option<String> {
        let token = self.read().clone()?;
        Some(format!(
            "{}={}; {COOKIE_ATTRIBUTES}; Max-Age={}",
            self.cookie_name(),
            new_session_value(&token, &self.instance, now_secs()),
            SESSION_MAX_AGE.as_secs()
        ))
    }

    /// The `Set-Cookie` value that signs a page out.
    pub fn signed_out_cookie(&self) -> String {
        format!("{}=; {COOKIE_ATTRIBUTES}; Max-Age=0", self.cookie_name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value_of(cookie: &str) -> &str {
        cookie.split(';').next().unwrap().split_once('=').unwrap().1
    }

    #[test]
    fn sessions_are_each_their_own_this_servers_only_and_expire() {
        let c = Credentials::for_instance(Some("s3cret".into()), "0123456789abcdef0123".into());
        assert!(c.token_matches("s3cret"));
        assert!(!c.token_matches("s3cre") && !c.token_matches("s3cret2") && !c.token_matches(""));
        assert_eq!(c.cookie_name(), "local_mcp_session_0123456789ab");
        let (one, two) = (c.session_cookie().unwrap(), c.session_cookie().unwrap());
        assert!(one.starts_with("local_mcp_session_0123456789ab=") && one.contains("HttpOnly"));
        assert!(
            one.contains("SameSite=Strict") && one.contains("Max-Age=2592000"),
            "{one}"
        );
        assert_ne!(value_of(&one), value_of(&two), "each sign-in is its own session");
        assert_eq!(c.session(value_of(&one)), Session::Valid);

        // Another server with the same token (another database) does not take it.
        let other = Credentials::for_instance(Some("s3cret".into()), "ffffffffffffffff".into());
        assert_eq!(other.session(value_of(&one)), Session::Invalid);
        // Forged, cut or reshaped values are nothing.
        for bad in ["", "1.2", "x.y.z", &value_of(&one).replace('.', ":")] {
            assert_eq!(c.session(bad), Session::Invalid, "{bad:?}");
        }
        let mut tampered = value_of(&one).to_owned();
        tampered.insert(0, '9');
        assert_eq!(c.session(&tampered), Session::Invalid, "its time is under the MAC");

        // Age: renewed after a day, refused after thirty.
        let now = now_secs();
        let aged = |days: u64| new_session_value("s3cret", &c.instance, now - days * 24 * 3600 - 10);
        assert_eq!(c.session_at(&aged(0), now), Session::Valid);
        assert_eq!(c.session_at(&aged(2), now), Session::Renew);
        assert_eq!(c.session_at(&aged(31), now), Session::Invalid);

        // A session dies with its token.
        c.set_token(Some("other".into()));
        assert_eq!(c.session(value_of(&one)), Session::Invalid);
        c.set_token(None);
        assert!(!c.token_required() && c.session_cookie().is_none() && !c.token_matches("other"));
    }
}
