//! The schema, as an append-only list of migrations tracked by `PRAGMA user_version`.
//!
//! Never edit or remove a shipped migration: add a new one. All pending
//! migrations run in one exclusive transaction, so a crash mid-way leaves the
//! old schema intact.

use rusqlite::{Connection, TransactionBehavior};

use crate::{Error, Result};

/// Migration `i` brings the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    // 1: instructions, settings, agent activity and the event log
    // (`docs/ARCHITECTURE.md`, "Data model").
    r#"
    CREATE TABLE instructions (
        id TEXT PRIMARY KEY NOT NULL,
        content TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending', 'consumed')),
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        consumed_at TEXT,
        consumed_by_agent_id TEXT,
        position INTEGER NOT NULL
    );
    -- The claim path reads the head of the rail: keep it an index seek.
    CREATE INDEX instructions_pending_by_position ON instructions(position) WHERE status = 'pending';
    CREATE INDEX instructions_consumed_by_time ON instructions(consumed_at, position) WHERE status = 'consumed';
    CREATE TABLE settings (
        key TEXT PRIMARY KEY NOT NULL,
        value TEXT NOT NULL
    );
    CREATE TABLE agent_activity (
        agent_id TEXT PRIMARY KEY NOT NULL,
        last_seen_at TEXT NOT NULL,
        last_fetch_at TEXT,
        last_result_type TEXT
    );
    CREATE TABLE events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        type TEXT NOT NULL,
        created_at TEXT NOT NULL,
        data TEXT NOT NULL
    );
    "#,
    // 2: named queues and targets (`docs/ARCHITECTURE.md`, "Queues and
    // targets"). Everything that exists goes to `default`, addressed to anyone;
    // agents are known per queue, so their table is rebuilt with the wider key.
    r#"
    ALTER TABLE instructions ADD COLUMN queue TEXT NOT NULL DEFAULT 'default';
    ALTER TABLE instructions ADD COLUMN target TEXT;
    DROP INDEX instructions_pending_by_position;
    -- Covers the claim (its queue in order, the target checked in the index)
    -- and the count of what one agent may take, without reading rows.
    CREATE INDEX instructions_pending_by_queue ON instructions(queue, position, target) WHERE status = 'pending';
    -- Per-queue counts for every status report, from the index alone.
    CREATE INDEX instructions_by_queue_status ON instructions(queue, status);
    -- The few addressed instructions, so "what may this agent take" is the
    -- queue's count adjusted by two small counts (`Db::pending_in`).
    CREATE INDEX instructions_pending_targeted ON instructions(queue, target) WHERE status = 'pending' AND target IS NOT NULL;
    CREATE TABLE queues (
        name TEXT PRIMARY KEY NOT NULL,
        held INTEGER NOT NULL DEFAULT 0 CHECK (held IN (0, 1)),
        archived INTEGER NOT NULL DEFAULT 0 CHECK (archived IN (0, 1)),
        created_at TEXT NOT NULL
    );
    INSERT INTO queues (name, created_at) VALUES ('default', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
    INSERT OR IGNORE INTO queues (name, created_at)
        SELECT DISTINCT queue, strftime('%Y-%m-%dT%H:%M:%fZ', 'now') FROM instructions;
    CREATE TABLE agent_activity_by_queue (
        queue TEXT NOT NULL DEFAULT 'default',
        agent_id TEXT NOT NULL,
        last_seen_at TEXT NOT NULL,
        last_fetch_at TEXT,
        last_result_type TEXT,
        stop_requested_at TEXT,
        PRIMARY KEY (queue, agent_id)
    );
    INSERT INTO agent_activity_by_queue (agent_id, last_seen_at, last_fetch_at, last_result_type)
        SELECT agent_id, last_seen_at, last_fetch_at, last_result_type FROM agent_activity;
    DROP TABLE agent_activity;
    ALTER TABLE agent_activity_by_queue RENAME TO agent_activity;
    "#,
    // 3: reports, what agents tell the person (`docs/ARCHITECTURE.md`, "Reports").
    // At most one report per instruction; the rest stand alone.
    r#"
    CREATE TABLE reports (
        id TEXT PRIMARY KEY NOT NULL,
        queue TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        instruction_id TEXT,
        content TEXT NOT NULL,
        options TEXT NOT NULL DEFAULT '[]',
        html TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE UNIQUE INDEX reports_by_instruction ON reports(instruction_id) WHERE instruction_id IS NOT NULL;
    CREATE INDEX reports_by_agent ON reports(queue, agent_id, created_at);
    CREATE INDEX reports_by_time ON reports(created_at);
    "#,
    // 4: attachments (`docs/ARCHITECTURE.md`, "Attachments"). The files live
    // beside the database; a row exists only once its files are on disk.
    // Deleting a (pending) instruction deletes its rows with it.
    r#"
    CREATE TABLE attachments (
        id TEXT PRIMARY KEY NOT NULL,
        instruction_id TEXT NOT NULL REFERENCES instructions(id) ON DELETE CASCADE,
        ordinal INTEGER NOT NULL,
        name TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('image', 'text')),
        mime_type TEXT NOT NULL,
        bytes INTEGER NOT NULL,
        width INTEGER,
        height INTEGER,
        sha256 TEXT NOT NULL,
        file TEXT NOT NULL,
        delivery_file TEXT NOT NULL,
        delivery_mime_type TEXT NOT NULL,
        delivery_bytes INTEGER NOT NULL,
        delivery_width INTEGER,
        delivery_height INTEGER,
        created_at TEXT NOT NULL
    );
    CREATE INDEX attachments_by_instruction ON attachments(instruction_id, ordinal);
    "#,
    // 5: each delivery's fate (`docs/RELIABILITY.md`, "Delivery"): claimed,
    // sent, confirmed, in_doubt, resent. Deliveries made before it stay NULL
    // (unknown). The index serves "this agent's open deliveries" on every call.
    r#"
    ALTER TABLE instructions ADD COLUMN delivery TEXT
        CHECK (delivery IN ('claimed', 'sent', 'confirmed', 'in_doubt', 'resent'));
    CREATE INDEX instructions_by_delivery ON instructions(delivery, queue, consumed_by_agent_id);
    "#,
    // 6: full-text search of the history (`docs/ARCHITECTURE.md`, "History
    // search"): instructions and reports, indexed by SQLite FTS5 over their own
    // rows (external content, keyed by rowid) and kept in step by triggers, so
    // every write that changes a text changes its index in the same
    // transaction. SQLite allows VACUUM (INTO) to give rows new rowids, so
    // `restore` checks the indexes of the database it puts back and rebuilds
    // them when they disagree.
    r#"
    CREATE VIRTUAL TABLE instructions_fts USING fts5(
        content, content='instructions', content_rowid='rowid', tokenize='unicode61 remove_diacritics 2');
    CREATE VIRTUAL TABLE reports_fts USING fts5(
        content, content='reports', content_rowid='rowid', tokenize='unicode61 remove_diacritics 2');
    INSERT INTO instructions_fts(instructions_fts) VALUES ('rebuild');
    INSERT INTO reports_fts(reports_fts) VALUES ('rebuild');
    CREATE TRIGGER instructions_fts_insert AFTER INSERT ON instructions BEGIN
        INSERT INTO instructions_fts(rowid, content) VALUES (new.rowid, new.content);
    END;
    CREATE TRIGGER instructions_fts_delete AFTER DELETE ON instructions BEGIN
        INSERT INTO instructions_fts(instructions_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
    END;
    CREATE TRIGGER instructions_fts_update AFTER UPDATE OF content ON instructions BEGIN
        INSERT INTO instructions_fts(instructions_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
        INSERT INTO instructions_fts(rowid, content) VALUES (new.rowid, new.content);
    END;
    CREATE TRIGGER reports_fts_insert AFTER INSERT ON reports BEGIN
        INSERT INTO reports_fts(rowid, content) VALUES (new.rowid, new.content);
    END;
    CREATE TRIGGER reports_fts_delete AFTER DELETE ON reports BEGIN
        INSERT INTO reports_fts(reports_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
    END;
    CREATE TRIGGER reports_fts_update AFTER UPDATE OF content ON reports BEGIN
        INSERT INTO reports_fts(reports_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
        INSERT INTO reports_fts(rowid, content) VALUES (new.rowid, new.content);
    END;
    -- Every add asks for the largest position ever given (history included):
    -- an index seek, not a scan of the whole history.
    CREATE INDEX instructions_by_position ON instructions(position);
    "#,
    // 7: templates, saved instructions the person reuses by name, and a
    // queue's suffix, appended to each instruction of it when delivered
    // (`docs/ARCHITECTURE.md`, "Templates").
    r#"
    CREATE TABLE templates (
        name TEXT PRIMARY KEY NOT NULL,
        content TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    -- A template's files: the originals only (using one uploads them again,
    -- which makes the delivery copy), in `<attachments>/.template.<name>/`.
    CREATE TABLE template_files (
        template TEXT NOT NULL REFERENCES templates(name) ON DELETE CASCADE,
        ordinal INTEGER NOT NULL,
        name TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('image', 'text')),
        mime_type TEXT NOT NULL,
        bytes INTEGER NOT NULL,
        sha256 TEXT NOT NULL,
        file TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (template, ordinal)
    );
    ALTER TABLE queues ADD COLUMN suffix TEXT;
    "#,
    // 8: what every status report asks, without walking the history
    // (`docs/ARCHITECTURE.md`, "History at scale"). Each queue's pending and
    // delivered counts are kept by triggers in the same transaction as the
    // change, instead of counted over every instruction (at 100,000 delivered
    // that took ~12 ms, under the store's lock, after every agent call); and
    // "has this agent taken anything since its question" is an index seek,
    // not a scan of the queue's history.
    r#"
    CREATE TABLE queue_counts (
        queue TEXT NOT NULL,
        status TEXT NOT NULL,
        n INTEGER NOT NULL,
        PRIMARY KEY (queue, status)
    ) WITHOUT ROWID;
    INSERT INTO queue_counts SELECT queue, status, COUNT(*) FROM instructions GROUP BY queue, status;
    CREATE TRIGGER queue_counts_insert AFTER INSERT ON instructions BEGIN
        INSERT INTO queue_counts VALUES (new.queue, new.status, 1)
            ON CONFLICT (queue, status) DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER queue_counts_delete AFTER DELETE ON instructions BEGIN
        UPDATE queue_counts SET n = n - 1 WHERE queue = old.queue AND status = old.status;
    END;
    CREATE TRIGGER queue_counts_update AFTER UPDATE OF queue, status ON instructions
        WHEN old.queue IS NOT new.queue OR old.status IS NOT new.status BEGIN
        UPDATE queue_counts SET n = n - 1 WHERE queue = old.queue AND status = old.status;
        INSERT INTO queue_counts VALUES (new.queue, new.status, 1)
            ON CONFLICT (queue, status) DO UPDATE SET n = n + 1;
    END;
    CREATE INDEX instructions_consumed_by_agent ON instructions(queue, consumed_by_agent_id, consumed_at)
        WHERE status = 'consumed';
    "#,
    // 9: who a server is, who an agent's client is, and what a reply answers.
    // `meta.instance` is a random id made once per database: the page learns
    // it when it loads and checks it on every reconnect, so a page left open
    // stops talking when another program answers at its address
    // (`docs/RELIABILITY.md`, "Other accounts"). Each agent's MCP client
    // (name, version) and client session (a hash of the ids the client
    // sends: its MCP session, Codex's `sessionId`, VS Code's conversation,
    // the stdio bridge's process) are kept with its activity, so a call that
    // forgot its `agent_id` is still its agent, and one session's several
    // ids are shown together (`docs/ARCHITECTURE.md`, "Agent identity").
    // `instructions.answers` is the report whose question an instruction
    // answers: replies to one question keep the order they were given in, and
    // the agent is told what they answer.
    r#"
    CREATE TABLE meta (
        key TEXT PRIMARY KEY NOT NULL,
        value TEXT NOT NULL
    );
    INSERT INTO meta (key, value) VALUES ('instance', lower(hex(randomblob(16))));
    ALTER TABLE agent_activity ADD COLUMN client TEXT;
    ALTER TABLE agent_activity ADD COLUMN client_version TEXT;
    ALTER TABLE agent_activity ADD COLUMN session TEXT;
    CREATE INDEX agent_activity_by_session ON agent_activity(queue, session, last_seen_at) WHERE session IS NOT NULL;
    ALTER TABLE instructions ADD COLUMN answers TEXT;
    "#,
    // 10: pending instructions that came from an import or a restore wait,
    // held, until the person releases them: a shared export's or someone
    // else's backup's instructions must not go to waiting agents on their own
    // (issue 38, finding 6). `held` says where they came from; NULL is
    // deliverable. The index keeps "how many are held" off the history.
    r#"
    ALTER TABLE instructions ADD COLUMN held TEXT;
    CREATE INDEX instructions_held ON instructions(queue, position)
        WHERE status = 'pending' AND held IS NOT NULL;
    "#,
    // 11: when an agent's waiting call ended because its client went away
    // (killed mid-wait, a one-shot agent that exited): it is gone, not
    // "working" on what it last took. Cleared by its next call.
    r#"
    ALTER TABLE agent_activity ADD COLUMN left_at TEXT;
    "#,
    // 12: `get_user_request` as an MCP task (SEP-2663, issue 40): a caller
    // that takes tasks gets one at once and polls it. Its row is all there
    // is of it (no connection, no runtime task), so it outlives a restart.
    // An instruction is bound to it only inside a poll (`instruction_id`,
    // the answer frozen in `result`), so a task nobody polls consumes
    // nothing. `polled_at` is kept to the hour: a task is forgotten a week
    // after it was last polled.
    r#"
    CREATE TABLE tasks (
        id TEXT PRIMARY KEY,
        queue TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('working', 'completed', 'cancelled')),
        status_message TEXT,
        instruction_id TEXT,
        result TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        polled_at TEXT NOT NULL
    );
    CREATE INDEX tasks_of_agent ON tasks(queue, agent_id) WHERE status = 'working';
    CREATE INDEX tasks_of_instruction ON tasks(instruction_id) WHERE instruction_id IS NOT NULL;
    CREATE INDEX tasks_by_poll ON tasks(polled_at);
    "#,
    // 13: phones paired to the LAN listener (issue 43). A device is known by
    // the SHA-256 of its credential (the cookie holds the credential; a
    // copy of this table gives no one a way in). Revoking deletes the row.
    // A restore forgets every device (`backup::hold_pending`): credentials
    // come from pairing on this machine, never from a file.
    r#"
    CREATE TABLE phone_devices (
        id TEXT PRIMARY KEY NOT NULL,
        name TEXT NOT NULL,
        credential_sha256 TEXT NOT NULL UNIQUE,
        created_at TEXT NOT NULL,
        last_seen_at TEXT,
        last_address TEXT
    );
    "#,
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The first `version` migrations, on a database that has none (the schema
/// a file of that version must hold: `store::untrusted`).
pub fn apply_up_to(conn: &Connection, version: i64) -> Result<()> {
    let n = usize::try_from(version).unwrap_or(0).min(MIGRATIONS.len());
    for sql in &MIGRATIONS[..n] {
        conn.execute_batch(sql)?;
    }
    Ok(())
}

pub fn migrate(conn: &mut Connection) -> Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Exclusive)?;
    let current: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if current > SCHEMA_VERSION {
        return Err(Error::Startup(format!(
            "the database has schema version {current}, newer than this program's {SCHEMA_VERSION}; \
             upgrade local-mcp or point DB_PATH at another file"
        )));
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        tx.execute_batch(sql)?;
        tracing::info!(version = i + 1, "applied database migration");
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    tx.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database written by the first release (schema 1) keeps everything:
    /// instructions go to `default`, for anyone; agents keep their activity.
    #[test]
    fn a_version_1_database_moves_into_the_default_queue() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(MIGRATIONS[0]).unwrap();
        conn.execute_batch(
            "PRAGMA user_version = 1;
             INSERT INTO instructions VALUES ('p', 'pending one', 'pending', 't', 't', NULL, NULL, 2);
             INSERT INTO instructions VALUES ('c', 'done one', 'consumed', 't', 't', 't', 'copilot', 1);
             INSERT INTO agent_activity VALUES ('copilot', 't1', 't2', 'instruction');",
        )
        .unwrap();
        migrate(&mut conn).unwrap();
        let rows: Vec<(String, String, Option<String>)> = conn
            .prepare("SELECT id, queue, target FROM instructions ORDER BY id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(
            rows,
            [
                ("c".into(), "default".into(), None),
                ("p".into(), "default".into(), None)
            ]
        );
        let agent: (String, String, String, Option<String>) = conn
            .query_row(
                "SELECT queue, agent_id, last_result_type, stop_requested_at FROM agent_activity",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .unwrap();
        assert_eq!(agent, ("default".into(), "copilot".into(), "instruction".into(), None));
        let queues: Vec<String> = conn
            .prepare("SELECT name FROM queues")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(queues, ["default"]);
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
        assert_eq!(version, SCHEMA_VERSION);
    }

    /// A database from before the kept counts (schema 7) starts with its
    /// existing instructions counted, and the triggers keep them from there.
    #[test]
    fn a_version_7_database_gets_its_queue_counts() {
        let mut conn = Connection::open_in_memory().unwrap();
        for sql in &MIGRATIONS[..7] {
            conn.execute_batch(sql).unwrap();
        }
        conn.execute_batch(
            "PRAGMA user_version = 7;
             INSERT INTO instructions (id, content, status, created_at, updated_at, position, queue)
             VALUES ('p1', 'a', 'pending', 't', 't', 1, 'default'),
                    ('p2', 'b', 'pending', 't', 't', 2, 'repo'),
                    ('c1', 'c', 'consumed', 't', 't', 3, 'repo'),
                    ('c2', 'd', 'consumed', 't', 't', 4, 'repo');",
        )
        .unwrap();
        migrate(&mut conn).unwrap();
        let counts = |conn: &Connection| -> Vec<(String, String, i64)> {
            conn.prepare("SELECT queue, status, n FROM queue_counts WHERE n > 0 ORDER BY queue, status")
                .unwrap()
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .unwrap()
                .map(Result::unwrap)
                .collect()
        };
        let row = |q: &str, s: &str, n: i64| (q.to_owned(), s.to_owned(), n);
        assert_eq!(
            counts(&conn),
            [
                row("default", "pending", 1),
                row("repo", "consumed", 2),
                row("repo", "pending", 1)
            ]
        );
        conn.execute_batch(
            "UPDATE instructions SET status = 'consumed' WHERE id = 'p1';
             UPDATE instructions SET queue = 'default' WHERE id = 'p2';
             DELETE FROM instructions WHERE id = 'c1';",
        )
        .unwrap();
        assert_eq!(
            counts(&conn),
            [
                row("default", "consumed", 1),
                row("default", "pending", 1),
                row("repo", "consumed", 1)
            ]
        );
    }
}
