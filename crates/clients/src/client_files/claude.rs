//! Claude Code's user scope, through its own `claude mcp` command: Claude
//! Code rewrites `~/.claude.json` itself (caches, counters) without locking,
//! so a second writer could corrupt it. We read that file, never write it.
//! `claude mcp add-json` refuses an existing name, so an update is remove
//! then add. The entry goes to it on stdin (`add-json NAME -`, Claude Code
//! 2.1.327 and later), never on its command line: another account can read
//! every process's arguments in `/proc`, and the entry holds the token.

use crate::model::McpClient;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::edit::read_doc;
use super::records::{Records, Written};
use super::status::NO_CLAUDE;
use super::{files, Action, Change, Env};
use crate::snippets::ENTRY_NAME;
use crate::{Error, Result};

/// Long enough for a cold start of the `claude` command on a slow machine.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(90);

fn current(env: &Env) -> Result<Option<Value>> {
    Ok(read_doc(&env.claude_code_state())
        .map_err(Error::Conflict)?
        .and_then(|(doc, _)| doc.get(McpClient::ClaudeCode.servers_key(), ENTRY_NAME)))
}

fn change(env: &Env, action: Action, preview: Option<String>) -> Change {
    Change {
        client: McpClient::ClaudeCode,
        file: env.claude_code_state().display().to_string(),
        what: "server",
        action,
        backup: None,
        preview,
        note: (action == Action::Written).then(|| "start a new Claude Code session to pick it up".to_owned()),
    }
}

pub fn set(env: &Env, records: &mut Records, wanted: &Value, dry_run: bool) -> Result<Change> {
    let existing = current(env)?;
    if existing.as_ref() == Some(wanted) {
        return Ok(change(env, Action::Unchanged, None));
    }
    let json = wanted.to_string();
    let add = ["mcp", "add-json", "--scope", "user", ENTRY_NAME, "-"];
    if dry_run {
        let mut preview = change(
            env,
            Action::WouldWrite,
            Some(format!("claude {} <<'EOF'\n{}\nEOF", shell_words(&add), masked(wanted))),
        );
        if env.on_path("claude").is_none() {
            preview.note = Some(NO_CLAUDE.to_owned());
        }
        return Ok(preview);
    }
    let claude = env.on_path("claude").ok_or_else(|| Error::Conflict(NO_CLAUDE.into()))?;
    if existing.is_some() {
        run(env, &claude, &["mcp", "remove", "--scope", "user", ENTRY_NAME], None)?;
    }
    run(env, &claude, &add, Some(&json))?;
    let now = current(env)?;
    if now.as_ref() != Some(wanted) {
        return Err(Error::Conflict(format!(
            "`claude mcp add-json` ran, but {} does not hold the entry it was given: {}",
            env.claude_code_state().display(),
            now.map(|v| v.to_string()).unwrap_or_else(|| "no entry".into())
        )));
    }
    records.put(Written {
        client: McpClient::ClaudeCode.id().into(),
        file: env.claude_code_state(),
        kind: "server".into(),
        entry: wanted.clone(),
        at: crate::time::now(),
        created: Vec::new(),
    });
    Ok(change(env, Action::Written, None))
}

pub fn remove(env: &Env, records: &mut Records, dry_run: bool) -> Result<Change> {
    let state = env.claude_code_state();
    let Some(existing) = current(env)? else {
        if !dry_run {
            records.forget(McpClient::ClaudeCode.id(), &state, "server");
        }
        return Ok(change(env, Action::Absent, None));
    };
    match records.find(McpClient::ClaudeCode.id(), &state, "server") {
        None => {
            return Err(Error::Conflict(
                "Claude Code's local-mcp server was not added by local-mcp's connect; \
                 remove it with `claude mcp remove --scope user local-mcp` if you want it gone"
                    .into(),
            ))
        }
        Some(w) if w.entry != existing => {
            return Err(Error::Conflict(
                "Claude Code's local-mcp server was changed since local-mcp added it; it was left in place".into(),
            ))
        }
        Some(_) => {}
    }
    let args = ["mcp", "remove", "--scope", "user", ENTRY_NAME];
    if dry_run {
        return Ok(change(
            env,
            Action::WouldRemove,
            Some(format!("claude {}", shell_words(&args))),
        ));
    }
    let claude = env.on_path("claude").ok_or_else(|| Error::Conflict(NO_CLAUDE.into()))?;
    run(env, &claude, &args, None)?;
    records.forget(McpClient::ClaudeCode.id(), &files::real_path(&state), "server");
    records.forget(McpClient::ClaudeCode.id(), &state, "server");
    Ok(change(env, Action::Removed, None))
}

/// The entry as a preview shows it: a header's value (the token) hidden.
fn masked(entry: &Value) -> String {
    let mut shown = entry.clone();
    if let Some(headers) = shown.get_mut("headers").and_then(Value::as_object_mut) {
        for value in headers.values_mut() {
            *value = "<hidden: it holds the token>".into();
        }
    }
    shown.to_string()
}

/// Run `claude` with an explicit argument list (no shell), from the home
/// folder so no project's settings take part, with a time limit; `input`
/// goes to its stdin. Claude Code refuses `add-json` inside one of its own
/// sessions (`CLAUDE_CODE_CHILD_SESSION`, set when an agent runs `connect`):
/// the person asked for this change, so that variable is not passed on.
fn run(env: &Env, claude: &std::path::Path, args: &[&str], input: Option<&str>) -> Result<()> {
    let mut child = Command::new(claude)
        .args(args)
        .current_dir(&env.home)
        .env("HOME", &env.home)
        .env_remove("CLAUDE_CODE_CHILD_SESSION")
        .stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::Conflict(format!("cannot run {}: {e}", claude.display())))?;
    if let Some(input) = input {
        use std::io::Write as _;
        let written = child.stdin.take().map(|mut stdin| stdin.write_all(input.as_bytes()));
        if let Some(Err(e)) = written {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::Conflict(format!("cannot give claude the entry: {e}")));
        }
    }
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > COMMAND_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Error::Conflict(format!(
                    "`claude {}` did not finish within {} s",
                    args.first().copied().unwrap_or_default(),
                    COMMAND_TIMEOUT.as_secs()
                )));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(Error::Conflict(format!("waiting for claude: {e}"))),
        }
    };
    if status.success() {
        return Ok(());
    }
    let output = child.wait_with_output().ok();
    let said = output
        .map(|o| {
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stderr),
                String::from_utf8_lossy(&o.stdout)
            )
        })
        .unwrap_or_default();
    Err(Error::Conflict(format!(
        "`claude {}` failed ({status}): {}",
        shell_words(&args[..args.len().min(4)]),
        said.trim()
    )))
}

fn shell_words(args: &[&str]) -> String {
    args.iter()
        .map(|a| {
            if a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:".contains(c)) {
                (*a).to_owned()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
