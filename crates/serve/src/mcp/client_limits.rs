//! Which MCP client a call comes from, so that its wait ends inside that
//! client's limit (the table is `model::clients`) and its agent is known even
//! when the model forgets its `agent_id`.
//!
//! The client is known from `initialize` (`clientInfo.name`): in session
//! mode rmcp keeps it with the session. Clients of the 2026-07-28 protocol
//! (Claude Code 2.1) never send `initialize`: they open with
//! `server/discover` and name themselves in every request's `_meta`
//! (`io.modelcontextprotocol/clientInfo`), which is read first. Stateless
//! calls of older clients carry no session, so `initialize` also notes the
//! `User-Agent` it came with; a later call with the same `User-Agent` gets
//! the shortest limit seen with it (a generic agent string shared by two
//! clients gets the stricter one, and ending early is harmless). A client
//! not in the table waits the setting.

use std::collections::HashMap;
use std::sync::Mutex;

use rmcp::model::{Implementation, RequestMetaObject as Meta};
use rmcp::service::RequestContext;
use rmcp::RoleServer;

use crate::model::{limit_of, Caller, ClientName};
use crate::sync::MutexExt as _;

/// How many distinct `User-Agent`s are remembered (a bound on memory; the
/// oldest is dropped first).
const REMEMBERED: usize = 64;

/// What `initialize` taught us about stateless callers: the client that
/// opened with each `User-Agent`.
#[derive(Default)]
pub struct Seen {
    by_agent: Mutex<HashMap<String, (ClientName, u64)>>,
    counter: std::sync::atomic::AtomicU64,
}

/// What a request says about the client that sent it: the request's
/// `_meta`, its session's `initialize` (session mode only: a stateless
/// request's stand-in names no client), and its HTTP head.
pub struct Asking<'a> {
    pub meta: &'a Meta,
    pub initialized: Option<Implementation>,
    pub head: Option<&'a http::request::Parts>,
}

impl<'a> Asking<'a> {
    /// A request as rmcp hands it to the handler; `sessions`: whether the
    /// server keeps sessions (otherwise its peer's `initialize` is rmcp's stand-in).
    pub fn of(ctx: &'a RequestContext<RoleServer>, sessions: bool) -> Self {
        Asking {
            meta: &ctx.meta,
            initialized: sessions
                .then(|| ctx.peer.peer_info().map(|info| info.client_info.clone()))
                .flatten(),
            head: ctx.extensions.get::<http::request::Parts>(),
        }
    }

    fn header(&self, name: &str) -> Option<String> {
        self.head?.headers.get(name)?.to_str().ok().map(str::to_owned)
    }

    fn user_agent(&self) -> Option<String> {
        self.header(http::header::USER_AGENT.as_str())
    }
}

fn named(info: &Implementation) -> ClientName {
    ClientName {
        name: info.name.clone(),
        version: Some(info.version.clone()).filter(|v| !v.is_empty()),
    }
}

/// The strictest of two clients (the shorter limit; ending early is harmless).
fn stricter(a: ClientName, b: ClientName) -> ClientName {
    let seconds = |c: &ClientName| limit_of(&c.name).map_or(u32::MAX, |l| l.seconds);
    if seconds(&b) <= seconds(&a) {
        b
    } else {
        a
    }
}

/// The id of the client session a call belongs to, from what clients send:
/// Codex's `_meta.sessionId` (its thread), VS Code's conversation, the stdio
/// bridge's header, or the MCP session; hashed (it may be a conversation's
/// id) and shortened. Claude Code and Copilot CLI send none over HTTP.
fn client_session(asking: &Asking<'_>) -> Option<String> {
    let from_meta = |key: &str| asking.meta.get(key).and_then(|v| v.as_str()).map(str::to_owned);
    let raw = from_meta("sessionId")
        .or_else(|| from_meta("vscode.conversationId"))
        .or_else(|| asking.header(crate::model::CLIENT_SESSION_HEADER))
        .or_else(|| asking.header("mcp-session-id"))?;
    Some(crate::model::session_key(&raw))
}

impl Seen {
    /// A client opened (`initialize`, or 2026-07-28's `server/discover`):
    /// say which one, and note it under its `User-Agent` for stateless calls.
    pub fn started(&self, asking: &Asking<'_>, client: &Implementation) {
        let limit = limit_of(&client.name);
        // Debug-quoted: the names come from the client, and must not forge log lines.
        tracing::info!(
            client = ?client.name,
            version = ?client.version,
            waits_within = limit.map_or("the wait setting", |l| l.client),
            "an MCP client opened"
        );
        let Some(agent) = asking.user_agent() else {
            return;
        };
        let tick = self.counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut map = self.by_agent.lock_anyway();
        let known = map.remove(&agent).map(|(c, _)| c);
        let client = match known {
            Some(earlier) => stricter(earlier, named(client)),
            None => named(client),
        };
        map.insert(agent, (client, tick));
        if map.len() > REMEMBERED {
            if let Some(oldest) = map.iter().min_by_key(|(_, (_, t))| *t).map(|(k, _)| k.clone()) {
                map.remove(&oldest);
            }
        }
    }

    /// Who this call's client is, as far as it says: named in the call's
    /// own `_meta` (2026-07-28), by its session's `initialize`, by the
    /// `initialize` that came with its `User-Agent`, or by the `User-Agent`
    /// itself (`codex-mcp-client/0.169.0`); and the client session it is in.
    pub fn caller(&self, asking: &Asking<'_>) -> Caller {
        let agent = asking.user_agent();
        let remembered = || {
            let map = self.by_agent.lock_anyway();
            agent.as_ref().and_then(|a| map.get(a)).map(|(c, _)| c.clone())
        };
        // `product/version (comment)`, when the product is a client we know.
        let from_agent = || {
            let product = agent.as_deref()?.split_whitespace().next()?;
            let (name, version) = product.split_once('/').unwrap_or((product, ""));
            Some(ClientName {
                name: name.to_owned(),
                version: Some(version.to_owned()).filter(|v| !v.is_empty()),
            })
        };
        // In order of trust; the first a limit is known for wins, else the
        // first that names anything.
        let candidates = [
            asking.meta.client_info().map(|info| named(&info)),
            asking.initialized.as_ref().map(named),
            remembered(),
            from_agent(),
        ];
        let client = candidates
            .iter()
            .flatten()
            .find(|c| limit_of(&c.name).is_some())
            .or_else(|| candidates[..3].iter().flatten().find(|c| !c.name.is_empty()))
            .cloned();
        let protocol = asking
            .meta
            .protocol_version()
            .map(|v| v.to_string())
            .or_else(|| asking.header("mcp-protocol-version"));
        let caller = Caller {
            client,
            session: client_session(asking),
            // Versions are dates: the 2026-07-28 revision dropped resumable streams.
            no_resume: protocol.is_some_and(|v| v.as_str() >= "2026-07-28"),
            silent: silent_until_answer(asking.meta),
            // SEP-2663: a call takes a task when its own capabilities (its
            // `_meta`, from 2026-07-28 on) declare the extension — Claude
            // Code declares it per call, not on a subagent's.
            tasks: asking.meta.client_capabilities().is_some_and(|c| c.supports_tasks()),
        };
        if let Some(limit) = caller.client.as_ref().and_then(|c| limit_of(&c.name)) {
            tracing::debug!(
                client = limit.client,
                limit = limit.seconds,
                source = limit.source,
                "waits end inside this client's limit"
            );
        }
        caller
    }
}

/// Whether nothing may be sent to this call before its answer: a 2026-07-28
/// request gets log messages only if it set `_meta.../logLevel` (SEP-2575,
/// "no notifications/message for requests that didn't set logLevel") and
/// progress only with a token. `get_user_request` opens its stream with
/// either, or with nothing.
#[allow(deprecated)] // LoggingLevel: the request's level is still read (SEP-2577)
fn silent_until_answer(meta: &Meta) -> bool {
    let era_2026 = meta
        .protocol_version()
        .is_some_and(|v| v.to_string().as_str() >= "2026-07-28");
    era_2026 && meta.get_progress_token().is_none() && meta.log_level() != Some(rmcp::model::LoggingLevel::Debug)
}
