//! A client's JSON (or JSONC) file, edited in place: comments, blank lines,
//! indentation, key order and every key we do not own stay as the person
//! wrote them. Built on dprint's `jsonc-parser` concrete syntax tree.
//!
//! Parsing accepts what JSONC clients accept (comments, trailing commas) and
//! nothing looser, so a file a client would reject is not silently "fixed".

use jsonc_parser::cst::{CstInputValue, CstObject, CstRootNode};
use jsonc_parser::ParseOptions;
use serde_json::Value;

/// A parsed document. Not `Send` (the tree is reference-counted): parse,
/// edit and print it within one function.
pub struct JsonDoc {
    root: CstRootNode,
}

fn options() -> ParseOptions {
    ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

impl JsonDoc {
    /// Parse `text`; an empty (or blank) file is an empty object. The error
    /// says what is wrong and where, for the person to fix.
    pub fn parse(text: &str) -> Result<JsonDoc, String> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let root = CstRootNode::parse(text, &options()).map_err(|e| e.to_string())?;
        match root.value() {
            None => {}
            Some(node) if node.as_object().is_some() => {}
            Some(_) => return Err("the top level is not a JSON object".into()),
        }
        Ok(JsonDoc { root })
    }

    /// The whole document as plain JSON (comments dropped).
    pub fn value(&self) -> Value {
        self.root
            .to_serde_value()
            .unwrap_or_else(|| Value::Object(Default::default()))
    }

    /// The object at `path` (`["mcp", "servers"]`), if every step is an object.
    fn object_at(&self, path: &[&str]) -> Option<CstObject> {
        let mut obj = self.root.object_value()?;
        for key in path {
            obj = obj.object_value(key)?;
        }
        Some(obj)
    }

    /// The value named `name` in the object at `path`.
    pub fn get(&self, path: &[&str], name: &str) -> Option<Value> {
        self.object_at(path)?.get(name)?.value()?.to_serde_value()
    }

    /// Set `name` in the object at `path` to `value`, creating the objects on
    /// the way. Refuses (changing nothing) when a step exists but is not an object.
    pub fn set(&mut self, path: &[&str], name: &str, value: &Value) -> Result<(), String> {
        let Some(mut obj) = self.root.object_value_or_create() else {
            return Err("the top level is not a JSON object".into());
        };
        for (i, key) in path.iter().enumerate() {
            match obj.object_value_or_create(key) {
                Some(inner) => obj = inner,
                None => return Err(format!("\"{}\" is not an object", path[..=i].join("."))),
            }
        }
        let input = input_value(value);
        match obj.get(name) {
            Some(prop) => prop.set_value(input),
            None => {
                obj.append(name, input);
            }
        }
        Ok(())
    }

    /// Remove `name` from the object at `path`; `false` when it was not there.
    pub fn remove(&mut self, path: &[&str], name: &str) -> bool {
        match self.object_at(path).and_then(|o| o.get(name)) {
            Some(prop) => {
                prop.remove();
                true
            }
            None => false,
        }
    }

    /// The array at `path` (the last key names it), created when missing.
    /// Refuses when a step exists with another type.
    pub fn append_to_array(&mut self, path: &[&str], value: &Value) -> Result<(), String> {
        let (last, objects) = path.split_last().ok_or("no array named")?;
        let Some(mut obj) = self.root.object_value_or_create() else {
            return Err("the top level is not a JSON object".into());
        };
        for (i, key) in objects.iter().enumerate() {
            match obj.object_value_or_create(key) {
                Some(inner) => obj = inner,
                None => return Err(format!("\"{}\" is not an object", path[..=i].join("."))),
            }
        }
        match obj.array_value_or_create(last) {
            Some(array) => {
                array.append(input_value(value));
                Ok(())
            }
            None => Err(format!("\"{}\" is not an array", path.join("."))),
        }
    }

    /// Remove the first element of the array at `path` equal to `value`.
    pub fn remove_from_array(&mut self, path: &[&str], value: &Value) -> bool {
        let Some((last, objects)) = path.split_last() else {
            return false;
        };
        let Some(array) = self.object_at(objects).and_then(|o| o.array_value(last)) else {
            return false;
        };
        match array
            .elements()
            .into_iter()
            .find(|e| e.to_serde_value().as_ref() == Some(value))
        {
            Some(element) => {
                element.remove();
                true
            }
            None => false,
        }
    }

    /// The array at `path`'s elements as plain JSON (empty when missing).
    pub fn array(&self, path: &[&str]) -> Vec<Value> {
        let Some((last, objects)) = path.split_last() else {
            return Vec::new();
        };
        self.object_at(objects)
            .and_then(|o| o.array_value(last))
            .map(|a| a.elements().iter().filter_map(|e| e.to_serde_value()).collect())
            .unwrap_or_default()
    }

    pub fn text(&self) -> String {
        self.root.to_string()
    }
}

fn input_value(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(input_value).collect()),
        Value::Object(map) => CstInputValue::Object(map.iter().map(|(k, v)| (k.clone(), input_value(v))).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const WITH_COMMENTS: &str = r#"{
    // my servers
    "servers": {
        "other": { "type": "stdio", "command": "x" }, // keep me
    },
    /* block */
    "inputs": [],
}
"#;

    #[test]
    fn an_entry_goes_in_and_out_leaving_the_rest_byte_for_byte() {
        let mut doc = JsonDoc::parse(WITH_COMMENTS).unwrap();
        doc.set(
            &["servers"],
            "local-mcp",
            &json!({"type": "http", "url": "http://x/mcp"}),
        )
        .unwrap();
        let text = doc.text();
        assert!(text.contains("// my servers") && text.contains("// keep me") && text.contains("/* block */"));
        assert_eq!(
            JsonDoc::parse(&text).unwrap().get(&["servers"], "local-mcp"),
            Some(json!({"type": "http", "url": "http://x/mcp"}))
        );
        let mut again = JsonDoc::parse(&text).unwrap();
        assert!(again.remove(&["servers"], "local-mcp"));
        assert_eq!(again.text(), WITH_COMMENTS);
    }

    #[test]
    fn what_a_client_would_reject_is_refused() {
        for broken in ["{", "{\"a\": 1 \"b\": 2}", "{'a': 1}", "[1, 2]", "{\"a\": 0x10}", "nul"] {
            assert!(JsonDoc::parse(broken).is_err(), "{broken}");
        }
        let mut doc = JsonDoc::parse(r#"{"servers": []}"#).unwrap();
        assert!(doc.set(&["servers"], "local-mcp", &json!({})).is_err());
        assert_eq!(doc.text(), r#"{"servers": []}"#);
    }

    #[test]
    fn arrays_take_and_give_back_one_element() {
        let mut doc = JsonDoc::parse("{\n  \"hooks\": {}\n}\n").unwrap();
        let group = json!({"hooks": [{"type": "command", "command": "x"}]});
        doc.append_to_array(&["hooks", "Stop"], &group).unwrap();
        assert_eq!(doc.array(&["hooks", "Stop"]), vec![group.clone()]);
        assert!(doc.remove_from_array(&["hooks", "Stop"], &group));
        assert!(doc.array(&["hooks", "Stop"]).is_empty());
    }
}
