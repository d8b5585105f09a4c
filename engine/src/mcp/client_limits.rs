//! How long each MCP client lets one tool call run before it cancels it,
//! and the wait that stays inside that. A wait cut off by the client reaches
//! the agent as an error (and some models then end their session); a wait
//! the server ends a little early is the normal empty or default result,
//! and the agent simply calls again. So a call's wait is the setting, or
//! nine tenths of its client's limit when that is shorter.
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

use rmcp::model::Implementation;
use rmcp::service::RequestContext;
use rmcp::RoleServer;

/// One client's limit on a tool call.
pub struct Limit {
    /// A lowercase piece of its `clientInfo.name` (or `User-Agent`).
    pub matches: &'static str,
    pub client: &'static str,
    pub seconds: u32,
    /// Where the figure comes from.
    pub source: &'static str,
}

/// Most specific first: `cursor-vscode` is Cursor, not VS Code.
pub const LIMITS: &[Limit] = &[
    Limit {
        matches: "claude-code",
        client: "Claude Code",
        seconds: 300,
        source: "remote calls abort after 300 s without a response or progress since v2.1.187 (anthropics/claude-code#70441)",
    },
    Limit {
        matches: "claude-ai",
        client: "Claude Desktop",
        seconds: 240,
        source: "\"No result received from the Claude Desktop app after waiting 4 minutes\" (anthropics/claude-code#44032, #91898)",
    },
    Limit {
        matches: "cursor",
        client: "Cursor",
        seconds: 300,
        source: "no documented setting; long calls reported cut at about 5 minutes",
    },
    Limit {
        matches: "visual studio code",
        client: "VS Code",
        seconds: 300,
        source: "Copilot Chat cancels a tool call after 5 minutes, progress or not (microsoft/vscode#261734)",
    },
    Limit {
        matches: "visual-studio-code",
        client: "VS Code",
        seconds: 300,
        source: "as above",
    },
    Limit {
        matches: "codex",
        client: "Codex",
        seconds: 60,
        source: "tool_timeout_sec defaults to 60 s (openai/codex codex-rs/core/src/mcp_connection_manager.rs, PR #3959)",
    },
    Limit {
        matches: "gemini",
        client: "Gemini CLI",
        seconds: 600,
        source: "per-server timeout defaults to 600 000 ms (google-gemini/gemini-cli docs/tools/mcp-server.md)",
    },
    Limit {
        matches: "zed",
        client: "Zed",
        seconds: 60,
        source: "context servers' request timeout defaults to 60 s (zed-industries/zed PR #45378)",
    },
    Limit {
        matches: "cline",
        client: "Cline",
        seconds: 60,
        source: "DEFAULT_MCP_TIMEOUT_SECONDS = 60 (cline src/shared/mcp.ts)",
    },
    Limit {
        matches: "roo",
        client: "Roo Code",
        seconds: 60,
        source: "Network Timeout defaults to 1 minute (RooCodeInc/Roo-Code-Docs using-mcp-in-roo.mdx)",
    },
    Limit {
        matches: "copilot",
        client: "GitHub Copilot CLI",
        seconds: 60,
        source: "calls cut at 60 s whatever the configured timeout (github/copilot-cli#1535)",
    },
    Limit {
        matches: "opencode",
        client: "opencode",
        seconds: 300,
        source: "a 5-minute cap on MCP calls reported in 1.18 (anomalyco/opencode#39584)",
    },
    Limit {
        matches: "goose",
        client: "Goose",
        seconds: 300,
        source: "extension timeout defaults to 300 s (block/goose docs)",
    },
];

/// The client's limit, from its `clientInfo.name` or `User-Agent`.
pub fn limit_of(name: &str) -> Option<&'static Limit> {
    let name = name.to_ascii_lowercase();
    LIMITS.iter().find(|l| name.contains(l.matches))
}

/// The longest wait that stays inside a limit.
pub fn safe_wait(limit_seconds: u32) -> u32 {
    limit_seconds * 9 / 10
}

/// How many distinct `User-Agent`s are remembered (a bound on memory; the
/// oldest is dropped first).
const REMEMBERED: usize = 64;

/// What `initialize` taught us about stateless callers.
#[derive(Default)]
pub struct Seen {
    by_agent: Mutex<HashMap<String, (u32, u64)>>,
    counter: std::sync::atomic::AtomicU64,
}

fn user_agent(ctx: &RequestContext<RoleServer>) -> Option<String> {
    ctx.extensions
        .get::<http::request::Parts>()?
        .headers
        .get(http::header::USER_AGENT)?
        .to_str()
        .ok()
        .map(str::to_owned)
}

impl Seen {
    /// A client opened (`initialize`, or 2026-07-28's `server/discover`):
    /// say which one, and note it under its `User-Agent` for stateless calls.
    pub fn started(&self, ctx: &RequestContext<RoleServer>, client: &Implementation) {
        let limit = limit_of(&client.name);
        // Debug-quoted: the names come from the client, and must not forge log lines.
        tracing::info!(
            client = ?client.name,
            version = ?client.version,
            waits_within = limit.map_or("the wait setting", |l| l.client),
            "an MCP client opened"
        );
        let (Some(agent), Some(limit)) = (user_agent(ctx), limit) else {
            return;
        };
        let tick = self.counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut map = self.by_agent.lock().unwrap_or_else(|p| p.into_inner());
        let entry = map.entry(agent).or_insert((limit.seconds, tick));
        *entry = (entry.0.min(limit.seconds), tick);
        if map.len() > REMEMBERED {
            if let Some(oldest) = map.iter().min_by_key(|(_, (_, t))| *t).map(|(k, _)| k.clone()) {
                map.remove(&oldest);
            }
        }
    }

    /// The longest wait this call's client allows, if we know its client:
    /// named in the call's own `_meta` (2026-07-28), by its session's
    /// `initialize`, or by its `User-Agent`.
    pub fn max_wait(&self, ctx: &RequestContext<RoleServer>) -> Option<u32> {
        let named = ctx
            .meta
            .client_info()
            .and_then(|info| limit_of(&info.name))
            .or_else(|| ctx.peer.peer_info().and_then(|info| limit_of(&info.client_info.name)));
        let agent = user_agent(ctx);
        let limit = named.or_else(|| agent.as_deref().and_then(limit_of));
        if let Some(limit) = limit {
            tracing::debug!(
                client = limit.client,
                limit = limit.seconds,
                source = limit.source,
                "waits end inside this client's limit"
            );
            return Some(safe_wait(limit.seconds));
        }
        let map = self.by_agent.lock().unwrap_or_else(|p| p.into_inner());
        map.get(&agent?).map(|(seconds, _)| safe_wait(*seconds))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_known_client_name_finds_its_limit() {
        for (name, client) in [
            ("claude-code", "Claude Code"),
            ("claude-ai", "Claude Desktop"),
            ("cursor-vscode", "Cursor"),
            ("Visual Studio Code", "VS Code"),
            ("Visual Studio Code - Insiders", "VS Code"),
            ("codex-mcp-client", "Codex"),
            ("gemini-cli-mcp-client", "Gemini CLI"),
            ("Zed", "Zed"),
            ("Cline", "Cline"),
            ("opencode", "opencode"),
        ] {
            assert_eq!(limit_of(name).map(|l| l.client), Some(client), "{name}");
        }
        assert!(limit_of("mcp-inspector").is_none());
        assert!(LIMITS
            .iter()
            .all(|l| safe_wait(l.seconds) < l.seconds && !l.source.is_empty()));
    }
}
