//! Tasks (`get_user_request` as an MCP task): their rows, each all there is
//! of its task. Binding an instruction happens in the claim's transaction
//! (`queue/claim.rs`), through [`Db::complete_task`].

use rusqlite::{params, OptionalExtension, Row};

use super::Db;
use crate::model::{TaskRecord, TaskStatus, UserRequestResult};
use crate::{Error, Result};

const TASK_COLUMNS: &str =
    "id, queue, agent_id, status, status_message, instruction_id, result, created_at, updated_at, polled_at";

fn task_from_row(row: &Row<'_>) -> rusqlite::Result<TaskRecord> {
    let status: String = row.get("status")?;
    let result: Option<String> = row.get("result")?;
    Ok(TaskRecord {
        id: row.get("id")?,
        queue: row.get("queue")?,
        agent_id: row.get("agent_id")?,
        // The table's CHECK admits only these.
        status: TaskStatus::parse(&status).unwrap_or(TaskStatus::Cancelled),
        status_message: row.get("status_message")?,
        instruction_id: row.get("instruction_id")?,
        // Written by `complete_task` from a result; unreadable is none.
        result: result.and_then(|r| serde_json::from_str(&r).ok()),
        created_at: row.get("created_at")?,
        updated_at: row.get("updated_at")?,
        polled_at: row.get("polled_at")?,
    })
}

impl<'c> Db<'c> {
    pub fn insert_task(&self, t: &TaskRecord) -> Result<()> {
        self.conn
            .prepare_cached(&format!(
                "INSERT INTO tasks ({TASK_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL, ?7, ?8, ?9)"
            ))?
            .execute(params![
                t.id,
                t.queue,
                t.agent_id,
                t.status.as_str(),
                t.status_message,
                t.instruction_id,
                t.created_at,
                t.updated_at,
                t.polled_at,
            ])?;
        Ok(())
    }

    pub fn task(&self, id: &str) -> Result<Option<TaskRecord>> {
        Ok(self
            .conn
            .prepare_cached(&format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = ?1"))?
            .query_row([id], task_from_row)
            .optional()?)
    }

    /// Bind `result` (carrying `instruction_id`, if any) to a working task;
    /// whether it was still working.
    pub fn complete_task(
        &self,
        id: &str,
        instruction_id: Option<&str>,
        result: &UserRequestResult,
        now: &str,
    ) -> Result<bool> {
        let json = serde_json::to_string(result).map_err(|e| Error::internal("encoding a task's result", e))?;
        Ok(self
            .conn
            .prepare_cached(
                "UPDATE tasks SET status = 'completed', status_message = NULL, instruction_id = ?2, result = ?3, updated_at = ?4
                 WHERE id = ?1 AND status = 'working'",
            )?
            .execute(params![id, instruction_id, json, now])?
            > 0)
    }

    /// End a working task with nothing bound; whether it was still working
    /// (a poll may have bound it meanwhile: then it is not touched).
    pub fn cancel_working_task(&self, id: &str, message: &str, now: &str) -> Result<bool> {
        Ok(self
            .conn
            .prepare_cached(
                "UPDATE tasks SET status = 'cancelled', status_message = ?2, updated_at = ?3
                 WHERE id = ?1 AND status = 'working'",
            )?
            .execute(params![id, message, now])?
            > 0)
    }

    /// End a task with nothing bound, or with what it carried taken back;
    /// whether it was not ended already.
    pub fn cancel_task(&self, id: &str, message: &str, now: &str) -> Result<bool> {
        Ok(self
            .conn
            .prepare_cached(
                "UPDATE tasks SET status = 'cancelled', status_message = ?2, updated_at = ?3
                 WHERE id = ?1 AND status <> 'cancelled'",
            )?
            .execute(params![id, message, now])?
            > 0)
    }

    /// Cancel the task bound to `instruction_id` (it goes again on a newer
    /// call): a late poll of it must not hand it over a second time.
    pub fn cancel_task_of_instruction(&self, instruction_id: &str, message: &str, now: &str) -> Result<()> {
        self.conn
            .prepare_cached(
                "UPDATE tasks SET status = 'cancelled', status_message = ?2, updated_at = ?3
                 WHERE instruction_id = ?1 AND status = 'completed'",
            )?
            .execute(params![instruction_id, message, now])?;
        Ok(())
    }

    /// Note a poll (the column is kept to the hour by its caller).
    pub fn task_polled(&self, id: &str, now: &str) -> Result<()> {
        self.conn
            .prepare_cached("UPDATE tasks SET polled_at = ?2 WHERE id = ?1")?
            .execute(params![id, now])?;
        Ok(())
    }

    /// Forget the tasks nobody asked for since `before`; how many.
    pub fn forget_tasks_polled_before(&self, before: &str) -> Result<usize> {
        Ok(self
            .conn
            .prepare_cached("DELETE FROM tasks WHERE polled_at < ?1")?
            .execute([before])?)
    }

    /// The working tasks of `queue`'s `agent_id`, oldest first.
    pub fn working_tasks_of(&self, queue: &str, agent_id: &str) -> Result<Vec<String>> {
        let rows = self
            .conn
            .prepare_cached(
                "SELECT id FROM tasks WHERE queue = ?1 AND agent_id = ?2 AND status = 'working' ORDER BY created_at",
            )?
            .query_map([queue, agent_id], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<String>>>()?;
        Ok(rows)
    }
}
