//! `connect` and `disconnect`: the command-line face of [`crate::client_files`].
//! Works on this account's client files directly (no call to the server),
//! with the running server's address and token from its connection-info file.

use crate::model::McpClient;
use std::path::PathBuf;

use super::Failure;
use crate::client::target::Source;
use crate::client_files::{self, Action, Change, ClientStatus, Env, Request, Site, State};
use crate::snippets;

/// What `connect` was asked.
pub struct ConnectArgs {
    pub client: Option<McpClient>,
    pub project: Option<PathBuf>,
    pub queue: Option<String>,
    pub hooks: bool,
    pub dry_run: bool,
    pub allow_shared_folder: bool,
    /// Write a client's file even where the client does not seem installed.
    pub force: bool,
    pub backups: bool,
    pub update: bool,
    pub json: bool,
}

/// The running server as clients should reach it; the default address
/// (said on stderr) when none is running.
fn site(source: &Source) -> Result<Site, Failure> {
    let target = super::commands::resolve_or_default(source)?;
    Ok(Site {
        database: target.db.as_deref().and_then(crate::config::named_database),
        base_url: target.base,
        token: target.token,
        program: snippets::bridge_program(),
    })
}

fn env() -> Result<Env, Failure> {
    Env::from_process().ok_or_else(|| Failure("no home folder here to find clients' configuration in".into(), 1))
}

fn project(dir: Option<PathBuf>) -> Result<Option<PathBuf>, Failure> {
    dir.map(|d| {
        std::fs::canonicalize(&d)
            .ok()
            .filter(|p| p.is_dir())
            .ok_or_else(|| Failure(format!("--project {}: not a folder", d.display()), 1))
    })
    .transpose()
}

pub fn connect(source: &Source, args: ConnectArgs) -> Result<(), Failure> {
    let env = env()?;
    if args.backups {
        let backups = client_files::backups(&env)?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&backups).unwrap_or_default());
        } else if backups.is_empty() {
            eprintln!("no backups: local-mcp has not changed any existing client file");
        } else {
            for b in backups {
                println!("{}  {}  (of {})", b.at, b.backup.display(), b.file.display());
            }
        }
        return Ok(());
    }
    let site = site(source)?;
    let project = project(args.project)?;
    if args.update {
        let mut failed = false;
        let results = client_files::update_all(&env, &site)?;
        if results.is_empty() {
            eprintln!("every client local-mcp connected is up to date");
        }
        for r in results {
            match r {
                Ok(change) => print_change(&change),
                Err(e) => {
                    failed = true;
                    eprintln!("{e}");
                }
            }
        }
        return if failed {
            Err(Failure("some clients were not updated".into(), 1))
        } else {
            Ok(())
        };
    }
    let Some(client) = args.client else {
        let list = client_files::status(&env, &site, project.as_deref());
        if args.json {
            println!("{}", serde_json::to_string_pretty(&list).unwrap_or_default());
        } else {
            print_status(&list);
        }
        return Ok(());
    };
    // A client that is not here: writing its file would make a folder of
    // it and claim a connection nobody will use. Said, unless asked; a
    // preview still shows the file, and says the real run would refuse.
    let absent = project.is_none() && !args.force && !client_files::client_status(&env, &site, client, None).installed;
    if absent && args.dry_run {
        println!(
            "{} does not seem to be installed here: without --force, connect writes nothing. With it:",
            client.name()
        );
    }
    if absent && !args.dry_run {
        let status = client_files::client_status(&env, &site, client, None);
        {
            return Err(Failure(
                format!(
                    "{} does not seem to be installed here (no folder of its own, no command on PATH): \
                     nothing was written. Install it first, or pass --force to write its file anyway{}",
                    client.name(),
                    status.file.map(|f| format!(" ({f})")).unwrap_or_default()
                ),
                1,
            ));
        }
    }
    let req = Request {
        project: project.as_deref(),
        queue: args.queue.as_deref(),
        hooks: args.hooks,
        dry_run: args.dry_run,
        allow_shared_folder: args.allow_shared_folder,
    };
    let changes = client_files::connect(&env, &site, client, &req)?;
    report(&changes, args.json);
    if !args.json && !args.dry_run {
        println!("\n{}", super::commands::next_step());
    }
    Ok(())
}

pub fn disconnect(
    client: McpClient,
    project_dir: Option<PathBuf>,
    dry_run: bool,
    allow_shared_folder: bool,
    json: bool,
) -> Result<(), Failure> {
    let env = env()?;
    let project = project(project_dir)?;
    let req = Request {
        project: project.as_deref(),
        dry_run,
        allow_shared_folder,
        ..Request::default()
    };
    let changes = client_files::disconnect(&env, client, &req)?;
    report(&changes, json);
    Ok(())
}

fn report(changes: &[Change], json: bool) {
    if json {
        println!("{}", serde_json::to_string_pretty(changes).unwrap_or_default());
        return;
    }
    for change in changes {
        print_change(change);
    }
}

fn print_change(change: &Change) {
    let what = if change.what == "hook" { "Stop hook" } else { "entry" };
    let line = match change.action {
        Action::Written => format!(
            "{}: wrote the local-mcp {what} in {}",
            change.client.name(),
            change.file
        ),
        Action::Unchanged => format!(
            "{}: already connected ({}); nothing written",
            change.client.name(),
            change.file
        ),
        Action::Removed => format!(
            "{}: removed the local-mcp {what} from {}",
            change.client.name(),
            change.file
        ),
        Action::Absent => format!("{}: no local-mcp {what} in {}", change.client.name(), change.file),
        // Claude Code's user scope is changed by its own command, never by us.
        Action::WouldWrite if change.preview.as_deref().is_some_and(|p| p.starts_with("claude ")) => format!(
            "{}: would run Claude Code's own command (it keeps {}):",
            change.client.name(),
            change.file
        ),
        Action::WouldWrite => format!("{}: would write {}:", change.client.name(), change.file),
        Action::WouldRemove => format!(
            "{}: would remove the {what} from {}, leaving:",
            change.client.name(),
            change.file
        ),
    };
    println!("{line}");
    if let Some(backup) = &change.backup {
        println!("  backup of the previous file: {backup}");
    }
    if let Some(preview) = &change.preview {
        println!("{}", preview.trim_end());
    }
    if let Some(note) = &change.note {
        println!("  {note}");
    }
}

fn print_status(list: &[ClientStatus]) {
    println!("{:<16} {:<9} {:<13} FILE", "CLIENT", "INSTALLED", "STATE");
    for s in list {
        let state = match s.state {
            State::Connected => "connected",
            State::Outdated => "outdated",
            State::NotConnected => "not connected",
            State::Unreadable => "unreadable",
            State::Unavailable => "unavailable",
        };
        println!(
            "{:<16} {:<9} {:<13} {}",
            s.id.id(),
            if s.installed { "yes" } else { "no" },
            state,
            s.file.as_deref().unwrap_or("-")
        );
        if let Some(detail) = &s.detail {
            println!("{:<16} {}", "", detail);
        }
    }
}
