//! Attachments: files that go with an instruction (`docs/ARCHITECTURE.md`,
//! "Attachments").
//!
//! An upload is inspected from its bytes (`uploads`), its files are written
//! and fsynced beside the database, and only then does the row that names
//! them commit — so a crash leaves either the whole instruction with its
//! files or files without a row, which the next start sweeps away. Like the
//! text, the files of a pending instruction can change; a consumed one's
//! cannot (409), and the ledger keeps them.

use crate::events::EventKind;
use crate::media::Arrival;
use crate::model::{
    agent_id, Attachment, DeliveredAttachment, Instruction, InstructionId, InstructionStatus, NewInstruction, Upload,
    MAX_INLINE_TEXT_BYTES, MAX_INSTRUCTION_BYTES,
};
use crate::store::{AttachmentRow, Files, NewFile, PendingChange};
use crate::{Error, Result};

use super::uploads::{check_totals, prepare, Ready};
use super::{first, pending_only, validate_content, Queue};
use crate::model::Timestamp;

/// The base64 of a result's images stays under this (8 MiB): what clients
/// and models take in one tool result.
pub const MAX_INLINE_IMAGE_BASE64: usize = 8 * 1024 * 1024;
/// The text of a result (instruction, JSON, inline text files) stays under
/// about this many bytes: Claude Code writes longer results to a file.
pub const MAX_RESULT_TEXT_BYTES: usize = 96 * 1024;

impl Queue {
    /// Queue a new instruction with files at the back of its queue. With
    /// files, the text may be blank (a screenshot says it all).
    pub async fn add_with_files(&self, new: NewInstruction, uploads: Vec<Upload>) -> Result<Instruction> {
        if uploads.is_empty() {
            return self.add(new).await;
        }
        let content = check_text(new.content)?;
        let queue = new.queue.unwrap_or_else(crate::model::QueueName::default_queue);
        let target = agent_id(new.target.as_deref())?;
        let mut item = Instruction::new_pending(content, queue, target, 0, Timestamp::now());
        let ready = prepare(item.id.to_string(), uploads, 0, 0, Arrival::New).await?;
        let items = self
            .blocking_long(move |i| {
                let files = i.store.files();
                write_files(files, &item.id, &ready).map_err(|e| i.store.fault(e))?;
                let iid = item.id.clone();
                let written = i.write_instructions(EventKind::InstructionCreated, |db| {
                    item.position = db.next_position()?;
                    db.insert_instruction(&item)?;
                    for r in &ready {
                        db.insert_attachment(&r.row)?;
                    }
                    Ok(vec![item])
                });
                if written.is_err() {
                    files.remove_all(&iid);
                }
                written
            })
            .await?;
        let item = first(items)?;
        tracing::info!(id = %item.id, queue = %item.queue, attachments = item.attachments.len(), "instruction created");
        Ok(item)
    }

    /// Add files to a pending instruction (409 once it is consumed).
    pub async fn attach(&self, id: InstructionId, uploads: Vec<Upload>) -> Result<Instruction> {
        if uploads.is_empty() {
            return Err(Error::Invalid("no files were sent".into()));
        }
        let existing = self.get(id.clone()).await?;
        if existing.status != InstructionStatus::Pending {
            return Err(self
                .blocking({
                    let id = id.clone();
                    move |i| i.store.read(|db| pending_only(db, &id, "given attachments"))
                })
                .await?);
        }
        let bytes: u64 = existing.attachments.iter().map(|a| a.bytes).sum();
        let ready = prepare(
            id.to_string(),
            uploads,
            existing.attachments.len(),
            bytes as usize,
            Arrival::New,
        )
        .await?;
        let items = self
            .blocking_long(move |i| {
                let files = i.store.files();
                write_files(files, &id, &ready).map_err(|e| i.store.fault(e))?;
                let written = i.write_instructions(EventKind::InstructionUpdated, |db| {
                    // Touched (a new `updated_at`), and only while pending.
                    let Some(item) = db.update_pending(&id, &PendingChange::default(), &Timestamp::now())? else {
                        return Err(pending_only(db, &id, "given attachments")?);
                    };
                    // Counted again inside the transaction: two uploads at once
                    // must not pass the limit together.
                    let have = db.attachments_of(&id)?;
                    check_totals(
                        have.len(),
                        have.iter().map(|r| r.attachment.bytes as usize).sum(),
                        &ready,
                    )?;
                    let base = have.last().map_or(0, |r| r.ordinal + 1);
                    for (n, r) in ready.iter().enumerate() {
                        let mut row = r.row.clone();
                        row.ordinal = base + n as i64;
                        db.insert_attachment(&row)?;
                    }
                    Ok(vec![item])
                });
                if written.is_err() {
                    files.remove(&id, &file_names(ready.iter().map(|r| &r.row)));
                }
                written
            })
            .await?;
        first(items)
    }

    /// Remove one file from a pending instruction (409 once it is consumed).
    pub async fn detach(&self, id: InstructionId, attachment_id: String) -> Result<Instruction> {
        let (items, removed) = self
            .blocking(move |i| {
                let mut removed = None;
                let items = i.write_instructions(EventKind::InstructionUpdated, |db| {
                    let row = db
                        .get_attachment(&attachment_id)?
                        .filter(|r| r.attachment.instruction_id == id)
                        .ok_or_else(|| {
                            Error::NotFound(format!("instruction {id} has no attachment {attachment_id}"))
                        })?;
                    let Some(item) = db.update_pending(&id, &PendingChange::default(), &Timestamp::now())? else {
                        return Err(pending_only(db, &id, "changed")?);
                    };
                    db.delete_attachment(&attachment_id)?;
                    removed = Some(row);
                    Ok(vec![item])
                })?;
                // After the commit: a crash before this leaves files the sweep removes.
                if let Some(row) = &removed {
                    i.store.files().remove(&id, &file_names(std::iter::once(row)));
                }
                Ok((items, removed))
            })
            .await?;
        debug_assert!(removed.is_some());
        first(items)
    }

    /// One attachment and the bytes of its original or its delivery copy,
    /// read from the file its row names — opened inside the attachments
    /// folder, never through a link (`Files::open`).
    pub async fn attachment_file(&self, attachment_id: String, delivery: bool) -> Result<(Attachment, Vec<u8>)> {
        self.blocking(move |i| {
            let row = i
                .store
                .read(|db| db.get_attachment(&attachment_id))?
                .ok_or_else(|| Error::NotFound(format!("no attachment with id {attachment_id}")))?;
            let file = if delivery { &row.delivery_file } else { &row.file };
            let bytes = i
                .store
                .files()
                .read(&row.attachment.instruction_id, file)
                .map_err(|e| Error::internal(format!("reading attachment {attachment_id}"), e))?;
            Ok((row.attachment, bytes))
        })
        .await
    }

    /// Remove attachment files no row names; run once at start.
    pub async fn sweep_files(&self) -> Result<usize> {
        let removed = self.blocking(|i| i.store.sweep_files()).await?;
        if removed > 0 {
            tracing::info!(removed, "removed attachment files left without an instruction");
        }
        Ok(removed)
    }
}

/// Text beside files: blank is allowed, the other rules are not relaxed.
pub(super) fn check_text(content: String) -> Result<String> {
    if content.trim().is_empty() {
        if content.len() > MAX_INSTRUCTION_BYTES || content.contains('\0') {
            return validate_content(content);
        }
        return Ok(String::new());
    }
    validate_content(content)
}

pub(super) fn write_files(files: &Files, instruction_id: &str, ready: &[Ready]) -> Result<()> {
    let mut list = Vec::new();
    for r in ready {
        list.push(NewFile {
            name: r.row.file.clone(),
            bytes: &r.original,
        });
        if let Some(copy) = &r.delivery {
            list.push(NewFile {
                name: r.row.delivery_file.clone(),
                bytes: copy,
            });
        }
    }
    files.write(instruction_id, &list).map_err(|e| {
        files.remove(instruction_id, &list.iter().map(|f| f.name.clone()).collect::<Vec<_>>());
        Error::internal("writing an attachment", e)
    })
}

/// New rows for copies of `rows` under another instruction (new ids, same files' contents).
pub(super) fn copies(rows: &[AttachmentRow], instruction_id: &str) -> Vec<AttachmentRow> {
    let now = Timestamp::now();
    rows.iter()
        .map(|r| {
            let id = uuid::Uuid::new_v4().to_string();
            // File names start with their attachment's id.
            let rename = |file: &str| file.replacen(r.attachment.id.as_str(), &id, 1);
            let mut row = r.clone();
            row.file = rename(&r.file);
            row.delivery_file = rename(&r.delivery_file);
            row.attachment.id = id.clone();
            row.attachment.instruction_id = instruction_id.to_owned();
            row.attachment.created_at = now.clone();
            row
        })
        .collect()
}

fn file_names<'a>(rows: impl Iterator<Item = &'a AttachmentRow>) -> Vec<String> {
    let mut names = Vec::new();
    for r in rows {
        names.push(r.file.clone());
        if r.delivery_file != r.file {
            names.push(r.delivery_file.clone());
        }
    }
    names
}

/// What an agent is told about an instruction's files, and which of them
/// ride in the result itself: images while their base64 fits
/// [`MAX_INLINE_IMAGE_BASE64`], text files up to [`MAX_INLINE_TEXT_BYTES`]
/// while the result's text stays under [`MAX_RESULT_TEXT_BYTES`]. The rest
/// go by path.
pub(crate) fn delivered(files: &Files, rows: &[AttachmentRow], text_so_far: usize) -> Vec<DeliveredAttachment> {
    let (mut base64, mut text) = (0usize, text_so_far);
    rows.iter()
        .map(|r| {
            let a = &r.attachment;
            let size = a.delivery.bytes as usize;
            let inline = if a.is_image() {
                let encoded = size.div_ceil(3) * 4;
                let fits = base64 + encoded <= MAX_INLINE_IMAGE_BASE64;
                base64 += if fits { encoded } else { 0 };
                fits
            } else {
                let fits = size <= MAX_INLINE_TEXT_BYTES && text + size <= MAX_RESULT_TEXT_BYTES;
                text += if fits { size } else { 0 };
                fits
            };
            // A row whose names are not plain (restored from someone's backup) names no file of ours.
            let (path, inline) = match files.path(&a.instruction_id, &r.delivery_file) {
                Ok(path) => (path.display().to_string(), inline),
                Err(e) => {
                    tracing::warn!(attachment = %a.id, error = %e, "an attachment's row names no file of ours");
                    (String::new(), false)
                }
            };
            DeliveredAttachment {
                id: a.id.clone(),
                name: a.name.clone(),
                mime_type: a.delivery.mime_type.clone(),
                bytes: a.delivery.bytes,
                width: a.delivery.width,
                height: a.delivery.height,
                path,
                inline,
            }
        })
        .collect()
}
