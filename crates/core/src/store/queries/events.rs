//! The event log the page's stream replays from.

use rusqlite::params;

use super::Db;
use crate::Result;

/// How many events the log keeps; older ones are pruned (a page that missed
/// more than this many changes reloads instead of replaying).
pub const EVENT_LOG_KEEP: i64 = 10_000;

/// A stored event, as the log returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    pub id: i64,
    pub kind: String,
    pub created_at: String,
    pub data: String,
}

impl<'c> Db<'c> {
    /// Append an event; returns its id. Prunes the oldest events now and then.
    pub fn append_event(&self, kind: &str, created_at: &str, data: &str) -> Result<i64> {
        let id: i64 = self
            .conn
            .prepare_cached("INSERT INTO events (type, created_at, data) VALUES (?1, ?2, ?3) RETURNING id")?
            .query_row(params![kind, created_at, data], |r| r.get(0))?;
        // Pruning in batches keeps the common insert a single statement.
        if id % 512 == 0 {
            self.conn
                .prepare_cached("DELETE FROM events WHERE id <= ?1")?
                .execute([id - EVENT_LOG_KEEP])?;
        }
        Ok(id)
    }

    /// Events after `after_id`, oldest first, at most `limit`.
    pub fn events_after(&self, after_id: i64, limit: u32) -> Result<Vec<StoredEvent>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT id, type, created_at, data FROM events WHERE id > ?1 ORDER BY id LIMIT ?2")?;
        let rows = stmt.query_map(params![after_id, limit], |r| {
            Ok(StoredEvent {
                id: r.get("id")?,
                kind: r.get("type")?,
                created_at: r.get("created_at")?,
                data: r.get("data")?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// The id of the oldest event still in the log (`None` when it is empty).
    pub fn oldest_event_id(&self) -> Result<Option<i64>> {
        Ok(self.conn.query_row("SELECT MIN(id) FROM events", [], |r| r.get(0))?)
    }

    /// The newest event id ever assigned (survives pruning), 0 if none.
    pub fn last_event_id(&self) -> Result<i64> {
        Ok(self.conn.query_row(
            "SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0)",
            [],
            |r| r.get(0),
        )?)
    }
}
