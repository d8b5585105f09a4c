//! The connection-info file: how the CLI, the stdio bridge and other local
//! tools find the running instance (its URL moves when the port falls back,
//! and a token may be required). Written on start with owner-only
//! permissions — it can hold the token — and removed on a clean exit.

use std::path::Path;

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
                "local-mcp is not running: there is no connection-info file at {}. Start it with `local-mcp` \
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
        }
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
