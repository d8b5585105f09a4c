//! Every statement the product runs, as typed methods on [`Db`], a borrowed
//! connection or transaction, one file per area (as `queue/` is), each with
//! its own `impl Db` and row mappers. Callers compose them inside
//! `Store::read` / `Store::write`; none of them opens or commits a
//! transaction itself.

mod agents;
mod attachments;
mod deliveries;
mod devices;
mod events;
mod instructions;
mod queues;
mod reports;
mod settings;
mod tasks;
mod templates;

use rusqlite::Connection;

pub use attachments::AttachmentRow;
#[cfg(test)]
pub use events::EVENT_LOG_KEEP;
#[cfg(test)]
pub(in crate::store) use instructions::claim_sql;
pub use instructions::PendingChange;
pub use queues::QueueTally;
pub use templates::TemplateFileRow;

/// A connection (or an open transaction) with the product's statements on it.
pub struct Db<'c> {
    conn: &'c Connection,
}

/// The columns an [`Instruction`] is read from and written to. Rows are read
/// by name, so a new column goes here, in `instruction_from_row` and in
/// `insert_instruction`'s values — and nowhere shifts.
pub(super) const INSTRUCTION_COLUMNS: &str =
    "id, content, status, created_at, updated_at, consumed_at, consumed_by_agent_id, position, queue, target, delivery, answers, held";

pub(super) const REPORT_COLUMNS: &str = "id, queue, agent_id, instruction_id, content, options, html, created_at";

pub(super) const ATTACHMENT_COLUMNS: &str =
    "id, instruction_id, ordinal, name, kind, mime_type, bytes, width, height, sha256, \
    file, delivery_file, delivery_mime_type, delivery_bytes, delivery_width, delivery_height, created_at";

pub(super) const TEMPLATE_FILE_COLUMNS: &str = "ordinal, name, kind, mime_type, bytes, sha256, file, created_at";

impl<'c> Db<'c> {
    pub(super) fn new(conn: &'c Connection) -> Self {
        Db { conn }
    }

    pub(super) fn conn(&self) -> &'c Connection {
        self.conn
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
