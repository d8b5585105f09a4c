//! Instructions: adding, reading, listing (the rail, the ledger, history
//! search), changing and deleting pending ones, their order.

use rusqlite::{params, OptionalExtension, Row};

use super::queues::QueueTally;
use super::Db;
use super::INSTRUCTION_COLUMNS;
use crate::model::{Delivery, Instruction, InstructionStatus, QueueCounts};
use crate::Result;

pub(super) fn instruction_from_row(row: &Row<'_>) -> rusqlite::Result<Instruction> {
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
        queue: row.get("queue")?,
        target: row.get("target")?,
        delivery: row
            .get::<_, Option<String>>("delivery")?
            .as_deref()
            .and_then(Delivery::parse),
        answers: row.get("answers")?,
        held: row.get("held")?,
        report: None,
        attachments: Vec::new(),
    })
}

/// `?1, ?2, …` for every column of [`INSTRUCTION_COLUMNS`].
pub(super) fn instruction_placeholders() -> String {
    let n = INSTRUCTION_COLUMNS.split(',').count();
    (1..=n).map(|i| format!("?{i}")).collect::<Vec<_>>().join(", ")
}

/// What a change to a pending instruction sets; `None` keeps the field.
#[derive(Debug, Default)]
pub struct PendingChange<'a> {
    pub content: Option<&'a str>,
    /// A new queue, with the position it takes there.
    pub queue: Option<(&'a str, i64)>,
    /// A new target (`Some(None)`: anyone).
    pub target: Option<Option<&'a str>>,
}

impl<'c> Db<'c> {
    /// The position after every instruction ever queued (new ones go to the back).
    pub fn next_position(&self) -> Result<i64> {
        Ok(self
            .conn
            .query_row("SELECT COALESCE(MAX(position), 0) + 1 FROM instructions", [], |r| {
                r.get(0)
            })?)
    }

    /// The largest position of `queue`'s pending answers to `report`, if any
    /// (a second answer to one question goes after the first).
    pub fn last_pending_answer(&self, queue: &str, report: &str) -> Result<Option<i64>> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT MAX(position) FROM instructions WHERE status = 'pending' AND queue = ?1 AND answers = ?2",
            )?
            .query_row([queue, report], |r| r.get(0))?)
    }

    /// A position before every pending instruction of `queue` (for "send again" to the front).
    pub fn front_position(&self, queue: &str) -> Result<i64> {
        Ok(self.conn.query_row(
            "SELECT COALESCE(MIN(position), 1) - 1 FROM instructions WHERE status = 'pending' AND queue = ?1",
            [queue],
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
                i.position,
                i.queue,
                i.target,
                i.delivery.map(Delivery::as_str),
                i.answers,
                i.held
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

    /// Change a pending instruction's text, queue or target; returns the
    /// updated row, or `None` when no *pending* instruction has that id.
    pub fn update_pending(&self, id: &str, change: &PendingChange<'_>, now: &str) -> Result<Option<Instruction>> {
        let (queue, position) = change.queue.unzip();
        Ok(self
            .conn
            .prepare_cached(&format!(
                "UPDATE instructions SET content = COALESCE(?2, content), queue = COALESCE(?3, queue),
                   position = COALESCE(?4, position), target = CASE WHEN ?5 THEN ?6 ELSE target END, updated_at = ?7
                 WHERE id = ?1 AND status = 'pending' RETURNING {INSTRUCTION_COLUMNS}"
            ))?
            .query_row(
                params![
                    id,
                    change.content,
                    queue,
                    position,
                    change.target.is_some(),
                    change.target.flatten(),
                    now
                ],
                instruction_from_row,
            )
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

    /// Mark consumed by `agent_id` the first instruction of `queue` that it
    /// may take (addressed to it or to anyone), in one statement; with `id`,
    /// only that instruction, if it is still one it may take. Runs inside the
    /// caller's `BEGIN IMMEDIATE` transaction, so two claims can never pick
    /// the same row: each instruction is delivered at most once. Positions
    /// are unique within a queue's pending rail, so `position` alone orders
    /// it and the walk down the index stops at the first match.
    pub fn claim(&self, queue: &str, agent_id: &str, id: Option<&str>, now: &str) -> Result<Option<Instruction>> {
        Ok(self
            .conn
            .prepare_cached(&claim_sql())?
            .query_row(params![agent_id, now, queue, id], instruction_from_row)
            .optional()?)
    }

    /// The first `limit` pending instructions of `queue` that one of `agents`
    /// may take, in delivery order, as (id, target): what the dispatcher
    /// matches waiting calls against.
    pub fn pending_heads(&self, queue: &str, agents: &[String], limit: usize) -> Result<Vec<(String, Option<String>)>> {
        let agents = serde_json::to_string(agents).map_err(|e| crate::Error::internal("encoding agent ids", e))?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, target FROM instructions
             WHERE status = 'pending' AND queue = ?1 AND held IS NULL
               AND (target IS NULL OR target IN (SELECT value FROM json_each(?2)))
             ORDER BY position, created_at LIMIT ?3",
        )?;
        let rows = stmt
            .query_map(params![queue, agents, limit as i64], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// Pending instruction ids of `queue` in delivery order.
    pub fn pending_ids(&self, queue: &str) -> Result<Vec<String>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id FROM instructions WHERE status = 'pending' AND queue = ?1 ORDER BY position, created_at",
        )?;
        let ids = stmt
            .query_map([queue], |r| r.get(0))?
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

    /// The lowest position among `queue`'s pending instructions (where a reordered rail starts).
    pub fn min_pending_position(&self, queue: &str) -> Result<Option<i64>> {
        Ok(self.conn.query_row(
            "SELECT MIN(position) FROM instructions WHERE status = 'pending' AND queue = ?1",
            [queue],
            |r| r.get(0),
        )?)
    }

    pub fn counts(&self) -> Result<QueueCounts> {
        Ok(QueueTally::totals(&self.queue_tallies()?, self.in_doubt_count()?))
    }

    /// Deliveries in doubt, in every queue (an index lookup).
    pub fn in_doubt_count(&self) -> Result<u64> {
        let n: i64 = self
            .conn
            .prepare_cached("SELECT COUNT(*) FROM instructions WHERE delivery = 'in_doubt'")?
            .query_row([], |r| r.get(0))?;
        Ok(n as u64)
    }
}

/// The claim's statement (its text is also its key in the statement cache).
pub(in crate::store) fn claim_sql() -> String {
    format!(
        "UPDATE instructions
         SET status = 'consumed', consumed_at = ?2, consumed_by_agent_id = ?1, updated_at = ?2,
             delivery = 'claimed'
         WHERE id = (SELECT id FROM instructions
                     WHERE status = 'pending' AND queue = ?3 AND (target IS NULL OR target = ?1)
                       AND held IS NULL AND (?4 IS NULL OR id = ?4)
                     ORDER BY position LIMIT 1)
         RETURNING {INSTRUCTION_COLUMNS}"
    )
}
