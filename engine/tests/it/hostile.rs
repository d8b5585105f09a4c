//! Hostile input, generated: random methods, paths, headers and bodies —
//! malformed and deeply nested JSON, invalid UTF-8, control characters,
//! unknown fields, every shape of JSON-RPC, unsupported
//! `MCP-Protocol-Version`s, huge bodies — thrown at the real server. Never a
//! 5xx or a dropped connection; every error is JSON with a message; the server
//! is still healthy and its database intact afterwards.
//!
//! `PROPTEST_CASES` sets the number of requests (256 by default, as CI runs it).

use crate::common;

use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{json, Value};

#[derive(Debug, Clone)]
struct Probe {
    method: &'static str,
    path: String,
    content_type: Option<&'static str>,
    protocol_version: Option<&'static str>,
    accept: Option<&'static str>,
    body: Vec<u8>,
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        // Any text, control characters and NUL included.
        ".{0,40}".prop_map(Value::String),
        "[\\x00-\\x1f\\u{7f}-\\u{9f}\\u{fffe}]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("content".to_owned()),
                    Just("agent_id".to_owned()),
                    Just("to".to_owned()),
                    Just("before_id".to_owned()),
                    Just("default_wait_seconds".to_owned()),
                    Just("default_empty_response".to_owned()),
                    Just("token".to_owned()),
                    "[a-z_]{1,12}",
                ],
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// JSON-RPC-ish messages: right and wrong shapes, known and unknown methods.
fn json_rpc() -> impl Strategy<Value = Value> {
    let method = prop_oneof![
        Just("initialize"),
        Just("tools/list"),
        Just("tools/call"),
        Just("resources/read"),
        Just("prompts/get"),
        Just("logging/setLevel"),
        Just("server/discover"),
        Just("notifications/initialized"),
        Just("notifications/cancelled"),
        Just("ping"),
        Just("no/such/method"),
    ];
    (method, json_value(), json_value(), any::<u8>()).prop_map(|(method, id, params, shape)| match shape % 6 {
        0 => json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
        1 => json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        2 => json!({"jsonrpc": "1.0", "id": 1, "method": method}),
        3 => json!({"id": 1, "method": method, "params": {"name": "get_user_request", "arguments": params}}),
        4 => json!([{"jsonrpc": "2.0", "id": 1, "method": method}, params]),
        _ => json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                     "params": {"name": "get_user_request", "arguments": {"agent_id": params}}}),
    })
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => json_value().prop_map(|v| v.to_string().into_bytes()),
        3 => json_rpc().prop_map(|v| v.to_string().into_bytes()),
        2 => prop::collection::vec(any::<u8>(), 0..512),
        // Valid JSON framing around invalid UTF-8.
        1 => prop::collection::vec(0x80u8..=0xff, 1..16).prop_map(|bad| {
            let mut b = br#"{"content":""#.to_vec();
            b.extend(bad);
            b.extend(br#""}"#);
            b
        }),
        // Nesting far past any parser's recursion limit.
        1 => (1usize..20_000).prop_map(|depth| {
            let mut b = "[".repeat(depth).into_bytes();
            b.extend("]".repeat(depth).into_bytes());
            b
        }),
        // Over the 1 MiB limit.
        1 => Just(vec![b'a'; engine::MAX_BODY_BYTES + 1]),
        1 => Just(Vec::new()),
    ]
}

fn probe() -> impl Strategy<Value = Probe> {
    let path = prop_oneof![
        Just("/healthz".to_owned()),
        Just("/api/status".to_owned()),
        Just("/api/instructions".to_owned()),
        Just("/api/instructions?status=pending&limit=5".to_owned()),
        "/api/instructions\\?[a-z=&%0-9]{0,20}".prop_map(|p| p),
        "/api/instructions/[a-zA-Z0-9%._-]{0,40}",
        "/api/instructions/[a-z0-9-]{0,36}/(move|requeue)",
        Just("/api/config".to_owned()),
        Just("/api/clients".to_owned()),
        Just("/api/session".to_owned()),
        Just("/api/openapi.json".to_owned()),
        Just("/mcp".to_owned()),
        Just("/mcp".to_owned()),
        Just("/mcp".to_owned()),
        "/[a-zA-Z0-9%./_-]{0,30}",
    ];
    (
        prop::sample::select(vec!["GET", "POST", "PATCH", "DELETE", "PUT", "OPTIONS"]),
        path,
        prop::option::of(prop::sample::select(vec![
            "application/json",
            "application/json; charset=utf-8",
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
        ])),
        prop::option::of(prop::sample::select(vec![
            "2025-06-18",
            "2025-11-25",
            "2026-07-28",
            "1999-01-01",
            "garbage",
        ])),
        prop::option::of(prop::sample::select(vec![
            "application/json, text/event-stream",
            "text/event-stream",
            "application/json",
            "text/html",
        ])),
        body(),
    )
        .prop_map(|(method, path, content_type, protocol_version, accept, body)| Probe {
            method,
            path,
            content_type,
            protocol_version,
            accept,
            body,
        })
}

/// Send one probe; the status and whether the body was a JSON error with a message.
async fn send(s: &common::Server, p: &Probe) -> Result<(u16, bool, String), String> {
    let mut request = s
        .http
        .request(p.method.parse().unwrap(), s.api(&p.path))
        .body(p.body.clone());
    if let Some(ct) = p.content_type {
        request = request.header("content-type", ct);
    }
    if let Some(v) = p.protocol_version {
        request = request.header("mcp-protocol-version", v);
    }
    if let Some(a) = p.accept {
        request = request.header("accept", a);
    }
    let response = tokio::time::timeout(std::time::Duration::from_secs(10), request.send())
        .await
        .map_err(|_| "no answer within 10 s".to_owned())?
        .map_err(|e| format!("connection failed: {e}"))?;
    let status = response.status().as_u16();
    let text = tokio::time::timeout(std::time::Duration::from_secs(10), response.text())
        .await
        .map_err(|_| "the body did not end within 10 s".to_owned())?
        .map_err(|e| format!("the body broke off: {e}"))?;
    let json_error = serde_json::from_str::<Value>(&text)
        .ok()
        .is_some_and(|v| v["error"]["message"].as_str().is_some_and(|m| !m.is_empty()));
    Ok((status, json_error, text))
}

#[test]
fn hostile_requests_never_get_a_5xx_and_errors_are_always_json() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    // No wait: a well-formed tools/call answers at once instead of holding the case up.
    let server = Arc::new(runtime.block_on(common::start(|c| c.settings.default_wait_seconds = 0)));
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let result = runner.run(&probe(), |p| {
        let (status, json_error, text) = runtime.block_on(send(&server, &p)).map_err(TestCaseError::fail)?;
        let shown = || text.chars().take(300).collect::<String>();
        prop_assert!(status < 500, "{} {} → {status}: {}", p.method, p.path, shown());
        if status >= 400 {
            prop_assert!(
                json_error,
                "{} {} → {status} without a JSON error: {}",
                p.method,
                p.path,
                shown()
            );
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    runtime.block_on(async {
        assert_eq!(server.get_json("/healthz").await["status"], "ok");
        assert_eq!(server.engine.queue.integrity_check().await.unwrap(), "ok");
    });
    let server = Arc::try_unwrap(server).ok().expect("one owner");
    runtime.block_on(server.stop());
}

/// The fixed cases the issue names, checked every run regardless of what the generator picks.
#[tokio::test]
async fn named_hostile_cases() {
    let s = common::start(|c| c.settings.default_wait_seconds = 0).await;
    let deep = |prefix: &str| {
        let mut b = prefix.as_bytes().to_vec();
        b.extend("[".repeat(10_000).into_bytes());
        b
    };
    // (method, path, content type, MCP-Protocol-Version, body, expected status)
    type Case<'a> = (&'a str, &'a str, Option<&'a str>, Option<&'a str>, Vec<u8>, u16);
    let cases: Vec<Case> = vec![
        (
            "POST",
            "/api/instructions",
            Some("application/json"),
            None,
            b"{\"content\":".to_vec(),
            400,
        ),
        // Refused at the first bracket (a string was expected): 422, never a deep recursion.
        (
            "POST",
            "/api/instructions",
            Some("application/json"),
            None,
            deep("{\"content\":"),
            422,
        ),
        ("DELETE", "/api/instructions/%80%FF", None, None, Vec::new(), 400),
        (
            "POST",
            "/api/instructions",
            Some("application/json"),
            None,
            vec![b'x'; 2 * 1024 * 1024],
            413,
        ),
        (
            "POST",
            "/api/instructions",
            Some("application/json"),
            None,
            b"{\"content\":\"\xff\xfe\"}".to_vec(),
            400,
        ),
        (
            "POST",
            "/api/instructions",
            Some("application/json"),
            None,
            br#"{"content":"a","extra":1}"#.to_vec(),
            422,
        ),
        (
            "POST",
            "/api/instructions",
            Some("text/plain"),
            None,
            br#"{"content":"a"}"#.to_vec(),
            415,
        ),
        // A struct written as an array (serde would take it): found by Schemathesis.
        (
            "PATCH",
            "/api/config",
            Some("application/json"),
            None,
            b"[null, null]".to_vec(),
            422,
        ),
        // A body-less write is routed (405 for a method the route lacks), not refused as non-JSON.
        ("PUT", "/api/status", None, None, Vec::new(), 405),
        ("POST", "/api/instructions", None, None, Vec::new(), 400),
        (
            "POST",
            "/mcp",
            Some("application/json"),
            None,
            b"{not json".to_vec(),
            400,
        ),
        ("POST", "/mcp", Some("application/json"), None, deep(""), 400),
        (
            "POST",
            "/mcp",
            Some("application/json"),
            None,
            vec![b'x'; 2 * 1024 * 1024],
            413,
        ),
        (
            "POST",
            "/mcp",
            Some("application/json"),
            Some("1999-01-01"),
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#.to_vec(),
            400,
        ),
    ];
    for (method, path, ct, version, body, want) in cases {
        let p = Probe {
            method,
            path: path.into(),
            content_type: ct,
            protocol_version: version,
            accept: Some("application/json, text/event-stream"),
            body,
        };
        let (status, json_error, text) = send(&s, &p).await.unwrap();
        assert_eq!(
            status,
            want,
            "{method} {path}: {}",
            text.chars().take(200).collect::<String>()
        );
        assert!(json_error, "{method} {path} → {status}: not a JSON error: {text}");
    }
    s.stop().await;
}

/// Values at and past every edge: far-future and impossible times, huge and
/// negative numbers, empty, NUL, right-to-left marks, long text, paths. Each
/// one goes into every field of every documented route, one at a time.
fn extreme_values() -> Vec<Value> {
    vec![
        json!("9999-12-31T23:00:00-05:00"),
        json!("0000-01-01T00:30:00+01:00"),
        json!("-9999-01-01T00:00:00Z"),
        json!("2026-02-30"),
        json!("+275760-09-13T00:00:00Z"),
        json!(""),
        json!(" "),
        json!("\u{0}"),
        json!("\u{202e}evil"),
        json!("../../../../etc/passwd"),
        json!("%00%ff"),
        json!("NaN"),
        json!("-1"),
        json!("18446744073709551616"),
        json!("1e400"),
        json!("x".repeat(70_000)),
        json!(i64::MAX),
        json!(i64::MIN),
        json!(u64::MAX),
        json!(1e308),
        json!(-1e308),
        json!(-1),
        json!(0.5),
        json!(true),
        Value::Null,
        json!([]),
        json!({}),
        json!([[[[[[[[]]]]]]]]),
    ]
}

/// One field of one documented operation: where it goes and its name.
struct Field {
    method: String,
    path: String,
    place: &'static str,
    name: String,
}

/// Every query, path and top-level body field of every operation in the
/// server's own OpenAPI document (the ones that change who may connect aside).
fn fields(doc: &Value) -> Vec<Field> {
    let resolve = |schema: &Value| -> Value {
        match schema["$ref"].as_str() {
            Some(r) => doc["components"]["schemas"][r.rsplit('/').next().unwrap()].clone(),
            None => schema.clone(),
        }
    };
    let mut out = Vec::new();
    for (path, ops) in doc["paths"].as_object().unwrap() {
        // Who may connect is not changed mid-run; the event stream never ends by design.
        if path.starts_with("/api/token") || path.starts_with("/api/session") || path == "/api/events" {
            continue;
        }
        for (method, op) in ops.as_object().unwrap() {
            for p in op["parameters"].as_array().into_iter().flatten() {
                let place = if p["in"] == "query" { "query" } else { "path" };
                out.push(Field {
                    method: method.to_uppercase(),
                    path: path.clone(),
                    place,
                    name: p["name"].as_str().unwrap().to_owned(),
                });
            }
            let body = resolve(&op["requestBody"]["content"]["application/json"]["schema"]);
            for name in body["properties"].as_object().into_iter().flatten().map(|(k, _)| k) {
                out.push(Field {
                    method: method.to_uppercase(),
                    path: path.clone(),
                    place: "body",
                    name: name.clone(),
                });
            }
        }
    }
    out
}

fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[test]
fn extreme_values_in_every_field_never_get_a_5xx() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let server = Arc::new(runtime.block_on(common::start(|c| c.settings.default_wait_seconds = 0)));
    // Something for path parameters to find.
    let (item, doc) = runtime.block_on(async {
        let item = server.add("a real one").await;
        (
            item["id"].as_str().unwrap().to_owned(),
            server.get_json("/api/openapi.json").await,
        )
    });
    let fields = fields(&doc);
    assert!(
        fields.len() > 40,
        "the document lists the routes' fields: {}",
        fields.len()
    );
    // Every value in every field: a few thousand requests, a few seconds.
    let values: Vec<Value> = extreme_values().into_iter().collect();
    let mut tried = 0;
    for field in &fields {
        for value in &values {
            tried += 1;
            // A URL is at most 65,535 characters to the client (a body has no such bound).
            let text: String = as_text(value).chars().take(16_000).collect();
            let encoded = percent_encoding::utf8_percent_encode(&text, percent_encoding::NON_ALPHANUMERIC).to_string();
            // Other path parameters name something real; the one under test gets the value.
            let mut path = String::new();
            for segment in field.path.split('/').filter(|s| !s.is_empty()) {
                path.push('/');
                match segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                    Some(name) if field.place == "path" && name == field.name => path.push_str(&encoded),
                    Some("id") => path.push_str(&item),
                    Some(_) => path.push_str("default"),
                    None => path.push_str(segment),
                }
            }
            if field.place == "query" {
                path.push_str(&format!("?{}={encoded}", field.name));
            }
            let body = (field.place == "body").then(|| json!({ field.name.clone(): value.clone() }));
            let outcome = runtime.block_on(async {
                let mut request = server.http.request(field.method.parse().unwrap(), server.api(&path));
                if let Some(body) = &body {
                    request = request.json(body);
                }
                let response = tokio::time::timeout(std::time::Duration::from_secs(10), request.send())
                    .await
                    .map_err(|_| "no answer within 10 s".to_owned())?
                    .map_err(|e| format!("the connection broke (a panic?): {e}"))?;
                let status = response.status().as_u16();
                let text = tokio::time::timeout(std::time::Duration::from_secs(10), response.text())
                    .await
                    .map_err(|_| "the body did not end within 10 s".to_owned())?
                    .map_err(|e| format!("the body broke off: {e}"))?;
                Ok::<_, String>((status, text))
            });
            let shown: String = path.chars().take(120).collect();
            let (status, text) = outcome.unwrap_or_else(|e| panic!("{} {shown}: {e}", field.method));
            assert!(
                status < 500,
                "{} {shown} with {} {} = {:.80} → {status}: {:.300}",
                field.method,
                field.place,
                field.name,
                text_preview(value),
                text
            );
        }
    }
    assert!(tried > 1000, "{tried} requests");
    runtime.block_on(async {
        assert_eq!(server.get_json("/healthz").await["status"], "ok");
        assert_eq!(server.engine.queue.integrity_check().await.unwrap(), "ok");
    });
    let server = Arc::try_unwrap(server).ok().expect("one owner");
    runtime.block_on(server.stop());
}

fn text_preview(v: &Value) -> String {
    as_text(v).chars().take(80).collect()
}
