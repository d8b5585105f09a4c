//! Who an agent's MCP client is, and how long each client lets one tool
//! call run before it gives up on it (or, for Claude Code, stops listening
//! for its answer). A wait cut off by the client reaches the agent as an
//! error (and some models then end their session), or — worse — as a result
//! nobody reads; a wait the server ends a little early is the normal empty
//! or default result, and the agent simply calls again. So a call's wait is
//! the setting, or nine tenths of its client's limit when that is shorter.
//! Plain data: `mcp::client_limits` learns which client a call is from, the
//! status report names it with the wait it gets (`docs/CLIENTS.md`).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::programs::{McpClient, CALLERS_ONLY};

/// One client's limit on a tool call.
pub struct Limit {
    /// A lowercase piece of its `clientInfo.name` (or `User-Agent`).
    pub matches: &'static str,
    pub client: &'static str,
    /// How long one call may run before the client gives up on it (or, for
    /// Claude Code, stops listening for its answer).
    pub seconds: u32,
    /// The client release the figure was read from or measured with (or,
    /// where the source names none, when its documentation was read).
    pub version: &'static str,
    /// Where the figure comes from.
    pub source: &'static str,
}

/// Every client's limits: those of the programs local-mcp configures
/// (`programs.rs`), then those of clients it only sees calling.
///
/// Measured here (2026-11-25) with the real clients against a logging
/// server that answered after a long wait, for the four that run on Linux
/// from npm: Claude Code, Codex, Gemini CLI, Copilot CLI. The others are
/// from their documentation or issue trackers, as each `source` says.
pub fn limits() -> impl Iterator<Item = &'static Limit> {
    McpClient::ALL
        .into_iter()
        .flat_map(|c| c.program().limits)
        .chain(CALLERS_ONLY)
}

/// The client's limit, from its `clientInfo.name` or `User-Agent`: where
/// several names match, the shortest limit — a wait that ends early is only
/// an empty answer the agent calls again after, one cut off by its client
/// is lost (and the table's order decides nothing).
pub fn limit_of(name: &str) -> Option<&'static Limit> {
    let name = name.to_ascii_lowercase();
    limits().filter(|l| name.contains(l.matches)).min_by_key(|l| l.seconds)
}

/// The longest wait that stays inside a limit.
pub fn safe_wait(limit_seconds: u32) -> u32 {
    limit_seconds * 9 / 10
}

/// The header the stdio bridge names its client session with: the client's
/// own session id where it gives one to the stdio servers it starts (Claude
/// Code's `CLAUDE_CODE_SESSION_ID`, Copilot CLI's `COPILOT_AGENT_SESSION_ID`),
/// else the bridge's process. Over HTTP those clients send none.
pub const CLIENT_SESSION_HEADER: &str = "x-local-mcp-session";

/// The environment variables in which clients give the stdio servers they
/// start their own session id (what they never send over HTTP).
pub const CLIENT_SESSION_VARIABLES: &[&str] = &["CLAUDE_CODE_SESSION_ID", "COPILOT_AGENT_SESSION_ID"];

/// What a `get_user_request` call's client says about itself, beyond the
/// `agent_id` the model passes (`docs/ARCHITECTURE.md`, "Agent identity").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Caller {
    /// Its `clientInfo` (from the call's `_meta`, its session's `initialize`,
    /// or the `initialize` that came with its `User-Agent`).
    pub client: Option<ClientName>,
    /// A short hash of the id of the client session the call belongs to: its
    /// MCP session, Codex's `_meta.sessionId`, VS Code's
    /// `_meta["vscode.conversationId"]`, the stdio bridge's session.
    pub session: Option<String>,
    /// It speaks a protocol without resumable streams (2026-07-28): an
    /// answer cut off on its way is lost to it, so its next call gets that
    /// instruction again rather than a second one (`docs/ARCHITECTURE.md`,
    /// "Delivery rules").
    pub no_resume: bool,
    /// Nothing may be sent to it before its answer: a 2026-07-28 call that
    /// asked for neither progress nor log messages (SEP-2575). Its HTTP
    /// response cannot even begin (the server's first message opens the
    /// stream), so no keep-alive reaches it, and its HTTP client's read
    /// timeout is its limit.
    pub silent: bool,
    /// It takes a task for this call (it declared the MCP tasks extension):
    /// answered at once, with a task it polls, instead of a waiting call.
    pub tasks: bool,
}

/// The read timeout of the HTTP clients MCP SDKs use, for a call that can
/// be sent nothing before its answer: the Python SDK 2.3.0 waits 300 s for
/// a response to begin (`httpx` read timeout, `mcp/client/streamable_http.py`)
/// — measured by `tests/python/test_python_sdk.py`'s long wait.
pub const SILENT_READ_LIMIT: u32 = 300;

impl Caller {
    /// The longest this call may wait: inside its client's limit, if known,
    /// and inside an HTTP read timeout when nothing can be sent before the answer.
    pub fn max_wait(&self) -> Option<u32> {
        let client = self
            .client
            .as_ref()
            .and_then(|c| limit_of(&c.name))
            .map(|l| safe_wait(l.seconds));
        let silent = self.silent.then(|| safe_wait(SILENT_READ_LIMIT));
        match (client, silent) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// A client's name and version as it gives them (`clientInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientName {
    pub name: String,
    pub version: Option<String>,
}

/// A client session as the status report keeps it: the id the client gave
/// (a conversation's, maybe) hashed and shortened — the same for the server,
/// which reads it from a call, and for a Stop hook, which reads it from its input.
pub fn session_key(raw: &str) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(raw.as_bytes());
    hex::encode(&digest[..6])
}

/// An agent's MCP client as the status report shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AgentClient {
    /// The client's name: the product's (Claude Code) where it is known, else as the client gives it.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The longest one of its calls waits now (the setting, or inside its client's limit).
    pub wait_seconds: u32,
}

impl AgentClient {
    /// How the report shows `client`, whose calls wait at most `setting` seconds.
    pub fn of(client: &ClientName, setting: u32) -> AgentClient {
        let limit = limit_of(&client.name);
        AgentClient {
            name: limit.map_or_else(|| client.name.clone(), |l| l.client.to_owned()),
            version: client.version.clone(),
            wait_seconds: limit.map_or(setting, |l| setting.min(safe_wait(l.seconds))),
        }
    }
}

/// A name for an agent made from its client's: lowercase letters, digits
/// and dashes (`claude-code`, `visual-studio-code`).
pub fn client_slug(name: &str) -> String {
    let mut slug = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else if !slug.ends_with('-') && !slug.is_empty() {
            slug.push('-');
        }
    }
    let slug: String = slug.trim_end_matches('-').chars().take(40).collect();
    if slug.is_empty() {
        "agent".to_owned()
    } else {
        slug
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
        // Two clients' names in one: the stricter limit.
        assert_eq!(
            limit_of("claude-code in Visual Studio Code").map(|l| l.seconds),
            Some(120)
        );
        assert_eq!(limit_of("copilot-cli").map(|l| l.client), Some("GitHub Copilot CLI"));
    }

    #[test]
    fn every_limit_names_its_source_and_the_version_it_was_read_from() {
        for l in limits() {
            assert!(safe_wait(l.seconds) < l.seconds, "{}", l.client);
            assert!(l.source.len() > 20, "{}: a source", l.client);
            assert!(
                l.version.chars().any(|c| c.is_ascii_digit()),
                "{}: the release (2.1.330) or the documentation's date, not {:?}",
                l.client,
                l.version
            );
        }
    }

    /// A program's limits are named as the program is (the status shows
    /// one, the page the other).
    #[test]
    fn each_programs_limits_carry_its_name() {
        for c in McpClient::ALL {
            for l in c.program().limits {
                assert_eq!(l.client, c.name(), "{}", l.matches);
            }
        }
    }

    /// Claude Code moves a call still running at 120 s to the background,
    /// and may ignore what it returns after: a wait must end before.
    #[test]
    fn clients_name_agents_and_say_their_wait() {
        assert_eq!(
            client_slug("Visual Studio Code - Insiders"),
            "visual-studio-code-insiders"
        );
        assert_eq!(client_slug("claude-code"), "claude-code");
        assert_eq!(client_slug("∂∂"), "agent");
        let shown = AgentClient::of(
            &ClientName {
                name: "claude-code".into(),
                version: Some("2.1.330".into()),
            },
            3600,
        );
        assert_eq!((shown.name.as_str(), shown.wait_seconds), ("Claude Code", 108));
        let unknown = ClientName {
            name: "my-client".into(),
            version: None,
        };
        assert_eq!(AgentClient::of(&unknown, 60).wait_seconds, 60);
        assert_eq!(AgentClient::of(&unknown, 60).name, "my-client");
    }

    #[test]
    fn a_call_that_can_be_sent_nothing_waits_inside_an_http_read_timeout() {
        let silent = Caller {
            silent: true,
            ..Caller::default()
        };
        assert_eq!(
            silent.max_wait(),
            Some(270),
            "nine tenths of the SDKs' 300 s read timeout"
        );
        let claude = Caller {
            client: Some(ClientName {
                name: "claude-code".into(),
                version: None,
            }),
            silent: true,
            ..Caller::default()
        };
        assert_eq!(claude.max_wait(), Some(108), "a client's own shorter limit still wins");
        assert_eq!(
            Caller::default().max_wait(),
            None,
            "a stream that can open keeps the setting"
        );
    }

    #[test]
    fn claude_code_waits_end_before_its_background_move() {
        let limit = limit_of("claude-code").unwrap();
        assert!(safe_wait(limit.seconds) < 120, "{}", safe_wait(limit.seconds));
        assert_eq!(safe_wait(limit.seconds), 108);
    }
}
