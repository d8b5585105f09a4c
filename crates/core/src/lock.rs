//! One engine per database. Two engines on one file would each wake only
//! their own waiting agents and keep their own event streams, so an
//! instruction queued in one window could sit unseen by an agent that waits
//! on the other. The engine therefore holds an exclusive OS lock on
//! `<database>.lock` for its whole life, taken before the database is opened
//! (so a second start cannot even move a "damaged" file aside under a running
//! engine). The lock dies with its process — a clean exit, a crash, `kill
//! -9` — so a stale file never blocks a start; the file's text (pid, URL) only
//! says who holds it, for the refusal and for the desktop app to attach.
//!
//! On Windows the lock is mandatory, so another process cannot read the
//! file's text while it is held; the refusal then names the lock file only.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{paths, private_fs, time, Error, Result};

/// The exit code of `local-mcp-server` when another local-mcp already
/// serves its database (documented in the README).
pub const EXIT_IN_USE: u8 = 4;

/// What the lock file says about the engine that holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    pub pid: u32,
    /// The page and API, once the engine has bound its port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    pub started_at: String,
    /// The program that holds it (`local-mcp-server`, or the tray app
    /// `local-mcp`): `stop` stops the one and asks before it quits the other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
}

impl Holder {
    /// Whether the tray app holds it (not the headless server).
    pub fn is_desktop_app(&self) -> bool {
        self.program.as_deref() == Some("local-mcp")
    }
}

/// The held lock; released when dropped (or when the process ends).
#[derive(Debug)]
pub struct DbLock {
    file: File,
    holder: Holder,
}

/// `<database>.lock`, beside the database.
pub fn lock_path(db: &Path) -> PathBuf {
    let mut name = db.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    db.with_file_name(name)
}

/// Who holds the lock of `db` now, if anyone does (a lock file whose lock
/// is free describes an engine that is gone).
pub fn holder(db: &Path) -> Option<Holder> {
    let path = lock_path(db);
    let file = private_fs::open_no_follow(&path).ok()?;
    match file.try_lock() {
        // Free: whoever wrote it is gone.
        Ok(()) => None,
        Err(_) => read_holder(&path),
    }
}

fn read_holder(path: &Path) -> Option<Holder> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

impl DbLock {
    /// Take the lock of `db`, or say which engine holds it (`Error::InUse`).
    pub fn acquire(db: &Path) -> Result<DbLock> {
        let path = lock_path(db);
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            paths::private_dir(dir)
                .map_err(|e| Error::Startup(format!("cannot create the database folder {}: {e}", dir.display())))?;
        }
        let file = private_fs::open_or_create(&path).map_err(|e| {
            Error::Startup(format!(
                "cannot open the lock file {}: {e}; check the permissions of the database's folder, or set DB_PATH",
                path.display()
            ))
        })?;
        if let Err(e) = private_fs::make_private(&file) {
            tracing::debug!(path = %path.display(), error = %e, "could not make the lock file owner-only");
        }
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(in_use(db, read_holder(&path))),
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(Error::Startup(format!("cannot lock {}: {e}", path.display())))
            }
        }
        let mut lock = DbLock {
            file,
            holder: Holder {
                pid: std::process::id(),
                url: None,
                started_at: time::now(),
                program: std::env::current_exe()
                    .ok()
                    .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned())),
            },
        };
        lock.record();
        Ok(lock)
    }

    /// Record the URL this engine serves, for a second start to name.
    pub fn publish(&mut self, url: &str) {
        self.holder.url = Some(url.to_owned());
        self.record();
    }

    /// Rewrite the file's text. Not fatal: the lock is what keeps a second
    /// engine out; the text only names this one.
    fn record(&mut self) {
        let text = serde_json::to_string(&self.holder).unwrap_or_default();
        let written = self
            .file
            .set_len(0)
            .and_then(|()| self.file.seek(SeekFrom::Start(0)))
            .and_then(|_| self.file.write_all(text.as_bytes()))
            .and_then(|()| self.file.flush());
        if let Err(e) = written {
            tracing::warn!(error = %e, "could not record this engine in its lock file");
        }
    }
}

fn in_use(db: &Path, holder: Option<Holder>) -> Error {
    let who = match holder {
        Some(Holder {
            pid, url: Some(url), ..
        }) => format!("another local-mcp (process {pid}) at {url}"),
        Some(Holder { pid, url: None, .. }) => format!("another local-mcp (process {pid}, still starting)"),
        None => format!("another local-mcp (see {})", lock_path(db).display()),
    };
    Error::InUse(format!(
        "{who} already serves the database {}: use that one (its page, and {} for agents), or stop it first; \
         to run a second, separate queue give this one its own DB_PATH",
        db.display(),
        crate::model::MCP_PATH
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_one_database_is_refused_and_names_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("q.sqlite3");
        let mut first = DbLock::acquire(&db).unwrap();
        first.publish("http://127.0.0.1:1234");
        let Err(Error::InUse(message)) = DbLock::acquire(&db) else {
            panic!("a second lock was granted");
        };
        assert!(message.contains("http://127.0.0.1:1234"), "{message}");
        assert!(message.contains(&std::process::id().to_string()), "{message}");
        assert_eq!(
            holder(&db).and_then(|h| h.url).as_deref(),
            Some("http://127.0.0.1:1234")
        );
        drop(first);
        assert_eq!(holder(&db), None, "a released lock names nobody");
        let _again = DbLock::acquire(&db).expect("free again once released");
    }
}
