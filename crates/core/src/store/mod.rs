//! SQLite storage: opening the database, migrations, and every SQL statement
//! the product runs. Nothing outside this module writes SQL.
//!
//! One connection behind a `std::sync::Mutex`: SQLite serialises writers anyway,
//! and one connection keeps each multi-statement operation trivially consistent.
//! The lock is held only for the statements themselves and never across an
//! `.await`; callers run these blocking calls on `spawn_blocking` threads.
//!
//! Durability is chosen per write (`docs/ARCHITECTURE.md`, "Data model"): a
//! person's input commits with
//! `synchronous=FULL` (survives power loss), a claim with `NORMAL` (survives any
//! crash of the app; a power loss can at worst roll the claim back so the
//! instruction is delivered again, never lost).

mod backup;
mod fault;
mod files;
pub mod group;
mod migrations;
mod names;
mod queries;
mod untrusted;

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, TransactionBehavior};

use crate::{paths, private_fs, Error, Result};

use crate::model::Timestamp;
use crate::sync::MutexExt as _;
pub use backup::{restore, DB_ENTRY};
pub use files::{template_folder, Files, NewFile};
pub use queries::{AttachmentRow, Db, PendingChange, QueueTally, TemplateFileRow};

/// How hard a commit must try to reach the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// fsync the WAL at commit: for anything that records a person's input.
    Full,
    /// fsync only at checkpoints: for claims, which must stay off the wake-up path's fsync.
    Normal,
}

/// The database: one connection, opened, migrated and configured.
pub struct Store {
    /// `parking_lot`'s, for its fair unlock: the claims' writer hands the
    /// connection to whoever waits between its groups (`group.rs`).
    conn: parking_lot::Mutex<Connection>,
    /// The database file (for messages that tell the person what to fix).
    path: Option<std::path::PathBuf>,
    /// The storage fault met last, until a write succeeds again.
    fault: Mutex<Option<fault::Fault>>,
    /// The attachment files, beside the database.
    files: Files,
    /// Claims waiting to join the next transaction (`group`).
    waiting: Mutex<group::Waiting>,
}

impl Store {
    /// Open (creating if needed) the database file, apply pragmas and migrations.
    /// Refuses a database written by a newer version of the program.
    pub fn open(path: &Path) -> Result<Store> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            paths::private_dir(dir)
                .map_err(|e| Error::Startup(format!("cannot create the database folder {}: {e}", dir.display())))?;
        }
        // Owner-only before SQLite writes anything: it gives the WAL and
        // shared-memory files the database file's permissions.
        let file = private_fs::open_or_create(path).map_err(|e| {
            let verb = if path.exists() { "write" } else { "create" };
            Error::Startup(format!(
                "cannot {verb} the database {}: {e}; check the permissions of the file and its folder, or set DB_PATH",
                path.display()
            ))
        })?;
        if let Err(e) = private_fs::make_private(&file) {
            // Some file systems (a FAT stick, a network share) have no modes to set.
            tracing::warn!(path = %path.display(), error = %e, "could not make the database owner-only");
        }
        drop(file);
        let conn = Connection::open(path)
            .map_err(|e| Error::Startup(format!("cannot open the database {}: {e}", path.display())))?;
        let mut store = Self::configure(conn, true, Files::beside(path))?;
        store.path = Some(path.to_owned());
        // What a crash left in the work folder is of no use to anyone.
        private_fs::sweep_work(&work_parent(path));
        Ok(store)
    }

    /// A private folder for one operation's temporary files (a backup, an
    /// export bundle, an import), removed when dropped: inside
    /// `<database>-work/`, owner-only, on the database's file system (a
    /// backup hard-links the attachments into it) and never in a folder
    /// other accounts share; swept at start.
    pub fn work_dir(&self) -> Result<private_fs::WorkDir> {
        let made = match &self.path {
            Some(db) => {
                let parent = work_parent(db);
                private_fs::private_dir(&parent).and_then(|()| private_fs::WorkDir::new_in(&parent))
            }
            None => private_fs::WorkDir::temporary(),
        };
        made.map_err(|e| {
            let e = Error::internal("cannot make a work folder", e);
            fault::classify(self.path.as_deref(), &e).unwrap_or(e)
        })
    }

    /// Open the database; if its file is damaged (not a database, or
    /// corrupt), move it aside — with its `-wal`, `-shm` and attachments — to
    /// `<name>.corrupt-<time>` and start a fresh one, saying what happened.
    /// A damaged file must never make the app crash on every start.
    pub fn open_or_recover(path: &Path) -> Result<(Store, Option<Recovery>)> {
        let why = match Store::open(path).and_then(|s| s.quick_check().map(|()| s)) {
            Ok(store) => return Ok((store, None)),
            Err(e) => match damage(&e) {
                Some(why) => why,
                None => return Err(e),
            },
        };
        let moved_to = move_aside(path).map_err(|e| {
            Error::Startup(format!(
                "the database {} is damaged ({why}) and could not be moved aside: {e}",
                path.display()
            ))
        })?;
        tracing::error!(path = %path.display(), moved_to = %moved_to.display(), "the database was damaged ({why}); it was moved aside and a fresh one started");
        let store = Store::open(path)?;
        Ok((
            store,
            Some(Recovery {
                moved_to: moved_to.display().to_string(),
                reason: why,
                at: Timestamp::now(),
            }),
        ))
    }

    /// `PRAGMA quick_check`: a damaged file (truncated, pages overwritten) is an error.
    fn quick_check(&self) -> Result<()> {
        let conn = self.lock();
        let result: String = conn.query_row("PRAGMA quick_check(1)", [], |r| r.get(0))?;
        if result == "ok" {
            Ok(())
        } else {
            Err(Error::internal(
                "database check",
                rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CORRUPT), Some(result)),
            ))
        }
    }

    /// A private in-memory database, for unit tests.
    pub fn open_in_memory() -> Result<Store> {
        Self::configure(Connection::open_in_memory()?, false, Files::temporary())
    }

    fn configure(mut conn: Connection, wal: bool, files: Files) -> Result<Store> {
        prepare(&mut conn, wal)?;
        migrations::migrate(&mut conn)?;
        Ok(Store {
            conn: parking_lot::Mutex::new(conn),
            path: None,
            fault: Mutex::new(None),
            files,
            waiting: Mutex::default(),
        })
    }

    fn lock(&self) -> parking_lot::MutexGuard<'_, Connection> {
        // No poisoning: a panic while holding the lock cannot leave a
        // half-done transaction behind (rusqlite rolls back on drop).
        self.conn.lock()
    }

    /// The attachment files of this database.
    pub fn files(&self) -> &Files {
        &self.files
    }

    /// Remove attachment files that no row names (left by a crash between
    /// writing files and committing their rows). Run at start.
    pub fn sweep_files(&self) -> Result<usize> {
        let kept = self.read(|db| db.attachment_files())?;
        self.files
            .sweep(&kept)
            .map_err(|e| Error::internal("cleaning the attachment folder", e))
    }

    /// Run read-only statements.
    pub fn read<T>(&self, body: impl FnOnce(&Db<'_>) -> Result<T>) -> Result<T> {
        let conn = self.lock();
        body(&Db::new(&conn)).map_err(|e| self.fault(e))
    }

    /// Say a fault of the disk or the file in the person's terms (`fault`),
    /// and remember it until a write succeeds. Other errors pass unchanged.
    /// Also for errors met beside the database (writing attachment files).
    pub fn fault(&self, e: Error) -> Error {
        let fault = if e.is_storage_fault() {
            e
        } else {
            match fault::classify(self.path.as_deref(), &e) {
                Some(fault) => fault,
                None => return e,
            }
        };
        *self.fault.lock_anyway() = Some(fault::Fault::of(&fault));
        fault
    }

    /// The storage fault met last, until a write succeeds again: what the
    /// page and the tray show while the database cannot be written.
    pub fn fault_now(&self) -> Option<String> {
        self.fault.lock_anyway().as_ref().map(|f| f.text.clone())
    }

    /// A write went through: whatever blocked writes has cleared — unless it
    /// was a full disk that still is. A small write can land in room SQLite
    /// already holds (its WAL's pages) while the disk is full: the fault went
    /// from the status with the disk still full (in one of two runs). So a
    /// full disk's fault goes only once the disk takes a new block
    /// (`fault::has_room`); that is asked only while such a fault lasts.
    fn write_went_through(&self) {
        let mut fault = self.fault.lock_anyway();
        if fault.as_ref().is_some_and(|f| f.no_space) && !fault::has_room(self.path.as_deref()) {
            return;
        }
        *fault = None;
    }

    /// Run `body` in one `BEGIN IMMEDIATE` transaction committed with the given
    /// durability; then run `on_commit` while still holding the connection, so
    /// that whatever it publishes (events) goes out in commit order.
    pub fn write<T>(
        &self,
        durability: Durability,
        body: impl FnOnce(&Db<'_>) -> Result<T>,
        on_commit: impl FnOnce(&T),
    ) -> Result<T> {
        let mut conn = self.lock();
        self.reopen_if_gone(&mut conn).map_err(|e| self.fault(e))?;
        if durability == Durability::Normal {
            conn.execute_batch("PRAGMA synchronous=NORMAL")?;
        }
        let result: Result<T> = (|| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let value = body(&Db::new(&tx))?;
            tx.commit()?;
            Ok(value)
        })();
        if durability == Durability::Normal {
            conn.execute_batch("PRAGMA synchronous=FULL")
                .map_err(|e| self.fault(e.into()))?;
        }
        let value = result.map_err(|e| self.fault(e))?;
        self.write_went_through();
        on_commit(&value);
        Ok(value)
    }

    /// Queue a claim's write (`synchronous=NORMAL`, as [`Durability::Normal`]):
    /// the claims queued while another group is written share the next
    /// transaction, each in a savepoint (`group.rs`). Await the outcome with
    /// [`group::outcome`]; it is this write's own, and `on_commit` runs after
    /// the commit, under the lock, in commit order. When the second value is
    /// true no writer is at work: the caller runs [`Store::write_queued`] on a
    /// blocking thread (or [`Store::abandon_queued`] if it cannot).
    pub fn queue_write<T, B, C>(&self, body: B, on_commit: C) -> (group::Outcome<T>, bool)
    where
        T: Send + 'static,
        B: FnOnce(&Db<'_>) -> Result<T> + Send + 'static,
        C: FnOnce(&T) + Send + 'static,
    {
        let (write, outcome) = group::member(body, on_commit);
        (outcome, self.queue(write))
    }

    /// The database file was deleted or replaced under us: reopen it (`fault::restore`).
    fn reopen_if_gone(&self, conn: &mut Connection) -> Result<()> {
        if let Some(path) = self.path.as_deref().filter(|p| fault::is_gone(p)) {
            *conn = fault::restore(conn, path, |c| prepare(c, true))?;
        }
        Ok(())
    }

    /// While a fault lasts: try one small real write (the header's
    /// `user_version` set to itself dirties a page, so it needs the lock and
    /// room on the disk). Success clears the fault, so the page and the tray
    /// stop saying so even when nobody writes anything.
    pub fn probe(&self) -> Result<()> {
        self.write(
            Durability::Full,
            |db| {
                let version: i64 = db.conn().query_row("PRAGMA user_version", [], |r| r.get(0))?;
                db.conn().execute_batch(&format!("PRAGMA user_version = {version}"))?;
                Ok(())
            },
            |_| {},
        )
    }

    /// `PRAGMA integrity_check`: "ok" for a sound database.
    pub fn integrity_check(&self) -> Result<String> {
        let conn = self.lock();
        Ok(conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?)
    }
}

/// Compiled statements kept per connection: more than the store has
/// (`prepare_cached` in `queries/`, 64 at this writing).
const STATEMENT_CACHE: usize = 256;

/// The connection's settings: a busy timeout, WAL (for a file), full sync
/// and foreign keys.
fn prepare(conn: &mut Connection, wal: bool) -> Result<()> {
    // A busy timeout matters only if another process (a CLI, a backup tool)
    // holds the file; five seconds rides out a checkpoint without hanging a caller.
    conn.busy_timeout(Duration::from_secs(5))?;
    // Every statement the store runs stays compiled: rusqlite keeps 16 by
    // default, fewer than the store has, so a statement was parsed and
    // planned again (under the write lock) whenever 16 others had run since.
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    // Plans that do not depend on the values bound (SQLite's query planner
    // stability guarantee). Without it SQLite 3.54 marks a statement to be
    // planned again when a bound value could change its plan
    // (`sqlite3VdbeReprepareOnBind`), and rusqlite clears the bindings of
    // each statement it returns to the cache, which then expires it: four of
    // a claim's statements were parsed and planned again on every call,
    // under the write lock (its `UPDATE` took ~160 µs of the ~350 µs a claim
    // held the lock). Every query spells its literals (`status = 'pending'`),
    // so the partial indexes still serve them (`store::tests`).
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    // The file may have been written by someone else (a restored backup,
    // another program): its schema may call nothing with side effects, and
    // nobody may write the schema through this connection (`untrusted`).
    untrusted::guard(conn)?;
    if wal {
        let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(Error::Startup(format!(
                "the database refused WAL mode (got {mode}); is it on a network file system?"
            )));
        }
    }
    conn.execute_batch("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;")?;
    Ok(())
}

/// A damaged database that was moved aside at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovery {
    /// Where the damaged file now is.
    pub moved_to: String,
    /// What was wrong, as SQLite said it.
    pub reason: String,
    pub at: Timestamp,
}

/// Whether an error from opening means the file itself is damaged, and how.
fn damage(e: &Error) -> Option<String> {
    let Error::Internal { source, .. } = e else {
        return None;
    };
    match source.downcast_ref::<rusqlite::Error>()? {
        rusqlite::Error::SqliteFailure(f, msg)
            if matches!(
                f.code,
                rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt
            ) =>
        {
            Some(msg.clone().unwrap_or_else(|| f.to_string()))
        }
        _ => None,
    }
}

/// Rename the database and everything that belongs to it to `<name>.corrupt-<time>…`.
fn move_aside(path: &Path) -> std::io::Result<std::path::PathBuf> {
    let stamp = crate::time::now().replace([':', '-'], "").replace('.', "");
    let name = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
    let aside = path.with_file_name(format!("{name}.corrupt-{stamp}"));
    rename_when_free(path, &aside)?;
    for suffix in ["-wal", "-shm", "-attachments"] {
        let from = path.with_file_name(format!("{name}{suffix}"));
        if from.exists() {
            rename_when_free(&from, &path.with_file_name(format!("{name}.corrupt-{stamp}{suffix}")))?;
        }
    }
    Ok(aside)
}

/// Rename, waiting up to two seconds while another handle holds the file:
/// Windows refuses to rename an open file ("sharing violation"), and a
/// virus scanner or an engine stopping in the same process lets go soon.
fn rename_when_free(from: &Path, to: &Path) -> std::io::Result<()> {
    let mut tries = 0;
    loop {
        match std::fs::rename(from, to) {
            Err(e)
                if cfg!(windows)
                    && tries < 20
                    && (e.raw_os_error() == Some(32) || e.kind() == std::io::ErrorKind::PermissionDenied) =>
            {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            other => return other,
        }
    }
}

/// `<database>-work/`: where [`Store::work_dir`] makes its folders.
pub(super) fn work_parent(db: &Path) -> std::path::PathBuf {
    let mut name = db.file_name().unwrap_or_default().to_os_string();
    name.push("-work");
    db.with_file_name(name)
}

#[cfg(test)]
mod tests;
