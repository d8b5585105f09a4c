//! The model's checked names as SQLite values: written as their text, and
//! checked again when read, so a row an older version (or a hand-edited
//! file) left with a name that breaks today's rule is an error naming it,
//! never a value no door would have let in.

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};

use crate::model::{AgentId, InstructionId, QueueName};

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
sql_text!(AgentId, |raw: &str| AgentId::new(raw)?
    .ok_or_else(|| crate::Error::Invalid("agent id must not be blank".into())));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_breaking_the_rule_is_an_error_when_read() {
        let db = rusqlite::Connection::open_in_memory().unwrap();
        let q: QueueName = db.query_row("SELECT 'Work'", [], |r| r.get(0)).unwrap();
        assert_eq!(q, "work");
        let bad = db.query_row("SELECT 'a/b'", [], |r| r.get::<_, QueueName>(0));
        assert!(bad.is_err_and(|e| e.to_string().contains("queue name")));
        let bad = db.query_row("SELECT '  '", [], |r| r.get::<_, AgentId>(0));
        assert!(bad.is_err());
        let id = InstructionId::fresh();
        let back: InstructionId = db.query_row("SELECT ?1", [&id], |r| r.get(0)).unwrap();
        assert_eq!(back, id);
    }
}
