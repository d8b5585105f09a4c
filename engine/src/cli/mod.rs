//! The command line shared by `local-mcp-server` and the desktop `local-mcp`:
//! `status`, `add`, `list`, `search`, `hold`, `release`, `stop`, `reports`, `reply`,
//! `config <client>`, `connect` / `disconnect`, `stdio` (the bridge), `hook claude-stop`, `logs` and
//! `completions`. Every command talks to the *running* instance, found
//! through the connection-info file or `--url` (`logs` reads the files it
//! names, `connect` edits clients' own files); none opens the database.
//!
//! Results go to stdout, messages to stderr; exit 1 on failure, 3 when
//! local-mcp is not running.

mod bridge;
mod commands;
mod connect;
mod daemon;
mod hook;
mod logs;
mod transfer;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::config::{self, Config, ServeArgs};
use crate::snippets::Client;
use crate::Error;

pub use bridge::run as run_bridge;

use crate::client::Source;

/// Where to reach the running instance (defaults to its connection-info file).
#[derive(Debug, Clone, Default, clap::Args)]
// Its own group id: the default (the struct's name) would clash with the `connect` command.
#[group(id = "server_address")]
pub struct Connect {
    /// URL of a running local-mcp (e.g. http://127.0.0.1:8000/mcp) instead of its connection-info file
    #[arg(long, env = "LOCAL_MCP_URL", global = true)]
    pub url: Option<String>,
    /// Bearer token to send with --url
    #[arg(long, env = "LOCAL_MCP_TOKEN", hide_env_values = true, global = true)]
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
        #[arg(value_enum)]
        client: Client,
    },
    /// Put local-mcp into a client's own configuration, keeping everything else in the file;
    /// without a client, show every client's state
    Connect {
        #[arg(value_enum)]
        client: Option<Client>,
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
        client: Client,
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
    /// Release a held queue (or every queue)
    Release {
        /// The queue; without it, every queue
        queue: Option<String>,
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
        /// Its queue (default: default)
        #[arg(long, short)]
        queue: Option<String>,
        /// The answer; several words are joined with spaces
        #[arg(required = true, num_args = 1.., value_name = "TEXT|-")]
        text: Vec<String>,
    },
    /// Stop the background server of this database; with an agent, end that agent's loop instead
    /// (its waiting or next call tells it to stop calling)
    Stop {
        /// The agent's id (without it: stop the server)
        agent: Option<String>,
        /// The agent's queue (default: default)
        #[arg(long, short, requires = "agent")]
        queue: Option<String>,
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
        action: daemon::ServiceAction,
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

/// A command-line failure: the message for stderr and the exit code.
struct Failure(String, u8);

impl From<crate::client::Failure> for Failure {
    fn from(e: crate::client::Failure) -> Self {
        let code = if matches!(e, crate::client::Failure::NotRunning(_)) {
            3
        } else {
            1
        };
        Failure(e.to_string(), code)
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        let code = if matches!(e, Error::NotFound(_)) { 3 } else { 1 };
        Failure(e.to_string(), code)
    }
}

/// What a binary's command line asks for, once [`prelude`] has read it.
pub enum Prelude {
    /// Serve with this configuration (logging is set up).
    Serve(Config),
    /// A client command ran, or the configuration was refused: exit with this.
    Exit(ExitCode),
}

/// `local-mcp-server list | head -1`: when whoever reads the output stops,
/// end as other command-line tools do (SIGPIPE) instead of panicking in
/// `println!` — Rust starts every program with SIGPIPE ignored. Only for the
/// commands: a serving engine keeps it ignored (its sockets report EPIPE as an
/// error), as does the stdio bridge, which must cancel a waiting call first.
fn end_quietly_when_the_reader_goes() {
    #[cfg(unix)]
    // SAFETY: restores a signal's default disposition before any thread that
    // could be writing has started; no handler runs Rust code.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// A server holds a descriptor per connection, waiting call and file: lift
/// the soft limit (often 1024) to the hard one the system allows, as servers
/// do, so many agents and pages (or a flood of connections) do not run it out.
fn raise_descriptor_limit() {
    #[cfg(unix)]
    // SAFETY: getrlimit/setrlimit read and write a plain struct we own.
    unsafe {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max {
            // macOS refuses more than OPEN_MAX for the soft limit.
            let wanted = if cfg!(target_os = "macos") {
                limit.rlim_max.min(10_240)
            } else {
                limit.rlim_max
            };
            limit.rlim_cur = wanted;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// The start both binaries share: with a client command, run it and exit
/// (no engine, no display needed); otherwise resolve the configuration
/// (exit 2 with the reason when it is wrong) and start logging.
/// `program` names the binary in messages; `cli` is its whole command line.
pub fn prelude(
    program: &str,
    serve: &ServeArgs,
    connect: &Connect,
    command: Option<Command>,
    cli: &mut clap::Command,
) -> Prelude {
    // Whatever creates a file in this process without `private_fs` (the log
    // appender, SQLite's `-wal`, a library) still makes it owner-only.
    crate::private_fs::restrict_umask();
    if let Some(command) = command {
        // Warnings only unless asked: stdout is the commands' output (or, for
        // `stdio`, the protocol), so logs go to stderr and stay quiet.
        init_logging(program, serve.log_level.as_deref().unwrap_or("warn"), false, None);
        if !matches!(command, Command::Stdio { .. }) {
            end_quietly_when_the_reader_goes();
        }
        return Prelude::Exit(run(command, cli, serve, connect));
    }
    match serve.resolve() {
        Ok((mut config, log_level)) => {
            raise_descriptor_limit();
            if !init_logging(
                program,
                &log_level,
                std::io::stderr().is_terminal(),
                config.log_dir.as_deref(),
            ) {
                config.log_dir = None;
            }
            Prelude::Serve(config)
        }
        Err(e) => {
            eprintln!("{program}: {e}");
            Prelude::Exit(ExitCode::from(2))
        }
    }
}

/// Logs to stderr, filtered by a `LOG_LEVEL` (an invalid one says so and
/// falls back to info) — and, for a serving instance, to daily files in
/// `log_dir` (`<program>.<date>.log`, the newest 7 kept), so a headless
/// server's history survives its terminal. Returns whether the files are
/// written (a folder that cannot be made is said on stderr, not fatal).
fn init_logging(program: &str, level: &str, ansi: bool, log_dir: Option<&Path>) -> bool {
    let filter = tracing_subscriber::EnvFilter::try_new(config::log_filter(level)).unwrap_or_else(|_| {
        eprintln!("{program}: LOG_LEVEL {level:?} is not a valid filter; using info");
        tracing_subscriber::EnvFilter::new(config::log_filter("info"))
    });
    let files = log_dir.and_then(|dir| {
        // The logs name queues, agents and what they were told: the folder
        // is owner-only, made before the appender looks into it (on a first
        // run it would report the missing folder as an error).
        if let Err(e) = crate::private_fs::private_dir(dir).and_then(|()| crate::private_fs::make_files_private(dir)) {
            eprintln!("{program}: cannot write log files in {}: {e}", dir.display());
            return None;
        }
        tracing_appender::rolling::RollingFileAppender::builder()
            .rotation(tracing_appender::rolling::Rotation::DAILY)
            .filename_prefix(program)
            .filename_suffix("log")
            .max_log_files(LOG_FILES_KEPT)
            .build(dir)
            .map_err(|e| eprintln!("{program}: cannot write log files in {}: {e}", dir.display()))
            .ok()
    });
    let written = files.is_some();
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    tracing_subscriber::registry()
        .with(filter)
        .with(
            tracing_subscriber::fmt::layer()
                .with_ansi(ansi)
                .with_writer(std::io::stderr),
        )
        // The same lines in the files, never with terminal colours.
        .with(files.map(|f| tracing_subscriber::fmt::layer().with_ansi(false).with_writer(f)))
        .init();
    written
}

/// Daily log files kept (a week).
const LOG_FILES_KEPT: usize = 7;

/// Run `command`. `cli` is the whole command line (for completions);
/// `connection_file` is where a running instance publishes itself;
/// `log_dir` where this configuration's instance writes its logs.
pub fn run(command: Command, cli: &mut clap::Command, serve: &ServeArgs, connect: &Connect) -> ExitCode {
    let name = cli.get_name().to_owned();
    let (connection_file, log_dir) = (serve.connection_file(), serve.log_dir());
    // The commands that run no client of the server (and the daemon ones,
    // which make their own short runtime) are done here, outside one.
    let direct = match &command {
        Command::Completions { shell } => {
            clap_complete::generate(*shell, cli, name, &mut std::io::stdout());
            return ExitCode::SUCCESS;
        }
        Command::Start => Some(daemon::start(serve)),
        Command::Restart => Some(daemon::restart(serve)),
        Command::Stop { agent: None, .. } => Some(daemon::stop(serve)),
        Command::Service { action, no_start } => Some(daemon::service(*action, *no_start)),
        Command::Restore { file } => Some(daemon::restore(serve, file)),
        _ => None,
    };
    if let Some(result) = direct {
        return match result {
            Ok(()) => ExitCode::SUCCESS,
            Err(Failure(message, code)) => {
                eprintln!("{name}: {message}");
                ExitCode::from(code)
            }
        };
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
        let source = || Source::new(connect.url.clone(), connect.token.clone(), connection_file.clone());
        let client = || commands::client(&source()?);
        match command {
            Command::Status { queue, json } => commands::status(&client()?, queue.as_deref(), json).await,
            Command::Add {
                queue,
                to,
                attach,
                template,
                text,
            } => {
                let client = client()?;
                let (text, fetched) = match template {
                    Some(name) => commands::from_template(&client, &name, &text).await?,
                    None => (text, Vec::new()),
                };
                let mut files = attach
                    .iter()
                    .map(|path| commands::file_part(path))
                    .collect::<Result<Vec<_>, _>>()?;
                files.extend(fetched);
                commands::add(&client, queue, to, &text, files).await
            }
            Command::Templates {
                save,
                attach,
                delete,
                json,
            } => commands::templates(&client()?, save, &attach, delete, json).await,
            Command::List { queue, all, json } => commands::list(&client()?, queue.as_deref(), all, json).await,
            Command::Search { queue, json, words } => {
                commands::search(&client()?, &words, queue.as_deref(), json).await
            }
            Command::Hold { queue } => commands::hold(&client()?, queue, true).await,
            Command::Release { queue } => commands::hold(&client()?, queue, false).await,
            Command::Reports {
                agent,
                queue,
                count,
                json,
            } => commands::reports(&client()?, agent, queue, count, json).await,
            Command::Reply { agent, queue, text } => commands::reply(&client()?, agent, queue, &text).await,
            Command::Stop {
                agent: Some(agent),
                queue,
            } => commands::stop(&client()?, agent, queue).await,
            Command::Stop { agent: None, .. }
            | Command::Start
            | Command::Restart
            | Command::Service { .. }
            | Command::Restore { .. }
            | Command::Completions { .. } => unreachable!("handled above"),
            Command::Backup { file } => transfer::backup(&client()?, &file).await,
            Command::Import { file, dry_run, json } => transfer::import(&client()?, &file, dry_run, json).await,
            Command::Export {
                format,
                queue,
                since,
                output,
            } => transfer::export(&client()?, format, queue, since, output).await,
            Command::Config { queue, client } => commands::config(&source()?, queue.as_deref(), client),
            Command::Connect {
                client,
                project,
                queue,
                hooks,
                dry_run,
                allow_shared_folder,
                force,
                status: _,
                backups,
                update,
                json,
            } => connect::connect(
                &source()?,
                connect::ConnectArgs {
                    client,
                    project,
                    queue,
                    hooks,
                    dry_run,
                    allow_shared_folder,
                    force,
                    backups,
                    update,
                    json,
                },
            ),
            Command::Disconnect {
                client,
                project,
                dry_run,
                allow_shared_folder,
                json,
            } => connect::disconnect(client, project, dry_run, allow_shared_folder, json),
            Command::Stdio { queue } => bridge::run(source()?, queue).await.map_err(Failure::from),
            Command::Hook { hook, queue, agent } => {
                let shape = match hook {
                    HookKind::ClaudeStop => hook::Shape::ClaudeCode,
                    HookKind::VscodeStop => hook::Shape::VsCode,
                };
                hook::stop(shape, source().map_err(Failure::from), queue, agent).await
            }
            Command::Logs { lines, follow } => logs::logs(source().ok(), log_dir, lines, follow).await,
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
