//! Sessions this server does not know, served as stateless calls.
//!
//! A session lives in the server's memory. After a restart (an update, a
//! `restart`, the desktop app quitting) every agent's session id is
//! unknown, and the protocol's answer — 404, after which the client must
//! open a new session — is one most clients never act on: the official
//! Python SDK 1.x raises "Session terminated" and the agent's loop ends.
//! Nothing `get_user_request` does needs the session (the agent is its
//! `agent_id` and its queue the URL's), so a request naming a session this
//! server does not know is served as a stateless one — its id taken off —
//! and the loop goes on. What a session alone had (its log level, queue
//! changes as log messages, its standalone stream: a GET is answered as a
//! stateless server answers it) is gone with it; a DELETE of it is still
//! the session layer's (404: it is gone).

use std::sync::Arc;

use axum::body::Body;
use http::{Method, Request, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::SessionManager as _;
use rmcp::transport::streamable_http_server::StreamableHttpService;
use tower::ServiceExt as _;

use super::LocalMcp;

const SESSION_HEADER: &str = "mcp-session-id";

/// The session manager to ask, and the stateless service to serve with.
#[derive(Clone)]
pub struct Forgotten {
    sessions: Arc<LocalSessionManager>,
    stateless: StreamableHttpService<LocalMcp, LocalSessionManager>,
}

impl Forgotten {
    pub fn new(
        sessions: Arc<LocalSessionManager>,
        stateless: StreamableHttpService<LocalMcp, LocalSessionManager>,
    ) -> Forgotten {
        Forgotten { sessions, stateless }
    }

    /// `request` without its session id, when it names one this server does
    /// not know; `request` as it is otherwise.
    pub async fn unknown(&self, request: Request<Body>) -> Result<Request<Body>, Request<Body>> {
        if request.method() == Method::DELETE {
            return Err(request);
        }
        let Some(id) = request
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(|v| Arc::<str>::from(v.trim()))
        else {
            return Err(request);
        };
        match self.sessions.has_session(&id).await {
            Ok(false) => {
                tracing::debug!(session = %id, "a request for a session this server does not know: served statelessly");
                let mut request = request;
                request.headers_mut().remove(SESSION_HEADER);
                Ok(request)
            }
            _ => Err(request),
        }
    }

    pub async fn serve(&self, request: Request<Body>) -> Response<Body> {
        match self.stateless.clone().oneshot(request).await {
            Ok(response) => response.map(Body::new),
            Err(never) => match never {},
        }
    }
}
