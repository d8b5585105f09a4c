//! The one security layer in front of every route: localhost is not a trust
//! boundary, because every web page the person visits can reach it (see
//! `docs/ARCHITECTURE.md`, "Security").
//!
//! In order: a loopback peer owned by another account of this machine is 403
//! unless it carries the token (loopback is no boundary between accounts);
//! a foreign `Host` (DNS rebinding) or `Origin` (a web page) is 403;
//! a write a browser marks cross-site (`Sec-Fetch-Site`) is 403;
//! `/api/*` and `/mcp` need the bearer token when one is set (compared in
//! constant time by `auth`, read only from the `Authorization` header or the
//! page's session cookie). No CORS headers are ever granted. Every response
//! carries a strict Content-Security-Policy and no-sniff/no-frame headers.
//!
//! What a route takes as a body (its limit, JSON or an upload's form) is the
//! route's own policy (`body.rs`), attached where it is registered; a read
//! of the whole history asks for [`ArchiveRead`] in its handler.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::connect_info::ConnectInfo;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use tokio::sync::OnceCell;

use super::error::error_response;
use super::AppState;
use crate::auth::{Credentials, Session};
use crate::peer::{self, Account};

/// The page needs nothing from anywhere but its own origin, and no inline code.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
img-src 'self' data: blob:; font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; \
form-action 'self'; frame-ancestors 'none'";

/// The other end of a connection, and (looked up once, on its first
/// request) the account that owns it. Cloned into every request of the connection.
#[derive(Debug, Clone)]
pub struct Peer {
    pub addr: SocketAddr,
    /// Our end (the address the connection came in on).
    pub local: Option<SocketAddr>,
    owner: Arc<OnceCell<Result<Account, super::lookups::Unknown>>>,
}

impl Peer {
    pub fn new(addr: SocketAddr, local: Option<SocketAddr>) -> Peer {
        Peer {
            addr,
            local,
            owner: Arc::default(),
        }
    }

    /// Whether it comes from this machine's loopback (where accounts must be told apart).
    pub fn is_loopback(&self) -> bool {
        self.addr.ip().to_canonical().is_loopback()
    }

    /// The account owning the peer's socket; an error says why it is unknown.
    async fn owner(&self) -> Result<Account, super::lookups::Unknown> {
        self.owner
            .get_or_init(|| async {
                let (addr, local) = (self.addr, self.local);
                let Some(local) = local else {
                    return Err(super::lookups::Unknown {
                        elsewhere: false,
                        why: "our end of the connection is unknown".to_owned(),
                    });
                };
                // A netlink round trip to the kernel: blocking I/O, on the
                // guard's own bounded pool, failing closed (`lookups`).
                super::lookups::owner(addr, local).await
            })
            .await
            .clone()
    }
}

/// Whether to refuse other accounts now (the runtime setting), read per request.
pub type SameUserOnly = Arc<dyn Fn() -> bool + Send + Sync>;

/// What a connection is, decided when it is accepted ([`Guard::admit`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// This account's own (or a remote peer, or a platform that cannot tell).
    Ours,
    /// Another account of this machine that the token may let in: served,
    /// but only the bearer token counts, and it gets little time to say so.
    OtherAccount(String),
    /// Another account, with nothing that could let it in: closed at once.
    Refused(String),
}

/// Told of a request refused for want of the token: its path and `User-Agent`.
pub type OnRefused = Arc<dyn Fn(&str, &str) + Send + Sync>;

/// Who may talk to us: the request policy, asking [`Credentials`] about tokens.
pub struct Guard {
    /// Host names accepted in `Host` and `Origin` (loopback names, plus the bind address).
    hosts: Vec<String>,
    /// Bound to every interface (0.0.0.0 / ::): clients may use any of the
    /// machine's names, so Host is not checked; a token is mandatory there.
    any_host: bool,
    /// The port we actually serve on (after any fallback).
    port: u16,
    credentials: Arc<Credentials>,
    /// The account we run as (`None` where the platform cannot tell owners).
    me: Option<Account>,
    same_user_only: SameUserOnly,
    /// Told of each request refused for want of the token (path, `User-Agent`).
    on_refused: OnRefused,
}

impl Guard {
    /// A guard that lets in any local account (see [`Guard::same_user_only`]).
    pub fn new(bind: IpAddr, port: u16, credentials: Arc<Credentials>) -> Guard {
        let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "[::1]".into()];
        if !bind.is_loopback() && !bind.is_unspecified() {
            hosts.push(match bind {
                IpAddr::V4(a) => a.to_string(),
                IpAddr::V6(a) => format!("[{a}]"),
            });
        }
        Guard {
            hosts,
            any_host: bind.is_unspecified(),
            port,
            credentials,
            me: None,
            same_user_only: Arc::new(|| false),
            on_refused: Arc::new(|_, _| {}),
        }
    }

    /// Call `told` with each request refused for want of the token.
    pub fn on_refused(mut self, told: OnRefused) -> Guard {
        self.on_refused = told;
        self
    }

    /// Refuse loopback peers of other accounts (that carry no token) while `on()` says so.
    pub fn same_user_only(mut self, me: Option<Account>, on: SameUserOnly) -> Guard {
        self.me = me;
        self.same_user_only = on;
        self
    }

    /// Why the peer is not this account's own (another account of this
    /// machine, or one that cannot be told); `None` when it is ours, on
    /// another host (the token's business: beyond loopback one is
    /// mandatory), or the platform cannot tell owners at all (a token is
    /// advised at start).
    ///
    /// "This machine" is what the kernel's socket table says, whatever the
    /// address: with `--host 0.0.0.0` another account reaches us on the
    /// machine's own LAN address too, where a rule keyed on "is loopback"
    /// let it pass as a remote peer (issue 38, finding 5). A peer that no
    /// socket of this machine has is on another host — unless its address
    /// is loopback, which only this machine has.
    async fn other_account(&self, peer: Option<&Peer>) -> Option<String> {
        let (Some(me), Some(peer)) = (self.me, peer) else {
            return None; // no peer facts (a test router) or a platform that cannot tell
        };
        match peer.owner().await {
            Ok(owner) if owner == me => None,
            Ok(owner) => Some(format!("it belongs to another account ({})", peer::describe(owner))),
            Err(unknown) if unknown.elsewhere && !peer.is_loopback() => None,
            // Never fail open: an owner we cannot tell is not ours.
            Err(e) => Some(format!("its owner cannot be told ({e})")),
        }
    }

    /// Whether a new connection may be served at all, decided when it is
    /// accepted (before it can hold anything): another account's connection
    /// is closed at once when nothing could let it in (no token is set and
    /// other accounts are refused), and otherwise served under
    /// [`Admission::OtherAccount`]'s rules.
    pub async fn admit(&self, peer: &Peer) -> Admission {
        match self.other_account(Some(peer)).await {
            None => Admission::Ours,
            Some(why) if (self.same_user_only)() && !self.credentials.token_required() => Admission::Refused(why),
            Some(why) => Admission::OtherAccount(why),
        }
    }

    /// `None` when the peer may go on; otherwise why it may not: another
    /// account's request needs the bearer token (never the page's cookie,
    /// which a browser sends to every local port and another account's
    /// server could replay) while other accounts are refused.
    async fn foreign_account(&self, peer: Option<&Peer>, headers: &HeaderMap) -> Option<String> {
        if !(self.same_user_only)() {
            return None;
        }
        let why = self.other_account(peer).await?;
        if self.credentials.token_required() && self.bearer_ok(headers) {
            return None; // a deliberate second account, with the token
        }
        Some(why)
    }

    /// `host[:port]` names us: a known host name and, if given, our port.
    fn host_ok(&self, authority: &str) -> bool {
        let (host, port) = split_authority(authority);
        let host = host.to_ascii_lowercase();
        let known = (self.any_host && !host.is_empty()) || self.hosts.contains(&host);
        known && port.is_none_or(|p| p == self.port)
    }

    /// A browser `Origin` must be this server's own page.
    fn origin_ok(&self, origin: &str) -> bool {
        origin.strip_prefix("http://").is_some_and(|authority| {
            let (_, port) = split_authority(authority);
            // An origin always names its port unless it is the scheme default.
            port.unwrap_or(80) == self.port && self.host_ok(authority)
        })
    }

    /// Does the request carry a page session of this server's?
    pub fn has_session(&self, headers: &HeaderMap) -> bool {
        self.session(headers) != Session::Invalid
    }

    /// The best page session the request carries (a browser may send an
    /// expired one beside a fresh one: every cookie of our name is asked).
    fn session(&self, headers: &HeaderMap) -> Session {
        let name = self.credentials.cookie_name();
        let sessions = cookies(headers, &name).map(|v| self.credentials.session(v));
        let mut best = Session::Invalid;
        for s in sessions {
            match s {
                Session::Valid => return Session::Valid,
                Session::Renew => best = Session::Renew,
                Session::Invalid => {}
            }
        }
        best
    }

    /// No token is required, or the request carries it: the bearer header,
    /// or the page's session cookie where `cookie_counts` (this account's own
    /// connections only).
    fn token_ok(&self, headers: &HeaderMap, cookie_counts: bool) -> bool {
        !self.credentials.token_required() || (cookie_counts && self.has_session(headers)) || self.bearer_ok(headers)
    }

    /// The request carries the token in an `Authorization: Bearer` header.
    fn bearer_ok(&self, headers: &HeaderMap) -> bool {
        self.credentials.token_required()
            && headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
                .is_some_and(|given| self.credentials.token_matches(given.trim()))
    }
}

/// Split `host[:port]`, understanding `[v6]:port`. A bad port counts as a mismatch.
fn split_authority(authority: &str) -> (&str, Option<u16>) {
    let (host, port) = match authority.rfind(':') {
        Some(i) if !authority[i..].contains(']') => (&authority[..i], Some(&authority[i + 1..])),
        _ => (authority, None),
    };
    (host, port.map(|p| p.parse().unwrap_or(0)))
}

fn is_mcp(path: &str) -> bool {
    path.strip_prefix(super::MCP_PATH)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

fn needs_token(path: &str) -> bool {
    // `/api/session` is where the page presents the token, so it cannot need one.
    let api = (path.starts_with("/api/") || path == "/api") && path != "/api/session";
    api || is_mcp(path)
}

/// A read that hands out the whole history (a backup, an export), which
/// must not be fetched by another site's `<img>` or link: its handler takes
/// this first. A browser says where a request comes from even when it sends
/// no Origin; a program that is not a browser says `none` (page scripts
/// cannot set this header) or sends the token.
pub struct ArchiveRead;

impl FromRequestParts<AppState> for ArchiveRead {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let same_origin = parts
            .headers
            .get(SEC_FETCH_SITE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| matches!(v, "same-origin" | "none"));
        if same_origin || state.guard.bearer_ok(&parts.headers) {
            return Ok(ArchiveRead);
        }
        tracing::warn!(
            path = parts.uri.path(),
            "refused an archive read that is not same-origin"
        );
        Err(error_response(
            StatusCode::FORBIDDEN,
            "forbidden",
            "backups and exports are given only to this server's own page (Sec-Fetch-Site: same-origin), \
             to a program that says Sec-Fetch-Site: none, or with the API token",
        ))
    }
}

/// The middleware.
pub async fn guard(State(sec): State<Arc<Guard>>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    let peer = req.extensions().get::<ConnectInfo<Peer>>().map(|c| &c.0);
    if let Some(why) = sec.foreign_account(peer, headers).await {
        tracing::warn!(peer = ?peer.map(|p| p.addr), path = req.uri().path(), "refused a local connection: {why}");
        return error_response(
            StatusCode::FORBIDDEN,
            "forbidden",
            "this local-mcp belongs to another account on this machine; send its API token to use it",
        );
    }
    // The Host, Origin and Sec-Fetch-Site rules below read one value each; a
    // second value might be what something behind them reads. Browsers send
    // each once. (A second Authorization cannot widen anything: the token
    // check reads the first, and nothing else reads it.)
    if let Some(name) = sent_twice(headers) {
        tracing::warn!(header = %name, path = req.uri().path(), "refused a request with a header sent twice");
        return error_response(
            StatusCode::BAD_REQUEST,
            "bad_request",
            &format!("the {name} header may be sent once only"),
        );
    }
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !sec.host_ok(host) {
        tracing::warn!(host, path = req.uri().path(), "refused a request for a foreign Host");
        return error_response(
            StatusCode::FORBIDDEN,
            "forbidden",
            "this server answers only to its own address (Host header refused)",
        );
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        if !origin.to_str().is_ok_and(|o| sec.origin_ok(o)) {
            tracing::warn!(origin = ?origin, path = req.uri().path(), "refused a request from a foreign Origin");
            return error_response(
                StatusCode::FORBIDDEN,
                "forbidden",
                "requests from other web origins are refused",
            );
        }
    }
    let changes = matches!(
        *req.method(),
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    );
    // A browser says where a request comes from even when it sends no
    // Origin; a form on another site must not reach an upload route.
    let cross_site = cross_site(headers);
    if changes && cross_site {
        tracing::warn!(path = req.uri().path(), "refused a cross-site write");
        return error_response(
            StatusCode::FORBIDDEN,
            "forbidden",
            "requests from other web origins are refused",
        );
    }
    // Reads too, on the API and MCP: another site's page cannot read the
    // answers, but it can make the server do the work (a read of a project's
    // files, a backup) as often as it likes, `no-cors`, without an Origin.
    // The page itself, and a program the person runs (no such header, or
    // `none`), pass; so does the token. The page's own files and /healthz
    // stay open: there is nothing to make them do.
    if !changes && cross_site && needs_token(req.uri().path()) && !sec.bearer_ok(headers) {
        tracing::warn!(path = req.uri().path(), "refused a cross-site read");
        return error_response(
            StatusCode::FORBIDDEN,
            "forbidden",
            "the API answers only this server's own page (or a program, or the token): another site's request was refused",
        );
    }
    let cookie_counts = sec.other_account(peer).await.is_none();
    if needs_token(req.uri().path()) && !sec.token_ok(headers, cookie_counts) {
        // Said where a person looks: an agent whose configuration lacks the
        // token (or has an old one) otherwise fails with nothing shown.
        let user_agent = headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        tracing::info!(
            path = req.uri().path(),
            user_agent,
            "refused a request without a valid API token"
        );
        (sec.on_refused)(req.uri().path(), user_agent);
        return error_response(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "a valid Authorization: Bearer token is required",
        );
    }
    // A page session more than a day old is renewed with this answer: one in
    // daily use never expires, one left alone does (after 30 days).
    let renew = cookie_counts && sec.credentials.token_required() && sec.session(headers) == Session::Renew;
    let mut response = next.run(req).await;
    if renew {
        super::session::set_session_cookie(&mut response, &sec.credentials);
    }
    page_headers(response.headers_mut());
    response
}

/// `Sec-Fetch-Site`: where a browser says a request comes from.
const SEC_FETCH_SITE: &str = "sec-fetch-site";

/// The values of the cookies named `name` the request carries, in order.
pub(super) fn cookies<'h>(headers: &'h HeaderMap, name: &'h str) -> impl Iterator<Item = &'h str> + 'h {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(move |(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// A request a browser marks as from another site (`Sec-Fetch-Site` other
/// than `same-origin` or `none`; a program sends none, or `none`).
pub(super) fn cross_site(headers: &HeaderMap) -> bool {
    headers
        .get(SEC_FETCH_SITE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| !matches!(v, "same-origin" | "none"))
}

/// The header among `Host`, `Origin` and `Sec-Fetch-Site` sent more than
/// once: each rule reads one value, and something behind it might read another.
pub(super) fn sent_twice(headers: &HeaderMap) -> Option<HeaderName> {
    [header::HOST, header::ORIGIN, HeaderName::from_static(SEC_FETCH_SITE)]
        .into_iter()
        .find(|name| headers.get_all(name).iter().nth(1).is_some())
}

/// The headers every answer carries: the page's strict policy (unless the
/// answer set a stricter one, as a served attachment does), no sniffing, no framing, no referrer.
pub(super) fn page_headers(h: &mut HeaderMap) {
    h.entry(header::CONTENT_SECURITY_POLICY)
        .or_insert(HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_origins() {
        let s = Guard::new(IpAddr::from([127, 0, 0, 1]), 8000, Arc::default());
        assert!(s.host_ok("127.0.0.1:8000"));
        assert!(s.host_ok("localhost"));
        assert!(s.host_ok("LOCALHOST:8000"));
        assert!(s.host_ok("[::1]:8000"));
        assert!(!s.host_ok("127.0.0.1:8001"), "another port is another server");
        assert!(!s.host_ok("evil.example:8000"));
        assert!(!s.host_ok("127.0.0.1:80x"));
        assert!(!s.host_ok(""));
        assert!(s.origin_ok("http://127.0.0.1:8000"));
        assert!(s.origin_ok("http://localhost:8000"));
        assert!(!s.origin_ok("http://localhost"), "default port 80 is not ours");
        assert!(!s.origin_ok("https://127.0.0.1:8000"));
        assert!(!s.origin_ok("null"));
        assert!(!s.origin_ok("http://evil.example:8000"));
    }

    #[test]
    fn tokens_compare_whole() {
        let s = Guard::new(
            IpAddr::from([127, 0, 0, 1]),
            1,
            Arc::new(Credentials::new(Some("s3cret".into()))),
        );
        let with = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::AUTHORIZATION, HeaderValue::from_str(v).unwrap());
            h
        };
        assert!(s.token_ok(&with("Bearer s3cret"), true));
        assert!(!s.token_ok(&with("Bearer s3cre"), true));
        assert!(!s.token_ok(&with("Bearer s3cret2"), true));
        assert!(!s.token_ok(&with("Basic s3cret"), true));
        assert!(!s.token_ok(&HeaderMap::new(), true));
    }
}
