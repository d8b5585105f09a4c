//! Faults of the disk or the file, in the person's terms, and the one the
//! store repairs by itself.
//!
//! A full disk, a read-only or vanished file, or another program holding the
//! database locked are not bugs: they come from outside, clear by themselves
//! (or by the person's hand), and each needs its own words — which file,
//! what happened, what to do — instead of "database error; see the log".
//! `classify` turns SQLite's and the OS's codes into `Error::NoSpace` (HTTP
//! 507) or `Error::Unavailable` (503); anything else passes unchanged.
//!
//! One fault is repaired here: the database's folder removed while the app
//! runs (a clean-up script, a mistaken `rm -r`). On Unix the open file lives
//! on unlinked, so every write would "succeed" into a file nobody can reach
//! again and vanish at the next start. Before each write the store looks for
//! its file; if it is gone, `restore` writes the open database back to its
//! path with `VACUUM INTO` (a consistent snapshot, WAL included) and reopens
//! it there. Attachment files removed with the folder cannot be brought back;
//! their rows stay and their downloads answer 404.

use std::io::ErrorKind;
use std::path::Path;

use rusqlite::{Connection, ErrorCode};

use crate::{paths, Error, Result};

/// SQLite's extended code for a write to a database file that was moved or
/// deleted while open (`SQLITE_READONLY_DBMOVED`).
const READONLY_DBMOVED: std::os::raw::c_int = 1032;

/// A fault as the store remembers it: its words, and whether it is a full disk.
#[derive(Debug, Clone)]
pub(super) struct Fault {
    pub text: String,
    pub no_space: bool,
}

impl Fault {
    pub fn of(e: &Error) -> Fault {
        Fault {
            text: e.to_string(),
            no_space: matches!(e, Error::NoSpace(_)),
        }
    }
}

/// Whether the disk holding `db` takes new blocks: a scratch file of 256 KiB
/// (an instruction's worth, with room to spare) written, synced and dropped
/// in its folder. Unknown (an in-memory database): yes.
pub(super) fn has_room(db: Option<&Path>) -> bool {
    let Some(dir) = db.and_then(Path::parent) else {
        return true;
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let tried = crate::private_fs::anonymous_in(dir).and_then(|mut scratch| {
        use std::io::Write as _;
        scratch.write_all(&vec![0u8; 256 * 1024])?;
        scratch.sync_all()
    });
    tried.is_ok()
}

/// The fault `e` is, said for `path`, or `None` when it is not a storage fault.
pub(super) fn classify(path: Option<&Path>, e: &Error) -> Option<Error> {
    let Error::Internal { source, .. } = e else {
        return None;
    };
    let path = path.map_or_else(|| "the database".to_owned(), |p| p.display().to_string());
    if let Some(rusqlite::Error::SqliteFailure(f, _)) = source.downcast_ref::<rusqlite::Error>() {
        return Some(match f.code {
            ErrorCode::DiskFull => no_space(&path),
            ErrorCode::ReadOnly if f.extended_code == READONLY_DBMOVED => Error::Unavailable(format!(
                "the database {path} was moved or replaced while local-mcp had it open: put it back, or restart local-mcp"
            )),
            ErrorCode::ReadOnly => read_only(&path),
            ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => Error::Unavailable(format!(
                "the database {path} is locked by another program (a backup tool, a database browser?): close it; local-mcp carries on by itself"
            )),
            ErrorCode::CannotOpen | ErrorCode::SystemIoFailure | ErrorCode::NotFound | ErrorCode::PermissionDenied => {
                unreachable_file(&path)
            }
            _ => return None,
        });
    }
    // Attachment files are written with plain file I/O.
    let io = source.downcast_ref::<std::io::Error>()?;
    Some(match io.kind() {
        ErrorKind::StorageFull | ErrorKind::QuotaExceeded => no_space(&path),
        ErrorKind::ReadOnlyFilesystem | ErrorKind::PermissionDenied => read_only(&path),
        ErrorKind::NotFound => unreachable_file(&path),
        _ => return None,
    })
}

fn no_space(path: &str) -> Error {
    Error::NoSpace(format!(
        "the disk holding {path} is full: free some space; nothing already queued is lost, and local-mcp carries on by itself once there is room"
    ))
}

fn read_only(path: &str) -> Error {
    Error::Unavailable(format!(
        "local-mcp cannot write its database {path} (the file or its disk is read-only): check their permissions; local-mcp carries on by itself once it can write"
    ))
}

fn unreachable_file(path: &str) -> Error {
    Error::Unavailable(format!(
        "local-mcp cannot reach its database {path} (was its folder removed, or its disk unplugged?): put it back, or restart local-mcp"
    ))
}

/// Whether the database file is missing from its path (its folder removed
/// while the app runs). A file that cannot be looked at for another reason
/// is left to SQLite to report.
pub(super) fn is_gone(path: &Path) -> bool {
    matches!(std::fs::symlink_metadata(path), Err(e) if e.kind() == ErrorKind::NotFound)
}

/// Write the open database back to `path` and return a connection to it.
/// `prepare` applies the connection's settings (busy timeout, WAL, pragmas).
pub(super) fn restore(
    conn: &Connection,
    path: &Path,
    prepare: impl FnOnce(&mut Connection) -> Result<()>,
) -> Result<Connection> {
    let classify_io = |e: std::io::Error| {
        classify(Some(path), &Error::internal("restoring the database folder", e))
            .unwrap_or_else(|| unreachable_file(&path.display().to_string()))
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        paths::private_dir(dir).map_err(classify_io)?;
    }
    let target = path
        .to_str()
        .ok_or_else(|| unreachable_file(&path.display().to_string()))?;
    conn.execute("VACUUM INTO ?1", [target]).map_err(|e| {
        // A half-written copy must not be mistaken for the database at the next start.
        let _ = std::fs::remove_file(path);
        let e = Error::from(e);
        classify(Some(path), &e).unwrap_or(e)
    })?;
    if let Err(e) = crate::private_fs::open_no_follow(path).and_then(|f| crate::private_fs::make_private(&f)) {
        tracing::warn!(path = %path.display(), error = %e, "could not make the restored database owner-only");
    }
    let mut fresh = Connection::open(path).map_err(|e| {
        let e = Error::from(e);
        classify(Some(path), &e).unwrap_or(e)
    })?;
    prepare(&mut fresh)?;
    tracing::warn!(
        path = %path.display(),
        "the database file was removed while local-mcp ran; it was written back from the open copy (attachment files removed with it are gone)"
    );
    Ok(fresh)
}
