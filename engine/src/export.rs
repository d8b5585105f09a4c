//! The history as a file a person keeps or reads elsewhere: JSON (everything,
//! as the API shows it), CSV (one row per instruction, for a spreadsheet) or
//! Markdown (to read). Built from the same models the API returns; the
//! attachment files themselves travel in a backup (`backup FILE`), an export
//! lists them.

use serde::Serialize;

use crate::model::{Instruction, InstructionStatus, Report};

/// The formats `GET /api/export` and `export` write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, clap::ValueEnum, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Json,
    Csv,
    Md,
}

impl Format {
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Json => "application/json",
            Format::Csv => "text/csv; charset=utf-8",
            Format::Md => "text/markdown; charset=utf-8",
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Csv => "csv",
            Format::Md => "md",
        }
    }
}

/// What an export holds.
#[derive(Debug, Serialize)]
pub struct Export {
    /// Always `local-mcp-export`: what this file is.
    pub format: &'static str,
    pub version: u32,
    pub exported_at: String,
    /// The queue exported, or `null` for all.
    pub queue: Option<String>,
    /// Delivered instructions before this time were left out.
    pub since: Option<String>,
    /// Pending ones in delivery order, then delivered ones newest first, each with its report.
    pub instructions: Vec<Instruction>,
    /// Reports that stand alone (questions, notes), newest first.
    pub reports: Vec<Report>,
}

/// The file's text in `format`.
pub fn render(export: &Export, format: Format) -> String {
    match format {
        Format::Json => serde_json::to_string_pretty(export).unwrap_or_default(),
        Format::Csv => csv(export),
        Format::Md => markdown(export),
    }
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
        let _ = out.write_record([
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
        ]);
    }
    String::from_utf8(out.into_inner().unwrap_or_default()).unwrap_or_default()
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
