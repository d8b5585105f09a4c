//! The connection-info files: how the CLI, the stdio bridge and other local
//! tools find a running instance (its URL moves when the port falls back,
//! and a token may be required). Written on start with owner-only
//! permissions — they can hold the token — and removed on a clean exit.
//!
//! Each database has its own ([`Registry`]: `servers/<key>.json` in the
//! config folder, keyed by the database's path), so a second server on its
//! own database never overwrites or removes the first one's; the server of
//! the default database also writes `connection.json`, which older tools
//! and an explicit `--connection-file` read.

use std::path::{Path, PathBuf};

use sha2::Digest as _;

use serde::{Deserialize, Serialize};

use crate::{paths, Error, Result};

/// What a running instance publishes about itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionInfo {
    /// Base URL of the page and the API, e.g. `http://127.0.0.1:8000`.
    pub url: String,
    /// The MCP endpoint, `{url}/mcp`.
    pub mcp_url: String,
    pub port: u16,
    /// The bearer token, when one is required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    pub version: String,
    pub tools: Vec<String>,
    pub pid: u32,
    pub started_at: String,
    /// The database it serves (absent in files older versions wrote).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db_path: Option<PathBuf>,
}

/// Every running server of this account, one file per database.
#[derive(Debug, Clone)]
pub struct Registry {
    dir: PathBuf,
}

impl Registry {
    pub fn new(dir: PathBuf) -> Registry {
        Registry { dir }
    }

    /// The file the server of `db` publishes itself in.
    pub fn entry(&self, db: &Path) -> PathBuf {
        self.dir.join(format!("{}.json", database_key(db)))
    }

    /// The server of `db`, if one runs (its database lock says so: a file a
    /// crashed server left names a process that holds nothing).
    pub fn of(&self, db: &Path) -> Option<ConnectionInfo> {
        let info = read(&self.entry(db)).ok()?;
        alive(&info).then_some(info)
    }

    /// Every server that runs now, by database path.
    pub fn running(&self) -> Vec<ConnectionInfo> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut found: Vec<ConnectionInfo> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
            .filter_map(|e| read(&e.path()).ok())
            .filter(alive)
            .collect();
        found.sort_by(|a, b| a.db_path.cmp(&b.db_path));
        found
    }
}

/// Whether the server `info` describes still holds its database.
fn alive(info: &ConnectionInfo) -> bool {
    info.db_path
        .as_deref()
        .and_then(crate::lock::holder)
        .is_some_and(|h| h.pid == info.pid)
}

/// A short name for a database, the same for every way of writing its path.
pub fn database_key(db: &Path) -> String {
    let path = paths::canonical(db);
    let digest = sha2::Sha256::digest(path.as_os_str().as_encoded_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// Write `info` to `path` atomically (temp file + rename), readable by the owner only.
pub fn write(path: &Path, info: &ConnectionInfo) -> Result<()> {
    let mut json = serde_json::to_vec_pretty(info).map_err(|e| Error::internal("encoding the connection info", e))?;
    json.push(b'\n');
    paths::write_private(path, &json)
        .map_err(|e| Error::internal(format!("cannot write the connection-info file {}", path.display()), e))
}

/// Read the file a running instance wrote.
pub fn read(path: &Path) -> Result<ConnectionInfo> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::NotFound(format!(
            "local-mcp is not running: there is no connection-info file at {}. Start it with `local-mcp-server start` \
                 (or `local-mcp-server`), or pass --url",
            path.display()
        )))
        }
        Err(e) => return Err(Error::Invalid(format!("cannot read {}: {e}", path.display()))),
    };
    serde_json::from_str(&text)
        .map_err(|e| Error::Invalid(format!("{} is not a connection-info file: {e}", path.display())))
}

/// Remove the file if it still describes process `pid`: another instance
/// that started later owns it otherwise.
pub fn remove_if_ours(path: &Path, pid: u32) {
    match read(path) {
        Ok(info) if info.pid == pid => {
            if let Err(e) = std::fs::remove_file(path) {
                tracing::warn!(path = %path.display(), error = %e, "could not remove the connection-info file");
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(pid: u32) -> ConnectionInfo {
        ConnectionInfo {
            url: "http://127.0.0.1:8000".into(),
            mcp_url: "http://127.0.0.1:8000/mcp".into(),
            port: 8000,
            token: Some("t0k".into()),
            version: "0.1.0".into(),
            tools: vec!["get_user_request".into()],
            pid,
            started_at: "2026-11-22T10:00:00Z".into(),
            db_path: None,
        }
    }

    #[test]
    fn each_database_has_its_own_entry_and_only_a_live_one_counts() {
        let dir = tempfile::tempdir().unwrap();
        let registry = Registry::new(dir.path().join("servers"));
        let (a, b) = (dir.path().join("a.sqlite3"), dir.path().join("b.sqlite3"));
        assert_ne!(registry.entry(&a), registry.entry(&b));
        let spelled_otherwise = dir.path().join("x").join("..").join("a.sqlite3");
        std::fs::create_dir(dir.path().join("x")).unwrap();
        assert_eq!(registry.entry(&a), registry.entry(&spelled_otherwise));
        // A lock held by this process: the server of `a` runs.
        let mut lock = crate::lock::DbLock::acquire(&a).unwrap();
        lock.publish("http://127.0.0.1:1");
        let mut live = info(std::process::id());
        live.db_path = Some(paths::canonical(&a));
        write(&registry.entry(&a), &live).unwrap();
        // One a crashed server left: nobody holds `b`.
        let mut stale = info(4_000_000);
        stale.db_path = Some(paths::canonical(&b));
        write(&registry.entry(&b), &stale).unwrap();
        assert_eq!(registry.of(&a), Some(live.clone()));
        assert_eq!(registry.of(&b), None);
        assert_eq!(registry.running(), vec![live]);
        drop(lock);
        assert_eq!(registry.running(), Vec::new(), "its lock let go: it is gone");
    }

    #[test]
    fn round_trips_owner_only_and_is_removed_only_by_its_owner() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested").join("connection.json");
        write(&path, &info(41)).unwrap();
        assert_eq!(read(&path).unwrap(), info(41));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        remove_if_ours(&path, 42);
        assert!(path.exists(), "another process's file stays");
        remove_if_ours(&path, 41);
        assert!(!path.exists());
        let err = read(&path).unwrap_err();
        assert!(err.to_string().contains("not running"), "{err}");
        std::fs::write(&path, "{").unwrap();
        assert!(read(&path)
            .unwrap_err()
            .to_string()
            .contains("not a connection-info file"));
    }
}
