//! The clients' `Stop` hooks that keep an agent calling: the command we
//! put in Claude Code's settings (a group) or a VS Code project's
//! `.github/hooks` file (a command), where each goes, and adding or
//! removing ours through the one edit path ([`super::edit`]).

use crate::model::McpClient;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::edit::{edit_file, Doc};
use super::files;
use super::json_doc::JsonDoc;
use super::records::Records;
use super::{Change, Env, Site};
use crate::model::DEFAULT_QUEUE;
use crate::{Error, Result};

impl Site {
    /// The Claude Code `Stop` hook group that runs `hook claude-stop`.
    pub fn stop_hook(&self, queue: &str) -> Value {
        serde_json::json!({ "hooks": [self.hook_command("claude-stop", queue)] })
    }

    /// VS Code's `Stop` hook entry (its own files list commands, not groups): `hook vscode-stop`.
    pub fn vscode_stop_hook(&self, queue: &str) -> Value {
        self.hook_command("vscode-stop", queue)
    }

    fn hook_command(&self, kind: &str, queue: &str) -> Value {
        // Every word quoted as the shell needs it: a program under a folder
        // named `d$(…)` once ran that command in the hook.
        let mut command = format!("{} hook {kind}", shell_word(&self.program));
        if let Some(db) = &self.database {
            command.push_str(&format!(" --db-path {}", shell_word(db)));
        }
        if queue != DEFAULT_QUEUE {
            command.push_str(&format!(" --queue {queue}"));
        }
        serde_json::json!({ "type": "command", "command": command, "timeout": 10 })
    }
}

/// `word` as one word of a shell command (Claude Code and VS Code run hooks
/// through a shell, and Claude Code its `headersHelper`): quoted unless it
/// is plain — in single quotes for a POSIX shell, double quotes on Windows.
pub(super) fn shell_word(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%,".contains(c))
    {
        word.to_owned()
    } else if cfg!(windows) {
        format!("\"{}\"", word.replace('"', "\\\""))
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Where `client`'s Stop hook goes (at `project`, or the user's scope), with
/// the element we put in its `hooks.Stop` list; `None` for a client without one.
pub(super) fn hook_place(
    env: &Env,
    site: &Site,
    client: McpClient,
    project: Option<&Path>,
    queue: &str,
) -> Result<Option<(PathBuf, Value)>> {
    match client {
        McpClient::ClaudeCode | McpClient::ClaudeCodeProject => {
            Ok(Some((env.claude_settings(project), site.stop_hook(queue))))
        }
        // VS Code loads `.github/hooks/*.json` of the workspace by default; its
        // user folder for hooks is not in the default list of every version.
        McpClient::Vscode | McpClient::VscodeInsiders => match project {
            Some(dir) => Ok(Some((env.vscode_hooks(dir), site.vscode_stop_hook(queue)))),
            None => Err(Error::Conflict(
                "--hooks for VS Code needs --project DIR: its agent hooks live in the project's .github/hooks folder"
                    .into(),
            )),
        },
        _ => Ok(None),
    }
}

/// Whether an element of a `hooks.Stop` list runs our hook: a Claude Code
/// group (`{"hooks": [...]}`) holding one, or a VS Code command entry.
pub(super) fn is_our_hook(element: &Value) -> bool {
    let ours = |h: &Value| {
        h["command"]
            .as_str()
            .is_some_and(|c| c.contains(" hook claude-stop") || c.contains(" hook vscode-stop"))
    };
    ours(element) || element["hooks"].as_array().is_some_and(|hooks| hooks.iter().any(ours))
}

pub(super) fn set_hook(
    records: &mut Records,
    client: McpClient,
    settings: &Path,
    group: &Value,
    dry_run: bool,
    team: bool,
) -> Result<Change> {
    let real = files::real_path(settings);
    let previous = records.find(client.id(), &real, "hook").map(|w| w.entry.clone());
    edit_hooks(records, client, settings, dry_run, team, |doc| {
        if doc.array(&["hooks", "Stop"]).contains(group) {
            return Ok(None);
        }
        // Replace the group we wrote before (another queue or program path), never the person's.
        if let Some(old) = &previous {
            doc.remove_from_array(&["hooks", "Stop"], old);
        }
        doc.append_to_array(&["hooks", "Stop"], group)?;
        Ok(Some(group.clone()))
    })
}

pub(super) fn remove_hook(
    records: &mut Records,
    client: McpClient,
    settings: &Path,
    group: &Value,
    dry_run: bool,
) -> Result<Change> {
    edit_hooks(records, client, settings, dry_run, false, |doc| {
        Ok(doc.remove_from_array(&["hooks", "Stop"], group).then_some(Value::Null))
    })
}

fn edit_hooks(
    records: &mut Records,
    client: McpClient,
    settings: &Path,
    dry_run: bool,
    team: bool,
    edit: impl FnOnce(&mut JsonDoc) -> std::result::Result<Option<Value>, String>,
) -> Result<Change> {
    edit_file(
        records,
        client,
        settings,
        "hook",
        dry_run,
        (&[], team),
        |doc| match doc {
            Doc::Json(d) => edit(d),
            Doc::Toml(_) => Err("not a JSON settings file".into()),
        },
    )
}
