//! Where local-mcp keeps its files on this platform, and the one way it
//! writes a file that may hold a secret.
//!
//! Every default path lives here so that `config`, `connection`, `auth` and the
//! desktop shell agree on them without depending on one another. This module
//! depends on nothing else in the crate.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The platform folders (XDG on Linux, `~/Library/…` on macOS, `%APPDATA%` on Windows).
fn project_dirs() -> Option<directories::ProjectDirs> {
    directories::ProjectDirs::from("dev", "local-mcp", "local-mcp")
}

fn in_config_dir(name: &str) -> Option<PathBuf> {
    project_dirs().map(|d| d.config_dir().join(name))
}

/// The database: `local_mcp.sqlite3` in the platform data folder (or
/// `data/` beside the working directory where the platform has no home).
pub fn default_db() -> PathBuf {
    project_dirs()
        .map(|d| d.data_dir().join("local_mcp.sqlite3"))
        .unwrap_or_else(|| PathBuf::from("data/local_mcp.sqlite3"))
}

/// The optional TOML config file.
pub fn default_config_file() -> Option<PathBuf> {
    in_config_dir("config.toml")
}

/// The connection-info file a running instance publishes.
pub fn default_connection_file() -> Option<PathBuf> {
    in_config_dir("connection.json")
}

/// The token file the page can manage.
pub fn default_token_file() -> Option<PathBuf> {
    in_config_dir("token")
}

/// The log folder: the platform state folder's `logs` (`~/.local/state/local-mcp/logs` on
/// Linux; the local data folder's elsewhere, which has no state folder).
pub fn default_log_dir() -> Option<PathBuf> {
    project_dirs().map(|d| d.state_dir().unwrap_or_else(|| d.data_local_dir()).join("logs"))
}

/// The record of what `connect` wrote into clients' configuration files.
pub fn default_connections_file() -> Option<PathBuf> {
    in_config_dir("connections.json")
}

/// The desktop shell's own preferences.
pub fn default_desktop_prefs() -> Option<PathBuf> {
    in_config_dir("desktop.json")
}

/// Write `bytes` to `path` atomically (temp file + fsync + rename), creating
/// the folder, with owner-only permissions on Unix. A reader never sees a
/// half-written file, and a secret is never readable by another account.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        private_dir(dir)?;
    }
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let written = options.open(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()
    });
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(())
}

/// Create `dir` (and its missing parents) readable by the owner only. A folder
/// that already exists keeps its permissions — unless it is one of our own
/// default folders, which is tightened: it holds the queue, the token and
/// the connection info, and nothing of anyone else's.
pub fn private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        builder.mode(0o700);
        builder.create(dir)?;
        let ours = project_dirs().is_some_and(|d| dir == d.data_dir() || dir == d.config_dir());
        let mode = std::fs::metadata(dir)?.permissions().mode() & 0o777;
        if ours && mode & 0o077 != 0 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        }
        Ok(())
    }
    #[cfg(not(unix))]
    {
        // Windows: a folder under the user's profile is private by its ACL.
        builder.create(dir)
    }
}

/// Make an existing file readable and writable by its owner only.
pub fn make_private(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_writes_replace_whole_and_are_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a").join("secret");
        write_private(&path, b"one").unwrap();
        write_private(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        let leftovers = std::fs::read_dir(path.parent().unwrap()).unwrap().count();
        assert_eq!(leftovers, 1, "no temp file is left behind");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(path.parent().unwrap()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "a folder we create is owner-only");
        }
    }
}
