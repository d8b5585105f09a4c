//! `local-mcp-server`: the headless server (no GUI libraries needed), for
//! machines without a display — servers, WSL, containers, CI. With a
//! subcommand it is the client of a running instance instead (`status`,
//! `add`, `list`, `config`, `stdio`, `completions`; see `engine::cli`).

use clap::{CommandFactory, Parser};
use tokio_util::sync::CancellationToken;
use tracing_subscriber::EnvFilter;

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
    #[command(subcommand)]
    command: Option<engine::cli::Command>,
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    if let Some(command) = cli.command {
        engine::cli::init_logging(cli.serve.log_level.as_deref());
        return engine::cli::run(command, &mut Cli::command(), cli.serve.connection_file());
    }
    let (config, log_level) = match cli.serve.resolve() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("local-mcp-server: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    // Logs go to stderr: stdout stays free for protocol use (the stdio bridge).
    tracing_subscriber::fmt()
        .with_env_filter(log_filter(&log_level))
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("local-mcp-server: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        let shutdown = CancellationToken::new();
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
                tracing::error!("{e}");
                eprintln!("local-mcp-server: {e}");
                return std::process::ExitCode::FAILURE;
            }
        };
        // One line on stdout-free stderr that scripts and tests can wait for.
        eprintln!("local-mcp-server ready: {} (MCP: {})", engine.url, engine.mcp_url());
        wait_for_signal().await;
        tracing::info!("shutting down");
        shutdown.cancel();
        engine.stopped().await;
        tracing::info!("stopped");
        std::process::ExitCode::SUCCESS
    })
}

fn log_filter(level: &str) -> EnvFilter {
    EnvFilter::try_new(engine::config::log_filter(level)).unwrap_or_else(|_| {
        eprintln!("local-mcp-server: LOG_LEVEL {level:?} is not a valid filter; using info");
        EnvFilter::new(engine::config::log_filter("info"))
    })
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = match signal(SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => return std::future::pending().await,
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
