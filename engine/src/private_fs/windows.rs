//! The rules of `private_fs` on Windows. A file or folder created under a
//! user's own folders (`%LOCALAPPDATA%`, `%APPDATA%`, `%USERPROFILE%`)
//! inherits an ACL that gives only that user, SYSTEM and administrators
//! access, so what we create there is private without a mode; `create_new`
//! (`CREATE_NEW`) still never opens a name that exists, a link included.
//! What this file does not do, and says so: ownership of an existing file
//! or folder is not compared with ours (an account cannot write into
//! another's profile), no folder is reported as shared, and an existing
//! name is opened through a symbolic link (creating one takes a privilege
//! or developer mode on Windows) — `docs/PLATFORMS.md`.

use std::fs::{DirBuilder, File, Metadata, OpenOptions};
use std::io;
use std::path::Path;

pub fn new_file_options() -> OpenOptions {
    OpenOptions::new()
}

pub fn read_ours_options() -> OpenOptions {
    OpenOptions::new()
}

/// Open a name as itself, not what a link or junction there points at.
const FILE_FLAG_OPEN_REPARSE_POINT: u32 = 0x0020_0000;

/// `root/dir/name`: `dir` must be a real folder (not a link or junction), and
/// `name` is opened as itself (`FILE_FLAG_OPEN_REPARSE_POINT`), so a link
/// there is a link, which the caller refuses as no regular file.
pub fn open_beneath(root: &Path, dir: &str, name: &str) -> io::Result<File> {
    use std::os::windows::fs::{MetadataExt, OpenOptionsExt};
    const FILE_ATTRIBUTE_REPARSE_POINT: u32 = 0x400;
    let folder = root.join(dir);
    let meta = std::fs::symlink_metadata(&folder)?;
    if !meta.is_dir() || meta.file_attributes() & FILE_ATTRIBUTE_REPARSE_POINT != 0 {
        return Err(io::Error::other(format!("{} is not a folder", folder.display())));
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
        .open(folder.join(name))?;
    if file.metadata()?.file_attributes() & FILE_ATTRIBUTE_REPARSE_POINT != 0 {
        return Err(io::Error::other(format!("{} is a link", folder.join(name).display())));
    }
    Ok(file)
}

/// Opening a named pipe's path does not wait for its other end on Windows.
pub fn nonblocking_read_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.read(true);
    options
}

/// New files take their folder's ACL on Windows.
pub fn shared_file_permissions() -> Option<std::fs::Permissions> {
    None
}

pub fn other_owner(_: &Metadata) -> Option<String> {
    None
}

pub fn new_dir_builder() -> DirBuilder {
    DirBuilder::new()
}

pub fn make_dir_private(_: &Path, _: &Metadata) -> io::Result<()> {
    Ok(())
}

pub fn make_file_private(_: &File) -> io::Result<()> {
    Ok(())
}

/// Windows has no umask: new files take their folder's inherited ACL.
pub fn restrict_umask() {}

/// A rename is durable on its own, and a folder cannot be opened to sync.
pub fn sync_dir(_: &Path) -> io::Result<()> {
    Ok(())
}

pub fn private_temp_dir(_: &mut tempfile::Builder<'_, '_>) {}

pub fn shared_writer(_: &Path) -> Option<String> {
    None
}

pub fn shared_file(_: &Path) -> Option<String> {
    None
}
