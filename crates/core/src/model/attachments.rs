//! Files that go with an instruction: screenshots and text files. The
//! limits, the names they are stored under, and their shape on the wire
//! (`docs/ARCHITECTURE.md`, "Attachments").

use super::Timestamp;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// At most this many attachments per instruction…
pub const MAX_ATTACHMENTS: usize = 8;
/// …of at most this many bytes together (the originals).
pub const MAX_ATTACHMENT_BYTES: usize = 20 * 1024 * 1024;
/// A text attachment up to this size travels inside the tool result; a larger
/// one by its path only.
pub const MAX_INLINE_TEXT_BYTES: usize = 64 * 1024;
/// The longest attachment name kept, in characters.
pub const MAX_ATTACHMENT_NAME_CHARS: usize = 200;

/// One attachment as stored and served (`GET /api/instructions` items carry them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Attachment {
    pub id: String,
    pub instruction_id: String,
    /// The file's name as uploaded (its last path component, cleaned); for display only.
    pub name: String,
    /// `image` or `text`, from the bytes.
    pub kind: String,
    /// The original's type, from the bytes (never from the upload's claim).
    pub mime_type: String,
    /// The original's size in bytes.
    pub bytes: u64,
    /// Pixels, for an image (after its EXIF orientation).
    pub width: Option<u32>,
    pub height: Option<u32>,
    /// SHA-256 of the original, hex.
    pub sha256: String,
    /// What an agent gets: the scaled, re-encoded copy of an image; the file itself for text.
    pub delivery: DeliveryCopy,
    pub created_at: Timestamp,
}

/// The copy of an attachment that agents receive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DeliveryCopy {
    pub mime_type: String,
    pub bytes: u64,
    pub width: Option<u32>,
    pub height: Option<u32>,
}

impl Attachment {
    pub fn is_image(&self) -> bool {
        self.kind == "image"
    }
}

/// A file as uploaded, before it is inspected.
#[derive(Debug, Clone)]
pub struct Upload {
    pub name: String,
    pub bytes: bytes::Bytes,
}

/// A name safe to show and to store beside the file: the last path
/// component, without control characters, at most
/// [`MAX_ATTACHMENT_NAME_CHARS`]; "attachment" when nothing is left.
pub fn attachment_name(given: &str) -> String {
    let last = given.rsplit(['/', '\\']).next().unwrap_or("");
    let clean: String = last
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_ATTACHMENT_NAME_CHARS)
        .collect();
    let clean = clean.trim().trim_start_matches('.').trim();
    if clean.is_empty() {
        "attachment".to_owned()
    } else {
        clean.to_owned()
    }
}

/// An attachment as an agent receives it (the text block's JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DeliveredAttachment {
    pub id: String,
    pub name: String,
    /// The delivery copy's type.
    pub mime_type: String,
    /// The delivery copy's size.
    pub bytes: u64,
    pub width: Option<u32>,
    pub height: Option<u32>,
    /// The delivery copy's absolute path on this machine, for agents whose
    /// client drops images: open it with your own tools.
    pub path: String,
    /// Whether this result also carries it as an image block or an embedded
    /// resource (large ones travel by path only).
    pub inline: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_cleaned() {
        assert_eq!(attachment_name("C:\\Users\\me\\shot.png"), "shot.png");
        assert_eq!(attachment_name("../../etc/passwd"), "passwd");
        assert_eq!(attachment_name("a\u{0}b\nc.txt"), "abc.txt");
        assert_eq!(attachment_name(""), "attachment");
        assert_eq!(attachment_name("/"), "attachment");
        assert_eq!(attachment_name("..."), "attachment");
        assert_eq!(
            attachment_name(&"x".repeat(500)).chars().count(),
            MAX_ATTACHMENT_NAME_CHARS
        );
    }
}
