//! The OpenAPI document of the HTTP API. Each route module registers its
//! handlers with their `#[utoipa::path]` entries (`utoipa-axum`), so the
//! document is built from the same list the router is; this module adds the
//! title, the tags and the answers every operation can give, serves the
//! result at `/api/openapi.json`, and `/api/docs` renders it (a local page:
//! no CDN).

use utoipa::openapi::path::Operation;
use utoipa::openapi::{RefOr, Response as DocResponse, Schema};
use utoipa::{Modify, OpenApi};

/// The answers every operation can give, added to each so the document is
/// complete: the security layer's (403 foreign Host/Origin, 401 token, 413,
/// 415) and, where there are path, query or body inputs, 400 and 422.
struct CommonResponses;

fn error_ref(description: &str) -> RefOr<DocResponse> {
    let json: serde_json::Value = serde_json::json!({
        "description": description,
        "content": { "application/json": { "schema": { "$ref": "#/components/schemas/ErrorBody" } } }
    });
    serde_json::from_value(json).expect("a valid response object")
}

impl Modify for CommonResponses {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        for item in doc.paths.paths.values_mut() {
            let ops: [&mut Option<Operation>; 5] = [
                &mut item.get,
                &mut item.post,
                &mut item.put,
                &mut item.patch,
                &mut item.delete,
            ];
            for op in ops.into_iter().flatten() {
                let has_body = op.request_body.is_some();
                let has_params = op.parameters.as_ref().is_some_and(|p| !p.is_empty());
                let responses = &mut op.responses.responses;
                let mut add = |status: &str, description: &str| {
                    responses
                        .entry(status.to_owned())
                        .or_insert_with(|| error_ref(description));
                };
                add("403", "A foreign Host (DNS rebinding) or Origin (another web page)");
                add("401", "A token is required and was missing or wrong");
                if has_body || has_params {
                    add("400", "Malformed path, query or JSON body, or a value out of range");
                }
                if has_body {
                    add("413", "Body over 1 MiB, or an instruction over 64 KiB");
                    add("415", "The body is not Content-Type: application/json");
                    add(
                        "422",
                        "Well-formed JSON of the wrong shape (unknown field, wrong type, out of range)",
                    );
                }
            }
        }
        // Exactly one of the three: a shape utoipa cannot derive from the struct.
        if let Some(components) = doc.components.as_mut() {
            let move_to: RefOr<Schema> = serde_json::from_value(serde_json::json!({
                "description": "Where to move a pending instruction: exactly one of before_id, after_id or to.",
                "oneOf": [
                    { "type": "object", "required": ["before_id"], "additionalProperties": false,
                      "properties": { "before_id": { "type": "string", "minLength": 1 } } },
                    { "type": "object", "required": ["after_id"], "additionalProperties": false,
                      "properties": { "after_id": { "type": "string", "minLength": 1 } } },
                    { "type": "object", "required": ["to"], "additionalProperties": false,
                      "properties": { "to": { "$ref": "#/components/schemas/RequeuePlace" } } }
                ]
            }))
            .expect("a valid schema");
            components.schemas.insert("MoveTo".into(), move_to);
        }
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "local-mcp HTTP API",
        description = "The queue of a person's instructions for AI agents. Agents take instructions through the MCP \
            tool `get_user_request` at `/mcp` (not described here); this API is what the page, the CLI and scripts \
            use. When the server has a token, send `Authorization: Bearer <token>`. Writes take JSON only."
    ),
    tags(
        (name = "instructions", description = "Queue, edit, reorder, delete and send again"),
        (name = "settings", description = "Runtime settings"),
        (name = "templates", description = "Saved instructions, by name"),
        (name = "server", description = "Health, status and client configuration"),
        (name = "connect", description = "Put local-mcp into MCP clients' own configuration, and take it out"),
        (name = "events", description = "Live changes"),
        (name = "session", description = "The page's sign-in when a token is required"),
    )
)]
pub struct ApiDoc;

/// Complete a document the routes produced: the answers common to all.
pub fn finish(mut doc: utoipa::openapi::OpenApi) -> utoipa::openapi::OpenApi {
    CommonResponses.modify(&mut doc);
    doc
}
