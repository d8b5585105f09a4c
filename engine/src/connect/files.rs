//! Reading and replacing a client's file without ever leaving it half
//! written: symlinks followed to the real file, a timestamped backup beside
//! it before our first change, a temp file in the same folder, fsync,
//! rename, and the original permissions kept.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The file a path names, following symlinks (a dotfiles repository often
/// links the config in; replacing the link would detach it).
pub fn real_path(path: &Path) -> PathBuf {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()),
        _ => path.to_path_buf(),
    }
}

/// The file's text, `None` when it does not exist.
pub fn read(path: &Path) -> Result<Option<String>, String> {
    match std::fs::read(path) {
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

/// Copy `path` to `<path>.local-mcp-backup-<UTC time>` and return the copy's path.
pub fn backup(path: &Path) -> std::io::Result<PathBuf> {
    let stamp = time::OffsetDateTime::now_utc()
        .format(time::macros::format_description!(
            "[year][month][day]T[hour][minute][second]Z"
        ))
        .unwrap_or_else(|_| "backup".into());
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".local-mcp-backup-{stamp}"));
    let mut copy = path.with_file_name(&name);
    let mut n = 1;
    while copy.exists() {
        n += 1;
        let mut numbered = name.clone();
        numbered.push(format!("-{n}"));
        copy = path.with_file_name(numbered);
    }
    std::fs::copy(path, &copy)?;
    Ok(copy)
}

/// Replace `path` with `text` atomically. An existing file keeps its
/// permissions; a new one is owner-only when `private` (it holds a token).
pub fn write_atomic(path: &Path, text: &str, private: bool) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let existing = std::fs::metadata(path).ok().map(|m| m.permissions());
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(path.file_name().unwrap_or_default());
    tmp_name.push(format!(".local-mcp-{}.tmp", std::process::id()));
    let tmp = dir.join(tmp_name);
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(text.as_bytes())?;
        match &existing {
            Some(p) => std::fs::set_permissions(&tmp, p.clone())?,
            None if private => crate::paths::make_private(&tmp)?,
            None => {}
        }
        file.sync_all()?;
        std::fs::rename(&tmp, path)?;
        // The rename itself reaches the disk with the folder's entry.
        #[cfg(unix)]
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
