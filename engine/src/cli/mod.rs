//! The command line shared by `local-mcp-server` and the desktop `local-mcp`:
//! `status`, `add`, `list`, `config <client>`, `stdio` (the bridge) and
//! `completions`. Every command talks to the *running* instance, found
//! through the connection-info file or `--url`; none opens the database.
//!
//! Results go to stdout, messages to stderr; exit 1 on failure, 3 when
//! local-mcp is not running.

mod bridge;
mod commands;
pub mod target;

use std::path::PathBuf;
use std::process::ExitCode;

use crate::snippets::Client;
use crate::Error;

pub use bridge::run as run_bridge;
pub use target::{Source, Target};

/// Where to reach the running instance (defaults to its connection-info file).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Connect {
    /// URL of a running local-mcp (e.g. http://127.0.0.1:8000/mcp) instead of its connection-info file
    #[arg(long, env = "LOCAL_MCP_URL")]
    pub url: Option<String>,
    /// Bearer token to send with --url
    #[arg(long, env = "LOCAL_MCP_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
}

/// The client subcommands.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Command {
    /// Show whether local-mcp is running, where, its queue and its agents
    Status {
        #[command(flatten)]
        connect: Connect,
        /// Print the raw status JSON
        #[arg(long)]
        json: bool,
    },
    /// Queue an instruction (use "-" to read it from stdin)
    Add {
        #[command(flatten)]
        connect: Connect,
        /// The instruction; several words are joined with spaces
        #[arg(required = true, num_args = 1.., value_name = "TEXT|-")]
        text: Vec<String>,
    },
    /// List pending instructions, next first
    List {
        #[command(flatten)]
        connect: Connect,
        /// Also list the most recently delivered ones
        #[arg(long)]
        all: bool,
        /// Print the raw JSON
        #[arg(long)]
        json: bool,
    },
    /// Print the MCP configuration a client expects, ready to paste
    Config {
        #[command(flatten)]
        connect: Connect,
        #[arg(value_enum)]
        client: Client,
    },
    /// Serve MCP over stdin/stdout, forwarding to the running local-mcp
    /// (for clients that only launch stdio servers, e.g. Claude Desktop)
    Stdio {
        #[command(flatten)]
        connect: Connect,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell)
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// A command-line failure: the message for stderr and the exit code.
struct Failure(String, u8);

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        let code = if matches!(e, Error::NotFound(_)) { 3 } else { 1 };
        Failure(e.to_string(), code)
    }
}

/// Logging for the client commands: warnings only unless asked, to stderr
/// (stdout is their output, or for `stdio` the protocol).
pub fn init_logging(level: Option<&str>) {
    let filter = crate::config::log_filter(level.unwrap_or("warn"));
    let filter = tracing_subscriber::EnvFilter::try_new(&filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(crate::config::log_filter("warn")));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(std::io::stderr)
        .init();
}

/// Run `command`. `cli` is the whole command line (for completions);
/// `connection_file` is where a running instance publishes itself.
pub fn run(command: Command, cli: &mut clap::Command, connection_file: Option<PathBuf>) -> ExitCode {
    let name = cli.get_name().to_owned();
    if let Command::Completions { shell } = command {
        clap_complete::generate(shell, cli, name, &mut std::io::stdout());
        return ExitCode::SUCCESS;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{name}: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        let source = |c: Connect| Source::new(c.url, c.token, connection_file.clone());
        match command {
            Command::Status { connect, json } => commands::status(&source(connect)?.resolve()?, json).await,
            Command::Add { connect, text } => commands::add(&source(connect)?.resolve()?, &text).await,
            Command::List { connect, all, json } => commands::list(&source(connect)?.resolve()?, all, json).await,
            Command::Config { connect, client } => commands::config(&source(connect)?, client),
            Command::Stdio { connect } => bridge::run(source(connect)?).await.map_err(Failure::from),
            Command::Completions { .. } => unreachable!("handled above"),
        }
    });
    // The bridge may leave a read of stdin blocked in a worker thread; don't wait for it.
    runtime.shutdown_background();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(message, code)) => {
            eprintln!("{name}: {message}");
            ExitCode::from(code)
        }
    }
}
