//! The nouns checked at several doors, each checked once: a queue's name, an
//! agent's id, an instruction's id and text, a moment in time. Each is a type whose constructor and
//! `Deserialize` apply the rule and whose OpenAPI schema states it, so a
//! handler that holds one cannot hold an invalid value, and the rule is
//! spelled in one place (`engine/tests/it/layers.rs` looks for its pattern).

use std::fmt;
use std::ops::Deref;

use serde::{Deserialize, Serialize};
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{RefOr, Schema};

use crate::{Error, Result};

/// The longest queue name, in characters.
pub const MAX_QUEUE_NAME_CHARS: usize = 64;
/// The longest agent id, in characters.
pub const MAX_AGENT_ID_CHARS: usize = 128;
/// The longest instruction text, in bytes.
pub const MAX_INSTRUCTION_BYTES: usize = 64 * 1024;

/// A queue name as the schema states it: a-z 0-9 . _ - (upper case is
/// accepted and lowered), not only dots.
pub const QUEUE_NAME_PATTERN: &str = "^[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*$";

/// Text without control characters (Unicode's Cc, what `char::is_control` is).
const NO_CONTROLS: &str = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$";
/// The same, and not only blanks.
const NOT_BLANK_NO_CONTROLS: &str =
    "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$";

/// How the messages of these rules begin: the API answers a body or query
/// that breaks one with 400 and the message, as it does a handler's check.
const RULES: &[&str] = &[
    "queue name ",
    "agent id ",
    "instruction content ",
    "instruction id ",
    "time ",
];

/// Whether a deserializer's message is one of these rules' (the extractors
/// answer those with 400, not as a body of the wrong shape).
pub fn breaks_a_rule(message: &str) -> bool {
    RULES.iter().any(|r| message.starts_with(r))
}

/// A queue's name: 1–64 of a-z 0-9 . _ -, lower-cased, not only dots (names
/// end up in URLs and file names; "." and ".." would mean something there).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct QueueName(String);

impl QueueName {
    pub fn new(raw: &str) -> Result<QueueName> {
        let name = raw.to_ascii_lowercase();
        let ok = (1..=MAX_QUEUE_NAME_CHARS).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-'));
        if !ok || name.bytes().all(|b| b == b'.') {
            return Err(Error::Invalid(format!(
                "queue name {raw:?} is not valid: use 1–{MAX_QUEUE_NAME_CHARS} characters of a-z, 0-9, '.', '_' and '-' (not only dots)"
            )));
        }
        Ok(QueueName(name))
    }

    /// `default`, the queue of every agent and instruction not told otherwise.
    pub fn default_queue() -> QueueName {
        QueueName(super::DEFAULT_QUEUE.to_owned())
    }

    pub fn is_default(&self) -> bool {
        self.0 == super::DEFAULT_QUEUE
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

/// An agent's id: at most 128 characters, none of them a control character;
/// surrounding blanks are dropped. Blank means "no agent" (`None`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct AgentId(String);

impl AgentId {
    /// The id `raw` names; `None` for a blank one.
    pub fn new(raw: &str) -> Result<Option<AgentId>> {
        let id = raw.trim();
        if id.is_empty() {
            return Ok(None);
        }
        if id.chars().count() > MAX_AGENT_ID_CHARS || id.chars().any(char::is_control) {
            return Err(Error::Invalid(format!(
                "agent id {:?} is not valid: at most {MAX_AGENT_ID_CHARS} characters, no control characters",
                id.chars().take(40).collect::<String>()
            )));
        }
        Ok(Some(AgentId(id.to_owned())))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

/// An instruction's id: what the store made it (a UUID), or what an
/// import kept. Not empty, at most 128 characters, no control characters. No
/// rule on its characters beyond that: a row an older version or a hostile
/// file left must still be listed and deletable, so what builds a path
/// from an id checks it there (the import renews an odd one; the
/// attachments folder refuses one that leaves it).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct InstructionId(String);

impl InstructionId {
    /// A fresh id.
    pub fn fresh() -> InstructionId {
        InstructionId(uuid::Uuid::new_v4().to_string())
    }

    pub fn new(raw: &str) -> Result<InstructionId> {
        let ok = !raw.is_empty() && raw.chars().count() <= MAX_AGENT_ID_CHARS && !raw.chars().any(char::is_control);
        if !ok {
            return Err(Error::Invalid(format!(
                "instruction id {:?} is not valid: 1–{MAX_AGENT_ID_CHARS} characters, no control characters",
                raw.chars().take(40).collect::<String>()
            )));
        }
        Ok(InstructionId(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

/// An instruction's text as a person queues it: not blank, at most 64 KiB,
/// no NUL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Content(String);

impl Content {
    pub fn new(text: String) -> Result<Content> {
        if text.trim().is_empty() {
            return Err(Error::Invalid(
                "instruction content must not be empty or whitespace only".into(),
            ));
        }
        if text.len() > MAX_INSTRUCTION_BYTES {
            return Err(Error::TooLarge(format!(
                "instruction content is {} bytes; the limit is {MAX_INSTRUCTION_BYTES} bytes",
                text.len()
            )));
        }
        if text.contains('\0') {
            return Err(Error::Invalid(
                "instruction content must not contain NUL characters".into(),
            ));
        }
        Ok(Content(text))
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

/// A moment as the product stores and shows it: RFC 3339, UTC, milliseconds
/// (`crate::time`'s one fixed-width format, so stored ones sort in time
/// order as text). Made only by [`Timestamp::now`], [`Timestamp::in_seconds`]
/// and [`Timestamp::read`] (any RFC 3339 time or a date, brought to that
/// format), so every one has it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Timestamp(String);

impl Timestamp {
    /// Now.
    pub fn now() -> Timestamp {
        Timestamp(crate::time::now())
    }

    /// The moment `t`.
    pub fn at(t: time::OffsetDateTime) -> Timestamp {
        Timestamp(crate::time::format(t))
    }

    /// `secs` seconds from now.
    pub fn in_seconds(secs: u64) -> Timestamp {
        Timestamp(crate::time::in_seconds(secs))
    }

    /// A moment as a person or a file gives it: an RFC 3339 time in any
    /// offset, or a date (its midnight, UTC); years 0001 to 9999 in UTC.
    pub fn read(raw: &str) -> Result<Timestamp> {
        let raw = raw.trim();
        if let Some(t) = crate::time::parse(raw) {
            return Ok(Timestamp(crate::time::format(t)));
        }
        if let Ok(t) = time::OffsetDateTime::parse(raw, &time::format_description::well_known::Rfc3339) {
            // 9999-12-31T23:00:00-05:00 is a valid time whose UTC lies past year 9999.
            let utc = t
                .checked_to_offset(time::UtcOffset::UTC)
                .filter(|t| (1..=9999).contains(&t.year()))
                .ok_or_else(|| Error::Invalid(format!("time {raw:?} is out of range (years 0001 to 9999, UTC)")))?;
            return Ok(Timestamp(crate::time::format(utc)));
        }
        let date = time::Date::parse(raw, time::macros::format_description!("[year]-[month]-[day]")).map_err(|_| {
            Error::Invalid(format!(
                "time {raw:?} is neither a date (2026-11-24) nor an RFC 3339 time"
            ))
        })?;
        if !(1..=9999).contains(&date.year()) {
            return Err(Error::Invalid(format!(
                "time {raw:?} is out of range (years 0001 to 9999)"
            )));
        }
        Ok(Timestamp(crate::time::format(date.midnight().assume_utc())))
    }

    /// This moment as a time to compute with.
    pub fn time(&self) -> time::OffsetDateTime {
        // Every Timestamp is in the one format (see the constructors).
        crate::time::parse(&self.0).unwrap_or(time::OffsetDateTime::UNIX_EPOCH)
    }

    /// Seconds from this moment to now (0 when it lies ahead).
    pub fn seconds_ago(&self) -> f64 {
        crate::time::seconds_since(&self.0).unwrap_or(0.0)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

macro_rules! text_type {
    ($ty:ident, $make:expr, $schema:expr) => {
        impl TryFrom<String> for $ty {
            type Error = String;
            fn try_from(raw: String) -> std::result::Result<$ty, String> {
                #[allow(clippy::redundant_closure_call)]
                ($make)(raw).map_err(|e: Error| e.to_string())
            }
        }

        impl From<$ty> for String {
            fn from(value: $ty) -> String {
                value.0
            }
        }

        impl Deref for $ty {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $ty {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl PartialEq<str> for $ty {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $ty {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<String> for $ty {
            fn eq(&self, other: &String) -> bool {
                &self.0 == other
            }
        }

        impl PartialEq<$ty> for str {
            fn eq(&self, other: &$ty) -> bool {
                self == other.0
            }
        }

        impl PartialEq<$ty> for String {
            fn eq(&self, other: &$ty) -> bool {
                *self == other.0
            }
        }

        impl std::borrow::Borrow<str> for $ty {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl utoipa::PartialSchema for $ty {
            fn schema() -> RefOr<Schema> {
                #[allow(clippy::redundant_closure_call)]
                ($schema)(ObjectBuilder::new().schema_type(Type::String)).into()
            }
        }

        impl utoipa::ToSchema for $ty {}
    };
}

text_type!(QueueName, |raw: String| QueueName::new(&raw), |b: ObjectBuilder| b
    .min_length(Some(1))
    .max_length(Some(MAX_QUEUE_NAME_CHARS))
    .pattern(Some(QUEUE_NAME_PATTERN))
    .description(Some(
        "A queue: 1–64 characters of a-z 0-9 . _ - (upper case is lowered)"
    )));
text_type!(
    AgentId,
    |raw: String| AgentId::new(&raw)?.ok_or_else(|| Error::Invalid("agent id must not be blank".into())),
    |b: ObjectBuilder| b
        .min_length(Some(1))
        .max_length(Some(MAX_AGENT_ID_CHARS))
        .pattern(Some(NOT_BLANK_NO_CONTROLS))
        .description(Some(
            "An agent id: not blank, at most 128 characters, no control characters"
        ))
);
text_type!(
    InstructionId,
    |raw: String| InstructionId::new(&raw),
    |b: ObjectBuilder| b
        .min_length(Some(1))
        .max_length(Some(MAX_AGENT_ID_CHARS))
        .pattern(Some(NO_CONTROLS))
        .description(Some("An instruction's id"))
);
text_type!(Content, Content::new, |b: ObjectBuilder| b
    .min_length(Some(1))
    .max_length(Some(MAX_INSTRUCTION_BYTES))
    .pattern(Some("\\S"))
    .description(Some("An instruction's text: not blank, at most 64 KiB, no NUL")));

text_type!(Timestamp, |raw: String| Timestamp::read(&raw), |b: ObjectBuilder| b
    .format(Some(utoipa::openapi::schema::SchemaFormat::KnownFormat(
        utoipa::openapi::schema::KnownFormat::DateTime
    )))
    .description(Some(
        "A moment: RFC 3339, UTC, milliseconds (2026-11-24T09:30:00.000Z)"
    )));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rule_is_applied_when_made_and_when_read() {
        assert_eq!(QueueName::new("Repo-A").unwrap().as_str(), "repo-a");
        for bad in ["", "..", "a/b", &"x".repeat(65)] {
            assert!(QueueName::new(bad).is_err(), "{bad:?}");
            let json = serde_json::to_string(bad).unwrap();
            let read = serde_json::from_str::<QueueName>(&json);
            assert!(
                read.as_ref().is_err_and(|e| breaks_a_rule(&e.to_string())),
                "{bad:?}: {read:?}"
            );
        }
        assert_eq!(
            serde_json::from_str::<QueueName>("\"Work\"").unwrap(),
            QueueName::new("work").unwrap()
        );
        assert_eq!(AgentId::new("  claude  ").unwrap().unwrap().as_str(), "claude");
        assert!(AgentId::new("   ").unwrap().is_none());
        assert!(AgentId::new("a\u{7}b").is_err());
        assert!(serde_json::from_str::<Content>("\"  \"").is_err());
        assert!(Content::new("x".repeat(MAX_INSTRUCTION_BYTES + 1)).is_err());
        assert_eq!(serde_json::to_string(&QueueName::new("q").unwrap()).unwrap(), "\"q\"");
    }

    #[test]
    fn a_time_is_read_once_into_the_one_format_and_written_as_it_is() {
        let t: Timestamp = serde_json::from_str("\"2026-11-24T10:30:00.5+01:00\"").unwrap();
        assert_eq!(t, "2026-11-24T09:30:00.500Z");
        assert_eq!(serde_json::to_string(&t).unwrap(), "\"2026-11-24T09:30:00.500Z\"");
        let err = serde_json::from_str::<Timestamp>("\"yesterday\"")
            .unwrap_err()
            .to_string();
        assert!(breaks_a_rule(&err), "{err}");
        let (a, b) = (Timestamp::read("2026-11-24").unwrap(), Timestamp::now());
        assert!(a < b && b.seconds_ago() < 60.0 && a.seconds_ago() > 0.0);
        assert!(Timestamp::in_seconds(60) > b);
        assert_eq!(t.time(), time::macros::datetime!(2026-11-24 09:30:00.5 UTC));
        assert_eq!(Timestamp::at(t.time()), t);
    }
}
