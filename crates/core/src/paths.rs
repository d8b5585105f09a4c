//! Where local-mcp keeps its files on this platform.
//!
//! Every default path lives here so that `config`, `connection_info`, `auth` and the
//! desktop shell agree on them without depending on one another. This module
//! depends only on `private_fs`, which creates them.

use std::path::{Path, PathBuf};

use crate::private_fs;

// Where the home and config folders of the agents' clients are differs by
// platform: one file each, whose header says how it is verified.
#[cfg(not(windows))]
#[path = "paths/unix.rs"]
mod platform;
#[cfg(windows)]
#[path = "paths/windows.rs"]
mod platform;

/// The home folder and the platform config folder the agents' clients keep
/// their files under (`connect` edits them): `$HOME` and XDG's config folder
/// on Linux, `~/Library/Application Support` on macOS, `%USERPROFILE%` and
/// `%APPDATA%` on Windows.
pub fn client_folders() -> Option<(PathBuf, PathBuf)> {
    platform::client_folders()
}

/// Claude Desktop's config folder when it was installed from the platform's
/// store: on Windows, MSIX installs (the default since early 2026) read a
/// virtualised copy under `%LOCALAPPDATA%\Packages\Claude_*` and never see
/// `%APPDATA%\Claude`, so that one wins when there is exactly one.
pub fn claude_desktop_store_folder() -> Option<PathBuf> {
    platform::claude_desktop_store_folder()
}

/// Whether `path` is a program one could run (a file; executable, on Unix).
pub fn is_program(path: &Path) -> bool {
    platform::is_program(path)
}

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

/// `db` as an absolute path with its links resolved (its folder's, when the
/// file itself does not exist yet).
pub fn canonical(db: &Path) -> PathBuf {
    if let Ok(path) = std::fs::canonicalize(db) {
        return path;
    }
    let absolute = std::path::absolute(db).unwrap_or_else(|_| db.to_path_buf());
    match (absolute.parent(), absolute.file_name()) {
        (Some(dir), Some(name)) => std::fs::canonicalize(dir).map_or(absolute.clone(), |d| d.join(name)),
        _ => absolute,
    }
}

/// The optional TOML config file.
pub fn default_config_file() -> Option<PathBuf> {
    in_config_dir("config.toml")
}

/// The connection-info file the server of the default database publishes.
pub fn default_connection_file() -> Option<PathBuf> {
    in_config_dir("connection.json")
}

/// Where every running server publishes itself, one file per database
/// (`connection_info::Registry`).
pub fn default_servers_dir() -> Option<PathBuf> {
    in_config_dir("servers")
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

/// The desktop app's instance lock: held by the one desktop app of this
/// account for its whole life (its state, readable while the lock is held,
/// is in `desktop.state` beside it).
pub fn default_desktop_instance() -> Option<PathBuf> {
    in_config_dir("desktop.lock")
}

/// Create `dir` (and its missing parents) readable by the owner only. A folder
/// that already exists keeps its permissions — unless it is one of our own
/// default folders, which is tightened: it holds the queue, the token and
/// the connection info, and nothing of anyone else's.
pub fn private_dir(dir: &Path) -> std::io::Result<()> {
    let ours = project_dirs().is_some_and(|d| dir == d.data_dir() || dir == d.config_dir());
    if ours {
        private_fs::private_dir(dir)
    } else {
        private_fs::create_dir_all(dir)
    }
}

/// Write `bytes` to `path` atomically and owner-only, creating its folder
/// (see [`private_dir`]): a reader never sees half a file, and a secret is
/// never readable by another account.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        private_dir(dir)?;
    }
    private_fs::replace(path, bytes, private_fs::Mode::Private)
}
