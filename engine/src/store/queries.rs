//! Every statement the product runs, as typed methods on [`Db`], a borrowed
//! connection or transaction. Callers compose them inside `Store::read` /
//! `Store::write`; none of them opens or commits a transaction itself.

use rusqlite::{params, Connection, OptionalExtension, Row};

use crate::model::{
    AgentActivity, Attachment, Delivery, DeliveryCopy, Instruction, InstructionStatus, Listing, QueueCounts,
    QueueRecord, Report, ResultType, Settings, StatusFilter, Template, TemplateFile,
};
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
    "id, content, status, created_at, updated_at, consumed_at, consumed_by_agent_id, position, queue, target, delivery, answers";

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
        queue: row.get("queue")?,
        target: row.get("target")?,
        delivery: row
            .get::<_, Option<String>>("delivery")?
            .as_deref()
            .and_then(Delivery::parse),
        answers: row.get("answers")?,
        report: None,
        attachments: Vec::new(),
    })
}

const REPORT_COLUMNS: &str = "id, queue, agent_id, instruction_id, content, options, html, created_at";

fn report_from_row(row: &Row<'_>) -> rusqlite::Result<Report> {
    let options: String = row.get("options")?;
    Ok(Report {
        id: row.get("id")?,
        queue: row.get("queue")?,
        agent_id: row.get("agent_id")?,
        instruction_id: row.get("instruction_id")?,
        content: row.get("content")?,
        // Written by `insert_report` from a Vec<String>; unreadable means none.
        options: serde_json::from_str(&options).unwrap_or_default(),
        html: row.get("html")?,
        created_at: row.get("created_at")?,
    })
}

const ATTACHMENT_COLUMNS: &str = "id, instruction_id, ordinal, name, kind, mime_type, bytes, width, height, sha256, \
    file, delivery_file, delivery_mime_type, delivery_bytes, delivery_width, delivery_height, created_at";

/// An attachment row: the metadata, and the names of its two files in the
/// instruction's folder (the same name twice for a text file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachmentRow {
    pub attachment: Attachment,
    pub ordinal: i64,
    pub file: String,
    pub delivery_file: String,
}

fn attachment_from_row(row: &Row<'_>) -> rusqlite::Result<AttachmentRow> {
    Ok(AttachmentRow {
        attachment: Attachment {
            id: row.get("id")?,
            instruction_id: row.get("instruction_id")?,
            name: row.get("name")?,
            kind: row.get("kind")?,
            mime_type: row.get("mime_type")?,
            bytes: row.get::<_, i64>("bytes")? as u64,
            width: row.get("width")?,
            height: row.get("height")?,
            sha256: row.get("sha256")?,
            delivery: DeliveryCopy {
                mime_type: row.get("delivery_mime_type")?,
                bytes: row.get::<_, i64>("delivery_bytes")? as u64,
                width: row.get("delivery_width")?,
                height: row.get("delivery_height")?,
            },
            created_at: row.get("created_at")?,
        },
        ordinal: row.get("ordinal")?,
        file: row.get("file")?,
        delivery_file: row.get("delivery_file")?,
    })
}

fn queue_from_row(row: &Row<'_>) -> rusqlite::Result<QueueRecord> {
    Ok(QueueRecord {
        name: row.get("name")?,
        held: row.get("held")?,
        archived: row.get("archived")?,
        created_at: row.get("created_at")?,
        suffix: row.get("suffix")?,
    })
}

fn template_from_row(row: &Row<'_>) -> rusqlite::Result<Template> {
    Ok(Template {
        name: row.get("name")?,
        content: row.get("content")?,
        created_at: row.get("created_at")?,
        updated_at: row.get("updated_at")?,
        files: Vec::new(),
    })
}

/// A template's file: what the API shows, and its name on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateFileRow {
    pub file: TemplateFile,
    pub stored: String,
}

const TEMPLATE_FILE_COLUMNS: &str = "ordinal, name, kind, mime_type, bytes, sha256, file, created_at";

fn template_file_from_row(row: &Row<'_>) -> rusqlite::Result<TemplateFileRow> {
    Ok(TemplateFileRow {
        file: TemplateFile {
            ordinal: row.get("ordinal")?,
            name: row.get("name")?,
            kind: row.get("kind")?,
            mime_type: row.get("mime_type")?,
            bytes: row.get::<_, i64>("bytes")? as u64,
            sha256: row.get("sha256")?,
            created_at: row.get("created_at")?,
        },
        stored: row.get("file")?,
    })
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

/// Per-queue instruction counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueTally {
    pub queue: String,
    pub pending: u64,
    pub consumed: u64,
}

impl QueueTally {
    /// The totals over every queue's tally, with the deliveries in doubt.
    pub fn totals(tallies: &[QueueTally], in_doubt_count: u64) -> QueueCounts {
        QueueCounts {
            pending_count: tallies.iter().map(|t| t.pending).sum(),
            consumed_count: tallies.iter().map(|t| t.consumed).sum(),
            in_doubt_count,
        }
    }
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

    pub(super) fn conn(&self) -> &'c Connection {
        self.conn
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
                i.answers
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
            .prepare_cached(&format!(
                "UPDATE instructions
                 SET status = 'consumed', consumed_at = ?2, consumed_by_agent_id = ?1, updated_at = ?2,
                     delivery = 'claimed'
                 WHERE id = (SELECT id FROM instructions
                             WHERE status = 'pending' AND queue = ?3 AND (target IS NULL OR target = ?1)
                               AND (?4 IS NULL OR id = ?4)
                             ORDER BY position LIMIT 1)
                 RETURNING {INSTRUCTION_COLUMNS}"
            ))?
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
             WHERE status = 'pending' AND queue = ?1
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

    // ---- deliveries ---------------------------------------------------------

    /// Move the delivery of `id` from `from` to `to`; the row as it is now,
    /// or `None` when its delivery was not `from` (already settled otherwise).
    pub fn set_delivery(&self, id: &str, from: Delivery, to: Delivery, now: &str) -> Result<Option<Instruction>> {
        Ok(self
            .conn
            .prepare_cached(&format!(
                "UPDATE instructions SET delivery = ?3, updated_at = ?4
                 WHERE id = ?1 AND delivery = ?2
                 RETURNING {INSTRUCTION_COLUMNS}"
            ))?
            .query_row(params![id, from.as_str(), to.as_str(), now], instruction_from_row)
            .optional()?)
    }

    /// The agent called again (or reported): what was sent to it arrived.
    /// Returns how many were confirmed.
    pub fn confirm_sent(&self, queue: &str, agent_id: &str, now: &str) -> Result<usize> {
        Ok(self
            .conn
            .prepare_cached(
                "UPDATE instructions SET delivery = 'confirmed', updated_at = ?3
                 WHERE delivery = 'sent' AND queue = ?1 AND consumed_by_agent_id = ?2",
            )?
            .execute(params![queue, agent_id, now])?)
    }

    /// How many of `agent_id`'s deliveries in `queue` are claimed and not yet
    /// settled (their answer is still on its way, or just cut off).
    pub fn open_claims_of(&self, queue: &str, agent_id: &str) -> Result<u64> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT COUNT(*) FROM instructions
                 WHERE status = 'consumed' AND queue = ?1 AND consumed_by_agent_id = ?2 AND delivery = 'claimed'",
            )?
            .query_row([queue, agent_id], |r| r.get::<_, i64>(0))? as u64)
    }

    /// Claims a crash left open (no answer was known to be written): in doubt.
    pub fn doubt_open_claims(&self, now: &str) -> Result<Vec<Instruction>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "UPDATE instructions SET delivery = 'in_doubt', updated_at = ?1
             WHERE delivery = 'claimed'
             RETURNING {INSTRUCTION_COLUMNS}"
        ))?;
        let rows = stmt
            .query_map(params![now], instruction_from_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// Deliver again, to the same agent, the oldest of its in-doubt
    /// deliveries in `queue` (the `redeliver_in_doubt` setting): claimed anew.
    pub fn reclaim_in_doubt(&self, queue: &str, agent_id: &str, now: &str) -> Result<Option<Instruction>> {
        Ok(self
            .conn
            .prepare_cached(&format!(
                "UPDATE instructions SET delivery = 'claimed', consumed_at = ?3, updated_at = ?3
                 WHERE id = (SELECT id FROM instructions
                             WHERE delivery = 'in_doubt' AND queue = ?1 AND consumed_by_agent_id = ?2
                             ORDER BY consumed_at LIMIT 1)
                 RETURNING {INSTRUCTION_COLUMNS}"
            ))?
            .query_row(params![queue, agent_id, now], instruction_from_row)
            .optional()?)
    }

    /// How many instructions of `queue` are pending, and how many of them
    /// `agent_id` could take. Every claim asks, so the second number is not
    /// a second walk of the queue: it is the first minus the addressed ones
    /// plus those addressed to this agent, both counted in the small index of
    /// addressed instructions.
    pub fn pending_in(&self, queue: &str, agent_id: &str) -> Result<(u64, u64)> {
        let all = self.queue_pending_count(queue)?;
        let (addressed, mine): (i64, i64) = self
            .conn
            .prepare_cached(
                "SELECT COUNT(*), COALESCE(SUM(target = ?2), 0) FROM instructions
                 WHERE status = 'pending' AND queue = ?1 AND target IS NOT NULL",
            )?
            .query_row([queue, agent_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok((all, (all + mine as u64).saturating_sub(addressed as u64)))
    }

    /// How many pending instructions of `queue` `agent_id` could take.
    pub fn eligible_count(&self, queue: &str, agent_id: &str) -> Result<u64> {
        Ok(self.pending_in(queue, agent_id)?.1)
    }

    /// How many instructions of `queue` are pending.
    pub fn queue_pending_count(&self, queue: &str) -> Result<u64> {
        let n: i64 = self
            .conn
            .prepare_cached("SELECT COUNT(*) FROM instructions WHERE status = 'pending' AND queue = ?1")?
            .query_row([queue], |r| r.get(0))?;
        Ok(n as u64)
    }

    /// Pending and consumed counts per queue that has instructions.
    pub fn queue_tallies(&self) -> Result<Vec<QueueTally>> {
        // Kept by triggers (migration 8): a few rows, whatever the history's size.
        let mut stmt = self
            .conn
            .prepare_cached("SELECT queue, status, n FROM queue_counts WHERE n > 0 ORDER BY queue, status")?;
        let mut tallies: Vec<QueueTally> = Vec::new();
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let queue: String = r.get("queue")?;
            let status: String = r.get("status")?;
            let n = r.get::<_, i64>("n")? as u64;
            if tallies.last().is_none_or(|t| t.queue != queue) {
                tallies.push(QueueTally {
                    queue,
                    pending: 0,
                    consumed: 0,
                });
            }
            if let Some(t) = tallies.last_mut() {
                match status.as_str() {
                    "pending" => t.pending = n,
                    _ => t.consumed = n,
                }
            }
        }
        Ok(tallies)
    }

    /// Instructions for a listing: pending in delivery order, then consumed
    /// newest first (at most `limit` of them, skipping `offset`); `queue` and
    /// `target` (when given) keep only that queue's and that agent's.
    pub fn list(&self, listing: &Listing) -> Result<Vec<Instruction>> {
        let (filter, queue, target) = (listing.status, listing.queue.as_deref(), listing.target.as_deref());
        let (consumed_limit, consumed_offset) = (listing.limit, listing.offset);
        let mut items = Vec::new();
        if filter != StatusFilter::Consumed {
            let mut stmt = self.conn.prepare_cached(&format!(
                "SELECT {INSTRUCTION_COLUMNS} FROM instructions
                 WHERE status = 'pending' AND (?1 IS NULL OR queue = ?1) AND (?2 IS NULL OR target = ?2)
                 ORDER BY position, created_at"
            ))?;
            let rows = stmt.query_map(params![queue, target], instruction_from_row)?;
            for row in rows {
                items.push(row?);
            }
        }
        if filter != StatusFilter::Pending {
            let limit = consumed_limit.map(i64::from).unwrap_or(-1);
            let h = &listing.history;
            // The search finds rows by the instruction's words or its report's
            // (FTS5, both indexes); the rest are plain column filters.
            let mut stmt = self.conn.prepare_cached(&format!(
                "SELECT {INSTRUCTION_COLUMNS} FROM instructions
                 WHERE status = 'consumed' AND (?3 IS NULL OR queue = ?3) AND (?4 IS NULL OR target = ?4)
                   AND (?5 IS NULL OR consumed_by_agent_id = ?5)
                   AND (?6 IS NULL OR consumed_at >= ?6) AND (?7 IS NULL OR consumed_at < ?7)
                   AND (?8 IS NULL OR rowid IN (
                         SELECT rowid FROM instructions_fts WHERE instructions_fts MATCH ?8
                         UNION
                         SELECT i.rowid FROM reports_fts
                           JOIN reports r ON r.rowid = reports_fts.rowid
                           JOIN instructions i ON i.id = r.instruction_id
                          WHERE reports_fts MATCH ?8))
                 ORDER BY consumed_at DESC, position DESC LIMIT ?1 OFFSET ?2"
            ))?;
            let rows = stmt.query_map(
                params![
                    limit,
                    consumed_offset,
                    queue,
                    target,
                    h.agent,
                    h.since,
                    h.until,
                    h.search
                ],
                instruction_from_row,
            )?;
            for row in rows {
                items.push(row?);
            }
        }
        Ok(items)
    }

    /// Whether the search indexes agree with their tables (SQLite allows a
    /// `VACUUM INTO` copy, as older backups were made, new rowids).
    pub fn search_index_in_step(&self) -> Result<bool> {
        let ok = |table: &str| -> Result<bool> {
            match self.conn.execute(
                &format!("INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)"),
                [],
            ) {
                Ok(_) => Ok(true),
                Err(rusqlite::Error::SqliteFailure(e, _)) if e.code == rusqlite::ErrorCode::DatabaseCorrupt => {
                    Ok(false)
                }
                Err(e) => Err(e.into()),
            }
        };
        Ok(ok("instructions_fts")? && ok("reports_fts")?)
    }

    /// Rebuild both search indexes from their tables.
    pub fn rebuild_search_index(&self) -> Result<()> {
        self.conn.execute_batch(
            "INSERT INTO instructions_fts(instructions_fts) VALUES ('rebuild');
             INSERT INTO reports_fts(reports_fts) VALUES ('rebuild');",
        )?;
        Ok(())
    }

    // ---- attachments --------------------------------------------------------

    pub fn insert_attachment(&self, a: &AttachmentRow) -> Result<()> {
        let m = &a.attachment;
        self.conn
            .prepare_cached(&format!(
                "INSERT INTO attachments ({ATTACHMENT_COLUMNS})
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)"
            ))?
            .execute(params![
                m.id,
                m.instruction_id,
                a.ordinal,
                m.name,
                m.kind,
                m.mime_type,
                m.bytes as i64,
                m.width,
                m.height,
                m.sha256,
                a.file,
                a.delivery_file,
                m.delivery.mime_type,
                m.delivery.bytes as i64,
                m.delivery.width,
                m.delivery.height,
                m.created_at
            ])?;
        Ok(())
    }

    /// One instruction's attachments, in order.
    pub fn attachments_of(&self, instruction_id: &str) -> Result<Vec<AttachmentRow>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {ATTACHMENT_COLUMNS} FROM attachments WHERE instruction_id = ?1 ORDER BY ordinal"
        ))?;
        let rows = stmt
            .query_map([instruction_id], attachment_from_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// Fill in the attachments of each instruction (one index seek each).
    pub fn fill_attachments(&self, items: &mut [Instruction]) -> Result<()> {
        for item in items {
            item.attachments = self
                .attachments_of(&item.id)?
                .into_iter()
                .map(|r| r.attachment)
                .collect();
        }
        Ok(())
    }

    pub fn get_attachment(&self, id: &str) -> Result<Option<AttachmentRow>> {
        Ok(self
            .conn
            .prepare_cached(&format!("SELECT {ATTACHMENT_COLUMNS} FROM attachments WHERE id = ?1"))?
            .query_row([id], attachment_from_row)
            .optional()?)
    }

    pub fn delete_attachment(&self, id: &str) -> Result<()> {
        self.conn
            .prepare_cached("DELETE FROM attachments WHERE id = ?1")?
            .execute([id])?;
        Ok(())
    }

    /// Every (instruction id, file name) some row names: what the folder keeps.
    pub fn attachment_files(&self) -> Result<std::collections::HashSet<(String, String)>> {
        let mut stmt = self
            .conn
            .prepare("SELECT instruction_id, file, delivery_file FROM attachments")?;
        let mut kept = std::collections::HashSet::new();
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let instruction: String = r.get(0)?;
            kept.insert((instruction.clone(), r.get(1)?));
            kept.insert((instruction, r.get(2)?));
        }
        let mut stmt = self.conn.prepare("SELECT template, file FROM template_files")?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let template: String = r.get(0)?;
            kept.insert((super::files::template_folder(&template), r.get(1)?));
        }
        Ok(kept)
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

    /// This database's random instance id (`meta.instance`, made by migration 9).
    pub fn instance(&self) -> Result<String> {
        Ok(self
            .conn
            .query_row("SELECT value FROM meta WHERE key = 'instance'", [], |r| r.get(0))?)
    }

    // ---- agents -------------------------------------------------------------

    /// Record that an agent called in `queue` (and, with `fetch`, what its call returned).
    pub fn touch_agent(&self, queue: &str, agent_id: &str, now: &str, fetch_result: Option<ResultType>) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT INTO agent_activity (queue, agent_id, last_seen_at, last_fetch_at, last_result_type)
                 VALUES (?4, ?1, ?2, CASE WHEN ?3 IS NULL THEN NULL ELSE ?2 END, ?3)
                 ON CONFLICT(queue, agent_id) DO UPDATE SET
                   last_seen_at = excluded.last_seen_at,
                   last_fetch_at = COALESCE(excluded.last_fetch_at, agent_activity.last_fetch_at),
                   last_result_type = COALESCE(excluded.last_result_type, agent_activity.last_result_type)",
            )?
            .execute(params![agent_id, now, fetch_result.map(ResultType::as_str), queue])?;
        Ok(())
    }

    /// Ask an agent of `queue` to stop; `false` when no such agent was ever seen.
    pub fn request_stop(&self, queue: &str, agent_id: &str, now: &str) -> Result<bool> {
        Ok(self
            .conn
            .prepare_cached("UPDATE agent_activity SET stop_requested_at = ?3 WHERE queue = ?1 AND agent_id = ?2")?
            .execute(params![queue, agent_id, now])?
            > 0)
    }

    /// Agents with a stop request not delivered yet, as (queue, agent id).
    pub fn pending_stops(&self) -> Result<Vec<(String, String)>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT queue, agent_id FROM agent_activity WHERE stop_requested_at IS NOT NULL")?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// Consume a pending stop request (one-shot); `true` if there was one.
    pub fn take_stop(&self, queue: &str, agent_id: &str) -> Result<bool> {
        Ok(self
            .conn
            .prepare_cached(
                "UPDATE agent_activity SET stop_requested_at = NULL
                 WHERE queue = ?1 AND agent_id = ?2 AND stop_requested_at IS NOT NULL",
            )?
            .execute(params![queue, agent_id])?
            > 0)
    }

    /// Known agents, most recently seen first.
    pub fn agents(&self, limit: u32) -> Result<Vec<AgentActivity>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT queue, agent_id, last_seen_at, last_fetch_at, last_result_type, stop_requested_at,
                    client, client_version, session FROM agent_activity
             ORDER BY last_seen_at DESC, queue, agent_id LIMIT ?1",
        )?;
        let rows = stmt.query_map([limit], |r| {
            let result: Option<String> = r.get("last_result_type")?;
            Ok(AgentActivity {
                queue: r.get("queue")?,
                stop_requested: r.get::<_, Option<String>>("stop_requested_at")?.is_some(),
                agent_id: r.get("agent_id")?,
                last_seen_at: r.get("last_seen_at")?,
                last_fetch_at: r.get("last_fetch_at")?,
                // An unknown value (a newer version's) reads as none.
                last_result_type: result.as_deref().and_then(ResultType::parse),
                client: r.get("client")?,
                client_version: r.get("client_version")?,
                session: r.get("session")?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// What an agent's client said about itself on its latest call (a value
    /// not given keeps what was known).
    pub fn note_caller(
        &self,
        queue: &str,
        agent_id: &str,
        client: Option<&str>,
        version: Option<&str>,
        session: Option<&str>,
    ) -> Result<()> {
        self.conn
            .prepare_cached(
                "UPDATE agent_activity SET client = COALESCE(?3, client), client_version = COALESCE(?4, client_version),
                        session = COALESCE(?5, session)
                 WHERE queue = ?1 AND agent_id = ?2",
            )?
            .execute(params![queue, agent_id, client, version, session])?;
        Ok(())
    }

    /// The agent most recently seen in `queue` from client session `session`.
    pub fn agent_of_session(&self, queue: &str, session: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT agent_id FROM agent_activity WHERE queue = ?1 AND session = ?2
                 ORDER BY last_seen_at DESC LIMIT 1",
            )?
            .query_row([queue, session], |r| r.get(0))
            .optional()?)
    }

    /// Up to two agents of `queue` whose client is `client` and that sent no
    /// client session, seen since `since` (one means: that is the agent).
    pub fn agents_of_client(&self, queue: &str, client: &str, since: &str) -> Result<Vec<String>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT agent_id FROM agent_activity
             WHERE queue = ?1 AND client = ?2 AND session IS NULL AND last_seen_at >= ?3
             ORDER BY last_seen_at DESC LIMIT 2",
        )?;
        let rows = stmt
            .query_map([queue, client, since], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    // ---- reports ------------------------------------------------------------

    pub fn insert_report(&self, r: &Report) -> Result<()> {
        let options = serde_json::to_string(&r.options).map_err(|e| crate::Error::internal("encoding options", e))?;
        self.conn
            .prepare_cached(&format!(
                "INSERT INTO reports ({REPORT_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
            ))?
            .execute(params![
                r.id,
                r.queue,
                r.agent_id,
                r.instruction_id,
                r.content,
                options,
                r.html,
                r.created_at
            ])?;
        Ok(())
    }

    /// The newest report of an agent of `queue`.
    pub fn latest_report(&self, queue: &str, agent_id: &str) -> Result<Option<Report>> {
        Ok(self
            .conn
            .prepare_cached(&format!(
                "SELECT {REPORT_COLUMNS} FROM reports WHERE queue = ?1 AND agent_id = ?2
                 ORDER BY created_at DESC, rowid DESC LIMIT 1"
            ))?
            .query_row([queue, agent_id], report_from_row)
            .optional()?)
    }

    /// Whether an instruction has its report already.
    pub fn has_report(&self, instruction_id: &str) -> Result<bool> {
        Ok(self
            .conn
            .prepare_cached("SELECT 1 FROM reports WHERE instruction_id = ?1")?
            .query_row([instruction_id], |_| Ok(()))
            .optional()?
            .is_some())
    }

    /// The reports of these instructions (for listings).
    pub fn reports_for(&self, instruction_ids: &[String]) -> Result<Vec<Report>> {
        let ids = serde_json::to_string(instruction_ids).map_err(|e| crate::Error::internal("encoding ids", e))?;
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {REPORT_COLUMNS} FROM reports WHERE instruction_id IN (SELECT value FROM json_each(?1))"
        ))?;
        let rows = stmt
            .query_map([ids], report_from_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// Reports newest first, optionally of one queue and one agent, older than `before`.
    pub fn reports(
        &self,
        queue: Option<&str>,
        agent_id: Option<&str>,
        before: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Report>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {REPORT_COLUMNS} FROM reports
             WHERE (?1 IS NULL OR queue = ?1) AND (?2 IS NULL OR agent_id = ?2) AND (?3 IS NULL OR created_at < ?3)
             ORDER BY created_at DESC, rowid DESC LIMIT ?4"
        ))?;
        let rows = stmt
            .query_map(params![queue, agent_id, before, limit], report_from_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// The newest report of each agent of `queue`.
    pub fn latest_reports(&self, queue: &str) -> Result<Vec<Report>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {REPORT_COLUMNS} FROM reports r WHERE queue = ?1 AND rowid =
               (SELECT rowid FROM reports WHERE queue = r.queue AND agent_id = r.agent_id
                ORDER BY created_at DESC, rowid DESC LIMIT 1)
             ORDER BY created_at DESC"
        ))?;
        let rows = stmt
            .query_map([queue], report_from_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// Agents whose newest report asks something (options, or a last "?")
    /// and who were delivered nothing since: (queue, agent id, report id).
    /// Only agents that have called are looked at (the status lists no
    /// others), each with two index seeks: the history's size does not matter.
    pub fn open_questions(&self) -> Result<Vec<(String, String, String)>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT r.queue, r.agent_id, r.id FROM agent_activity a
             JOIN reports r ON r.rowid = (SELECT rowid FROM reports WHERE queue = a.queue AND agent_id = a.agent_id
                                          ORDER BY created_at DESC, rowid DESC LIMIT 1)
             WHERE (r.options <> '[]' OR rtrim(r.content) LIKE '%?')
               AND NOT EXISTS (SELECT 1 FROM instructions i INDEXED BY instructions_consumed_by_agent
                               WHERE i.status = 'consumed' AND i.queue = r.queue
                                 AND i.consumed_by_agent_id = r.agent_id AND i.consumed_at > r.created_at)",
        )?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    pub fn get_report(&self, id: &str) -> Result<Option<Report>> {
        Ok(self
            .conn
            .prepare_cached(&format!("SELECT {REPORT_COLUMNS} FROM reports WHERE id = ?1"))?
            .query_row([id], report_from_row)
            .optional()?)
    }

    /// The instruction this agent received on its previous call, if that
    /// call delivered one: (id, consumed_at). A call whose caller left before
    /// the answer is not a call here: it records no result.
    pub fn previous_delivery(&self, queue: &str, agent_id: &str) -> Result<Option<(String, String)>> {
        let last: Option<Option<String>> = self
            .conn
            .prepare_cached("SELECT last_result_type FROM agent_activity WHERE queue = ?1 AND agent_id = ?2")?
            .query_row([queue, agent_id], |r| r.get(0))
            .optional()?;
        if last.flatten().as_deref() != Some(ResultType::Instruction.as_str()) {
            return Ok(None);
        }
        Ok(self
            .conn
            .prepare_cached(
                "SELECT id, consumed_at FROM instructions
                 WHERE status = 'consumed' AND queue = ?1 AND consumed_by_agent_id = ?2
                 ORDER BY consumed_at DESC, position DESC LIMIT 1",
            )?
            .query_row([queue, agent_id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?)
    }

    // ---- queues -------------------------------------------------------------

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

    // ---- templates ----------------------------------------------------------

    /// Every template, by name.
    pub fn templates(&self) -> Result<Vec<Template>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT name, content, created_at, updated_at FROM templates ORDER BY name")?;
        let rows = stmt
            .query_map([], template_from_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    pub fn get_template(&self, name: &str) -> Result<Option<Template>> {
        Ok(self
            .conn
            .prepare_cached("SELECT name, content, created_at, updated_at FROM templates WHERE name = ?1")?
            .query_row([name], template_from_row)
            .optional()?)
    }

    /// Create or replace a template; returns it as stored.
    pub fn put_template(&self, name: &str, content: &str, now: &str) -> Result<Template> {
        Ok(self
            .conn
            .prepare_cached(
                "INSERT INTO templates (name, content, created_at, updated_at) VALUES (?1, ?2, ?3, ?3)
                 ON CONFLICT(name) DO UPDATE SET content = excluded.content, updated_at = excluded.updated_at
                 RETURNING name, content, created_at, updated_at",
            )?
            .query_row([name, content, now], template_from_row)?)
    }

    /// A template's files, in order.
    pub fn template_files(&self, template: &str) -> Result<Vec<TemplateFileRow>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {TEMPLATE_FILE_COLUMNS} FROM template_files WHERE template = ?1 ORDER BY ordinal"
        ))?;
        let rows = stmt
            .query_map([template], template_file_from_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    pub fn insert_template_file(&self, template: &str, f: &TemplateFileRow) -> Result<()> {
        self.conn
            .prepare_cached(&format!(
                "INSERT INTO template_files (template, {TEMPLATE_FILE_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
            ))?
            .execute(params![
                template,
                f.file.ordinal,
                f.file.name,
                f.file.kind,
                f.file.mime_type,
                f.file.bytes as i64,
                f.file.sha256,
                f.stored,
                f.file.created_at
            ])?;
        Ok(())
    }

    /// Delete one of a template's files; the row it was, if there was one.
    pub fn delete_template_file(&self, template: &str, ordinal: u32) -> Result<Option<TemplateFileRow>> {
        Ok(self
            .conn
            .prepare_cached(&format!(
                "DELETE FROM template_files WHERE template = ?1 AND ordinal = ?2 RETURNING {TEMPLATE_FILE_COLUMNS}"
            ))?
            .query_row(params![template, ordinal], template_file_from_row)
            .optional()?)
    }

    /// Delete a template; whether there was one.
    pub fn delete_template(&self, name: &str) -> Result<bool> {
        Ok(self
            .conn
            .prepare_cached("DELETE FROM templates WHERE name = ?1")?
            .execute([name])?
            > 0)
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
