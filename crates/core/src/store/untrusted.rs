//! A database file from outside — a backup someone hands to `restore` — is
//! read as hostile until it has been checked, and then holds only what ours
//! would hold.
//!
//! SQLite runs what a schema says: a trigger in a restored file fired on
//! every instruction typed afterwards (it appended text to each one), and a
//! row's ids and file names are joined onto the attachments folder. So a
//! file is opened with SQLite's defensive mode and `trusted_schema` off (no
//! schema-defined SQL may call a function with side effects, nor write the
//! schema itself), its schema is compared object by object with the one our
//! migrations make at its version — an unknown table, view, trigger or
//! index, or one of ours changed, refuses it — and every id and file name
//! its rows would have joined onto a path must be one plain name.

use rusqlite::config::DbConfig;
use rusqlite::Connection;

use super::migrations;

/// Open `conn` the way an untrusted file must be: defensive, no trusted schema.
pub fn guard(conn: &Connection) -> rusqlite::Result<()> {
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_TRUSTED_SCHEMA, false)?;
    Ok(())
}

/// One object of a schema: its type, name, table and SQL (whitespace folded).
type Object = (String, String, String, Option<String>);

/// The objects of `conn`'s schema, SQLite's statistics tables aside (`ANALYZE`
/// and `PRAGMA optimize` make them on a live database; they hold no SQL).
/// Only those two tables, by type, exact name and SQLite's own text for them: SQLite refuses a reserved
/// `sqlite_` name when a statement makes one, not when it loads a schema,
/// so a trigger planted as `sqlite_stat_evil` would load — and run.
fn objects(conn: &Connection) -> rusqlite::Result<Vec<Object>> {
    let mut statement = conn.prepare(
        "SELECT type, name, tbl_name, sql FROM sqlite_schema
         WHERE NOT (type = 'table'
           AND (name, sql) IN (VALUES ('sqlite_stat1', 'CREATE TABLE sqlite_stat1(tbl,idx,stat)'),
                                      ('sqlite_stat4', 'CREATE TABLE sqlite_stat4(tbl,idx,neq,nlt,ndlt,sample)')))
         ORDER BY type, name",
    )?;
    let rows = statement.query_map([], |r| {
        let sql: Option<String> = r.get(3)?;
        Ok((
            r.get(0)?,
            r.get(1)?,
            r.get(2)?,
            sql.map(|s| s.split_whitespace().collect::<Vec<_>>().join(" ")),
        ))
    })?;
    rows.collect()
}

/// Whether `conn` holds exactly the schema our migrations make at its
/// version; otherwise what differs, in words.
pub fn same_schema(conn: &Connection) -> Result<i64, String> {
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|e| e.to_string())?;
    if version > migrations::SCHEMA_VERSION {
        return Err(format!(
            "it was made by a newer local-mcp (schema {version}, this one knows {})",
            migrations::SCHEMA_VERSION
        ));
    }
    if version < 1 {
        return Err("it is not a local-mcp database (no schema version)".into());
    }
    let reference = Connection::open_in_memory().map_err(|e| e.to_string())?;
    migrations::apply_up_to(&reference, version).map_err(|e| e.to_string())?;
    let (ours, theirs) = (
        objects(&reference).map_err(|e| e.to_string())?,
        objects(conn).map_err(|e| e.to_string())?,
    );
    for object in &theirs {
        match ours.iter().find(|o| (&o.0, &o.1) == (&object.0, &object.1)) {
            None => {
                return Err(format!(
                    "it holds a {} named {:?}, which local-mcp does not make",
                    object.0, object.1
                ))
            }
            Some(o) if o != object => {
                return Err(format!(
                    "its {} {:?} is not the one local-mcp makes",
                    object.0, object.1
                ));
            }
            Some(_) => {}
        }
    }
    if let Some(missing) = ours
        .iter()
        .find(|o| !theirs.iter().any(|t| (&t.0, &t.1) == (&o.0, &o.1)))
    {
        return Err(format!("it lacks local-mcp's {} {:?}", missing.0, missing.1));
    }
    Ok(version)
}

/// Every id and file name the rows of `conn` would have joined onto a path
/// is one plain name; otherwise the first that is not, in words.
pub fn plain_names(conn: &Connection) -> Result<(), String> {
    let checks: [(&str, &str); 4] = [
        ("an instruction's id", "SELECT id FROM instructions"),
        ("an attachment's folder", "SELECT instruction_id FROM attachments"),
        (
            "an attachment's file",
            "SELECT file FROM attachments UNION ALL SELECT delivery_file FROM attachments",
        ),
        ("a template's file", "SELECT file FROM template_files"),
    ];
    for (what, sql) in checks {
        // A table an older schema does not have yet has no rows to check.
        let Ok(mut statement) = conn.prepare(sql) else {
            continue;
        };
        let names = statement
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(|e| e.to_string())?;
        for name in names {
            let name = name.map_err(|e| e.to_string())?;
            if let Err(e) = crate::private_fs::plain_component(&name) {
                return Err(format!(
                    "{what} is not a plain name ({e}): a backup's rows may name nothing outside it"
                ));
            }
        }
    }
    if let Ok(mut statement) = conn.prepare("SELECT name FROM templates") {
        let names = statement
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(|e| e.to_string())?;
        for name in names {
            let name = name.map_err(|e| e.to_string())?;
            if crate::model::template_name(&name).ok().as_deref() != Some(name.as_str()) {
                return Err(format!("a template's name {name:?} is not one local-mcp gives"));
            }
        }
    }
    Ok(())
}
