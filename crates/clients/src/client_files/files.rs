//! Reading and replacing a client's file without ever leaving it half
//! written: symlinks followed to the real file, a timestamped backup beside
//! it before our first change, a temp file (random name, `O_EXCL`) in the
//! same folder, fsync, rename, and the original permissions kept
//! (`private_fs` does the creating).

use std::path::{Path, PathBuf};

use crate::private_fs;

/// The file a path names, following symlinks (a dotfiles repository often
/// links the config in; replacing the link would detach it).
pub fn real_path(path: &Path) -> PathBuf {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()),
        _ => path.to_path_buf(),
    }
}

/// The largest client config file read: far above any real one.
const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// The file's text, `None` when it does not exist. A FIFO, a device or
/// anything but a regular file at that name is an error, never waited on
/// (`private_fs::read_regular`): a project folder may be someone else's.
pub fn read(path: &Path) -> Result<Option<String>, String> {
    match private_fs::read_regular(path, MAX_CONFIG_BYTES) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| "it is not UTF-8 text".to_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

/// A file we may not change: the person (or a tool) marked it read-only.
pub fn read_only(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.permissions().readonly())
}

/// Copy `path` to `<path>.local-mcp-backup-<UTC time>` (then `-2`, `-3`…:
/// always a new file, never through a link someone left at one of those
/// names) and return the copy's path. The copy is owner-only.
pub fn backup(path: &Path) -> std::io::Result<PathBuf> {
    let stamp = time::OffsetDateTime::now_utc()
        .format(time::macros::format_description!(
            "[year][month][day]T[hour][minute][second]Z"
        ))
        .unwrap_or_else(|_| "backup".into());
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".local-mcp-backup-{stamp}"));
    for n in 1..100 {
        let mut numbered = name.clone();
        if n > 1 {
            numbered.push(format!("-{n}"));
        }
        let copy = path.with_file_name(numbered);
        match private_fs::copy_new(path, &copy) {
            Ok(_) => return Ok(copy),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other(format!(
        "every backup name for {} is taken",
        path.display()
    )))
}

/// Replace `path` with `text` atomically (see `private_fs::replace`). A
/// file that holds a `secret` (the token) is owner-only, whatever it was —
/// a 0644 `~/.cursor/mcp.json` kept the token readable by every account;
/// any other keeps its permissions, or when new is owner-only, or 0644 for
/// a project's file (`team`: the team shares it).
pub fn write_atomic(path: &Path, text: &str, secret: bool, team: bool) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    private_fs::create_dir_all(dir)?;
    let mode = match (secret, team) {
        (true, _) => private_fs::Mode::Private,
        (false, true) => private_fs::Mode::KeepOrShared,
        (false, false) => private_fs::Mode::KeepExisting,
    };
    private_fs::replace(path, text.as_bytes(), mode)
}
