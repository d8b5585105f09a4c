//! The runtime settings, one row per setting, and the database's instance id.

use rusqlite::params;

use super::Db;
use crate::model::Settings;
use crate::Result;

impl<'c> Db<'c> {
    /// Write any setting not stored yet (first run); stored values are kept.
    pub fn seed_settings(&self, s: &Settings) -> Result<()> {
        let mut stmt = self
            .conn
            .prepare_cached("INSERT OR IGNORE INTO settings (key, value) VALUES (?1, ?2)")?;
        for (k, v) in s.to_pairs() {
            stmt.execute(params![k, v])?;
        }
        Ok(())
    }

    pub fn put_settings(&self, s: &Settings) -> Result<()> {
        let mut stmt = self.conn.prepare_cached(
            "INSERT INTO settings (key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        )?;
        for (k, v) in s.to_pairs() {
            stmt.execute(params![k, v])?;
        }
        Ok(())
    }

    /// The stored settings; a missing or unreadable value falls back to its default.
    pub fn settings(&self) -> Result<Settings> {
        let mut stmt = self.conn.prepare_cached("SELECT key, value FROM settings")?;
        let pairs = stmt
            .query_map([], |r| Ok((r.get::<_, String>("key")?, r.get::<_, String>("value")?)))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(Settings::from_pairs(pairs))
    }

    /// This database's random instance id (`meta.instance`, made by migration 9).
    pub fn instance(&self) -> Result<String> {
        Ok(self
            .conn
            .query_row("SELECT value FROM meta WHERE key = 'instance'", [], |r| r.get(0))?)
    }
}
