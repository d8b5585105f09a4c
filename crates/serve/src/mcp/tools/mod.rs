//! The MCP tools: one file each, registered once here. Listing, lookup,
//! dispatch and the connection-info file's `tools` all read [`all`], so a new
//! tool is its file plus a line in `all` and an arm in `call`.

pub mod get_user_request;

use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Tool};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};

use crate::queue::Queue;

/// Every tool, as `tools/list` shows them.
pub fn all() -> Vec<Tool> {
    vec![get_user_request::definition()]
}

/// The tools' names.
pub fn names() -> Vec<String> {
    all().into_iter().map(|t| t.name.into_owned()).collect()
}

/// Run the tool a call names. An unknown name is a protocol error (the
/// client asked for something that does not exist), not a tool result.
pub async fn call(
    queue: &Queue,
    request: CallToolRequestParams,
    ctx: RequestContext<RoleServer>,
    caller: crate::model::Caller,
) -> Result<CallToolResponse, McpError> {
    match request.name.as_ref() {
        get_user_request::NAME if caller.tasks => {
            get_user_request::call_in_task(
                queue.clone(),
                request.arguments,
                get_user_request::Asked::of(&ctx),
                caller,
            )
            .await
        }
        get_user_request::NAME => get_user_request::call(
            queue.clone(),
            request.arguments,
            get_user_request::Asked::of(&ctx),
            caller,
        )
        .await
        .map(Into::into),
        other => Err(McpError::invalid_params(
            format!("unknown tool {other:?}; the tools are: {}", names().join(", ")),
            None,
        )),
    }
}

/// A failure the model should see and can act on (`isError: true`).
pub fn tool_error(message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.to_owned())])
}

/// Formats JSON Schema defines; validators warn about (or, strict, reject)
/// any other, such as schemars' `uint64`.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// The schema without non-standard `format`s (the `minimum: 0` that
/// schemars writes beside `uint64` keeps the meaning).
fn portable(schema: &serde_json::Map<String, serde_json::Value>) -> Arc<serde_json::Map<String, serde_json::Value>> {
    fn clean(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(map) => {
                if map
                    .get("format")
                    .and_then(|f| f.as_str())
                    .is_some_and(|f| !STANDARD_FORMATS.contains(&f))
                {
                    map.remove("format");
                }
                map.values_mut().for_each(clean);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(clean),
            _ => {}
        }
    }
    let mut value = serde_json::Value::Object(schema.clone());
    clean(&mut value);
    match value {
        serde_json::Value::Object(map) => Arc::new(map),
        _ => Arc::new(schema.clone()),
    }
}
