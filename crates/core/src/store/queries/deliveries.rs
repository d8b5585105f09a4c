//! Deliveries: claiming the head of a queue for an agent, what it may take,
//! and each delivery's fate (claimed, sent, confirmed, in doubt, resent).

use rusqlite::{params, OptionalExtension};

use super::instructions::instruction_from_row;
use super::queues::QueueTally;
use super::Db;
use super::INSTRUCTION_COLUMNS;
use crate::model::{Delivery, Instruction, Listing, StatusFilter};
use crate::Result;

impl<'c> Db<'c> {
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
    /// Only a doubt of this database's own claims: one that came from an
    /// import or a restore (`held`) names an agent the file chose, and goes
    /// again only when the person sends it.
    pub fn reclaim_in_doubt(&self, queue: &str, agent_id: &str, now: &str) -> Result<Option<Instruction>> {
        Ok(self
            .conn
            .prepare_cached(&format!(
                "UPDATE instructions SET delivery = 'claimed', consumed_at = ?3, updated_at = ?3
                 WHERE id = (SELECT id FROM instructions
                             WHERE delivery = 'in_doubt' AND queue = ?1 AND consumed_by_agent_id = ?2
                               AND held IS NULL
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
                 WHERE status = 'pending' AND queue = ?1 AND target IS NOT NULL AND held IS NULL",
            )?
            .query_row([queue, agent_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
        let held = self.held_count(Some(queue))?;
        Ok((all, (all + mine as u64).saturating_sub(addressed as u64 + held)))
    }

    /// How many pending instructions of `queue` `agent_id` could take.
    pub fn eligible_count(&self, queue: &str, agent_id: &str) -> Result<u64> {
        Ok(self.pending_in(queue, agent_id)?.1)
    }

    /// How many pending instructions are held (from an import or a restore),
    /// in `queue` or in all.
    pub fn held_count(&self, queue: Option<&str>) -> Result<u64> {
        let n: i64 = self
            .conn
            .prepare_cached(
                "SELECT COUNT(*) FROM instructions
                 WHERE status = 'pending' AND held IS NOT NULL AND (?1 IS NULL OR queue = ?1)",
            )?
            .query_row([queue], |r| r.get(0))?;
        Ok(n.max(0) as u64)
    }

    /// Release the held pending instructions of `queue` (or of all queues):
    /// they are deliverable from now on. Returns them as they are now.
    pub fn release_held(&self, queue: Option<&str>, now: &str) -> Result<Vec<crate::model::Instruction>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "UPDATE instructions SET held = NULL, updated_at = ?2
             WHERE status = 'pending' AND held IS NOT NULL AND (?1 IS NULL OR queue = ?1)
             RETURNING {}",
            super::INSTRUCTION_COLUMNS
        ))?;
        let rows = stmt
            .query_map(params![queue, now], super::instructions::instruction_from_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// Hold every pending instruction (a restored database's), saying why;
    /// how many. Its deliveries left open or in doubt are marked as from
    /// outside too (a claim it left open is in doubt here), so they are
    /// never claimed again on their own ([`Db::reclaim_in_doubt`]).
    pub fn hold_all_pending(&self, why: &str) -> Result<u64> {
        self.conn.execute(
            "UPDATE instructions SET held = ?1, delivery = 'in_doubt'
             WHERE status = 'consumed' AND delivery IN ('claimed', 'in_doubt') AND held IS NULL",
            [why],
        )?;
        let n = self.conn.execute(
            "UPDATE instructions SET held = ?1 WHERE status = 'pending' AND held IS NULL",
            [why],
        )?;
        Ok(n as u64)
    }

    /// How many instructions of `queue` are pending: the count the triggers
    /// of migration 8 keep, one row read. Every claim asks; counting the
    /// queue's index instead took ~160 µs at 4,000 pending, under the
    /// store's write lock.
    pub fn queue_pending_count(&self, queue: &str) -> Result<u64> {
        let n: Option<i64> = self
            .conn
            .prepare_cached("SELECT n FROM queue_counts WHERE queue = ?1 AND status = 'pending'")?
            .query_row([queue], |r| r.get(0))
            .optional()?;
        Ok(n.unwrap_or(0).max(0) as u64)
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
                    held: 0,
                });
            }
            if let Some(t) = tallies.last_mut() {
                match status.as_str() {
                    "pending" => t.pending = n,
                    _ => t.consumed = n,
                }
            }
        }
        // Held ones are few, and have an index of their own.
        let mut held = self.conn.prepare_cached(
            "SELECT queue, COUNT(*) FROM instructions
             WHERE status = 'pending' AND held IS NOT NULL GROUP BY queue",
        )?;
        let mut rows = held.query([])?;
        while let Some(r) = rows.next()? {
            let queue: String = r.get(0)?;
            let n = r.get::<_, i64>(1)? as u64;
            if let Some(t) = tallies.iter_mut().find(|t| t.queue == queue) {
                t.held = n;
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
}
