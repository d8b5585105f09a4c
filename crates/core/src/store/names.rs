//! The model's checked names and times as SQLite values: written as their text, and
//! checked again when read, so a row an older version (or a hand-edited
//! file) left with a name that breaks today's rule is an error naming it,
//! never a value no door would have let in.

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};

use crate::model::{AgentId, InstructionId, QueueName, Timestamp};

macro_rules! sql_text {
    ($ty:ty, $read:expr) => {
        impl ToSql for $ty {
            fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
                Ok(ToSqlOutput::from(self.as_str()))
            }
        }

        impl FromSql for $ty {
            fn column_result(value: ValueRef<'_>) -> FromSqlResult<$ty> {
                let text = value.as_str()?;
                #[allow(clippy::redundant_closure_call)]
                ($read)(text).map_err(|e: crate::Error| FromSqlError::Other(Box::new(e)))
            }
        }
    };
}

sql_text!(QueueName, QueueName::new);
sql_text!(InstructionId, InstructionId::new);
sql_text!(Timestamp, |raw: &str| Ok::<_, crate::Error>(stored_time(raw)));

/// A stored time as the model holds it. Ours are always in the one format;
/// anything else is read as any RFC 3339 time or date would be. A value that
/// is no time at all (only a hand-made or hostile database has one) reads as
/// the Unix epoch, said once in the log: its row stays listable, deliverable
/// and deletable, its time plainly wrong rather than made to look right.
fn stored_time(raw: &str) -> Timestamp {
    Timestamp::read(raw).unwrap_or_else(|e| {
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| tracing::warn!(error = %e, "a stored time is not a time; it reads as 1970-01-01"));
        Timestamp::at(time::OffsetDateTime::UNIX_EPOCH)
    })
}
sql_text!(AgentId, |raw: &str| AgentId::new(raw)?
    .ok_or_else(|| crate::Error::Invalid("agent id must not be blank".into())));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_breaking_the_rule_is_an_error_when_read_a_time_never_is() {
        let db = rusqlite::Connection::open_in_memory().unwrap();
        let q: QueueName = db.query_row("SELECT 'Work'", [], |r| r.get(0)).unwrap();
        assert_eq!(q, "work");
        let bad = db.query_row("SELECT 'a/b'", [], |r| r.get::<_, QueueName>(0));
        assert!(bad.is_err_and(|e| e.to_string().contains("queue name")));
        let bad = db.query_row("SELECT '  '", [], |r| r.get::<_, AgentId>(0));
        assert!(bad.is_err());
        let t: Timestamp = db
            .query_row("SELECT '2026-11-24T10:30:00+01:00'", [], |r| r.get(0))
            .unwrap();
        assert_eq!(t, "2026-11-24T09:30:00.000Z", "any RFC 3339 time, in ours");
        let t: Timestamp = db.query_row("SELECT 't'", [], |r| r.get(0)).unwrap();
        assert_eq!(
            t, "1970-01-01T00:00:00.000Z",
            "no time at all: plainly wrong, the row still readable"
        );
        let id = InstructionId::fresh();
        let back: InstructionId = db.query_row("SELECT ?1", [&id], |r| r.get(0)).unwrap();
        assert_eq!(back, id);
    }
}
