//! Agents' reports: storing, linking to the instruction they are on, listing,
//! and the open questions.

use rusqlite::{params, OptionalExtension, Row};

use super::Db;
use super::REPORT_COLUMNS;
use crate::model::{Report, ResultType};
use crate::Result;

pub(super) fn report_from_row(row: &Row<'_>) -> rusqlite::Result<Report> {
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

impl<'c> Db<'c> {
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
    pub fn reports_for(&self, instruction_ids: &[crate::model::InstructionId]) -> Result<Vec<Report>> {
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
    pub fn previous_delivery(
        &self,
        queue: &str,
        agent_id: &str,
    ) -> Result<Option<(crate::model::InstructionId, String)>> {
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
}
