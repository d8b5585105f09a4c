//! The runtime settings, each defined once in the [`settings!`] table below:
//! name, type, limits, default, label, help and environment variable.
//!
//! Everything else follows from that table: the [`Settings`] struct and its
//! default, [`SettingsPatch`] (a `PATCH /api/config` body, the first-run
//! flags and variables, the config file's keys), validation, the stored
//! key/value form, the OpenAPI schemas and the page's form (`GET
//! /api/config/fields`). Adding a setting is one entry here plus the code
//! that uses it (`docs/ARCHITECTURE.md`, "Where to add…").

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use utoipa::openapi::{RefOr, Schema};
use utoipa::ToSchema;

use super::{DEFAULT_EMPTY_RESPONSE, MAX_INSTRUCTION_BYTES, MAX_WAIT_SECONDS};
use crate::{Error, Result};

/// What a setting holds, with its limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Kind {
    /// A whole number of seconds in `min..=max`.
    Seconds { min: u32, max: u32 },
    /// Text of at most `max_bytes` bytes of UTF-8, without NUL; `null` in a
    /// patch clears it.
    Text { max_bytes: usize },
    /// On or off.
    Switch,
}

/// One setting's definition, as the page and the API describe it.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
pub struct Field {
    /// The JSON key, config-file key and flag (`--default-wait-seconds`).
    pub name: &'static str,
    /// A short handle: the page's element ids (`set-wait`).
    pub short: &'static str,
    /// What the page's form calls it.
    pub label: &'static str,
    /// One sentence on what it does.
    pub help: &'static str,
    /// The environment variable that seeds it on first run
    /// (`LOCAL_MCP_<name>`; the plain `<name>` is read after it, leniently).
    pub env: &'static str,
    #[serde(flatten)]
    pub kind: Kind,
}

/// A setting's value from a plain environment variable, leniently: `None`
/// when it does not parse (the variable may be another program's).
pub trait FromEnvironment: Sized {
    fn parse(raw: &str) -> Option<Self>;
}

impl FromEnvironment for u32 {
    fn parse(raw: &str) -> Option<u32> {
        raw.trim().parse().ok()
    }
}

impl FromEnvironment for String {
    fn parse(raw: &str) -> Option<String> {
        Some(raw.to_owned())
    }
}

impl FromEnvironment for bool {
    fn parse(raw: &str) -> Option<bool> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Some(true),
            "0" | "false" | "no" | "off" => Some(false),
            _ => None,
        }
    }
}

/// Declares the settings; see the module header. Each entry:
/// `/// help` `name: Type = default, Kind, short, label, env;`
macro_rules! settings {
    ($(
        #[doc = $help:literal]
        $name:ident : $ty:ty = $default:expr, $kind:expr, short = $short:literal, label = $label:literal, env = $env:literal;
    )*) => {
        /// The settings a person can change at run time.
        #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
        pub struct Settings {
            $( #[doc = $help] pub $name: $ty, )*
        }

        impl Default for Settings {
            fn default() -> Self {
                Settings { $( $name: $default.into(), )* }
            }
        }

        /// Every setting, in the order the page shows them.
        pub const FIELDS: &[Field] = &[
            $( Field { name: stringify!($name), short: $short, label: $label, help: $help.trim_ascii_start(), env: concat!("LOCAL_MCP_", $env), kind: $kind }, )*
        ];

        /// Some settings: a `PATCH /api/config` body, or first-run values from
        /// flags, environment variables and the config file. Absent = unchanged.
        /// (clap reads it too, so both binaries get one flag per setting.)
        #[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, clap::Args)]
        #[serde(try_from = "Map<String, Value>")]
        pub struct SettingsPatch {
            $(
                #[arg(long, env = concat!("LOCAL_MCP_", $env), global = true, help = flag_help(stringify!($name)))]
                pub $name: Option<$ty>,
            )*
        }

        impl SettingsPatch {
            /// `self` applied over `settings`.
            pub fn apply(&self, mut settings: Settings) -> Settings {
                $( if let Some(v) = &self.$name { settings.$name = v.clone(); } )*
                settings
            }

            /// Values from `self`, else from `other`.
            pub fn or(self, other: SettingsPatch) -> SettingsPatch {
                SettingsPatch { $( $name: self.$name.or(other.$name), )* }
            }

            /// The settings not given yet, from the plain variable names
            /// (`DEFAULT_WAIT_SECONDS`, the original plan's) that `lookup`
            /// finds; one that does not parse is left out, said in `warn`.
            pub fn or_plain_environment(
                mut self,
                lookup: &dyn Fn(&str) -> Option<String>,
                warn: &mut dyn FnMut(String),
            ) -> SettingsPatch {
                $(
                    if self.$name.is_none() {
                        if let Some(raw) = lookup($env) {
                            match <$ty as FromEnvironment>::parse(&raw) {
                                Some(v) => self.$name = Some(v),
                                None => warn(format!(
                                    "ignoring {}={raw:?}: not a value for --{} (set {} to be sure it is read)",
                                    $env,
                                    stringify!($name).replace('_', "-"),
                                    concat!("LOCAL_MCP_", $env),
                                )),
                            }
                        }
                    }
                )*
                self
            }
        }

        impl TryFrom<Map<String, Value>> for SettingsPatch {
            type Error = String;

            fn try_from(mut map: Map<String, Value>) -> std::result::Result<Self, String> {
                if let Some(unknown) = map.keys().find(|k| field(k).is_none()) {
                    let known: Vec<_> = FIELDS.iter().map(|f| f.name).collect();
                    return Err(format!("unknown field `{unknown}`, expected one of {}", known.join(", ")));
                }
                Ok(SettingsPatch {
                    $( $name: take(&mut map, stringify!($name))?, )*
                })
            }
        }
    };
}

settings! {
    /// Seconds get_user_request waits on an empty queue before answering.
    default_wait_seconds: u32 = 10u32, Kind::Seconds { min: 0, max: MAX_WAIT_SECONDS },
        short = "wait", label = "Wait on an empty queue (seconds)", env = "DEFAULT_WAIT_SECONDS";
    /// Seconds of silence after which an agent shows as gone.
    agent_stale_after_seconds: u32 = 30u32, Kind::Seconds { min: 1, max: MAX_WAIT_SECONDS },
        short = "stale", label = "Agent counts as gone after (seconds)", env = "AGENT_STALE_AFTER_SECONDS";
    /// What an agent is told when nothing was queued; leave it empty to answer with an empty result.
    default_empty_response: String = DEFAULT_EMPTY_RESPONSE, Kind::Text { max_bytes: MAX_INSTRUCTION_BYTES },
        short = "empty", label = "Reply when nothing is queued", env = "DEFAULT_EMPTY_RESPONSE";
    /// Refuse other accounts of this machine unless they send the token. Turning it off lets any local account read and queue instructions that your agents carry out with your rights.
    same_user_only: bool = true, Kind::Switch,
        short = "same-user", label = "Only my account may use local-mcp", env = "SAME_USER_ONLY";
    /// Deliver an instruction again, automatically, on its agent's next call when its first delivery is in doubt (the connection broke or local-mcp stopped before the answer was written). Off: the ledger marks it and you choose.
    redeliver_in_doubt: bool = false, Kind::Switch,
        short = "redeliver", label = "Send in-doubt deliveries again by themselves", env = "REDELIVER_IN_DOUBT";
}

/// A setting's `--help` line: what it does, its limits and its default.
fn flag_help(name: &str) -> String {
    let Some(f) = field(name) else { return String::new() };
    let default = Settings::default().to_map().remove(name).unwrap_or(Value::Null);
    let limits = match f.kind {
        Kind::Seconds { min, max } => format!(" ({min}..={max})"),
        Kind::Text { max_bytes } => format!(" (at most {max_bytes} bytes)"),
        Kind::Switch => " (true or false)".to_owned(),
    };
    let default = match default {
        Value::String(text) if text.chars().count() > 40 => format!("{:?}…", text.chars().take(40).collect::<String>()),
        Value::String(text) => format!("{text:?}"),
        other => other.to_string(),
    };
    format!("First-run value: {}{limits} [default: {default}]", f.help)
}

/// The definition of the setting called `name`.
pub fn field(name: &str) -> Option<&'static Field> {
    FIELDS.iter().find(|f| f.name == name)
}

/// Remove `name` from a patch object and read it as its kind says.
fn take<T: serde::de::DeserializeOwned>(
    map: &mut Map<String, Value>,
    name: &str,
) -> std::result::Result<Option<T>, String> {
    let Some(value) = map.remove(name) else { return Ok(None) };
    let kind = field(name).map(|f| f.kind);
    let value = match (kind, value) {
        (Some(kind), Value::Null) if kind.null_clears() => Value::String(String::new()),
        (Some(_), Value::Null) => return Ok(None),
        (Some(Kind::Seconds { .. }), Value::Number(n)) => Value::from(whole_seconds(&n)?),
        (_, v) => v,
    };
    serde_json::from_value(value)
        .map(Some)
        .map_err(|e| format!("{name}: {e}"))
}

/// A whole number of seconds as JSON writes it: `60` or `60.0` (JSON
/// Schema's "integer" allows both; some clients send the latter).
fn whole_seconds(n: &serde_json::Number) -> std::result::Result<u32, String> {
    if let Some(u) = n.as_u64() {
        return u32::try_from(u).map_err(|_| format!("{u} is too large"));
    }
    match n.as_f64() {
        Some(f) if f.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&f) => Ok(f as u32),
        _ => Err(format!("expected a whole number of seconds, got {n}")),
    }
}

impl Kind {
    /// What `null` means in a patch: it clears a text; anything else stays as it is.
    fn null_clears(self) -> bool {
        matches!(self, Kind::Text { .. })
    }

    /// Check one value; the message names the field and what it allows.
    fn check(self, name: &str, value: &Value) -> Result<()> {
        match self {
            Kind::Seconds { min, max } => match value.as_u64() {
                Some(n) if (u64::from(min)..=u64::from(max)).contains(&n) => Ok(()),
                _ => Err(Error::Invalid(format!("{name} must be between {min} and {max}"))),
            },
            Kind::Switch => match value {
                Value::Bool(_) => Ok(()),
                _ => Err(Error::Invalid(format!("{name} must be true or false"))),
            },
            Kind::Text { max_bytes } => {
                let text = value.as_str().unwrap_or_default();
                if text.len() > max_bytes {
                    Err(Error::TooLarge(format!("{name} must be at most {max_bytes} bytes")))
                } else if text.contains('\0') {
                    Err(Error::Invalid(format!("{name} must not contain NUL characters")))
                } else {
                    Ok(())
                }
            }
        }
    }

    /// The JSON Schema of a value of this kind.
    fn schema(self, field: &Field, default: &Value) -> Value {
        let mut schema = match self {
            Kind::Seconds { min, max } => json!({ "type": "integer", "minimum": min, "maximum": max }),
            Kind::Text { .. } => json!({ "type": "string" }),
            Kind::Switch => json!({ "type": "boolean" }),
        };
        schema["title"] = json!(field.label);
        schema["description"] = json!(field.help);
        schema["default"] = default.clone();
        schema
    }
}

impl Settings {
    /// Check every value against its definition.
    pub fn validate(&self) -> Result<()> {
        let values = self.to_map();
        FIELDS
            .iter()
            .try_for_each(|f| f.kind.check(f.name, values.get(f.name).unwrap_or(&Value::Null)))
    }

    fn to_map(&self) -> Map<String, Value> {
        match serde_json::to_value(self) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        }
    }

    /// The stored form: one `(name, text)` pair per setting (numbers in decimal).
    pub fn to_pairs(&self) -> Vec<(&'static str, String)> {
        let values = self.to_map();
        FIELDS
            .iter()
            .map(|f| {
                let text = match values.get(f.name) {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                    None => String::new(),
                };
                (f.name, text)
            })
            .collect()
    }

    /// Settings from stored pairs; a missing, unknown or unreadable value
    /// falls back to its default (a downgrade or a hand edit loses nothing else).
    pub fn from_pairs(pairs: impl IntoIterator<Item = (String, String)>) -> Settings {
        let mut values = Settings::default().to_map();
        for (name, text) in pairs {
            let value = match field(&name).map(|f| f.kind) {
                Some(Kind::Seconds { .. }) => match text.parse::<u32>() {
                    Ok(n) => Value::from(n),
                    Err(_) => continue,
                },
                Some(Kind::Text { .. }) => Value::String(text),
                Some(Kind::Switch) => match text.parse::<bool>() {
                    Ok(b) => Value::Bool(b),
                    Err(_) => continue,
                },
                None => continue,
            };
            values.insert(name, value);
        }
        serde_json::from_value(Value::Object(values)).unwrap_or_default()
    }
}

/// The object schema of the settings; `patch`: every key optional, text nullable.
fn object_schema(patch: bool) -> RefOr<Schema> {
    let defaults = Settings::default().to_map();
    let mut properties = Map::new();
    for f in FIELDS {
        let mut schema = f.kind.schema(f, defaults.get(f.name).unwrap_or(&Value::Null));
        if patch {
            // `null` is accepted everywhere in a patch (see `take`).
            let what = if f.kind.null_clears() {
                "clears it"
            } else {
                "leaves it unchanged"
            };
            schema["type"] = json!([schema["type"].take(), "null"]);
            schema["description"] = json!(format!("{} `null` {what}.", f.help));
        }
        properties.insert(f.name.to_owned(), schema);
    }
    let mut schema = json!({ "type": "object", "properties": properties, "additionalProperties": false });
    if !patch {
        schema["required"] = json!(FIELDS.iter().map(|f| f.name).collect::<Vec<_>>());
    }
    serde_json::from_value(schema).expect("a valid schema")
}

impl utoipa::PartialSchema for Settings {
    fn schema() -> RefOr<Schema> {
        object_schema(false)
    }
}

impl ToSchema for Settings {}

impl utoipa::PartialSchema for SettingsPatch {
    fn schema() -> RefOr<Schema> {
        object_schema(true)
    }
}

impl ToSchema for SettingsPatch {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_is_checked_stored_and_read_back_by_its_definition() {
        let defaults = Settings::default();
        defaults.validate().unwrap();
        assert_eq!(
            Settings::from_pairs(defaults.to_pairs().into_iter().map(|(k, v)| (k.to_owned(), v))),
            defaults
        );
        assert_eq!(FIELDS.len(), defaults.to_map().len(), "one definition per field");
        let bad = Settings {
            agent_stale_after_seconds: 0,
            ..Settings::default()
        };
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .contains("agent_stale_after_seconds must be between 1"));
        // A stored value that no longer parses falls back to its default.
        let read = Settings::from_pairs([("default_wait_seconds".into(), "x".into()), ("gone".into(), "1".into())]);
        assert_eq!(read.default_wait_seconds, defaults.default_wait_seconds);
    }

    #[test]
    fn a_patch_names_what_it_does_not_know_and_clears_text_with_null() {
        let err = serde_json::from_str::<SettingsPatch>(r#"{"default_wait": 1}"#).unwrap_err();
        assert!(err.to_string().contains("unknown field `default_wait`"), "{err}");
        let p: SettingsPatch = serde_json::from_str(r#"{"default_empty_response": null}"#).unwrap();
        assert_eq!(p.apply(Settings::default()).default_empty_response, "");
    }
}
