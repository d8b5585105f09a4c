//! Backups: a consistent copy of a running database with its attachment
//! files, and putting one back while no engine runs.
//!
//! A backup is a tar archive of `local_mcp.sqlite3` (made with `VACUUM INTO`
//! under the store's lock, so it holds exactly the writes committed before
//! it began, WAL included) and `attachments/` (the files beside the
//! database, copied after the snapshot, so every file a row of the snapshot
//! names is there). Restoring checks the archive's database with
//! `PRAGMA integrity_check` before anything is replaced, and keeps what it
//! replaces in a folder beside the database.

use std::fs::File;
use std::path::{Path, PathBuf};

use rusqlite::Connection;

use super::files::Files;
use super::Store;
use crate::{Error, Result};

/// The database's name inside a backup archive.
pub const DB_ENTRY: &str = "local_mcp.sqlite3";
/// The attachment folder's name inside a backup archive.
pub const FILES_ENTRY: &str = "attachments";

fn io(context: String) -> impl FnOnce(std::io::Error) -> Error {
    move |e| Error::internal(context, e)
}

impl Store {
    /// Write a backup archive of this database and its attachments to `out`.
    pub fn backup_to(&self, out: &Path) -> Result<()> {
        let work = tempdir_beside(out)?;
        let snapshot = work.join(DB_ENTRY);
        let target = snapshot
            .to_str()
            .ok_or_else(|| Error::Invalid(format!("{} is not a UTF-8 path", snapshot.display())))?;
        {
            let conn = self.lock();
            conn.execute("VACUUM INTO ?1", [target])?;
        }
        let file = File::create(out).map_err(io(format!("cannot write {}", out.display())))?;
        let mut archive = tar::Builder::new(file);
        archive
            .append_path_with_name(&snapshot, DB_ENTRY)
            .map_err(io("cannot archive the snapshot".into()))?;
        let root = self.files().root();
        if root.is_dir() {
            archive
                .append_dir_all(FILES_ENTRY, root)
                .map_err(io(format!("cannot archive {}", root.display())))?;
        }
        archive
            .into_inner()
            .and_then(|f| f.sync_all())
            .map_err(io(format!("cannot finish {}", out.display())))?;
        let _ = std::fs::remove_dir_all(&work);
        Ok(())
    }
}

/// What a restore did.
#[derive(Debug)]
pub struct Restored {
    /// Where the replaced database and attachments were moved (when there were any).
    pub replaced: Option<PathBuf>,
    pub instructions: i64,
}

/// Put the backup `archive` in place of the database at `db` (no engine may
/// hold it: the caller holds its lock). Refused whole, changing nothing,
/// when the archive is not a backup or its database is damaged.
pub fn restore(archive: &Path, db: &Path) -> Result<Restored> {
    let staging = tempdir_beside(db)?;
    let outcome = restore_via(archive, db, &staging);
    let _ = std::fs::remove_dir_all(&staging);
    outcome
}

fn restore_via(archive: &Path, db: &Path, staging: &Path) -> Result<Restored> {
    let file = File::open(archive).map_err(|e| Error::NotFound(format!("cannot open {}: {e}", archive.display())))?;
    tar::Archive::new(file).unpack(staging).map_err(|e| {
        Error::Invalid(format!(
            "{} is not a local-mcp backup (not a tar archive: {e})",
            archive.display()
        ))
    })?;
    let snapshot = staging.join(DB_ENTRY);
    if !snapshot.is_file() {
        return Err(Error::Invalid(format!(
            "{} is not a local-mcp backup (no {DB_ENTRY} in it)",
            archive.display()
        )));
    }
    let instructions = check(&snapshot).map_err(|why| {
        Error::Invalid(format!(
            "the database in {} is damaged ({why}); nothing was changed",
            archive.display()
        ))
    })?;

    // Move what is there aside, then the backup in.
    let files_now = Files::beside(db);
    let mut present: Vec<PathBuf> = ["", "-wal", "-shm"]
        .iter()
        .map(|suffix| with_suffix(db, suffix))
        .filter(|p| p.exists())
        .collect();
    if files_now.root().exists() {
        present.push(files_now.root().to_path_buf());
    }
    let replaced = if present.is_empty() {
        None
    } else {
        let stamp = time::OffsetDateTime::now_utc()
            .format(time::macros::format_description!(
                "[year][month][day]T[hour][minute][second]Z"
            ))
            .unwrap_or_else(|_| "before-restore".into());
        let aside = with_suffix(db, &format!(".replaced-{stamp}"));
        std::fs::create_dir_all(&aside).map_err(io(format!("cannot create {}", aside.display())))?;
        for p in &present {
            let to = aside.join(p.file_name().unwrap_or_default());
            std::fs::rename(p, &to).map_err(io(format!("cannot move {} aside", p.display())))?;
        }
        Some(aside)
    };
    std::fs::rename(&snapshot, db).map_err(io(format!("cannot put the backup at {}", db.display())))?;
    let files = staging.join(FILES_ENTRY);
    if files.is_dir() {
        std::fs::rename(&files, files_now.root()).map_err(io(format!(
            "cannot put the attachments at {}",
            files_now.root().display()
        )))?;
    }
    Ok(Restored { replaced, instructions })
}

/// `PRAGMA integrity_check` on a database file, and its instruction count.
fn check(path: &Path) -> std::result::Result<i64, String> {
    let conn = Connection::open(path).map_err(|e| e.to_string())?;
    let verdict: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .map_err(|e| e.to_string())?;
    if verdict != "ok" {
        return Err(verdict);
    }
    let count = conn
        .query_row("SELECT count(*) FROM instructions", [], |r| r.get(0))
        .map_err(|e| format!("no instructions table ({e})"))?;
    // The search indexes are keyed by rowid; a copy keeps them, but if they
    // disagree with their tables, they are rebuilt here rather than answer wrongly.
    let db = super::Db::new(&conn);
    let has_index: bool = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name = 'instructions_fts'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map(|n| n > 0)
        .map_err(|e| e.to_string())?;
    if has_index && !db.search_index_in_step().map_err(|e| e.to_string())? {
        db.rebuild_search_index().map_err(|e| e.to_string())?;
    }
    Ok(count)
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    path.with_file_name(name)
}

/// A fresh folder beside `path` (same file system: the moves are renames).
fn tempdir_beside(path: &Path) -> Result<PathBuf> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let work = dir.join(format!(
        ".local-mcp-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    crate::paths::private_dir(&work).map_err(io(format!("cannot create {}", work.display())))?;
    Ok(work)
}
