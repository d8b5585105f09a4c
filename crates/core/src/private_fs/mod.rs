//! The one way local-mcp creates files and folders: owner-only from the
//! first byte, never through a link, never at a name someone else chose.
//!
//! Another account of the machine may be able to write into a folder we
//! write into (a shared project folder, the system temp folder) and plant a
//! link or a file at a name we are about to use. So, here and only here
//! (`engine/tests/it/layers.rs` fails on `File::create`, `fs::write`,
//! `fs::copy` or `OpenOptions` anywhere else in the sources):
//!
//! - a new file is created with `O_CREAT | O_EXCL` (which never follows a
//!   link at that name, dangling or not) and `O_NOFOLLOW`, mode 0600; a new
//!   folder is 0700;
//! - temporary names are random (never a pid or a time another account can
//!   predict), and temporary and work files live in a private folder of ours
//!   ([`WorkDir`]), never loose in a shared folder;
//! - permissions are set on the open descriptor, never on a path opened again;
//! - a folder another account can write into is named before we write there
//!   ([`shared_writer`]), so a caller can refuse it.
//!
//! How each rule is kept differs by platform: one file each (`unix.rs`:
//! modes, `O_NOFOLLOW`, owner uids; `windows.rs`: a user's own folders are
//! private by their inherited ACLs, and the platform says what it does not
//! check), this file holding what is the same everywhere.
//!
//! This module depends on nothing else in the crate.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

#[cfg(unix)]
#[path = "unix.rs"]
mod platform;
#[cfg(windows)]
#[path = "windows.rs"]
mod platform;

fn options() -> std::fs::OpenOptions {
    platform::new_file_options()
}

/// Create `path`, which must not exist (not even as a link), owner-only, for writing.
pub fn create_new(path: &Path) -> io::Result<File> {
    let file = options().write(true).create_new(true).open(path)?;
    platform::new_file(&file)?;
    Ok(file)
}

/// Open `path` for reading and writing, creating it owner-only if it is
/// missing; a link at that name is refused, and so is a file another
/// account owns (for files of ours that persist, such as a lock file).
pub fn open_or_create(path: &Path) -> io::Result<File> {
    let file = options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    check_ours(&file, path)?;
    platform::new_file(&file)?;
    Ok(file)
}

/// Open an existing file for appending, refusing a link at that name.
pub fn open_append(path: &Path) -> io::Result<File> {
    options().append(true).open(path)
}

/// Open a file for reading without following a link at its name (a file in
/// a folder another account could write into).
pub fn open_no_follow(path: &Path) -> io::Result<File> {
    let file = options().read(true).open(path)?;
    platform::refuse_link(&file, path)?;
    Ok(file)
}

/// Whether `part` is one plain name: no separator, not `.` or `..`, no NUL.
/// What a row or an archive names is joined onto a folder of ours only
/// after this (a restored row once named `../../victim`).
pub fn plain_component(part: &str) -> io::Result<()> {
    let plain = !part.is_empty()
        && part != "."
        && part != ".."
        && !part.contains(['/', '\\', '\0'])
        && std::path::Path::new(part).components().count() == 1
        && matches!(
            std::path::Path::new(part).components().next(),
            Some(std::path::Component::Normal(_))
        );
    if plain {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{part:?} is not a plain file name"),
        ))
    }
}

/// Open `root/dir/name` for reading: `dir` and `name` each one plain name
/// ([`plain_component`]), neither followed if it is a link (on Windows: a
/// link or junction), and only a regular file — a FIFO there is not waited
/// on. For the files our rows name: a row restored from a backup, or left
/// by another program, reaches nothing outside `root`.
pub fn open_beneath(root: &Path, dir: &str, name: &str) -> io::Result<File> {
    plain_component(dir)?;
    plain_component(name)?;
    let file = platform::open_beneath(root, dir, name)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::other(format!(
            "{} is not a regular file",
            root.join(dir).join(name).display()
        )));
    }
    Ok(file)
}

/// Read a file another account may control (a project's client config):
/// through a link (a person's dotfiles often are links), but never opening
/// a FIFO or a device at that name — it must be a regular file, and is
/// opened without blocking and without becoming a controlling terminal —
/// and at most `limit` bytes. A blocking read of a
/// FIFO named `.mcp.json` in a shared folder once held a thread of the
/// blocking pool for good, for every request that asked.
pub fn read_regular(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    // Anything but a regular file is refused before it is opened: opening a
    // device has effects of its own (a terminal, a watchdog). The open
    // checks again, for a name changed in between.
    if !std::fs::metadata(path)?.is_file() {
        return Err(io::Error::other(format!("{} is not a regular file", path.display())));
    }
    let file = platform::nonblocking_read_options().open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::other(format!("{} is not a regular file", path.display())));
    }
    if meta.len() > limit {
        return Err(io::Error::other(format!(
            "{} is larger than {limit} bytes",
            path.display()
        )));
    }
    let mut bytes = Vec::new();
    io::Read::read_to_end(&mut io::Read::take(file, limit), &mut bytes)?;
    Ok(bytes)
}

/// Read a small file of ours: not through a link, never waiting on a FIFO
/// or a device at that name, only a regular file this account owns, and at
/// most `limit` bytes (a state file another program could have swapped).
pub fn read_ours(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let file = platform::read_ours_options().read(true).open(path)?;
    check_ours(&file, path)?;
    let mut bytes = Vec::new();
    io::Read::read_to_end(&mut io::Read::take(file, limit), &mut bytes)?;
    Ok(bytes)
}

/// A regular file that we own, or an error naming why not.
fn check_ours(file: &File, path: &Path) -> io::Result<()> {
    platform::refuse_link(file, path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::other(format!("{} is not a regular file", path.display())));
    }
    match platform::other_owner(&meta) {
        Some(owner) => Err(io::Error::other(format!(
            "{} belongs to another account ({owner})",
            path.display()
        ))),
        None => Ok(()),
    }
}

/// Create `dir` and its missing parents, each new one owner-only. A folder
/// that already exists keeps its permissions (the person's own folders are
/// theirs to set); `dir` itself must be a real folder, not a link to one.
pub fn create_dir_all(dir: &Path) -> io::Result<()> {
    platform::new_dir_builder().recursive(true).create(dir)?;
    let meta = std::fs::symlink_metadata(dir)?;
    if !meta.is_dir() {
        return Err(io::Error::other(format!("{} is not a folder", dir.display())));
    }
    Ok(())
}

/// Create one new folder, owner-only; an error if anything (a link
/// included) is already at that name.
pub fn create_dir(dir: &Path) -> io::Result<()> {
    platform::new_dir_builder().create(dir)?;
    platform::new_dir(dir)
}

/// Like [`create_dir_all`], and `dir` itself made owner-only if it is ours
/// and is not yet: a folder that holds only local-mcp's own files (the
/// database's, the configuration's, the logs').
pub fn private_dir(dir: &Path) -> io::Result<()> {
    create_dir_all(dir)?;
    let meta = std::fs::symlink_metadata(dir)?;
    if let Some(owner) = platform::other_owner(&meta) {
        return Err(io::Error::other(format!(
            "{} belongs to another account ({owner}); local-mcp keeps its files only in folders of its own account",
            dir.display()
        )));
    }
    platform::make_dir_private(dir, &meta)
}

/// Make a file we own owner-only, through its open descriptor.
pub fn make_private(file: &File) -> io::Result<()> {
    platform::make_file_private(file)
}

/// Make every file directly in `dir` (one of our own folders) owner-only.
pub fn make_files_private(dir: &Path) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            make_private(&open_no_follow(&entry.path())?)?;
        }
    }
    Ok(())
}

/// Files and folders this process creates by other means than this module
/// (a library's, SQLite's) are owner-only too: the process's umask (Unix).
pub fn restrict_umask() {
    platform::restrict_umask()
}

/// A new, empty file under a random name in `dir`, owner-only (`tempfile`
/// creates it with `O_EXCL` and mode 0600); removed when dropped unless persisted.
pub fn temp_file_in(dir: &Path, prefix: &str) -> io::Result<tempfile::NamedTempFile> {
    tempfile::Builder::new().prefix(prefix).suffix(".tmp").tempfile_in(dir)
}

/// An unnamed file in `dir` (a folder of ours) for scratch data, such as a
/// child's early output: no name anybody could open or plant; gone when the
/// last handle closes.
pub fn anonymous_in(dir: &Path) -> io::Result<File> {
    tempfile::tempfile_in(dir)
}

/// How [`replace`] sets the permissions of the file it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Owner-only, whatever the file had.
    Private,
    /// What the file it replaces had (a person's config file keeps its
    /// mode); owner-only for a new file.
    KeepExisting,
    /// What the file it replaces had; a new one readable by others but
    /// written by its owner only (0644): a project's config file that holds
    /// nothing secret, which a team shares.
    KeepOrShared,
}

/// Replace `path` with `bytes` atomically: a random temporary name in the
/// same folder, written, permissions set on the descriptor, fsynced, renamed
/// over `path`, and the folder fsynced. A reader never sees half a file.
pub fn replace(path: &Path, bytes: &[u8], mode: Mode) -> io::Result<()> {
    let dir = parent_of(path);
    let existing = match mode {
        Mode::KeepExisting => std::fs::metadata(path).ok().map(|m| m.permissions()),
        Mode::KeepOrShared => std::fs::metadata(path)
            .ok()
            .map(|m| m.permissions())
            .or_else(platform::shared_file_permissions),
        Mode::Private => None,
    };
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let mut tmp = temp_file_in(dir, &format!(".{name}.local-mcp-"))?;
    match existing {
        // Before its first byte (its folder's own ACL may let others read, on Windows).
        None if mode != Mode::KeepOrShared => platform::make_file_private(tmp.as_file())?,
        _ => {}
    }
    tmp.write_all(bytes)?;
    if let Some(permissions) = existing {
        tmp.as_file().set_permissions(permissions)?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    sync_dir(dir);
    Ok(())
}

/// Copy `from` to `to`, which must not exist; owner-only; fsynced.
pub fn copy_new(from: &Path, to: &Path) -> io::Result<u64> {
    let mut src = platform::read_ours_options().read(true).open(from)?;
    if !src.metadata()?.is_file() {
        return Err(io::Error::other(format!("{} is not a regular file", from.display())));
    }
    let mut dst = create_new(to)?;
    let copied = io::copy(&mut src, &mut dst).and_then(|n| dst.sync_all().map(|()| n));
    if copied.is_err() {
        let _ = std::fs::remove_file(to);
    }
    copied
}

/// Hard-link `from` at `to` (which must not exist), or copy it where the
/// file system has no links. For files that never change once written.
pub fn link_or_copy(from: &Path, to: &Path) -> io::Result<()> {
    match std::fs::hard_link(from, to) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(e),
        Err(_) => copy_new(from, to).map(|_| ()),
    }
}

/// The rename of a file reaches the disk with its folder's entry (Unix; a
/// no-op on Windows, where a rename is durable on its own and folders cannot
/// be opened). Best effort: see [`sync_dir_checked`].
pub fn sync_dir(dir: &Path) {
    let _ = platform::sync_dir(dir);
}

/// [`sync_dir`], for a caller that must know it failed.
pub fn sync_dir_checked(dir: &Path) -> io::Result<()> {
    platform::sync_dir(dir)
}

fn parent_of(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// A private folder of ours for temporary files (an archive being built, an
/// upload being checked): a random name, 0700, inside `parent` (which must
/// exist; its permissions are the caller's business), removed with
/// everything in it when dropped.
#[derive(Debug)]
pub struct WorkDir(tempfile::TempDir);

impl WorkDir {
    pub fn new_in(parent: &Path) -> io::Result<WorkDir> {
        let mut builder = tempfile::Builder::new();
        builder.prefix("work-");
        platform::private_temp_dir(&mut builder);
        builder.tempdir_in(parent).map(WorkDir)
    }

    /// A work folder in the system's temp folder, for what has no folder
    /// of its own (an in-memory database in tests): random name, 0700.
    pub fn temporary() -> io::Result<WorkDir> {
        let mut builder = tempfile::Builder::new();
        builder.prefix("local-mcp-");
        platform::private_temp_dir(&mut builder);
        builder.tempdir().map(WorkDir)
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }

    /// A path for a new file in this folder (nobody else can enter it).
    pub fn join(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }
}

/// Remove what crashed runs left in a work folder's parent (best effort).
pub fn sweep_work(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let removed = match entry.file_type() {
            Ok(t) if t.is_dir() => std::fs::remove_dir_all(&path),
            _ => std::fs::remove_file(&path),
        };
        if let Err(e) = removed {
            tracing::debug!(path = %path.display(), error = %e, "could not remove a leftover work file");
        }
    }
}

/// Who besides us can write into `dir`, if anyone: another account that owns
/// it, or every account / a group through its mode (a sticky folder such as
/// /tmp included: others cannot replace our files there, but they can plant
/// names we would use). `None` when only we (and root) can.
pub fn shared_writer(dir: &Path) -> Option<String> {
    platform::shared_writer(dir)
}

/// Who besides us can change the file at `path` (it exists): another
/// account that owns it, or one its mode or ACL lets write it.
pub fn shared_file(path: &Path) -> Option<String> {
    platform::shared_file(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replace_is_whole_and_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a").join("secret");
        private_dir(path.parent().unwrap()).unwrap();
        replace(&path, b"one", Mode::Private).unwrap();
        replace(&path, b"two", Mode::Private).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(
            std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
            1,
            "no temp file left"
        );
    }
}
