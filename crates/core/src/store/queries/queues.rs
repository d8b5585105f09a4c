//! Queues: their records (held, archived, suffix) and kept counts.

use rusqlite::{params, OptionalExtension, Row};

use super::Db;
use crate::model::{QueueCounts, QueueRecord};
use crate::Result;

pub(super) fn queue_from_row(row: &Row<'_>) -> rusqlite::Result<QueueRecord> {
    Ok(QueueRecord {
        name: row.get("name")?,
        held: row.get("held")?,
        archived: row.get("archived")?,
        created_at: row.get("created_at")?,
        suffix: row.get("suffix")?,
    })
}

/// Per-queue instruction counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueTally {
    pub queue: String,
    pub pending: u64,
    pub consumed: u64,
    /// Of the pending ones, those held (from an import or a restore).
    pub held: u64,
}

impl QueueTally {
    /// The totals over every queue's tally, with the deliveries in doubt.
    pub fn totals(tallies: &[QueueTally], in_doubt_count: u64) -> QueueCounts {
        QueueCounts {
            pending_count: tallies.iter().map(|t| t.pending).sum(),
            consumed_count: tallies.iter().map(|t| t.consumed).sum(),
            in_doubt_count,
            held_count: tallies.iter().map(|t| t.held).sum(),
        }
    }
}

impl<'c> Db<'c> {
    /// Every queue, `default` first, then by name.
    pub fn queues(&self) -> Result<Vec<QueueRecord>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT name, held, archived, created_at, suffix FROM queues ORDER BY name <> 'default', name",
        )?;
        let rows = stmt
            .query_map([], queue_from_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    pub fn get_queue(&self, name: &str) -> Result<Option<QueueRecord>> {
        Ok(self
            .conn
            .prepare_cached("SELECT name, held, archived, created_at, suffix FROM queues WHERE name = ?1")?
            .query_row([name], queue_from_row)
            .optional()?)
    }

    /// Create `name` if it does not exist, or bring it back from the archive;
    /// returns the row when it changed, `None` when it was already there.
    pub fn ensure_queue(&self, name: &str, now: &str) -> Result<Option<QueueRecord>> {
        Ok(self
            .conn
            .prepare_cached(
                "INSERT INTO queues (name, held, archived, created_at) VALUES (?1, 0, 0, ?2)
                 ON CONFLICT(name) DO UPDATE SET archived = 0 WHERE archived = 1
                 RETURNING name, held, archived, created_at, suffix",
            )?
            .query_row([name, now], queue_from_row)
            .optional()?)
    }

    /// Hold or release one queue (or, with `None`, every queue); returns the
    /// queues whose state changed.
    pub fn set_held(&self, name: Option<&str>, held: bool) -> Result<Vec<QueueRecord>> {
        let mut stmt = self.conn.prepare_cached(
            "UPDATE queues SET held = ?2 WHERE (?1 IS NULL OR name = ?1) AND held <> ?2
             RETURNING name, held, archived, created_at, suffix",
        )?;
        let rows = stmt
            .query_map(params![name, held], queue_from_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    pub fn set_archived(&self, name: &str, archived: bool) -> Result<Option<QueueRecord>> {
        Ok(self
            .conn
            .prepare_cached(
                "UPDATE queues SET archived = ?2 WHERE name = ?1 RETURNING name, held, archived, created_at, suffix",
            )?
            .query_row(params![name, archived], queue_from_row)
            .optional()?)
    }

    /// Rename a queue with everything in it: its instructions (history too)
    /// and its agents' activity.
    pub fn rename_queue(&self, from: &str, to: &str) -> Result<Option<QueueRecord>> {
        let Some(record) = self
            .conn
            .prepare_cached(
                "UPDATE queues SET name = ?2 WHERE name = ?1 RETURNING name, held, archived, created_at, suffix",
            )?
            .query_row([from, to], queue_from_row)
            .optional()?
        else {
            return Ok(None);
        };
        self.conn
            .prepare_cached("UPDATE instructions SET queue = ?2 WHERE queue = ?1")?
            .execute([from, to])?;
        self.conn
            .prepare_cached("UPDATE OR REPLACE agent_activity SET queue = ?2 WHERE queue = ?1")?
            .execute([from, to])?;
        Ok(Some(record))
    }

    /// Set (or, with `None`, clear) what is appended to each instruction of a queue when delivered.
    pub fn set_suffix(&self, name: &str, suffix: Option<&str>) -> Result<Option<QueueRecord>> {
        Ok(self
            .conn
            .prepare_cached(
                "UPDATE queues SET suffix = ?2 WHERE name = ?1 AND suffix IS NOT ?2
                 RETURNING name, held, archived, created_at, suffix",
            )?
            .query_row(params![name, suffix], queue_from_row)
            .optional()?)
    }
}
