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
//! This module depends on nothing else in the crate.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Owner read and write: the mode of every file we create.
#[cfg(unix)]
const FILE_MODE: u32 = 0o600;
/// Owner only: the mode of every folder we create.
#[cfg(unix)]
const DIR_MODE: u32 = 0o700;

fn options() -> std::fs::OpenOptions {
    let mut options = std::fs::OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(FILE_MODE).custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    }
    options
}

/// Create `path`, which must not exist (not even as a link), owner-only, for writing.
pub fn create_new(path: &Path) -> io::Result<File> {
    options().write(true).create_new(true).open(path)
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
    Ok(file)
}

/// Open an existing file for appending, refusing a link at that name.
pub fn open_append(path: &Path) -> io::Result<File> {
    options().append(true).open(path)
}

/// Open a file for reading without following a link at its name (a file in
/// a folder another account could write into).
pub fn open_no_follow(path: &Path) -> io::Result<File> {
    options().read(true).open(path)
}

/// Read a small file of ours: not through a link, never waiting on a FIFO
/// or a device at that name, only a regular file this account owns, and at
/// most `limit` bytes (a state file another program could have swapped).
pub fn read_ours(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let mut options = options();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    check_ours(&file, path)?;
    let mut bytes = Vec::new();
    io::Read::read_to_end(&mut io::Read::take(file, limit), &mut bytes)?;
    Ok(bytes)
}

/// A regular file that we own, or an error naming why not.
fn check_ours(file: &File, path: &Path) -> io::Result<()> {
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::other(format!("{} is not a regular file", path.display())));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        if meta.uid() != me {
            return Err(io::Error::other(format!(
                "{} belongs to another account (uid {})",
                path.display(),
                meta.uid()
            )));
        }
    }
    Ok(())
}

/// Create `dir` and its missing parents, each new one owner-only. A folder
/// that already exists keeps its permissions (the person's own folders are
/// theirs to set); `dir` itself must be a real folder, not a link to one.
pub fn create_dir_all(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(DIR_MODE);
    }
    builder.create(dir)?;
    let meta = std::fs::symlink_metadata(dir)?;
    if !meta.is_dir() {
        return Err(io::Error::other(format!("{} is not a folder", dir.display())));
    }
    Ok(())
}

/// Create one new folder, owner-only; an error if anything (a link
/// included) is already at that name.
pub fn create_dir(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(DIR_MODE);
    }
    builder.create(dir)
}

/// Like [`create_dir_all`], and `dir` itself made owner-only if it is ours
/// and is not yet: a folder that holds only local-mcp's own files (the
/// database's, the configuration's, the logs').
pub fn private_dir(dir: &Path) -> io::Result<()> {
    create_dir_all(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let meta = std::fs::symlink_metadata(dir)?;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        if meta.uid() != me {
            return Err(io::Error::other(format!(
                "{} belongs to another account (uid {}); local-mcp keeps its files only in folders of its own account",
                dir.display(),
                meta.uid()
            )));
        }
        if meta.mode() & 0o077 != 0 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(DIR_MODE))?;
        }
    }
    Ok(())
}

/// Make a file we own owner-only, through its open descriptor.
pub fn make_private(file: &File) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(FILE_MODE))
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        Ok(())
    }
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
    #[cfg(unix)]
    // SAFETY: umask only sets the process's file-creation mask; it cannot fail.
    unsafe {
        libc::umask(0o077);
    }
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
}

/// Replace `path` with `bytes` atomically: a random temporary name in the
/// same folder, written, permissions set on the descriptor, fsynced, renamed
/// over `path`, and the folder fsynced. A reader never sees half a file.
pub fn replace(path: &Path, bytes: &[u8], mode: Mode) -> io::Result<()> {
    let dir = parent_of(path);
    let existing = match mode {
        Mode::KeepExisting => std::fs::metadata(path).ok().map(|m| m.permissions()),
        Mode::Private => None,
    };
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let mut tmp = temp_file_in(dir, &format!(".{name}.local-mcp-"))?;
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
    let mut src = open_no_follow(from)?;
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
/// no-op elsewhere, where folders cannot be opened).
pub fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
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
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(DIR_MODE));
        }
        builder.tempdir_in(parent).map(WorkDir)
    }

    /// A work folder in the system's temp folder, for what has no folder
    /// of its own (an in-memory database in tests): random name, 0700.
    pub fn temporary() -> io::Result<WorkDir> {
        let mut builder = tempfile::Builder::new();
        builder.prefix("local-mcp-");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(DIR_MODE));
        }
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
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(dir).ok()?;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        if meta.uid() != me && meta.uid() != 0 {
            return Some(format!("it belongs to another account (uid {})", meta.uid()));
        }
        let mode = meta.mode();
        if mode & 0o002 != 0 {
            return Some(format!("every account can write into it (mode {:o})", mode & 0o7777));
        }
        if mode & 0o020 != 0 && meta.gid() != unsafe { libc::getegid() } {
            return Some(format!(
                "the group {} can write into it (mode {:o})",
                meta.gid(),
                mode & 0o7777
            ));
        }
        None
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn replace_is_whole_owner_only_and_leaves_nothing_behind() {
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
        #[cfg(unix)]
        {
            assert_eq!(mode(&path), 0o600);
            assert_eq!(mode(path.parent().unwrap()), 0o700, "a folder we create is owner-only");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_link_planted_at_a_name_is_never_followed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).unwrap();
        let planted = dir.path().join("planted");
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        assert!(create_new(&planted).is_err(), "create_new through a link");
        assert!(open_or_create(&planted).is_err(), "open_or_create through a link");
        assert!(open_append(&planted).is_err(), "append through a link");
        assert!(open_no_follow(&planted).is_err(), "read through a link");
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
        assert!(create_new(&dangling).is_err(), "a dangling link creates its target");
        assert!(!dir.path().join("nowhere").exists());
        assert!(copy_new(&victim, &planted).is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert_eq!(mode(&victim), 0o600);
    }

    #[cfg(unix)]
    #[test]
    fn replacing_keeps_a_persons_mode_or_makes_it_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, "{}").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        replace(&path, b"{ }", Mode::KeepExisting).unwrap();
        assert_eq!(mode(&path), 0o640);
        replace(&path, b"{}", Mode::Private).unwrap();
        assert_eq!(mode(&path), 0o600);
        let new = dir.path().join("new.json");
        replace(&new, b"{}", Mode::KeepExisting).unwrap();
        assert_eq!(mode(&new), 0o600, "a new file is owner-only");
    }

    #[cfg(unix)]
    #[test]
    fn work_folders_are_private_and_go_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let parent = dir.path().join("work");
        private_dir(&parent).unwrap();
        let work = WorkDir::new_in(&parent).unwrap();
        assert_eq!(mode(&parent), 0o700);
        assert_eq!(mode(work.path()), 0o700);
        create_new(&work.join("x")).unwrap();
        let path = work.path().to_path_buf();
        drop(work);
        assert!(!path.exists());
        let mut named = temp_file_in(&parent, "t").unwrap();
        named.write_all(b"x").unwrap();
        assert_eq!(mode(named.path()), 0o600);
    }

    #[cfg(unix)]
    #[test]
    fn shared_folders_are_named() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(shared_writer(dir.path()), None);
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
        assert!(shared_writer(dir.path()).unwrap().contains("every account"));
        assert!(shared_writer(Path::new("/tmp")).is_some());
    }
}
