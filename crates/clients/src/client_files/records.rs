//! What `connect` wrote where, kept in our own config folder
//! (`connections.json`): `disconnect` removes only an entry that still equals
//! what we wrote, "Update all" finds what to refresh, and `connect --backups`
//! lists the backups we made.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Records {
    #[serde(default)]
    pub writes: Vec<Written>,
    #[serde(default)]
    pub backups: Vec<Backup>,
}

/// One entry (or hook) we put into a client's file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Written {
    pub client: String,
    pub file: PathBuf,
    /// `server` (our MCP entry) or `hook` (the Claude Code Stop hook).
    pub kind: String,
    pub entry: Value,
    pub at: String,
    /// What connect itself created for this entry: the file, and the
    /// folders it made for it (outermost first). `disconnect` removes them
    /// again when nothing else is left in them, and a client is not taken
    /// for installed because of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub created: Vec<PathBuf>,
}

/// A copy of a client's file taken before our first change to it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Backup {
    pub file: PathBuf,
    pub backup: PathBuf,
    pub at: String,
}

impl Records {
    /// The records, empty when there are none yet. A file we cannot read is
    /// an error: acting without it could remove what the person wrote.
    pub fn load(path: &Path) -> Result<Records, String> {
        match crate::private_fs::read_ours(path, 16 << 20) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                format!(
                    "local-mcp's record of connections ({}) cannot be read: {e}",
                    path.display()
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Records::default()),
            Err(e) => Err(format!("cannot read {}: {e}", path.display())),
        }
    }

    pub fn save(&self, path: &Path) -> Result<(), String> {
        let bytes = serde_json::to_vec_pretty(self).map_err(|e| e.to_string())?;
        crate::paths::write_private(path, &bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
    }

    pub fn find(&self, client: &str, file: &Path, kind: &str) -> Option<&Written> {
        self.writes
            .iter()
            .find(|w| w.client == client && w.file == file && w.kind == kind)
    }

    pub fn put(&mut self, written: Written) {
        self.forget(&written.client, &written.file.clone(), &written.kind.clone());
        self.writes.push(written);
    }

    pub fn forget(&mut self, client: &str, file: &Path, kind: &str) {
        self.writes
            .retain(|w| !(w.client == client && w.file == file && w.kind == kind));
    }

    /// Every file and folder connect created (none of them is a sign that a client is installed).
    pub fn created(&self) -> Vec<PathBuf> {
        self.writes.iter().flat_map(|w| w.created.iter().cloned()).collect()
    }

    pub fn backed_up(&self, file: &Path) -> bool {
        self.backups.iter().any(|b| b.file == file)
    }
}
