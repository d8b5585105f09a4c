//! What an agent tells the person: a report (Markdown) of what it did, or a
//! question with suggested answers. The rules for what a report may hold,
//! and its shape on the wire (`docs/ARCHITECTURE.md`, "Reports").

use super::Timestamp;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::names::{AgentId, InstructionId, QueueName};
use crate::{Error, Result};

/// The largest report, in bytes of UTF-8: the same bound as an instruction.
pub const MAX_REPORT_BYTES: usize = 64 * 1024;
/// At most this many suggested answers…
pub const MAX_OPTIONS: usize = 8;
/// …of at most this many characters each.
pub const MAX_OPTION_CHARS: usize = 200;

/// A report as stored and served.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Report {
    pub id: String,
    pub queue: QueueName,
    pub agent_id: AgentId,
    /// The instruction it reports on; `null` for one that stands alone.
    pub instruction_id: Option<InstructionId>,
    /// The agent's Markdown, as sent.
    pub content: String,
    /// Suggested answers the person can pick with one click.
    pub options: Vec<String>,
    /// `content` rendered and sanitized on the server: the only HTML the page inserts.
    pub html: String,
    pub created_at: Timestamp,
}

/// Check a call's `report` and `options`. A blank report is no report;
/// options need a report (they answer its question). Each error names the
/// field and its limit: an agent can fix its next call.
pub fn report_args(report: Option<String>, options: Option<Vec<String>>) -> Result<Option<(String, Vec<String>)>> {
    let options = options.unwrap_or_default();
    let Some(report) = report.filter(|r| !r.trim().is_empty()) else {
        if !options.is_empty() {
            return Err(Error::Invalid(
                "options are answers to a question: pass the question as report".into(),
            ));
        }
        return Ok(None);
    };
    if report.len() > MAX_REPORT_BYTES {
        return Err(Error::Invalid(format!(
            "report is {} bytes; the limit is {MAX_REPORT_BYTES} bytes",
            report.len()
        )));
    }
    if report.contains('\0') {
        return Err(Error::Invalid("report must not contain NUL characters".into()));
    }
    if options.len() > MAX_OPTIONS {
        return Err(Error::Invalid(format!(
            "options has {} entries; the limit is {MAX_OPTIONS}",
            options.len()
        )));
    }
    for option in &options {
        if option.trim().is_empty() || option.chars().count() > MAX_OPTION_CHARS || option.chars().any(char::is_control)
        {
            return Err(Error::Invalid(format!(
                "each of options must be 1-{MAX_OPTION_CHARS} characters without control characters"
            )));
        }
    }
    Ok(Some((report, options)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_name_the_field() {
        assert_eq!(report_args(None, None).unwrap(), None);
        assert_eq!(report_args(Some("  ".into()), None).unwrap(), None);
        let ok = report_args(Some("done".into()), Some(vec!["yes".into(), "no".into()])).unwrap();
        assert_eq!(ok, Some(("done".into(), vec!["yes".into(), "no".into()])));
        let too_long = report_args(Some("x".repeat(MAX_REPORT_BYTES + 1)), None).unwrap_err();
        assert!(
            too_long
                .to_string()
                .contains("report is 65537 bytes; the limit is 65536"),
            "{too_long}"
        );
        let many = report_args(Some("q?".into()), Some(vec!["a".into(); 9])).unwrap_err();
        assert!(many.to_string().contains("options has 9 entries; the limit is 8"));
        assert!(report_args(Some("q?".into()), Some(vec!["x".repeat(201)])).is_err());
        assert!(report_args(Some("q?".into()), Some(vec![" ".into()])).is_err());
        assert!(report_args(None, Some(vec!["a".into()])).is_err());
    }
}
