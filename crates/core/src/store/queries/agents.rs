//! Agents' activity per queue: when each was seen, what its calls got, its
//! client and client session, a pending stop.

use rusqlite::{params, OptionalExtension};

use super::Db;
use crate::model::{AgentActivity, ResultType};
use crate::Result;

impl<'c> Db<'c> {
    /// Record that an agent called in `queue` (and, with `fetch`, what its call returned).
    pub fn touch_agent(&self, queue: &str, agent_id: &str, now: &str, fetch_result: Option<ResultType>) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT INTO agent_activity (queue, agent_id, last_seen_at, last_fetch_at, last_result_type)
                 VALUES (?4, ?1, ?2, CASE WHEN ?3 IS NULL THEN NULL ELSE ?2 END, ?3)
                 ON CONFLICT(queue, agent_id) DO UPDATE SET
                   last_seen_at = excluded.last_seen_at,
                   last_fetch_at = COALESCE(excluded.last_fetch_at, agent_activity.last_fetch_at),
                   last_result_type = COALESCE(excluded.last_result_type, agent_activity.last_result_type),
                   left_at = NULL",
            )?
            .execute(params![agent_id, now, fetch_result.map(ResultType::as_str), queue])?;
        Ok(())
    }

    /// Its waiting call ended because its client went away: the agent is gone.
    pub fn agent_left(&self, queue: &str, agent_id: &str, now: &str) -> Result<()> {
        self.conn
            .prepare_cached("UPDATE agent_activity SET left_at = ?3 WHERE queue = ?1 AND agent_id = ?2")?
            .execute(params![queue, agent_id, now])?;
        Ok(())
    }

    /// Forget one agent of `queue`: its row goes (a later call lists it
    /// again); what was forgotten, as (queue, agent id).
    pub fn forget_agent(
        &self,
        queue: &str,
        agent_id: &str,
    ) -> Result<Option<(crate::model::QueueName, crate::model::AgentId)>> {
        Ok(self
            .conn
            .prepare_cached("DELETE FROM agent_activity WHERE queue = ?1 AND agent_id = ?2 RETURNING queue, agent_id")?
            .query_row(params![queue, agent_id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?)
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
                    client, client_version, session, left_at FROM agent_activity
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
                left_at: r.get("left_at")?,
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
    pub fn agent_of_session(&self, queue: &str, session: &str) -> Result<Option<crate::model::AgentId>> {
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
    pub fn agents_of_client(&self, queue: &str, client: &str, since: &str) -> Result<Vec<crate::model::AgentId>> {
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
}
