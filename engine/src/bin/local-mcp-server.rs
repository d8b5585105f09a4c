//! `local-mcp-server`: the headless server (no GUI libraries needed), for
//! machines without a display — servers, WSL, containers, CI. With a
//! subcommand it is the client of a running instance instead (`status`,
//! `add`, `list`, `config`, `stdio`, `completions`; see `engine::cli`).

use clap::{CommandFactory, FromArgMatches, Parser};
use tokio_util::sync::CancellationToken;

use engine::cli::{prelude, Prelude};
use engine::config::ServeArgs;

#[derive(Parser)]
#[command(
    name = "local-mcp-server",
    version,
    about = "Serve the local-mcp instruction queue to MCP agents (headless)",
    after_help = "Without a command, serves. With one, talks to the running local-mcp."
)]
struct Cli {
    #[command(flatten)]
    serve: ServeArgs,
    /// Where the commands find the running instance (global: before or after the command).
    #[command(flatten)]
    address: engine::cli::ServerAddress,
    #[command(subcommand)]
    command: Option<engine::cli::Command>,
}

fn main() -> std::process::ExitCode {
    engine::keep_arena_tops();
    let mut command = engine::cli::help_per_command(Cli::command());
    let mut cli = match Cli::from_arg_matches(&command.clone().get_matches()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let config = match prelude(
        "local-mcp-server",
        &cli.serve,
        &cli.address,
        cli.command.take(),
        &mut command,
    ) {
        Prelude::Serve(config) => config,
        Prelude::Exit(code) => return code,
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("local-mcp-server: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        let shutdown = CancellationToken::new();
        let signalled = engine::process::asked_to_end();
        tracing::info!(
            host = %config.host,
            port = config.port,
            db = %config.db_path.display(),
            stateless = config.mcp_stateless,
            wait_seconds = config.settings.default_wait_seconds,
            "starting local-mcp-server {}", engine::VERSION
        );
        let engine = match engine::start(config, shutdown.clone()).await {
            Ok(e) => e,
            Err(e) => {
                // Said once, in full: a start-up failure is the person's to fix, not a log line.
                if !matches!(e, engine::Error::Startup(_) | engine::Error::InUse(_)) {
                    e.log();
                }
                eprintln!("local-mcp-server: {e}");
                // A distinct code, so a script can tell "already running" from a failure.
                if matches!(e, engine::Error::InUse(_)) {
                    return std::process::ExitCode::from(engine::lock::EXIT_IN_USE);
                }
                return std::process::ExitCode::FAILURE;
            }
        };
        // One line on stdout-free stderr that scripts and tests can wait for.
        eprintln!("local-mcp-server ready: {} (MCP: {})", engine.url, engine.mcp_url());
        // Listening beyond this machine is said, whatever asked for it.
        if !engine.addr.ip().is_loopback() {
            eprintln!(
                "local-mcp-server: listening on {}: other machines can reach it (each request needs the token)",
                engine.addr
            );
        }
        signalled.await;
        tracing::info!("shutting down");
        shutdown.cancel();
        engine.stopped().await;
        tracing::info!("stopped");
        std::process::ExitCode::SUCCESS
    })
}
