//! The history as a file a person keeps or reads elsewhere: JSON (everything,
//! as the API shows it), CSV (one row per instruction, for a spreadsheet),
//! Markdown (to read) or a bundle (a tar archive of the JSON and each
//! attachment's original file, which `import` takes back whole). Built from
//! the same models the API returns.
//!
//! Reading one back ([`open`]) only parses: what the engine accepts from it is
//! decided by the queue's import, with the same checks as any other input.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::model::Timestamp;
use crate::model::{Attachment, Instruction, InstructionStatus, Report};
use crate::{Error, Result};

/// What every export says it is.
pub const FORMAT_NAME: &str = "local-mcp-export";
/// The export layout this program writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// The JSON's name inside a bundle.
pub const BUNDLE_JSON: &str = "export.json";
/// The folder of a bundle that holds each attachment's original, named by the attachment's id.
pub const BUNDLE_FILES: &str = "files";
/// The largest JSON an import reads (a 100,000-entry history is about 60 MB).
pub const MAX_IMPORT_JSON_BYTES: u64 = 512 * 1024 * 1024;

/// The formats `GET /api/export` and `export` write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, clap::ValueEnum, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Json,
    Csv,
    Md,
    /// A tar archive: `export.json` and `files/<attachment id>`.
    Bundle,
}

impl Format {
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Json => "application/json",
            Format::Csv => "text/csv; charset=utf-8",
            Format::Md => "text/markdown; charset=utf-8",
            Format::Bundle => "application/x-tar",
        }
    }

    /// Its name in `?format=` and `--format`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Csv => "csv",
            Format::Md => "md",
            Format::Bundle => "bundle",
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Csv => "csv",
            Format::Md => "md",
            Format::Bundle => "tar",
        }
    }
}

/// What an export holds.
#[derive(Debug, Serialize)]
pub struct Export {
    /// Always `local-mcp-export`: what this file is.
    pub format: &'static str,
    pub version: u32,
    pub exported_at: Timestamp,
    /// The queue exported, or `null` for all.
    pub queue: Option<crate::model::QueueName>,
    /// Delivered instructions before this time were left out.
    pub since: Option<Timestamp>,
    /// Pending ones in delivery order, then delivered ones newest first, each with its report.
    pub instructions: Vec<Instruction>,
    /// Reports that stand alone (questions, notes), newest first.
    pub reports: Vec<Report>,
}

/// The file's text in `format` (a bundle is its JSON: [`write_bundle`] archives it).
pub fn render(export: &Export, format: Format) -> String {
    match format {
        Format::Json | Format::Bundle => serde_json::to_string_pretty(export).unwrap_or_default(),
        Format::Csv => csv(export),
        Format::Md => markdown(export),
    }
}

/// Write a bundle to `out`: the JSON, then each attachment's original file
/// (`original` opens it).
pub fn write_bundle(
    export: &Export,
    out: impl Write,
    original: impl Fn(&Attachment) -> std::io::Result<File>,
) -> Result<()> {
    let io = |e: std::io::Error| Error::internal("cannot write the bundle", e);
    let mut archive = tar::Builder::new(out);
    let json = render(export, Format::Json);
    let mut header = tar::Header::new_gnu();
    header.set_size(json.len() as u64);
    header.set_mode(0o600);
    header.set_mtime(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    );
    archive
        .append_data(&mut header, BUNDLE_JSON, json.as_bytes())
        .map_err(io)?;
    for a in export.instructions.iter().flat_map(|i| &i.attachments) {
        let mut file = original(a).map_err(io)?;
        archive
            .append_file(format!("{BUNDLE_FILES}/{}", a.id), &mut file)
            .map_err(io)?;
    }
    archive.into_inner().and_then(|mut w| w.flush()).map_err(io)
}

/// What an import did, or would do (`dry_run`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ImportSummary {
    pub dry_run: bool,
    /// Pending instructions added at the back of their queues.
    pub pending: usize,
    /// Delivered instructions added to the history.
    pub delivered: usize,
    /// Reports added (on instructions, and standing alone).
    pub reports: usize,
    /// Attachment files added.
    pub attachments: usize,
    /// Items skipped because they are already here (same id, same item).
    pub already_present: usize,
    /// Items whose id was taken by something else, given a new one.
    pub new_ids: usize,
    /// Queues the import creates.
    pub queues_created: Vec<String>,
    /// Attachments a JSON export lists without their files (a bundle carries them).
    pub attachments_not_in_file: usize,
}

/// An export as an import reads it: the models are the API's, checked again
/// by the import before anything is written.
#[derive(Debug, Deserialize)]
pub struct Incoming {
    #[serde(default, deserialize_with = "instructions")]
    pub instructions: Vec<Instruction>,
    #[serde(default, deserialize_with = "reports")]
    pub reports: Vec<Report>,
}

fn instructions<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Vec<Instruction>, D::Error> {
    d.deserialize_seq(Numbered("instruction", std::marker::PhantomData))
}

fn reports<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Vec<Report>, D::Error> {
    d.deserialize_seq(Numbered("report", std::marker::PhantomData))
}

/// A list read item by item, so that an item breaking a rule (a queue
/// name, an agent id) is named by its place: "instruction 3: queue name …".
struct Numbered<T>(&'static str, std::marker::PhantomData<T>);

impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Numbered<T> {
    type Value = Vec<T>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "a list of {}s", self.0)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Vec<T>, A::Error> {
        let mut items = Vec::new();
        loop {
            match seq.next_element::<T>() {
                Ok(Some(item)) => items.push(item),
                Ok(None) => return Ok(items),
                Err(e) => return Err(serde::de::Error::custom(format!("{} {}: {e}", self.0, items.len() + 1))),
            }
        }
    }
}

/// A file opened for import: its export, and where a bundle keeps each
/// attachment's bytes (read one at a time, never all at once).
#[derive(Debug)]
pub struct Opened {
    pub export: Incoming,
    /// `None` for a JSON export (it lists attachments without their files).
    pub bundle: Option<Bundle>,
}

/// The attachment files of a bundle: offset and size of each, by attachment id.
#[derive(Debug)]
pub struct Bundle {
    path: PathBuf,
    files: HashMap<String, (u64, u64)>,
}

impl Bundle {
    /// The bytes of attachment `id`, if the bundle has them.
    pub fn read(&self, id: &str) -> Result<Option<Vec<u8>>> {
        let Some(&(offset, size)) = self.files.get(id) else {
            return Ok(None);
        };
        let io = |e: std::io::Error| Error::Invalid(format!("cannot read the bundle's file for attachment {id}: {e}"));
        let mut file = File::open(&self.path).map_err(io)?;
        file.seek(SeekFrom::Start(offset)).map_err(io)?;
        let mut bytes = Vec::with_capacity(size as usize);
        file.take(size).read_to_end(&mut bytes).map_err(io)?;
        if bytes.len() as u64 != size {
            return Err(Error::Invalid(format!(
                "the bundle is cut off inside the file of attachment {id}"
            )));
        }
        Ok(Some(bytes))
    }
}

/// Open an export file: JSON, or a bundle (told apart by the tar header, not the name).
/// `name` is how messages call the file ("the file": what was sent is a
/// temporary copy whose path means nothing to the person).
pub fn open(path: &Path, name: &str) -> Result<Opened> {
    let bad = |why: String| Error::Invalid(format!("{name} {why}"));
    let mut file = File::open(path).map_err(|e| bad(format!("cannot be read: {e}")))?;
    let mut head = [0u8; 512];
    let mut got = 0;
    while got < head.len() {
        match file.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) => return Err(bad(format!("cannot be read: {e}"))),
        }
    }
    let is_tar = got == 512 && &head[257..262] == b"ustar";
    file.seek(SeekFrom::Start(0))
        .map_err(|e| bad(format!("cannot be read: {e}")))?;
    if !is_tar {
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        if len > MAX_IMPORT_JSON_BYTES {
            return Err(bad(format!(
                "is {len} bytes; an export's JSON is at most {MAX_IMPORT_JSON_BYTES}"
            )));
        }
        let export = parse_json(std::io::BufReader::new(file)).map_err(bad)?;
        return Ok(Opened { export, bundle: None });
    }
    let mut archive = tar::Archive::new(file);
    let mut export = None;
    let mut files = HashMap::new();
    let entries = archive
        .entries()
        .map_err(|e| bad(format!("is not a readable archive: {e}")))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| bad(format!("is not a readable archive: {e}")))?;
        let entry_path = entry
            .path()
            .map_err(|e| bad(format!("has an entry with an unreadable name: {e}")))?
            .to_string_lossy()
            .into_owned();
        if entry_path == BUNDLE_JSON {
            if entry.size() > MAX_IMPORT_JSON_BYTES {
                return Err(bad(format!(
                    "holds an {BUNDLE_JSON} larger than {MAX_IMPORT_JSON_BYTES} bytes"
                )));
            }
            export = Some(parse_json(&mut entry).map_err(|why| bad(format!("holds an {BUNDLE_JSON} that {why}")))?);
        } else if let Some(id) = entry_path.strip_prefix(&format!("{BUNDLE_FILES}/")) {
            if entry.header().entry_type().is_file() && !id.is_empty() && !id.contains('/') {
                files.insert(id.to_owned(), (entry.raw_file_position(), entry.size()));
            }
        }
        // Anything else in the archive is not ours to read; it is left alone.
    }
    let export = export.ok_or_else(|| bad(format!("is an archive without {BUNDLE_JSON}: not a local-mcp bundle")))?;
    Ok(Opened {
        export,
        bundle: Some(Bundle {
            path: path.to_owned(),
            files,
        }),
    })
}

fn parse_json(mut reader: impl Read) -> std::result::Result<Incoming, String> {
    // The text once, then two typed passes over it: what it says it is (the
    // rest skipped unallocated), then the export. A `Value` tree of a long
    // history would take several times the file's size.
    let mut text = Vec::new();
    reader
        .read_to_end(&mut text)
        .map_err(|e| format!("cannot be read: {e}"))?;
    #[derive(Deserialize)]
    struct Head {
        format: Option<serde_json::Value>,
        version: Option<serde_json::Value>,
    }
    let head: Head =
        serde_json::from_slice(&text).map_err(|e| format!("is not a local-mcp export (JSON or bundle): {e}"))?;
    let format = head.format.as_ref().and_then(|f| f.as_str()).unwrap_or_default();
    if format != FORMAT_NAME {
        return Err(format!(
            "is not a local-mcp export: its \"format\" is {format:?}, not {FORMAT_NAME:?}"
        ));
    }
    let version = head.version.as_ref().and_then(|v| v.as_u64()).unwrap_or(0);
    if version != u64::from(FORMAT_VERSION) {
        return Err(format!(
            "is an export of version {version}; this local-mcp reads version {FORMAT_VERSION} (a newer local-mcp wrote it?)"
        ));
    }
    serde_json::from_slice(&text).map_err(|e| format!("does not have the shape of an export: {e}"))
}

fn csv(export: &Export) -> String {
    let mut out = csv::Writer::from_writer(Vec::new());
    let _ = out.write_record([
        "id",
        "queue",
        "status",
        "created_at",
        "consumed_at",
        "agent",
        "target",
        "content",
        "report",
        "attachments",
    ]);
    for i in &export.instructions {
        let status = if i.status == InstructionStatus::Pending {
            "pending"
        } else {
            "consumed"
        };
        let attachments = i
            .attachments
            .iter()
            .map(|a| a.name.as_str())
            .collect::<Vec<_>>()
            .join("; ");
        let _ = out.write_record(
            [
                i.id.as_str(),
                &i.queue,
                status,
                &i.created_at,
                i.consumed_at.as_deref().unwrap_or(""),
                i.consumed_by_agent_id.as_deref().unwrap_or(""),
                i.target.as_deref().unwrap_or(""),
                &i.content,
                i.report.as_ref().map(|r| r.content.as_str()).unwrap_or(""),
                &attachments,
            ]
            .map(inert_cell),
        );
    }
    String::from_utf8(out.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// A cell a spreadsheet will not run: text an agent or a person wrote that
/// starts with `=`, `+`, `-`, `@`, a tab or a carriage return is a formula
/// there (`=HYPERLINK(…)`, `=cmd|…`), so it gets a leading `'`, which
/// spreadsheets show as text (OWASP, "CSV Injection").
fn inert_cell(cell: &str) -> String {
    match cell.chars().next() {
        Some('=' | '+' | '-' | '@' | '\t' | '\r') => format!("'{cell}"),
        _ => cell.to_owned(),
    }
}

fn markdown(export: &Export) -> String {
    let mut md = format!(
        "# local-mcp export\n\nExported {}{}{}.\n",
        export.exported_at,
        export
            .queue
            .as_deref()
            .map(|q| format!(", queue `{q}`"))
            .unwrap_or_default(),
        export
            .since
            .as_deref()
            .map(|s| format!(", delivered since {s}"))
            .unwrap_or_default()
    );
    let (pending, delivered): (Vec<&Instruction>, Vec<&Instruction>) = export
        .instructions
        .iter()
        .partition(|i| i.status == InstructionStatus::Pending);
    md.push_str(&format!("\n## Pending ({})\n", pending.len()));
    for (n, i) in pending.iter().enumerate() {
        let to = i.target.as_deref().map(|t| format!(" (for {t})")).unwrap_or_default();
        md.push_str(&format!("\n{}. {}{to}\n", n + 1, indent(&i.content, "   ")));
    }
    md.push_str(&format!("\n## Delivered ({})\n", delivered.len()));
    for i in delivered {
        md.push_str(&format!(
            "\n### {} — {} ({})\n\n{}\n",
            i.consumed_at.as_deref().unwrap_or("?"),
            i.consumed_by_agent_id.as_deref().unwrap_or("unknown agent"),
            i.queue,
            i.content.trim_end()
        ));
        for a in &i.attachments {
            md.push_str(&format!(
                "\n- attached: {} ({}, {} bytes)\n",
                a.name, a.mime_type, a.bytes
            ));
        }
        if let Some(r) = &i.report {
            md.push_str(&format!("\n{}\n", quote(&r.content)));
        }
    }
    if !export.reports.is_empty() {
        md.push_str(&format!("\n## Notes and questions ({})\n", export.reports.len()));
        for r in &export.reports {
            md.push_str(&format!(
                "\n### {} — {} ({})\n\n{}\n",
                r.created_at,
                r.agent_id,
                r.queue,
                quote(&r.content)
            ));
        }
    }
    md
}

fn indent(text: &str, pad: &str) -> String {
    text.trim_end().lines().collect::<Vec<_>>().join(&format!("\n{pad}"))
}

fn quote(text: &str) -> String {
    text.trim_end()
        .lines()
        .map(|l| if l.is_empty() { ">".to_owned() } else { format!("> {l}") })
        .collect::<Vec<_>>()
        .join("\n")
}
