//! The rules of `private_fs` on Unix: files 0600 and folders 0700 from
//! their creation, `O_NOFOLLOW` on every open, ownership by uid, and a
//! folder's mode saying who else may write into it.

use std::fs::{DirBuilder, File, Metadata, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Owner read and write: the mode of every file we create.
const FILE_MODE: u32 = 0o600;
/// Owner only: the mode of every folder we create.
const DIR_MODE: u32 = 0o700;

fn me() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Options for a file we create or open: 0600 if created, never through a link.
pub fn new_file_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options
        .mode(FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NOCTTY);
    options
}

/// Options for reading a state file: as above, and never waiting on a FIFO.
pub fn read_ours_options() -> OpenOptions {
    let mut options = new_file_options();
    options.custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY);
    options
}

/// `root/dir/name`, each step opened from the one before with `openat`, a
/// link at `dir` or `name` refused (`O_NOFOLLOW`), never waiting on a FIFO.
/// `root` itself is the person's own layout: a link there is followed.
pub fn open_beneath(root: &Path, dir: &str, name: &str) -> io::Result<File> {
    let root = File::open(root)?;
    let dir = open_at(
        &root,
        dir,
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
    )?;
    let file = open_at(
        &dir,
        name,
        libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY,
    )?;
    Ok(file)
}

fn open_at(dir: &File, name: &str, flags: libc::c_int) -> io::Result<File> {
    use std::os::fd::{AsRawFd, FromRawFd};
    let name = std::ffi::CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `dir` is an open descriptor for the call's duration and `name`
    // a NUL-terminated string; a descriptor returned is ours to own.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and nothing else owns it.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// Options for reading a file that may be a link: never waiting on a FIFO.
pub fn nonblocking_read_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    // O_NOCTTY: a terminal at that name would otherwise become a server
    // started with `setsid` (a login service) its controlling terminal, and
    // its hang-up would kill the server.
    options
        .read(true)
        .custom_flags(libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY);
    options
}

/// A file others may read and only its owner write (0644).
pub fn shared_file_permissions() -> Option<Permissions> {
    Some(Permissions::from_mode(0o644))
}

/// Who owns this, when it is not us.
pub fn other_owner(meta: &Metadata) -> Option<String> {
    (meta.uid() != me()).then(|| format!("uid {}", meta.uid()))
}

pub fn new_dir_builder() -> DirBuilder {
    let mut builder = DirBuilder::new();
    builder.mode(DIR_MODE);
    builder
}

/// A folder of ours that others may read or enter becomes 0700.
pub fn make_dir_private(dir: &Path, meta: &Metadata) -> io::Result<()> {
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, Permissions::from_mode(DIR_MODE))?;
    }
    Ok(())
}

pub fn make_file_private(file: &File) -> io::Result<()> {
    file.set_permissions(Permissions::from_mode(FILE_MODE))
}

/// A new file is 0600 from its creation (`new_file_options`): nothing to do.
pub fn new_file(_: &File) -> io::Result<()> {
    Ok(())
}

/// A new folder is 0700 from its creation (`new_dir_builder`).
pub fn new_dir(_: &Path) -> io::Result<()> {
    Ok(())
}

/// `O_NOFOLLOW` already refused a link at the name.
pub fn refuse_link(_: &File, _: &Path) -> io::Result<()> {
    Ok(())
}

pub fn restrict_umask() {
    // SAFETY: umask only sets the process's file-creation mask; it cannot fail.
    unsafe {
        libc::umask(0o077);
    }
}

pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

pub fn private_temp_dir(builder: &mut tempfile::Builder<'_, '_>) {
    builder.permissions(Permissions::from_mode(DIR_MODE));
}

pub fn shared_writer(dir: &Path) -> Option<String> {
    let meta = std::fs::metadata(dir).ok()?;
    if meta.uid() != me() && meta.uid() != 0 {
        return Some(format!("it belongs to another account (uid {})", meta.uid()));
    }
    if let Some(why) = acl_writer(dir) {
        return Some(why);
    }
    let mode = meta.mode();
    if mode & 0o002 != 0 {
        return Some(format!("every account can write into it (mode {:o})", mode & 0o7777));
    }
    // SAFETY: getegid has no preconditions and cannot fail.
    if mode & 0o020 != 0 && meta.gid() != unsafe { libc::getegid() } {
        return Some(format!(
            "the group {} can write into it (mode {:o})",
            meta.gid(),
            mode & 0o7777
        ));
    }
    None
}

/// Who besides the owner a POSIX ACL lets write `path` (Linux keeps it in
/// the `system.posix_acl_access` attribute): a named user or a group with
/// write in its entry and in the mask. The mode's group bits then show the
/// mask, so a folder shared with one other account through an ACL looks like
/// 0775 of the owner's own group.
#[cfg(target_os = "linux")]
fn acl_writer(path: &Path) -> Option<String> {
    let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).ok()?;
    let attribute = c"system.posix_acl_access";
    let mut buf = vec![0u8; 4096];
    // SAFETY: NUL-terminated names, and a buffer of the length given.
    let n = unsafe { libc::getxattr(name.as_ptr(), attribute.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    let n = usize::try_from(n).ok()?;
    acl_writer_in(&buf[..n], me())
}

#[cfg(not(target_os = "linux"))]
fn acl_writer(_: &Path) -> Option<String> {
    None
}

/// [`acl_writer`] on the attribute's bytes: a version (2), then entries of
/// tag (u16), permissions (u16) and id (u32), little-endian.
#[cfg(target_os = "linux")]
fn acl_writer_in(bytes: &[u8], me: u32) -> Option<String> {
    const USER: u16 = 0x02;
    const GROUP: u16 = 0x08;
    const MASK: u16 = 0x10;
    const WRITE: u16 = 0x02;
    let entries: Vec<(u16, u16, u32)> = bytes
        .get(4..)?
        .chunks_exact(8)
        .map(|e| {
            (
                u16::from_le_bytes([e[0], e[1]]),
                u16::from_le_bytes([e[2], e[3]]),
                u32::from_le_bytes([e[4], e[5], e[6], e[7]]),
            )
        })
        .collect();
    let mask_writes = entries.iter().find(|e| e.0 == MASK).is_none_or(|e| e.1 & WRITE != 0);
    if !mask_writes {
        return None;
    }
    entries.iter().find_map(|&(tag, perm, id)| match tag {
        USER if perm & WRITE != 0 && id != me => Some(format!("its ACL lets uid {id} write into it")),
        GROUP if perm & WRITE != 0 => Some(format!("its ACL lets the group {id} write into it")),
        _ => None,
    })
}

/// Why another account could change the file at `path`, if it could: it
/// owns the file, or the file's mode or ACL lets others write it.
pub fn shared_file(path: &Path) -> Option<String> {
    // The file itself, through a link (a link's own mode is always 0777).
    let meta = std::fs::metadata(path).ok()?;
    if meta.uid() != me() {
        return Some(format!("it belongs to another account (uid {})", meta.uid()));
    }
    if meta.mode() & 0o002 != 0 {
        return Some(format!("every account can write it (mode {:o})", meta.mode() & 0o7777));
    }
    acl_writer(path)
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn what_we_create_is_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a").join("secret");
        private_dir(path.parent().unwrap()).unwrap();
        replace(&path, b"one", Mode::Private).unwrap();
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700, "a folder we create is owner-only");
    }

    #[test]
    fn a_link_planted_at_a_name_is_never_followed() {
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

    #[test]
    fn replacing_keeps_a_persons_mode_or_makes_it_private() {
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

    #[test]
    fn work_folders_are_private_and_go_when_dropped() {
        use std::io::Write as _;
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

    #[test]
    fn a_folder_of_ours_is_made_private_and_one_of_another_account_refused() {
        let dir = tempfile::tempdir().unwrap();
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        private_dir(&open).unwrap();
        assert_eq!(mode(&open), 0o700);
        // Root owns /; any other account is refused a folder it does not own.
        if super::me() != 0 {
            assert!(private_dir(Path::new("/"))
                .unwrap_err()
                .to_string()
                .contains("another account"));
        }
    }

    #[test]
    fn shared_folders_are_named() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(shared_writer(dir.path()), None);
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
        assert!(shared_writer(dir.path()).unwrap().contains("every account"));
        assert!(shared_writer(Path::new("/tmp")).is_some());
    }
}
