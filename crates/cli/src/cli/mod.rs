//! The command line shared by `local-mcp-server` and the desktop `local-mcp`:
//! `status`, `add`, `list`, `search`, `hold`, `release`, `stop`, `reports`, `reply`,
//! `config <client>`, `connect` / `disconnect`, `stdio` (the bridge), `hook claude-stop`, `logs` and
//! `completions`. Every command talks to the *running* instance, found
//! through the connection-info file or `--url` (`logs` reads the files it
//! names, `connect` edits clients' own files); none opens the database.
//!
//! Results go to stdout, messages to stderr; exit 1 on failure, 3 when
//! local-mcp is not running.
//!
//! This file starts either binary ([`prelude`]) and hands a command line to
//! its command ([`run`]); the words and flags are `args.rs`, the process's
//! set-up `process.rs`, and each command's body the file named for it.

mod args;
mod bridge;
mod client_files;
mod commands;
mod daemon;
mod hook;
mod logs;
mod process;
mod reports;
mod service;
mod show;
mod templates;
mod transfer;

use std::io::IsTerminal;
use std::process::ExitCode;

use crate::client::Source;
use crate::config::{Config, ServeArgs};
use crate::Error;

use crate::process::{end_quietly_when_the_reader_goes, raise_descriptor_limit};
pub use args::{Command, HookKind, ServerAddress};
pub use bridge::run as run_bridge;
use process::init_logging;

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

/// `cmd` with each command's `--help` listing only the flags it takes. The
/// server's own (its address, port, the settings' first-run values…) are
/// global, so `--port 8123 start` and `start --port 8123` mean the same; but
/// they mean nothing to `config` or `add`, whose help listed seventeen of
/// them. They are hidden from every command's list, and said once, under
/// their own heading, in the help of what serves: the program itself,
/// `start`, `restart` and `service`.
pub fn help_per_command(mut cmd: clap::Command) -> clap::Command {
    let mut serving: Vec<&str> = vec![
        "host",
        "http_port",
        "log_level",
        "log_dir",
        "mcp_stateless",
        "api_token",
        "no_port_fallback",
        "token_file",
    ];
    serving.extend(crate::model::FIELDS.iter().map(|f| f.name));
    let mut listing = String::from("Server options (for serving, and for start, restart and service):\n");
    for arg in cmd.get_arguments().filter(|a| serving.contains(&a.get_id().as_str())) {
        let value = arg
            .get_value_names()
            .and_then(|v| v.first())
            .filter(|_| arg.get_action().takes_values())
            .map(|v| format!(" <{v}>"))
            .unwrap_or_default();
        let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
        let env = arg
            .get_env()
            .map(|e| format!(" [env: {}]", e.to_string_lossy()))
            .unwrap_or_default();
        listing.push_str(&format!(
            "  --{}{value}\n          {help}{env}\n",
            arg.get_long().unwrap_or_default()
        ));
    }
    for id in &serving {
        cmd = cmd.mut_arg(*id, |a| a.hide(true));
    }
    let after = cmd.get_after_help().map(|h| format!("\n{h}")).unwrap_or_default();
    cmd = cmd.after_help(format!("{listing}{after}"));
    for name in ["start", "restart", "service"] {
        if cmd.find_subcommand(name).is_some() {
            let listing = listing.clone();
            cmd = cmd.mut_subcommand(name, move |sub| sub.after_help(listing));
        }
    }
    cmd
}

/// What a binary's command line asks for, once [`prelude`] has read it.
// One per process, moved once: boxing the configuration would buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum Prelude {
    /// Serve with this configuration (logging is set up).
    Serve(Config),
    /// A client command ran, or the configuration was refused: exit with this.
    Exit(ExitCode),
}

/// The start both binaries share: with a client command, run it and exit
/// (no engine, no display needed); otherwise resolve the configuration
/// (exit 2 with the reason when it is wrong) and start logging.
/// `program` names the binary in messages; `cli` is its whole command line.
pub fn prelude(
    program: &str,
    serve: &ServeArgs,
    address: &ServerAddress,
    command: Option<Command>,
    cli: &mut clap::Command,
) -> Prelude {
    // Whatever creates a file in this process without `private_fs` (the log
    // appender, SQLite's `-wal`, a library) still makes it owner-only.
    crate::private_fs::restrict_umask();
    // The plain variable names after flags and `LOCAL_MCP_*` ones, leniently:
    // a generic name set by something else is said and left out.
    let serve = &serve
        .clone()
        .or_plain_environment(&|name| std::env::var(name).ok(), &mut |warning| {
            eprintln!("{program}: {warning}")
        });
    if let Some(command) = command {
        // Warnings only unless asked: stdout is the commands' output (or, for
        // `stdio`, the protocol), so logs go to stderr and stay quiet.
        init_logging(program, serve.log_level.as_deref().unwrap_or("warn"), false, None);
        if !matches!(command, Command::Stdio { .. }) {
            end_quietly_when_the_reader_goes();
        }
        return Prelude::Exit(run(command, cli, serve, address));
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

/// Where this configuration's server is: `--url`, a `--connection-file`,
/// else the server of its database among the running ones.
fn source(serve: &ServeArgs, address: &ServerAddress) -> Result<Source, Failure> {
    let db = serve
        .resolve()
        .map(|(config, _)| config.db_path)
        .unwrap_or_else(|_| serve.db_path.clone().unwrap_or_else(crate::paths::default_db));
    let legacy = crate::config::is_default_db(&db)
        .then(crate::paths::default_connection_file)
        .flatten();
    Source::new(
        address.url.clone(),
        address.token.clone(),
        serve.connection_file.clone(),
        db,
        crate::paths::default_servers_dir(),
        legacy,
    )
    .map_err(Failure::from)
}

/// Run `command`. `cli` is the whole command line (for completions); `serve`
/// says where this configuration's server publishes itself; its `log_dir`
/// where that server writes its logs.
pub fn run(command: Command, cli: &mut clap::Command, serve: &ServeArgs, address: &ServerAddress) -> ExitCode {
    let name = cli.get_name().to_owned();
    let log_dir = serve.log_dir();
    // The commands that run no client of the server (and the daemon ones,
    // which make their own short runtime) are done here, outside one.
    let direct = match &command {
        Command::Completions { shell } => {
            clap_complete::generate(*shell, cli, name, &mut std::io::stdout());
            return ExitCode::SUCCESS;
        }
        Command::Start => Some(daemon::start(serve)),
        Command::Restart => Some(daemon::restart(serve)),
        Command::Stop { agent: None, app, .. } => Some(daemon::stop(serve, *app)),
        Command::Service { action, no_start } => Some(service::service(*action, *no_start)),
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
        let source = || source(serve, address);
        let client = || commands::client(&source()?);
        match command {
            Command::Status { queue, json } => {
                let source = source()?;
                show::status(&commands::client(&source)?, queue.as_deref(), json, &source.others()).await
            }
            Command::Add {
                queue,
                to,
                attach,
                template,
                text,
            } => {
                let client = client()?;
                let (text, fetched) = match template {
                    Some(name) => templates::from_template(&client, &name, &text).await?,
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
            } => templates::templates(&client()?, save, &attach, delete, json).await,
            Command::List { queue, all, json } => show::list(&client()?, queue.as_deref(), all, json).await,
            Command::Search { queue, json, words } => show::search(&client()?, &words, queue.as_deref(), json).await,
            Command::Hold { queue } => commands::hold(&client()?, queue, true).await,
            Command::Release { queue, imported: false } => commands::hold(&client()?, queue, false).await,
            Command::Release { queue, imported: true } => commands::release_held(&client()?, queue).await,
            Command::Reports {
                agent,
                queue,
                count,
                json,
            } => reports::reports(&client()?, agent, queue, count, json).await,
            Command::Reply { agent, queue, text } => reports::reply(&client()?, agent, queue, &text).await,
            Command::Stop {
                agent: Some(agent),
                queue,
                ..
            } => commands::stop(&client()?, agent, queue).await,
            Command::Forget { agent, queue, gone: _ } => commands::forget(&client()?, agent, queue).await,
            Command::Token { header_json } => {
                let target = source()?.resolve().map_err(Failure::from)?;
                commands::token(target.token.as_deref(), header_json);
                Ok(())
            }
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
            Command::Config {
                queue,
                client: Some(client),
            } => commands::config(&source()?, queue.as_deref(), client),
            Command::Config { client: None, .. } => {
                commands::list_clients();
                Ok(())
            }
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
            } => client_files::connect(
                &source()?,
                client_files::ConnectArgs {
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
            } => client_files::disconnect(client, project, dry_run, allow_shared_folder, json),
            Command::Stdio { queue } => bridge::run(source()?, queue).await.map_err(Failure::from),
            Command::Hook { hook, queue, agent } => {
                let shape = match hook {
                    HookKind::ClaudeStop => hook::Shape::ClaudeCode,
                    HookKind::VscodeStop => hook::Shape::VsCode,
                };
                hook::stop(shape, source(), queue, agent).await
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
