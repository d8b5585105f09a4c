//! Backups: a consistent copy of a running database with its attachment
//! files, and putting one back while no engine runs.
//!
//! A backup is a tar archive of `local_mcp.sqlite3` and `attachments/` (the
//! files beside the database). The database is copied with SQLite's online
//! backup API from a read transaction of a connection of its own: in WAL mode
//! a reader never blocks the engine's writes, so agents and the page go on
//! while a large database is copied. That read transaction begins under the
//! store's lock, and the attachment files are hard-linked aside in the same
//! moment, so the archive holds exactly the writes committed before the backup
//! began and every file those rows name — a delete that lands during the copy
//! cannot take a file the snapshot still lists. Restoring checks the archive's
//! database before anything is replaced — `PRAGMA integrity_check`, opened
//! as an untrusted file, its schema exactly ours and every name its rows
//! join onto a path plain (`untrusted`) — and keeps what it replaces in a
//! folder beside the database.

use std::path::{Path, PathBuf};

use rusqlite::Connection;

use super::files::Files;
use super::Store;
use crate::private_fs::{self, WorkDir};
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
        self.snapshot()?.archive_to(out)
    }

    /// Fix a backup's moment: a read transaction on a connection of its own
    /// and the attachment files linked aside, both taken while no write can
    /// commit. The engine writes on while the snapshot is held.
    pub fn snapshot(&self) -> Result<Snapshot> {
        let db = self
            .path
            .as_deref()
            .ok_or_else(|| Error::Invalid("an in-memory database cannot be backed up".into()))?;
        // In the database's work folder: the attachments' links must be on their file system.
        let snapshot = Snapshot {
            work: self.work_dir()?,
            db: db.to_owned(),
            source: Connection::open(db)?,
        };
        snapshot.source.busy_timeout(std::time::Duration::from_secs(5))?;
        let _writes = self.lock();
        snapshot.source.execute_batch("BEGIN")?;
        // A WAL read transaction takes its snapshot at its first read.
        snapshot
            .source
            .query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))?;
        link_tree(self.files().root(), &snapshot.work.join(FILES_ENTRY))
            .map_err(io(format!("cannot link {} aside", self.files().root().display())))?;
        Ok(snapshot)
    }
}

/// A backup's moment, held: see [`Store::snapshot`]. Dropping it lets the
/// database's WAL be checkpointed past it again and removes the linked files.
pub struct Snapshot {
    source: Connection,
    /// A private folder on the database's file system holding the linked
    /// attachments; removed (with the links) when the snapshot is dropped.
    work: WorkDir,
    db: PathBuf,
}

impl Snapshot {
    /// Copy the database as it was at the snapshot (SQLite's online backup
    /// API) and write the archive of it and the linked files to `out`.
    pub fn archive_to(self, out: &Path) -> Result<()> {
        // The copy goes beside the archive, not beside the database: a backup
        // must not need as much free room again on the database's disk.
        let beside_out = WorkDir::new_in(parent_of(out))
            .map_err(io(format!("cannot make a work folder beside {}", out.display())))?;
        self.archive_via(&beside_out.join(DB_ENTRY), out)
    }

    fn archive_via(&self, copy_path: &Path, out: &Path) -> Result<()> {
        let copy_failed =
            |e: rusqlite::Error| Error::internal(format!("cannot copy the database to {}", copy_path.display()), e);
        {
            let mut copy = Connection::open(copy_path).map_err(copy_failed)?;
            // One step: every page of the open read transaction's snapshot.
            let step = rusqlite::backup::Backup::new(&self.source, &mut copy)
                .and_then(|b| b.step(-1))
                .map_err(copy_failed)?;
            if step != rusqlite::backup::StepResult::Done {
                return Err(Error::Unavailable(format!(
                    "the database {} is busy ({step:?}); try the backup again",
                    self.db.display()
                )));
            }
        }
        let file = private_fs::create_new(out).map_err(io(format!("cannot write {}", out.display())))?;
        let mut archive = tar::Builder::new(file);
        archive
            .append_path_with_name(copy_path, DB_ENTRY)
            .map_err(io("cannot archive the snapshot".into()))?;
        let files = self.work.join(FILES_ENTRY);
        if files.is_dir() {
            archive
                .append_dir_all(FILES_ENTRY, &files)
                .map_err(io("cannot archive the attachment files".into()))?;
        }
        archive
            .into_inner()
            .and_then(|f| f.sync_all())
            .map_err(io(format!("cannot finish {}", out.display())))
    }
}

/// Mirror the tree at `from` into `to` with hard links (copies where the file
/// system has none). Attachment files are never changed once written, so a
/// link is a snapshot of one. Nothing to do when `from` does not exist.
fn link_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    let entries = match std::fs::read_dir(from) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    private_fs::create_dir(to)?;
    for entry in entries {
        let entry = entry?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type()?.is_dir() {
            link_tree(&src, &dst)?;
        } else {
            private_fs::link_or_copy(&src, &dst)?;
        }
    }
    Ok(())
}

/// What a restore did.
#[derive(Debug)]
pub struct Restored {
    /// Where the replaced database and attachments were moved (when there were any).
    pub replaced: Option<PathBuf>,
    pub instructions: i64,
    /// Its pending instructions, held until the person releases them.
    pub held: u64,
}

/// Put the backup `archive` in place of the database at `db` (no engine may
/// hold it: the caller holds its lock). Refused whole, changing nothing,
/// when the archive is not a backup, holds anything but files and folders
/// (a link would make the attachment route serve whatever it points at), or
/// its database is damaged. What is replaced is kept under a name no other
/// restore can take; everything put in place is owner-only.
pub fn restore(archive: &Path, db: &Path) -> Result<Restored> {
    // Staged in the database's own work folder: the moves into place are renames.
    let parent = super::work_parent(db);
    if let Some(dir) = db.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::paths::private_dir(dir).map_err(io(format!("cannot create {}", dir.display())))?;
    }
    let staging = private_fs::private_dir(&parent)
        .and_then(|()| WorkDir::new_in(&parent))
        .map_err(io(format!("cannot make a work folder in {}", parent.display())))?;
    restore_via(archive, db, staging.path())
}

fn restore_via(archive: &Path, db: &Path, staging: &Path) -> Result<Restored> {
    unpack(archive, staging)?;
    let snapshot = staging.join(DB_ENTRY);
    if !snapshot.is_file() {
        return Err(Error::Invalid(format!(
            "{} is not a local-mcp backup (no {DB_ENTRY} in it)",
            archive.display()
        )));
    }
    let instructions = check(&snapshot).map_err(|why| {
        Error::Invalid(format!(
            "the database in {} cannot be restored: {why}; nothing was changed",
            archive.display()
        ))
    })?;
    let held = hold_pending(&snapshot).map_err(|e| Error::internal("holding the restored pending instructions", e))?;

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
        let aside = new_aside(db)?;
        for p in &present {
            let to = aside.join(p.file_name().unwrap_or_default());
            std::fs::rename(p, &to).map_err(io(format!("cannot move {} aside", p.display())))?;
            if to.is_file() {
                owner_only(&to);
            }
        }
        Some(aside)
    };
    std::fs::rename(&snapshot, db).map_err(io(format!("cannot put the backup at {}", db.display())))?;
    owner_only(db);
    let files = staging.join(FILES_ENTRY);
    if files.is_dir() {
        std::fs::rename(&files, files_now.root()).map_err(io(format!(
            "cannot put the attachments at {}",
            files_now.root().display()
        )))?;
    }
    Ok(Restored {
        replaced,
        instructions,
        held,
    })
}

/// `<database>.replaced-<UTC time>` (then `-2`, `-3`…): a new folder, never
/// one an earlier restore made in the same second.
fn new_aside(db: &Path) -> Result<PathBuf> {
    let stamp = time::OffsetDateTime::now_utc()
        .format(time::macros::format_description!(
            "[year][month][day]T[hour][minute][second]Z"
        ))
        .unwrap_or_else(|_| "before-restore".into());
    for n in 1..1000 {
        let numbered = if n == 1 { String::new() } else { format!("-{n}") };
        let aside = with_suffix(db, &format!(".replaced-{stamp}{numbered}"));
        match private_fs::create_dir(&aside) {
            Ok(()) => return Ok(aside),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(Error::internal(format!("cannot create {}", aside.display()), e)),
        }
    }
    Err(Error::Unavailable(format!(
        "too many restores of {} this second; try again",
        db.display()
    )))
}

/// Make a file we put in place owner-only (best effort: some file systems have no modes).
fn owner_only(path: &Path) {
    if let Err(e) = private_fs::open_no_follow(path).and_then(|f| private_fs::make_private(&f)) {
        tracing::warn!(path = %path.display(), error = %e, "could not make a restored file owner-only");
    }
}

/// Unpack a backup archive into `staging`: only `local_mcp.sqlite3` and the
/// folders and regular files under `attachments/`, each created new and
/// owner-only. A link, a device, an absolute name or a `..` refuses the
/// archive whole (nothing outside `staging` has been touched).
fn unpack(archive: &Path, staging: &Path) -> Result<()> {
    let file = private_fs::open_no_follow(archive)
        .map_err(|e| Error::NotFound(format!("cannot open {}: {e}", archive.display())))?;
    let refuse = |why: String| {
        Error::Invalid(format!(
            "{} is not a local-mcp backup ({why}); nothing was changed",
            archive.display()
        ))
    };
    // A tar's first header says `ustar` at offset 257; anything else (a
    // screenshot given by mistake) is said so, not read as entries whose
    // "names" are its bytes.
    let mut head = [0u8; 512];
    let mut file = file;
    let magic = std::io::Read::read_exact(&mut file, &mut head).is_ok() && head[257..262] == *b"ustar";
    if !magic {
        return Err(refuse("it is not a tar archive, which a backup is".into()));
    }
    std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(0)).map_err(|e| refuse(format!("cannot read it: {e}")))?;
    let mut tar = tar::Archive::new(file);
    let entries = tar.entries().map_err(|e| refuse(format!("not a tar archive: {e}")))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| refuse(format!("not a tar archive: {e}")))?;
        let name = entry
            .path()
            .map_err(|e| refuse(format!("an entry's name is unreadable: {e}")))?
            .into_owned();
        let parts: Option<Vec<&std::ffi::OsStr>> = name
            .components()
            .map(|c| match c {
                std::path::Component::Normal(part) => Some(part),
                std::path::Component::CurDir => None,
                _ => None,
            })
            .collect();
        let parts = match parts {
            Some(parts) if !parts.is_empty() => parts,
            _ => {
                return Err(refuse(format!(
                    "it names {} outside its own folder",
                    name.display().to_string().escape_debug()
                )))
            }
        };
        let top = parts[0].to_string_lossy();
        let kind = entry.header().entry_type();
        let known = (top == DB_ENTRY && parts.len() == 1 && kind.is_file()) || top == FILES_ENTRY;
        if !known {
            return Err(refuse(format!(
                "it holds {}, which no backup has",
                name.display().to_string().escape_debug()
            )));
        }
        let to = parts.iter().fold(staging.to_path_buf(), |p, part| p.join(part));
        if kind.is_dir() {
            private_fs::create_dir_all(&to).map_err(io(format!("cannot create {}", to.display())))?;
        } else if kind.is_file() {
            if let Some(dir) = to.parent() {
                private_fs::create_dir_all(dir).map_err(io(format!("cannot create {}", dir.display())))?;
            }
            let mut out = private_fs::create_new(&to).map_err(|e| {
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    refuse(format!("it holds {} twice", name.display().to_string().escape_debug()))
                } else {
                    Error::internal(format!("cannot write {}", to.display()), e)
                }
            })?;
            std::io::copy(&mut entry, &mut out)
                .and_then(|_| out.sync_all())
                .map_err(|e| refuse(format!("{} is cut off: {e}", name.display().to_string().escape_debug())))?;
        } else {
            return Err(refuse(format!(
                "{} is a {}, and a backup holds only files and folders",
                name.display().to_string().escape_debug(),
                kind_name(kind)
            )));
        }
    }
    Ok(())
}

fn kind_name(kind: tar::EntryType) -> &'static str {
    match kind {
        tar::EntryType::Symlink => "symbolic link",
        tar::EntryType::Link => "hard link",
        tar::EntryType::Char | tar::EntryType::Block => "device",
        tar::EntryType::Fifo => "named pipe",
        _ => "special entry",
    }
}

/// A backup's database, checked as a file from outside (`untrusted`):
/// whole, our schema and nothing else, plain names; its instruction count.
fn check(path: &Path) -> std::result::Result<i64, String> {
    let conn = Connection::open(path).map_err(|e| e.to_string())?;
    super::untrusted::guard(&conn).map_err(|e| e.to_string())?;
    let verdict: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .map_err(|e| e.to_string())?;
    if verdict != "ok" {
        return Err(verdict);
    }
    super::untrusted::same_schema(&conn)?;
    super::untrusted::plain_names(&conn)?;
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

/// Bring the checked database up to this version's schema and hold its
/// pending instructions: a backup may be someone else's, and its
/// instructions go to no agent until the person releases them.
fn hold_pending(path: &Path) -> Result<u64> {
    let mut conn = Connection::open(path)?;
    super::untrusted::guard(&conn)?;
    super::migrations::migrate(&mut conn)?;
    let held = super::Db::new(&conn).hold_all_pending("restore")?;
    // A phone is paired on this machine, never brought in by a file.
    super::Db::new(&conn).forget_all_devices()?;
    conn.close().map_err(|(_, e)| e)?;
    Ok(held)
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    path.with_file_name(name)
}

fn parent_of(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Instruction, InstructionId, QueueName};
    use crate::store::{Durability, NewFile};

    fn add(store: &Store, id: &str, position: i64) {
        let mut item = Instruction::new_pending(
            id.into(),
            QueueName::default_queue(),
            None,
            position,
            crate::model::Timestamp::now(),
        );
        item.id = InstructionId::new(id).unwrap();
        store
            .write(Durability::Full, |db| db.insert_instruction(&item), |_| ())
            .unwrap();
    }

    #[test]
    fn a_snapshot_is_of_its_moment_while_the_engine_writes_on() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("q.sqlite3")).unwrap();
        add(&store, "before", 1);
        let file = NewFile {
            name: "shot.png".into(),
            bytes: b"the bytes",
        };
        store.files().write("before", &[file]).unwrap();

        let snapshot = store.snapshot().unwrap();
        // The engine is not held up: a write commits, and a delete takes its
        // files, while the snapshot is open.
        add(&store, "after", 2);
        store.files().remove_all("before");
        let archive = dir.path().join("backup.tar");
        snapshot.archive_to(&archive).unwrap();

        let elsewhere = dir.path().join("restored").join("q.sqlite3");
        std::fs::create_dir(elsewhere.parent().unwrap()).unwrap();
        let restored = restore(&archive, &elsewhere).unwrap();
        assert_eq!(restored.instructions, 1, "the write after the snapshot is not in it");
        let back = Store::open(&elsewhere).unwrap();
        let ids: Vec<InstructionId> = back
            .read(|db| db.list(&crate::model::Listing::default()))
            .unwrap()
            .into_iter()
            .map(|i| i.id)
            .collect();
        assert_eq!(ids, ["before"]);
        assert_eq!(
            back.files().read("before", "shot.png").unwrap(),
            b"the bytes",
            "the file its row names survived the delete"
        );
        // The work folder beside the database is gone.
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with(".local-mcp-"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    /// A backup carries the paired phones (hashes only); a restore brings
    /// none back: a device is paired on this machine, never let in by a file.
    #[test]
    fn a_restore_brings_no_paired_phone_along() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("q.sqlite3")).unwrap();
        add(&store, "kept", 1);
        let device = crate::model::Device {
            id: "d1".into(),
            name: "someone's phone".into(),
            created_at: crate::model::Timestamp::now(),
            last_seen_at: None,
            last_address: None,
        };
        store
            .write(
                Durability::Full,
                |db| db.insert_device(&device, &"ab".repeat(32)),
                |_| (),
            )
            .unwrap();
        let archive = dir.path().join("backup.tar");
        store.backup_to(&archive).unwrap();
        let elsewhere = dir.path().join("restored").join("q.sqlite3");
        std::fs::create_dir(elsewhere.parent().unwrap()).unwrap();
        restore(&archive, &elsewhere).unwrap();
        let back = Store::open(&elsewhere).unwrap();
        assert_eq!(
            back.read(|db| db.list(&crate::model::Listing::default()))
                .unwrap()
                .len(),
            1
        );
        assert!(back.read(|db| db.devices()).unwrap().is_empty(), "no device came back");
        assert!(back.read(|db| db.device_credentials()).unwrap().is_empty());
        assert_eq!(store.read(|db| db.devices()).unwrap().len(), 1, "the backup held it");
    }

    #[test]
    fn an_in_memory_database_has_no_backup() {
        let store = Store::open_in_memory().unwrap();
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            store.backup_to(&dir.path().join("b.tar")),
            Err(Error::Invalid(_))
        ));
    }
}
