//! Codex's `config.toml`, edited in place with `toml_edit`: comments, order
//! and every other table stay as written. (Codex's own `codex mcp add`
//! rewrites every `[mcp_servers.*]` table and cannot set `http_headers` or
//! `tool_timeout_sec`, so we do not use it.)

use serde_json::Value;
use toml_edit::{DocumentMut, Item};

use crate::snippets::toml_table;

pub struct TomlDoc {
    doc: DocumentMut,
}

impl TomlDoc {
    pub fn parse(text: &str) -> Result<TomlDoc, String> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let doc = text
            .parse::<DocumentMut>()
            .map_err(|e| e.to_string().trim_end().to_owned())?;
        Ok(TomlDoc { doc })
    }

    /// The whole document as JSON, for comparing before and after (through
    /// the `toml` crate: dates and the like become strings).
    pub fn value(&self) -> Value {
        toml::from_str::<toml::Table>(&self.doc.to_string())
            .ok()
            .and_then(|t| serde_json::to_value(t).ok())
            .unwrap_or(Value::Null)
    }

    pub fn get(&self, path: &[&str], name: &str) -> Option<Value> {
        let mut value = self.value();
        for key in path.iter().chain([&name]) {
            value = value.get_mut(*key)?.take();
        }
        Some(value)
    }

    pub fn set(&mut self, path: &[&str], name: &str, value: &Value) -> Result<(), String> {
        let mut table = self.doc.as_table_mut();
        for (i, key) in path.iter().enumerate() {
            let item = table.entry(key).or_insert_with(|| {
                let mut t = toml_edit::Table::new();
                // `[mcp_servers.local-mcp]` alone, without an empty `[mcp_servers]` above it.
                t.set_implicit(true);
                Item::Table(t)
            });
            table = item
                .as_table_mut()
                .ok_or_else(|| format!("\"{}\" is not a table", path[..=i].join(".")))?;
        }
        table.insert(name, Item::Table(toml_table(value)));
        Ok(())
    }

    pub fn remove(&mut self, path: &[&str], name: &str) -> bool {
        let mut table: &mut dyn toml_edit::TableLike = self.doc.as_table_mut();
        for key in path {
            match table.get_mut(key).and_then(Item::as_table_like_mut) {
                Some(inner) => table = inner,
                None => return false,
            }
        }
        table.remove(name).is_some()
    }

    pub fn text(&self) -> String {
        self.doc.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const CONFIG: &str = r#"# my codex
model = "o3"  # the good one

[mcp_servers.other]
command = "npx"   # keep
args = ["-y", "x"]

[profiles.fast]
model = "mini"
"#;

    #[test]
    fn the_entry_goes_in_and_out_leaving_everything_else() {
        let mut doc = TomlDoc::parse(CONFIG).unwrap();
        let entry = json!({"url": "http://127.0.0.1:8000/mcp", "http_headers": {"Authorization": "Bearer t"}, "tool_timeout_sec": 86460});
        doc.set(&["mcp_servers"], "local-mcp", &entry).unwrap();
        let text = doc.text();
        assert!(
            text.starts_with("# my codex\nmodel = \"o3\"  # the good one\n"),
            "{text}"
        );
        assert!(text.contains("command = \"npx\"   # keep"));
        assert!(text.contains("[mcp_servers.local-mcp]"), "{text}");
        let parsed = TomlDoc::parse(&text).unwrap();
        assert_eq!(parsed.get(&["mcp_servers"], "local-mcp"), Some(entry));
        let mut again = parsed;
        assert!(again.remove(&["mcp_servers"], "local-mcp"));
        assert_eq!(again.text(), CONFIG);
    }

    #[test]
    fn a_broken_file_or_a_wrong_shape_is_refused() {
        assert!(TomlDoc::parse("model = \n").is_err());
        assert!(TomlDoc::parse("[a]\nx=1\n[a]\nx=2\n").is_err());
        let mut doc = TomlDoc::parse("mcp_servers = 3\n").unwrap();
        assert!(doc.set(&["mcp_servers"], "local-mcp", &json!({"url": "u"})).is_err());
        assert_eq!(doc.text(), "mcp_servers = 3\n");
    }
}
