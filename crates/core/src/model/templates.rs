//! Templates: instructions the person saves under a short name and reuses
//! (`/name` in the composer, `add --template NAME`), and the per-queue
//! suffix appended to every instruction of a queue when it is delivered.

use super::Timestamp;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::{Error, Result};

/// The longest template name, in characters.
pub const MAX_TEMPLATE_NAME_CHARS: usize = 64;
/// The longest queue suffix, in characters: a line or a short paragraph, not a second instruction.
pub const MAX_SUFFIX_CHARS: usize = 4096;

/// A saved instruction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Template {
    /// What `/` completes and `--template` names: a-z, 0-9, `.`, `_`, `-`.
    pub name: String,
    /// The instruction text it puts in the composer.
    pub content: String,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// Files that go with it (absent when it has none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<TemplateFile>,
}

/// A file saved with a template (its original; using the template uploads it again).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TemplateFile {
    /// Its place among the template's files, and its handle in `/api/templates/{name}/files/{ordinal}`.
    pub ordinal: u32,
    pub name: String,
    /// `image` or `text`, from the bytes.
    pub kind: String,
    pub mime_type: String,
    pub bytes: u64,
    pub sha256: String,
    pub created_at: Timestamp,
}

/// The body of `PUT /api/templates/{name}`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TemplateBody {
    /// The text: not blank, no NUL, at most 64 KiB (65,536 bytes) of UTF-8
    #[schema(min_length = 1, pattern = "^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$")]
    pub content: String,
}

/// Lower-case `raw` and check it is a template name: 1–64 of `a-z 0-9 . _ -`,
/// starting with a letter or digit (typed after `/`, it must be easy to type).
pub fn template_name(raw: &str) -> Result<String> {
    let name = raw.trim().to_ascii_lowercase();
    let ok = (1..=MAX_TEMPLATE_NAME_CHARS).contains(&name.len())
        && name.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-'));
    if !ok {
        return Err(Error::Invalid(format!(
            "template name {raw:?} is not valid: use 1–{MAX_TEMPLATE_NAME_CHARS} characters of a-z, 0-9, '.', '_' and '-', starting with a letter or digit"
        )));
    }
    Ok(name)
}

/// Check a queue suffix: `None` (or blank) clears it.
pub fn suffix(raw: Option<&str>) -> Result<Option<String>> {
    let Some(text) = raw.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok(None);
    };
    let chars = text.chars().count();
    if chars > MAX_SUFFIX_CHARS {
        return Err(Error::Invalid(format!(
            "suffix is {chars} characters; the limit is {MAX_SUFFIX_CHARS}"
        )));
    }
    if text.contains('\0') {
        return Err(Error::Invalid("suffix must not contain NUL characters".into()));
    }
    Ok(Some(text.to_owned()))
}

/// An instruction's text as its agent receives it: with its queue's suffix
/// after a blank line (alone, for an instruction that is only files).
pub fn with_suffix(content: String, suffix: Option<&str>) -> String {
    match suffix {
        None => content,
        Some(s) if content.trim().is_empty() => s.to_owned(),
        Some(s) => format!("{}\n\n{s}", content.trim_end()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_short_lower_case_words() {
        assert_eq!(template_name(" Review-PR ").unwrap(), "review-pr");
        for bad in ["", "-x", ".x", "has space", "a/b", &"x".repeat(65)] {
            assert!(template_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_suffix_follows_after_a_blank_line_and_blank_clears_it() {
        assert_eq!(
            with_suffix("Fix it.\n".into(), Some("Run the tests.")),
            "Fix it.\n\nRun the tests."
        );
        assert_eq!(with_suffix("  ".into(), Some("Run the tests.")), "Run the tests.");
        assert_eq!(with_suffix("Fix it.".into(), None), "Fix it.");
        assert_eq!(suffix(Some("   ")).unwrap(), None);
        assert!(suffix(Some(&"x".repeat(MAX_SUFFIX_CHARS + 1))).is_err());
    }
}
