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
pub use tokens::{TokenOrigin, TokenState, Tokens};

/// The page's session cookie. HttpOnly (no script can read it), SameSite=Strict
/// (no other site can send it), set only after the person typed the token.
pub const SESSION_COOKIE: &str = "local_mcp_session";

/// The attributes every page-session cookie carries.
const COOKIE_ATTRIBUTES: &str = "HttpOnly; SameSite=Strict; Path=/";

/// The cookie value for a token: an HMAC keyed by the token, so it survives a
/// restart, dies with the token, and never reveals the token itself.
pub fn session_value(token: &str) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(token.as_bytes()).expect("HMAC takes any key length");
    mac.update(b"local-mcp page session v1");
    hex::encode(mac.finalize().into_bytes())
}

/// A `Set-Cookie` value signing a page in with `token`, or, for `None`, the
/// one that signs it out.
pub fn session_set_cookie(token: Option<&str>) -> String {
    match token {
        Some(t) => format!("{SESSION_COOKIE}={}; {COOKIE_ATTRIBUTES}", session_value(t)),
        None => format!("{SESSION_COOKIE}=; {COOKIE_ATTRIBUTES}; Max-Age=0"),
    }
}

/// The live credentials. The token can change while serving (Settings →
/// regenerate / stop requiring), so readers ask each time instead of keeping it.
#[derive(Debug, Default)]
pub struct Credentials {
    current: RwLock<Current>,
}

#[derive(Debug, Default)]
struct Current {
    token: Option<String>,
    /// The session cookie value that stands for the token.
    session: Option<String>,
}

impl Current {
    fn new(token: Option<String>) -> Current {
        let session = token.as_deref().map(session_value);
        Current { token, session }
    }
}

impl Credentials {
    pub fn new(token: Option<String>) -> Credentials {
        Credentials {
            current: RwLock::new(Current::new(token)),
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, Current> {
        // Writers replace the whole value in one assignment, so a poisoned
        // lock still holds a consistent one.
        self.current.read_anyway()
    }

    pub fn token_required(&self) -> bool {
        self.read().token.is_some()
    }

    /// The current token, if one is required.
    pub fn token(&self) -> Option<String> {
        self.read().token.clone()
    }

    /// Replace the token; `None` stops requiring one. Sessions signed in with
    /// the old token end with it.
    pub fn set_token(&self, token: Option<String>) {
        *self.current.write_anyway() = Current::new(token);
    }

    /// Is `token` the configured one? (constant time)
    pub fn token_matches(&self, token: &str) -> bool {
        self.read()
            .token
            .as_ref()
            .is_some_and(|t| token.as_bytes().ct_eq(t.as_bytes()).into())
    }

    /// Is `value` the session cookie for the current token? (constant time)
    pub fn session_matches(&self, value: &str) -> bool {
        self.read()
            .session
            .as_ref()
            .is_some_and(|s| value.as_bytes().ct_eq(s.as_bytes()).into())
    }

    /// The `Set-Cookie` value that signs a window in, when a token is required:
    /// an embedding shell gives it to its window so the page never sees the token.
    pub fn session_cookie(&self) -> Option<String> {
        self.read().token.as_deref().map(|t| session_set_cookie(Some(t)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_and_sessions_compare_whole_and_follow_the_token() {
        let c = Credentials::new(Some("s3cret".into()));
        assert!(c.token_matches("s3cret"));
        assert!(!c.token_matches("s3cre") && !c.token_matches("s3cret2") && !c.token_matches(""));
        let session = session_value("s3cret");
        assert!(c.session_matches(&session));
        let cookie = c.session_cookie().unwrap();
        assert!(cookie.starts_with(&format!("{SESSION_COOKIE}={session};")), "{cookie}");
        assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"));

        c.set_token(Some("other".into()));
        assert!(!c.session_matches(&session), "a session dies with its token");
        c.set_token(None);
        assert!(!c.token_required() && c.session_cookie().is_none() && !c.token_matches("other"));
    }
}
