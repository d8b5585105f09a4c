//! Attachment rows (the files themselves are `store::files`' business).

use rusqlite::{params, OptionalExtension, Row};

use super::Db;
use super::ATTACHMENT_COLUMNS;
use crate::model::{Attachment, DeliveryCopy, Instruction};
use crate::Result;

/// An attachment row: the metadata, and the names of its two files in the
/// instruction's folder (the same name twice for a text file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachmentRow {
    pub attachment: Attachment,
    pub ordinal: i64,
    pub file: String,
    pub delivery_file: String,
}

pub(super) fn attachment_from_row(row: &Row<'_>) -> rusqlite::Result<AttachmentRow> {
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

impl<'c> Db<'c> {
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
            kept.insert((crate::store::files::template_folder(&template), r.get(1)?));
        }
        Ok(kept)
    }
}
