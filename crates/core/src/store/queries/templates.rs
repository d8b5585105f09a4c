//! Templates and their files.

use rusqlite::{params, OptionalExtension, Row};

use super::Db;
use super::TEMPLATE_FILE_COLUMNS;
use crate::model::{Template, TemplateFile};
use crate::Result;

pub(super) fn template_from_row(row: &Row<'_>) -> rusqlite::Result<Template> {
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

pub(super) fn template_file_from_row(row: &Row<'_>) -> rusqlite::Result<TemplateFileRow> {
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

impl<'c> Db<'c> {
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
}
