//! Attachments: files that go with an instruction (`docs/ARCHITECTURE.md`,
//! "Attachments").
//!
//! An upload is inspected from its bytes (`media`), its files are written
//! and fsynced beside the database, and only then does the row that names
//! them commit — so a crash leaves either the whole instruction with its
//! files or files without a row, which the next start sweeps away. Like the
//! text, the files of a pending instruction can change; a consumed one's
//! cannot (409), and the ledger keeps them.

use std::path::PathBuf;

use crate::events::EventKind;
use crate::media::{self, Kind};
use crate::model::{
    agent_id, attachment_name, Attachment, DeliveredAttachment, DeliveryCopy, Instruction, InstructionStatus,
    NewInstruction, Upload, MAX_ATTACHMENTS, MAX_ATTACHMENT_BYTES, MAX_INLINE_TEXT_BYTES, MAX_INSTRUCTION_BYTES,
};
use crate::store::{AttachmentRow, Files, NewFile, PendingChange};
use crate::{time, Error, Result};

use super::{first, pending_only, validate_content, Queue};

/// The base64 of a result's images stays under this (8 MiB): what clients
/// and models take in one tool result.
pub const MAX_INLINE_IMAGE_BASE64: usize = 8 * 1024 * 1024;
/// The text of a result (instruction, JSON, inline text files) stays under
/// about this many bytes: Claude Code writes longer results to a file.
pub const MAX_RESULT_TEXT_BYTES: usize = 96 * 1024;

/// An upload that passed inspection, with the bytes to write.
pub(super) struct Ready {
    pub(super) row: AttachmentRow,
    pub(super) original: bytes::Bytes,
    delivery: Option<Vec<u8>>,
}

impl Queue {
    /// Queue a new instruction with files at the back of its queue. With
    /// files, the text may be blank (a screenshot says it all).
    pub async fn add_with_files(&self, new: NewInstruction, uploads: Vec<Upload>) -> Result<Instruction> {
        if uploads.is_empty() {
            return self.add(new).await;
        }
        let content = check_text(new.content)?;
        let queue = match new.queue.as_deref() {
            Some(q) => crate::model::queue_name(q)?,
            None => crate::model::DEFAULT_QUEUE.to_owned(),
        };
        let target = agent_id(new.target.as_deref())?;
        not_empty(&uploads)?;
        let mut item = Instruction::new_pending(content, queue, target, 0, time::now());
        let ready = prepare(item.id.clone(), uploads, 0, 0).await?;
        let items = self
            .blocking(move |i| {
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
    pub async fn attach(&self, id: String, uploads: Vec<Upload>) -> Result<Instruction> {
        if uploads.is_empty() {
            return Err(Error::Invalid("no files were sent".into()));
        }
        not_empty(&uploads)?;
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
        let ready = prepare(id.clone(), uploads, existing.attachments.len(), bytes as usize).await?;
        let items = self
            .blocking(move |i| {
                let files = i.store.files();
                write_files(files, &id, &ready).map_err(|e| i.store.fault(e))?;
                let written = i.write_instructions(EventKind::InstructionUpdated, |db| {
                    // Touched (a new `updated_at`), and only while pending.
                    let Some(item) = db.update_pending(&id, &PendingChange::default(), &time::now())? else {
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
    pub async fn detach(&self, id: String, attachment_id: String) -> Result<Instruction> {
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
                    let Some(item) = db.update_pending(&id, &PendingChange::default(), &time::now())? else {
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

    /// One attachment and the path of its original or its delivery copy.
    pub async fn attachment_file(&self, attachment_id: String, delivery: bool) -> Result<(Attachment, PathBuf)> {
        self.blocking(move |i| {
            let row = i
                .store
                .read(|db| db.get_attachment(&attachment_id))?
                .ok_or_else(|| Error::NotFound(format!("no attachment with id {attachment_id}")))?;
            let file = if delivery { &row.delivery_file } else { &row.file };
            let path = i.store.files().path(&row.attachment.instruction_id, file);
            Ok((row.attachment, path))
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

/// A new upload has something in it: an empty file is most often one still
/// being written or a failed save, and would reach an agent as nothing. (An
/// import keeps what an older version stored, empty or not.)
pub(super) fn not_empty(uploads: &[Upload]) -> Result<()> {
    match uploads.iter().find(|u| u.bytes.is_empty()) {
        Some(u) => Err(Error::Invalid(format!(
            "{}: the file is empty (0 bytes); there is nothing in it to attach",
            attachment_name(&u.name)
        ))),
        None => Ok(()),
    }
}

fn check_totals(have: usize, have_bytes: usize, ready: &[Ready]) -> Result<()> {
    let count = have + ready.len();
    if count > MAX_ATTACHMENTS {
        return Err(Error::TooLarge(format!(
            "an instruction holds at most {MAX_ATTACHMENTS} attachments; this would make {count}"
        )));
    }
    let bytes = have_bytes + ready.iter().map(|r| r.original.len()).sum::<usize>();
    if bytes > MAX_ATTACHMENT_BYTES {
        return Err(Error::TooLarge(format!(
            "an instruction's attachments hold at most {} MiB together; this would make {bytes} bytes",
            MAX_ATTACHMENT_BYTES / (1024 * 1024)
        )));
    }
    Ok(())
}

/// What decodes may allocate at once, in MiB: what the largest image an
/// upload may hold may take ([`media::MAX_DECODE_COST`], 955 MiB: 50
/// megapixels of 16-bit RGBA and the copies made on the way), and 256 MiB
/// more, so that screenshots still decode beside one such image instead of
/// waiting for it (two of them never run together). Four 50-megapixel
/// uploads at once had peaked at 2 GB, eight small GIFs declaring a 1×1
/// screen at 3.8 GB.
const DECODE_BUDGET_MIB: u32 = mib(media::MAX_DECODE_COST) + 256;

/// What decodes may hold (`DECODE_BUDGET_MIB`): each request takes what its
/// largest upload's decode may allocate, in MiB, for as long as it inspects its
/// uploads (one after another), and waits, first come first served, while
/// others hold the rest.
static DECODING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(DECODE_BUDGET_MIB as usize);

/// Bytes to whole MiB, rounded up (at least 1: every decode counts).
const fn mib(bytes: u64) -> u32 {
    let m = bytes.div_ceil(1024 * 1024);
    if m == 0 {
        1
    } else {
        m as u32
    }
}

/// Check the limits, then inspect each upload off the async threads, within
/// the decode budget ([`DECODING`]).
pub(super) async fn prepare(
    instruction_id: String,
    uploads: Vec<Upload>,
    have: usize,
    have_bytes: usize,
) -> Result<Vec<Ready>> {
    // The cheap limits first: nothing is decoded for a request that is too big anyway.
    let sized: Vec<Ready> = uploads
        .iter()
        .map(|u| Ready {
            row: placeholder_row(),
            original: u.bytes.clone(),
            delivery: None,
        })
        .collect();
    check_totals(have, have_bytes, &sized)?;
    let weight = uploads
        .iter()
        .map(|u| mib(media::decode_cost(&u.bytes)))
        .max()
        .unwrap_or(1);
    // Never closed, so the wait ends only with a permit.
    let decoding = DECODING
        .acquire_many(weight)
        .await
        .map_err(|e| Error::internal("waiting to decode an upload", e))?;
    tokio::task::spawn_blocking(move || {
        // Held by the decodes themselves: a request that is dropped meanwhile does not free it early.
        let _decoding = decoding;
        let now = time::now();
        uploads
            .into_iter()
            .enumerate()
            .map(|(n, upload)| {
                let given = attachment_name(&upload.name);
                let prepared = media::prepare(&upload.bytes).map_err(|e| name_it(&given, e))?;
                let name = fitting_name(given, prepared.kind, prepared.original.ext);
                let id = uuid::Uuid::new_v4().to_string();
                let ext = match prepared.kind {
                    Kind::Image => prepared.original.ext.to_owned(),
                    Kind::Text => text_extension(&name),
                };
                let (file, delivery_file, delivery, copy) = match prepared.delivery {
                    Some((enc, bytes)) => (
                        format!("{id}-original.{ext}"),
                        format!("{id}.{}", enc.ext),
                        DeliveryCopy {
                            mime_type: enc.mime_type.to_owned(),
                            bytes: bytes.len() as u64,
                            width: enc.width,
                            height: enc.height,
                        },
                        Some(bytes),
                    ),
                    None => (
                        format!("{id}.{ext}"),
                        format!("{id}.{ext}"),
                        DeliveryCopy {
                            mime_type: prepared.original.mime_type.to_owned(),
                            bytes: upload.bytes.len() as u64,
                            width: None,
                            height: None,
                        },
                        None,
                    ),
                };
                Ok(Ready {
                    row: AttachmentRow {
                        attachment: Attachment {
                            id,
                            instruction_id: instruction_id.clone(),
                            name,
                            kind: prepared.kind.as_str().to_owned(),
                            mime_type: prepared.original.mime_type.to_owned(),
                            bytes: upload.bytes.len() as u64,
                            width: prepared.original.width,
                            height: prepared.original.height,
                            sha256: prepared.sha256,
                            delivery,
                            created_at: now.clone(),
                        },
                        ordinal: (have + n) as i64,
                        file,
                        delivery_file,
                    },
                    original: upload.bytes,
                    delivery: copy,
                })
            })
            .collect::<Result<Vec<_>>>()
    })
    .await
    .map_err(|e| Error::internal("an attachment task failed", e))?
}

fn placeholder_row() -> AttachmentRow {
    AttachmentRow {
        attachment: Attachment {
            id: String::new(),
            instruction_id: String::new(),
            name: String::new(),
            kind: String::new(),
            mime_type: String::new(),
            bytes: 0,
            width: None,
            height: None,
            sha256: String::new(),
            delivery: DeliveryCopy {
                mime_type: String::new(),
                bytes: 0,
                width: None,
                height: None,
            },
            created_at: String::new(),
        },
        ordinal: 0,
        file: String::new(),
        delivery_file: String::new(),
    }
}

/// Say which file a refusal is about.
fn name_it(name: &str, e: Error) -> Error {
    match e {
        Error::Invalid(m) => Error::Invalid(format!("{name}: {m}")),
        Error::TooLarge(m) => Error::TooLarge(format!("{name}: {m}")),
        Error::Unsupported(m) => Error::Unsupported(format!("{name}: {m}")),
        other => other,
    }
}

/// Extensions that name a binary type: a file that is really text under one
/// of them is delivered with `.txt` added (`notes.png.txt`).
const BINARY_EXTENSIONS: &[&str] = &[
    "png", "jpg", "jpeg", "gif", "webp", "bmp", "tif", "tiff", "ico", "heic", "avif", "pdf", "zip", "gz", "tgz", "tar",
    "7z", "rar", "exe", "dll", "so", "dylib", "bin", "wasm", "mp3", "mp4", "mov", "wav", "ogg",
];

/// The name a file is delivered under matches what its bytes are: text
/// named like an image or another binary type gets `.txt` added; an image
/// whose name says another type gets its own extension added
/// (`shot.txt.png`). An agent's tools go by the name.
fn fitting_name(name: String, kind: Kind, image_ext: &str) -> String {
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    let fits = match (kind, ext.as_deref()) {
        (Kind::Text, Some(e)) => !BINARY_EXTENSIONS.contains(&e),
        (Kind::Text, None) => true,
        (Kind::Image, Some(e)) => {
            e == image_ext || (image_ext == "jpg" && e == "jpeg") || (image_ext == "tiff" && e == "tif")
        }
        (Kind::Image, None) => false,
    };
    if fits {
        return name;
    }
    let added = match kind {
        Kind::Text => "txt",
        Kind::Image => image_ext,
    };
    attachment_name(&format!("{name}.{added}"))
}

/// A text file keeps a short alphanumeric extension (`.rs`, `.md`) so an
/// agent's tools recognise it; anything else is `.txt`.
fn text_extension(name: &str) -> String {
    name.rsplit_once('.')
        .map(|(_, ext)| ext.to_ascii_lowercase())
        .filter(|ext| (1..=10).contains(&ext.len()) && ext.chars().all(|c| c.is_ascii_alphanumeric()))
        .unwrap_or_else(|| "txt".to_owned())
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
    let now = time::now();
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
            DeliveredAttachment {
                id: a.id.clone(),
                name: a.name.clone(),
                mime_type: a.delivery.mime_type.clone(),
                bytes: a.delivery.bytes,
                width: a.delivery.width,
                height: a.delivery.height,
                path: files.path(&a.instruction_id, &r.delivery_file).display().to_string(),
                inline,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(width: u32, height: u32) -> bytes::Bytes {
        let mut out = Vec::new();
        image::DynamicImage::new_rgba8(width, height)
            .write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
            .unwrap();
        out.into()
    }

    /// An upload's decode waits while the budget is taken, and goes on once
    /// it is given back. (Other tests' uploads wait too, for those 300 ms.)
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn decodes_wait_for_the_budget() {
        let upload = Upload {
            name: "shot.png".into(),
            bytes: png(640, 480),
        };
        assert_eq!(
            media::decode_cost(&upload.bytes),
            media::decode_allowance(640 * 480 * 4)
        );
        let all = DECODING.acquire_many(DECODE_BUDGET_MIB).await.unwrap();
        let waiting = tokio::spawn(prepare("i".into(), vec![upload], 0, 0));
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        assert!(!waiting.is_finished(), "it decoded with the whole budget taken");
        drop(all);
        let ready = tokio::time::timeout(std::time::Duration::from_secs(30), waiting)
            .await
            .expect("the decode did not go on once the budget was back")
            .unwrap()
            .unwrap();
        assert_eq!(ready.len(), 1);
    }

    #[test]
    fn the_budget_holds_the_largest_decode_and_screenshots_beside_it() {
        assert_eq!(mib(media::MAX_DECODE_COST), 955);
        // One of the largest and screenshots beside it; never two of the largest.
        assert_eq!(DECODE_BUDGET_MIB, 955 + 256);
        assert!(DECODE_BUDGET_MIB < 2 * mib(media::MAX_DECODE_COST));
        assert_eq!(mib(0), 1);
        assert_eq!(mib(1024 * 1024 + 1), 2);
        // What is not an image weighs nothing of its own (text, a header that does not read).
        assert_eq!(media::decode_cost(b"plain text"), 0);
        assert_eq!(media::decode_cost(b"\x89PNG\r\n\x1a\n broken"), 0);
    }

    #[test]
    fn text_files_keep_short_extensions() {
        assert_eq!(text_extension("main.RS"), "rs");
        assert_eq!(text_extension("notes"), "txt");
        assert_eq!(text_extension("weird.a-b"), "txt");
        assert_eq!(text_extension("x.verylongextension"), "txt");
    }

    #[test]
    fn a_file_is_named_for_what_it_is() {
        assert_eq!(fitting_name("notes.png".into(), Kind::Text, "txt"), "notes.png.txt");
        assert_eq!(fitting_name("main.rs".into(), Kind::Text, "txt"), "main.rs");
        assert_eq!(fitting_name("README".into(), Kind::Text, "txt"), "README");
        assert_eq!(fitting_name("shot.txt".into(), Kind::Image, "png"), "shot.txt.png");
        assert_eq!(fitting_name("photo.JPEG".into(), Kind::Image, "jpg"), "photo.JPEG");
        assert_eq!(fitting_name("clipboard".into(), Kind::Image, "png"), "clipboard.png");
        // The text named like an image goes by .txt on disk too.
        assert_eq!(
            text_extension(&fitting_name("notes.png".into(), Kind::Text, "txt")),
            "txt"
        );
    }
}
