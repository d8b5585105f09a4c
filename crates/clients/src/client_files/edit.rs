//! The one path every change to a client's file takes ([`edit_file`]):
//! read and parse it (JSONC or TOML, [`Doc`]), let the caller change the
//! parsed document, check the result in memory (it parses, holds what we
//! meant, differs nowhere else), back the file up before our first change,
//! write it atomically, read it back, and keep the record of what we wrote.
//! Also the server entry's own edits ([`set_entry`], [`remove_entry`]).

use crate::model::McpClient;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::files;
use super::json_doc::JsonDoc;
use super::records::{Backup, Records, Written};
use super::toml_doc::TomlDoc;
use super::{Action, Change};
use crate::snippets::ENTRY_NAME;
use crate::{Error, Result};

/// A parsed client file.
pub(super) enum Doc {
    Json(JsonDoc),
    Toml(TomlDoc),
}

impl Doc {
    pub(super) fn parse(file: &Path, text: &str) -> std::result::Result<Doc, String> {
        if file.extension().is_some_and(|e| e == "toml") {
            TomlDoc::parse(text).map(Doc::Toml)
        } else {
            JsonDoc::parse(text).map(Doc::Json)
        }
    }
    pub(super) fn get(&self, path: &[&str], name: &str) -> Option<Value> {
        match self {
            Doc::Json(d) => d.get(path, name),
            Doc::Toml(d) => d.get(path, name),
        }
    }
    pub(super) fn set(&mut self, path: &[&str], name: &str, value: &Value) -> std::result::Result<(), String> {
        match self {
            Doc::Json(d) => d.set(path, name, value),
            Doc::Toml(d) => d.set(path, name, value),
        }
    }
    pub(super) fn remove(&mut self, path: &[&str], name: &str) -> bool {
        match self {
            Doc::Json(d) => d.remove(path, name),
            Doc::Toml(d) => d.remove(path, name),
        }
    }
    pub(super) fn value(&self) -> Value {
        match self {
            Doc::Json(d) => d.value(),
            Doc::Toml(d) => d.value(),
        }
    }
    pub(super) fn text(&self) -> String {
        match self {
            Doc::Json(d) => d.text(),
            Doc::Toml(d) => d.text(),
        }
    }
}

/// The parsed file and its text; `None` when it does not exist.
pub(super) fn read_doc(file: &Path) -> std::result::Result<Option<(Doc, String)>, String> {
    let file = files::real_path(file);
    match files::read(&file).map_err(|e| format!("cannot read {}: {e}", file.display()))? {
        None => Ok(None),
        Some(text) => Doc::parse(&file, &text)
            .map(|d| Some((d, text)))
            .map_err(|e| format!("{} does not parse ({e}); it was left unchanged", file.display())),
    }
}

fn unreadable(reason: String) -> Error {
    Error::Conflict(reason)
}

/// The document with our entry taken out, for checking that nothing else moved.
fn without(mut value: Value, path: &[&str]) -> Value {
    let mut at = &mut value;
    for key in path {
        match at.get_mut(*key) {
            Some(inner) => at = inner,
            None => return value,
        }
    }
    if let Some(map) = at.as_object_mut() {
        map.remove(ENTRY_NAME);
    }
    value
}

pub(super) fn set_entry(
    records: &mut Records,
    client: McpClient,
    file: &Path,
    wanted: &Value,
    dry_run: bool,
    team: bool,
) -> Result<Change> {
    let key = client.servers_key();
    let secrets = header_values(wanted);
    edit_file(records, client, file, "server", dry_run, (&secrets, team), |doc| {
        if doc.get(key, ENTRY_NAME).as_ref() == Some(wanted) {
            return Ok(None);
        }
        doc.set(key, ENTRY_NAME, wanted)?;
        Ok(Some(wanted.clone()))
    })
    .map(|mut change| {
        change.note = (change.action == Action::Written).then(|| restart_note(client).to_owned());
        change
    })
}

pub(super) fn remove_entry(records: &mut Records, client: McpClient, file: &Path, dry_run: bool) -> Result<Change> {
    let real = files::real_path(file);
    let key = client.servers_key();
    let recorded = records.find(client.id(), &real, "server").map(|w| w.entry.clone());
    let file_name = real.display().to_string();
    edit_file(records, client, file, "server", dry_run, (&[], false), |doc| {
        let Some(current) = doc.get(key, ENTRY_NAME) else {
            return Ok(None);
        };
        match &recorded {
            None => Err(format!(
                "the local-mcp entry in {file_name} was not written by local-mcp's connect; remove it by hand if you want it gone"
            )),
            Some(r) if *r != current => Err(format!(
                "the local-mcp entry in {file_name} was edited since local-mcp wrote it; it was left in place"
            )),
            Some(_) => {
                doc.remove(key, ENTRY_NAME);
                Ok(Some(Value::Null))
            }
        }
    })
}

/// The values of an entry's headers (`headers`, Codex's `http_headers`): a
/// file that holds one holds the token.
fn header_values(entry: &Value) -> Vec<String> {
    ["headers", "http_headers"]
        .iter()
        .filter_map(|key| entry.get(key)?.as_object())
        .flat_map(|headers| headers.values().filter_map(Value::as_str).map(str::to_owned))
        // A reference to the token (a project's file) is no secret.
        .filter(|value| !value.contains(super::TOKEN_VARIABLE))
        .collect()
}

/// The one path every file change takes. `edit` changes the parsed document
/// and returns what it recorded (`Some(Null)` for a removal), or `None` when
/// nothing needs changing. Checks the result in memory before writing and
/// on disk after. `(secrets, team)`: a file that will hold one of `secrets`
/// is written owner-only, whatever it was; another keeps its mode, or is
/// new — readable by others where it is a project's file (`team`), which a
/// team shares, owner-only elsewhere.
pub(super) fn edit_file(
    records: &mut Records,
    client: McpClient,
    file: &Path,
    what: &'static str,
    dry_run: bool,
    (secrets, team): (&[String], bool),
    edit: impl FnOnce(&mut Doc) -> std::result::Result<Option<Value>, String>,
) -> Result<Change> {
    let real = files::real_path(file);
    let target = Target {
        client,
        shown: real.display().to_string(),
        real,
        what,
    };
    let (mut doc, before_text) = match read_doc(&target.real).map_err(unreadable)? {
        Some((doc, text)) => (doc, Some(text)),
        None => (Doc::parse(&target.real, "").map_err(unreadable)?, None),
    };
    let before = doc.value();
    let recorded = match edit(&mut doc) {
        Err(reason) => {
            return Err(Error::Conflict(format!(
                "{}: {reason}; it was left unchanged",
                target.shown
            )))
        }
        Ok(None) => return Ok(target.nothing_to_write(records, &doc, dry_run)),
        Ok(Some(v)) => v,
    };
    let removal = recorded.is_null();
    let text = match (&before_text, &doc) {
        // A new JSON file: written plainly, as the client's docs show it.
        (None, Doc::Json(d)) => format!("{:#}\n", d.value()),
        _ => doc.text(),
    };
    check(&target.real, &text, &before, client, what, &recorded)?;
    if dry_run {
        let action = if removal {
            Action::WouldRemove
        } else {
            Action::WouldWrite
        };
        return Ok(target.change(action, None, Some(text)));
    }
    let existed = before_text.is_some();
    let created = target.created_by_this_write(records, existed);
    // A removal that leaves a file connect created with nothing of anyone
    // else's: the file goes, and the folders connect made for it if empty.
    let was_created = records
        .find(client.id(), &target.real, what)
        .is_some_and(|w| w.created.contains(&target.real));
    if removal && was_created && strip_empty(doc.value()).as_object().is_some_and(|o| o.is_empty()) {
        return target.remove_created_file(records);
    }
    let backup = if existed {
        if files::read_only(&target.real) {
            return Err(Error::Conflict(format!(
                "{} is read-only; it was left unchanged (make it writable to let local-mcp change it)",
                target.shown
            )));
        }
        target.back_up_once(records)?
    } else {
        None
    };
    let secret = secrets.iter().any(|s| !s.is_empty() && text.contains(s.as_str()));
    target.write(&text, secret, team)?;
    if removal {
        records.forget(client.id(), &target.real, what);
    } else {
        records.put(Written {
            client: client.id().to_owned(),
            file: target.real.clone(),
            kind: what.to_owned(),
            entry: recorded,
            at: crate::time::now(),
            created,
        });
    }
    let action = if removal { Action::Removed } else { Action::Written };
    Ok(target.change(action, backup, None))
}

/// The file an edit is for, and what of ours it holds (`server`, `hook`).
struct Target {
    client: McpClient,
    /// The file itself, links followed.
    real: PathBuf,
    shown: String,
    what: &'static str,
}

impl Target {
    fn change(&self, action: Action, backup: Option<PathBuf>, preview: Option<String>) -> Change {
        Change {
            client: self.client,
            file: self.shown.clone(),
            what: self.what,
            action,
            backup: backup.map(|b| b.display().to_string()),
            preview,
            note: None,
        }
    }

    /// The edit changed nothing: our entry is absent (and forgotten) or
    /// unchanged.
    fn nothing_to_write(&self, records: &mut Records, doc: &Doc, dry_run: bool) -> Change {
        let absent = self.what == "server" && doc.get(self.client.servers_key(), ENTRY_NAME).is_none();
        if absent && !dry_run {
            records.forget(self.client.id(), &self.real, self.what);
        }
        let action = if absent { Action::Absent } else { Action::Unchanged };
        self.change(action, None, None)
    }

    /// What this write creates (the file and the folders it needs), kept
    /// with the record: a later disconnect takes them away again, and they
    /// never make a client look installed. A file that exists keeps what
    /// its record says an earlier write created.
    fn created_by_this_write(&self, records: &Records, existed: bool) -> Vec<PathBuf> {
        if existed {
            return records
                .find(self.client.id(), &self.real, self.what)
                .map(|w| w.created.clone())
                .unwrap_or_default();
        }
        let mut made: Vec<PathBuf> = self
            .real
            .ancestors()
            .skip(1)
            .take_while(|d| !d.exists())
            .map(Path::to_path_buf)
            .collect();
        made.reverse();
        made.push(self.real.clone());
        made
    }

    /// Remove the file connect created, and the folders it made for it
    /// when they are empty.
    fn remove_created_file(&self, records: &mut Records) -> Result<Change> {
        let made = records
            .find(self.client.id(), &self.real, self.what)
            .map(|w| w.created.clone())
            .unwrap_or_default();
        std::fs::remove_file(&self.real)
            .map_err(|e| Error::Conflict(format!("cannot remove {} ({e}); it was left unchanged", self.shown)))?;
        for dir in made.iter().rev().filter(|p| **p != self.real) {
            // Only an empty folder goes (remove_dir refuses anything else).
            let _ = std::fs::remove_dir(dir);
        }
        records.forget(self.client.id(), &self.real, self.what);
        Ok(self.change(Action::Removed, None, None))
    }

    /// A backup before our first change to the file, once; its path.
    fn back_up_once(&self, records: &mut Records) -> Result<Option<PathBuf>> {
        if records.backed_up(&self.real) {
            return Ok(None);
        }
        let copy = files::backup(&self.real)
            .map_err(|e| Error::Conflict(format!("cannot back up {} ({e}); it was left unchanged", self.shown)))?;
        records.backups.push(Backup {
            file: self.real.clone(),
            backup: copy.clone(),
            at: crate::time::now(),
        });
        Ok(Some(copy))
    }

    /// Write atomically, then read back what is on disk: the write is only
    /// done when it says so.
    fn write(&self, text: &str, secret: bool, team: bool) -> Result<()> {
        files::write_atomic(&self.real, text, secret, team)
            .map_err(|e| Error::Conflict(format!("cannot write {} ({e}); it was left unchanged", self.shown)))?;
        let on_disk = files::read(&self.real).ok().flatten();
        if on_disk.as_deref() != Some(text) {
            return Err(Error::Conflict(format!(
                "{} changed while local-mcp was writing it (another program wrote it too); check it",
                self.shown
            )));
        }
        Ok(())
    }
}

/// The new text parses, holds what we meant, and differs from the old one
/// nowhere else.
fn check(file: &Path, text: &str, before: &Value, client: McpClient, what: &str, recorded: &Value) -> Result<()> {
    let after = Doc::parse(file, text)
        .map_err(|e| Error::internal(format!("the edited {} would not parse", file.display()), e))?;
    let ok = if what == "server" {
        let key = client.servers_key();
        let entry_ok = if recorded.is_null() {
            after.get(key, ENTRY_NAME).is_none()
        } else {
            after.get(key, ENTRY_NAME).as_ref() == Some(recorded)
        };
        entry_ok && strip_empty(without(after.value(), key)) == strip_empty(without(before.clone(), key))
    } else {
        true
    };
    if ok {
        Ok(())
    } else {
        Err(Error::internal(
            format!(
                "the edit of {} did not come out as intended; nothing was written",
                file.display()
            ),
            "the re-parsed document differs outside our entry",
        ))
    }
}

/// Objects we created on the way (`"servers": {}`) do not count as changes.
fn strip_empty(mut value: Value) -> Value {
    if let Value::Object(map) = &mut value {
        for v in map.values_mut() {
            *v = strip_empty(v.take());
        }
        map.retain(|_, v| !matches!(v, Value::Object(m) if m.is_empty()));
    }
    value
}

/// When the client reads the change.
fn restart_note(client: McpClient) -> &'static str {
    match client {
        McpClient::Vscode | McpClient::VscodeInsiders | McpClient::Cline => "VS Code picks the change up by itself",
        McpClient::ClaudeCode
        | McpClient::ClaudeCodeProject
        | McpClient::GeminiCli
        | McpClient::Codex
        | McpClient::CopilotCli
        | McpClient::Opencode => "start a new session of the client to pick it up",
        _ => "restart the client to pick it up",
    }
}
