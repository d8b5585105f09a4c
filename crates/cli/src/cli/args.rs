//! The command line's words: the client subcommands and their flags (clap
//! derive), and where to reach the running instance. What each command does
//! is dispatched in `mod.rs` ([`super::run`]).

use crate::model::McpClient;
use std::path::PathBuf;

use super::service;

/// Where to reach the running instance (defaults to its connection-info file).
#[derive(Debug, Clone, Default, clap::Args)]
// A fixed group id, so no command or argument of the same name can clash with it.
#[group(id = "server_address")]
pub struct ServerAddress {
    /// URL of a running local-mcp (e.g. http://127.0.0.1:8000/mcp) instead of its connection-info file
    #[arg(long, env = "LOCAL_MCP_URL", global = true, help_heading = crate::config::WHICH_SERVER)]
    pub url: Option<String>,
    /// Bearer token to send with --url
    #[arg(long, env = "LOCAL_MCP_TOKEN", hide_env_values = true, global = true, help_heading = crate::config::WHICH_SERVER)]
    pub token: Option<String>,
}

/// The client subcommands.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Command {
    /// Show whether local-mcp is running, where, its queues and its agents
    Status {
        /// Only this queue
        #[arg(long, short)]
        queue: Option<String>,
        /// Print the raw status JSON
        #[arg(long)]
        json: bool,
    },
    /// Queue an instruction (use "-" to read it from stdin)
    Add {
        /// The queue to add to (default: default; created if new)
        #[arg(long, short)]
        queue: Option<String>,
        /// Only this agent may take it (default: anyone in the queue)
        #[arg(long, value_name = "AGENT")]
        to: Option<String>,
        /// Attach a file (an image or a UTF-8 text file); repeat for more, at most 8
        #[arg(long, value_name = "FILE")]
        attach: Vec<std::path::PathBuf>,
        /// Start from this saved template (TEXT, if given, follows it after a blank line)
        #[arg(long, short, value_name = "NAME")]
        template: Option<String>,
        /// The instruction; several words are joined with spaces (optional with --attach or --template)
        #[arg(required_unless_present_any = ["attach", "template"], num_args = 1.., value_name = "TEXT|-")]
        text: Vec<String>,
    },
    /// Saved instructions: list them, or save or delete one (`add --template NAME` uses one)
    Templates {
        /// Save TEXT under NAME (replacing one of that name)
        #[arg(long, value_names = ["NAME", "TEXT"], num_args = 2, conflicts_with = "delete")]
        save: Option<Vec<String>>,
        /// With --save: a file that goes with the template (an image or UTF-8 text); repeat for more
        #[arg(long, value_name = "FILE", requires = "save")]
        attach: Vec<std::path::PathBuf>,
        /// Delete the template NAME
        #[arg(long, value_name = "NAME")]
        delete: Option<String>,
        /// Print as JSON
        #[arg(long)]
        json: bool,
    },
    /// List pending instructions, next first
    List {
        /// Only this queue
        #[arg(long, short)]
        queue: Option<String>,
        /// Also list the most recently delivered ones
        #[arg(long)]
        all: bool,
        /// Print the raw JSON
        #[arg(long)]
        json: bool,
    },
    /// Search the delivered instructions (and their agents' reports) as the page's ledger does:
    /// every word must appear, as a word or the start of one
    Search {
        /// Only this queue
        #[arg(long, short)]
        queue: Option<String>,
        /// Print the raw JSON
        #[arg(long)]
        json: bool,
        /// The words to look for
        #[arg(required = true, num_args = 1..)]
        words: Vec<String>,
    },
    /// Print the MCP configuration a client expects, ready to paste
    Config {
        /// Point the client at this queue (its URL is /mcp/q/<QUEUE>)
        #[arg(long, short)]
        queue: Option<String>,
        /// The client (without one: the list of clients)
        #[arg(value_enum)]
        client: Option<McpClient>,
    },
    /// Put local-mcp into a client's own configuration, keeping everything else in the file;
    /// without a client, show every client's state
    Connect {
        #[arg(value_enum)]
        client: Option<McpClient>,
        /// Use the client's file in this project folder (.vscode/mcp.json, .mcp.json, …)
        #[arg(long, value_name = "DIR")]
        project: Option<PathBuf>,
        /// Point the client at this queue (its URL is /mcp/q/<QUEUE>)
        #[arg(long, short)]
        queue: Option<String>,
        /// Also install the Stop hook that keeps the agent calling: Claude Code's (`hook claude-stop`) at
        /// the same scope, or VS Code's (`hook vscode-stop`, with --project: .github/hooks/local-mcp.json)
        #[arg(long)]
        hooks: bool,
        /// Show what would be written; change nothing
        #[arg(long)]
        dry_run: bool,
        /// Write even when another account can write into the file's folder (a shared project
        /// folder; refused otherwise, as that account could redirect the write)
        #[arg(long)]
        allow_shared_folder: bool,
        /// Write the client's file even where the client does not seem to be installed
        #[arg(long)]
        force: bool,
        /// Show every client's state (the default without a client)
        #[arg(long, conflicts_with = "client")]
        status: bool,
        /// List the backups connect made of clients' files
        #[arg(long, conflicts_with_all = ["client", "status", "update"])]
        backups: bool,
        /// Rewrite every entry connect wrote that a new port or token made outdated
        #[arg(long, conflicts_with_all = ["client", "status"])]
        update: bool,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Take local-mcp out of a client's configuration (only an entry connect wrote and nobody edited since)
    Disconnect {
        #[arg(value_enum)]
        client: McpClient,
        /// The project folder it was connected in
        #[arg(long, value_name = "DIR")]
        project: Option<PathBuf>,
        /// Show what would change; change nothing
        #[arg(long)]
        dry_run: bool,
        /// Write even when another account can write into the file's folder (a shared project
        /// folder; refused otherwise, as that account could redirect the write)
        #[arg(long)]
        allow_shared_folder: bool,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Serve MCP over stdin/stdout, forwarding to the running local-mcp
    /// (for clients that only launch stdio servers, e.g. Claude Desktop)
    Stdio {
        /// Take instructions from this queue (default: default)
        #[arg(long, short)]
        queue: Option<String>,
    },
    /// Hold a queue (or every queue): agents keep waiting, nothing is delivered until release
    Hold {
        /// The queue; without it, every queue
        queue: Option<String>,
    },
    /// Release a held queue (or every queue); with --imported, the
    /// instructions held since an import or a restore instead
    Release {
        /// The queue; without it, every queue
        queue: Option<String>,
        /// Release the pending instructions an import or a restore brought
        /// in (held until you say so), not the queue
        #[arg(long)]
        imported: bool,
    },
    /// Show what agents reported, newest first
    Reports {
        /// Only this agent's
        #[arg(long)]
        agent: Option<String>,
        /// Only this queue's
        #[arg(long, short)]
        queue: Option<String>,
        /// How many (default 10)
        #[arg(short = 'n', default_value_t = 10)]
        count: u32,
        /// Print the raw JSON
        #[arg(long)]
        json: bool,
    },
    /// Answer an agent's latest report: queued first, for that agent (use "-" for stdin)
    Reply {
        /// The agent's id
        agent: String,
        /// Its queue (default: whichever its newest report is in)
        #[arg(long, short)]
        queue: Option<String>,
        /// The answer; several words are joined with spaces
        #[arg(required = true, num_args = 1.., value_name = "TEXT|-")]
        text: Vec<String>,
    },
    /// End an agent's loop (`stop AGENT`: its waiting or next call tells it to stop calling);
    /// with no agent, stop the background server of this database (`--app`: quit the tray app)
    Stop {
        /// The agent's id (without it: the background server)
        agent: Option<String>,
        /// The agent's queue (default: default)
        #[arg(long, short, requires = "agent")]
        queue: Option<String>,
        /// Quit the tray app (local-mcp) when it is what serves this database
        #[arg(long, conflicts_with = "agent")]
        app: bool,
    },
    /// Forget agents the page and `status` list: one, or with --gone every one not heard from
    /// for longer than the agent_stale_after_seconds setting (what they did stays in the history)
    Forget {
        /// The agent's id
        #[arg(required_unless_present = "gone", conflicts_with = "gone")]
        agent: Option<String>,
        /// Its queue (default: every queue)
        #[arg(long, short)]
        queue: Option<String>,
        /// Every agent that is gone
        #[arg(long)]
        gone: bool,
    },
    /// Print the API token this server requires (nothing when it requires none)
    Token {
        /// Print `{"Authorization": "Bearer …"}` (or `{}`): what an MCP client's header
        /// helper command gives (Claude Code's headersHelper, Codex's http_headers_helper)
        #[arg(long)]
        header_json: bool,
    },
    /// Serve in the background; returns once the server answers and prints its URL
    /// (exit 4 when an engine already serves this database)
    Start,
    /// Stop the background server (if it runs) and start it again
    Restart,
    /// Save a consistent copy of the running server's database and attachments (a tar archive)
    Backup {
        /// Where to write it
        file: PathBuf,
    },
    /// Save the history as a file: JSON (everything), CSV (a row per instruction), Markdown,
    /// or a bundle (the JSON and the attachment files, for `import`; needs --output)
    Export {
        #[arg(long, short, value_enum, default_value = "json")]
        format: crate::export::Format,
        /// Only this queue
        #[arg(long, short)]
        queue: Option<String>,
        /// Only what was delivered at or after this date or time (pending ones always)
        #[arg(long)]
        since: Option<String>,
        /// Write it here instead of to stdout
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Bring an export (JSON or bundle) into the running server: pending instructions join the
    /// back of their queues, history stays history; a file with anything wrong is refused whole
    Import {
        /// The export file (`export` or `export --format bundle` wrote it)
        file: PathBuf,
        /// Check it and say what would change, changing nothing
        #[arg(long)]
        dry_run: bool,
        /// Print the summary as JSON
        #[arg(long)]
        json: bool,
    },
    /// Put a backup in place of this database (with no server running); what it replaces is kept aside
    Restore {
        /// The backup archive
        file: PathBuf,
    },
    /// Start the headless server at login: a systemd user unit (Linux) or a launchd agent (macOS)
    Service {
        #[arg(value_enum)]
        action: service::ServiceAction,
        /// Only write (or remove) the file; do not enable, start or stop anything
        #[arg(long)]
        no_start: bool,
    },
    /// Run as a client's hook (reads the hook's JSON on stdin): `claude-stop` and `vscode-stop`
    /// keep a Claude Code or VS Code agent calling get_user_request instead of ending its turn
    Hook {
        #[arg(value_enum)]
        hook: HookKind,
        /// The agent's queue (default: default): no nudge while it is held
        #[arg(long, short)]
        queue: Option<String>,
        /// The agent's id: no nudge once the person stopped it
        #[arg(long)]
        agent: Option<String>,
    },
    /// Print the end of the newest log file; -f keeps printing what is written
    Logs {
        /// How many lines
        #[arg(short = 'n', default_value_t = 50)]
        lines: usize,
        /// Keep printing new lines as they are written (Ctrl+C ends)
        #[arg(short, long)]
        follow: bool,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell)
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// The hooks `hook` can be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HookKind {
    /// Claude Code's `Stop` hook
    ClaudeStop,
    /// VS Code's agent `Stop` hook (either answers in the shape its input has)
    VscodeStop,
}
