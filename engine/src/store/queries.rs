//! Every statement the product runs, as typed methods on [`Db`], a borrowed
//! connection or transaction. Callers compose them inside `Store::read` /
//! `Store::write`; none of them opens or commits a transaction itself.

use rusqlite::{params, Connection, OptionalExtension, Row};

use crate::model::{AgentActivity, Instruction, InstructionStatus, QueueCounts, ResultType, Settings, StatusFilter};
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

/// A connection (or an open transaction) with the product's statements on it.
pub struct Db<'c> {
    conn: &'c Connection,
}

/// The columns an [`Instruction`] is read from and written to. Rows are read
/// by name, so a new column goes here, in `instruction_from_row` and in
/// `insert_instruction`'s values — and nowhere shifts.
const INSTRUCTION_COLUMNS: &str =
    "id, content, status, created_at, updated_at, consumed_at, consumed_by_agent_id, position";

fn instruction_from_row(row: &Row<'_>) -> rusqlite::Result<Instruction> {
    let status: String = row.get("status")?;
    let status = match status.as_str() {
        "pending" => InstructionStatus::Pending,
        "consumed" => InstructionStatus::Consumed,
        // The table's CHECK constraint makes this unreachable short of a hand edit.
        other => {
            return Err(rusqlite::Error::FromSqlConversionFailure(
                0,
                rusqlite::types::Type::Text,
                format!("unknown instruction status {other:?}").into(),
            ))
        }
    };
    Ok(Instruction {
        id: row.get("id")?,
        content: row.get("content")?,
        status,
        created_at: row.get("created_at")?,
        updated_at: row.get("updated_at")?,
        consumed_at: row.get("consumed_at")?,
        consumed_by_agent_id: row.get("consumed_by_agent_id")?,
        position: row.get("position")?,
    })
}

/// `?1, ?2, …` for every column of [`INSTRUCTION_COLUMNS`].
fn instruction_placeholders() -> String {
    let n = INSTRUCTION_COLUMNS.split(',').count();
    (1..=n).map(|i| format!("?{i}")).collect::<Vec<_>>().join(", ")
}

impl<'c> Db<'c> {
    pub(super) fn new(conn: &'c Connection) -> Self {
        Db { conn }
    }

    // ---- instructions -------------------------------------------------------

    /// The position after every instruction ever queued (new ones go to the back).
    pub fn next_position(&self) -> Result<i64> {
        Ok(self
            .conn
            .query_row("SELECT COALESCE(MAX(position), 0) + 1 FROM instructions", [], |r| {
                r.get(0)
            })?)
    }

    /// A position before every pending instruction (for "send again" to the front).
    pub fn front_position(&self) -> Result<i64> {
        Ok(self.conn.query_row(
            "SELECT COALESCE(MIN(position), 1) - 1 FROM instructions WHERE status = 'pending'",
            [],
            |r| r.get(0),
        )?)
    }

    pub fn insert_instruction(&self, i: &Instruction) -> Result<()> {
        self.conn
            .prepare_cached(&format!(
                "INSERT INTO instructions ({INSTRUCTION_COLUMNS}) VALUES ({})",
                instruction_placeholders()
            ))?
            .execute(params![
                i.id,
                i.content,
                i.status.as_str(),
                i.created_at,
                i.updated_at,
                i.consumed_at,
                i.consumed_by_agent_id,
                i.position
            ])?;
        Ok(())
    }

    pub fn get_instruction(&self, id: &str) -> Result<Option<Instruction>> {
        Ok(self
            .conn
            .prepare_cached(&format!("SELECT {INSTRUCTION_COLUMNS} FROM instructions WHERE id = ?1"))?
            .query_row([id], instruction_from_row)
            .optional()?)
    }

    /// Replace a pending instruction's text; returns the updated row, or `None`
    /// when no *pending* instruction has that id.
    pub fn update_pending_content(&self, id: &str, content: &str, now: &str) -> Result<Option<Instruction>> {
        Ok(self
            .conn
            .prepare_cached(&format!(
                "UPDATE instructions SET content = ?2, updated_at = ?3
                 WHERE id = ?1 AND status = 'pending' RETURNING {INSTRUCTION_COLUMNS}"
            ))?
            .query_row(params![id, content, now], instruction_from_row)
            .optional()?)
    }

    /// Delete a pending instruction; returns the deleted row, if it was pending.
    pub fn delete_pending(&self, id: &str) -> Result<Option<Instruction>> {
        Ok(self
            .conn
            .prepare_cached(&format!(
                "DELETE FROM instructions WHERE id = ?1 AND status = 'pending' RETURNING {INSTRUCTION_COLUMNS}"
            ))?
            .query_row([id], instruction_from_row)
            .optional()?)
    }

    /// Mark the head of the rail consumed by `agent_id`, in one statement.
    /// Runs inside the caller's `BEGIN IMMEDIATE` transaction, so two claims can
    /// never pick the same row: each instruction is delivered at most once.
    pub fn claim_next(&self, agent_id: &str, now: &str) -> Result<Option<Instruction>> {
        Ok(self
            .conn
            .prepare_cached(&format!(
                "UPDATE instructions
                 SET status = 'consumed', consumed_at = ?2, consumed_by_agent_id = ?1, updated_at = ?2
                 WHERE id = (SELECT id FROM instructions WHERE status = 'pending' ORDER BY position, created_at LIMIT 1)
                 RETURNING {INSTRUCTION_COLUMNS}"
            ))?
            .query_row(params![agent_id, now], instruction_from_row)
            .optional()?)
    }

    /// Pending instruction ids in delivery order.
    pub fn pending_ids(&self) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT id FROM instructions WHERE status = 'pending' ORDER BY position, created_at")?;
        let ids = stmt
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<String>>>()?;
        Ok(ids)
    }

    /// Renumber pending instructions to `base, base+1, …` in the given order;
    /// returns the rows whose position changed.
    pub fn set_pending_order(&self, ids: &[String], base: i64, now: &str) -> Result<Vec<Instruction>> {
        let mut changed = Vec::new();
        let mut stmt = self.conn.prepare_cached(&format!(
            "UPDATE instructions SET position = ?2, updated_at = ?3
             WHERE id = ?1 AND status = 'pending' AND position <> ?2 RETURNING {INSTRUCTION_COLUMNS}"
        ))?;
        for (offset, id) in ids.iter().enumerate() {
            if let Some(row) = stmt
                .query_row(params![id, base + offset as i64, now], instruction_from_row)
                .optional()?
            {
                changed.push(row);
            }
        }
        Ok(changed)
    }

    /// The lowest position among pending instructions (where a reordered rail starts).
    pub fn min_pending_position(&self) -> Result<Option<i64>> {
        Ok(self.conn.query_row(
            "SELECT MIN(position) FROM instructions WHERE status = 'pending'",
            [],
            |r| r.get(0),
        )?)
    }

    pub fn counts(&self) -> Result<QueueCounts> {
        let (pending, consumed): (i64, i64) = self
            .conn
            .prepare_cached(
                "SELECT COALESCE(SUM(status = 'pending'), 0), COALESCE(SUM(status = 'consumed'), 0) FROM instructions",
            )?
            .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(QueueCounts {
            pending_count: pending as u64,
            consumed_count: consumed as u64,
        })
    }

    pub fn pending_count(&self) -> Result<u64> {
        let n: i64 = self
            .conn
            .prepare_cached("SELECT COUNT(*) FROM instructions WHERE status = 'pending'")?
            .query_row([], |r| r.get(0))?;
        Ok(n as u64)
    }

    /// Instructions for a listing: pending in delivery order, then consumed
    /// newest first (at most `consumed_limit` of them, skipping `consumed_offset`).
    pub fn list(
        &self,
        filter: StatusFilter,
        consumed_limit: Option<u32>,
        consumed_offset: u32,
    ) -> Result<Vec<Instruction>> {
        let mut items = Vec::new();
        if filter != StatusFilter::Consumed {
            let mut stmt = self.conn.prepare_cached(&format!(
                "SELECT {INSTRUCTION_COLUMNS} FROM instructions WHERE status = 'pending' ORDER BY position, created_at"
            ))?;
            let rows = stmt.query_map([], instruction_from_row)?;
            for row in rows {
                items.push(row?);
            }
        }
        if filter != StatusFilter::Pending {
            let limit = consumed_limit.map(i64::from).unwrap_or(-1);
            let mut stmt = self.conn.prepare_cached(&format!(
                "SELECT {INSTRUCTION_COLUMNS} FROM instructions WHERE status = 'consumed'
                 ORDER BY consumed_at DESC, position DESC LIMIT ?1 OFFSET ?2"
            ))?;
            let rows = stmt.query_map(params![limit, consumed_offset], instruction_from_row)?;
            for row in rows {
                items.push(row?);
            }
        }
        Ok(items)
    }

    // ---- settings -----------------------------------------------------------

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

    // ---- agents -------------------------------------------------------------

    /// Record that an agent called (and, with `fetch`, what its call returned).
    pub fn touch_agent(&self, agent_id: &str, now: &str, fetch_result: Option<ResultType>) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT INTO agent_activity (agent_id, last_seen_at, last_fetch_at, last_result_type)
                 VALUES (?1, ?2, CASE WHEN ?3 IS NULL THEN NULL ELSE ?2 END, ?3)
                 ON CONFLICT(agent_id) DO UPDATE SET
                   last_seen_at = excluded.last_seen_at,
                   last_fetch_at = COALESCE(excluded.last_fetch_at, agent_activity.last_fetch_at),
                   last_result_type = COALESCE(excluded.last_result_type, agent_activity.last_result_type)",
            )?
            .execute(params![agent_id, now, fetch_result.map(ResultType::as_str)])?;
        Ok(())
    }

    /// Known agents, most recently seen first.
    pub fn agents(&self, limit: u32) -> Result<Vec<AgentActivity>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT agent_id, last_seen_at, last_fetch_at, last_result_type FROM agent_activity
             ORDER BY last_seen_at DESC, agent_id LIMIT ?1",
        )?;
        let rows = stmt.query_map([limit], |r| {
            let result: Option<String> = r.get("last_result_type")?;
            Ok(AgentActivity {
                agent_id: r.get("agent_id")?,
                last_seen_at: r.get("last_seen_at")?,
                last_fetch_at: r.get("last_fetch_at")?,
                // An unknown value (a newer version's) reads as none.
                last_result_type: result.as_deref().and_then(ResultType::parse),
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    // ---- event log ----------------------------------------------------------

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

#[cfg(test)]
impl Db<'_> {
    /// The connection's current `PRAGMA synchronous` (0 OFF, 1 NORMAL, 2 FULL).
    pub fn conn_synchronous(&self) -> i64 {
        self.conn
            .query_row("PRAGMA synchronous", [], |r| r.get(0))
            .unwrap_or(-1)
    }
}
