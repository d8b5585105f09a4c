//! Uploads inspected before anything of them is stored: the limits on how
//! many files and bytes an instruction holds, each file's type and delivery
//! copy from its bytes (`media`), decoded within a budget shared by all
//! requests, and the name it is delivered under. For an instruction's files
//! (`attachments`), a template's (`templates`) and an import's (`import`).

use crate::media::{self, Arrival, Kind};
use crate::model::Timestamp;
use crate::model::{attachment_name, Attachment, DeliveryCopy, Upload, MAX_ATTACHMENTS, MAX_ATTACHMENT_BYTES};
use crate::store::AttachmentRow;
use crate::{Error, Result};

/// An upload that passed inspection, with the bytes to write.
pub(super) struct Ready {
    pub(super) row: AttachmentRow,
    pub(super) original: bytes::Bytes,
    pub(super) delivery: Option<Vec<u8>>,
}

pub(super) fn check_totals(have: usize, have_bytes: usize, ready: &[Ready]) -> Result<()> {
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
/// the decode budget ([`DECODING`]), as `arrival` says (`media::Arrival`).
pub(super) async fn prepare(
    instruction_id: String,
    uploads: Vec<Upload>,
    have: usize,
    have_bytes: usize,
    arrival: Arrival,
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
        let now = Timestamp::now();
        uploads
            .into_iter()
            .enumerate()
            .map(|(n, upload)| {
                let given = attachment_name(&upload.name);
                let prepared = media::prepare(&upload.bytes, arrival).map_err(|e| name_it(&given, e))?;
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
            created_at: Timestamp::now(),
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
        let waiting = tokio::spawn(prepare("i".into(), vec![upload], 0, 0, Arrival::New));
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
